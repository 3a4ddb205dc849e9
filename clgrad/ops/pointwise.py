"""The public elementwise functions with torch's signatures, and their in-place forms, over the
table in elementwise.py."""
import builtins
import numbers

from .. import dtypes
from ..autograd.grad_mode import state as _grad_state
from ..autograd.op import Op
from ..tensor import Tensor
from .elementwise import OPS, TABLE, apply_ew, compute_dtype, run, _check_bool_sub
from ._base import broadcast_shapes, check_fits, check_inplace_overlap, full_raw
from .inplace import apply_inplace
from .reduce import all as _all
from .creation import full, full_like
from .scatter_gather import nonzero

_NUMBER = (numbers.Number,)


def _check_operand(op, v):
    if not isinstance(v, (Tensor, numbers.Number)):
        raise TypeError(f"{op}(): argument 'other' must be Tensor or Number, not "
                        f"{type(v).__name__}")


_apply = apply_ew


def _cast_error(result, out):
    """torch's error for an in-place op whose result type does not fit the tensor written."""
    return RuntimeError(f"result type {dtypes.TORCH_NAMES[result]} can't be cast to the desired "
                        f"output type {dtypes.TORCH_NAMES[out]}")


def inplace(name, self, operands, params=()):
    """self <- entry(self, *operands, *params) in place."""
    e = TABLE[name]
    ops_ = (self,) + tuple(operands)
    # torch lets masked_fill_ write expanded tensors (deprecated, with a warning)
    check_inplace_overlap(self, operands, internal=name != "masked_fill")

    def fast():
        cdt = compute_dtype(e, ops_)
        if e.out == "bool":
            return False
        if not dtypes.can_cast(cdt, self._dtype):
            raise _cast_error(cdt, self._dtype)
        if not self._contig or cdt is not self._dtype:
            return False
        for a in operands:
            if isinstance(a, Tensor):
                if a._storage is self._storage and (a._offset != self._offset or
                                                     a._strides != self._strides):
                    return False          # overlapping input: go through a temporary
                if a._shape != self._shape and broadcast_shapes(a._shape, self._shape) != self._shape:
                    return False          # let the generic path raise torch's error
        run(e, ops_, params, out=self, cdt=cdt)
        return True
    return apply_inplace(OPS[name], self, *operands, *params, fast=fast, name=name + "_")


# ---- unary -----------------------------------------------------------------------------------
def _make_unary(name, doc_example=None):
    def f(input):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                            f"{type(input).__name__}")
        return _apply(name, input)

    def f_(self):
        return inplace(name, self, ())
    f.__name__ = name
    f.__doc__ = f"Elementwise {name}." + (f"\n\n    {doc_example}\n" if doc_example else "")
    f_.__name__ = name + "_"
    f_.__doc__ = f"In-place {name}."
    return f, f_


_UNARY = ["neg", "abs", "sign", "floor", "ceil", "trunc", "round_", "frac", "exp", "exp2",
          "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin",
          "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc",
          "lgamma", "digamma",
          "sigmoid", "reciprocal", "relu", "square", "logical_not", "isnan", "isinf", "isfinite",
          "signbit", "bitwise_not", "sgn", "angle"]

FUNCTIONS = {}
METHODS = {}
for _n in _UNARY:
    _name = _n.rstrip("_")
    _f, _f_ = _make_unary(_name)
    FUNCTIONS[_name] = _f
    METHODS[_name] = _f
    if TABLE[_name].out != "bool":
        FUNCTIONS[_name + "_"] = _f_
        METHODS[_name + "_"] = _f_

for _alias, _target in {"negative": "neg", "absolute": "abs", "arcsin": "asin", "arccos": "acos",
                        "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
                        "arctanh": "atanh", "fix": "trunc"}.items():
    FUNCTIONS[_alias] = FUNCTIONS[_target]
    METHODS[_alias] = METHODS[_target]
    FUNCTIONS[_alias + "_"] = FUNCTIONS[_target + "_"]
    METHODS[_alias + "_"] = METHODS[_target + "_"]


del FUNCTIONS["angle_"], METHODS["angle_"]          # torch has no angle_


def conj(input):
    """The complex conjugate: a new tensor for a complex input (clgrad has no lazy conjugate
    views: is_conj() stays False), the input itself for a real one, as torch.

    >>> import clgrad
    >>> clgrad.conj(clgrad.tensor([1 + 2j])).tolist()
    [(1-2j)]
    """
    if input._dtype.kind != "c":
        return input
    return _apply("conj", input)


