"""Concurrency and faults: processes sharing one kernel cache, a checkpoint save killed mid-write,
and a device out-of-memory in the middle of a training step."""
import gc
import importlib.util
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyopencl as cl

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAS_MPI = importlib.util.find_spec("mpi4py") is not None


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("CLGRAD_TEST_DEVICES", None)
    env.update(extra)
    return env


# ---- four processes on one empty kernel cache -------------------------------------------------

def test_four_ranks_share_an_empty_kernel_cache(device, tmp_path):
    """Four MPI ranks (four plain processes where mpi4py is missing) start at once on an empty
    cache, build the same kernels at the same moment and all succeed; afterwards every entry is a
    whole binary that loads and builds, no temporary file is left, and a fifth process builds
    nothing from source: the cache the ranks wrote serves it entirely."""
    cache = tmp_path / "cache"
    # units of one kernel: PoCL, asked for a unit's binary, generates code for every kernel in
    # it (kernels.keeps_binaries), and four ranks doing that for whole programs took 126 s of a
    # cold run on pip's PoCL; so the ranks build what they launch, as Intel's runtime does
    env = _env(CLGRAD_CACHE_DIR=str(cache), CLGRAD_BINARY_CACHE="always",
               CLGRAD_BUILD_UNIT="kernel", CLGRAD_DEVICE=f"cl:{device.index}")
    script = os.path.join(ROOT, "tests", "cache_ranks.py")
    if HAS_MPI:
        r = subprocess.run([sys.executable, "-m", "clgrad.distributed.run", "--nproc-per-node",
                            "4", script], capture_output=True, text=True, env=env, timeout=600)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        out = r.stdout
    else:
        meet = tmp_path / "meet"
        meet.mkdir()
        procs = [subprocess.Popen([sys.executable, script, str(meet), str(k)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for k in range(4)]
        outs = [p.communicate(timeout=600) for p in procs]
        for p, (o, e) in zip(procs, outs):
            assert p.returncode == 0, o[-3000:] + e[-3000:]
        out = "".join(o for o, _ in outs)
    for k in range(4):
        assert f"RANK {k} OK" in out, out

    # templates/: the templates' Python modules (kernels._template_modules), which the four
    # ranks compiled at once too: whole modules only, no temporary file left
    modules = [f for f in (cache / "templates").rglob("*") if f.is_file()]
    assert modules and all(f.name.endswith(".mako.py") or f.parent.name == "__pycache__"
                           for f in modules), modules
    # locks/: the lock files of builds on a device whose build cache races (kernels.build_lock)
    files = sorted(f for f in cache.iterdir() if f.name not in ("templates", "locks"))
    assert [f.name for f in files if f.suffix != ".bin"] == []     # no *.tmp left behind
    assert len(files) >= 4
    for f in files:
        binary = f.read_bytes()
        assert binary, f"{f.name} is empty"
        prog = cl._cl._Program(device.context, [device.cl_device], [binary])
        prog._build(options=b"", devices=[device.cl_device])       # raises on a damaged binary
        assert prog.get_info(cl.program_info.NUM_KERNELS) > 0, f.name

    alone = tmp_path / "alone"
    alone.mkdir()
    for k in (1, 2, 3):
        (alone / f"ready.{k}").touch()                 # the fifth process meets no one
    r = subprocess.run([sys.executable, script, str(alone), "0"], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "RANK 0 OK built=0 loaded=" in r.stdout and "loaded=0" not in r.stdout, r.stdout
    assert sorted(f for f in cache.iterdir() if f.name not in ("templates", "locks")) == files


# ---- a checkpoint save killed mid-write -------------------------------------------------------

_SLOW_SAVE = textwrap.dedent("""
    import builtins, io, os, sys, time
    import numpy as np
    import clgrad

    class Slow:
        '''A file opened for writing whose writes are slow: after the third it says so on stdout,
        so the parent can kill the process in the middle of the save.'''
        def __init__(self, f):
            self.f, self.n = f, 0
        def write(self, data):
            n = self.f.write(data)
            self.f.flush()
            self.n += 1
            if self.n == 3:
                print("MID-WRITE", flush=True)
            time.sleep(0.05)
            return n
        def __getattr__(self, name):
            return getattr(self.f, name)
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            return self.f.__exit__(*exc)

    def slowed(opener):
        def open_(file, mode="r", *args, **kwargs):
            f = opener(file, mode, *args, **kwargs)
            return Slow(f) if isinstance(mode, str) and ("w" in mode or "+" in mode) else f
        return open_

    os.fdopen = slowed(os.fdopen)
    builtins.open = io.open = slowed(io.open)
    state = {f"layer{i}.weight": clgrad.full((256, 256), float(i)) for i in range(64)}
    clgrad.save(state, sys.argv[1])
    print("SAVED", flush=True)
""")


def test_killed_save_leaves_the_previous_checkpoint(device, tmp_path):
    path = tmp_path / "model.pt"
    first = {"w": clgrad.randn(8, 4), "b": clgrad.arange(5), "step": 3}
    clgrad.save(first, path)
    was = path.read_bytes()
    p = subprocess.Popen([sys.executable, "-c", _SLOW_SAVE, str(path)], env=_env(
        CLGRAD_DEVICE=f"cl:{device.index}"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        line = p.stdout.readline()
        assert line == "MID-WRITE\n", line + p.stderr.read()
        p.kill()                                                    # SIGKILL: no cleanup runs
    finally:
        p.kill()
        p.communicate()
    assert p.returncode == -9
    assert path.read_bytes() == was
    back = clgrad.load(path)
    assert sorted(back) == ["b", "step", "w"] and back["step"] == 3
    assert np.array_equal(back["w"].numpy(), first["w"].numpy())
    assert np.array_equal(back["b"].numpy(), first["b"].numpy())
    # what the killed save wrote is a separate file in the same folder, never the checkpoint
    others = [f.name for f in tmp_path.iterdir() if f.name != "model.pt"]
    assert all(n.startswith(".model.pt.") and n.endswith(".tmp") for n in others), others
    # a save that completes replaces the checkpoint
    clgrad.save({"step": 4}, path)
    assert clgrad.load(path) == {"step": 4}


def test_save_keeps_what_open_would_give(device, tmp_path):
    """The temporary-file-and-rename save behaves as writing the path would: a new file gets
    open()'s permissions (0o666 less the umask), an existing one keeps its own, a symbolic link
    is written through (the link stays), and file-like objects are written directly."""
    path = tmp_path / "ckpt.pt"
    clgrad.save({"x": clgrad.ones(3)}, path)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    path.chmod(0o640)                              # an existing file keeps its permissions
    clgrad.save({"x": clgrad.ones(3)}, path)
    assert path.stat().st_mode & 0o777 == 0o640
    link = tmp_path / "latest.pt"
    link.symlink_to(path)
    clgrad.save({"x": clgrad.zeros(2)}, link)
    assert link.is_symlink() and os.readlink(link) == str(path)
    assert clgrad.load(path)["x"].tolist() == [0.0, 0.0]
    assert sorted(f.name for f in tmp_path.iterdir()) == ["ckpt.pt", "latest.pt"]
    import io
    buf = io.BytesIO()
    clgrad.save({"x": clgrad.arange(4)}, buf)
    buf.seek(0)
    assert clgrad.load(buf)["x"].tolist() == [0, 1, 2, 3]


# ---- a device out-of-memory in the middle of a training step ----------------------------------

def test_out_of_memory_in_a_training_step(device):
    """Under a pool cap (set_per_process_memory_fraction), batches too big for it raise torch's
    OutOfMemoryError in the forward pass or in backward; the step's tensors are freed with the
    exception (memory_allocated is back to what the model and optimizer hold once the partial
    gradients are dropped), and a smaller batch then trains."""
    assert clgrad.OutOfMemoryError is clgrad.cuda.OutOfMemoryError is clgrad.cl.OutOfMemoryError
    assert issubclass(clgrad.OutOfMemoryError, RuntimeError)
    clgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    opt = clgrad.optim.Adam(model.parameters(), lr=1e-3)
    phase = []

    def step(n):
        phase[:] = ["data"]
        x, y = clgrad.randn(n, 64), clgrad.randint(0, 10, (n,))
        opt.zero_grad()
        phase[0] = "forward"
        loss = F.cross_entropy(model(x), y)
        phase[0] = "backward"
        loss.backward()
        phase[0] = "optimizer"
        opt.step()
        phase[0] = "done"
        return loss.item()

    step(16)                                          # the optimizer's state exists from here
    opt.zero_grad()
    gc.collect()
    held = clgrad.cl.memory_allocated()
    clgrad.cl.set_per_process_memory_fraction((held + (3 << 20)) / device.global_mem_size)
    failed = {}
    try:
        n = 8192
        while True:
            try:
                loss = step(n)
                break
            except clgrad.OutOfMemoryError as e:
                failed.setdefault(phase[0], (n, str(e)))
            # the forward pass's tensors went with the exception; backward may have left
            # gradients on some parameters, as torch's does, which zero_grad drops
            if phase[0] == "forward":
                assert all(p.grad is None for p in model.parameters())
            opt.zero_grad()
            clgrad.cl.synchronize()     # the loss's target check holds the targets until a wait
            assert clgrad.cl.memory_allocated() == held, (n, phase[0])
            n = n * 7 // 8
    finally:
        clgrad.cl.set_per_process_memory_fraction(1.0)
    assert "forward" in failed and "backward" in failed, failed
    assert "out of device memory" in failed["forward"][1]
    assert math.isfinite(loss) and 16 < n < failed["backward"][0]
    opt.zero_grad()
    gc.collect()
    assert clgrad.cl.memory_allocated() == held
