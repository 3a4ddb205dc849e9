"""Kernel sources and programs.

Templates in `cl_kernels/` are rendered with Mako at import (strict: an undefined name fails at
once), one `Program` per template family and dtype. A program's kernels are compiled on first use
in units (`Program.unit_key`): each kernel alone with the program's prelude, or the whole program,
whichever the device's compiler makes faster; so a script compiles the few
kernels it uses, not the thousands clgrad has. Built binaries are kept in a cache directory so
that the next process loads them instead of compiling (keyed by the unit's source, options,
device, driver and clgrad version). Kernel objects are memoised per device, and each kernel's
scalar argument types are declared once, read off its signature in the rendered source.
"""
import contextlib
import functools
import hashlib
import os
import re
import tempfile
import threading
import time
from pathlib import Path
try:
    import fcntl
except ImportError:            # Windows: builds are not locked across processes (build_lock)
    fcntl = None

import numpy as np
import mako
import pyopencl as cl
import pyopencl.cltypes as cltypes
from mako.lookup import TemplateLookup

from .._version import __version__
from .device import NoDeviceError


def _kernel_dir():
    here = Path(__file__).resolve().parent.parent
    for cand in (here / "cl_kernels", here.parent / "cl_kernels"):
        if cand.is_dir():
            return cand
    raise ImportError(f"clgrad's kernel templates (cl_kernels/) are missing next to {here}")


KERNEL_DIR = _kernel_dir()
_LOOKUP_OPTIONS = {"strict_undefined": True, "input_encoding": "utf-8"}


def _template_modules():
    """The folder where Mako keeps the Python modules it compiles the templates into, so that
    only the first process compiles them (`import clgrad` took 1.7-2.2 s with them kept, 2.5-3.0
    s without, on a 2-core Xeon); None (compile in memory) when there is no writable cache.
    Mako picks a module by its template's name and modification time only: the folder is named
    by the templates' contents and Mako's version, or another checkout's older template of the
    same name would get this one's module (the lookup's options count too: they change the
    modules)."""
    base = cache_dir()
    if base is None:
        return None
    digest = hashlib.sha256(repr((mako.__version__, _LOOKUP_OPTIONS)).encode())
    for f in sorted(KERNEL_DIR.rglob("*.mako")):
        digest.update(f"{f.relative_to(KERNEL_DIR)}\0{f.stat().st_size}\0".encode())
        digest.update(f.read_bytes())
    folder = base / "templates" / digest.hexdigest()[:20]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return str(folder) if os.access(folder, os.W_OK) else None


_lookup = None


def _templates():
    global _lookup
    if _lookup is None:
        _lookup = TemplateLookup(directories=[str(KERNEL_DIR)],
                                 module_directory=_template_modules(), **_LOOKUP_OPTIONS)
    return _lookup


def render(template, **params):
    """Render one template of cl_kernels/ to OpenCL C.

    >>> import clgrad
    >>> "__kernel" in render("copy.mako", dt=clgrad.float32, srcs=[clgrad.float32])
    True
    """
    return _templates().get_template(template).render(**params)


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


class MissingKernelError(KernelBuildError):
    """A program built, but without a kernel its source defines: the build options left it out
    (#ifdef), or the driver dropped it. Carries the build log, which may say why."""

    def __init__(self, unit, device, name, prog, error):
        options = unit.program.options_for(device)
        super().__init__(unit, device, build_log(prog, device), options)
        built = ", ".join(sorted(built_kernels(prog))) or "none"
        self.args = (f"kernel {name!r} is missing from the built program {unit.name} on "
                     f"{device.name} ({error}); the build succeeded with kernels: {built}.\n"
                     + self.args[0],)


_SCALAR_TYPES = {
    "char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16,
    "int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64,
    "float": np.float32, "double": np.float64, "half": np.float16,
    "long8": cltypes.long8, "int8": cltypes.int8, "long4": cltypes.long4, "int4": cltypes.int4,
    "float2": cltypes.float2, "double2": cltypes.double2,      # complex scalars (re, im)
    "float16": cltypes.float16, "double16": cltypes.double16,  # sixteen numbers in one argument
}
_SIG = re.compile(r"\b(?:__)?kernel\s+(?:__attribute__\s*\(\(.*?\)\)\s*)?void\s+(\w+)\s*\(([^)]*)\)", re.S)