def conj_physical_(self):
    """In-place conjugate (a no-op on a real tensor)."""
    if self._dtype.kind != "c":
        return self
    return inplace("conj", self, ())


FUNCTIONS.update(conj=conj, conj_physical=conj, conj_physical_=conj_physical_)
METHODS.update(conj=conj, conj_physical=conj, conj_physical_=conj_physical_)


def round(input, *, decimals=0):
    """Round half to even (to `decimals` places).

    >>> import clgrad
    >>> clgrad.round(clgrad.tensor([0.5, 1.5, 2.25]), decimals=1).tolist()
    [0.5, 1.5, 2.200000047683716]
    """
    if decimals == 0:
        return _apply("round", input)
    scale = 10.0 ** decimals
    return _apply("round", input * scale) / scale


def round_(self, *, decimals=0):
    if decimals == 0:
        return inplace("round", self, ())
    return self.copy_(round(self, decimals=decimals))


FUNCTIONS["round"] = METHODS["round"] = round
FUNCTIONS["round_"] = METHODS["round_"] = round_


# ---- binary ----------------------------------------------------------------------------------
def add(input, other, *, alpha=1, out=None):
    """input + alpha * other, broadcasting.

    >>> import clgrad
    >>> clgrad.add(clgrad.tensor([1, 2]), 10).tolist()
    [11, 12]
    """
    if type(alpha) is not int or alpha != 1:
        other = _times_alpha("add", input, other, alpha)
    return _out(_apply("add", input, other), out, input, other)


def sub(input, other, *, alpha=1, out=None):
    """input - alpha * other.

    >>> import clgrad
    >>> clgrad.sub(clgrad.tensor([5.0]), 2.0).tolist()
    [3.0]
    """
    if type(alpha) is not int or alpha != 1:
        other = _times_alpha("sub", input, other, alpha)
    return _out(_apply("sub", input, other), out, input, other)


