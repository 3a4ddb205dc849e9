"""OpenCL platforms and devices: discovery, the default device, one context and one in-order queue
per device, and what each device can do.

Nothing here runs at import: the platforms are listed the first time something asks for a device,
so `import clgrad` works on a machine with no OpenCL at all.
"""
import collections
import os
import re
import threading
import warnings

import numpy as np
import pyopencl as cl

from .icd import register_pip_drivers
from .memory import MemoryPool

NO_DEVICE_HELP = (
    "clgrad found no OpenCL device{why}. To run on the CPU, install PoCL: "
    "`pip install clgrad[pocl]` (or `pip install pocl-binary-distribution`); for a GPU, install "
    "its vendor's OpenCL driver. CLGRAD_DEVICE picks a device (pocl, nvidia, amd, intel, cl:N).")


class NoDeviceError(RuntimeError):
    """Raised by the first operation that needs a device when none can be found."""


class Device:
    """One OpenCL device with its context, its in-order queue, its memory pool and its built
    kernels. `clgrad.cl.devices()` lists them; index N is the device "cl:N"."""

    def __init__(self, index, cl_device):
        self.index = index
        self.cl_device = cl_device
        self.platform = cl_device.platform
        self.context = cl.Context([cl_device])
        # The queue records device times only while a profiler asks for them (set_profiling)
        self._queue = cl.CommandQueue(self.context, cl_device)
        self._profiling_users = 0
        # a second in-order queue, and the one in use while on it (runtime/side_queue.py)
        self._side_queue = None
        self._on_side = None
        # Tiny kernel launches wait here and go to the queue in bursts (see defer()).
        self._deferred = collections.deque()
        self._defer_lock = threading.Lock()
        self._checks = []           # (event, host flag, error) of check_later, oldest first
        d = cl_device
        ext = d.extensions.split()
        self.name = d.name.strip()
        self.platform_name = self.platform.name.strip()
        self.vendor = d.vendor.strip()
        self.is_pocl = "portable computing language" in self.platform_name.lower() or \
            "pocl" in self.platform_name.lower()
        self.is_cpu = bool(d.type & cl.device_type.CPU)
        self.is_gpu = bool(d.type & cl.device_type.GPU)
        # Oclgrind simulates a device to check kernels (races, out-of-bounds accesses): it is
        # thousands of times slower, so it is used only when asked for by name.
        self.is_simulator = "oclgrind" in f"{self.platform_name} {self.name}".lower()
        self.version = d.version.strip()
        self.driver_version = d.driver_version.strip()
        # Why this device cannot build kernels on this machine (None when it can); such a device
        # is listed but never chosen by default.
        self.unusable = unusable_reason(self)
        # Quirks, as named predicates of the device: the kernel layer asks these, never the
        # implementation's name. PoCL generates a kernel's code anew for each local size it is
        # launched with (0.1-0.4 s each), so launches keep one local size per kernel (grid).
        self.compiles_per_local_size = self.is_pocl
        # PoCL 3.1's kernel cache races: processes building one kernel at once on an empty cache
        # (four MPI ranks at start) fail now and then, with no log ("failed to build the
        # program" and no diagnostic; 1 run in 3 of tests/cache_ranks.py on Debian's PoCL 3.1):
        # such a build is tried again there before it is reported
        self.races_in_build_cache = self.is_pocl
        # PoCL's CPU workers sleep whenever no command is ready, and an in-order queue readies
        # the next command only once the one before is done: a kernel of less than ~30 us of
        # work runs on one core (tools/bench_workers.py). nn.LSTM's layers run as a wavefront
        # on two queues there (ops/lstm_stack.py); on Intel's CPU runtime that made the
        # compiled LSTM step slower (tools/bench_compile.py, 1.09-1.11x torch against 0.88-0.94).
        # And a range of an LSTM or GRU layer's small steps is one launch of one work-group there
        # (ops/rnn_cell.py, _one_launch)
        self.small_kernels_use_one_core = self.is_pocl and self.is_cpu
        # PoCL's worker threads start on a burst's first launch and contend with the enqueues
        # that follow: bursts are held behind a user event (flush) where that pays
        self.gate_bursts = gates_bursts(self)
        # OpenCL lets float32 division and sqrt be 2.5 and 3 ulp off unless a build asks for
        # correct rounding, and NVIDIA's compiler takes the licence (x / 5 an ulp off numpy's on
        # an H200); torch's CUDA kernels round correctly. Asked for where the device can round so
        # and is not a CPU (CPU implementations round correctly already)
        self.asks_rounded_divide = not self.is_cpu and bool(
            d.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)
        self.has_fp64 = "cl_khr_fp64" in ext or d.double_fp_config != 0
        self.has_fp16 = "cl_khr_fp16" in ext
        self.has_int64_atomics = "cl_khr_int64_base_atomics" in ext
        self.local_mem_size = d.local_mem_size
        self.has_local_mem = d.local_mem_type == cl.device_local_mem_type.LOCAL or self.is_cpu
        self.max_work_group_size = d.max_work_group_size
        # float lanes of the device's SIMD unit (16 with AVX-512, 8 with AVX2; 1 when unknown)
        self.simd_floats = max(1, int(getattr(d, "native_vector_width_float", 1) or 1))
        self.compute_units = d.max_compute_units
        self.global_mem_size = d.global_mem_size
        self.max_alloc = d.max_mem_alloc_size
        self.extensions = ext
        self.wg = min(256, self.max_work_group_size)
        self.torch_device = None          # its clgrad.device ("cpu", "cuda:K", "cl:N"), memoised
        self.pool = MemoryPool(self.context, self.global_mem_size, self.max_alloc)
        self.lock = threading.RLock()
        # The code paths a kernel takes (launch geometry, local-memory variants, tile and vector
        # configurations) follow cpu_paths, not the device type: CLGRAD_GPU_PATHS=1 makes every
        # device take the GPU paths, so that they are proven on CPUs and simulators too.
        self.set_code_paths(cpu=self.is_cpu and not gpu_paths_forced())

    def set_code_paths(self, cpu, vectors=None):
        """Take the CPU code paths (cpu=True) or the GPU ones from now on. Build options depend
        on them, so the kernels built so far are dropped. The Oclgrind check and the tests use it
        to run both families of paths on one device. `vectors` = (VEC, VEC8, native vloads)
        overrides what `vector_widths` picks (the Oclgrind check runs Intel's widths that way).

        >>> import clgrad
        >>> d = clgrad.runtime.default_device(); was = d.cpu_paths
        >>> d.set_code_paths(cpu=False); d.cpu_paths, d.vec
        (False, 4)
        >>> d.set_code_paths(cpu=was)
        """
        was, self.cpu_paths = getattr(self, "cpu_paths", None), bool(cpu)   # None: in __init__
        # Contiguous kernels handle VEC elements per work-item (VEC8 of 8-byte types), loaded
        # with vloadN where native_vloads, else assembled from scalar loads (common.mako)
        vec, vec8, native = vectors or vector_widths(self)
        problem = None
        if vec not in (4, 8, 16) or vec8 not in (2, 4, 8):
            problem = ""
        elif (vec == 16 or vec8 == 8) and not wide_vectors_ok(self):
            problem = (f" on cl:{self.index}: {self.platform_name} compiles for "
                       f"{compile_target(self)!r}, which has no 512-bit registers, and PoCL "
                       "miscompiles vectors wider than its target's (kernels go missing from "
                       "the built program)")
        if problem is not None:          # a refused choice leaves the device as it was
            self.cpu_paths = was
            raise ValueError(f"unsupported vector widths {(vec, vec8, native)}{problem}")
        self.vec, self.vec8, self.native_vloads = vec, vec8, bool(native)
        self.kernels = {}                 # (program id, kernel name) -> cl.Kernel
        self.programs = {}                # program id -> cl.Program
        for cache in PATH_CACHES:         # plans chosen for the other paths
            for key in [k for k in cache if k is self or (isinstance(k, tuple) and self in k)]:
                del cache[key]

    @property
    def queue(self):
        """The device's in-order queue. Using it for anything (a copy, a launch, finish) first
        enqueues the tiny launches that are waiting, so everything keeps its program order."""
        if self._deferred:
            self.flush()
        return self._queue

    # A launch into an idle queue costs a driver about 10 us (PoCL wakes a worker thread), one
    # into a busy queue about 3 us. Launches of tiny kernels (the Python work between them is
    # longer than the kernels) therefore wait in a short list and are enqueued in bursts: when
    # MAX_DEFERRED are waiting, when a larger kernel is launched, or when anything touches the
    # queue (a read, a copy, synchronize). Nothing can observe a result before then. A burst's
    # runs of elementwise launches may go as one fused launch each (deferred_fuser).
    MAX_DEFERRED = 64
    TINY_ITEMS = 1024
    GATE_MIN = 8

    def defer(self, kernel, gsize, lsize, args):
        # deque.append and popleft are atomic: launches from any thread keep their order
        self._deferred.append((kernel, gsize, lsize, args))
        if len(self._deferred) >= self.MAX_DEFERRED:
            self.flush()

    # fuse(device, launches) -> launches: where a burst's runs of elementwise launches become
    # one launch each (clgrad/kernels/fused.py sets it; the runtime knows no kernel family)
    deferred_fuser = None

    def flush(self):
        """Enqueue the waiting launches, in order."""
        pending = self._deferred
        q = self._queue
        failed = None
        with self._defer_lock:
            if self.deferred_fuser is not None and len(pending) > 1:
                items = []
                while pending:
                    items.append(pending.popleft())
                # the fused form, or on any failure the launches as they came (and the warning
                # once they are enqueued: a filter may make it an exception): never lost
                try:
                    fused = self.deferred_fuser(items)
                except Exception as err:
                    fused, failed = items, err
                pending.extendleft(reversed(fused))
            gates = gate_queues((self,) if self.gate_bursts else (), len(pending))
            try:
                while pending:
                    kernel, gsize, lsize, args = pending.popleft()
                    kernel(q, gsize, lsize, *args)
            finally:
                open_gates(gates)
        if failed is not None:
            warnings.warn(f"clgrad: held-back launches on {self} not fused: {failed!r}",
                          RuntimeWarning)

    def check_later(self, buf, error):
        """Read `buf`, a check's int32 flag (an index or a class target out of range), without
        waiting; when the flag was set, the exception error() builds is raised at the device's
        next wait: a read to the host, synchronize(), or the next check_later, which waits for
        this one. A GPU's asynchronous errors arrive as late; a blocking read here would stall
        the host until every launch before it had run (an eager training step's backward and
        optimizer could not be enqueued while its forward runs).

        >>> import clgrad
        >>> from clgrad.runtime.device import default_device
        >>> flag = clgrad.tensor([1], dtype=clgrad.int32)
        >>> default_device().check_later(flag._storage.buf, lambda: IndexError("late"))
        >>> try:
        ...     default_device().synchronize()
        ... except IndexError as e:
        ...     print(e)
        late
        """
        self.raise_pending_checks()
        flag = np.zeros(1, np.int32)
        self._checks.append((cl.enqueue_copy(self.queue, flag, buf, is_blocking=False), flag,
                             error))

    def raise_pending_checks(self):
        """Wait for the flags of check_later's checks and raise the first set one's error (each
        is raised once)."""
        if not self._checks:
            return
        checks, self._checks = self._checks, []
        for evt, _, _ in checks:
            evt.wait()
        for _, flag, error in checks:
            if flag[0]:
                raise error()

    def synchronize(self):
        """Wait until everything queued on the device has run; raise a pending check's error."""
        self.queue.finish()
        self.raise_pending_checks()

    def set_profiling(self, on):
        """Make the device's queue record each command's device times (on=True, as the profiler's
        use_device does) or stop (on=False, once per on=True). A profiling queue costs NVIDIA's
        driver about 6 us more per launch (15.6 against 9.3 us on an H200; PoCL 2.2 against 1.9),
        so the queue profiles only while asked. The old queue drains first: commands keep their
        order."""
        self._profiling_users = max(0, self._profiling_users + (1 if on else -1))
        want = self._profiling_users > 0
        has = bool(self._queue.properties & cl.command_queue_properties.PROFILING_ENABLE)
        if want != has:
            self.queue.finish()
            self._queue = cl.CommandQueue(self.context, self.cl_device, properties=(
                cl.command_queue_properties.PROFILING_ENABLE if want else 0))

    @property
    def kind(self):
        return "gpu" if self.is_gpu else "cpu" if self.is_cpu else "accelerator"

    def __str__(self):
        return f"cl:{self.index}"

    def __repr__(self):
        return f"<clgrad device cl:{self.index} {self.name!r} on {self.platform_name!r}>"

    def capabilities(self):
        """A dict of what this device offers, as `python -m clgrad` prints it."""
        return {
            "name": self.name, "platform": self.platform_name, "vendor": self.vendor,
            "type": self.kind, "version": self.version, "driver": self.driver_version,
            "compute_units": self.compute_units, "global_mem_bytes": self.global_mem_size,
            "max_alloc_bytes": self.max_alloc, "local_mem_bytes": self.local_mem_size,
            "max_work_group_size": self.max_work_group_size, "fp64": self.has_fp64,
            "fp16": self.has_fp16, "int64_atomics": self.has_int64_atomics,
        }


