"""The launcher: `python -m clgrad.distributed.run --nproc-per-node N script.py [args...]` runs
N ranks of script.py with mpiexec (from the environment: `pip install clgrad[mpi]` puts it in
the venv's bin). Each rank gets torch's variables (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and its device: with several GPUs, GPU
local_rank % count; otherwise the default device (one GPU, or the CPU). CLGRAD_DEVICE, when set,
wins. The ranks share the kernel caches: clgrad writes a cached binary to a temporary file and
renames it into place, so concurrent ranks never read half a file.
"""
import argparse
import os
import shutil
import sys


def find_mpiexec():
    """mpiexec beside this Python (a venv's bin), else on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    found = shutil.which("mpiexec")
    if found is None:
        raise SystemExit("clgrad.distributed.run: mpiexec not found; pip install clgrad[mpi]")
    return found


def command(nproc, script_args, python=None):
    """The mpiexec command line that runs nproc ranks of script_args."""
    cmd = [find_mpiexec(), "-n", str(nproc), "--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")          # Open MPI refuses root otherwise
    return cmd + [python or sys.executable, "-m", "clgrad.distributed._rank"] + script_args


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m clgrad.distributed.run", description=__doc__)
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1, dest="nproc")
    p.add_argument("--nnodes", type=int, default=1, help="only 1 is supported")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.nnodes != 1:
        raise SystemExit("clgrad.distributed.run starts ranks on this machine only (--nnodes 1);"
                         " use mpiexec with a host file for several machines")
    os.execv(command(a.nproc, [a.script] + a.args)[0], command(a.nproc, [a.script] + a.args))


if __name__ == "__main__":
    main()
