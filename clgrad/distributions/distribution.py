"""The base class of clgrad.distributions: torch.distributions.Distribution.

>>> import clgrad
>>> from clgrad.distributions import Normal
>>> d = Normal(clgrad.zeros(3), 1.0)
>>> d.batch_shape, d.event_shape, d.sample((2,)).shape
(clgrad.Size([3]), clgrad.Size([]), clgrad.Size([2, 3]))
"""
import warnings

import clgrad

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


def _size(*parts):
    """One clgrad.Size from shapes (tuples, lists or Sizes) joined end to end."""
    out = ()
    for p in parts:
        out += tuple(p)
    return clgrad.Size(out)


class Distribution:
    """Distribution is the abstract base class for probability distributions: a batch of
    independent distributions (batch_shape) over events of event_shape."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Sets whether validation is enabled or disabled by default (torch's default: enabled
        unless Python runs with -O)."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = _size(batch_shape)
        self._event_shape = _size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.")
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # skip constraints that cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                             lazy_property):
                    continue  # skip checking lazily-constructed args
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {repr(self)} to satisfy the "
                        f"constraint {repr(constraint)}, but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A new distribution with its batch dims expanded to batch_shape (no copy of the
        parameters: they are expanded views)."""
        raise NotImplementedError

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        """A dict from argument names to the Constraint each must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The Constraint of the distribution's values."""
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """A sample of shape sample_shape + batch_shape + event_shape (no gradient)."""
        with clgrad.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised sample: differentiable in the parameters."""
        raise NotImplementedError

    def sample_n(self, n):
        """n samples (deprecated in torch for sample((n,)))."""
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning)
        return self.sample(_size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return clgrad.exp(self.entropy())

    def _extended_shape(self, sample_shape=()):
        """sample_shape + batch_shape + event_shape."""
        if not isinstance(sample_shape, clgrad.Size):
            sample_shape = _size(sample_shape)
        return _size(sample_shape, self._batch_shape, self._event_shape)

    def _validate_sample(self, value):
        """Raises ValueError (torch's messages) when `value` does not fit the event shape,
        does not broadcast with the batch, or lies outside the support."""
        if not isinstance(value, clgrad.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if tuple(value.size()[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = _size(self._batch_shape, self._event_shape)
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.")
            return
        assert support is not None
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) to be within the support ({repr(support)}) of the "
                f"distribution {repr(self)}, but found invalid values:\n{value}")

    def _expand_params(self, cls, batch_shape, _instance, names):
        """expand()'s common body: a new instance of `cls` whose parameters `names` (those
        present) are views expanded to batch_shape plus their own event dims."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = _size(batch_shape)
        nb = len(self._batch_shape)
        for name in names:
            if name in self.__dict__:
                p = getattr(self, name)
                setattr(new, name, p.expand(_size(batch_shape, p.shape[nb:])))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        param_names = [k for k, _ in self.arg_constraints.items() if k in self.__dict__]
        def show(t):   # torch's Tensor.__format__ gives a 0-d tensor as its number
            return (t.item() if t.dim() == 0 else t) if t.numel() == 1 else t.size()
        args_string = ", ".join(f"{p}: {show(self.__dict__[p])}" for p in param_names)
        return self.__class__.__name__ + "(" + args_string + ")"