# Per-device memos of the ops layer whose contents depend on the code paths (GEMM and convolution
# plans, ...): set_code_paths drops the device's entries. Register one with path_dependent().
PATH_CACHES = []


def vector_widths(dev):
    """(VEC, VEC8, native vloads) for `dev` on its code paths: the elements of up to 4 bytes and
    of 8 bytes a work-item of a contiguous kernel handles, and whether they are loaded with
    vloadN / vstoreN or assembled from scalar accesses.

    - GPU paths: 4 and 2, wide enough loads; a GPU's threads are its SIMD lanes.
    - PoCL (CPU paths) compiling for a target without AVX-512: 8 and 4 (256-bit vectors); it
      vectorises nothing across work-items, and PoCL 3.0 (LLVM 14) compiles vloadN to
      out-of-line calls, so loads are scalar ones assembled into a vector.
    - PoCL 3.1 or newer compiling for an AVX-512 target (`explicit_avx512`): 16 floats with
      native vloadN. Measured on a 2-core Zen 5 EPYC with PoCL 3.1 (LLVM 15), float32, 2^19
      elements, one launch, against 8 assembled: add 60 vs 113 us, exp 102 vs 245, exact GELU
      204 vs 719, tanh 159 vs 486, sum 76 vs 112. 8-byte types keep 4 (256-bit): PoCL 3.1's fmod
      on double8 is wrong (fmod(8.0, 3.0) gives 0.5 in some lanes), on double4 right.
    - pip's PoCL 3.0 compiling for an AVX-512 target (`pocl_targets_avx512`; a 2-core Xeon it
      takes for rocketlake): 16 floats assembled from scalar loads, since its vloadN are calls.
      Measured there (float32, 2^19 elements, ten launches then a sync, best of 24, the two
      widths interleaved in one process, two runs): exp 254-314 vs 325-385 us, exact GELU
      448-753 vs 748-892, log_softmax rows of 512 373-430 vs 476-591, layer_norm 215-245 vs
      303-325, add 193-226 vs 203-205; the eager GPT step of tools/bench_compile.py 99.0 vs
      106.0 ms (interleaved, best of 36, twice), its other steps within the noise.
    - Intel's CPU runtime: one SIMD register of floats (16 with AVX-512, 8 with AVX2) with native
      vloadN. Measured on an AVX-512 EPYC (float32, 2^19 elements, one kernel launch): add 186 us
      with 8 assembled loads, 58 with vload8, 53 with vload16; exact GELU 292, 212, 138 us.

    >>> import clgrad
    >>> vec, vec8, native = vector_widths(clgrad.runtime.default_device())
    >>> vec in (4, 8, 16) and vec8 in (2, 4, 8) and vec8 <= vec // 2
    True
    """
    if not dev.cpu_paths:
        return 4, 2, False
    if dev.is_cpu and "intel(r) opencl" in dev.platform_name.lower():
        vec = 16 if dev.simd_floats >= 16 else 8
        return vec, vec // 2, True
    if explicit_avx512(dev):
        return 16, 4, True
    if dev.is_pocl and pocl_targets_avx512(dev):
        return 16, 4, False
    return 8, 4, False


