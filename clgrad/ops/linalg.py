"""Matrix products: matmul (and the @ operator), mm, bmm, addmm, baddbmm, mv, addmv, dot and
outer / ger, with torch's names, shape rules and errors. Each product is an Op whose backward is
written in these same ops, so higher-order gradients work, and a forward-mode rule (`jvp`).

They all run one kernel family, cl_kernels/gemm.mako (clgrad.kernels.gemm: its kernels, their
per-device configuration from the tuning database, and the raw product `gemm`), which computes
C[b] = alpha * A[b] @ B[b] + beta * D[b] reading A, B and D through strides (transposed and
broadcast views are never copied first).
"""
from .. import dtypes
from ..autograd.op import Op
from ..kernels.gemm import GEMM_DTYPES, compute_dtype, gemm
from ..tensor import Tensor, contiguous_strides, make_tensor, numel_of
from . import views
from ._base import (
    broadcast_shapes, cast_raw, expand_strides, same_device, size_repr, view_raw, contiguous_raw)
from .elementwise import TABLE, run
from .reduce import reduce_raw, sum_to
from .complexes import view_as_complex, view_as_real
from . import join

# On GPUs, dot products longer than this run as a parallel reduction of the products: one
# work-item per output is slow for a GPU thread (a CPU core streams even millions at full
# bandwidth, measured faster than the reduction).
DOT_REDUCE_GPU = 1 << 12


def _as_batch(t):
    """A matrix as a batch of one (a view)."""
    return view_raw(t, (1,) + t._shape, (0,) + t._strides, t._offset)


def _row(v):
    """A vector (K,) as a (1, 1, K) batch."""
    return view_raw(v, (1, 1, v._shape[0]), (0, 0, v._strides[0]), v._offset)


def _col(v):
    """A vector (K,) as a (1, K, 1) batch."""
    return view_raw(v, (1, v._shape[0], 1), (0, v._strides[0], 0), v._offset)


def _reshaped(t, shape):
    """A fresh contiguous result seen with another shape."""
    return view_raw(t, shape, contiguous_strides(shape), t._offset)


def _dot_limit(dev):
    return None if dev.cpu_paths else DOT_REDUCE_GPU


def _dot_raw(a, b):
    limit = _dot_limit(a._storage.device)
    if limit is None or a._shape[0] <= limit:
        return _reshaped(gemm(_row(a), _col(b)), ())
    # long vectors: products then a parallel sum, in float32 for 16-bit types
    cdt = compute_dtype(a._dtype)
    prod = run(TABLE["mul"], (cast_raw(a, cdt), cast_raw(b, cdt)))
    return reduce_raw("sum", prod, (0,), False, out_dtype=a._dtype)


# ---- argument checks with torch's messages ----------------------------------------------------
_NAMES = dtypes.TORCH_NAMES
_CNAMES = dtypes.C_NAMES


def _tensors(op, **named):
    for i, (name, t) in enumerate(named.items()):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {i + 1}) must be Tensor, not "
                            f"{type(t).__name__}")
    same_device(op, list(named.values()))


def _supported(op, t):
    if t._dtype not in GEMM_DTYPES and t._dtype.kind != "c":
        raise NotImplementedError(f'"{op}" not implemented for \'{_NAMES[t._dtype]}\'')


def _mat_str(t):
    return "x".join(str(s) for s in t._shape)


def _check_mm(a, b):
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a._shape[1] != b._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_mat_str(a)} and "
                           f"{_mat_str(b)})")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_CNAMES[a._dtype]} != {_CNAMES[b._dtype]}")
    if not _no_terms(a._shape[0], b._shape[1], a._shape[1]):
        _supported("mm", a)


def _no_terms(M, N, K):
    """A product with nothing to sum (an empty result, or K = 0: zeros): torch computes it for
    any dtype, bool too, without a kernel."""
    return M == 0 or N == 0 or K == 0


def _check_bmm(a, b):
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if b._shape[:2] != (a._shape[0], a._shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a._shape[0]}, {a._shape[2]}] but got: [{b._shape[0]}, "
                           f"{b._shape[1]}].")
    _supported("bmm", a)            # torch's order: the dtype's kernel, then the match
    if a._dtype is not b._dtype:
        raise RuntimeError(f"expected scalar type {_NAMES[a._dtype]} but found "
                           f"{_NAMES[b._dtype]}")


