"""Poisson and binomial sampling (clgrad.poisson, clgrad.binomial), as torch's.

The draws are exact and made on the host: numpy's generator, seeded from clgrad's Philox
stream (its seed and the offset it has reached, which advances by one number per element),
draws the samples, and they are uploaded to the input's device. So `clgrad.manual_seed` (or a
`generator=`) makes them reproducible on every device, and the draws after them move on. (A
device kernel needs rejection loops that the existing elementwise random kernels do not have.)
"""
import numpy as np

from .autograd.function import Function
from .ops.creation import default_generator, tensor
from .tensor import Tensor

__all__ = ["poisson", "binomial"]


def _host_rng(generator, n):
    seed, off = (generator or default_generator).take(n)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, off, 0x5A4D])))


def _host(t):
    t = t.detach()
    return (t if t.dtype.itemsize == 8 else t.float()).numpy().astype(np.float64)


class _Sampled(Function):
    """A sample as a function of its parameters: its gradient is zero (torch's PoissonBackward
    and binomial's have none to give)."""

    @staticmethod
    def forward(ctx, values, *params):
        ctx.shapes = [p.shape for p in params]
        return values

    @staticmethod
    def backward(ctx, grad):
        return (None,) + tuple(grad.new_zeros(s) for s in ctx.shapes)


def _finish(values, params):
    if any(p.requires_grad for p in params):
        return _Sampled.apply(values, *params)
    return values


def poisson(input, generator=None):
    """A tensor of Poisson samples, one for each rate in `input` (float; rates >= 0). Exact
    draws on the host from numpy's generator, seeded from clgrad's generator (see the module).

    >>> import clgrad
    >>> _ = clgrad.manual_seed(0)
    >>> x = clgrad.poisson(clgrad.full((4,), 3.0))
    >>> x.dtype, x.shape, bool((x >= 0).all()), bool((x == x.round()).all())
    (clgrad.float32, clgrad.Size([4]), True, True)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"poisson(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"poisson\" not implemented for '{input.dtype.name}'")
    rates = _host(input)
    if np.isnan(rates).any() or (rates < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    rng = _host_rng(generator, rates.size)
    finite = np.isfinite(rates)
    out = np.full(rates.shape, np.inf)
    out[finite] = rng.poisson(rates[finite])
    values = tensor(out, dtype=input.dtype, device=input.device)
    return _finish(values, [input])


def binomial(count, prob, generator=None):
    """Binomial samples: the number of successes in `count` trials of probability `prob`
    (float tensors of one dtype, broadcast together). Exact draws on the host from numpy's
    generator, seeded from clgrad's generator (see the module). Unlike torch, whose result is
    undefined there, a probability outside [0, 1] or a negative count raises RuntimeError.

    >>> import clgrad
    >>> _ = clgrad.manual_seed(0)
    >>> clgrad.binomial(clgrad.tensor([5.0, 0.0, 7.0]), clgrad.tensor([1.0, 0.5, 0.0])).tolist()
    [5.0, 0.0, 0.0]
    """
    for name, t in (("count", count), ("prob", prob)):
        if not isinstance(t, Tensor):
            raise TypeError(f"binomial(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
        if not t.is_floating_point():
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{t.dtype.name.capitalize()}")
    if count.dtype != prob.dtype:
        raise RuntimeError(f"Found dtype {prob.dtype.name.capitalize()} but expected "
                           f"{count.dtype.name.capitalize()}")
    n = _host(count)
    p = _host(prob)
    n, p = np.broadcast_arrays(n, p)
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise RuntimeError("binomial: expected every prob in [0, 1]")
    if np.isnan(n).any() or (n < 0).any() or np.isinf(n).any():
        raise RuntimeError("binomial: expected every count to be finite and non-negative")
    rng = _host_rng(generator, n.size)
    out = rng.binomial(np.floor(n).astype(np.int64), p).astype(np.float64)
    values = tensor(out, dtype=count.dtype, device=count.device)
    return _finish(values, [count, prob])