def compile_target(dev):
    """The CPU PoCL compiles kernels for, as its version string names it ("OpenCL 3.0 PoCL HSTR:
    pthread-x86_64-pc-linux-gnu-skylake-avx512" -> "skylake-avx512"); None for other drivers.

    >>> import clgrad
    >>> all(compile_target(d) is None for d in clgrad.cl.devices() if not d.is_pocl)
    True
    """
    if not dev.is_pocl:
        return None
    m = re.search(r"HSTR:\s*\S*?-linux-gnu-(\S+)", dev.version)
    return m.group(1) if m else None


# LLVM's names of x86 CPUs with AVX-512 (and the x86-64-v4 level), as PoCL passes them to clang
AVX512_TARGETS = ("avx512", "knl", "knm", "skx", "cascadelake", "cooperlake", "cannonlake",
                  "icelake", "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids",
                  "graniterapids", "diamondrapids", "znver4", "znver5", "x86-64-v4")


def wide_vectors_ok(dev):
    """Whether kernels may use 512-bit vectors (16 floats, 8 doubles) on `dev`. PoCL built for a
    target without AVX-512 (pip's PoCL 3.0 takes an AMD Zen 4 for 'znver3', an AVX2 CPU) builds
    such programs without some of their kernels, or crashes; every other driver splits wide
    vectors itself.

    >>> import clgrad
    >>> all(wide_vectors_ok(d) for d in clgrad.cl.devices() if not d.is_pocl)
    True
    """
    if compile_target(dev) is None or not dev.is_cpu or "x86_64" not in dev.version:
        return True
    return pocl_targets_avx512(dev)


