"""How long the first training step of tools/train.py takes with empty kernel caches (cold) and
then with the caches that run left behind (warm): the time a new user waits for the compiler.

    python tools/cold_start.py                  # the default device (CLGRAD_DEVICE picks another)
    python tools/cold_start.py --device intel --warm 2

Each run is a fresh process; the runs share temporary POCL_CACHE_DIR, CLGRAD_CACHE_DIR and
XDG_CACHE_HOME folders, so no cache of an earlier session takes part.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def first_step(env, args):
    cmd = [sys.executable, os.path.join(HERE, "train.py"), "--steps", "1", "--model", args.model,
           "--train-size", "256", "--test-size", "64", "--checkpoint", os.devnull]
    if args.device:
        cmd += ["--device", args.device]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    m = re.search(r"first step took ([0-9.]+) s \(cpu ([0-9.]+) s", r.stdout)
    if r.returncode != 0 or not m:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}")
    # anything the compiler printed would land here: the user must not see it
    noise = [line for line in r.stderr.splitlines() if line.strip() and "it/s" not in line
             and "batch/s" not in line and "s/batch" not in line and "%|" not in line]
    return float(m.group(1)), float(m.group(2)), noise


def main():
    p = argparse.ArgumentParser(description="first-step time of tools/train.py, cold and warm")
    p.add_argument("--device", default=None, help="pocl, intel, cl:N (default: CLGRAD_DEVICE)")
    p.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    p.add_argument("--warm", type=int, default=1, help="warm runs after the cold one")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="clgrad-cold-") as tmp:
        # XDG_CACHE_HOME too: pyopencl keeps its own cache of binaries there
        env = dict(os.environ, POCL_CACHE_DIR=os.path.join(tmp, "pocl"),
                   CLGRAD_CACHE_DIR=os.path.join(tmp, "clgrad"), XDG_CACHE_HOME=tmp)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.dirname(HERE),
                                                          env.get("PYTHONPATH")]))
        cold, cpu, noise = first_step(env, args)
        print(f"cold first step: {cold:.2f} s (process cpu time {cpu:.2f} s)")
        for line in noise:
            print(f"  stderr: {line}")
        for _ in range(args.warm):
            warm, cpu, noise = first_step(env, args)
            print(f"warm first step: {warm:.2f} s (process cpu time {cpu:.2f} s)")
            for line in noise:
                print(f"  stderr: {line}")


if __name__ == "__main__":
    main()