def _active_lines(text, defined):
    """text without the lines an #ifdef / #ifndef / #else / #endif of its own leaves out when
    the macros in `defined` (and no others) are defined."""
    kept, stack = [], []
    for line in text.splitlines():
        words = line.split()
        if words and words[0] in ("#ifdef", "#ifndef"):
            stack.append((words[1] in defined) == (words[0] == "#ifdef"))
        elif words and words[0] == "#else":
            stack[-1] = not stack[-1]
        elif words and words[0] == "#endif":
            stack.pop()
        elif all(stack):
            kept.append(line)
    return "\n".join(kept)


def parse_signatures(source, defined=()):
    r"""{kernel name: [numpy dtype or None per argument]} read from the source; None marks a
    buffer or local-memory argument. An argument list may hold #ifdef / #ifndef blocks of the
    macros in `defined` (a build's -D options): the extra arguments of a kernel's build.

    >>> parse_signatures("__kernel void k(int n\n#ifdef X\n, long m\n#endif\n) {}", {"X"})
    {'k': [<class 'numpy.int32'>, <class 'numpy.int64'>]}
    """
    sigs = {}
    for name, args in _SIG.findall(source):
        types = []
        for arg in _active_lines(args, defined).split(","):
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
    own. Asking PoCL for a binary makes it generate code for every kernel of the unit for any
    work-group size (~0.3 s a kernel), which the first launch then does again for the size it
    uses, while a hit in PoCL's cache costs ~50 ms a unit: so for PoCL the driver's cache is used.
    CLGRAD_BINARY_CACHE=always|never overrides."""
    mode = os.environ.get("CLGRAD_BINARY_CACHE", "auto").lower()
    if mode in ("always", "1", "yes"):
        return True
    if mode in ("never", "0", "no"):
        return False
    return not (device.is_pocl or "nvidia" in device.platform_name.lower())


# The tokens of OpenCL C that the splitter needs: comments, string and character literals and
# preprocessor lines (with their continuations) are skipped whole, so that a brace or the word
# kernel inside them counts for nothing; then braces, semicolons and the kernel keyword.
_TOKEN = re.compile(r"""/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'"""
                    r"""|^[ \t]*\#(?:\\\n|[^\n])*|[{};]|\b(?:__)?kernel\b""", re.S | re.M)


class _Split:
    """A program's source cut at its kernel definitions: text[0] kernel[0] text[1] kernel[1] ...
    text[-1], where the texts are the prelude (defines, types, helper functions) in its places."""

    def __init__(self, source):
        self.texts, self.kernels, self.names = [], [], []
        depth, start, pos = 0, None, 0
        for m in _TOKEN.finditer(source):
            tok = m.group()
            if tok in ("__kernel", "kernel"):
                if depth == 0 and start is None:
                    start = m.start()
                continue
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth -= 1
            elif tok != ";":
                continue                              # a comment, literal or preprocessor line
            if depth == 0 and start is not None:      # the end of a definition (or declaration)
                head = _SIG.match(source, start)
                if head is None:
                    raise ValueError(f"cannot read a kernel's name: {source[start:start + 200]}")
                self.texts.append(source[pos:start])
                self.kernels.append(source[start:m.end()])
                self.names.append(head.group(1))
                start, pos = None, m.end()
        if depth != 0 or start is not None:
            raise ValueError("unbalanced braces: the program cannot be split into kernels")
        self.texts.append(source[pos:])

    def source(self, keep):
        """The program with only the kernels named in `keep`."""
        parts = [self.texts[0]]
        for name, kernel, text in zip(self.names, self.kernels, self.texts[1:]):
            if name in keep:
                parts.append(kernel)
            parts.append(text)
        return "".join(parts)