def check_vector_width(what, vw, dev):
    """ValueError unless `dev` compiles `what`'s explicit vectors of vw elements (2, 4, 8 or 16;
    16 where wide_vectors_ok): the tuned families' configuration checks.

    >>> import clgrad
    >>> check_vector_width("GEMM", 8, clgrad.runtime.default_device())
    """
    if vw not in (2, 4, 8, 16):
        raise ValueError(f"{what} config VW must be 2, 4, 8 or 16, got {vw}")
    if vw == 16 and not wide_vectors_ok(dev):
        raise ValueError(f"{what} config VW=16 needs 512-bit vectors, which {dev.name} "
                         "miscompiles (its PoCL targets a CPU without AVX-512)")


def pocl_targets_avx512(dev):
    """Whether PoCL compiles for an x86 CPU with AVX-512 on `dev` (False for other drivers), as
    its version string names the target: 16-float vectors fill its zmm registers.

    >>> import clgrad
    >>> any(pocl_targets_avx512(d) for d in clgrad.cl.devices() if not d.is_pocl)
    False
    """
    target = compile_target(dev)
    return bool(target) and any(name in target for name in AVX512_TARGETS)


def explicit_avx512(dev):
    """Whether clgrad's explicit vectors (the contiguous kernels' VEC, the packed GEMM's and the
    convolutions' VW) should be 512 bits wide on `dev`: PoCL 3.1 or newer compiling for an
    AVX-512 target (the release these figures come from; PoCL 3.0's LLVM 14 made vloadN calls).
    LLVM's AVX-512 targets vectorise with 256-bit registers by default, and so do vectors of 8
    floats; only 16-float vector types fill the 32 zmm registers. Measured on a 2-core Zen 5
    EPYC (Debian's PoCL 3.1, skylake-avx512): 1024^2 float32 GEMM 207 -> 319-374 GFLOP/s, a 3x3
    convolution 32 -> 64 channels on 32 x 32 x 32 x 32 forward 6.0 -> 3.6 ms, with backward 19.8
    -> 15.9 ms.

    >>> import clgrad
    >>> any(explicit_avx512(d) for d in clgrad.cl.devices() if not d.is_pocl)
    False
    """
    return dev.is_cpu and pocl_targets_avx512(dev) and pocl_release(dev) >= (3, 1)


