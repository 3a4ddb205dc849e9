"""The last of torch.nn.functional: gumbel_softmax, triplet_margin_with_distance_loss,
linear_cross_entropy (its reference form), the in-place activations (elu_, selu_, celu_, rrelu_),
native_channel_shuffle, and the __torch_function__ helpers, which have nothing to dispatch in
clgrad."""
from ..ops.pointwise import minimum

__all__ = ["gumbel_softmax", "triplet_margin_with_distance_loss", "linear_cross_entropy",
           "elu_", "selu_", "celu_", "rrelu_", "native_channel_shuffle", "has_torch_function",
           "has_torch_function_unary", "has_torch_function_variadic", "handle_torch_function",
           "boolean_dispatch", "assert_int_or_pair"]


def _F():
    from . import functional
    return functional


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Samples of the Gumbel-softmax distribution over dim: softmax((logits + g) / tau) with
    g = -log(Exponential(1)) noise; hard=True returns one-hot samples whose gradient is the soft
    one's (the straight-through estimator), as torch's.

    >>> import clgrad, clgrad.nn.functional as F
    >>> y = F.gumbel_softmax(clgrad.zeros(2, 5), hard=True)
    >>> y.sum(-1).tolist(), sorted(set(y.reshape(-1).tolist()))
    ([1.0, 1.0], [0.0, 1.0])
    """
    gumbels = -logits.new_empty(tuple(logits.shape)).exponential_().log()
    soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = logits.new_zeros(tuple(logits.shape)).scatter_(dim, index, 1.0)
    return one_hot - soft.detach() + soft


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) for any distance function (default: the pairwise
    Euclidean distance); swap takes the smaller of d(a, n) and d(p, n).

    >>> import clgrad, clgrad.nn.functional as F
    >>> a = clgrad.zeros(1, 2)
    >>> F.triplet_margin_with_distance_loss(a, a, a + 3).item()
    0.0
    """
    F = _F()
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater "
                         f"than 0, got {margin} instead")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {dims[0]}D, positive "
                           f"{dims[1]}D, and negative {dims[2]}D inputs")
    dist = distance_function if distance_function is not None else F.pairwise_distance
    d_ap, d_an = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_an = minimum(d_an, dist(positive, negative))
    return F._reduce((d_ap - d_an + margin).clamp_min(0), reduction)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target): torch's reference form
    (a linear_weight of shape (C, *out_features, in_features) gives K-dimensional logits).
    `options` (torch's chunked evaluation) is not taken: the logits are formed whole.

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.linear_cross_entropy(clgrad.ones(1, 2), clgrad.zeros(3, 2),
    ...                              clgrad.tensor([0])).item(), 4)
    1.0986
    """
    F = _F()
    if options is not None:
        raise NotImplementedError("linear_cross_entropy: clgrad has no chunked form (options "
                                  "must be None)")
    C, extra = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    w = linear_weight.reshape(-1, linear_weight.shape[-1])
    b = None if linear_bias is None else linear_bias.reshape(-1)
    logits = F.linear(input, w, b)
    if extra:                       # (N, C * prod(out), ) -> (N, C, *out)
        logits = logits.reshape(tuple(input.shape[:-1]) + (C,) + extra)
    return F.cross_entropy(logits, target, weight=weight, reduction=reduction,
                           ignore_index=-100 if ignore_index is None else ignore_index,
                           label_smoothing=label_smoothing)


def elu_(input, alpha=1.0):
    """elu in place."""
    return _F().elu(input, alpha, inplace=True)


def selu_(input):
    """selu in place."""
    return _F().selu(input, inplace=True)


def celu_(input, alpha=1.0):
    """celu in place."""
    return _F().celu(input, alpha, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """rrelu in place."""
    return _F().rrelu(input, lower, upper, training, inplace=True)


def native_channel_shuffle(input, groups):
    """channel_shuffle (torch's native entry point).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.native_channel_shuffle(clgrad.arange(4.0).reshape(1, 4, 1, 1), 2).reshape(-1).tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    return _F().channel_shuffle(input, groups)


# torch's __torch_function__ protocol: clgrad tensors carry no overrides, so nothing dispatches
def has_torch_function(relevant_args):
    """False: no argument overrides clgrad's functions (clgrad has no __torch_function__)."""
    return False


has_torch_function_unary = has_torch_function


def has_torch_function_variadic(*args):
    """False, as has_torch_function."""
    return False


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call public_api(*args, **kwargs): there is no override to hand the call to."""
    return public_api(*args, **kwargs)


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """torch's helper that picks if_true or if_false by a boolean argument."""
    def fn(*args, **kwargs):
        flag = kwargs[arg_name] if arg_name in kwargs else \
            args[arg_index] if arg_index < len(args) else default
        return (if_true if flag else if_false)(*args, **kwargs)
    fn.__name__ = func_name
    fn.__module__ = module_name
    return fn


def assert_int_or_pair(arg, arg_name, message):
    """torch's check that arg is an int or a pair of them."""
    assert isinstance(arg, int) or len(arg) == 2, message.format(arg_name)