def split_kernels(source):
    """Cut a program's source into one source per kernel: {name: source}. A kernel's source is the
    program without the definitions of the other kernels: the prelude (defines, types, helper
    functions) stays in place, so each piece compiles as the whole program did.

    >>> src = ("#define T float\\ninline T twice(T x) { return 2 * x; }\\n"
    ...        "__kernel void a(__global T *x) { x[0] = twice(x[0]); }\\n"
    ...        "__kernel void b(__global T *x) { x[0] = 0; }\\n")
    >>> pieces = split_kernels(src)
    >>> sorted(pieces), "twice" in pieces["b"], "void b" in pieces["a"]
    (['a', 'b'], True, False)
    """
    split = _Split(source)
    return {name: split.source({name}) for name in dict.fromkeys(split.names)}


ALL_PROGRAMS = []          # every Program rendered at import, for the prebuild and dump tools
# rejected_binary: cached entries that would not load (another driver's, or damaged) and were
# rebuilt from source. retried_builds: builds that failed and were tried again
# (Device.races_in_build_cache).
BUILD_STATS = {"built_from_source": 0, "loaded_binary": 0, "rejected_binary": 0,
               "retried_builds": 0, "build_seconds": 0.0}
_build_lock = threading.Lock()


class Unit:
    """What is compiled at once: one kernel of a Program with the program's prelude, or all of
    it. Carries the name and source that a KernelBuildError shows."""

    def __init__(self, program, key, kernels, source):
        self.program = program
        self.key = key
        self.kernels = kernels
        self.name = program.name if key is None else f"{program.name}:{key}"
        self.source = source
        self.digest = hashlib.sha256(source.encode()).hexdigest()

    def __repr__(self):
        return f"<Unit {self.name}: {len(self.kernels)} kernels>"


class Program:
    """One template family rendered for one dtype. Its kernels are fetched with
    `get_kernel(device, program, name)` and compiled on first use, each alone or all at once
    (see `unit_key`): a program holds up to hundreds of kernels, a script uses a few.

    >>> p = Program("demo", "f32", "__kernel void one(__global float *x) { x[0] = 1; }")
    >>> p.signatures, p.unit("one").name
    ({'one': [None]}, 'demo_f32:one')
    """

    def __init__(self, family, variant, source, options="", hot=None):
        self.id = len(ALL_PROGRAMS)
        self.hot = hot            # kernel names built as a unit of their own where whole
        #                           programs are built (see unit_key); None: no split
        self.family = family
        self.variant = variant
        self.name = f"{family}_{variant}"
        self.source = source
        self.options = options
        self._split = None
        self._units = {}
        ALL_PROGRAMS.append(self)

    def __repr__(self):
        return f"<Program {self.name}: {len(self.signatures)} kernels>"

    # read off the source on first use rather than at import, where reading all 164 programs'
    # took ~0.3 s of every `import clgrad`
    @functools.cached_property
    def signatures(self):
        """{kernel name: [numpy type, or None for a buffer or local memory, per argument]}, of
        the build with this program's options."""
        defined = {o[2:].split("=")[0] for o in self.options.split() if o.startswith("-D")}
        return parse_signatures(self.source, defined)

    def options_for(self, device):
        native = " -DNATIVE_VLOADS=1" if device.native_vloads else ""
        rounded = " -cl-fp32-correctly-rounded-divide-sqrt" if device.asks_rounded_divide else ""
        return (f"-DVEC={device.vec} -DVEC8={device.vec8} -DREDUCE_BLOCKED={int(device.cpu_paths)}"
                f"{native}{rounded} {self.options}").strip()

    def unit_key(self, device, name):
        """Which unit compiles kernel `name` on `device`: the kernel alone (its name), or the whole
        program (None). Intel's compiler (like most) generates code for every kernel of a program
        when it is built (20 s for an elementwise program), so there each kernel is built alone.
        PoCL generates a kernel's code at its first launch, and a build costs ~0.2 s however
        small (a whole elementwise program 1-3 s): building kernels alone saves little for a
        script that uses a few ops and costs much more for one that uses many (measured: the
        same for tools/train.py, 30% more for the elementwise tests), so PoCL builds the whole
        program. So does Oclgrind, which generates no code: each unit is a run of its front end
        over the whole prelude (tools/check_kernels.py, float32 elementwise kernels on the GPU
        paths: 626 kernels alone 133 s with an empty cache and 14 s from it, whole programs 20 s
        and 7 s). CLGRAD_BUILD_UNIT=kernel|program overrides."""
        mode = os.environ.get("CLGRAD_BUILD_UNIT") or (
            "program" if device.is_pocl or device.is_simulator else "kernel")
        if mode != "program":
            return name
        # A large program with a `hot` set is two units: the kernels most scripts use, and the
        # rest. A training step then builds ew2_f32's 66 hot kernels, not all 212.
        if self.hot is None:
            return None
        return "hot" if name in self.hot else "rest"

    def unit(self, key):
        """The Unit of `key` (a kernel's name, or None for the whole program), made once. The
        source is split on first use, not at import."""
        u = self._units.get(key)
        if u is None:
            if key is None:
                u = Unit(self, None, list(self.signatures), self.source)
            elif key in ("hot", "rest") and self.hot is not None:
                names = [n for n in self.signatures if (n in self.hot) == (key == "hot")]
                if self._split is None:
                    self._split = _Split(self.source)
                u = Unit(self, key, names, self._split.source(set(names)))
            else:
                if key not in self.signatures:
                    raise KeyError(f"program {self.name} has no kernel {key!r}")
                if self._split is None:
                    self._split = _Split(self.source)
                u = Unit(self, key, [key], self._split.source({key}))
            self._units[key] = u
        return u

    def build(self, device, key=None):
        """The cl.Program of unit `key` (see unit_key) on `device`, built on first use."""
        prog = device.programs.get((self.id, key))
        if prog is None:
            with _build_lock:
                prog = device.programs.get((self.id, key))
                if prog is None:
                    prog = build_unit(device, self.unit(key), self.options_for(device))
                    device.programs[(self.id, key)] = prog
        return prog