def pocl_release(dev):
    """PoCL's release on `dev` as (major, minor), from its driver version; (0, 0) for other
    drivers or a version that names none.

    >>> import clgrad
    >>> [pocl_release(d) for d in clgrad.cl.devices() if not d.is_pocl][:1] in ([], [(0, 0)])
    True
    """
    release = re.match(r"(\d+)\.(\d+)", dev.driver_version or "") if dev.is_pocl else None
    return (int(release.group(1)), int(release.group(2))) if release else (0, 0)


def gates_bursts(dev):
    """Whether a burst of launches on `dev` goes to its queue behind a user event, released once
    the burst is enqueued (Device.flush, a replay's bursts): pip's PoCL 3.0, whose worker threads
    start on a burst's first launch and then contend with the enqueues that follow (2-core Zen 4
    EPYC: W4 eager 17.7 -> 16.7 us per op with the gate). PoCL 3.1 pays more for the gate than it
    saves: on a 2-core Zen 5 EPYC (Debian's 3.1), opening it took 23-31 us, and a replay of W3's
    step enqueued in 111 us gated against 86 ungated (thread time, best of 30); eager W4 3.40 ->
    3.20 ms, the LSTM step 5.61 -> 5.32 ms without it (best of 10, in turns).

    >>> import clgrad
    >>> any(gates_bursts(d) for d in clgrad.cl.devices() if not d.is_pocl)
    False
    """
    return dev.is_pocl and pocl_release(dev) < (3, 1)


