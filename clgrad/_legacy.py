"""torch's legacy tensor types: `clgrad.LongTensor([1, 2])`, `clgrad.FloatTensor(2, 3)`,
`isinstance(x, clgrad.FloatTensor)`, and the same under `clgrad.cuda` for GPUs.

They make tensors on the default device (torch's make them on its CPU; clgrad's default device is
a GPU when there is one, and mixing devices in one op is an error, so the default is the
choice that lets a ported program run). `isinstance` checks the dtype, and for the `cuda` types
also that the tensor is on a GPU.

>>> import clgrad
>>> x = clgrad.LongTensor([1, 2])
>>> x.dtype, isinstance(x, clgrad.LongTensor), isinstance(x, clgrad.FloatTensor)
(clgrad.int64, True, False)
>>> clgrad.FloatTensor(2, 3).shape
clgrad.Size([2, 3])
"""
import numbers

from . import dtypes
from .tensor import Tensor, Size
from .ops import creation

NAMES = {"FloatTensor": dtypes.float32, "DoubleTensor": dtypes.float64,
         "HalfTensor": dtypes.float16, "BFloat16Tensor": dtypes.bfloat16,
         "IntTensor": dtypes.int32, "LongTensor": dtypes.int64, "ByteTensor": dtypes.uint8,
         "CharTensor": dtypes.int8, "ShortTensor": dtypes.int16,
         "BoolTensor": dtypes.bool_}


class _LegacyType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and \
            (not cls.is_cuda or obj.is_cuda)

    def __call__(cls, *args, device=None):
        """XTensor(data) copies data, XTensor(*sizes) or XTensor(clgrad.Size) is uninitialised,
        XTensor(tensor) converts."""
        device = device if device is not None else ("cuda" if cls.is_cuda else None)
        if len(args) == 1 and isinstance(args[0], Tensor):
            return args[0].to(dtype=cls.dtype, device=device)
        if len(args) == 1 and isinstance(args[0], Size):
            args = tuple(args[0])
        if len(args) == 1 and not isinstance(args[0], numbers.Number):
            return creation.tensor(args[0], dtype=cls.dtype, device=device)
        return creation.empty(*(args or (0,)), dtype=cls.dtype, device=device)


def _make(name, dt, cuda):
    return _LegacyType(name, (), {"dtype": dt, "is_cuda": cuda, "__module__": "clgrad.cuda"
                                  if cuda else "clgrad",
                                  "__doc__": f"Legacy constructor of {dt} tensors"
                                             f"{' on a GPU' if cuda else ''}."})


CPU_TYPES = {n: _make(n, dt, False) for n, dt in NAMES.items()}
CUDA_TYPES = {n: _make(n, dt, True) for n, dt in NAMES.items()}
