"""The dtypes clgrad tensors hold, and torch's type promotion between them.

16-bit floats are stored as 16-bit words and computed in float: `half` through the core
`vload_half`/`vstore_half` (no cl_khr_fp16 needed), `bfloat16` as `ushort` with
round-to-nearest-even conversion.

Complex dtypes (kind 'c') hold interleaved (re, im) pairs of their real dtype, as torch's do, so
`view_as_real` is a free view: complex64 is stored and computed as `float2`, complex128 as
`double2`, complex32 (torch's ComplexHalf) as pairs of halves read through `vload_half2` and
computed as `float2`. `ALL` lists the real dtypes (the families whose kernels have a variant per
dtype iterate over it); `COMPLEX` the complex ones.
"""
import numpy as np


class dtype:
    """A tensor element type, named as torch names it.

    >>> import clgrad
    >>> clgrad.float32.itemsize, clgrad.float32.is_floating_point, clgrad.int64
    (4, True, clgrad.int64)
    """

    __slots__ = ("name", "np", "itemsize", "kind", "cl", "ct", "short", "is_floating_point",
                 "is_signed", "_rank", "real", "rt")

    def __init__(self, name, np_dtype, itemsize, kind, cl, ct, short, rank, real=None):
        self.name = name
        self.np = np.dtype(np_dtype)          # host representation (uint16 bits for bfloat16)
        self.itemsize = itemsize
        # 'b' bool, 'u' unsigned, 'i' signed int, 'f' float, 'c' complex
        self.kind = kind
        self.cl = cl                          # OpenCL storage type (of one part, for complex32)
        self.ct = ct                          # OpenCL compute type
        self.short = short                    # used in kernel and program names
        self.is_floating_point = kind == "f"
        self.is_signed = kind in "ifc"
        self._rank = rank
        self.real = self if real is None else real   # the dtype of a part (complex), else self
        self.rt = self.real.ct                # OpenCL compute type of a part

    @property
    def is_complex(self):
        return self.kind == "c"

    def to_complex(self):
        """The complex dtype whose parts are this float dtype (torch.dtype.to_complex).

        >>> import clgrad
        >>> clgrad.float32.to_complex(), clgrad.complex128.to_complex()
        (clgrad.complex64, clgrad.complex128)
        """
        if self.kind == "c":
            return self
        c = _TO_COMPLEX.get(self)
        if c is None:
            raise RuntimeError(f"Unknown Complex ScalarType for {TORCH_NAMES[self]}")
        return c

    def to_real(self):
        """The dtype of a complex dtype's parts, or this dtype itself (torch.dtype.to_real).

        >>> import clgrad
        >>> clgrad.complex64.to_real(), clgrad.int32.to_real()
        (clgrad.float32, clgrad.int32)
        """
        return self.real

    def __repr__(self):
        return f"clgrad.{self.name}"

    def __reduce__(self):
        return self.name

    @property
    def info(self):
        """This dtype itself: templates read its fields (cl, ct, short, kind)."""
        return self


bool_ = dtype("bool", np.bool_, 1, "b", "uchar", "uchar", "b8", 0)
uint8 = dtype("uint8", np.uint8, 1, "u", "uchar", "uchar", "u8", 1)
int8 = dtype("int8", np.int8, 1, "i", "char", "char", "i8", 1)
int16 = dtype("int16", np.int16, 2, "i", "short", "short", "i16", 2)
int32 = dtype("int32", np.int32, 4, "i", "int", "int", "i32", 3)
int64 = dtype("int64", np.int64, 8, "i", "long", "long", "i64", 4)
float16 = dtype("float16", np.float16, 2, "f", "half", "float", "f16", 5)
bfloat16 = dtype("bfloat16", np.uint16, 2, "f", "ushort", "float", "bf16", 5)
float32 = dtype("float32", np.float32, 4, "f", "float", "float", "f32", 6)
float64 = dtype("float64", np.float64, 8, "f", "double", "double", "f64", 7)
# complex: interleaved (re, im) pairs of the real dtype; ranks above every real dtype
complex32 = dtype("complex32", np.float16, 4, "c", "half", "float2", "c32", 8, real=float16)
complex64 = dtype("complex64", np.complex64, 8, "c", "float2", "float2", "c64", 9, real=float32)
complex128 = dtype("complex128", np.complex128, 16, "c", "double2", "double2", "c128", 10,
                   real=float64)

ALL = (float32, float64, float16, bfloat16, int32, int64, int16, int8, uint8, bool_)
FLOATS = (float32, float64, float16, bfloat16)
INTS = (int32, int64, int16, int8, uint8)
COMPLEX = (complex64, complex128, complex32)
EVERY = ALL + COMPLEX
BY_NAME = {d.name: d for d in EVERY}
# the names torch's messages give each dtype: its scalar type, and its C++ type
TORCH_NAMES = {float32: "Float", float64: "Double", float16: "Half", bfloat16: "BFloat16",
               int64: "Long", int32: "Int", int16: "Short", int8: "Char", uint8: "Byte",
               bool_: "Bool", complex32: "ComplexHalf", complex64: "ComplexFloat",
               complex128: "ComplexDouble"}
