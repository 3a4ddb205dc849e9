"""torch's top-level forms of nn.functional ops: `clgrad.celu`, `clgrad.dropout(x, p, train)`,
`clgrad.batch_norm(...)` with ATen's argument lists.

The top-level names are ATen's schemas, not nn.functional's: no defaults where ATen has none,
reductions as ints (0 none, 1 mean, 2 sum), `cudnn_enable(d)` flags accepted and ignored (clgrad
has one implementation), `weight` first in `embedding`. Each computes with the same code as its
nn.functional counterpart, called where it lives: the ops layer (clgrad/ops/activation.py,
dropout.py, loss.py, ...), which this module sits on, as nn does; it imports nothing of nn. The
RNN cell ops (rnn_tanh_cell, lstm_cell, ...) are in clgrad/ops/rnn_step.py, beside the step
functions that nn's cells run.
"""
from . import dtypes
# the computations are nn.functional's, which live in the ops layer (clgrad/ops/<subject>.py)
from .ops import dispatch
from .ops import (activation as _activation, conv_composed as _conv_composed,
                  distance as _distance, dropout as _dropout, embedding as _embedding,
                  grid_sample as _grid_sample, linear as _linear, loss as _loss,
                  loss_class as _loss_class, normalization as _normalization, pool as _pool,
                  pool3d as _pool3d)
from .autograd.grad_mode import is_grad_enabled

__all__ = [
    "celu", "celu_", "selu", "selu_", "threshold", "threshold_", "hardshrink", "rrelu", "rrelu_",
    "prelu", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
    "dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout",
    "feature_alpha_dropout_", "feature_dropout", "feature_dropout_", "embedding", "layer_norm",
    "group_norm", "instance_norm", "batch_norm", "rms_norm", "conv3d", "conv_transpose1d",
    "conv_transpose3d", "convolution", "cosine_similarity", "pairwise_distance", "pdist",
    "bilinear", "max_pool1d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d",
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "kl_div", "margin_ranking_loss",
    "hinge_embedding_loss", "poisson_nll_loss", "triplet_margin_loss", "cosine_embedding_loss",
    "ctc_loss", "binary_cross_entropy_with_logits", "grid_sampler", "grid_sampler_2d",
    "grid_sampler_3d", "affine_grid_generator", "native_layer_norm", "native_batch_norm",
    "native_group_norm", "native_dropout", "conv_tbc", "embedding_renorm_",
]

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


def _reduction(op, r):
    """ATen's reduction enum as nn.functional's string."""
    try:
        return _REDUCTION[r]
    except (KeyError, TypeError):
        raise RuntimeError(f"{op}: reduction must be 0 (none), 1 (mean) or 2 (sum), got "
                           f"{r!r}") from None


