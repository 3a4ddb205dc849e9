"""torch.nn.functional's normalisations beyond batch, layer and group norm (in
clgrad/nn/functional.py): rms_norm, instance_norm and local_response_norm, composed of clgrad
ops."""

__all__ = ["rms_norm", "instance_norm", "local_response_norm"]


def _F():
    from . import functional
    return functional


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the trailing normalized_shape dims, times weight; eps
    defaults to the dtype's machine epsilon, as torch's.

    >>> import clgrad, clgrad.nn.functional as F
    >>> [round(v, 4) for v in F.rms_norm(clgrad.tensor([3.0, 4.0]), (2,)).tolist()]
    [0.8485, 1.1314]
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    n = len(normalized_shape)
    if tuple(input.shape[input.dim() - n:]) != tuple(normalized_shape):
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, normalized_shape))}], but got "
                           f"input of size{list(input.shape)}")
    if eps is None:
        eps = {"float64": 2.220446049250313e-16, "float16": 0.0009765625,
               "bfloat16": 0.0078125}.get(input.dtype.name, 1.1920928955078125e-07)
    dims = tuple(range(input.dim() - n, input.dim()))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) over its spatial positions; with running statistics,
    update them with the mean over the batch of the per-instance statistics (torch's rule).

    >>> import clgrad, clgrad.nn.functional as F
    >>> [round(v, 4) for v in F.instance_norm(clgrad.tensor([[[1.0, 3.0]]])).reshape(-1).tolist()]
    [-1.0, 1.0]
    """
    if input.dim() < 3:
        raise ValueError(f"expected 3D or more input (got {input.dim()}D input)")
    N, C = input.shape[0], input.shape[1]
    F = _F()
    x = input.reshape((1, N * C) + tuple(input.shape[2:]))
    rm = running_mean.repeat(N) if running_mean is not None else None
    rv = running_var.repeat(N) if running_var is not None else None
    out = F.batch_norm(x, rm, rv, None, None, use_input_stats, momentum, eps)
    if use_input_stats and running_mean is not None:
        from ..autograd.grad_mode import no_grad
        with no_grad():
            running_mean.copy_(rm.reshape(N, C).mean(0))
            running_var.copy_(rv.reshape(N, C).mean(0))
    out = out.reshape(tuple(input.shape))
    shape = (1, C) + (1,) * (input.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels) ** beta.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.local_response_norm(clgrad.ones(1, 3, 1), 2, alpha=1.0, beta=1.0, k=0.0).reshape(-1).tolist()
    [2.0, 1.0, 1.0]
    """
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    from ..ops.join import cat
    sq = (input * input).unsqueeze(1)                      # [N, 1, C, *]
    C = input.shape[1]
    zeros = lambda n: sq.new_zeros((sq.shape[0], 1, n) + tuple(sq.shape[3:]))  # noqa: E731
    padded = cat([zeros(size // 2), sq, zeros((size - 1) // 2)], 2)
    div = sum(padded.narrow(2, i, C) for i in range(size)).squeeze(1) / size
    return input / (div * alpha + k) ** beta