def _check_mv(mat, vec, input_dt=None):
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {mat.ndim}, {vec.ndim}")
    if mat._shape[1] != vec._shape[0]:
        raise RuntimeError(f"size mismatch, got input ({mat._shape[0]}), mat ({_mat_str(mat)}), "
                           f"vec ({vec._shape[0]})")
    idt = vec._dtype if input_dt is None else input_dt
    if not (idt is mat._dtype is vec._dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{_NAMES[idt]}, {_NAMES[mat._dtype]}, and {_NAMES[vec._dtype]}")
    if not _no_terms(mat._shape[0], 1, mat._shape[1]):
        _supported("addmv", mat)


def _check_expand(t, shape):
    """torch's errors for broadcasting addmm's `input` to the result's shape."""
    if t.ndim > len(shape):
        raise RuntimeError(f"expand(clgrad.cl.{_NAMES[t._dtype]}Tensor{{{size_repr(t._shape)}}}, "
                           f"size={size_repr(shape)}): the number of sizes provided "
                           f"({len(shape)}) must be greater or equal to the number of dimensions "
                           f"in the tensor ({t.ndim})")
    off = len(shape) - t.ndim
    for i, s in enumerate(t._shape):
        if s != 1 and s != shape[off + i]:
            raise RuntimeError(f"The expanded size of the tensor ({shape[off + i]}) must match "
                               f"the existing size ({s}) at non-singleton dimension {off + i}.  "
                               f"Target sizes: {size_repr(shape)}.  Tensor sizes: "
                               f"{size_repr(t._shape)}")


def _as_input(t, shape):
    """addmm's input seen as a (batch, M, N) operand (a view with zero strides where it
    broadcasts)."""
    full = (1,) * (3 - len(shape)) + tuple(shape)
    return view_raw(t, full, expand_strides(t, full), t._offset)


def _scale(g, s):
    return g if s == 1 else g * s


def _product_jvp(f, a, b, ta, tb, alpha=1, ti=None, beta=0):
    """Forward-mode rule of beta * input + alpha * f(a, b), f bilinear:
    beta * ti + alpha * (f(ta, b) + f(a, tb)), skipping absent tangents."""
    terms = [_scale(f(ta, b), alpha) if ta is not None else None,
             _scale(f(a, tb), alpha) if tb is not None else None,
             _scale(ti, beta) if ti is not None and beta != 0 else None]
    out = None
    for t in terms:
        if t is not None:
            out = t if out is None else out + t
    return out


def _column_major(m):
    """Whether m, a matrix or a batch of them, is the transpose of a contiguous one: strides
    (1, rows), or (rows * cols, 1, rows)."""
    if m.ndim not in (2, 3) or m._shape[-2] <= 1 or m._shape[-1] <= 1:
        return False
    r, c = m._shape[-2:]
    return m._strides == ((1, r) if m.ndim == 2 else (r * c, 1, r))


def _rhs_grad(a, g, b_column_major, alpha=1, product=None):
    """alpha * a^T @ g, the gradient of b in a @ b (`product` mm, or bmm for batches). When b is
    a transposed contiguous matrix (F.linear's W.t(), attention's keys handed to bmm transposed)
    it is computed in that layout and returned transposed, so that the transpose's backward
    hands the contiguous tensor its gradient without a copy."""
    product = product or mm
    if b_column_major:
        return views.mT(_scale(product(views.mT(g), a), alpha))
    return _scale(product(views.mT(a), g), alpha)


def _save_operands(ctx, a, b, ia, ib):
    """Save a and b, each only if the other's gradient is wanted (a's gradient needs b and
    vice versa); ia and ib are their positions among forward's arguments."""
    need = ctx.needs_input_grad
    if need:
        ctx.save_for_backward(a if need[ib] else None, b if need[ia] else None)


# ---- ops --------------------------------------------------------------------------------------
class Mm(Op):
    @staticmethod
    def forward(ctx, a, b):
        ctx.b_column_major = _column_major(b)
        _save_operands(ctx, a, b, 0, 1)
        return _reshaped(gemm(_as_batch(a), _as_batch(b)), (a._shape[0], b._shape[1]))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = mm(g, views.t(b)) if ctx.needs_input_grad[0] else None
        gb = _rhs_grad(a, g, ctx.b_column_major) if ctx.needs_input_grad[1] else None
        return ga, gb

    @staticmethod
    def jvp(args, tangents, out):
        return _product_jvp(mm, *args, *tangents)


class Bmm(Op):
    @staticmethod
    def forward(ctx, a, b):
        ctx.b_column_major = _column_major(b)
        _save_operands(ctx, a, b, 0, 1)
        return gemm(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = bmm(g, views.transpose(b, 1, 2)) if ctx.needs_input_grad[0] else None
        gb = _rhs_grad(a, g, ctx.b_column_major, product=bmm) \
            if ctx.needs_input_grad[1] else None
        return ga, gb

    @staticmethod
    def jvp(args, tangents, out):
        return _product_jvp(bmm, *args, *tangents)


class Addmm(Op):
    @staticmethod
    def forward(ctx, input, a, b, beta, alpha):
        ctx.beta, ctx.alpha = beta, alpha
        ctx.b_column_major = _column_major(b)
        _save_operands(ctx, a, b, 1, 2)
        shape = (a._shape[0], b._shape[1])
        out = gemm(_as_batch(a), _as_batch(b), _as_input(input, shape), beta, alpha)
        return _reshaped(out, shape)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        gi = _sum_to(_scale(g, ctx.beta), ctx._in_meta[0][0]) if need[0] else None
        ga = _scale(mm(g, views.t(b)), ctx.alpha) if need[1] else None
        gb = _rhs_grad(a, g, ctx.b_column_major, ctx.alpha) if need[2] else None
        return gi, ga, gb, None, None

    @staticmethod
    def jvp(args, tangents, out):
        (_, a, b, beta, alpha), (ti, ta, tb) = args, tangents[:3]
        return _product_jvp(mm, a, b, ta, tb, alpha, ti, beta)


class Baddbmm(Op):
    @staticmethod
    def forward(ctx, input, a, b, beta, alpha):
        ctx.beta, ctx.alpha = beta, alpha
        _save_operands(ctx, a, b, 1, 2)
        shape = (a._shape[0], a._shape[1], b._shape[2])
        return gemm(a, b, _as_input(input, shape), beta, alpha)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        gi = _sum_to(_scale(g, ctx.beta), ctx._in_meta[0][0]) if need[0] else None
        ga = _scale(bmm(g, views.transpose(b, 1, 2)), ctx.alpha) if need[1] else None
        gb = _scale(bmm(views.transpose(a, 1, 2), g), ctx.alpha) if need[2] else None
        return gi, ga, gb, None, None

    @staticmethod
    def jvp(args, tangents, out):
        (_, a, b, beta, alpha), (ti, ta, tb) = args, tangents[:3]
        return _product_jvp(bmm, a, b, ta, tb, alpha, ti, beta)


class Mv(Op):
    @staticmethod
    def forward(ctx, mat, vec):
        _save_operands(ctx, mat, vec, 0, 1)
        return _reshaped(gemm(_as_batch(mat), _col(vec)), (mat._shape[0],))

    @staticmethod
    def backward(ctx, g):
        mat, vec = ctx.saved_tensors
        gm = outer(g, vec) if ctx.needs_input_grad[0] else None
        gv = mv(views.t(mat), g) if ctx.needs_input_grad[1] else None
        return gm, gv

    @staticmethod
    def jvp(args, tangents, out):
        return _product_jvp(mv, *args, *tangents)


class Addmv(Op):
    @staticmethod
    def forward(ctx, input, mat, vec, beta, alpha):
        ctx.beta, ctx.alpha = beta, alpha
        _save_operands(ctx, mat, vec, 1, 2)
        m = mat._shape[0]
        bias = view_raw(input, (1, m, 1), (0,) + tuple(expand_strides(input, (m,))) + (0,),
                        input._offset)
        return _reshaped(gemm(_as_batch(mat), _col(vec), bias, beta, alpha), (m,))

    @staticmethod
    def backward(ctx, g):
        mat, vec = ctx.saved_tensors
        need = ctx.needs_input_grad
        gi = _sum_to(_scale(g, ctx.beta), ctx._in_meta[0][0]) if need[0] else None
        gm = _scale(outer(g, vec), ctx.alpha) if need[1] else None
        gv = _scale(mv(views.t(mat), g), ctx.alpha) if need[2] else None
        return gi, gm, gv, None, None

    @staticmethod
    def jvp(args, tangents, out):
        (_, mat, vec, beta, alpha), (ti, tm, tv) = args, tangents[:3]
        return _product_jvp(mv, mat, vec, tm, tv, alpha, ti, beta)


class Dot(Op):
    @staticmethod
    def forward(ctx, a, b):
        _save_operands(ctx, a, b, 0, 1)
        return _dot_raw(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (b * g if ctx.needs_input_grad[0] else None,
                a * g if ctx.needs_input_grad[1] else None)

    @staticmethod
    def jvp(args, tangents, out):
        return _product_jvp(dot, *args, *tangents)


class UnsafeView(Op):
    """torch's _unsafe_view: a fresh result (of mm or bmm inside matmul) seen with another shape;
    not tracked as a view, since nothing else holds the result."""

    @staticmethod
    def forward(ctx, x, shape):
        if not x._contig:
            x = contiguous_raw(x)
        return make_tensor(x._storage, shape, contiguous_strides(shape), x._offset, x._dtype,
                           True)

    @staticmethod
    def backward(ctx, g):
        return views.reshape(g, ctx._in_meta[0][0]), None

    @staticmethod
    def jvp(args, tangents, out):
        return views.reshape(tangents[0], args[1])


def _sum_to(g, shape):
    return sum_to(g, shape)


# ---- public functions -------------------------------------------------------------------------
def mm(input, mat2):
    """Matrix product of two 2-D tensors (no broadcasting).

    >>> import clgrad
    >>> clgrad.mm(clgrad.tensor([[1.0, 2.0]]), clgrad.tensor([[3.0], [4.0]])).tolist()
    [[11.0]]
    """
    _tensors("mm", input=input, mat2=mat2)
    _check_mm(input, mat2)
    if input._dtype.kind == "c":
        return complex_product(input, mat2)
    return Mm.apply(input, mat2)


def bmm(input, mat2):
    """Batched matrix product: (b, n, m) @ (b, m, p) -> (b, n, p).

    >>> import clgrad
    >>> clgrad.bmm(clgrad.ones(2, 1, 3), clgrad.ones(2, 3, 1)).tolist()
    [[[3.0]], [[3.0]]]
    """
    _tensors("bmm", input=input, mat2=mat2)
    if input.ndim == 3 == mat2.ndim and input._shape[::2] == mat2._shape[:2] and \
            _no_terms(input._shape[0] * input._shape[1], mat2._shape[2], input._shape[2]):
        # torch's bmm returns these before checking dtypes, in mat2's dtype
        return Bmm.apply(input.to(mat2._dtype), mat2)
    _check_bmm(input, mat2)
    if input._dtype.kind == "c":
        return complex_product(input, mat2)
    return Bmm.apply(input, mat2)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2); input broadcasts to the product's shape.

    >>> import clgrad
    >>> clgrad.addmm(clgrad.tensor([10.0]), clgrad.ones(1, 2), clgrad.ones(2, 1), alpha=2).tolist()
    [[14.0]]
    """
    _tensors("addmm", input=input, mat1=mat1, mat2=mat2)
    for name, t in (("mat1", mat1), ("mat2", mat2)):
        if t.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {t.ndim}-D tensor")
    if mat1._shape[1] != mat2._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_mat_str(mat1)} and "
                           f"{_mat_str(mat2)})")
    if input._dtype is not mat2._dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_NAMES[input._dtype]} and {_NAMES[mat2._dtype]}")
    if mat1._dtype is not mat2._dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_NAMES[mat1._dtype]} and {_NAMES[mat2._dtype]}")
    if mat1._shape[0] and mat2._shape[1]:       # an empty result is made for any dtype
        _supported("addmm", mat1)
    _check_expand(input, (mat1._shape[0], mat2._shape[1]))
    if input._dtype.kind == "c":
        return input * beta + complex_product(mat1, mat2) * alpha
    return Addmm.apply(input, mat1, mat2, beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2) over a batch; input broadcasts.

    >>> import clgrad
    >>> clgrad.baddbmm(clgrad.ones(1), clgrad.ones(2, 1, 3), clgrad.ones(2, 3, 1)).tolist()
    [[[4.0]], [[4.0]]]
    """
    _tensors("baddbmm", input=input, batch1=batch1, batch2=batch2)
    if input._dtype is not batch1._dtype:    # batch1 against batch2 is _check_bmm's
        raise RuntimeError(f"Input dtypes must be the same, got: input "
                           f"{_CNAMES[input._dtype]}, batch1: {_CNAMES[batch1._dtype]}, batch2: "
                           f"{_CNAMES[batch2._dtype]}")
    _check_bmm(batch1, batch2)
    _check_expand(input, (batch1._shape[0], batch1._shape[1], batch2._shape[2]))
    if input._dtype.kind == "c":
        return input * beta + complex_product(batch1, batch2) * alpha
    return Baddbmm.apply(input, batch1, batch2, beta, alpha)


def mv(input, vec):
    """Matrix-vector product: (n, m) @ (m,) -> (n,).

    >>> import clgrad
    >>> clgrad.mv(clgrad.tensor([[1.0, 2.0], [3.0, 4.0]]), clgrad.tensor([1.0, 1.0])).tolist()
    [3.0, 7.0]
    """
    _tensors("mv", input=input, vec=vec)
    _check_mv(input, vec)
    if input._dtype.kind == "c":
        return views.squeeze(complex_product(input, views.unsqueeze(vec, 1)), 1)
    return Mv.apply(input, vec)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec); input broadcasts to (n,).

    >>> import clgrad
    >>> clgrad.addmv(clgrad.tensor([1.0]), clgrad.ones(2, 3), clgrad.ones(3), beta=2).tolist()
    [5.0, 5.0]
    """
    _tensors("addmv", input=input, mat=mat, vec=vec)
    _check_mv(mat, vec, input._dtype)
    if input.ndim > 1 or (input.ndim == 1 and input._shape[0] not in (1, mat._shape[0])):
        raise RuntimeError(f"size mismatch, got input ({', '.join(map(str, input._shape))}), mat "
                           f"({_mat_str(mat)}), vec ({vec._shape[0]})")
    return Addmv.apply(input, mat, vec, beta, alpha)


def dot(input, tensor):
    """Inner product of two 1-D tensors of the same length.

    >>> import clgrad
    >>> clgrad.dot(clgrad.tensor([1.0, 2.0]), clgrad.tensor([3.0, 4.0])).item()
    11.0
    """
    _tensors("dot", input=input, tensor=tensor)
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D "
                           f"tensors")
    if input._dtype is not tensor._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_NAMES[input._dtype]} and {_NAMES[tensor._dtype]}")
    n, m = input._shape[0], tensor._shape[0]
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to "
                           f"have the same number of elements, but got {n} and {m} elements "
                           f"respectively")
    _supported("dot", input)
    if input._dtype.kind == "c":
        return (input * tensor).sum()
    return Dot.apply(input, tensor)


def outer(input, vec2):
    """Outer product of two vectors: (n,) x (m,) -> (n, m) (types promote, like `*`).

    >>> import clgrad
    >>> clgrad.outer(clgrad.tensor([1.0, 2.0]), clgrad.tensor([3.0, 4.0])).tolist()
    [[3.0, 4.0], [6.0, 8.0]]
    """
    _tensors("outer", input=input, vec2=vec2)
    for name, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return views.reshape(input, (-1, 1)) * vec2


ger = outer


def complex_product(a, b):
    """a @ b for complex matrices (or batches of them, one complex dtype) as ONE real GEMM over
    their (re, im) storage: view_as_real(a) is a (.., m, 2k) real matrix without a copy, and
    b becomes the (.., 2k, 2n) real matrix whose rows 2j, 2j+1 are (re, im) of b[j] and of
    i b[j] interleaved, so that the real product is view_as_real(a @ b) itself:
    re = ar br - ai bi, im = ar bi + ai br. The same multiplications as four real GEMMs
    (not the three of Gauss's trick, which loses accuracy), in one launch; gradients follow from
    the ops used (view_as_real, stack, the real product, view_as_complex)."""
    m, k = a._shape[-2:]
    n = b._shape[-1]
    batch = a._shape[:-2]
    ar = views.reshape(view_as_real(a), batch + (m, 2 * k))
    pairs = join.stack([view_as_real(b), view_as_real(b * 1j)], -3)    # (.., k, 2, n, 2)
    br = views.reshape(pairs, b._shape[:-2] + (2 * k, 2 * n))
    out = mm(ar, br) if not batch else bmm(ar, br)
    return view_as_complex(views.reshape(out, batch + (m, n, 2)))


def _unsafe_view(t, shape):
    return UnsafeView.apply(t, tuple(shape))


def _should_fold(t1, t2):
    """torch's rule for matmul: fold the batch of the larger operand into rows and run one mm
    (or mv) when that needs no copy, or when the larger one requires grad (then its gradient is
    one mm too instead of a batch summed afterwards)."""
    larger = t1.ndim >= t2.ndim
    big = t1 if larger else t2
    shape, strides = list(big._shape), list(big._strides)
    if not larger:                       # the larger operand is t2, seen transposed
        shape[-2:], strides[-2:] = shape[-1:-3:-1], strides[-1:-3:-1]
    if not (len(shape) >= 3 and (t2.ndim if larger else t1.ndim) <= 2):
        return False
    if big._requires_grad:
        return True
    if t1.ndim == 2:
        return False
    if numel_of(shape) == 0:
        return True
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def _bmm_operand(t, batch, nb):
    """Matrix batch t broadcast to `batch` as an [nb, r, c] operand of bmm: a view where the batch
    dims merge, else a copy. The copy keeps t's inner layout: a column-major t (attention's
    k.transpose(-2, -1) of [B, H, T, D] heads) is copied as whole rows of its transpose, then
    handed to bmm transposed back, which reads column-major operands as they are; copying it
    into row-major order instead moved single elements, 13x slower."""
    r, c = t._shape[-2:]
    t = views.expand(t, batch + (r, c))
    column_major = t._strides[-2] == 1 and t._strides[-1] != 1 and r > 1
    if column_major and views.view_strides(t._shape, t._strides, (nb, r, c)) is None:
        return views.transpose(views.reshape(views.mT(t), (nb, c, r)), 1, 2)
    return views.reshape(t, (nb, r, c))


def matmul(input, other):
    """Matrix product with torch's rules: 1-D operands are vectors (dot, mv, vector-matrix),
    2-D are matrices, more dims are batches that broadcast.

    >>> import clgrad
    >>> clgrad.matmul(clgrad.ones(5, 2, 3), clgrad.ones(3, 4)).shape
    clgrad.Size([5, 2, 4])
    >>> (clgrad.ones(2, 1, 2, 3) @ clgrad.ones(4, 3, 1)).shape
    clgrad.Size([2, 4, 2, 1])
    """
    _tensors("matmul", input=input, other=other)
    d1, d2 = input.ndim, other.ndim
    if d1 == 0 or d2 == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{d1}D and {d2}D")
    if d1 == 1 and d2 == 1:
        return dot(input, other)
    if d1 == 2 and d2 == 1:
        return mv(input, other)
    if d1 == 1 and d2 == 2:
        return views.squeeze(mm(views.unsqueeze(input, 0), other), 0)
    if d1 == 2 and d2 == 2:
        return mm(input, other)
    if _should_fold(input, other):
        transpose = d2 > d1
        t1 = views.mT(other) if transpose else input
        t2 = (views.t(input) if d1 == 2 else input) if transpose else other
        out_shape = tuple(t1._shape[:-1])
        folded = views.reshape(t1, (numel_of(out_shape), t1._shape[-1]))
        if t2.ndim == 1:
            return _unsafe_view(mv(folded, t2), out_shape)
        out = _unsafe_view(mm(folded, t2), out_shape + (t2._shape[1],))
        return views.contiguous(views.mT(out)) if transpose else out
    # batched: broadcast the batch dims, flatten them, one bmm
    n = input._shape[-2] if d1 > 1 else 1
    m1 = input._shape[-1]
    m2 = other._shape[-2] if d2 > 1 else other._shape[0]
    p = other._shape[-1] if d2 > 1 else 1
    batch = broadcast_shapes(tuple(input._shape[:max(d1 - 2, 0)]),
                             tuple(other._shape[:max(d2 - 2, 0)]))
    nb = numel_of(batch)
    a = _bmm_operand(input, batch, nb) if d1 > 1 else \
        views.reshape(views.expand(input, batch + (n, m1)), (nb, n, m1))
    if d2 == 1:
        b = views.unsqueeze(views.reshape(views.expand(other, batch + (m2,)), (nb, m2)), 2)
    else:
        b = _bmm_operand(other, batch, nb)
    out = bmm(a, b)
    if d2 == 1:
        out = views.squeeze(out, -1)
    return _unsafe_view(out, batch + ((n,) if d1 > 1 else ()) + ((p,) if d2 > 1 else ()))


def _matmul_op(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(self, other)


def _rmatmul_op(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, self)


FUNCTIONS = {"matmul": matmul, "mm": mm, "bmm": bmm, "addmm": addmm, "baddbmm": baddbmm,
             "mv": mv, "addmv": addmv, "dot": dot, "outer": outer, "ger": ger}
METHODS = dict(FUNCTIONS, __matmul__=_matmul_op, __rmatmul__=_rmatmul_op)

__all__ = list(FUNCTIONS)
