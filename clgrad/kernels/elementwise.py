"""The elementwise family (cl_kernels/elementwise.mako): the kernels generated from the op table,
and the dispatch that evaluates an entry of it. Raw launches: no autograd.

The table itself (each op's kernel expression per dtype kind beside its VJP) is
clgrad/ops/elementwise.py, the file a contributor edits to add an op; it hands its entries down
to `build`, which renders them. Per arity (ew1, ew2, ew3) and dtype, the kernels of every entry
are one program; entries of a group ("special") have programs of their own. An entry's kernels
are <op>_c_<pattern> (contiguous operands), <op>_r_<pattern> (a contiguous result whose rows
every operand walks or repeats one element along: vector code, as the contiguous kernel) and
<op>_s_<pattern> (any strides).

`run` evaluates an entry on tensors and Python numbers with torch's promotion and broadcasting;
`_fast_variant` / `_run_fast` are the fast path of contiguous operands of one dtype and shape
(the hottest code in clgrad: keep it free of repeated work).

>>> import clgrad
>>> run(ENTRIES["add"], (clgrad.tensor([1.0, 2.0]), 3)).tolist()
[4.0, 5.0]
"""
from .. import dtypes
from ..dtypes import ALL as ALL_DTYPES, COMPLEX
from ..runtime.device import path_dependent
from ..runtime.family import KernelFamily
from ..runtime.kernels import get_kernel, grid, launch, launch_args, vec_width
from ..runtime.memory import Storage
from ..tensor import Tensor, empty_tensor, layout_of, make_tensor, numel_of
from ._layout import (broadcast_shapes, check_dims, collapse, expand_strides, launch_walk,
                      pack8_right, same_device, view_raw)
from .copy import cast_raw, check_fp64, full_raw, rows_geometry, scalar_for


class Entry:
    """One elementwise op of the table."""

    def __init__(self, name, operands, exprs, *, out="same", nparams=0, float_only=False,
                 no_ints=False, novec="", vjp=None, saves=(), cls_name=None, group=""):
        self.name = name
        self.operands = operands          # "T" operand of the compute dtype, "b" a bool operand
        self.arity = len(operands)
        self.exprs = exprs                # {kind: expression}
        self.out = out                    # "same", "bool", or "real" (a complex input's part type)
        self.nparams = nparams
        self.float_only = float_only      # ints and bools are promoted to the default float first
        self.no_ints = no_ints            # ... or, as torch's activations, refused
        self.novec = novec                # kinds whose contiguous kernel is scalar (loops, ipow)
        self.vjp = vjp                    # one function (g, args) -> gradient per operand, or None
        self.saves = saves                # which of x, y, z, out backward reads
        self.cls_name = cls_name or "".join(w.capitalize() for w in name.split("_"))
        # "special": kernels in programs of their own, with the long helpers they call (Bessel
        # functions and the like), so that the common programs and every kernel built alone
        # with their prelude (Intel) do not compile those helpers
        self.group = group
        self.patterns = ["tt", "ts", "st"] if operands == "TT" else ["t" * self.arity]
        # (device, dtype, variant) -> (cl.Kernel, vector width, {numel: launch geometry}), for
        # the fast path
        self.kernels = path_dependent({})

    def vector_code(self, dt):
        """Whether dt's kernels of this entry compute VEC elements at a time (the contiguous
        kernel's main body, the rows kernel): not for kinds in novec, nor complex (one pair per
        work-item)."""
        return dt.kind not in self.novec and dt.kind != "c"


class _RenderEntry:
    """What the template sees of an entry for one dtype."""

    def __init__(self, e, dt):
        self.name = e.name
        self.operands = e.operands
        self.nparams = e.nparams
        self.expr = e.exprs[dt.kind]
        self.out = e.out
        self.vec = e.vector_code(dt)
        self.patterns = e.patterns


# The ops most scripts use (arithmetic, comparisons, the common activations and their
# gradients): where a driver builds whole programs (PoCL), their kernels are built as a unit of
# their own, so a script need not compile the other 150 kernels of a program (Program.unit_key).
HOT = {"neg", "abs", "sign", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "reciprocal",
       "relu", "gelu", "silu", "square", "pow_scalar", "clamp", "clamp_min", "clamp_max",
       "logical_not", "isnan", "isinf", "isfinite", "add", "sub", "mul", "div", "pow", "maximum",
       "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "masked_fill",
       "threshold_backward", "tanh_backward", "sigmoid_backward", "silu_backward",
       "gelu_backward", "clamp_backward", "clamp_min_backward", "clamp_max_backward"}

