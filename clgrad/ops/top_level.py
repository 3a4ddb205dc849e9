"""torch's top-level functions that compose existing ops: in-place forms (`clgrad.clamp_(x, ...)`),
predicates, creation helpers (`scalar_tensor`, `asarray`, `range`, `empty_strided`), the `*_copy`
forms of view ops and a few deprecated or ATen-level names (`frobenius_norm`, `nuclear_norm`,
`norm_except_dim`, `unravel_index`, `nonzero_static`). The numeric utilities are in
clgrad/ops/numeric.py.

No new kernels: each is written in clgrad ops, so what is differentiable in torch differentiates
here through those ops.
"""
import builtins
import math
import numbers
import warnings

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from . import complexes, creation, join, views
from .copies import Clone
from ..runtime.memory import Storage
from ..runtime.device import get_device
from .linalg_lu import vector_norm, matrix_norm

__all__ = ["fill", "scalar_tensor", "asarray", "range", "frobenius_norm", "nuclear_norm",
           "is_storage", "is_distributed", "ldexp_", "empty_strided"]


# ---- torch's in-place top-level functions: the Tensor method, called as a function -------------
def _method_alias(name, method, example, result, summary=None):
    def fn(input, *args, **kwargs):
        return getattr(Tensor, method)(input, *args, **kwargs)   # bound by the face, later
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{summary or name.rstrip('_') + ', in place'}: input.{method}(...) as a "
                  f"function.\n\n    >>> import clgrad\n    >>> {example}\n    {result}\n    ")
    return fn


_ALIASES = {
    "fill_": ("clgrad.fill_(clgrad.zeros(2), 3).tolist()", "[3.0, 3.0]", None),
    "zero_": ("clgrad.zero_(clgrad.ones(2)).tolist()", "[0.0, 0.0]", None),
    "clamp_": ("clgrad.clamp_(clgrad.tensor([-2.0, 0.5, 3.0]), -1, 1).tolist()",
               "[-1.0, 0.5, 1.0]", None),
    "clamp_min_": ("clgrad.clamp_min_(clgrad.tensor([-2.0, 3.0]), 0).tolist()", "[0.0, 3.0]",
                   None),
    "clamp_max_": ("clgrad.clamp_max_(clgrad.tensor([-2.0, 3.0]), 0).tolist()", "[-2.0, 0.0]",
                   None),
    "clip_": ("clgrad.clip_(clgrad.tensor([-2.0, 3.0]), max=1).tolist()", "[-2.0, 1.0]", None),
    "nan_to_num_": ("clgrad.nan_to_num_(clgrad.tensor([float('nan'), 1.0])).tolist()",
                    "[0.0, 1.0]", None),
    "deg2rad_": ("round(clgrad.deg2rad_(clgrad.tensor([180.0])).item(), 4)", "3.1416", None),
    "rad2deg_": ("round(clgrad.rad2deg_(clgrad.tensor([3.141592653589793])).item(), 3)",
                 "180.0", None),
    "sinc_": ("clgrad.sinc_(clgrad.tensor([0.0])).tolist()", "[1.0]", None),
    "logit_": ("clgrad.logit_(clgrad.tensor([0.5])).tolist()", "[0.0]", None),
    "xlogy_": ("clgrad.xlogy_(clgrad.tensor([0.0, 2.0]), 1.0).tolist()", "[0.0, 0.0]",
               None),
    "resize_as_": ("clgrad.resize_as_(clgrad.zeros(2), clgrad.zeros(1, 3)).shape",
                   "clgrad.Size([1, 3])", "resize input to the template's shape"),
    "as_strided_": ("clgrad.as_strided_(clgrad.arange(4.0), (2,), (2,)).tolist()",
                    "[0.0, 2.0]", "make input a strided view of its own storage"),
    "addmv_": ("clgrad.addmv_(clgrad.zeros(2), clgrad.eye(2), clgrad.ones(2)).tolist()",
               "[1.0, 1.0]", None),
    "is_inference": ("clgrad.is_inference(clgrad.zeros(1))", "False",
                     "whether input was made in inference mode"),
    "is_complex": ("clgrad.is_complex(clgrad.zeros(1))", "False",
                   "whether input's dtype is complex"),
    "unsafe_chunk": ("len(clgrad.unsafe_chunk(clgrad.zeros(4), 2))", "2",
                     "chunk (torch's form without its view-aliasing checks)"),
    "unsafe_split": ("[t.tolist() for t in clgrad.unsafe_split(clgrad.arange(3.0), 2)]",
                     "[[0.0, 1.0], [2.0]]", "split (torch's form without its aliasing checks)"),
    "unsafe_split_with_sizes": ("[t.numel() for t in clgrad.unsafe_split_with_sizes("
                                "clgrad.zeros(3), [1, 2])]", "[1, 2]",
                                "split_with_sizes (torch's form without its aliasing checks)"),
}
_ALIAS_FNS = {}
for _name, (_ex, _res, _summary) in _ALIASES.items():
    _fn = _method_alias(_name, _name.replace("unsafe_", ""), _ex, _res, _summary)
    _ALIAS_FNS[_name] = _fn
    globals()[_name] = _fn