def gate_queues(devices, n):
    """Hold what the queues of `devices` get next behind a user event each, if a burst of n
    items (n >= Device.GATE_MIN) is to come; the events, for open_gates. PoCL's worker threads
    start on a burst's first launch and then contend with the enqueues that follow (about 3-6 us
    each instead of 2 on pip's PoCL 3.0); held, the burst is released whole. Only device work
    goes behind a gate: a read waits behind it (on PoCL 3.1 it never returns), and host work may
    read. Callers pass the devices whose `gate_bursts` holds.

    >>> import clgrad
    >>> gates = gate_queues([clgrad.runtime.default_device()], 8)
    >>> open_gates(gates); len(gates)
    1
    """
    gates = []
    if n >= Device.GATE_MIN:
        for dev in devices:
            gate = cl.UserEvent(dev.context)
            cl.enqueue_barrier(dev._queue, wait_for=[gate])
            gates.append(gate)
    return gates


def open_gates(gates):
    """Release what gate_queues held (each event once)."""
    for gate in gates:
        gate.set_status(cl.command_execution_status.COMPLETE)


def unusable_reason(dev):
    """Why `dev` cannot build kernels on this machine, or None. The one case known: PoCL 3.0 from
    pip carries LLVM 14, which does not know CPUs newer than it (AMD Zen 5, for one); PoCL then
    asks its compiler for target CPU 'generic', which LLVM 14 rejects on x86-64, so every build
    fails. PoCL names the target CPU at the end of its version string ("HSTR: pthread-x86_64-...-
    generic").

    >>> import clgrad
    >>> all(d.unusable is None or d.is_pocl for d in clgrad.cl.devices())
    True
    """
    if dev.is_pocl and dev.is_cpu and "x86_64" in dev.version and \
            dev.version.rstrip().endswith("-generic"):
        return (f"{dev.platform_name} ({dev.version}) cannot compile for this CPU ({dev.name}): "
                "its LLVM does not know the CPU model and rejects target CPU 'generic'. Install "
                "a PoCL that takes its target from its kernel library (Debian/Ubuntu: `apt-get "
                "install pocl-opencl-icd`, PoCL 3.1 or newer), or `pip install clgrad[intel]` for "
                "Intel's CPU runtime; clgrad then uses that as 'cpu'")
    return None


def usable(devs):
    """The devices of `devs` that can build kernels here (see unusable_reason)."""
    return [d for d in devs if d.unusable is None]


def path_dependent(cache):
    """Register a dict keyed by device (or by tuples holding one) as path-dependent; returns it.

    >>> plans = path_dependent({})
    """
    PATH_CACHES.append(cache)
    return cache


def gpu_paths_forced():
    """Whether CLGRAD_GPU_PATHS asks every device to take the GPU code paths."""
    return os.environ.get("CLGRAD_GPU_PATHS", "").strip().lower() in ("1", "yes", "true", "on")


_lock = threading.Lock()
_devices = None
_discovery_error = None
_default_index = None


def _discover():
    global _devices, _discovery_error
    found = []
    register_pip_drivers()
    try:
        platforms = cl.get_platforms()
    except Exception as e:             # no ICD loader, or no platform behind it
        _discovery_error = e
        platforms = []
    for p in platforms:
        try:
            found.extend(p.get_devices())
        except Exception as e:
            _discovery_error = e
    # A bad driver must not hide the good ones: a device whose context fails is left out.
    devs = []
    for d in found:
        try:
            devs.append(Device(len(devs), d))
        except Exception as e:
            _discovery_error = e
    _devices = devs


def devices():
    """Every OpenCL device clgrad can use; index N of this list is the device "cl:N".

    >>> import clgrad
    >>> isinstance(clgrad.cl.devices(), list)
    True
    """
    if _devices is None:
        with _lock:
            if _devices is None:
                _discover()
    return _devices


