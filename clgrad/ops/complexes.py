"""Complex tensors' own ops: the free views between a complex tensor and its interleaved (re, im)
storage (`view_as_real`, `view_as_complex`, `real`, `imag`), assembling complex tensors
(`complex`, `polar`), conjugation, and the predicates.

A complex tensor's storage is interleaved (re, im) pairs of its real dtype, as torch's, so the
views here never copy: `view_as_real(z)` has shape z.shape + (2,), z's strides doubled plus a last
stride of 1, and z's offset doubled, over z's storage. Gradients follow torch's convention (the
conjugate Wirtinger derivative: for a real loss L of z = x + iy, z.grad = dL/dx + i dL/dy), under
which these views are plain linear maps: the gradient of view_as_real(z) is view_as_real of the
gradient, and so on.

Conjugation is materialised: `conj()` of a complex tensor is a new tensor holding the conjugate
(`is_conj()` is always False, `resolve_conj()` returns its input), where torch makes a lazy
conjugate view that shares memory. Values and gradients are the same; writing into the result of
conj() does not write into its input, as it would in torch.

>>> import clgrad
>>> z = clgrad.tensor([1 + 2j, 3 - 4j])
>>> clgrad.view_as_real(z).tolist()
[[1.0, 2.0], [3.0, -4.0]]
>>> z.imag.tolist(), z.conj().tolist()
([2.0, -4.0], [(1-2j), (3+4j)])
"""
from .. import dtypes
from ..autograd.op import Op
from ..tensor import Tensor, complex_view, empty_tensor, real_view
from ._base import broadcast_shapes, copy_into, view_raw

# ---- the views between complex tensors and their real storage ------------------------------------


def _check_view_as_complex(x):
    dt = x._dtype
    if dt not in (dtypes.float32, dtypes.float64, dtypes.float16):
        raise RuntimeError(f"view_as_complex is only supported for float, double and half "
                           f"tensors, but got a tensor of scalar type: {dtypes.TORCH_NAMES[dt]}")
    if not x._shape or x._shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if x._strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(st % 2 for st in x._strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if x._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")


def _pairable(g):
    """g (real, last dim of 2) laid out so that view_as_complex accepts it."""
    if g._strides[-1] == 1 and g._offset % 2 == 0 and all(st % 2 == 0 for st in g._strides[:-1]):
        return g
    return g.contiguous() if not g._contig else g.clone()


class ViewAsReal(Op):
    _is_view = True

    @staticmethod
    def forward(ctx, z):
        return real_view(z)

    @staticmethod
    def backward(ctx, g):
        return ViewAsComplex.apply(_pairable(g))

    @staticmethod
    def jvp(args, tangents, out):
        return None if tangents[0] is None else ViewAsReal.apply(tangents[0])


class ViewAsComplex(Op):
    _is_view = True

    @staticmethod
    def forward(ctx, x):
        return complex_view(x)

    @staticmethod
    def backward(ctx, g):
        return ViewAsReal.apply(g)

    @staticmethod
    def jvp(args, tangents, out):
        return None if tangents[0] is None else ViewAsComplex.apply(_pairable(tangents[0]))


def view_as_real(input):
    """A complex tensor's (re, im) pairs as a real tensor with a last dim of 2: a view (no copy).

    >>> import clgrad
    >>> clgrad.view_as_real(clgrad.tensor([1 + 2j])).tolist()
    [[1.0, 2.0]]
    """
    if input._dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return ViewAsReal.apply(input)


def view_as_complex(input):
    """A real tensor whose last dim (of size 2, stride 1) holds (re, im) pairs, as a complex
    tensor: a view (no copy).

    >>> import clgrad
    >>> clgrad.view_as_complex(clgrad.tensor([[1.0, 2.0]])).tolist()
    [(1+2j)]
    """
    _check_view_as_complex(input)
    return ViewAsComplex.apply(input)


def part_view(z, k):
    """Part k (0 real, 1 imaginary) of complex z as a real strided view (no autograd)."""
    r = real_view(z)
    return view_raw(r, z._shape, r._strides[:-1], r._offset + k)


class Real(Op):
    _is_view = True

    @staticmethod
    def forward(ctx, z):
        return part_view(z, 0)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx._in_meta[0][1])         # g + 0j

    @staticmethod
    def jvp(args, tangents, out):
        return None if tangents[0] is None else Real.apply(tangents[0])


class Imag(Op):
    _is_view = True

    @staticmethod
    def forward(ctx, z):
        return part_view(z, 1)

    @staticmethod
    def backward(ctx, g):
        return Complex.apply(g.new_zeros(g.shape), g, ctx._in_meta[0][1])    # i g

    @staticmethod
    def jvp(args, tangents, out):
        return None if tangents[0] is None else Imag.apply(tangents[0])