C_NAMES = {float32: "float", float64: "double", float16: "c10::Half", bfloat16: "c10::BFloat16",
           int64: "long int", int32: "int", int16: "short int", int8: "signed char",
           uint8: "unsigned char", bool_: "bool", complex32: "c10::complex<c10::Half>",
           complex64: "c10::complex<float>", complex128: "c10::complex<double>"}
BY_NAME.update({"bool": bool_, "float": float32, "double": float64, "half": float16,
                "int": int32, "long": int64, "short": int16, "cfloat": complex64,
                "cdouble": complex128, "chalf": complex32})
_TO_COMPLEX = {float32: complex64, float64: complex128, float16: complex32}
_FROM_NUMPY = {np.dtype(np.float32): float32, np.dtype(np.float64): float64,
               np.dtype(np.float16): float16, np.dtype(np.int32): int32,
               np.dtype(np.int64): int64, np.dtype(np.uint8): uint8, np.dtype(np.bool_): bool_,
               np.dtype(np.int8): int8, np.dtype(np.int16): int16, np.dtype(np.uint16): int32,
               np.dtype(np.uint32): int64, np.dtype(np.complex64): complex64,
               np.dtype(np.complex128): complex128}

_default_float = float32


def get_default_dtype():
    """The dtype of float tensors made from Python numbers (float32 unless changed).

    >>> import clgrad
    >>> clgrad.get_default_dtype()
    clgrad.float32
    """
    return _default_float


def set_default_dtype(d):
    """Set the default float dtype (float32 or float64, as torch allows)."""
    global _default_float
    d = as_dtype(d)
    if d not in (float32, float64, float16, bfloat16):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def as_dtype(d):
    """Accept a clgrad dtype, its name, a numpy dtype or a Python type."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return _default_float
    if d is int:
        return int64
    if d is bool:
        return bool_
    if d is complex:
        return _default_float.to_complex() if _default_float is not bfloat16 else complex64
    if isinstance(d, str) and d in BY_NAME:
        return BY_NAME[d]
    name = getattr(d, "name", None)          # a torch dtype or similar
    if isinstance(name, str) and name in BY_NAME and not isinstance(d, (np.dtype, type)):
        return BY_NAME[name]
    try:
        return from_numpy_dtype(np.dtype(d))
    except TypeError:
        raise TypeError(f"clgrad has no dtype {d!r}; it has "
                        f"{', '.join(x.name for x in EVERY)}") from None


def from_numpy_dtype(npd):
    try:
        return _FROM_NUMPY[np.dtype(npd)]
    except KeyError:
        raise TypeError(f"can't convert numpy arrays of type {npd} to a clgrad tensor; supported "
                        f"are complex128, complex64, float64, float32, float16, int64, int32, int16, int8, "
                        f"uint8 and bool") from None


# promote_types for the dtypes clgrad has, as torch defines it
def promote_types(a, b):
    """The smallest dtype both a and b convert to without losing their kind.

    >>> import clgrad
    >>> clgrad.promote_types(clgrad.int32, clgrad.float16), clgrad.promote_types(clgrad.float16, clgrad.bfloat16)
    (clgrad.float16, clgrad.float32)
    """
    a, b = as_dtype(a), as_dtype(b)
    if a is b:
        return a
    if a.kind == "c" or b.kind == "c":
        # complex wins; its parts are the promotion of both operands' (real) parts
        # (complex64 with float64 is complex128, complex32 with bfloat16 complex64)
        ra = a.real if a.kind == "c" else a
        rb = b.real if b.kind == "c" else b
        r = promote_types(ra, rb) if ra.kind == "f" and rb.kind == "f" else \
            (ra if ra.kind == "f" else rb)
        return r.to_complex() if r is not bfloat16 else complex64
    if {a, b} == {uint8, int8}:              # neither holds the other's range
        return int16
    if a.kind == "f" and b.kind == "f":
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a._rank > b._rank else b
    if a.kind == "f":
        return a
    if b.kind == "f":
        return b
    return a if a._rank > b._rank else b


def scalar_dtype(value):
    """The dtype torch gives a Python number taking part in an op (a 'wrapped number')."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return _default_float
    if isinstance(value, complex):
        return default_complex()
    if isinstance(value, (np.bool_,)):
        return bool_
    if isinstance(value, np.integer):
        return int64
    if isinstance(value, np.floating):
        return _default_float
    if isinstance(value, np.complexfloating):
        return default_complex()
    raise TypeError(f"expected a Tensor or a number, got {type(value).__name__}")


def default_complex():
    """The complex dtype of Python complex numbers: the default float's (complex64 by default)."""
    return complex128 if _default_float is float64 else complex64


