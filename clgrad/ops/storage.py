"""torch.Tensor's methods on a tensor's storage, layout and memory rather than its values: the
legacy constructors (new, new_empty_strided), resizing (resize_, resize_as_ and the deprecated
out-of-place forms), set_, as_subclass, is_set_to, dim_order, the host maps (apply_, map_,
map2_: torch's CPU-only element callbacks, run on the host), and the memory methods that have
nothing to do on an OpenCL device (pin_memory, share_memory_, record_stream, ...).
"""
import builtins

from ..kernels.index import copy_raw
from ..tensor import (
    Tensor, contiguous_strides, empty_tensor, is_contiguous_layout, alias, layout_of)
from .creation import empty, tensor as _tensor
from ._base import view_raw
from .inplace import copy_
from ..autograd.grad_mode import no_grad


def _same(self):
    return self


def _false(self):
    return False


def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (by stride, then by position), as
    torch's Tensor.dim_order.

    >>> import clgrad
    >>> clgrad.zeros(2, 3, 4).permute(2, 0, 1).dim_order()
    (1, 2, 0)
    """
    st = self.stride()
    return tuple(sorted(range(self.dim()), key=lambda d: -st[d]))


def resize(self, *sizes):
    """torch's deprecated out-of-place resize: a reshape that keeps the number of elements.

    >>> import clgrad, warnings
    >>> with warnings.catch_warnings(record=True):
    ...     clgrad.arange(6.0).resize(2, 3).shape
    clgrad.Size([2, 3])
    """
    import math
    import warnings
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    sizes = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    n = math.prod(sizes)
    if n != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({n} elements in "
                           f"total), but the given tensor has a size of "
                           f"{'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           f"autograd's resize can only change the shape of a given tensor, "
                           f"while preserving the number of elements.")
    return self.reshape(sizes)


def resize_as(self, tensor):
    """torch's deprecated out-of-place resize_as: resize to tensor's shape."""
    import warnings
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resize(self, tuple(tensor.shape))


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make self a view of source's storage: of the tensor source itself, or (with offset, size
    and stride) of the part of its storage they describe; no argument: an empty tensor. Not for
    tensors that require grad (as torch, autograd does not see it).

    >>> import clgrad
    >>> x = clgrad.arange(6.0); y = clgrad.zeros(2)
    >>> y.set_(x, 1, (2,), (2,)).tolist()
    [1.0, 3.0]
    """
    if source is None:
        source = empty_tensor((0,), self._dtype, self._storage.device)
    if not isinstance(source, Tensor):
        raise TypeError(f"set_(): expected a Tensor as source, got {type(source).__name__}")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"Could not set tensor of type {self._dtype} to a tensor of type "
                           f"{source._dtype}")
    if self.requires_grad:
        raise RuntimeError("set_ is not allowed on a Tensor that requires grad")
    if size is None:
        shape, strides, offset = source._shape, source._strides, source._offset
    else:
        shape = tuple(size)
        strides = tuple(stride) if stride is not None else contiguous_strides(shape)
        offset = storage_offset
    self._storage, self._shape, self._strides, self._offset = source._storage, shape, strides, \
        offset
    self._contig = is_contiguous_layout(shape, strides)
    self._vc = source._vc
    return self