def real(input):
    """The real parts of a complex tensor, as a view; a real tensor itself.

    >>> import clgrad
    >>> clgrad.real(clgrad.tensor([1 + 2j])).tolist()
    [1.0]
    """
    if input._dtype.kind != "c":
        return input
    return Real.apply(input)


def imag(input):
    """The imaginary parts of a complex tensor, as a view (torch refuses real tensors).

    >>> import clgrad
    >>> clgrad.imag(clgrad.tensor([1 + 2j])).tolist()
    [2.0]
    """
    if input._dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return Imag.apply(input)


def _set_real(self, value):
    real(self).copy_(value)


def _set_imag(self, value):
    imag(self).copy_(value)


# ---- assembling complex tensors ------------------------------------------------------------------
class Complex(Op):
    """complex(re, im): both written into the parts of a new complex tensor (no kernel of its own:
    copies into the real view). Its gradient splits the incoming one into its parts."""

    @staticmethod
    def forward(ctx, re, im, dt):
        shape = re._shape if re._shape == im._shape else broadcast_shapes(re._shape, im._shape)
        out = empty_tensor(shape, dt, re._storage.device)
        copy_into(part_view(out, 0), re)
        copy_into(part_view(out, 1), im)
        return out

    @staticmethod
    def backward(ctx, g):
        gr = gi = None
        if ctx.needs_input_grad[0]:
            gr = real(g)
        if ctx.needs_input_grad[1]:
            gi = imag(g)
        return gr, gi, None

    @staticmethod
    def jvp(args, tangents, out):
        tr, ti = tangents[:2]
        if tr is None and ti is None:
            return None
        re, im = args[:2]
        tr = tr if tr is not None else re.new_zeros(re.shape)
        ti = ti if ti is not None else im.new_zeros(im.shape)
        return Complex.apply(tr, ti, args[2])


def complex(real, imag, *, out=None):
    """A complex tensor from its real and imaginary parts (float tensors of one dtype,
    broadcast together).

    >>> import clgrad
    >>> clgrad.complex(clgrad.tensor([1.0]), clgrad.tensor([2.0])).tolist()
    [(1+2j)]
    """
    for t in (real, imag):
        if not isinstance(t, Tensor):
            raise TypeError(f"complex(): argument 'real' and 'imag' must be Tensor, not "
                            f"{type(t).__name__}")
    if real._dtype is not imag._dtype:
        raise RuntimeError(f"Expected object of scalar type {dtypes.TORCH_NAMES[real._dtype]} but "
                           f"got scalar type {dtypes.TORCH_NAMES[imag._dtype]} for second "
                           f"argument")
    if real._dtype not in (dtypes.float32, dtypes.float64, dtypes.float16):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{dtypes.TORCH_NAMES[real._dtype]} and "
                           f"{dtypes.TORCH_NAMES[imag._dtype]}")
    res = Complex.apply(real, imag, real._dtype.to_complex())
    if out is not None:
        return out.copy_(res)
    return res


def polar(abs, angle, *, out=None):
    """The complex tensor abs * (cos(angle) + i sin(angle)).

    >>> import clgrad
    >>> z = clgrad.polar(clgrad.tensor([2.0]), clgrad.tensor([0.0]))
    >>> z.dtype, z.tolist()
    (clgrad.complex64, [(2+0j)])
    """
    if abs._dtype is not angle._dtype:
        raise RuntimeError(f"Expected object of scalar type {dtypes.TORCH_NAMES[abs._dtype]} but "
                           f"got scalar type {dtypes.TORCH_NAMES[angle._dtype]} for second "
                           f"argument")
    return complex(abs * angle.cos(), abs * angle.sin(), out=out)


# ---- predicates and the conjugate's no-ops -------------------------------------------------------
def is_complex(input):
    """Whether input's dtype is complex.

    >>> import clgrad
    >>> clgrad.is_complex(clgrad.zeros(1)), clgrad.is_complex(clgrad.zeros(1, dtype=clgrad.cfloat))
    (False, True)
    """
    return input._dtype.kind == "c"


def is_conj(input):
    """False: clgrad has no lazy conjugate views (conj() materialises)."""
    return False


def resolve_conj(input):
    """input itself: clgrad's conjugates are always materialised."""
    return input


def resolve_neg(input):
    return input


FUNCTIONS = {"view_as_real": view_as_real, "view_as_complex": view_as_complex, "real": real,
             "imag": imag, "complex": complex, "polar": polar, "is_complex": is_complex,
             "is_conj": is_conj, "resolve_conj": resolve_conj, "resolve_neg": resolve_neg}
METHODS = {"is_complex": is_complex, "is_conj": is_conj, "resolve_conj": resolve_conj,
           "resolve_neg": resolve_neg}

__all__ = list(FUNCTIONS) + ["part_view"]