# For integer and bool dtypes the ops scripts use are fewer still: comparisons, counts, masks
# (an accuracy count builds 26 kernels of ew2_i64, not 86).
HOT_EXACT = {"neg", "logical_not", "add", "sub", "mul", "eq", "ne", "lt", "le", "gt", "ge",
             "logical_and", "logical_or", "masked_fill"}

ENTRIES = {}        # name -> Entry: the table handed to build()
FAMILIES = {}       # arity -> the KernelFamily "ew<arity>" of cl_kernels/elementwise.mako
PROGRAMS = {}       # (arity, dtype), and (arity, dtype, group) for the entries of a group


def _tag(variant):
    dt, group = variant
    return f"{dt.short}_{group}" if group else dt.short


def build(table):
    """Render the programs of the table's entries ({name: Entry}), one per arity, dtype and group
    (built on first use). Called once, by clgrad/ops/elementwise.py, when its table is complete."""
    ENTRIES.update(table)
    entries = list(table.values())
    for arity in (1, 2, 3):
        def members(variant, arity=arity):
            dt, group = variant
            return [e for e in entries
                    if e.arity == arity and dt.kind in e.exprs and e.group == group]

        def params(variant, members=members):
            dt, group = variant
            return dict(dt=dt, entries=[_RenderEntry(e, dt) for e in members(variant)],
                        bool_dt=dtypes.bool_, special=bool(group))

        def hot(variant, members=members):
            names = HOT if variant[0].kind in "fc" else HOT_EXACT
            return {f"{e.name}_{kind}_{pat}" for e in members(variant) if e.name in names
                    for kind in "csr" for pat in e.patterns}

        variants = [(dt, group) for dt in ALL_DTYPES + COMPLEX for group in ("", "special")
                    if members((dt, group))]
        fam = FAMILIES[arity] = KernelFamily(f"ew{arity}", params, variants,
                                             template="elementwise.mako", tag=_tag,
                                             hot=hot if arity < 3 else None)
        for dt, group in variants:
            PROGRAMS[(arity, dt, group) if group else (arity, dt)] = fam.program((dt, group))
    return PROGRAMS


def program_of(e, dt):
    return PROGRAMS[(e.arity, dt, e.group) if e.group else (e.arity, dt)]


# ---- dispatch -------------------------------------------------------------------------------
# torch's names of the dtypes in its "not implemented for" messages
_TORCH_DT_NAMES = {d.name: n for d, n in dtypes.TORCH_NAMES.items()}


def _not_implemented(e, dt):
    if e.name == "sub" and dt is dtypes.bool_:
        return RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                            "Use the `^` or `logical_xor()` operator instead.")
    if e.name == "relu" and dt is dtypes.bool_:
        return RuntimeError("Boolean inputs not supported for relu")
    if e.name == "neg" and dt is dtypes.bool_:
        return RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                            "are trying to invert a mask, use the `~` or `logical_not()` operator "
                            "instead.")
    # torch raises NotImplementedError (a RuntimeError) for a kernel missing for a dtype
    return NotImplementedError(f'"{e.name}" not implemented for '
                               f'\'{_TORCH_DT_NAMES.get(dt.name, dt.name)}\'')


def _check_bool_sub(operands):
    """torch refuses subtraction with a bool operand (tensor or Python bool), whatever the other."""
    bools = [a for a in operands if type(a) is bool or
             (isinstance(a, Tensor) and a._dtype is dtypes.bool_)]
    if len(bools) == 2:             # a Python bool counts as a bool tensor (torch wraps it)
        raise _not_implemented(ENTRIES["sub"], dtypes.bool_)
    if bools:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def compute_dtype(e, operands):
    """The dtype the kernel computes in, by torch's promotion over the T operands."""
    ts = [a for a, k in zip(operands, e.operands) if k == "T"]
    if len(ts) == 1 and isinstance(ts[0], Tensor):
        dt = ts[0]._dtype
    else:
        dt = dtypes.result_type(*ts)
    if e.name == "sub":
        _check_bool_sub(operands)
    if e.float_only and dt.kind not in "fc":
        if e.no_ints:
            raise _not_implemented(e, dt)
        dt = dtypes.get_default_dtype()
    elif e.name == "square" and dt is dtypes.bool_:
        dt = dtypes.int64               # torch computes it as pow(x, 2): bool promotes to int64
    if dt.kind not in e.exprs:
        raise _not_implemented(e, dt)
    return dt


# the Python ints an integer dtype's kernels take as they are (others wrap on the general path)
_INT_RANGE = {d: ((0, 256) if d is dtypes.uint8 else (-(1 << (8 * d.itemsize - 1)),
                                                      1 << (8 * d.itemsize - 1)))
              for d in dtypes.INTS}
