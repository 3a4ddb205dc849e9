"""ExponentialFamily (torch.distributions.exp_family): distributions whose density is
p(x; theta) = exp(<t(x), theta> - F(theta) + k(x)); their entropy follows from the log
normalizer F by a Bregman divergence, computed with autograd.

>>> import clgrad
>>> from clgrad.distributions import Exponential
>>> d = Exponential(clgrad.tensor([2.0]))
>>> abs(ExponentialFamily.entropy(d).item() - d.entropy().item()) < 1e-6
True
"""
import clgrad

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Subclasses define _natural_params, _log_normalizer(*natural_params) and
    _mean_carrier_measure."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """Entropy by the Bregman divergence of the log normalizer."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        with clgrad.enable_grad():
            lg_normal = self._log_normalizer(*nparams)
            gradients = clgrad.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients):
            result = result - (np_ * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