def as_subclass(self, cls):
    """This tensor's data (shared, no history) as an instance of the Tensor subclass cls."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): expected a Tensor subclass, got {cls!r}")
    out = alias(self)
    out.__class__ = cls
    return out


def is_set_to(self, tensor):
    """Whether both tensors view the same storage with the same offset, shape and strides."""
    return (self._storage is tensor._storage and self._offset == tensor._offset and
            tuple(self.shape) == tuple(tensor.shape) and self.stride() == tensor.stride())


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                      **kw):
    """An uninitialised tensor with the given size and strides (elements)."""
    span = 1 + builtins.sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    base = empty(span, dtype=dtype or self.dtype, device=device or self.device)
    out = base.as_strided(tuple(size), tuple(stride))
    return out.requires_grad_(requires_grad) if requires_grad else out


def new(self, *args, device=None):
    """The legacy constructor: x.new(sizes...) an uninitialised tensor of x's dtype and device,
    x.new(data) a tensor of data, x.new() an empty one.

    >>> import clgrad
    >>> clgrad.zeros(2).new(3, 4).shape
    clgrad.Size([3, 4])
    """
    dev = device or self.device
    if len(args) == 1 and not isinstance(args[0], int):
        a = args[0]
        if isinstance(a, Tensor):
            return a.to(dev)
        if isinstance(a, tuple) and all(isinstance(n, int) for n in a) and \
                type(a).__name__ == "Size":
            return empty(*a, dtype=self.dtype, device=dev)
        return _tensor(a, dtype=self.dtype, device=dev)
    return empty(*args, dtype=self.dtype, device=dev) if args else \
        empty(0, dtype=self.dtype, device=dev)


def resize_(self, *sizes, memory_format=None):
    """Give self the shape `sizes` (contiguous) in place: its first elements keep their values;
    new ones are uninitialised. The storage is replaced when it is too small.

    >>> import clgrad
    >>> clgrad.arange(6.0).resize_(2, 2)
    tensor([[0., 1.],
            [2., 3.]])
    """
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = tuple(sizes[0])
    sizes = tuple(int(n) for n in sizes)
    if any(n < 0 for n in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(sizes)}")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    n, strides = layout_of(sizes)
    itemsize = self.dtype.itemsize
    if (self._offset + n) * itemsize > self._storage.nbytes:
        # the old storage's elements from the offset on keep their values, as torch grows a
        # storage
        keep = min(n, self._storage.nbytes // itemsize - self._offset)
        new = empty_tensor(sizes, self._dtype, self._storage.device)
        if keep > 0:
            copy_raw(view_raw(new, (keep,), (1,), 0), view_raw(self, (keep,), (1,), self._offset))
        self._storage, self._offset = new._storage, 0
    self._shape, self._strides = sizes, strides
    self._contig = True
    return self


def resize_as_(self, the_template, memory_format=None):
    """resize_ to the_template's shape."""
    return resize_(self, tuple(the_template.shape))


def _host_map(self, name, fn, others):
    """Apply fn to each element on the host (after the others are broadcast to self's shape) and
    write the results back into self, as torch's CPU-only apply_ / map_ / map2_."""
    import numpy as np
    if not callable(fn):
        raise TypeError(f"'{type(fn).__name__}' object is not callable")
    if self.requires_grad and self.is_leaf:
        raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an "
                           f"in-place operation.")
    vals = [self.numpy()] + [np.broadcast_to(o.numpy(), tuple(self.shape)) for o in others]
    out = np.empty(vals[0].shape, vals[0].dtype)
    for i in np.ndindex(out.shape):
        out[i] = fn(*(v[i].item() for v in vals))
    with no_grad():
        copy_(self, _tensor(out, dtype=self.dtype, device=self.device))
    return self


def apply_(self, callable):
    """Replace each element x by callable(x), on the host (slow: for small tensors).

    >>> import clgrad
    >>> clgrad.tensor([1.0, 2.0]).apply_(lambda x: x * 10)
    tensor([10., 20.])
    """
    return _host_map(self, "apply_", callable, ())


def map_(self, tensor, callable):
    """Replace each element x by callable(x, y), y the element of `tensor` (broadcast).

    >>> import clgrad
    >>> clgrad.tensor([1.0, 2.0]).map_(clgrad.tensor([3.0, 4.0]), lambda x, y: x * y)
    tensor([3., 8.])
    """
    return _host_map(self, "map_", callable, (tensor,))


def map2_(self, x, y, callable):
    """Replace each element a by callable(a, b, c) with b, c the elements of x and y."""
    return _host_map(self, "map2_", callable, (x, y))


METHODS = {
    "new": new, "new_empty_strided": new_empty_strided, "resize_": resize_,
    "resize_as_": resize_as_, "resize": resize, "resize_as": resize_as, "set_": set_,
    "as_subclass": as_subclass, "is_set_to": is_set_to, "dim_order": dim_order,
    "apply_": apply_, "map_": map_, "map2_": map2_,
    "pin_memory": lambda self, device=None: self, "is_pinned": lambda self, device=None: False,
    "share_memory_": _same, "is_shared": _false,
    "const_data_ptr": lambda self: self.data_ptr(),
    # the stream a tensor is used on is each device's one in-order queue: nothing to record
    "record_stream": lambda self, stream: None,
    "module_load": lambda self, other, assign=False: other,
}