# Python bools take the general path (torch refuses some of them: x - True); complex kernels take
# numbers as (re, im) pairs, made on the general path
_SCALAR_OK = {"f": (float, int), "i": (int,), "u": (int,), "c": ()}


def _fast_variant(e, operands, params):
    """The contiguous kernel variant when the operands are the common simple case (contiguous
    tensors of one dtype and shape, or a tensor and a Python number that does not change its
    dtype), else None. Keeps the hot path free of promotion and stride bookkeeping."""
    a = operands[0]
    if type(a) is not Tensor or not a._contig:
        return None
    dt = a._dtype
    kind = dt.kind
    if kind not in e.exprs or (e.float_only and kind not in "fc") or kind == "b" or \
            (kind == "c" and e.out == "real"):
        return None
    ok = _SCALAR_OK[kind]
    for p in params:
        if type(p) not in ok:
            return None
    if e.arity == 1:
        return "t"
    if e.operands != "TT":
        return None
    b = operands[1]
    tb = type(b)
    if tb is Tensor:
        if b._contig and b._dtype is dt and b._shape == a._shape and \
                b._storage.device is a._storage.device:
            return "tt"
        return None
    if tb in ok and (kind == "f" or _INT_RANGE[dt][0] <= b < _INT_RANGE[dt][1]):
        return "ts"
    return None