def _combine(higher, lower):
    # torch's combine_categories
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.kind == "c":
        return higher
    if lower.kind == "c":
        # a complex operand of a lower priority keeps the higher float's precision
        if higher.kind == "f":
            return higher.to_complex() if higher is not bfloat16 else complex64
        return lower
    if higher.kind == "f":
        return higher
    if higher is bool_ or lower.kind == "f":
        return promote_types(higher, lower)
    return higher


def result_type(*operands):
    """torch.result_type over tensors and Python numbers: dimensioned tensors decide first, then
    0-d tensors, then numbers, each only able to raise the category (bool < int < float).

    >>> import clgrad
    >>> clgrad.result_type(clgrad.ones(2, dtype=clgrad.int32), 2.5)
    clgrad.float32
    """
    dim = zero = wrapped = None
    for x in operands:
        dt = getattr(x, "_dtype", None)
        if dt is None:
            w = scalar_dtype(x)
            wrapped = w if wrapped is None else promote_types(wrapped, w)
        elif x._shape:
            dim = dt if dim is None else promote_types(dim, dt)
        else:
            zero = dt if zero is None else promote_types(zero, dt)
    return _combine(dim, _combine(zero, wrapped))


def can_cast(frm, to):
    """torch.can_cast: whether an in-place op may write a `frm` result into a `to` tensor."""
    frm, to = as_dtype(frm), as_dtype(to)
    # torch's categories: bool < integral (signed or not: int64 -> uint8 is allowed) < float
    order = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
    return order[frm.kind] <= order[to.kind]


class finfo:
    """The limits of a floating-point dtype, as torch.finfo (the default dtype when none is given).

    >>> import clgrad
    >>> clgrad.finfo(clgrad.float16).max, clgrad.finfo(clgrad.bfloat16).eps
    (65504.0, 0.0078125)
    """

    # bits, eps, max, tiny (the smallest normal number), resolution
    _TABLE = {"float32": (32, 1.1920928955078125e-07, 3.4028234663852886e38,
                          1.1754943508222875e-38, 1e-06),
              "float64": (64, 2.220446049250313e-16, 1.7976931348623157e308,
                          2.2250738585072014e-308, 1e-15),
              "float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001),
              "bfloat16": (16, 0.0078125, 3.3895313892515355e38, 1.1754943508222875e-38, 0.01)}

    def __init__(self, type=None):
        d = _default_float if type is None else as_dtype(type)
        d = d.real                  # a complex dtype's limits are its parts' (torch's too)
        if d.kind != "f":
            raise TypeError("clgrad.finfo() requires a floating point input type. Use "
                            "clgrad.iinfo to handle 'clgrad.finfo'")
        self.bits, self.eps, self.max, self.tiny, self.resolution = self._TABLE[d.name]
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = d.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """The limits of an integer dtype, as torch.iinfo.

    >>> import clgrad
    >>> clgrad.iinfo(clgrad.int8).min, clgrad.iinfo(clgrad.uint8).max
    (-128, 255)
    """

    def __init__(self, type):
        d = as_dtype(type)
        if d.kind in "fc":
            raise TypeError("clgrad.iinfo() requires an integer input type. Use clgrad.finfo to "
                            "handle 'clgrad.iinfo'")
        if d.kind == "b":
            raise TypeError(f"{d} is not supported by clgrad.iinfo")
        self.bits = 8 * d.itemsize
        self.min = 0 if d.kind == "u" else -(1 << (self.bits - 1))
        self.max = (1 << self.bits) - 1 if d.kind == "u" else (1 << (self.bits - 1)) - 1
        self.dtype = d.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def finfo_eps(d):
    return {float32: 1.1920929e-07, float64: 2.220446049250313e-16, float16: 0.0009765625,
            bfloat16: 0.0078125}[d]


# ---- host conversion of 16-bit floats ----------------------------------------------------------

def float_to_bf16_bits(a):
    """float32 numbers to bfloat16 bit patterns (uint16), rounding to nearest even; NaN stays
    NaN."""
    a = np.array(a, dtype=np.float32, order="C")
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded


def bf16_bits_to_float(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def to_host_bits(array, dt):
    """A numpy array in the host representation of dtype dt (what goes into the buffer)."""
    if dt is bfloat16:
        return float_to_bf16_bits(array)
    if dt is complex32:          # numpy has no complex32: pairs of float16, (re, im) last
        a = np.asarray(array, dtype=np.complex64)
        return np.ascontiguousarray(np.stack([a.real, a.imag], -1).astype(np.float16))
    return np.array(array, dtype=dt.np, order="C", copy=None) if np.ndim(array) else \
        np.array(array, dtype=dt.np)


def from_host_bits(array, dt):
    """The host representation read back from a buffer, as the numpy array a user sees."""
    if dt is bfloat16:
        return bf16_bits_to_float(array)
    if dt is complex32:
        a = np.asarray(array, dtype=np.float32)
        return (a[..., 0] + 1j * a[..., 1]).astype(np.complex64)
    return array
