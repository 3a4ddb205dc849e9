"""What each rank the launcher starts runs first: torch's environment variables from Open
MPI's, the rank's device, then the script as __main__."""
import os
import runpy
import sys
from ..runtime import device


def setup_env(env=os.environ):
    rank = env.get("OMPI_COMM_WORLD_RANK", env.get("PMI_RANK", "0"))
    size = env.get("OMPI_COMM_WORLD_SIZE", env.get("PMI_SIZE", "1"))
    env.setdefault("RANK", rank)
    env.setdefault("WORLD_SIZE", size)
    env.setdefault("LOCAL_RANK", env.get("OMPI_COMM_WORLD_LOCAL_RANK", rank))
    env.setdefault("LOCAL_WORLD_SIZE", env.get("OMPI_COMM_WORLD_LOCAL_SIZE", size))
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.setdefault("MASTER_PORT", "29500")


def pick_device():
    """With several GPUs, this rank's GPU is local_rank % count."""
    if os.environ.get("CLGRAD_DEVICE"):
        return
    gpus = device.gpus()
    if len(gpus) > 1:
        device.set_default_device(gpus[int(os.environ["LOCAL_RANK"]) % len(gpus)])


def main():
    setup_env()
    pick_device()
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
