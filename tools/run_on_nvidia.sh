#!/usr/bin/env bash
# clgrad on an NVIDIA GPU machine that has no package registry (docs/implementations.md, "NVIDIA's OpenCL").
#
#   tools/run_on_nvidia.sh wheels          # on a machine WITH a registry: fill .whl/ for Python 3.12
#   tools/run_on_nvidia.sh STEP...         # on the GPU machine, with .whl/ beside the checkout
#
# STEPs: devices (what OpenCL sees), bench (tools/bench_compile.py against torch on CUDA),
# kernels (tools/bench.py's kernel table), suite (the whole test suite on the GPU, with its 30
# slowest tests: on an H200 it passed 2253 tests in 101 s on 2026-11-27 but did not finish 2385
# in 275 s on 2026-12-04, cold), compiled (the model tests compiled, as CI runs them:
# .ci/compiled_tests.sh), replay (tools/bench_replay.py: a replay's host time per launch against
# the driver's). Each step's output goes to $OUT/<step>.txt (OUT defaults to /tmp/clgrad-nvidia);
# a step that fails does not stop the next. Each step has a time limit (BENCH_TIMEOUT, default
# 240 s; SUITE_TIMEOUT, 420 s, also the compiled step's); BENCH_ARGS (default --quick) go to the
# bench, e.g. BENCH_ARGS="--only GPT" for best of 10, "--quick --kernels" for each compiled
# step's kernels by device time.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/clgrad-nvidia}
mkdir -p "$OUT"

if [ "${1:-}" = wheels ]; then
  # pyopencl and its needs (compiled ones for cp312), the test tools, and pip's PoCL (a CPU
  # device for the tests' "cpu"; left out by clgrad where its LLVM does not know the CPU)
  mkdir -p .whl
  bin="--no-deps --only-binary=:all: --python-version 3.12 --implementation cp
       --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
       --platform manylinux2014_x86_64 -d .whl"
  for p in pyopencl siphash24 markupsafe hypothesis pocl-binary-distribution; do
    python3 -m pip download -q $bin "$p"
  done
  for p in mako pytools platformdirs typing_extensions sortedcontainers attrs pytest-xdist \
           execnet tqdm; do
    python3 -m pip download -q --no-deps -d .whl "$p"
  done
  ls .whl
  exit 0
fi

# 1. the wheels, into a folder on PYTHONPATH (no venv: numpy, pytest and torch are the machine's)
if [ ! -d /tmp/clgrad-site/pyopencl ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/clgrad-site .whl/*.whl
fi
export PYTHONPATH=/tmp/clgrad-site:$PWD

# 2. the ICD loader inside pyopencl's wheel, pointed at NVIDIA's OpenCL library (it finds pip's
#    PoCL, installed beside it, by itself: that is the tests' "cpu")
nv=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}')
for d in /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
  [ -z "$nv" ] && [ -e "$d/libnvidia-opencl.so.1" ] && nv="$d/libnvidia-opencl.so.1"
done
mkdir -p /tmp/clgrad-icd
echo "${nv:-libnvidia-opencl.so.1}" > /tmp/clgrad-icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/clgrad-icd CLGRAD_DEVICE=${CLGRAD_DEVICE:-nvidia}

for step in "$@"; do
  echo "=== $step (at ${SECONDS}s)"
  case $step in
    devices) { nvidia-smi -L; python3 -m clgrad; } > "$OUT/devices.txt" 2>&1 ;;
    bench)   timeout "${BENCH_TIMEOUT:-240}" python3 tools/bench_compile.py ${BENCH_ARGS:---quick} \
               --no-torch-compile > "$OUT/bench.txt" 2>&1 ;;
    kernels) timeout 120 python3 tools/bench.py --quick --only kernels > "$OUT/kernels.txt" 2>&1 ;;
    suite)   timeout -s INT "${SUITE_TIMEOUT:-420}" python3 -m pytest -n "$(nproc)" -rfE --durations=30 \
               > "$OUT/suite.txt" 2>&1 ;;
    compiled) ( source .ci/compiled_tests.sh
                PYTHON=python3 PYTEST_ARGS="-n $(nproc) -rfE" \
                  timeout -s INT "${SUITE_TIMEOUT:-420}" bash -c "$(declare -f compiled_tests); compiled_tests"
              ) > "$OUT/compiled.txt" 2>&1 ;;
    replay)  timeout 120 python3 tools/bench_replay.py > "$OUT/replay.txt" 2>&1 ;;
    *) echo "unknown step $step" ;;
  esac
  echo "    exit $? (at ${SECONDS}s)"; tail -3 "$OUT/$step.txt" 2>/dev/null
done