def _run_fast(e, variant, operands, params, out):
    a = operands[0]
    dt = a._dtype
    dev = a._storage.device
    shape = a._shape
    n, strides = layout_of(shape)
    if out is None:
        odt = dtypes.bool_ if e.out == "bool" else dt.real if e.out == "real" else dt
        out = make_tensor(Storage(dev, n * odt.itemsize), shape, strides, 0, odt, True)
    if n == 0:
        return out
    plan = e.kernels.get((dev, dt, variant))
    if plan is None:
        k = get_kernel(dev, program_of(e, dt), f"{e.name}_c_{variant}")
        vec = vec_width(dev, dt) if e.vector_code(dt) else 1
        plan = e.kernels[(dev, dt, variant)] = (k, vec, {})
    k, vec, sizes = plan
    geometry = sizes.get(n)
    if geometry is None:          # the one grid() of every launch, memoised per size
        geometry = sizes[n] = grid(dev, -(-n // vec))
    gs, ls = geometry
    if variant == "ts":
        args = (out._storage.buf, out._offset, a._storage.buf, a._offset, 1, operands[1],
                *params, n)
    elif variant == "tt":
        b = operands[1]
        args = (out._storage.buf, out._offset, a._storage.buf, a._offset, 1, b._storage.buf,
                b._offset, 1, *params, n)
    else:
        args = (out._storage.buf, out._offset, a._storage.buf, a._offset, 1, *params, n)
    launch_args(dev, k, gs, ls, args)
    return out


def _expanded(args, shape):
    """The tensor operands broadcast to `shape` (stride 0 where they repeat), numbers as they are."""
    return [view_raw(a, shape, expand_strides(a, shape), a._offset)
            if isinstance(a, Tensor) and a._shape != tuple(shape) else a for a in args]


def _one_element(t):
    for st, n in zip(t._strides, t._shape):
        if st != 0 and n != 1:
            return False
    return True


def output_order(shape, tensors):
    """The order of `shape`'s dims, outermost first, in which a new result is laid out so that it
    follows its operands' memory layout (torch's TensorIterator: an op of a transposed or
    channels-last tensor gives a result with the same layout); None for row-major. Dims are
    ordered by the first operand whose strides tell them apart (broadcast dims tell nothing);
    equal strides put the smaller dim inside.

    >>> import clgrad
    >>> output_order((2, 3), [clgrad.ones(3, 2).t()])
    [1, 0]
    """
    nd = len(shape)
    if nd < 2:
        return None
    strides = [expand_strides(t, shape) for t in tensors]

    def should_swap(d0, d1):            # 1: d0 goes outside d1 (torch's should_swap)
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(nd - 1, -1, -1))          # innermost first, as torch sorts
    for i in range(1, nd):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    order = perm[::-1]
    return None if order == list(range(nd)) else order


def _in_order(t, order):
    """t's view with its dims in `order` (a permutation; no copy)."""
    return view_raw(t, [t._shape[d] for d in order], [t._strides[d] for d in order], t._offset)


def run(e, operands, params=(), out=None, cdt=None):
    """Evaluate table entry e on operands (Tensors or Python numbers) and return a new tensor, or
    write into `out` (contiguous, of the right shape and dtype)."""
    if cdt is None:
        variant = _fast_variant(e, operands, params)
        if variant is not None and (out is None or out._shape == operands[0]._shape):
            return _run_fast(e, variant, operands, params, out)
    dev = None
    for a in operands:
        if isinstance(a, Tensor):
            if dev is None:
                dev = a._storage.device
            elif a._storage.device is not dev:
                same_device(e.name, operands)
    if cdt is None:
        cdt = compute_dtype(e, operands)
    check_fp64(cdt, dev)
    odt = dtypes.bool_ if e.out == "bool" else cdt.real if e.out == "real" else cdt
    # operands: tensors of the right dtype, or host scalars where the kernel takes them
    args = list(operands)
    scalar_pos = None
    for k, (a, kind) in enumerate(zip(operands, e.operands)):
        if isinstance(a, Tensor):
            want = cdt if kind == "T" else dtypes.bool_
            if a._dtype is not want:
                args[k] = cast_raw(a, want)
        elif e.operands == "TT" and scalar_pos is None:
            scalar_pos = k
        else:
            args[k] = full_raw((), a, cdt if kind == "T" else dtypes.bool_, dev)
    if scalar_pos is not None and not isinstance(args[1 - scalar_pos], Tensor):
        args[1] = full_raw((), args[1], cdt, dev)
        scalar_pos = None
    # shape
    tensors = [a for a in args if isinstance(a, Tensor)]
    if len(tensors) == 1:
        shape = tensors[0]._shape
    else:
        shape = broadcast_shapes(*[t._shape for t in tensors])
    if out is None:
        order = output_order(shape, tensors) if not all(t._contig for t in tensors) else None
        if order is not None:
            # a result laid out as its operands: computed as a row-major result of the
            # operands' views in that order, then handed back in the dims' own order
            res = run(e, [_in_order(a, order) if isinstance(a, Tensor) else a
                          for a in _expanded(args, shape)], params,
                      empty_tensor(tuple(shape[d] for d in order), odt, dev), cdt)
            inverse = [order.index(d) for d in range(len(shape))]
            return _in_order(res, inverse)
        out = empty_tensor(shape, odt, dev)
    n = numel_of(shape)
    if n == 0:
        return out
    pattern = e.patterns[0] if scalar_pos is None else ("st" if scalar_pos == 0 else "ts")
    prog = program_of(e, cdt)
    if cdt.kind == "c":
        plist = [scalar_for(cdt, p) for p in params]
    else:
        sc = scalar_for(cdt, 0)
        plist = [type(sc)(p) if cdt.kind != "b" else int(bool(p)) for p in params]
    # contiguous kernel: every tensor operand either walks with the output or repeats one element
    # (a single element, or one expanded to any shape: all its strides are 0)
    contiguous = True
    for t in tensors:
        if not ((t._contig and t._shape == shape) or _one_element(t)):
            contiguous = False
            break
    if contiguous:
        kargs = [out._storage.buf, out._offset]
        for k, a in enumerate(args):
            if k == scalar_pos:
                kargs.append(scalar_for(cdt, a))
            else:
                kargs.extend((a._storage.buf, a._offset,
                              0 if _one_element(a) and not (a._contig and a._shape == shape)
                              else 1))
        kargs.extend(plist)
        kargs.append(n)
        k = get_kernel(dev, prog, f"{e.name}_c_{pattern}")
        vec = vec_width(dev, cdt) if e.vector_code(cdt) else 1
        gs, ls = grid(dev, -(-n // vec))
        launch(dev, k, gs, ls, *kargs)
        return out
    strides = [expand_strides(t, shape) for t in tensors]
    cshape, cstrides = collapse(shape, strides)
    check_dims(e.name, len(cshape))
    kargs = [out._storage.buf, out._offset]
    ti = 0
    for k, a in enumerate(args):
        if k == scalar_pos:
            kargs.append(scalar_for(cdt, a))
        else:
            kargs.extend((a._storage.buf, a._offset, pack8_right(cstrides[ti])))
            ti += 1
    kargs.extend(plist)
    vec = vec_width(dev, cdt)
    if e.vector_code(cdt) and cshape and cshape[-1] >= vec and \
            all(st[-1] in (0, 1) for st in cstrides):
        # rows along which every operand walks or repeats one element (a broadcast bias, a
        # mean's gradient): vector loads, as the contiguous kernel (PoCL, float32 x + y with y
        # broadcast over (32, 64, 32, 32): 748 us walked, 220 by rows)
        L = cshape[-1]
        n6 = cshape[-2] if len(cshape) > 1 else 1
        launch(dev, get_kernel(dev, prog, f"{e.name}_r_{pattern}"),
               *rows_geometry(dev, L, n6, n // (L * n6), vec), *kargs, len(cshape),
               pack8_right(cshape, 1))
        return out
    launch_walk(dev, get_kernel(dev, prog, f"{e.name}_s_{pattern}"), n, cshape, *kargs)
    return out
