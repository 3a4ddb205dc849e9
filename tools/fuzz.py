"""Long differential-testing campaigns: random short op programs (tests/differential.py) run in
clgrad and in the numpy reference with torch's rules; prints each disagreement as a minimised
Python reproducer, then a summary.

    python tools/fuzz.py --programs 2000 --seed 1            # on CLGRAD_DEVICE (e.g. pocl)
    python tools/fuzz.py --programs 500 --backend torch      # checks the reference and the rules
                                                             # table against torch itself

`--backend torch` runs the same programs through torch (where it is installed) instead of clgrad:
a disagreement there is a mistake in the reference or the table, not in clgrad.
"""
import argparse
import collections
import os
import sys
import time
import traceback
import warnings

import numpy as np

# the working tree's clgrad, not a copy installed in the environment (a stale `pip install .`)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
import differential as D  # noqa: E402


def _signature(msg):
    """A disagreement's kind, for grouping: its first line without the numbers."""
    first = msg.splitlines()[0]
    return "".join("#" if c.isdigit() else c for c in first)[:100]


def _family(prog):
    """The family a program was drawn for: that of its first step outside the core table."""
    fams = [D.OPS[name].family for name, _, _ in prog.steps if D.OPS[name].family != "core"]
    return fams[0] if fams else "core"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-steps", type=int, default=5, help="ops per program, at most")
    ap.add_argument("--backend", choices=("clgrad", "torch"), default="clgrad")
    ap.add_argument("--no-grads", action="store_true", help="skip the gradient checks")
    ap.add_argument("--show", type=int, default=3, help="reproducers printed per kind")
    ap.add_argument("--families", help="comma-separated families to draw from (default: all of "
                    "differential.FAMILIES: " + ", ".join(D.FAMILIES) + ")")
    ap.add_argument("--avoid", default="", help="comma-separated switches the generator keeps "
                    "away from (differential.SWITCHES: " + ", ".join(D.SWITCHES) + ")")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")         # numpy on empty slices, torch's deprecations
    if args.backend == "torch":
        import torch as T
        device = "cpu"
        T.set_default_dtype(T.float32)
    else:
        import clgrad as T
        device = None
    families = args.families.split(",") if args.families else None
    avoid = [a for a in args.avoid.split(",") if a]
    by_family = collections.Counter()
    kinds = collections.Counter()
    shown = collections.Counter()
    examples = {}
    n_steps = n_grad = 0
    t0 = time.time()
    for k in range(args.programs):
        rng = np.random.default_rng([args.seed, k])
        prog = D.generate(rng, grad=bool(k % 3 == 0), max_steps=args.max_steps,
                          families=families, avoid=avoid)
        n_steps += len(prog)
        n_grad += all(a.dtype == np.float64 for a in prog.inputs)

        def fails(p):
            try:
                D.check(T, p, device, grads=not args.no_grads)
            except D.Mismatch as e:
                return str(e)
            except Exception:               # noqa: BLE001 - a crash in the harness is a finding
                return "harness error: " + traceback.format_exc(limit=3)
            return None

        msg = fails(prog)
        if msg is None:
            continue
        kind = _signature(msg)
        kinds[kind] += 1
        by_family[_family(prog)] += 1
        if shown[kind] < args.show:
            shown[kind] += 1
            small = D.shrink(T, prog, device, lambda p: fails(p) is not None)
            msg = fails(small) or msg
            print(f"---- program {k} (seed {args.seed}), {len(small)} of {len(prog)} steps kept")
            print(small.source())
            print(f"# {msg}\n", flush=True)
        examples.setdefault(kind, k)
    dt = time.time() - t0
    print(f"==== {args.programs} programs ({n_steps} steps, {n_grad} with gradient checks) on "
          f"{args.backend}, seed {args.seed}, {dt:.0f} s: {sum(kinds.values())} disagreements "
          f"of {len(kinds)} kinds")
    for kind, n in kinds.most_common():
        print(f"{n:6d}  {kind}  (first: program {examples[kind]})")
    if by_family:
        print("by family: " + ", ".join(f"{f} {n}" for f, n in by_family.most_common()))
    return 1 if kinds else 0


if __name__ == "__main__":
    sys.exit(main())
