"""Activation modules: each calls its fused kernel through clgrad.nn.functional; and
MultiheadAttention, which torch files here too (pickles name it by this module's path)."""
from .. import functional as F
from .. import init
from ...ops.creation import empty
from ..parameter import Parameter
from .linear import Linear
from .module import Module

__all__ = ["ReLU", "LeakyReLU", "ELU", "GELU", "SiLU", "Softplus", "Tanh", "Sigmoid", "Softmax",
           "LogSoftmax", "MultiheadAttention"]


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
