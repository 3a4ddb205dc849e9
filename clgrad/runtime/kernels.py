"""Kernel sources and programs.

Templates in `cl_kernels/` are rendered with Mako at import (strict: an undefined name fails at
once), one `Program` per template family and dtype. A program is built for a device the first time
one of its kernels is asked for; the built binary is kept in a cache directory so that the next
process loads it instead of compiling (keyed by source, options, device, driver and clgrad
version). Kernel objects are memoised per device, and each kernel's scalar argument types are
declared once, read off its signature in the rendered source.
"""
import hashlib
import os
import re
import tempfile
import threading
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.cltypes as cltypes
from mako.lookup import TemplateLookup

from .._version import __version__


def _kernel_dir():
    here = Path(__file__).resolve().parent.parent
    for cand in (here / "cl_kernels", here.parent / "cl_kernels"):
        if cand.is_dir():
            return cand
    raise ImportError(f"clgrad's kernel templates (cl_kernels/) are missing next to {here}")


KERNEL_DIR = _kernel_dir()
_lookup = TemplateLookup(directories=[str(KERNEL_DIR)], strict_undefined=True,
                         input_encoding="utf-8")


def render(template, **params):
    """Render one template of cl_kernels/ to OpenCL C.

    >>> import clgrad
    >>> "__kernel" in render("copy.mako", dt=clgrad.float32, srcs=[clgrad.float32])
    True
    """
    return _lookup.get_template(template).render(**params)


class KernelBuildError(RuntimeError):
    """A program failed to build; carries the build log and the rendered source."""

    def __init__(self, program, device, log, options):
        self.log = log
        self.source = program.source
        numbered = "\n".join(f"{i + 1:5d}  {line}" for i, line in enumerate(program.source.split("\n")))
        # some drivers (Intel's CPU runtime) fail a build with an empty log
        shown = log if log.strip() else "(the driver gave no build log)"
        super().__init__(f"building OpenCL program {program.name} for {device.name} with options "
                         f"{options!r} failed.\n--- build log ---\n{shown}\n--- source ---\n{numbered}")


_SCALAR_TYPES = {
    "char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16,
    "int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64,
    "float": np.float32, "double": np.float64, "half": np.float16,
    "long8": cltypes.long8, "int8": cltypes.int8, "long4": cltypes.long4, "int4": cltypes.int4,
}
_SIG = re.compile(r"__kernel\s+(?:__attribute__\s*\(\(.*?\)\)\s*)?void\s+(\w+)\s*\(([^)]*)\)", re.S)


def parse_signatures(source):
    """{kernel name: [numpy dtype or None per argument]} read from the source; None marks a
    buffer or local-memory argument."""
    sigs = {}
    for name, args in _SIG.findall(source):
        types = []
        for arg in args.split(","):
            arg = arg.strip()
            if not arg:
                continue
            if "*" in arg or "__global" in arg or "__local" in arg:
                types.append(None)
                continue
            words = [w for w in arg.replace("const", " ").split() if w]
            ctype = words[-2]
            if ctype not in _SCALAR_TYPES:
                raise ValueError(f"kernel {name}: argument type {ctype!r} has no numpy type")
            types.append(_SCALAR_TYPES[ctype])
        sigs[name] = types
    return sigs


def cache_dir():
    """Where built binaries (and tuning results) are kept: $CLGRAD_CACHE_DIR, else
    $XDG_CACHE_HOME/clgrad, else ~/.cache/clgrad. CLGRAD_CACHE_DIR=off disables it."""
    d = os.environ.get("CLGRAD_CACHE_DIR")
    if d is not None:
        return None if d.lower() in ("", "0", "off", "none") else Path(d)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "clgrad"


def keeps_binaries(device):
    """Whether clgrad keeps built binaries itself. PoCL and NVIDIA cache built programs on their
    own (a PoCL cache hit costs ~30 ms a program), and asking PoCL for a program's binary makes it
    compile every kernel in it (tens of seconds for the big elementwise programs), so for them
    the driver's cache is used. CLGRAD_BINARY_CACHE=always|never overrides."""
    mode = os.environ.get("CLGRAD_BINARY_CACHE", "auto").lower()
    if mode in ("always", "1", "yes"):
        return True
    if mode in ("never", "0", "no"):
        return False
    return not (device.is_pocl or "nvidia" in device.platform_name.lower())


ALL_PROGRAMS = []          # every Program rendered at import, for the prebuild and dump tools
BUILD_STATS = {"built_from_source": 0, "loaded_binary": 0, "build_seconds": 0.0}
_build_lock = threading.Lock()