# ---- activations ---------------------------------------------------------------------------------
def celu(input, alpha=1.0):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).

    >>> import clgrad
    >>> clgrad.celu(clgrad.tensor([-1.0, 2.0]), 2.0).tolist()[1]
    2.0
    """
    return _activation.celu(input, alpha)


def celu_(input, alpha=1.0):
    """celu, in place.

    >>> import clgrad
    >>> x = clgrad.tensor([0.0, 3.0]); clgrad.celu_(x) is x, x.tolist()
    (True, [0.0, 3.0])
    """
    return _activation.celu(input, alpha, inplace=True)


def selu(input):
    """scale * (max(0, x) + min(0, alpha * (exp(x) - 1))), torch's constants.

    >>> import clgrad
    >>> round(clgrad.selu(clgrad.tensor([1.0])).item(), 4)
    1.0507
    """
    return _activation.selu(input)


def selu_(input):
    """selu, in place.

    >>> import clgrad
    >>> x = clgrad.tensor([0.0]); clgrad.selu_(x) is x
    True
    """
    return _activation.selu(input, inplace=True)


def threshold(input, threshold, value):
    """x where x > threshold, else value (no defaults, as ATen's).

    >>> import clgrad
    >>> clgrad.threshold(clgrad.tensor([0.5, 2.0]), 1.0, -1.0).tolist()
    [-1.0, 2.0]
    """
    return _activation.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """threshold, in place.

    >>> import clgrad
    >>> x = clgrad.tensor([0.5, 2.0]); clgrad.threshold_(x, 1.0, 0.0).tolist()
    [0.0, 2.0]
    """
    return _activation.threshold_(input, threshold, value)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0.

    >>> import clgrad
    >>> clgrad.hardshrink(clgrad.tensor([0.3, -0.7])).tolist()
    [0.0, -0.699999988079071]
    """
    return _activation.hardshrink(input, lambd)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Randomised leaky relu (slopes drawn in [lower, upper] when training, else their mean).

    >>> import clgrad
    >>> clgrad.rrelu(clgrad.tensor([-3.0, 1.0]), 0.25, 0.25).tolist()
    [-0.75, 1.0]
    """
    _no_generator("rrelu", generator)
    return _activation.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """rrelu, in place.

    >>> import clgrad
    >>> x = clgrad.tensor([-4.0]); clgrad.rrelu_(x, 0.5, 0.5) is x, x.tolist()
    (True, [-2.0])
    """
    _no_generator("rrelu_", generator)
    return _activation.rrelu(input, lower, upper, training, inplace=True)


def _no_generator(op, generator):
    if generator is not None:
        raise NotImplementedError(f"{op}: clgrad draws from the default generator only "
                                  f"(clgrad.manual_seed); generator= is not supported")


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight per channel (dim 1) or one for all.

    >>> import clgrad
    >>> clgrad.prelu(clgrad.tensor([-2.0, 1.0]), clgrad.tensor([0.5])).tolist()
    [-1.0, 1.0]
    """
    return _activation.prelu(input, weight)


# ---- shuffles ------------------------------------------------------------------------------------
def pixel_shuffle(input, upscale_factor):
    """(*, C r², H, W) -> (*, C, H r, W r).

    >>> import clgrad
    >>> clgrad.pixel_shuffle(clgrad.zeros(1, 4, 2, 3), 2).shape
    clgrad.Size([1, 1, 4, 6])
    """
    return _pool.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r², H, W).

    >>> import clgrad
    >>> clgrad.pixel_unshuffle(clgrad.zeros(1, 1, 4, 6), 2).shape
    clgrad.Size([1, 4, 2, 3])
    """
    return _pool.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups):
    """Interleave the channels of `groups` groups: (N, g*k, *) viewed (N, g, k, *), transposed.

    >>> import clgrad
    >>> clgrad.channel_shuffle(clgrad.arange(4.0).view(1, 4, 1), 2).flatten().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    return _pool.channel_shuffle(input, groups)


def native_channel_shuffle(input, groups):
    """channel_shuffle (ATen's kernel-level name; the same computation here).

    >>> import clgrad
    >>> clgrad.native_channel_shuffle(clgrad.arange(4.0).view(1, 4), 2).tolist()
    [[0.0, 2.0, 1.0, 3.0]]
    """
    return _pool.channel_shuffle(input, groups)


# ---- dropout: ATen's (input, p, train), no defaults ---------------------------------------------
def dropout(input, p, train):
    """Zero each element with probability p, scale the rest by 1/(1-p), when train.

    >>> import clgrad
    >>> clgrad.dropout(clgrad.ones(3), 0.5, False).tolist()
    [1.0, 1.0, 1.0]
    """
    return _dropout.dropout(input, p, train)


