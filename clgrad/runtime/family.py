"""The kernel family: one template of cl_kernels/ and everything it takes to launch its kernels.

A family owns, in one object (as PyOpenCL's ElementwiseKernel owns its source, build and launch):

- its template and the programs rendered from it, one per variant (a dtype, usually) and build
  options, rendered once and built on first use (runtime.kernels.Program: units, disk cache);
- its tuned configuration, where it has one: the tuning database's entry for the device and its
  code path, validated by the family's checker and memoised per device (`config`, `set_config`);
- its launches: the kernel looked up by name, the geometry from the one `grid()` unless the
  caller gives its own, and typed arguments: a tensor (the class the tensor layer registers as
  `TENSOR_TYPE`) expands to its buffer and element offset. Every launch goes through
  `runtime.kernels.launch`, the chokepoint where the profiler and the compiled-step recorder
  hook in.

A new kernel family is a template `cl_kernels/<name>.mako`, a `KernelFamily` in
`clgrad/kernels/<name>.py` beside the raw launches of that family, and nothing else.

>>> import clgrad
>>> from clgrad import dtypes
>>> copy = KernelFamily("copy", lambda dt: dict(dt=dt, srcs=[dt]), [dtypes.float32])
>>> x = clgrad.empty(4)
>>> dev = clgrad.runtime.default_device()
>>> copy.launch(dev, dtypes.float32, "iota", 4, x, 1.0, 0.5, 4)
>>> x.tolist()
[1.0, 1.5, 2.0, 2.5]
"""
import numpy as np

from . import tuning
from .device import path_dependent
from .kernels import Program, get_kernel, grid, launch_args, render


# The tensor layer registers its class here (runtime knows nothing of tensors): an argument of
# that class expands to buffer and offset. A class test is cheaper than asking every argument.
TENSOR_TYPE = None


def cl_args(args):
    """The kernel arguments for `args`: a tensor gives its buffer and element offset, anything
    else stands for itself.

    >>> cl_args((1, None, 2.5))
    [1, None, 2.5]
    """
    out = []
    add = out.append
    tensor = TENSOR_TYPE
    for a in args:
        if isinstance(a, tensor):
            add(a._storage.buf)
            add(a._offset)
        else:
            add(a)
    return out


def expander(signature):
    """A function args -> cl_args(args), specialised to a kernel's signature (its scalar
    argument dtypes, None for a buffer). In the usual forms of a call, a tensor at each buffer
    argument that an integer offset follows, with all the arguments or with those up to the last
    tensor (the rest given as `scalars`), it tests those arguments only and builds the list in
    one expression; any other form (a raw buffer and its offset, local memory) goes to cl_args.
    Made once per kernel of a family (KernelFamily.launch): cl_args' test of every argument was
    most of what a family's launch cost beyond a hand-written one (tools/bench_launch.py).

    >>> expand = expander([None, np.int64, np.float32])
    >>> expand((None, 2.5)), expand(("buf", 0, 2.5))
    ([None, 2.5], ['buf', 0, 2.5])
    """
    slots, n, j = [], 0, 0
    while j < len(signature):
        if signature[j] is None and j + 1 < len(signature) and \
                signature[j + 1] is not None and np.dtype(signature[j + 1]).kind in "iu":
            slots.append(n)
            j += 2
        else:
            j += 1
        n += 1
    if not slots:
        return cl_args
    src = ["def expand(args):", "    n = len(args)"]
    for count in sorted({n, slots[-1] + 1}, reverse=True):
        names = [f"a{i}" for i in range(count)]
        items = []
        for i in range(count):
            items += [f"a{i}._storage.buf", f"a{i}._offset"] if i in slots else [f"a{i}"]
        src += [f"    if n == {count}:",
                f"        {', '.join(names)}, = args",
                f"        if {' and '.join(f'isinstance(a{i}, T)' for i in slots)}:",
                f"            return [{', '.join(items)}]"]
    src.append("    return cl_args(args)")
    scope = {"T": TENSOR_TYPE, "cl_args": cl_args}
    exec("\n".join(src), scope)
    return scope["expand"]


