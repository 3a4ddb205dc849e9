"""torch.nn.functional's linear (one GEMM, torch's addmm / matmul dispatch) and bilinear,
composed of clgrad ops."""
from . import linalg
from ..tensor import Tensor
from .loss import _check_into

__all__ = ["linear", "bilinear"]


def linear(input, weight, bias=None):
    """input @ weight.T + bias, over any leading dimensions.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.linear(clgrad.ones(2, 3), clgrad.ones(4, 3), clgrad.zeros(4)).tolist()[0]
    [3.0, 3.0, 3.0, 3.0]
    """
    if input.ndim == 0 or weight.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{input.ndim}D and {weight.ndim}D")
    # torch's dispatch: addmm for a 2-d input with a bias, and for any contiguous input with a
    # bias of one dim (after squeeze); else matmul and the bias added in place
    if bias is not None and (input.ndim == 2 or (bias.ndim == 1 or bias.squeeze().ndim == 1)
                             and bias.is_contiguous() and input.is_contiguous()):
        wt = weight.t()
        if wt.ndim != 2:
            raise RuntimeError(f"mat2 must be a matrix, got {wt.ndim}-D tensor (linear: input of "
                               f"shape {list(input.shape)}, weight of shape "
                               f"{list(weight.shape)}, bias of shape {list(bias.shape)})")
        # one GEMM with the bias folded in; leading dims are flattened (a view when contiguous)
        if input.ndim == 2:
            return linalg.addmm(bias, input, wt)
        flat = linalg.addmm(bias, input.reshape(-1, input.shape[-1]), wt)
        return flat.reshape(tuple(input.shape[:-1]) + (weight.shape[0],))
    out = linalg.matmul(input, weight.t())
    if bias is None:
        return out
    _check_into(out, bias)                    # output.add_(bias): out's shape and dtype
    r = out + bias
    return r if r.dtype is out.dtype else r.to(out.dtype)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o].

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.bilinear(clgrad.ones(1, 2), clgrad.ones(1, 3), clgrad.ones(4, 2, 3)).tolist()
    [[6.0, 6.0, 6.0, 6.0]]
    """
    for name, t in (("input1", input1), ("input2", input2), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"bilinear(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, got {list(weight.shape)}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != weight.shape[0]):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{list(bias.shape)} but expected [{weight.shape[0]}]")
    lead = tuple(input1.shape[:-1])
    O, I, J = weight.shape
    a = input1.reshape(-1, I)
    # (x1 W_o) for every o at once: [B, I] @ [I, O * J], then the dot with x2 over j
    t = a.matmul(weight.permute(1, 0, 2).reshape(I, O * J)).reshape(-1, O, J)
    y = (t * input2.reshape(-1, 1, J)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(lead + (O,))