def dropout_(input, p, train):
    """dropout, in place.

    >>> import clgrad
    >>> x = clgrad.ones(3); clgrad.dropout_(x, 1.0, True).tolist()
    [0.0, 0.0, 0.0]
    """
    return _dropout.dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    """Dropout that keeps SELU's mean and variance, when train.

    >>> import clgrad
    >>> clgrad.alpha_dropout(clgrad.ones(2), 0.5, False).tolist()
    [1.0, 1.0]
    """
    return _dropout.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    """alpha_dropout, in place.

    >>> import clgrad
    >>> x = clgrad.ones(2); clgrad.alpha_dropout_(x, 0.5, False) is x
    True
    """
    return _dropout.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    """alpha_dropout of whole features: one mask value per (dim 0, dim 1) entry.

    >>> import clgrad
    >>> clgrad.feature_alpha_dropout(clgrad.ones(1, 2, 2), 0.5, False).sum().item()
    4.0
    """
    return _dropout.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    """feature_alpha_dropout, in place.

    >>> import clgrad
    >>> x = clgrad.ones(1, 2, 2); clgrad.feature_alpha_dropout_(x, 0.5, False) is x
    True
    """
    return _dropout.feature_alpha_dropout(input, p, train, inplace=True)


def _feature_dropout(input, p, train, inplace):
    # ATen's feature_dropout: one mask value per (dim 0, dim 1) entry, for any rank >= 2
    if input.ndim < 2:
        raise RuntimeError(f"feature_dropout: Feature dropout requires at least 2 dimensions in "
                           f"the input, got {list(input.shape)}")
    return _dropout._channel_dropout(input, p, train, inplace, True)


def feature_dropout(input, p, train):
    """Dropout of whole features: zero input[i, j] entirely with probability p, scale the rest
    by 1/(1-p), when train.

    >>> import clgrad
    >>> y = clgrad.feature_dropout(clgrad.ones(2, 50, 3), 0.5, True)
    >>> sorted({v for v in y.sum(-1).flatten().tolist()})
    [0.0, 6.0]
    """
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input, p, train):
    """feature_dropout, in place.

    >>> import clgrad
    >>> x = clgrad.ones(2, 3); clgrad.feature_dropout_(x, 1.0, True).sum().item()
    0.0
    """
    return _feature_dropout(input, p, train, True)