class KernelFamily:
    """The programs, tuned configuration and launches of one template (see the module's text).

    name      the family; its template is cl_kernels/<template or name>.mako
    params    variant -> the template's keyword arguments (called once per variant)
    variants  rendered at import (the prebuild and dump tools list every program); others on use
    tag       variant -> the text that names its program (default: the variant's `short`)
    hot       variant -> kernel names built as a unit of their own (Program.hot), or None
    tuned     (checker, fallback) for a family with entries in the tuning database
    adapt     (cfg, device) -> cfg: fits the database's checked entries (not set_config's) to
              the device, or None
    """

    def __init__(self, name, params, variants=(), *, template=None, options="", tag=None,
                 hot=None, tuned=None, adapt=None):
        self.name = name
        self.template = template or f"{name}.mako"
        self.params = params
        self.options = options
        self.tag = tag or (lambda v: v.short)
        self.hot = hot
        self.tuned = tuned
        self.adapt = adapt
        self._sources = {}              # variant -> rendered source
        self._programs = {}             # (variant, options) -> Program
        # (device, variant, name, options) -> cl.Kernel; dropped with the device's kernels when
        # it changes code paths
        self._kernels = path_dependent({})
        # the same key -> (cl.Kernel, its argument expander): what launch() needs, in one lookup
        self._launchers = path_dependent({})
        self._configs = path_dependent({})      # device -> its tuned configuration
        for v in variants:
            self.program(v)

    def __repr__(self):
        return f"<KernelFamily {self.name}: {len(self._programs)} programs>"

    # ---- programs ---------------------------------------------------------------------------
    def source(self, variant):
        """The template rendered for `variant` (once)."""
        src = self._sources.get(variant)
        if src is None:
            src = self._sources[variant] = render(self.template, **self.params(variant))
        return src

    def program(self, variant, options="", tag=None):
        """The Program of `variant` built with `options` (besides the device's own), made once;
        `tag` names it where options distinguish programs of one variant."""
        key = (variant, options)
        prog = self._programs.get(key)
        if prog is None:
            name = self.tag(variant) + (f"_{tag}" if tag else "")
            hot = self.hot(variant) if self.hot else None
            prog = Program(self.name, name, self.source(variant),
                           f"{self.options} {options}".strip(), hot=hot)
            self._programs[key] = prog
        return prog

    def __getitem__(self, variant):
        return self.program(variant)

    def kernel(self, device, variant, name, options=""):
        """The cl.Kernel `name` of the variant's program on `device`, built on first use."""
        key = (device, variant, name, options)
        k = self._kernels.get(key)
        if k is None:
            k = self._kernels[key] = get_kernel(device, self.program(variant, options), name)
        return k

    # ---- tuned configuration ----------------------------------------------------------------
    def config(self, device):
        """The tuned configuration of this family on `device` (on its code path): the tuning
        database's first entry the family's checker accepts, else its fallback."""
        check, fallback = self.tuned
        if self.adapt is not None:
            check = self._adapted
        return tuning.configured(self._configs, device, self.name, check, fallback)

    def _adapted(self, cfg, device):
        return self.adapt(self.tuned[0](cfg, device), device)

    def set_config(self, device, cfg):
        """Use `cfg` (checked) on `device` from now on in this process; returns the previous
        configuration. None goes back to the tuning database's."""
        prev = self.config(device)
        if cfg is None:
            self._configs.pop(device, None)
        else:
            self._configs[device] = self.tuned[0](cfg, device)
        return prev

    # ---- launches ---------------------------------------------------------------------------
    def launch(self, device, variant, name, geometry, *args, options="", scalars=()):
        """Launch kernel `name` of the variant's program. `geometry` is a number of work-items
        (laid out by grid()) or (global size, local size); tensors among `args` expand to
        buffer and offset (cl_args). `scalars`, plain values, follow them unexamined (a kernel
        with many scalar arguments, the optimizers', skips their per-argument test)."""
        entry = self._launchers.get((device, variant, name, options))
        if entry is None:
            entry = self._launcher(device, variant, name, options)
        k, expand = entry
        gs, ls = grid(device, geometry) if geometry.__class__ is int else geometry
        args = expand(args)
        if scalars:
            args.extend(scalars)
        return launch_args(device, k, gs, ls, args)

    def _launcher(self, device, variant, name, options):
        k = self.kernel(device, variant, name, options)
        entry = (k, expander(self.program(variant, options).signatures[name]))
        self._launchers[(device, variant, name, options)] = entry
        return entry