def _match(spec, devs):
    spec = spec.strip().lower()
    if spec.startswith("cl:") or spec.isdigit():
        i = int(spec.split(":")[-1])
        if not 0 <= i < len(devs):
            raise NoDeviceError(f"CLGRAD_DEVICE={spec!r}: there are {len(devs)} OpenCL devices "
                                f"(cl:0 to cl:{len(devs) - 1})")
        return devs[i]
    # real devices first: "gpu" or "amd" must not pick the simulator; and usable ones first:
    # "pocl" names the PoCL that builds here when two are installed (pip's and Debian's)
    found = named(spec, sorted(devs, key=lambda d: (d.is_simulator, d.unusable is not None)))
    if found:
        return found[0]
    names = ", ".join(f"cl:{d.index} {d.name} ({d.platform_name})" for d in devs)
    raise NoDeviceError(f"CLGRAD_DEVICE={spec!r} matches none of the OpenCL devices: {names}")


def default_device():
    """The device tensors go to when none is named: CLGRAD_DEVICE, else the first GPU, else PoCL's
    CPU device, else the first other device that is not a simulator (Oclgrind is used only when
    named). A device that cannot build kernels on this machine (Device.unusable) is never the
    default: naming it raises NoDeviceError with the reason."""
    global _default_index
    if _default_index is not None:
        return _devices[_default_index]
    devs = devices()
    if not devs:
        why = f" ({_discovery_error})" if _discovery_error else ""
        raise NoDeviceError(NO_DEVICE_HELP.format(why=why))
    spec = os.environ.get("CLGRAD_DEVICE")
    if spec:
        torch_word = spec.strip().lower().split(":")[0] in ("cpu", "cuda")
        dev = get_device(spec) if torch_word else _match(spec, devs)
        if dev.unusable:
            raise NoDeviceError(f"CLGRAD_DEVICE={spec!r} names cl:{dev.index}, which cannot be "
                                f"used here: {dev.unusable}")
    else:
        dev = preferred(devs)
    _default_index = dev.index
    return dev


def preferred(devs):
    """The first GPU, else the PoCL CPU device, else the first device that is not a simulator,
    else the first device; devices that cannot build kernels here are passed over, and when they
    are all there is besides a simulator, NoDeviceError says why."""
    real = [d for d in usable(devs) if not d.is_simulator]
    if not real:
        broken = [d for d in devs if d.unusable and not d.is_simulator]
        if broken:         # not a silent fall back to the simulator, thousands of times slower
            raise NoDeviceError(f"no OpenCL device clgrad can use by default: cl:{broken[0].index} "
                                f"{broken[0].unusable}")
        real = devs
    return next((d for d in real if d.is_gpu), None) or \
        next((d for d in real if d.is_pocl), None) or real[0]


def set_default_device(spec):
    """Make `spec` ("cl:1", "pocl", a Device) the device used when none is named."""
    global _default_index
    _default_index = get_device(spec).index


# torch's device types, in the order of its "Expected one of ..." error; those past cpu and cuda
# clgrad does not have: naming one is an error, as in torch for a type it was not built with
TORCH_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
               "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
               "privateuseone")
_OTHER_TYPES = TORCH_TYPES[2:]
_cuda_current = 0           # the GPU that "cuda" with no index means (clgrad.cuda.set_device)


def gpus():
    """The GPU devices in the order "cuda:0", "cuda:1", ... number them (simulators excluded).

    >>> isinstance(gpus(), list)
    True
    """
    return [d for d in devices() if d.is_gpu and not d.is_simulator]


def cpu_device():
    """The OpenCL device that is "cpu": the CPU device CLGRAD_DEVICE names, else PoCL's, else the
    first other CPU device; None when there is no CPU device.

    >>> cpu_device() is None or cpu_device().is_cpu
    True
    """
    devs = usable([d for d in devices() if d.is_cpu and not d.is_simulator])
    spec = os.environ.get("CLGRAD_DEVICE", "").strip().lower()
    if spec and spec not in ("cpu", "cuda", "cl") and not spec.startswith(("cuda:", "cl:")):
        found = named(spec, devs)
        if found:
            return found[0]
    if spec.startswith("cl:") and spec[3:].isdigit():
        found = [d for d in devs if d.index == int(spec[3:])]
        if found:
            return found[0]
    return next((d for d in devs if d.is_pocl), None) or (devs[0] if devs else None)


