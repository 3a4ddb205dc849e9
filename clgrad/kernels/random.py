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
>>> g = sampler_raw("standard_gamma", [clgrad.full((3,), 2.0)], 7, 0)
>>> bool((g > 0).all()), sampler_raw("standard_gamma_grad", [clgrad.full((3,), 2.0), g]).shape
(True, clgrad.Size([3]))
"""
from .. import dtypes
from ..dtypes import ALL as ALL_DTYPES
from ..tensor import empty_tensor, numel_of
from ..runtime.family import KernelFamily
from .copy import contiguous_raw, copy_into

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


def sampler_raw(kernel, params, seed=None, offset=None):
    """One value per element of the parameter tensors `params` (float, of one shape, dtype and
    device): the rejection samplers standard_gamma (alpha), poisson (rate) and binomial (count,
    prob of at most 1/2), which take draw k of element i from Philox stream k + 1 at counter
    offset + i, given `seed` and `offset`; or standard_gamma_grad (alpha, sample), which draws
    nothing. A new contiguous tensor."""
    ref = params[0]
    n = numel_of(ref._shape)
    dev = ref._storage.device
    out = empty_tensor(ref._shape, ref._dtype, dev)
    if n == 0:
        return out
    dense = [contiguous_raw(p) for p in params]   # kept in names until the launch
    extra = () if seed is None else (seed, offset)
    RANDOM.launch(dev, ref._dtype, kernel, n, out, *dense, n, *extra)
    return out
