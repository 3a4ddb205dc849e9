"""torch.nn.functional's convolutions over the 2-d kernels of clgrad/ops/conv.py: conv1d and
conv2d with torch's padding strings ('same', 'valid'), conv_transpose2d, and, composed from
clgrad ops so that they differentiate to any order, unfold / fold (im2col and col2im) and the
convolutions beyond 2-d: conv3d, conv_transpose1d, conv_transpose3d.

- unfold gathers every window of the zero-padded input through one index table (the flat
  position of each tap of each block); fold is its adjoint, an index_add of the blocks into the
  padded output. Each is the other's gradient, exactly (no multiplication by one-hot weights,
  so infinities and NaNs stay where they are).
- conv3d stacks the kernel-depth taps of the input along the channels (an im2col over depth
  only) and runs one conv2d over (N * D_out) planes; the weight's depth goes into its input
  channels the same way (within each group).
- conv_transpose3d is its adjoint: one conv_transpose2d whose output channels carry the
  kernel-depth taps, then an index_add of each tap's planes onto the output depth
  (id * stride + kd * dilation), cropped by the padding.
- conv_transpose1d is conv_transpose2d over a height of 1, as torch runs it.
"""
import numpy as np

from . import conv as _conv
from . import views
from .creation import tensor as _tensor, zeros
from .join import stack
from .shape import pad
from .window_args import _ntuple
from ..tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv_transpose2d", "unfold", "fold", "conv3d", "conv_transpose1d",
           "conv_transpose3d"]


