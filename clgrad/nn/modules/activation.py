"""Activation modules: each calls its fused kernel through clgrad.nn.functional; and
MultiheadAttention, which torch files here too (pickles name it by this module's path)."""
from .. import functional as F, init as _init
from .. import init
from ...ops.creation import empty
from ..parameter import Parameter
from .linear import Linear
from .module import Module

__all__ = ["ReLU", "LeakyReLU", "ELU", "GELU", "SiLU", "Softplus", "Tanh", "Sigmoid", "Softmax",
           "LogSoftmax", "MultiheadAttention", "Hardtanh", "ReLU6", "Hardsigmoid", "Hardswish",
           "SELU", "CELU", "Mish", "GLU", "Softsign", "Tanhshrink", "LogSigmoid", "Softshrink",
           "Hardshrink", "Threshold", "PReLU", "RReLU", "Softmin", "Softmax2d"]


class ReLU(Module):
    """max(x, 0).

    >>> import clgrad
    >>> clgrad.nn.ReLU()(clgrad.tensor([-1.0, 1.0])).tolist(), clgrad.nn.ReLU(inplace=True)
    ([0.0, 1.0], ReLU(inplace=True))
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """x where positive, negative_slope * x elsewhere.

    >>> import clgrad
    >>> clgrad.nn.LeakyReLU(0.1)(clgrad.tensor([-10.0])).tolist(), clgrad.nn.LeakyReLU()
    ([-1.0], LeakyReLU(negative_slope=0.01))
    """

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x where positive, alpha * (exp(x) - 1) elsewhere.

    >>> import clgrad
    >>> clgrad.nn.ELU()
    ELU(alpha=1.0)
    """

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """x * Phi(x); approximate='tanh' uses torch's tanh approximation.

    >>> import clgrad
    >>> clgrad.nn.GELU(approximate="tanh")
    GELU(approximate='tanh')
    """

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x * sigmoid(x).

    >>> import clgrad
    >>> round(clgrad.nn.SiLU()(clgrad.tensor([2.0])).item(), 4)
    1.7616
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, linear above threshold.

    >>> import clgrad
    >>> clgrad.nn.Softplus()
    Softplus(beta=1.0, threshold=20.0)
    """

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Tanh(Module):
    """Hyperbolic tangent.

    >>> import clgrad
    >>> clgrad.nn.Tanh()(clgrad.tensor([0.0])).tolist()
    [0.0]
    """

    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    """1 / (1 + exp(-x)).

    >>> import clgrad
    >>> clgrad.nn.Sigmoid()(clgrad.tensor([0.0])).tolist()
    [0.5]
    """

    def forward(self, input):
        return F.sigmoid(input)


class Softmax(Module):
    """Softmax along dim.

    >>> import clgrad
    >>> clgrad.nn.Softmax(dim=1)(clgrad.zeros(1, 4)).tolist(), clgrad.nn.Softmax(dim=-1)
    ([[0.25, 0.25, 0.25, 0.25]], Softmax(dim=-1))
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along dim, without overflow.

    >>> import clgrad
    >>> clgrad.nn.LogSoftmax(dim=1)
    LogSoftmax(dim=1)
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class NonDynamicallyQuantizableLinear(Linear):
    """MultiheadAttention's output projection: a Linear under torch's class name."""