def _binary_path(device, unit, options):
    cdir = cache_dir() if keeps_binaries(device) else None
    if cdir is None:
        return None
    key = "\0".join([unit.digest, options, device.name, device.platform_name, device.version,
                     device.driver_version, __version__])
    return cdir / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".bin")


def build_log(prog, device):
    """The driver's build log of prog, "" when it gives none (Intel's CPU runtime may return an
    empty log for a failed build; some drivers cannot give one at all)."""
    try:
        return prog.get_build_info(device.cl_device, cl.program_build_info.LOG) or ""
    except Exception:
        return ""


# builds tried again, if they fail with no compiler diagnostic, on a device whose build cache
# races (Device.races_in_build_cache)
BUILD_RETRIES = 3


# lock files of builds across processes (build_lock): a unit takes the slot its digest picks,
# so that the files stay few and two units rarely wait on each other
BUILD_LOCK_SLOTS = 64


@contextlib.contextmanager
def build_lock(device, unit, options):
    """Held around a unit's build on a device whose build cache races (Device.races_in_build_cache):
    an exclusive file lock, so that processes that build the same unit at once (MPI ranks on an
    empty cache) build it one after the other, and those after the first find it in the caches.
    A retry (build_unit) covers a failed build in that race; the lock also covers a crash inside
    the driver, which no retry can (one in five cold CI runs lost a rank so). Elsewhere, and where
    no lock file can be made, nothing is locked.

    >>> class Dev: races_in_build_cache = False
    >>> with build_lock(Dev(), None, ""): pass
    """
    if not device.races_in_build_cache or fcntl is None:
        yield
        return
    base = cache_dir() or Path(tempfile.gettempdir()) / f"clgrad-{os.getuid()}"
    slot = int(hashlib.sha256((unit.digest + options).encode()).hexdigest(), 16) % BUILD_LOCK_SLOTS
    try:
        (base / "locks").mkdir(parents=True, exist_ok=True)
        f = open(base / "locks" / f"build-{slot:02d}.lock", "a")
    except OSError:              # a read-only home: build unlocked, as before there were locks
        yield
        return
    with f:
        fcntl.flock(f, fcntl.LOCK_EX)       # released when f closes
        yield


