"""The base class of clgrad.distributions' transforms (torch.distributions.transforms.Transform)
and the inverse that `Transform.inv` makes; the transforms themselves are in transforms.py.

>>> import clgrad
>>> from clgrad.distributions.transforms import ExpTransform
>>> t = ExpTransform(cache_size=1)
>>> x = clgrad.tensor([0.0]); y = t(x)
>>> t.inv(y) is x, t.inv.inv is t
(True, True)
"""
import weakref

from . import constraints


class Transform:
    """An invertible (or at least computable) map with `log_abs_det_jacobian`. `cache_size=1`
    remembers the last (x, y) pair so that inverting a sample costs nothing."""
    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        self._cache_size = cache_size
        self._inv = None
        if cache_size == 0:
            pass
        elif cache_size == 1:
            self._cached_x_y = None, None
        else:
            raise ValueError("cache_size must be 0 or 1")
        super().__init__()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        """The inverse Transform (y -> x)."""
        inv = None
        if self._inv is not None:
            inv = self._inv()
        if inv is None:
            inv = self._make_inverse()
            self._inv = weakref.ref(inv)
        return inv

    def _make_inverse(self):
        """A new inverse of this transform (`inv` keeps a weak reference to it)."""
        return _InverseTransform(self)

    @property
    def sign(self):
        """+1 or -1: whether the (monotone, elementwise) transform increases or decreases."""
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        """This transform with a cache of `cache_size` (itself when it has one of that size)."""
        if self._cache_size == cache_size:
            return self
        return self._with_cache(cache_size)

    def _with_cache(self, cache_size):
        """A copy of this transform with a cache of `cache_size`: subclasses whose __init__
        takes arguments make it from them."""
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    def __call__(self, x):
        return self._through_cache(x, 0, self._call)

    def _inv_call(self, y):
        return self._through_cache(y, 1, self._inverse)

    def _through_cache(self, value, side, fn):
        """fn(value), where `value` is an x (side 0) or a y (side 1): with a cache, the other
        member of the last pair when `value` is that pair's, and the new pair kept."""
        if self._cache_size == 0:
            return fn(value)
        if value is self._cached_x_y[side]:
            return self._cached_x_y[1 - side]
        out = fn(value)
        self._cached_x_y = (value, out) if side == 0 else (out, value)
        return out

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """log |dy/dx| at the pair (x, y = self(x))."""
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__ + "()"

    def forward_shape(self, shape):
        """The shape of y for an x of `shape`."""
        return shape

    def inverse_shape(self, shape):
        """The shape of x for a y of `shape`."""
        return shape


class _InverseTransform(Transform):
    """The inverse of a transform, made by `transform.inv`."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __repr__(self):
        return f"{self.__class__.__name__}({repr(self._inv)})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)