def torch_name(dev):
    """(type, index) of a device in torch's vocabulary: ("cpu", None) for the CPU device,
    ("cuda", k) for the k-th GPU, ("cl", N) for any other device (another CPU implementation, a
    simulator), which only clgrad's own "cl:N" names."""
    if dev.is_gpu and not dev.is_simulator:
        return "cuda", gpus().index(dev)
    if dev is cpu_device():
        return "cpu", None
    return "cl", dev.index


def named(word, devs):
    """The devices of devs that a word names, in their order: "pocl" names PoCL's devices; any
    other word the devices of the implementations (platforms) whose name holds it, else, when no
    platform's does, the devices whose vendor, name or kind holds it. A platform's name comes
    first because a CPU device's name is the CPU's: on an Intel CPU "intel" would otherwise
    name PoCL's device ("pthread-Intel(R) Xeon(R) ...") as well as Intel's runtime.

    >>> named("oclgrind", devices()) == [d for d in devices() if d.is_simulator]
    True
    """
    word = word.strip().lower()
    if word == "pocl":
        return [d for d in devs if d.is_pocl]
    by_platform = [d for d in devs if word in d.platform_name.lower()]
    return by_platform or [d for d in devs if word in _words(d)]


def _words(d):
    return f"{d.platform_name} {d.vendor} {d.name} {d.kind}".lower()


def _no_gpu():
    names = ", ".join(f"cl:{d.index} {d.name}" for d in devices()) or "none"
    return RuntimeError("No CUDA GPUs are available: 'cuda' names GPU OpenCL devices and clgrad "
                        f"found none (OpenCL devices: {names}). Use 'cpu', or install the GPU's "
                        "OpenCL driver.")


def get_device(spec=None):
    """Resolve a device argument to a Device: None (the default device), torch's names ("cpu",
    "cuda", "cuda:N", a clgrad.device), clgrad's "cl" / "cl:N" (an index over every OpenCL
    device) or an int N (the same as "cl:N"), a word naming an implementation ("pocl",
    "intel", "oclgrind"), or a Device.

    >>> get_device("cl") is default_device()
    True
    """
    if spec is None:
        return default_device()
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, (str, int)) and hasattr(spec, "type"):
        spec = str(spec)                   # a clgrad.device or a torch.device
    if isinstance(spec, str):
        s = spec.strip().lower()
        typ, _, num = s.partition(":")
        if num and not num.isdigit():
            raise RuntimeError(f"Invalid device string: '{spec}'")
        if typ == "cl":
            if not num:
                return default_device()
            return get_device(int(num))
        if typ == "cpu":
            if num not in ("", "0"):
                raise RuntimeError(f"Invalid device string: '{spec}': 'cpu' has only index 0")
            dev = cpu_device()
            if dev is None:
                if not devices():
                    default_device()       # raises the helpful no-device error
                broken = [d.unusable for d in devices() if d.is_cpu and d.unusable]
                raise RuntimeError("clgrad found no CPU OpenCL device for 'cpu'. " + (
                    broken[0] if broken else "Install PoCL: `pip install clgrad[pocl]`"))
            return dev
        if typ == "cuda":
            g = gpus()
            if not g:
                if not devices():
                    default_device()
                raise _no_gpu()
            k = int(num) if num else _cuda_current
            if not 0 <= k < len(g):
                raise RuntimeError(f"CUDA error: invalid device ordinal: {spec!r}, but there "
                                   f"{'is' if len(g) == 1 else 'are'} {len(g)} GPU OpenCL "
                                   f"device{'s' if len(g) != 1 else ''}")
            return g[k]
        if typ in _OTHER_TYPES:
            raise RuntimeError(f"clgrad runs on OpenCL devices ('cpu', 'cuda:N' for GPUs, "
                               f"'cl:N'), not {spec!r}")
        return _match(s, devices() or [])
    devs = devices()
    if not devs:
        default_device()               # raises the helpful error
    idx = int(spec)
    if not 0 <= idx < len(devs):
        raise RuntimeError(f"invalid device cl:{idx}: there are {len(devs)} OpenCL devices")
    return devs[idx]


def set_cuda_device(spec):
    """Make `spec` the GPU that "cuda" with no index means (clgrad.cuda.set_device)."""
    global _cuda_current
    dev = get_device(f"cuda:{spec}" if isinstance(spec, int) else spec)
    if not dev.is_gpu or dev.is_simulator:
        raise ValueError(f"Expected a cuda device, but got: {spec}")
    _cuda_current = gpus().index(dev)