def build_unit(device, unit, options):
    """Compile `unit` for `device`: from a saved binary when there is one, else from source (and
    save the binary). pyopencl's own build wrapper is bypassed on purpose: its cache would keep a
    second copy of every binary (asking the driver for it, which compiles every kernel), and it
    warns about any non-empty build log (Intel's always has one). A failure raises
    KernelBuildError with the log and the source."""
    if device.unusable:
        raise NoDeviceError(f"cl:{device.index} cannot build kernels here: {device.unusable}")
    with build_lock(device, unit, options):
        return _build_unit(device, unit, options)


def _build_unit(device, unit, options):
    t0 = time.perf_counter()
    path = _binary_path(device, unit, options)
    if path is not None and path.exists():
        try:
            prog = cl._cl._Program(device.context, [device.cl_device], [path.read_bytes()])
            prog._build(options=options.encode(), devices=[device.cl_device])
            BUILD_STATS["loaded_binary"] += 1
            BUILD_STATS["build_seconds"] += time.perf_counter() - t0
            return prog
        except Exception:    # stale or foreign binary: rebuild from source
            BUILD_STATS["rejected_binary"] += 1
    attempt = 0
    while True:
        prog = cl._cl._Program(device.context, unit.source)
        try:
            prog._build(options=options.encode(), devices=[device.cl_device])
            break
        except cl.Error:
            log = build_log(prog, device)
            # a log with a compiler diagnostic is the source's fault: no retry
            if not device.races_in_build_cache or attempt == BUILD_RETRIES or "error:" in log:
                raise KernelBuildError(unit, device, log, options) from None
        attempt += 1
        BUILD_STATS["retried_builds"] += 1
        time.sleep(0.05 * attempt)
    BUILD_STATS["built_from_source"] += 1
    BUILD_STATS["build_seconds"] += time.perf_counter() - t0
    if path is not None:
        try:
            binary = prog.get_info(cl.program_info.BINARIES)[0]
            if binary:
                path.parent.mkdir(parents=True, exist_ok=True)
                # Written whole under a temporary name in the same folder, then renamed into
                # place (atomic): ranks or processes building the same unit at once each write
                # their own file, and a reader sees no entry or a complete one, never half.
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".", suffix=".tmp")
                try:
                    with os.fdopen(fd, "wb") as f:
                        f.write(binary)
                    os.replace(tmp, path)
                except BaseException:
                    os.unlink(tmp)         # a full disk leaves no stray temporary behind
                    raise
        except OSError:
            pass                 # a read-only home or a full disk is no reason to fail
    return prog


def built_kernels(prog):
    """The names of the kernels in a built cl.Program: those of its unit, less any that the build
    options leave out (#ifdef)."""
    try:
        # NVIDIA's driver crashes the process when asked the names of a program without kernels
        # (a segfault, driver 580): ask how many first
        if not prog.get_info(cl.program_info.NUM_KERNELS):
            return set()
        return set(prog.get_info(cl.program_info.KERNEL_NAMES).split(";")) - {""}
    except cl.Error:               # Intel: a program without kernels has no "executable"
        return set()


def _make_kernel(device, program, name):
    if name not in program.signatures:
        raise KeyError(f"program {program.name} has no kernel {name!r}")
    key = program.unit_key(device, name)
    prog = program.build(device, key)
    with device.lock:
        k = device.kernels.get((program.id, name))
        if k is None:
            try:
                k = cl.Kernel(prog, name)
            except cl.Error as e:
                raise MissingKernelError(program.unit(key), device, name, prog, e) from None
            k.set_scalar_arg_dtypes(program.signatures[name])
            k._clgrad_signature = program.signatures[name]    # a recording's copies need it
            device.kernels[(program.id, name)] = k
    return k


def get_kernel(device, program, name):
    """The memoised `cl.Kernel` `name` of `program` on `device` (built on first use)."""
    k = device.kernels.get((program.id, name))
    if k is None:
        k = _make_kernel(device, program, name)
    return k


# Observers of every kernel launch, called as hook(device, kernel, gsize, lsize, args, event)
# after the launch is enqueued: the profiler (clgrad.autograd.profiler), tests that count
# launches. While the list is empty a launch pays one truth test for them.
launch_hooks = []