class Program:
    """One template family rendered for one dtype: the unit that is compiled. Its kernels are
    fetched with `get_kernel(device, program, name)`."""

    def __init__(self, family, variant, source, options=""):
        self.id = len(ALL_PROGRAMS)
        self.family = family
        self.variant = variant
        self.name = f"{family}_{variant}"
        self.source = source
        self.options = options
        self.signatures = parse_signatures(source)
        self.digest = hashlib.sha256(source.encode()).hexdigest()
        ALL_PROGRAMS.append(self)

    def __repr__(self):
        return f"<Program {self.name}: {len(self.signatures)} kernels>"

    def options_for(self, device):
        return (f"-DVEC={device.vec} -DVEC8={device.vec8} -DREDUCE_BLOCKED={int(device.cpu_paths)} "
                f"{self.options}").strip()

    def build(self, device):
        prog = device.programs.get(self.id)
        if prog is None:
            with _build_lock:
                prog = device.programs.get(self.id)
                if prog is None:
                    prog = self._build(device)
                    device.programs[self.id] = prog
        return prog

    def _build(self, device):
        import time
        t0 = time.perf_counter()
        options = self.options_for(device)
        cdir = cache_dir() if keeps_binaries(device) else None
        path = None
        if cdir is not None:
            key = "\0".join([self.digest, options, device.name, device.platform_name,
                             device.version, device.driver_version, __version__])
            path = cdir / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".bin")
            if path.exists():
                try:
                    prog = cl.Program(device.context, [device.cl_device], [path.read_bytes()])
                    prog.build(options)
                    BUILD_STATS["loaded_binary"] += 1
                    BUILD_STATS["build_seconds"] += time.perf_counter() - t0
                    return prog
                except Exception:
                    pass             # stale or foreign binary: rebuild from source
        prog = cl.Program(device.context, self.source)
        try:
            prog.build(options, devices=[device.cl_device])
        except cl.RuntimeError:
            try:
                log = prog.get_build_info(device.cl_device, cl.program_build_info.LOG) or ""
            except Exception:          # a driver that cannot give one
                log = ""
            raise KernelBuildError(self, device, log, options) from None
        BUILD_STATS["built_from_source"] += 1
        BUILD_STATS["build_seconds"] += time.perf_counter() - t0
        if path is not None:
            try:
                binary = prog.get_info(cl.program_info.BINARIES)[0]
                if binary:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
                    with os.fdopen(fd, "wb") as f:
                        f.write(binary)
                    os.replace(tmp, path)
            except OSError:
                pass                 # a read-only home is no reason to fail
        return prog


def _make_kernel(device, program, name):
    prog = program.build(device)
    with device.lock:
        k = device.kernels.get((program.id, name))
        if k is None:
            if name not in program.signatures:
                raise KeyError(f"program {program.name} has no kernel {name!r}")
            k = cl.Kernel(prog, name)
            k.set_scalar_arg_dtypes(program.signatures[name])
            device.kernels[(program.id, name)] = k
    return k


def get_kernel(device, program, name):
    """The memoised `cl.Kernel` `name` of `program` on `device` (built on first use)."""
    k = device.kernels.get((program.id, name))
    if k is None:
        k = _make_kernel(device, program, name)
    return k


# The profiler (clgrad.autograd.profiler) sets this to a callable(kernel, event); while it is None
# launching pays nothing for profiling.
profile_hook = None


def launch(device, kernel, gsize, lsize, *args):
    """Enqueue `kernel` on the device's queue; returns at once (a tiny kernel may wait for a
    few more to go with it: Device.defer)."""
    if profile_hook is None and gsize[0] <= device.TINY_ITEMS:
        device.defer(kernel, gsize, lsize, args)
        return None
    evt = kernel(device.queue, gsize, lsize, *args)
    if profile_hook is not None:
        profile_hook(kernel, evt)
    return evt


def vec_width(device, *dts):
    """Elements per work-item in contiguous kernels over these dtypes (the VEC / VEC8 macro a
    template's width() picks)."""
    for d in dts:
        if d.ct in ("double", "long"):
            return device.vec8
    return device.vec


def grid(device, n_items):
    """(global size, local size) covering n_items work-items: small launches get a small
    work-group, larger ones the device's preferred size."""
    wg = device.wg
    if n_items >= wg:
        return (-(-n_items // wg) * wg,), (wg,)
    ls = 1
    while ls < n_items:
        ls <<= 1
    ls = min(ls, wg)          # a device's limit need not be a power of two
    return (-(-n_items // ls) * ls,), (ls,)


def group_limit(device, kernel, most):
    """The most work-items a work-group of `kernel` may have on `device`, at most `most` (the size
    of the kernel's local buffers): CL_KERNEL_WORK_GROUP_SIZE also counts the kernel's registers
    and local memory, and may be below the device's maximum.

    >>> import clgrad
    >>> from clgrad.ops.reduce import PROGRAMS
    >>> d = clgrad.runtime.default_device()
    >>> 1 <= group_limit(d, get_kernel(d, PROGRAMS[clgrad.float32], "sum_r"), 256) <= 256
    True
    """
    key = ("group_limit", kernel.function_name, id(kernel))
    n = device.kernels.get(key)
    if n is None:
        n = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device.cl_device)
        n = max(1, min(int(n), device.max_work_group_size, most))
        device.kernels[key] = n
    return n
