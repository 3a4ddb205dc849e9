"""torch's top-level functions that are another op in another form, composed of it: a Tensor
method called as a function (the in-place forms `clgrad.clamp_(x, ...)`, `ldexp_`, predicates
such as `is_complex`, the `unsafe_*` splits), ATen's `*_copy` forms of the view ops (the view,
then a copy), nonzero with a fixed size (`nonzero_static`), the deprecated names of the norms
that ATen keeps (`frobenius_norm`, `nuclear_norm`, `norm_except_dim`) and torch's predicates on
objects (`is_storage`, `is_distributed`). torch's other creation functions are in
clgrad/ops/creation_forms.py.

No new kernels: each is written in clgrad ops, so what is differentiable in torch differentiates
here through those ops.
"""
import numbers

from .. import dtypes
from ..runtime.memory import Storage
from ..tensor import Tensor
from . import complexes, creation, join
from .copies import Clone
from .linalg_lu import matrix_norm, vector_norm

__all__ = ["frobenius_norm", "nuclear_norm", "is_storage", "is_distributed", "ldexp_"]


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
    dims = tuple(d for d in range(v.ndim) if d != dim % v.ndim)
    return vector_norm(v, pow, dims, keepdim=True)


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


__all__ += ["norm_except_dim", "nonzero_static"]

FUNCTIONS = {n: globals()[n] for n in __all__}
METHODS = {"ldexp_": ldexp_, "nonzero_static": nonzero_static,
           "unsafe_chunk": _ALIAS_FNS["unsafe_chunk"],
           "unsafe_split": _ALIAS_FNS["unsafe_split"],
           "unsafe_split_with_sizes": _ALIAS_FNS["unsafe_split_with_sizes"]}