def _times_alpha(op, input, other, alpha):
    """alpha * other for add / sub, with torch's checks of alpha. alpha takes no part in type
    promotion: the product is made in the dtype of input op other (a float64 0-d x minus an
    integer tensor times 0.5 is float64, as torch's, not the float32 of int_tensor * 0.5)."""
    if op == "sub":
        _check_bool_sub((input, other))
    dt = dtypes.result_type(input, other)
    if isinstance(alpha, bool) and dt is not dtypes.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if dt.kind != "f" and not isinstance(alpha, (bool, numbers.Integral)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if dt is dtypes.bool_:                      # bool + alpha * bool: alpha counts as a bool
        return other if alpha else (other & False)
    if not isinstance(other, Tensor):
        return other * alpha
    return other.to(dt) * alpha


def rsub(input, other, *, alpha=1):
    return sub(other, input, alpha=alpha)


def mul(input, other, *, out=None):
    """input * other.

    >>> import clgrad
    >>> clgrad.mul(clgrad.tensor([1.5, 2.0]), 2).tolist()
    [3.0, 4.0]
    """
    return _out(_apply("mul", input, other), out, input, other)


def div(input, other, *, rounding_mode=None, out=None):
    """input / other: true division, or rounded 'floor' or 'trunc'.

    >>> import clgrad
    >>> clgrad.div(clgrad.tensor([7, -7]), 2, rounding_mode="floor").tolist()
    [3, -4]
    """
    if rounding_mode is None:
        return _out(_apply("div", input, other), out, input, other)
    if rounding_mode not in ("floor", "trunc"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    return _out(RoundedDiv.apply(input, other, rounding_mode), out, input, other)


def _rounded_div(input, other, mode):
    if mode == "floor":
        return floor_divide(input, other)
    if dtypes.result_type(input, other).kind == "f":
        return _apply("trunc", _apply("div", input, other))
    q = floor_divide(input, other)
    r = _apply("remainder", input, other)
    fix = (r != 0).logical_and((input < 0).logical_xor(other < 0) if isinstance(other, Tensor)
                               else (input < 0) if other > 0 else (input >= 0))
    return q + fix.to(q.dtype)


class RoundedDiv(Op):
    """div with rounding_mode 'floor' or 'trunc'. Piecewise constant, so its gradient is zero;
    but as in torch the result requires grad when an input does, and backward through it gives
    zeros (floor_divide alone is not differentiable)."""
    _node_name = "DivBackward2"

    @staticmethod
    def forward(ctx, input, other, mode):
        return _rounded_div(input, other, mode)

    @staticmethod
    def backward(ctx, g):
        # an operand that needs a gradient is a tensor: input the first, other the last
        need = ctx.needs_input_grad
        return (g.new_zeros(ctx._in_meta[0][0]) if need[0] else None,
                g.new_zeros(ctx._in_meta[-1][0]) if need[1] else None, None)

    @staticmethod
    def jvp(args, tangents, out):
        return out.new_zeros(out.shape)


def _out(res, out, *inputs):
    """res, or res written into `out` (torch's overlap rules between out and the inputs)."""
    if out is None:
        return res
    check_inplace_overlap(out, inputs)
    out.copy_(res)
    return out


def _int_zero_check(op, input, other):
    """Integer division by zero: torch raises on the CPU; do the same rather than return
    garbage."""
    kind = dtypes.result_type(input, other).kind
    if kind not in "iu":
        return
    if isinstance(other, Tensor):
        if bool((other == 0).any()):
            raise ZeroDivisionError(f"{op}: integer division by zero")
    elif other == 0:
        raise ZeroDivisionError(f"{op}: integer division by zero")


def floor_divide(input, other, *, out=None):
    """Division rounded towards minus infinity, as Python's //.

    >>> import clgrad
    >>> clgrad.floor_divide(clgrad.tensor([7, -7]), 2).tolist()
    [3, -4]
    """
    _int_zero_check("floor_divide", input, other)
    return _out(_apply("floor_divide", input, other), out, input, other)


def remainder(input, other, *, out=None):
    """Python's modulo: the result has the sign of the divisor.

    >>> import clgrad
    >>> clgrad.remainder(clgrad.tensor([-3, 3]), 2).tolist()
    [1, 1]
    """
    _int_zero_check("remainder", input, other)
    return _out(_apply("remainder", input, other), out, input, other)


def fmod(input, other, *, out=None):
    """C's fmod: the result has the sign of the dividend."""
    _int_zero_check("fmod", input, other)
    return _out(_apply("fmod", input, other), out, input, other)


def pow(input, exponent, *, out=None):
    """input ** exponent (tensors or numbers).

    >>> import clgrad
    >>> clgrad.pow(clgrad.tensor([2.0, 3.0]), 2).tolist()
    [4.0, 9.0]
    """
    if isinstance(exponent, Tensor):
        if not isinstance(input, Tensor):
            dt = dtypes.result_type(input, exponent)
            if dt.kind == "f":
                return _out(OPS["rpow_scalar"].apply(exponent.to(dt), input), out, input, exponent)
            input = _full_like_number(input, exponent)
        return _out(_apply("pow", input, exponent), out, input, exponent)
    if not isinstance(exponent, numbers.Number):
        raise TypeError(f"pow(): exponent must be a Tensor or a number, not "
                        f"{type(exponent).__name__}")
    if isinstance(exponent, complex) and input._dtype.kind != "c":
        input = input.to(dtypes.result_type(input, exponent))     # a complex power
    elif input._dtype.kind in "iub" and isinstance(exponent, float):
        input = input.to(dtypes.get_default_dtype())
    elif input._dtype.kind in "iu" and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if exponent == 2 and input._dtype.kind != "b":
        return _out(_apply("square", input), out, input, exponent)
    return _out(_apply("pow_scalar", input, exponent), out, input, exponent)


def _full_like_number(v, ref):
    return full_raw((), v, dtypes.result_type(v, ref), ref._storage.device)


def float_power(input, exponent):
    input = input.to(dtypes.float64) if isinstance(input, Tensor) else input
    if isinstance(exponent, Tensor):
        exponent = exponent.to(dtypes.float64)
    return pow(input, exponent)


def atan2(input, other):
    """Angle of (other, input) in radians.

    >>> import clgrad
    >>> abs(clgrad.atan2(clgrad.tensor([1.0]), clgrad.tensor([1.0])).item() - 0.7853982) < 1e-6
    True
    """
    return _apply("atan2", input, other)


def maximum(input, other):
    """Elementwise maximum (NaN wins).

    >>> import clgrad
    >>> clgrad.maximum(clgrad.tensor([1, 5]), clgrad.tensor([3, 2])).tolist()
    [3, 5]
    """
    if not isinstance(other, Tensor):
        raise TypeError(f"maximum(): argument 'other' must be Tensor, not {type(other).__name__}")
    return _apply("maximum", input, other)


def minimum(input, other):
    """Elementwise minimum (NaN wins)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"minimum(): argument 'other' must be Tensor, not {type(other).__name__}")
    return _apply("minimum", input, other)


def fmax(input, other):
    return where(isnan(other), input, where(isnan(input), other, maximum(input, other)))


def fmin(input, other):
    return where(isnan(other), input, where(isnan(input), other, minimum(input, other)))


def copysign(input, other):
    return _apply("copysign", input, other)


def hypot(input, other):
    return _apply("hypot", input, other)


def _cmp(name):
    def f(input, other, *, out=None):
        if not isinstance(other, (Tensor, numbers.Number)):
            raise TypeError(f"{name}(): argument 'other' must be Tensor or Number, not "
                            f"{type(other).__name__}")
        return _out(_apply(name, input, other), out, input, other)
    f.__name__ = name
    f.__doc__ = f"Elementwise comparison {name}, as a bool tensor."
    return f


for _n in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
           "bitwise_right_shift"):
    FUNCTIONS[_n] = METHODS[_n] = _cmp(_n)
for _alias, _target in {"greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
                        "not_equal": "ne"}.items():
    FUNCTIONS[_alias] = METHODS[_alias] = FUNCTIONS[_target]


def _cmp_(name):
    def f_(self, other):
        res = _apply(name, self, other)
        return self.copy_(res)
    f_.__name__ = name + "_"
    return f_


for _n in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"):
    METHODS[_n + "_"] = _cmp_(_n)


def equal(input, other):
    """True when both tensors have the same shape and elements.

    >>> import clgrad
    >>> clgrad.equal(clgrad.tensor([1, 2]), clgrad.tensor([1, 2]))
    True
    """
    if input._shape != other._shape:
        return False
    return bool(_all(eq(input, other)).item())


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether |input - other| <= atol + rtol * |other| everywhere."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise |input - other| <= atol + rtol * |other| (infinities equal themselves)."""
    if not isinstance(other, Tensor):
        other = full((), other, dtype=input.dtype, device=input.device)
    dt = dtypes.promote_types(input._dtype, other._dtype)
    a, b = input.to(dt), other.to(dt)
    if dt.kind not in "fc":
        return eq(a, b)
    # an infinity is close only to itself: inf - (-inf) <= inf must not count
    finite = a.isfinite().logical_and(b.isfinite())
    close = ((a - b).abs() <= (b.abs() * rtol + atol)).logical_and(finite)
    close = close.logical_or(eq(a, b))
    if equal_nan:
        close = close.logical_or(isnan(a).logical_and(isnan(b)))
    return close


def lerp(input, end, weight):
    """input + weight * (end - input).

    >>> import clgrad
    >>> clgrad.lerp(clgrad.tensor([0.0]), clgrad.tensor([10.0]), 0.25).tolist()
    [2.5]
    """
    if isinstance(weight, Tensor):
        return _apply("lerp", input, end, weight)
    return _apply("lerp_scalar", input, end, weight)


def where(condition, input=None, other=None):
    """input where condition holds, else other (tensors or numbers, broadcasting).

    >>> import clgrad
    >>> c = clgrad.tensor([True, False])
    >>> clgrad.where(c, clgrad.tensor([1, 2]), 0).tolist()
    [1, 0]
    """
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError("where(): argument 'condition' must be Tensor")
    if condition._dtype is not dtypes.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {condition._dtype.name.capitalize()}")
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        ref = input if isinstance(input, Tensor) else other if isinstance(other, Tensor) else None
        if ref is None:                  # two numbers: torch's dtype for a pair of scalars
            kinds = {type(input), type(other)}
            dt = dtypes.bool_ if kinds == {bool} else dtypes.get_default_dtype() \
                if float in kinds else dtypes.int64
            dev = condition._storage.device
        else:
            dt = dtypes.result_type(input, other)
            dev = ref._storage.device
        if not isinstance(input, Tensor):
            input = full_raw((), input, dt, dev)
        if not isinstance(other, Tensor):
            other = full_raw((), other, dt, dev)
    return _apply("where", condition, input, other)


def clamp(input, min=None, max=None):
    """Limit values to [min, max] (numbers or tensors; NaN stays NaN).

    >>> import clgrad
    >>> clgrad.clamp(clgrad.tensor([-2.0, 0.5, 9.0]), 0, 1).tolist()
    [0.0, 0.5, 1.0]
    """
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        dt = dtypes.result_type(input, *[v for v in (min, max) if v is not None])
        x = input.to(dt)
        lo = min.to(dt) if isinstance(min, Tensor) else \
            full_like(x, float("-inf") if dt.kind == "f" else _int_min(dt)) if min is None else \
            full_like(x, min)
        hi = max.to(dt) if isinstance(max, Tensor) else \
            full_like(x, float("inf") if dt.kind == "f" else _int_max(dt)) if max is None else \
            full_like(x, max)
        return _apply("clamp_tensor", x, lo, hi)
    dt = dtypes.result_type(input, *[v for v in (min, max) if v is not None])
    x = input.to(dt) if dt is not input._dtype else input
    if min is None:
        return _apply("clamp_max", x, max)
    if max is None:
        return _apply("clamp_min", x, min)
    return _apply("clamp", x, min, max)


def _int_min(dt):
    return -(1 << (8 * dt.itemsize - 1)) if dt.kind == "i" else 0


def _int_max(dt):
    if dt.kind == "b":
        return 1
    return (1 << (8 * dt.itemsize - (dt.kind == "i"))) - 1


def clamp_(self, min=None, max=None):
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return self.copy_(clamp(self, min, max)) if not self._requires_grad else \
            _generic_inplace(self, clamp(self, min, max))
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if min is None:
        return inplace("clamp_max", self, (), (max,))
    if max is None:
        return inplace("clamp_min", self, (), (min,))
    return inplace("clamp", self, (), (min, max))


def _generic_inplace(self, result):
    return self.copy_(result)


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """Replace NaN, +inf and -inf by finite numbers (the dtype's extremes by default).

    >>> import clgrad
    >>> clgrad.nan_to_num(clgrad.tensor([float('nan'), 1.0])).tolist()
    [0.0, 1.0]
    """
    big = {dtypes.float32: 3.4028234663852886e38, dtypes.float64: 1.7976931348623157e308,
           dtypes.float16: 65504.0, dtypes.bfloat16: 3.3895313892515355e38}.get(
               input._dtype.real, 0)             # a complex dtype's: its parts'
    if input._dtype.kind == "c" and input._requires_grad and _grad_state.grad_enabled:
        # complex nan_to_num has no derivative in torch (each part is replaced apart)
        raise RuntimeError("nan_to_num does not support automatic differentiation for outputs "
                           "with complex dtype.")
    return _apply("nan_to_num", input, nan, big if posinf is None else posinf,
                  -big if neginf is None else neginf)


def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    return self.copy_(nan_to_num(self, nan, posinf, neginf))


def masked_fill(input, mask, value):
    """input with value where mask is True.

    >>> import clgrad
    >>> clgrad.masked_fill(clgrad.zeros(3), clgrad.tensor([True, False, True]), 5.0).tolist()
    [5.0, 0.0, 5.0]
    """
    if not isinstance(mask, Tensor) or mask._dtype is not dtypes.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if isinstance(value, Tensor):
        if value._shape != ():
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {len(value._shape)} dimension(s).")
        if value._requires_grad or input._requires_grad:
            return where(mask, value.to(input._dtype), input)
        value = value.item()
    check_fits(value, input._dtype)
    shape = broadcast_shapes(input._shape, mask._shape)
    if shape != input._shape:
        input = input.expand(shape)
    return _apply("masked_fill", input, mask, value)


def masked_fill_(self, mask, value):
    if not isinstance(mask, Tensor) or mask._dtype is not dtypes.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks")
    if isinstance(value, Tensor):
        return self.copy_(masked_fill(self, mask, value))
    check_fits(value, self._dtype)
    return inplace("masked_fill", self, (mask,), (value,))


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2."""
    return _apply("addcmul", input, tensor1, tensor2, value)


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2."""
    return _apply("addcdiv", input, tensor1, tensor2, value)


def addcmul_(self, tensor1, tensor2, *, value=1):
    return inplace("addcmul", self, (tensor1, tensor2), (value,))


def addcdiv_(self, tensor1, tensor2, *, value=1):
    return inplace("addcdiv", self, (tensor1, tensor2), (value,))


def _binary_(name):
    def f_(self, other, **kw):
        alpha = kw.pop("alpha", 1)
        if kw:
            raise TypeError(f"{name}_() got unexpected arguments {list(kw)}")
        _check_operand(name + "_", other)
        if name in ("add", "sub") and (type(alpha) is not int or alpha != 1):
            if name == "sub":           # torch's order: bools, the cast, then alpha
                _check_bool_sub((self, other))
            dt = dtypes.result_type(self, other)
            if not dtypes.can_cast(dt, self._dtype):
                raise _cast_error(dt, self._dtype)
            other = _times_alpha(name, self, other, alpha)
        elif alpha != 1:
            other = other * alpha
        if name in ("floor_divide", "remainder", "fmod"):
            _int_zero_check(name + "_", self, other)
        return inplace(name, self, (other,))
    f_.__name__ = name + "_"
    f_.__doc__ = f"In-place {name}."
    return f_


for _n in ("add", "sub", "mul", "floor_divide", "remainder", "fmod", "bitwise_and",
           "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "atan2",
           "copysign", "hypot"):
    METHODS[_n + "_"] = _binary_(_n)


def div_(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        if self._dtype.kind != "f":
            raise _cast_error(dtypes.float32, self._dtype)
        return inplace("div", self, (other,))
    return self.copy_(div(self, other, rounding_mode=rounding_mode))


def pow_(self, exponent):
    if isinstance(exponent, Tensor):
        return inplace("pow", self, (exponent,))
    if self._dtype.kind in "iu" and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if isinstance(exponent, float) and self._dtype.kind != "f":
        raise _cast_error(dtypes.float32, self._dtype)
    return inplace("pow_scalar", self, (), (exponent,))


def lerp_(self, end, weight):
    if isinstance(weight, Tensor):
        return inplace("lerp", self, (end, weight))
    return inplace("lerp_scalar", self, (end,), (weight,))


FUNCTIONS.update({
    "add": add, "sub": sub, "subtract": sub, "rsub": rsub, "mul": mul, "multiply": mul,
    "div": div, "divide": div, "true_divide": div, "floor_divide": floor_divide,
    "remainder": remainder, "fmod": fmod, "pow": pow, "float_power": float_power,
    "atan2": atan2, "arctan2": atan2, "maximum": maximum, "minimum": minimum, "fmax": fmax,
    "fmin": fmin, "copysign": copysign, "hypot": hypot, "equal": equal, "allclose": allclose,
    "isclose": isclose, "lerp": lerp, "where": where, "clamp": clamp, "clip": clamp,
    "clamp_min": clamp_min, "clamp_max": clamp_max, "nan_to_num": nan_to_num,
    "masked_fill": masked_fill, "addcmul": addcmul, "addcdiv": addcdiv,
})
METHODS.update({
    "add": add, "sub": sub, "subtract": sub, "mul": mul, "multiply": mul, "div": div,
    "divide": div, "true_divide": div, "floor_divide": floor_divide, "remainder": remainder,
    "fmod": fmod, "pow": pow, "float_power": float_power, "atan2": atan2, "arctan2": atan2,
    "maximum": maximum, "minimum": minimum, "fmax": fmax, "fmin": fmin, "copysign": copysign,
    "hypot": hypot, "equal": equal, "allclose": allclose, "isclose": isclose, "lerp": lerp,
    "where": lambda self, condition, other: where(condition, self, other), "clamp": clamp,
    "clip": clamp, "clamp_min": clamp_min, "clamp_max": clamp_max, "nan_to_num": nan_to_num,
    "masked_fill": masked_fill, "addcmul": addcmul, "addcdiv": addcdiv, "div_": div_,
    "divide_": div_, "true_divide_": div_, "pow_": pow_, "lerp_": lerp_, "clamp_": clamp_,
    "clip_": clamp_, "nan_to_num_": nan_to_num_, "masked_fill_": masked_fill_,
    "addcmul_": addcmul_, "addcdiv_": addcdiv_, "subtract_": METHODS["sub_"],
    "multiply_": METHODS["mul_"],
})

isnan = FUNCTIONS["isnan"]
eq = FUNCTIONS["eq"]
