"""The random family (cl_kernels/random.mako): counter-based Philox-4x32-10 draws. Element i of a
draw is a function of (seed, offset + i) only, so the same seed gives the same numbers on every
device and vendor; the generator (clgrad.Generator, in the ops layer) hands out the seed and the
counter offset. Raw launches: no autograd.

>>> import clgrad
>>> from clgrad import dtypes
>>> dev = clgrad.runtime.default_device()
>>> a = draw_raw("uniform", clgrad.empty(4), 7, 0, 0.0, 1.0)
>>> b = draw_raw("uniform", clgrad.empty(2, 2).t(), 7, 0, 0.0, 1.0)   # a strided view
>>> a.tolist() == b.flatten().tolist(), all(0 <= v < 1 for v in a.tolist())
(True, True)
>>> random_bits_raw(3, 7, 0, dev).dtype
clgrad.int32
"""
from .. import dtypes
from ..dtypes import ALL as ALL_DTYPES
from ..tensor import empty_tensor, numel_of
from ..runtime.family import KernelFamily
from .copy import copy_into

RANDOM = KernelFamily("random", lambda dt: dict(dt=dt), ALL_DTYPES)


def draw_raw(kernel, t, seed, offset, *params):
    """Fill t (any strides) with draws of kernel `kernel` (uniform, normal, bernoulli, randint)
    at Philox counters offset, offset + 1, ... in t's row-major order; `params` are the
    distribution's."""
    n = numel_of(t._shape)
    if n == 0:
        return t
    dev = t._storage.device
    if t._contig:
        RANDOM.launch(dev, t._dtype, kernel, n, t, n, seed, offset, *params)
    else:
        tmp = empty_tensor(t._shape, t._dtype, dev)
        RANDOM.launch(dev, t._dtype, kernel, n, tmp, n, seed, offset, *params)
        copy_into(t, tmp)
    return t


def random_bits_raw(n, seed, offset, dev):
    """n random 32-bit words (an int32 tensor; read them as uint32) at counters offset...:
    randperm's sort keys."""
    bits = empty_tensor((n,), dtypes.int32, dev)
    RANDOM.launch(dev, dtypes.int32, "random_bits", n, bits._storage.buf, n, seed, offset)
    return bits
