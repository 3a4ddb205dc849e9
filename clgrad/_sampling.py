"""Samplers with rejection loops, as torch's: clgrad.poisson, clgrad.binomial and
clgrad._standard_gamma (the Gamma, Beta, Dirichlet, Chi2 and StudentT draws of
clgrad.distributions), with torch's _standard_gamma_grad.

The draws are made on the device by the random family's kernels (cl_kernels/random.mako):
element i takes the numbers of Philox counter offset + i (one counter per element is taken from
the generator, as rand takes), its k-th draw from stream k + 1 of that counter, so
`clgrad.manual_seed` (or a `generator=`) gives the same samples on every device. Gamma is
Marsaglia and Tsang's method, Poisson Hormann's PTRS (rates of 10 and more) or a product of
uniforms, Binomial Hormann's BTRS (count * p of 10 and more) or geometric waiting times; every
loop is bounded far beyond what its acceptance rate needs.
"""
from .autograd.function import Function
from .ops.creation import default_generator
from .kernels.random import sampler_raw
from .ops._base import broadcast_shapes
from .tensor import Tensor

__all__ = ["poisson", "binomial"]


def _broadcast(*ts):
    shape = broadcast_shapes(*[t.shape for t in ts])
    return [t.detach().expand(shape) for t in ts]


def _sample(kernel, params, generator):
    seed, off = (generator or default_generator).take(params[0].numel())
    return sampler_raw(kernel, [p.detach() for p in params], seed, off)


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
    """A tensor of Poisson samples, one for each rate in `input` (float; rates >= 0),
    drawn on the device from clgrad's generator (see the module).

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
    if bool(((input < 0) | input.isnan()).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return _finish(_sample("poisson", [input], generator), [input])


def binomial(count, prob, generator=None):
    """Binomial samples: the number of successes in `count` trials of probability `prob`
    (float tensors of one dtype, broadcast together), drawn on the device from clgrad's
    generator (see the module). Unlike torch, whose result is
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
    n, p = _broadcast(count, prob)
    if bool(((p < 0) | (p > 1) | p.isnan()).any()):
        raise RuntimeError("binomial: expected every prob in [0, 1]")
    if bool(((n < 0) | ~n.isfinite()).any()):
        raise RuntimeError("binomial: expected every count to be finite and non-negative")
    return _finish(_sample("binomial", [n, p], generator), [count, prob])


class _StandardGamma(Function):
    """Gamma(alpha, 1) draws, reparameterised: the gradient flows to alpha through the sample
    held at its quantile (d x / d alpha = _standard_gamma_grad(alpha, x))."""

    @staticmethod
    def forward(ctx, alpha, generator):
        x = _sample("standard_gamma", [alpha], generator)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * _standard_gamma_grad(alpha, x), None


def _standard_gamma(input, generator=None):
    """Draws of Gamma(concentration=input, rate=1), one per element (torch._standard_gamma);
    differentiable in `input` by implicit reparameterisation, as torch's.

    >>> import clgrad
    >>> a = clgrad.full((4,), 2.5, dtype=clgrad.float64, requires_grad=True)
    >>> x = clgrad._standard_gamma(a); x.sum().backward()
    >>> bool((x > 0).all()), bool((a.grad > 0).all())
    (True, True)
    """
    if not input.is_floating_point():
        raise NotImplementedError(f"\"gamma\" not implemented for '{input.dtype.name}'")
    if input.requires_grad:
        return _StandardGamma.apply(input, generator)
    return _sample("standard_gamma", [input], generator)


def _standard_gamma_grad(self, output):
    """d output / d self for output = _standard_gamma(self) held at its quantile:
    -(d/dalpha cdf(x; alpha)) / pdf(x; alpha), torch's three-region approximation (series for
    x < 0.8, Rice's saddle point for alpha > 8, a rational fit between). Not differentiable.

    >>> import clgrad
    >>> round(clgrad._standard_gamma_grad(clgrad.tensor([2.0]), clgrad.tensor([2.0])).item(), 3)
    1.086
    """
    a, x = _broadcast(self, output)
    return sampler_raw("standard_gamma_grad", [a, x.to(a.dtype)])