# ---- embedding and normalisation: ATen's argument order -----------------------------------------
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of weight at indices (weight first, as ATen's; padding_idx -1 means none).

    >>> import clgrad
    >>> clgrad.embedding(clgrad.eye(3), clgrad.tensor([2, 0])).tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    return _embedding.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                                scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Scale the rows of input (an embedding weight) that indices use so that their norm_type
    norm is at most max_norm, in place (what embedding's max_norm does first).

    >>> import clgrad
    >>> w = clgrad.tensor([[3.0, 4.0], [6.0, 8.0]])
    >>> [round(v, 4) for v in clgrad.embedding_renorm_(w, clgrad.tensor([0]), 1.0, 2.0)[0].tolist()]
    [0.6, 0.8]
    """
    if input.requires_grad and input.grad_fn is None and is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    _embedding._renorm_rows_(input, indices.reshape(-1), max_norm, norm_type)
    return input


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """Normalise over the trailing normalized_shape dims (cudnn_enable is ignored).

    >>> import clgrad
    >>> [round(v, 4) for v in clgrad.layer_norm(clgrad.tensor([[1.0, 3.0]]), [2])[0].tolist()]
    [-1.0, 1.0]
    """
    return _normalization.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """Normalise over groups of channels (cudnn_enabled is ignored).

    >>> import clgrad
    >>> [round(v, 4) for v in clgrad.group_norm(clgrad.tensor([[1.0, 3.0]]), 1)[0].tolist()]
    [-1.0, 1.0]
    """
    return _normalization.group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    """Normalise each (sample, channel) over its spatial dims; ATen's argument order.

    >>> import clgrad
    >>> y = clgrad.instance_norm(clgrad.tensor([[[1.0, 3.0]]]), None, None, None, None, True,
    ...                          0.1, 1e-5, False)
    >>> [round(v, 4) for v in y.flatten().tolist()]
    [-1.0, 1.0]
    """
    return _normalization.instance_norm(input, running_mean, running_var, weight, bias,
                                        use_input_stats, momentum, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """Normalise each channel (dim 1); ATen's argument order (weight and bias first).

    >>> import clgrad
    >>> y = clgrad.batch_norm(clgrad.tensor([[1.0], [3.0]]), None, None, None, None, True, 0.1,
    ...                       1e-5, False)
    >>> [round(v, 4) for v in y.flatten().tolist()]
    [-1.0, 1.0]
    """
    return _normalization.batch_norm(input, running_mean, running_var, weight, bias, training,
                                     momentum, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x², trailing dims) + eps) * weight.

    >>> import clgrad
    >>> clgrad.rms_norm(clgrad.tensor([[3.0, 4.0]]), [2], eps=0.0).tolist()[0][0] > 0.84
    True
    """
    return _normalization.rms_norm(input, normalized_shape, weight, eps)


# ---- convolution ---------------------------------------------------------------------------------
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution (as nn.functional.conv3d).

    >>> import clgrad
    >>> clgrad.conv3d(clgrad.ones(1, 1, 2, 2, 2), clgrad.ones(1, 1, 2, 2, 2)).item()
    8.0
    """
    return _conv_composed.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1-D transposed convolution (as nn.functional.conv_transpose1d).

    >>> import clgrad
    >>> clgrad.conv_transpose1d(clgrad.ones(1, 1, 2), clgrad.ones(1, 1, 2)).flatten().tolist()
    [1.0, 2.0, 1.0]
    """
    return _conv_composed.conv_transpose1d(input, weight, bias, stride, padding, output_padding,
                                           groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution (as nn.functional.conv_transpose3d).

    >>> import clgrad
    >>> clgrad.conv_transpose3d(clgrad.ones(1, 1, 1, 1, 1), clgrad.ones(1, 2, 1, 1, 1)).shape
    clgrad.Size([1, 2, 1, 1, 1])
    """
    return _conv_composed.conv_transpose3d(input, weight, bias, stride, padding, output_padding,
                                           groups, dilation)


_CONV = {1: (_conv_composed.conv1d, _conv_composed.conv_transpose1d),
         2: (_conv_composed.conv2d, _conv_composed.conv_transpose2d),
         3: (_conv_composed.conv3d, _conv_composed.conv_transpose3d)}


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """ATen's generic convolution: 1-, 2- or 3-D from weight's rank, transposed or not.

    >>> import clgrad
    >>> clgrad.convolution(clgrad.ones(1, 1, 3), clgrad.ones(1, 1, 2), None, [1], [0], [1],
    ...                    False, [0], 1).flatten().tolist()
    [2.0, 2.0]
    """
    spatial = weight.ndim - 2
    if spatial not in _CONV:
        raise RuntimeError(f"convolution: expected a 3-D, 4-D or 5-D weight, got weight of "
                           f"shape {list(weight.shape)}")
    conv, conv_t = _CONV[spatial]
    if transposed:
        return conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return conv(input, weight, bias, stride, padding, dilation, groups)


# ---- distances -----------------------------------------------------------------------------------
def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    """x1·x2 / max(|x1| |x2|, eps) along dim.

    >>> import clgrad
    >>> round(clgrad.cosine_similarity(clgrad.tensor([[1.0, 0.0]]), clgrad.ones(1, 2)).item(), 4)
    0.7071
    """
    return _distance.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dim.

    >>> import clgrad
    >>> round(clgrad.pairwise_distance(clgrad.zeros(1, 2), clgrad.ones(1, 2) * 3, eps=0).item(), 4)
    4.2426
    """
    return _distance.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input, p=2.0):
    """The p-norm distances between all pairs of rows of an (N, M) input (upper triangle).

    >>> import clgrad
    >>> clgrad.pdist(clgrad.tensor([[0.0, 0.0], [3.0, 4.0]])).tolist()
    [5.0]
    """
    return _distance.pdist(input, p)


def bilinear(input1, input2, weight, bias=None):
    """y_k = x1ᵀ W_k x2 + b_k.

    >>> import clgrad
    >>> clgrad.bilinear(clgrad.ones(1, 2), clgrad.ones(1, 3), clgrad.ones(4, 2, 3)).tolist()
    [[6.0, 6.0, 6.0, 6.0]]
    """
    return _linear.bilinear(input1, input2, weight, bias)


# ---- pooling: ATen's stride=[] means stride = kernel_size ----------------------------------------
def _stride(stride):
    return None if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else stride


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The maximum of each window along the last dim.

    >>> import clgrad
    >>> clgrad.max_pool1d(clgrad.arange(6.0).view(1, 1, 6), 2).flatten().tolist()
    [1.0, 3.0, 5.0]
    """
    return _pool.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """max_pool1d and the index of each maximum.

    >>> import clgrad
    >>> v, i = clgrad.max_pool1d_with_indices(clgrad.arange(4.0).view(1, 1, 4), 2)
    >>> i.flatten().tolist()
    [1, 3]
    """
    return _pool.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode,
                            return_indices=True)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The maximum of each 3-D window.

    >>> import clgrad
    >>> clgrad.max_pool3d(clgrad.arange(8.0).view(1, 1, 2, 2, 2), 2).item()
    7.0
    """
    return _pool3d.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    """The mean of each window along the last dim.

    >>> import clgrad
    >>> clgrad.avg_pool1d(clgrad.arange(4.0).view(1, 1, 4), 2).flatten().tolist()
    [0.5, 2.5]
    """
    return _pool.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                            count_include_pad)


def adaptive_avg_pool1d(input, output_size):
    """Average pooling to output_size positions along the last dim.

    >>> import clgrad
    >>> clgrad.adaptive_avg_pool1d(clgrad.arange(4.0).view(1, 1, 4), 1).item()
    1.5
    """
    return _pool.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """Max pooling to output_size positions: (values, indices), as ATen's.

    >>> import clgrad
    >>> v, i = clgrad.adaptive_max_pool1d(clgrad.arange(4.0).view(1, 1, 4), 2)
    >>> v.flatten().tolist(), i.flatten().tolist()
    ([1.0, 3.0], [1, 3])
    """
    return _pool.adaptive_max_pool1d(input, output_size, return_indices=True)


# ---- losses: reduction is ATen's int -------------------------------------------------------------
def kl_div(input, target, reduction=1, *, log_target=False):
    """target * (log target - input), reduced (1: the mean over all elements).

    >>> import clgrad
    >>> clgrad.kl_div(clgrad.zeros(2), clgrad.ones(2), 2).item()
    0.0
    """
    # ATen's mean is over all elements, without nn.functional's warning about 'batchmean'
    loss = _loss.kl_div(input, target, reduction="none", log_target=log_target)
    r = _reduction("kl_div", reduction)
    return loss if r == "none" else loss.mean() if r == "mean" else loss.sum()


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    """max(0, -target * (input1 - input2) + margin), reduced.

    >>> import clgrad
    >>> clgrad.margin_ranking_loss(clgrad.tensor([1.0]), clgrad.tensor([2.0]),
    ...                            clgrad.tensor([1.0])).item()
    1.0
    """
    return _loss.margin_ranking_loss(input1, input2, target, margin,
                                     reduction=_reduction("margin_ranking_loss", reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    """x where target is 1, max(0, margin - x) where it is -1, reduced.

    >>> import clgrad
    >>> clgrad.hinge_embedding_loss(clgrad.tensor([0.25]), clgrad.tensor([-1.0])).item()
    0.75
    """
    return _loss.hinge_embedding_loss(input, target, margin,
                                      reduction=_reduction("hinge_embedding_loss", reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """Poisson negative log likelihood; ATen's arguments, none optional.

    >>> import clgrad
    >>> clgrad.poisson_nll_loss(clgrad.zeros(1), clgrad.zeros(1), True, False, 1e-8, 1).item()
    1.0
    """
    return _loss.poisson_nll_loss(input, target, log_input, full, eps=eps,
                                  reduction=_reduction("poisson_nll_loss", reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False,
                        reduction=1):
    """max(d(a, p) - d(a, n) + margin, 0), reduced.

    >>> import clgrad
    >>> a = clgrad.zeros(1, 2)
    >>> clgrad.triplet_margin_loss(a, a, a, eps=0.0).item()
    1.0
    """
    return _loss.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                     reduction=_reduction("triplet_margin_loss", reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    """1 - cos(x1, x2) where target is 1, max(0, cos - margin) where -1, reduced.

    >>> import clgrad
    >>> x = clgrad.ones(1, 2)
    >>> round(clgrad.cosine_embedding_loss(x, x, clgrad.tensor([1.0])).item(), 6)
    0.0
    """
    return _loss.cosine_embedding_loss(input1, input2, target, margin,
                                       reduction=_reduction("cosine_embedding_loss", reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
             zero_infinity=False):
    """Connectionist temporal classification loss (1: mean of per-target-length losses).

    >>> import clgrad
    >>> lp = clgrad.full((1, 1, 2), 0.5).log()
    >>> round(clgrad.ctc_loss(lp, clgrad.tensor([[1]]), [1], [1], reduction=2).item(), 4)
    0.6931
    """
    return _loss.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                          _reduction("ctc_loss", reduction), zero_infinity)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    """Binary cross entropy of sigmoid(input); ATen's order (pos_weight before reduction).

    >>> import clgrad
    >>> round(clgrad.binary_cross_entropy_with_logits(clgrad.zeros(1), clgrad.ones(1)).item(), 4)
    0.6931
    """
    return _loss_class.binary_cross_entropy_with_logits(
                  input, target, weight, reduction=_reduction("binary_cross_entropy_with_logits",
                                                              reduction), pos_weight=pos_weight)


# ---- sampling ------------------------------------------------------------------------------------
_INTERP = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sample with ATen's enums: interpolation 0 bilinear, 1 nearest, 2 bicubic; padding
    0 zeros, 1 border, 2 reflection.

    >>> import clgrad
    >>> x = clgrad.arange(4.0).view(1, 1, 2, 2)
    >>> clgrad.grid_sampler(x, clgrad.zeros(1, 1, 1, 2), 0, 0, False).item()
    1.5
    """
    if interpolation_mode not in _INTERP or padding_mode not in _PADDING:
        raise RuntimeError(f"grid_sampler: interpolation_mode must be 0, 1 or 2 and padding_mode "
                           f"0, 1 or 2, got {interpolation_mode!r} and {padding_mode!r}")
    return _grid_sample.grid_sample(input, grid, _INTERP[interpolation_mode],
                                    _PADDING[padding_mode], align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler on a 4-D input.

    >>> import clgrad
    >>> clgrad.grid_sampler_2d(clgrad.ones(1, 1, 2, 2), clgrad.zeros(1, 1, 1, 2), 1, 0,
    ...                        True).item()
    1.0
    """
    if input.ndim != 4:
        raise RuntimeError(f"grid_sampler_2d: expected a 4-D input, got {list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler on a 5-D input.

    >>> import clgrad
    >>> clgrad.grid_sampler_3d(clgrad.ones(1, 1, 2, 2, 2), clgrad.zeros(1, 1, 1, 1, 3), 0, 0,
    ...                        True).item()
    1.0
    """
    if input.ndim != 5:
        raise RuntimeError(f"grid_sampler_3d: expected a 5-D input, got {list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta, size, align_corners):
    """The sampling grid of affine maps theta for an output of `size` (no default for
    align_corners, as ATen's).

    >>> import clgrad
    >>> clgrad.affine_grid_generator(clgrad.eye(2, 3).unsqueeze(0), [1, 1, 2, 2], True).shape
    clgrad.Size([1, 2, 2, 2])
    """
    return _grid_sample.affine_grid(theta, list(size), align_corners)


# ---- ATen's native_* forms: the result and the statistics backward would save ------------------
def _stats(x, dims, eps):
    mean = x.mean(dims, keepdim=True)
    rstd = (((x - mean) ** 2).mean(dims, keepdim=True) + eps).rsqrt()   # biased variance
    return mean, rstd


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(layer_norm's output, mean, rstd), the statistics over the normalised dims, kept as
    size-1 dims.

    >>> import clgrad
    >>> out, mean, rstd = clgrad.native_layer_norm(clgrad.tensor([[1.0, 3.0]]), [2], None, None,
    ...                                            0.0)
    >>> out.tolist(), mean.tolist(), rstd.tolist()
    ([[-1.0, 1.0]], [[2.0]], [[1.0]])
    """
    dims = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    mean, rstd = _stats(input, dims, eps)
    out = (input - mean) * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean, rstd


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(batch_norm's output, save_mean, save_invstd): the batch's per-channel mean and
    1/sqrt(biased var + eps) when training (running statistics updated as batch_norm does),
    empty tensors otherwise.

    >>> import clgrad
    >>> out, m, r = clgrad.native_batch_norm(clgrad.tensor([[1.0], [3.0]]), None, None, None,
    ...                                      None, True, 0.1, 0.0)
    >>> out.flatten().tolist(), m.tolist(), r.tolist()
    ([-1.0, 1.0], [2.0], [1.0])
    """
    out = _normalization.batch_norm(input, running_mean, running_var, weight, bias, training,
                                    momentum, eps)
    if not training:
        empty = input.new_empty((0,))
        return out, empty, empty
    mean, rstd = _stats(input, (0,) + tuple(range(2, input.ndim)), eps)
    return out, mean.flatten(), rstd.flatten()


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(group_norm's output, mean, rstd) with the statistics of shape (N, group).

    >>> import clgrad
    >>> out, m, r = clgrad.native_group_norm(clgrad.tensor([[1.0, 3.0]]), None, None, 1, 2, 1,
    ...                                      1, 0.0)
    >>> out.tolist(), m.tolist(), r.tolist()
    ([[-1.0, 1.0]], [[2.0]], [[1.0]])
    """
    if input.shape[0] != N or input.shape[1] != C or input.numel() != N * C * HxW:
        raise RuntimeError(f"native_group_norm: expected input of N={N}, C={C}, HxW={HxW}, "
                           f"got {list(input.shape)}")
    out = dispatch.F.group_norm(input, group, weight, bias, eps)     # autocast applies
    mean, rstd = _stats(input.reshape(N, group, -1), (2,), eps)
    return out, mean.squeeze(2), rstd.squeeze(2)


def native_dropout(input, p, train):
    """(output, mask): dropout's output and the bool mask of kept elements (train None counts
    as True; not training: a copy of input and an all-True mask).

    >>> import clgrad
    >>> out, mask = clgrad.native_dropout(clgrad.ones(3), 0.5, False)
    >>> out.tolist(), mask.tolist()
    ([1.0, 1.0, 1.0], [True, True, True])
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if train is False:
        return input.clone(), input.new_ones(input.shape, dtype=dtypes.bool_)
    mask = input.detach().new_empty(input.shape).bernoulli_(1.0 - p).to(dtypes.bool_)
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return input * mask * scale, mask


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution in (time, batch, channel) layout: input (T, B, C_in), weight
    (K, C_in, C_out), bias (C_out,), pad on both ends of time.

    >>> import clgrad
    >>> y = clgrad.conv_tbc(clgrad.ones(3, 1, 1), clgrad.ones(2, 1, 1), clgrad.zeros(1))
    >>> y.flatten().tolist()
    [2.0, 2.0]
    """
    if input.ndim != 3 or weight.ndim != 3:
        raise RuntimeError(f"conv_tbc: expected a 3-D input and weight, got "
                           f"{list(input.shape)} and {list(weight.shape)}")
    # conv1d through nn.functional's namespace: an autocast region's wrapper applies
    out = dispatch.F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)