def launch(device, kernel, gsize, lsize, *args):
    """Enqueue `kernel` on the device's queue; returns at once (a tiny kernel may wait for a
    few more to go with it: Device.defer). Every kernel launch in clgrad comes through here.

    >>> import clgrad
    >>> from clgrad.kernels.copy import COPY
    >>> d = clgrad.runtime.default_device(); x = clgrad.empty(3)
    >>> seen = []; launch_hooks.append(lambda *a: seen.append(a[1].function_name))
    >>> _ = launch(d, get_kernel(d, COPY[clgrad.float32], "iota"), *grid(d, 3), x._storage.buf, 0,
    ...            0.0, 2.0, 3)
    >>> _ = launch_hooks.pop(); seen, x.tolist()
    (['iota'], [0.0, 2.0, 4.0])
    """
    return launch_args(device, kernel, gsize, lsize, args)


def launch_args(device, kernel, gsize, lsize, args):
    """launch() with the kernel's arguments as one sequence (the kernel families' form)."""
    if not launch_hooks:
        if gsize[0] <= device.TINY_ITEMS:
            device.defer(kernel, gsize, lsize, args)
            return None
        return kernel(device.queue, gsize, lsize, *args)
    evt = kernel(device.queue, gsize, lsize, *args)
    for hook in launch_hooks:
        hook(device, kernel, gsize, lsize, tuple(args), evt)
    return evt


def vec_width(device, *dts):
    """Elements per work-item in contiguous kernels over these dtypes (the VEC / VEC8 macro a
    template's width() picks)."""
    for d in dts:
        if d.kind == "c":               # complex kernels take one (re, im) pair per work-item
            return 1
    for d in dts:
        if d.ct in ("double", "long"):
            return device.vec8
    return device.vec


def grid(device, n_items):
    """(global size, local size) covering n_items work-items: the device's preferred work-group
    size, except that small launches get a small work-group where that costs nothing. PoCL
    generates a kernel's code anew for each local size it is launched with (~0.1-0.4 s each):
    one size per kernel took 1.9 s off the first training step with empty caches, and the idle
    work-items of a small launch only test their index. Every kernel checks its bounds."""
    wg = device.wg
    if n_items >= wg or device.compiles_per_local_size:
        return (-(-n_items // wg) * wg,), (wg,)
    ls = 1
    while ls < n_items:
        ls <<= 1
    ls = min(ls, wg)          # a device's limit need not be a power of two
    return (-(-n_items // ls) * ls,), (ls,)


def few_sizes(device, ls):
    """The work-group size to launch with where a kernel's best size follows the data (a share
    of the rows, of the columns): ls itself, or on a device that generates a kernel's code anew
    for each local size (PoCL: ~0.1 s, 2-20 s for the attention kernels), the largest power of
    two not above it, so that a kernel is built for a few sizes, not for every size a program's
    shapes give (the suite on PoCL built cumsum's scan kernel for 11 sizes).

    >>> import clgrad
    >>> d = clgrad.runtime.default_device()
    >>> few_sizes(d, 43) in (32, 43), few_sizes(d, 64)
    (True, 64)
    """
    ls = max(1, int(ls))
    if not device.compiles_per_local_size:
        return ls
    return 1 << (ls.bit_length() - 1)


def group_limit(device, kernel, most):
    """The most work-items a work-group of `kernel` may have on `device`, at most `most` (the size
    of the kernel's local buffers): CL_KERNEL_WORK_GROUP_SIZE also counts the kernel's registers
    and local memory, and may be below the device's maximum.

    >>> import clgrad
    >>> from clgrad.kernels.reduce import REDUCE
    >>> d = clgrad.runtime.default_device()
    >>> 1 <= group_limit(d, get_kernel(d, REDUCE[clgrad.float32], "sum_r"), 256) <= 256
    True
    """
    key = ("group_limit", kernel.function_name, id(kernel))
    n = device.kernels.get(key)
    if n is None:
        n = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device.cl_device)
        n = max(1, min(int(n), device.max_work_group_size, most))
        device.kernels[key] = n
    return n