__all__ += list(_ALIASES)


def ldexp_(input, other):
    """input * 2**other, in place (input keeps its floating dtype).

    >>> import clgrad
    >>> clgrad.ldexp_(clgrad.tensor([1.0, 3.0]), clgrad.tensor([2])).tolist()
    [4.0, 12.0]
    """
    if not input.is_floating_point():
        raise RuntimeError(f"ldexp can't be cast to the desired output type "
                           f"{input.dtype.name.capitalize()}")
    return input.mul_(2.0 ** (other.to(input.dtype) if isinstance(other, Tensor) else other))


def fill(input, value):
    """A new tensor of input's shape, dtype and device, every element value (differentiable in
    a 0-d tensor value; input's gradient is zero).

    >>> import clgrad
    >>> clgrad.fill(clgrad.zeros(2), 3).tolist()
    [3.0, 3.0]
    """
    return views.clone(input).fill_(value)


def is_storage(obj):
    """Whether obj is a storage object: clgrad keeps storages internal (no
    Tensor.untyped_storage), so only its own Storage class answers True.

    >>> import clgrad
    >>> clgrad.is_storage(clgrad.zeros(1))
    False
    """
    return isinstance(obj, Storage)


def is_distributed(input):
    """False: a tensor is never split across processes here (as torch's dense tensors).

    >>> import clgrad
    >>> clgrad.is_distributed(clgrad.zeros(1))
    False
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"is_distributed(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    return False


# ---- creation ------------------------------------------------------------------------------------
def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None,
                  requires_grad=False):
    """A 0-d tensor holding s, of the default float dtype unless dtype says otherwise.

    >>> import clgrad
    >>> t = clgrad.scalar_tensor(3); t.dtype, t.item()
    (clgrad.float32, 3.0)
    """
    if isinstance(s, Tensor):
        s = s.item()
    return creation.tensor(s, dtype=dtype or dtypes.get_default_dtype(), device=device,
                           requires_grad=requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """obj as a tensor: a tensor is returned itself when dtype and device already match (copy=True
    forces a copy, copy=False refuses one); other data is copied to the device. OpenCL buffers
    cannot alias host memory, so copy=False on a numpy array or a sequence raises ValueError.

    >>> import clgrad
    >>> t = clgrad.zeros(2); clgrad.asarray(t) is t, clgrad.asarray([1, 2]).dtype
    (True, clgrad.int64)
    """
    if isinstance(obj, Tensor):
        dt = obj.dtype if dtype is None else dtypes.as_dtype(dtype)
        dev = obj._storage.device if device is None else get_device(device)
        if copy is False and dt is not obj.dtype:
            raise ValueError(f"can't alias tensor with dtype {obj.dtype} into dtype {dt}.")
        if copy is False and dev is not obj._storage.device:
            raise ValueError(f"can't alias tensor from device {obj.device} to "
                             f"{dev.torch_name if hasattr(dev, 'torch_name') else device}.")
        out = obj.to(device=device, dtype=dt)
        if copy and out is obj:
            out = views.clone(obj)
        if requires_grad:
            out.requires_grad_(True)
        return out
    if copy is False:
        raise ValueError("can't alias host memory into an OpenCL tensor: clgrad copies data to "
                         "the device (use copy=None or copy=True)")
    if dtype is None and isinstance(obj, np.ndarray) and obj.dtype == np.float64:
        dtype = dtypes.float64                       # numpy's own dtype is kept, as torch's
    return creation.tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)


def range(start=0, end=None, step=1, *, dtype=None, layout=None, device=None, pin_memory=None,
          requires_grad=False):
    """Deprecated in torch: start, start + step, ... up to end INCLUSIVE, of the default float
    dtype unless dtype says otherwise (use arange, which excludes end).

    >>> import clgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     clgrad.range(1, 4).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"range: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    n = int(math.floor((end - start) / step)) + 1
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    vals = start + step * np.arange(n, dtype=np.float64)
    if dt.kind != "f":
        vals = np.trunc(vals).astype(np.int64) if dt is not dtypes.bool_ else vals != 0
    return creation.tensor(vals, dtype=dt, device=device, requires_grad=requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """An uninitialised tensor with the given size and stride (over a storage just big enough).

    >>> import clgrad
    >>> clgrad.empty_strided((2, 3), (1, 2)).stride()
    (1, 2)
    """
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"empty_strided: mismatch in length of strides and shape ({size} "
                           f"and {stride})")
    n = 0 if 0 in size else 1 + sum((s - 1) * st for s, st in zip(size, stride))
    base = creation.empty(n, dtype=dtype, device=device)
    out = views.as_strided(base, size, stride).detach()
    return out.requires_grad_(True) if requires_grad else out


