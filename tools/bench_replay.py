"""Host time of a compiled step's replay against the driver's own cost of enqueueing the same
kernels, for tools/bench_compile.py's steps.

For each step: record it (clgrad.compile), then time `replay()` in the host thread's CPU time
(time.thread_time, best of --rep; the device is idle before each), and time the replay's own
kernel objects enqueued in a bare pyopencl loop, held behind a user event where the replay holds
its bursts behind one (pip's PoCL 3.0: `gates_bursts`; the event's own cost is not counted). What
the replay adds to the bare loop is clgrad's work per replay (the index checks' flags, copies, an
optimizer's refresh, the gates); the bare loop is what no replay can go below on this driver.

    python tools/bench_replay.py [--only "W3 Adam,GPT"] [--rep 15]
"""
import argparse
import os
import sys
import time

import pyopencl as cl

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clgrad  # noqa: E402
from bench_compile import CASES  # noqa: E402
from clgrad.runtime import recording  # noqa: E402
from clgrad.runtime.device import gate_queues, open_gates  # noqa: E402


def launches_of(plan):
    """The (device, kernel, gsize, lsize) a replay of `plan` enqueues, in order."""
    out = []
    for fn, args in plan:
        if fn is recording._enqueue_burst:        # launches, and copies and the like: dev None
            out.extend(item for item in args[1] if item[0] is not None)
        elif fn is recording._refreshed_step:
            out.extend(launches_of(args[3]))
    return out


def bare_loop(launches):
    # a launch on a device's second queue names its SideQueue, whose `device` holds the gates
    devices = {getattr(dev, "device", dev) for dev, *_ in launches}
    gates = gate_queues({dev for dev in devices if dev.gate_bursts}, len(launches))
    t = time.thread_time()
    try:
        for dev, k, g, l in launches:
            cl.enqueue_nd_range_kernel(dev._queue, k, g, l)
        return time.thread_time() - t
    finally:
        open_gates(gates)


def replay_time(rec):
    t = time.thread_time()
    rec.replay()
    return time.thread_time() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(CASES), help="comma-separated case names")
    ap.add_argument("--rep", type=int, default=15)
    args = ap.parse_args()
    dev = clgrad.runtime.default_device()
    print(f"device: {dev.name} ({dev.platform_name}); host CPU us per launch, best of {args.rep}")
    print(f"{'step':10} {'launches':>8} {'replay':>8} {'bare loop':>9}")
    for name in (n.strip() for n in args.only.split(",")):
        step = clgrad.compile(CASES[name](clgrad))
        for _ in range(3):                      # eager, record, replay
            step()
            clgrad.cl.synchronize()
        rec = next(iter(step._variants.values())).rec
        if rec is None:
            print(f"{name:10} not replayed")
            continue
        launches = launches_of(rec._plan)
        best = {"replay": float("inf"), "bare": float("inf")}
        for _ in range(args.rep):
            for what, fn in (("replay", lambda: replay_time(rec)),
                             ("bare", lambda: bare_loop(launches))):
                clgrad.cl.synchronize()
                best[what] = min(best[what], fn())
        clgrad.cl.synchronize()
        n = len(launches)
        print(f"{name:10} {n:8d} {best['replay'] / n * 1e6:8.1f} {best['bare'] / n * 1e6:9.1f}")


if __name__ == "__main__":
    main()