class MultiheadAttention(Module):
    """Attention over num_heads heads of embed_dim // num_heads features each, torch's
    nn.MultiheadAttention: the same parameters (in_proj_weight, or q/k/v_proj_weight when kdim or
    vdim differ from embed_dim; in_proj_bias; out_proj; bias_k, bias_v), initialisation and
    forward. forward returns (output, weights averaged over heads, or None when
    need_weights=False). Bool masks: True = do not attend.

    >>> import clgrad
    >>> mha = clgrad.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = clgrad.randn(3, 5, 8)
    >>> out, w = mha(x, x, x)
    >>> out.shape, w.shape
    (clgrad.Size([3, 5, 8]), clgrad.Size([3, 5, 5]))
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kw = dict(device=device, dtype=dtype)
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        batched = query.dim() == 3
        if self.batch_first and batched:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight, average_attn_weights=average_attn_weights,
            is_causal=is_causal)
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        return out, weights


# ---- the piecewise activations of clgrad/ops/activation.py ---------------------------------------
class Hardtanh(Module):
    """x clamped to [min_val, max_val].

    >>> import clgrad
    >>> clgrad.nn.Hardtanh(-2.0, 2.0)(clgrad.tensor([-3.0, 1.0])).tolist()
    [-2.0, 1.0]
    """

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + \
            (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    """min(max(x, 0), 6).

    >>> import clgrad
    >>> clgrad.nn.ReLU6()(clgrad.tensor([-1.0, 7.0])).tolist()
    [0.0, 6.0]
    """

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class _Simple(Module):
    """An activation without parameters: forward is `fn` of clgrad.nn.functional."""
    fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        f = getattr(F, self.fn)
        return f(input, inplace=True) if self.inplace else f(input)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Hardsigmoid(_Simple):
    """0 below -3, 1 above 3, x / 6 + 1/2 between.

    >>> import clgrad
    >>> clgrad.nn.Hardsigmoid()(clgrad.tensor([0.0])).tolist()
    [0.5]
    """
    fn = "hardsigmoid"


class Hardswish(_Simple):
    """x * relu6(x + 3) / 6.

    >>> import clgrad
    >>> clgrad.nn.Hardswish()(clgrad.tensor([4.0])).tolist()
    [4.0]
    """
    fn = "hardswish"


class SELU(_Simple):
    """scale * elu(x, alpha) with the self-normalising constants.

    >>> import clgrad
    >>> clgrad.nn.SELU()(clgrad.tensor([0.0])).tolist()
    [0.0]
    """
    fn = "selu"


class Mish(_Simple):
    """x * tanh(softplus(x)).

    >>> import clgrad
    >>> clgrad.nn.Mish()(clgrad.tensor([0.0])).tolist()
    [0.0]
    """
    fn = "mish"


class CELU(Module):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).

    >>> import clgrad
    >>> clgrad.nn.CELU(alpha=2.0)(clgrad.tensor([1.0])).tolist()
    [1.0]
    """

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GLU(Module):
    """a * sigmoid(b) for the two halves a, b of the input along dim.

    >>> import clgrad
    >>> clgrad.nn.GLU()(clgrad.ones(2, 4)).shape
    clgrad.Size([2, 2])
    """

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softsign(Module):
    """x / (1 + |x|).

    >>> import clgrad
    >>> clgrad.nn.Softsign()(clgrad.tensor([1.0])).tolist()
    [0.5]
    """

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """x - tanh(x).

    >>> import clgrad
    >>> clgrad.nn.Tanhshrink()(clgrad.tensor([0.0])).tolist()
    [0.0]
    """

    def forward(self, input):
        return F.tanhshrink(input)


class LogSigmoid(Module):
    """log(sigmoid(x)).

    >>> import clgrad
    >>> round(clgrad.nn.LogSigmoid()(clgrad.tensor([0.0])).item(), 4)
    -0.6931
    """

    def forward(self, input):
        return F.logsigmoid(input)


class Softshrink(Module):
    """x - lambd above lambd, x + lambd below -lambd, 0 between.

    >>> import clgrad
    >>> clgrad.nn.Softshrink(1.0)(clgrad.tensor([2.0, 0.5])).tolist()
    [1.0, 0.0]
    """

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Softshrink):
    """x where |x| > lambd, else 0.

    >>> import clgrad
    >>> clgrad.nn.Hardshrink(1.0)(clgrad.tensor([2.0, 0.5])).tolist()
    [2.0, 0.0]
    """

    def forward(self, input):
        return F.hardshrink(input, self.lambd)


class Threshold(Module):
    """x where x > threshold, else value.

    >>> import clgrad
    >>> clgrad.nn.Threshold(0.1, 20.0)(clgrad.tensor([0.0, 1.0])).tolist()
    [20.0, 1.0]
    """

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + \
            (", inplace=True" if self.inplace else "")


class PReLU(Module):
    """x where x > 0, else a * x with a learned slope a (one, or one per channel), 0.25 at first.

    >>> import clgrad
    >>> m = clgrad.nn.PReLU(num_parameters=3)
    >>> m(-clgrad.ones(2, 3)).tolist(), m
    ([[-0.25, -0.25, -0.25], [-0.25, -0.25, -0.25]], PReLU(num_parameters=3))
    """

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        init_ = self.init
        _init.constant_(self.weight, init_)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Leaky ReLU with a random negative slope from U(lower, upper) in training, the mean slope
    in evaluation.

    >>> import clgrad
    >>> clgrad.nn.RReLU(0.1, 0.3).eval()(clgrad.tensor([-1.0])).tolist()
    [-0.20000000298023224]
    """

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + \
            (", inplace=True" if self.inplace else "")


class Softmin(Module):
    """softmax(-x) along dim.

    >>> import clgrad
    >>> clgrad.nn.Softmin(dim=0)(clgrad.tensor([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax2d(Module):
    """softmax over the channels of each location of a [N, C, H, W] or [C, H, W] input.

    >>> import clgrad
    >>> clgrad.nn.Softmax2d()(clgrad.zeros(1, 2, 1, 1)).reshape(-1).tolist()
    [0.5, 0.5]
    """

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             f"instead")
        return F.softmax(input, -3)