# ---- deprecated norms (ATen keeps them for TorchScript) ------------------------------------------
def frobenius_norm(input, dim, keepdim=False):
    """sqrt of the sum of squares over dim (at most 2 dims): linalg.vector_norm(input, 2, dim).

    >>> import clgrad
    >>> clgrad.frobenius_norm(clgrad.full((2, 2), 2.0), (0, 1)).item()
    4.0
    """
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           f"instead.")
    return vector_norm(input, 2, dims, keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of singular values over two dims (default the last two):
    linalg.matrix_norm(input, "nuc", dim).

    >>> import clgrad
    >>> round(clgrad.nuclear_norm(clgrad.eye(3)).item(), 4)
    3.0
    """
    if isinstance(dim, bool):                              # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)



# ---- ATen's *_copy ops: the view op, then a copy (what functionalisation produces) --------------
def _clone_all(out):
    # torch's *_copy results are contiguous (clone's contiguous format, not preserve_format)
    return tuple(Clone.apply(t) for t in out) if isinstance(out, (tuple, list)) else \
        Clone.apply(out)


def _slice(input, dim=0, start=None, end=None, step=1):
    return input[(slice(None),) * (dim % input.ndim) + (slice(start, end, step),)]


_COPIES = {
    # name: (the view, example, its result)
    "alias_copy": (lambda x: x, "clgrad.alias_copy(clgrad.ones(2)).tolist()", "[1.0, 1.0]"),
    "detach_copy": (lambda x: x.detach(), "clgrad.detach_copy(clgrad.ones(1)).requires_grad",
                    "False"),
    "as_strided_copy": (lambda x, size, stride, storage_offset=None:
                        x.as_strided(size, stride, storage_offset),
                        "clgrad.as_strided_copy(clgrad.arange(4.0), (2,), (2,)).tolist()",
                        "[0.0, 2.0]"),
    "diagonal_copy": (lambda x, offset=0, dim1=0, dim2=1: x.diagonal(offset, dim1, dim2),
                      "clgrad.diagonal_copy(clgrad.eye(2)).tolist()", "[1.0, 1.0]"),
    "expand_copy": (lambda x, size, *, implicit=False: x.expand(size),
                    "clgrad.expand_copy(clgrad.ones(1), [3]).is_contiguous()", "True"),
    "permute_copy": (lambda x, dims: x.permute(dims),
                     "clgrad.permute_copy(clgrad.zeros(2, 3), [1, 0]).shape",
                     "clgrad.Size([3, 2])"),
    "select_copy": (lambda x, dim, index: x.select(dim, index),
                    "clgrad.select_copy(clgrad.eye(2), 0, 1).tolist()", "[0.0, 1.0]"),
    "slice_copy": (_slice, "clgrad.slice_copy(clgrad.arange(5.0), 0, 1, 5, 2).tolist()",
                   "[1.0, 3.0]"),
    "split_copy": (lambda x, split_size, dim=0: x.split(split_size, dim),
                   "[t.tolist() for t in clgrad.split_copy(clgrad.arange(3.0), 2)]",
                   "[[0.0, 1.0], [2.0]]"),
    "split_with_sizes_copy": (lambda x, split_sizes, dim=0: x.split_with_sizes(split_sizes, dim),
                              "[t.numel() for t in clgrad.split_with_sizes_copy("
                              "clgrad.zeros(3), [1, 2])]", "[1, 2]"),
    "squeeze_copy": (lambda x, dim=None: x.squeeze() if dim is None else x.squeeze(dim),
                     "clgrad.squeeze_copy(clgrad.zeros(1, 2)).shape", "clgrad.Size([2])"),
    "t_copy": (lambda x: x.t(), "clgrad.t_copy(clgrad.zeros(2, 3)).shape", "clgrad.Size([3, 2])"),
    "transpose_copy": (lambda x, dim0, dim1: x.transpose(dim0, dim1),
                       "clgrad.transpose_copy(clgrad.zeros(2, 3), 0, 1).is_contiguous()", "True"),
    "unbind_copy": (lambda x, dim=0: x.unbind(dim),
                    "[t.tolist() for t in clgrad.unbind_copy(clgrad.eye(2))]",
                    "[[1.0, 0.0], [0.0, 1.0]]"),
    "unfold_copy": (lambda x, dimension, size, step: x.unfold(dimension, size, step),
                    "clgrad.unfold_copy(clgrad.arange(4.0), 0, 2, 2).tolist()",
                    "[[0.0, 1.0], [2.0, 3.0]]"),
    "unsqueeze_copy": (lambda x, dim: x.unsqueeze(dim),
                       "clgrad.unsqueeze_copy(clgrad.zeros(2), 0).shape", "clgrad.Size([1, 2])"),
    "view_as_real_copy": (lambda x: complexes.view_as_real(x),
                          "clgrad.view_as_real_copy(clgrad.tensor([1j])).tolist()",
                          "[[0.0, 1.0]]"),
    "view_as_complex_copy": (lambda x: complexes.view_as_complex(x),
                             "clgrad.view_as_complex_copy(clgrad.ones(1, 2)).tolist()",
                             "[(1+1j)]"),
    "view_copy": (lambda x, size: x.view(size) if isinstance(size, dtypes.dtype) else
                  x.view(*size) if isinstance(size, (tuple, list)) else x.view(size),
                  "clgrad.view_copy(clgrad.arange(4.0), [2, 2]).tolist()",
                  "[[0.0, 1.0], [2.0, 3.0]]"),
}


def _copy_op(name, view, example, result):
    def fn(input, *args, **kwargs):
        return _clone_all(view(input, *args, **kwargs))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{name[:-5]} as a new tensor (not a view): ATen's functional form.\n\n"
                  f"    >>> import clgrad\n    >>> {example}\n    {result}\n    ")
    return fn


for _name, _entry in _COPIES.items():
    globals()[_name] = _copy_op(_name, *_entry)
__all__ += list(_COPIES)


def unravel_index(indices, shape):
    """The coordinates in an array of `shape` of flat (C order) indices: a tuple of tensors.

    >>> import clgrad
    >>> [t.tolist() for t in clgrad.unravel_index(clgrad.tensor([5, 7]), (2, 4))]
    [[1, 1], [1, 3]]
    """
    if not isinstance(indices, Tensor):
        indices = creation.tensor(indices)
    if indices.dtype.kind not in "iu" or indices.dtype is dtypes.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    n = math.prod(shape)
    if indices.numel() and bool(((indices < -n) | (indices >= n)).any()):
        raise ValueError(f"unravel_index: index out of bounds for shape {list(shape)}")
    flat = indices.long() % n if n else indices.long()     # negative indices count from the end
    out = []
    for d in reversed(shape):
        out.append(flat % d)
        flat = flat // d
    return tuple(reversed(out))


def norm_except_dim(v, pow=2, dim=0):
    """The pow-norm of v over every dim except dim, keeping dims (weight_norm's g); dim=-1:
    over all of v.

    >>> import clgrad
    >>> n = clgrad.norm_except_dim(clgrad.full((2, 3), 2.0), 2, 0)
    >>> n.shape, [round(v, 4) for v in n.flatten().tolist()]
    (clgrad.Size([2, 1]), [3.4641, 3.4641])
    """
    if dim == -1:
        return vector_norm(v, pow)
    dims = tuple(d for d in builtins.range(v.ndim) if d != dim % v.ndim)
    return vector_norm(v, pow, dims, keepdim=True)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised tensor of `size` whose memory holds its dims in physical_layout order
    (physical_layout[0] outermost).

    >>> import clgrad
    >>> clgrad.empty_permuted((2, 3, 4), (0, 2, 1)).stride()
    (12, 1, 3)
    """
    size, perm = tuple(size), tuple(physical_layout)
    if sorted(perm) != list(builtins.range(len(size))):
        raise RuntimeError(f"empty_permuted: physical_layout {list(perm)} is not a permutation "
                           f"of the {len(size)} dims of size {list(size)}")
    base = creation.empty(*[size[p] for p in perm], dtype=dtype, device=device)
    inv = [perm.index(d) for d in builtins.range(len(size))]
    out = base.permute(*inv)
    return out.requires_grad_(True) if requires_grad else out


__all__ += ["unravel_index", "norm_except_dim", "empty_permuted"]




def nonzero_static(input, *, size, fill_value=-1):
    """nonzero with a fixed number of rows: the first `size` indices, padded with fill_value.

    >>> import clgrad
    >>> clgrad.nonzero_static(clgrad.tensor([0, 1, 0, 2]), size=3).flatten().tolist()
    [1, 3, -1]
    """
    nz = input.nonzero()
    k = nz.shape[0]
    if k >= size:
        return nz[:size].contiguous()
    pad = creation.full((size - k, nz.shape[1]), fill_value, dtype=nz.dtype, device=nz.device)
    return join.cat([nz, pad], 0)


__all__ += ["nonzero_static"]

FUNCTIONS = {n: globals()[n] for n in __all__}
METHODS = {"ldexp_": ldexp_, "nonzero_static": nonzero_static,
           "unsafe_chunk": _ALIAS_FNS["unsafe_chunk"],
           "unsafe_split": _ALIAS_FNS["unsafe_split"],
           "unsafe_split_with_sizes": _ALIAS_FNS["unsafe_split_with_sizes"]}