# ---- conv1d / conv2d: torch's padding strings ------------------------------------------------
def _string_padding(input, weight, stride, padding, dilation, nd):
    """Turn padding='valid' / 'same' into numbers; 'same' with odd total padding pads the input
    (the extra element on the right, as torch does) and returns 0."""
    if padding == "valid":
        return input, 0
    if padding != "same":             # torch's functional raises RuntimeError (modules: ValueError)
        raise RuntimeError(f"Invalid padding string: '{padding}' (conv{nd}d of input of shape "
                           f"{list(input.shape)})")
    if any(s != 1 for s in _ntuple(nd)(stride)):
        raise RuntimeError(f"padding='same' is not supported for strided convolutions (conv{nd}d "
                           f"of input of shape {list(input.shape)}, stride {stride})")
    dil = _ntuple(nd)(dilation)
    total = [d * (k - 1) for d, k in zip(dil, weight.shape[2:])]
    left = [t // 2 for t in total]
    if all(t % 2 == 0 for t in total):
        return input, tuple(left)
    extra = []
    for t, lo in zip(reversed(total), reversed(left)):      # pad lists the last dim first
        extra += [0, t - 2 * lo]
    return pad(input, extra), tuple(left)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) over (N, C, L) inputs; padding may be 'same' or
    'valid'."""
    if isinstance(padding, str):
        input, padding = _string_padding(input, weight, stride, padding, dilation, 1)
    return _conv.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) over (N, C, H, W) inputs; padding may be 'same' or
    'valid'."""
    if isinstance(padding, str):
        input, padding = _string_padding(input, weight, stride, padding, dilation, 2)
    return _conv.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution (the gradient of conv2d with respect to its input)."""
    return _conv.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                                  dilation)


# ---- unfold / fold and the convolutions beyond 2-d -------------------------------------------
def _pair(op, name, v, n=2):
    return _conv._ints(op, name, v, n, "convolution dimensions")


def _index_table(dev, hw_pad, ks, dil, stride, blocks):
    """[K, L] int64: the flat position in the padded plane of tap k of block l."""
    (Hp, Wp), (kh, kw), (dh, dw), (sh, sw), (oh, ow) = hw_pad, ks, dil, stride, blocks
    rows = (np.arange(kh)[:, None, None, None] * dh + np.arange(oh)[None, None, :, None] * sh)
    cols = (np.arange(kw)[None, :, None, None] * dw + np.arange(ow)[None, None, None, :] * sw)
    idx = (rows * Wp + cols).reshape(kh * kw, oh * ow).astype(np.int64)
    return _tensor(idx, device=dev)


def _fold_args(op, kernel_size, dilation, padding, stride):
    ks = _pair(op, "kernel_size", kernel_size)
    dil = _pair(op, "dilation", dilation)
    pd = _pair(op, "padding", padding)
    st = _pair(op, "stride", stride)
    if any(k <= 0 for k in ks):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: "
                           f"{ks[0]} kernel_width: {ks[1]}")
    if any(d <= 0 for d in dil):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: "
                           f"{dil[0]} dilation_width: {dil[1]}")
    if any(p < 0 for p in pd):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {pd[0]} "
                           f"pad_width: {pd[1]}")
    if any(s <= 0 for s in st):
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: "
                           f"{st[0]} stride_width: {st[1]}")
    return ks, dil, pd, st


def _blocks(op, hw, ks, dil, pd, st):
    out = tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                for n, k, d, p, s in zip(hw, ks, dil, pd, st))
    if any(o < 1 for o in out):
        raise RuntimeError(f"Given input with spatial size {tuple(hw)}, kernel_size={ks}, "
                           f"dilation={dil}, padding={pd}, calculated shape of the array of "
                           f"sliding blocks as {out}, but its components must be at least one.")
    return out


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding local blocks (im2col): (N, C, H, W) -> (N, C * prod(kernel_size), L),
    L the number of blocks; (C, H, W) input gives (C * prod(kernel_size), L).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.unfold(clgrad.arange(9.0).reshape(1, 1, 3, 3), 2).tolist()
    [[[0.0, 1.0, 3.0, 4.0], [1.0, 2.0, 4.0, 5.0], [3.0, 4.0, 6.0, 7.0], [4.0, 5.0, 7.0, 8.0]]]
    """
    op = "unfold"
    _conv._check_tensor(op, "input", 1, input)
    if input.ndim not in (3, 4) or any(n == 0 for n in input.shape[-3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got: {list(input.shape)}")
    ks, dil, pd, st = _fold_args(op, kernel_size, dilation, padding, stride)
    x = input if input.ndim == 4 else views.unsqueeze(input, 0)
    N, C, H, W = x.shape
    oh, ow = _blocks(op, (H, W), ks, dil, pd, st)
    if any(pd):
        x = pad(x, [pd[1], pd[1], pd[0], pd[0]])
    Hp, Wp = H + 2 * pd[0], W + 2 * pd[1]
    idx = _index_table(input.device, (Hp, Wp), ks, dil, st, (oh, ow))
    cols = x.reshape(N, C, Hp * Wp)[:, :, idx]                  # [N, C, K, L]
    out = cols.reshape(N, C * ks[0] * ks[1], oh * ow)
    return out if input.ndim == 4 else views.squeeze(out, 0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum sliding local blocks into a tensor (col2im), the adjoint of unfold:
    (N, C * prod(kernel_size), L) -> (N, C, *output_size); overlapping taps add up.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.fold(clgrad.ones(1, 4, 4), (3, 3), 2).tolist()
    [[[[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]]]
    """
    op = "fold"
    _conv._check_tensor(op, "input", 1, input)
    if input.ndim not in (2, 3) or any(n == 0 for n in input.shape[-2:]):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got: {list(input.shape)}")
    hw = _pair(op, "output_size", output_size)
    ks, dil, pd, st = _fold_args(op, kernel_size, dilation, padding, stride)
    x = input if input.ndim == 3 else views.unsqueeze(input, 0)
    N, CK, L = x.shape
    K = ks[0] * ks[1]
    if CK % K:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={CK} and kernel_size={ks}.")
    oh, ow = _blocks(op, hw, ks, dil, pd, st)
    if L != oh * ow:
        raise RuntimeError(f"Given output_size={hw}, kernel_size={ks}, dilation={dil}, "
                           f"padding={pd}, stride={st}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {oh} * {ow} = "
                           f"{oh * ow}, but got input.size(2)={L}.")
    C = CK // K
    Hp, Wp = hw[0] + 2 * pd[0], hw[1] + 2 * pd[1]
    idx = _index_table(input.device, (Hp, Wp), ks, dil, st, (oh, ow))
    plane = zeros((N, C, Hp * Wp), dtype=input.dtype, device=input.device)
    out = plane.index_add(2, idx.reshape(-1), x.reshape(N, C, K * L)).reshape(N, C, Hp, Wp)
    out = out[:, :, pd[0]:pd[0] + hw[0], pd[1]:pd[1] + hw[1]]
    return out if input.ndim == 3 else views.squeeze(out, 0)


# ---- 3-d convolution -------------------------------------------------------------------------
def _conv3d_padding(op, padding, stride, dilation, ks):
    """(before, after) per dim; 'same' puts the odd one of an odd total after, as torch."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * 3, (0,) * 3
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        total = [d * (k - 1) for d, k in zip(dilation, ks)]
        return tuple(t // 2 for t in total), tuple(t - t // 2 for t in total)
    p = _conv._ints(op, "padding", padding, 3)
    return p, p


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution (cross-correlation) of (N, C_in, D, H, W) or (C_in, D, H, W) input with
    a (C_out, C_in / groups, kD, kH, kW) weight; padding is an int, a triple, 'valid' or 'same'.

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.ones(1, 1, 3, 3, 3)
    >>> F.conv3d(x, clgrad.ones(2, 1, 2, 2, 2)).shape
    clgrad.Size([1, 2, 2, 2, 2])
    >>> F.conv3d(x, clgrad.ones(1, 1, 3, 3, 3), padding=1)[0, 0, 0, 0].tolist()
    [8.0, 12.0, 8.0]
    """
    op = "conv3d"
    batched = _conv._check_conv(op, input, weight, bias, groups, 3, False)
    stride = _conv._ints(op, "stride", stride, 3)
    dilation = _conv._ints(op, "dilation", dilation, 3)
    ks = tuple(weight.shape[2:])
    before, after = _conv3d_padding(op, padding, stride, dilation, ks)
    _conv._check_geometry(stride, before, dilation)
    sizes = tuple(input.shape[-3:])
    padded = tuple(n + a + b for n, a, b in zip(sizes, before, after))
    dilated = tuple(d * (k - 1) + 1 for d, k in zip(dilation, ks))
    if any(p < k for p, k in zip(padded, dilated)):
        raise RuntimeError(f"Calculated padded input size per channel: ({_conv._x_str(padded)}). "
                           f"Kernel size: ({_conv._x_str(dilated)}). Kernel size can't be greater "
                           f"than actual input size")
    _conv.check_int_conv(op, input, dilation, False)   # the depth's dilation counts too
    od = (padded[0] - dilated[0]) // stride[0] + 1
    x = input if batched else views.unsqueeze(input, 0)
    # the depth padding is applied here (the taps slice the depth); height and width padding go
    # to conv2d unless they are uneven ('same' with an even kernel)
    hw_even = before[1:] == after[1:]
    pads = [0, 0, 0, 0] if hw_even else [before[2], after[2], before[1], after[1]]
    pads += [before[0], after[0]]
    if any(pads):
        x = pad(x, pads)
    N, C = x.shape[:2]
    H, W = x.shape[3:]
    KD, G = ks[0], groups
    sd, dd = stride[0], dilation[0]
    taps = [x[:, :, k * dd:k * dd + (od - 1) * sd + 1:sd] for k in range(KD)]
    xs = stack(taps, 1).reshape(N, KD, G, C // G, od, H, W)       # channels as (group, kd, c)
    xs = xs.permute(0, 4, 2, 1, 3, 5, 6).reshape(N * od, G * KD * (C // G), H, W)
    Co, Cg = weight.shape[:2]
    w = weight.permute(0, 2, 1, 3, 4).reshape(Co, KD * Cg, ks[1], ks[2])
    hw_pad = before[1:] if hw_even else (0, 0)
    y = _conv.conv2d(xs, w, None, stride[1:], hw_pad, dilation[1:], groups)
    OH, OW = y.shape[-2:]
    y = y.reshape(N, od, Co, OH, OW).permute(0, 2, 1, 3, 4)
    y = y.contiguous() if bias is None else y + bias.reshape(1, Co, 1, 1, 1)
    return y if batched else views.squeeze(y, 0)


def _check_transposed(op, nd, input, weight, bias, groups):
    if isinstance(input, Tensor) and input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, "
                           f"but got input of size: {list(input.shape)}")
    return _conv._check_conv(op, input, weight, bias, groups, nd, True)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1-D transposed convolution of (N, C_in, L) or (C_in, L) input with a
    (C_in, C_out / groups, K) weight: conv_transpose2d over a height of 1.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.conv_transpose1d(clgrad.tensor([[[1.0, 2.0]]]), clgrad.ones(1, 1, 2)).tolist()
    [[[1.0, 3.0, 2.0]]]
    """
    op = "conv_transpose1d"
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    batched = _check_transposed(op, 1, input, weight, bias, groups)
    one = [(1,), (0,), (0,), (1,)]
    args = [_conv._ints(op, n, v, 1) for n, v in
            (("stride", stride), ("padding", padding), ("output_padding", output_padding),
             ("dilation", dilation))]
    s, p, o, d = [u + a for u, a in zip(one, args)]
    x = input if batched else views.unsqueeze(input, 0)
    y = _conv.conv_transpose2d(views.unsqueeze(x, 2), views.unsqueeze(weight, 2), bias, s, p, o,
                               groups, d)
    y = views.squeeze(y, 2)
    return y if batched else views.squeeze(y, 0)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution (the input gradient of conv3d) of (N, C_in, D, H, W) or
    (C_in, D, H, W) input with a (C_in, C_out / groups, kD, kH, kW) weight. Output size per
    dim: (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1.

    >>> import clgrad, clgrad.nn.functional as F
    >>> y = F.conv_transpose3d(clgrad.ones(1, 1, 2, 2, 2), clgrad.ones(1, 1, 2, 2, 2), stride=2)
    >>> y.shape, y.sum().item()
    (clgrad.Size([1, 1, 4, 4, 4]), 64.0)
    """
    op = "conv_transpose3d"
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    batched = _check_transposed(op, 3, input, weight, bias, groups)
    stride = _conv._ints(op, "stride", stride, 3)
    padding = _conv._ints(op, "padding", padding, 3)
    output_padding = _conv._ints(op, "output_padding", output_padding, 3)
    dilation = _conv._ints(op, "dilation", dilation, 3)
    _conv._check_geometry(stride, padding, dilation)
    if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)) or \
            any(o < 0 for o in output_padding):
        parts = [f"output_padding_{a}: {v}" for a, v in zip(("depth", "height", "width"),
                                                            output_padding)]
        parts += [f"stride_{a}: {v}" for a, v in zip(("depth", "height", "width"), stride)]
        parts += [f"dilation_{a}: {v}" for a, v in zip(("depth", "height", "width"), dilation)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           "got " + " ".join(parts))
    ks = tuple(weight.shape[2:])
    sizes = tuple(input.shape[-3:])
    out = tuple((n - 1) * s - 2 * p + d * (k - 1) + o + 1 for n, s, p, d, k, o in
                zip(sizes, stride, padding, dilation, ks, output_padding))
    if any(o < 1 for o in out):
        raise RuntimeError(f"Given input size per channel: ({_conv._x_str(sizes)}). Calculated "
                           f"output size per channel: ({_conv._x_str(out)}). Output size is too "
                           f"small")
    x = input if batched else views.unsqueeze(input, 0)
    N, Ci, ID, IH, IW = x.shape
    KD, G = ks[0], groups
    Cg = weight.shape[1]
    # the kernel-depth taps become output channels of one conv_transpose2d: (group, kd, c)
    xs = x.permute(0, 2, 1, 3, 4).reshape(N * ID, Ci, IH, IW)
    w = weight.permute(0, 2, 1, 3, 4).reshape(Ci, KD * Cg, ks[1], ks[2])
    y = _conv.conv_transpose2d(xs, w, None, stride[1:], padding[1:], output_padding[1:], groups,
                               dilation[1:])
    OH, OW = y.shape[-2:]
    y = y.reshape(N, ID, G, KD, Cg, OH, OW).permute(0, 1, 3, 2, 4, 5, 6)
    y = y.reshape(N, ID * KD, G * Cg, OH, OW)
    # tap kd of input depth i lands on depth i * stride + kd * dilation of the uncropped output
    pos = (np.arange(ID)[:, None] * stride[0] + np.arange(KD)[None, :] * dilation[0]).reshape(-1)
    full = out[0] + 2 * padding[0]
    acc = zeros((N, full, G * Cg, OH, OW), dtype=x.dtype, device=x.device)
    acc = acc.index_add(1, _tensor(pos.astype(np.int64), device=x.device), y)
    y = acc[:, padding[0]:padding[0] + out[0]].permute(0, 2, 1, 3, 4)
    y = y.contiguous() if bias is None else y + bias.reshape(1, G * Cg, 1, 1, 1)
    return y if batched else views.squeeze(y, 0)
