"""Convolution and pooling with torch.nn.functional's signatures: conv1d, conv2d,
conv_transpose2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d.

Convolutions run direct kernels (cl_kernels/conv.mako, launched by clgrad.kernels.conv with their
tuned register blocking), not im2col + GEMM: an implicit GEMM that reads its pixel vectors
straight from a zero-padded copy of the input, and a second kernel for the weight gradient.
Measured on PoCL for a 3x3 convolution of 32x32x32x32 to 64 channels, the products alone
through the gemm family (without forming the column matrix, nine times the input, and
its packed copy) take 1.6x the direct kernel's time forward and for the input gradient, 1.3x for
the weight gradient. Every convolution is one Op, `Convolution` (torch's aten::convolution,
whose node is ConvolutionBackward0):

- conv2d (conv1d is conv2d over a height of 1): conv_fwd over the padded input;
- conv_transpose2d: split into stride_h * stride_w stride-1 convolutions, one per output phase
  (the output pixels oh = a * stride + r only see the kernel taps kh with
  (r + padding - kh * dilation) % stride == 0), each with its taps flipped, so that no FLOP is
  spent on the zeros a "dilate the input, then convolve" scheme would multiply;
- the input gradient of one is the other (conv2d <-> conv_transpose2d with the same weight),
  the weight gradient is `ConvWeightGrad` (conv_wgrad), the bias gradient a sum. ConvWeightGrad
  is bilinear and differentiates into Convolutions again, so every order of gradient works.

Pooling (cl_kernels/pool.mako, clgrad.kernels.pool) runs one work-item per output row forward
and, backward, one per input row that gathers from the outputs whose windows hold it: no
atomics, deterministic. The backward passes are Ops too (max: gather by the saved indices;
averages: the forward pooling), so they can be differentiated again.
"""
import numbers

from .. import dtypes
from ..autograd.op import Op
from ..kernels.conv import FLOATS, conv2d_raw, conv_transpose2d_raw, conv_weight_grad_raw
from ..kernels.pool import (adaptive_avg_pool2d_backward_raw, adaptive_avg_pool2d_raw,
                            avg_pool2d_backward_raw, avg_pool2d_raw, max_pool2d_backward_raw,
                            max_pool2d_raw)
from ..tensor import Tensor, numel_of
from . import views
from .window_args import adaptive_size, conv_ints as _ints, pool_geometry
from ._base import check_fp64, full_raw, same_device, size_repr, view_raw
from .conv_int import int_conv, int_conv_transpose
from .scatter_gather import gather

_TORCH_NAMES = dtypes.TORCH_NAMES
_C_NAMES = dtypes.C_NAMES


# ---- autograd ops --------------------------------------------------------------------------------
# Convolution tensors are 4-d, or 3-d for 1-d convolutions (seen as 4-d with a height of 1; the
# geometry is then always given for two dims).
def _as4(t):
    if t is None or len(t._shape) == 4:
        return t
    n, c, l = t._shape
    s = t._strides
    return view_raw(t, (n, c, 1, l), (s[0], s[1], l * s[2], s[2]), t._offset)


def _as3(t):
    n, c, _, l = t._shape
    return view_raw(t, (n, c, l), (t._strides[0], t._strides[1], t._strides[3]), t._offset)


def _spatial(shape):
    return tuple(shape[2:]) if len(shape) == 4 else (1, shape[2])


def _sum_bias(g):
    # over batch and space: the reduction runs it in stages (space first), since those dims
    # do not merge
    return g.sum((0, 2, 3) if g.ndim == 4 else (0, 2))


class Convolution(Op):
    """torch's aten::convolution: conv2d or conv_transpose2d (1-d ones as 2-d over a height of
    1); `pad` is (top, left), out_hw the output's (height, width)."""

    @staticmethod
    def forward(ctx, x, w, bias, stride, pad, dilation, transposed, out_hw, groups):
        ctx.geo = (stride, pad, dilation, groups)
        ctx.transposed = transposed
        need = ctx.needs_input_grad
        if need:
            ctx.save_for_backward(x if need[1] else None, w if need[0] else None)
        raw = conv_transpose2d_raw if transposed else conv2d_raw
        out = raw(_as4(x), _as4(w), bias, stride, pad, dilation, groups, out_hw)
        return out if len(x._shape) == 4 else _as3(out)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        stride, pad, dilation, groups = ctx.geo
        need = ctx.needs_input_grad
        gx = gw = gb = None
        if need[0]:
            gx = Convolution.apply(g, w, None, stride, pad, dilation, not ctx.transposed,
                                   _spatial(ctx._in_meta[0][0]), groups)
        if need[1]:
            k_hw = _spatial(ctx._in_meta[1][0])
            if ctx.transposed:       # the transposed convolution's input plays the gradient
                gw = ConvWeightGrad.apply(g, x, stride, pad, dilation, groups, k_hw)
            else:
                gw = ConvWeightGrad.apply(x, g, stride, pad, dilation, groups, k_hw)
        if need[2]:
            gb = _sum_bias(g)
        return gx, gw, gb, None, None, None, None, None, None

    @staticmethod
    def jvp(args, tangents, out):
        x, w, b = args[:3]
        tx, tw, tb = tangents[:3]
        rest = args[3:]
        t = None
        if tx is not None:
            t = Convolution.apply(tx, w, None, *rest)
        if tw is not None:
            u = Convolution.apply(x, tw, None, *rest)
            t = u if t is None else t + u
        if tb is not None:
            u = views.reshape(tb, (1, -1, 1, 1) if len(out._shape) == 4 else (1, -1, 1))
            t = views.expand(u, out._shape) if t is None else t + u
        return t


class ConvWeightGrad(Op):
    """The weight gradient of conv2d(x, w) for output gradient g, as a function of x and g (both
    4-d or both 3-d); bilinear, so its own gradients are convolutions again."""

    @staticmethod
    def forward(ctx, x, g, stride, pad, dilation, groups, k_hw):
        ctx.geo = (stride, pad, dilation, groups)
        need = ctx.needs_input_grad
        if need:
            ctx.save_for_backward(x if need[1] else None, g if need[0] else None)
        out = conv_weight_grad_raw(_as4(x), _as4(g), stride, pad, dilation, groups, k_hw)
        if len(x._shape) == 3:
            co, ci, _, kw = out._shape
            out = view_raw(out, (co, ci, kw), (out._strides[0], out._strides[1], 1), out._offset)
        return out

    @staticmethod
    def backward(ctx, gw):
        # <gw, W(x, g)> = <g, conv2d(x, gw)> = <x, conv_transpose2d(g, gw)>
        x, g = ctx.saved_tensors
        stride, pad, dilation, groups = ctx.geo
        need = ctx.needs_input_grad
        gx = gg = None
        if need[0]:
            gx = Convolution.apply(g, gw, None, stride, pad, dilation, True,
                                   _spatial(ctx._in_meta[0][0]), groups)
        if need[1]:
            gg = Convolution.apply(x, gw, None, stride, pad, dilation, False,
                                   _spatial(ctx._in_meta[1][0]), groups)
        return gx, gg, None, None, None, None, None

    @staticmethod
    def jvp(args, tangents, out):
        x, g = args[:2]
        tx, tg = tangents[:2]
        t = None
        if tx is not None:
            t = ConvWeightGrad.apply(tx, g, *args[2:])
        if tg is not None:
            u = ConvWeightGrad.apply(x, tg, *args[2:])
            t = u if t is None else t + u
        return t


# ---- argument checks with torch's messages -------------------------------------------------------
def _check_tensor(op, name, pos, t, optional=False):
    if t is None and optional:
        return
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(t).__name__}")


def _check_float(op, t):
    if t._dtype not in FLOATS:
        raise NotImplementedError(f'"{op}" not implemented for \'{_TORCH_NAMES[t._dtype]}\'')
    check_fp64(t._dtype, t._storage.device)


def _check_conv(op, x, w, bias, groups, nd, transposed):
    """torch's checks of input, weight, bias and groups (shapes, dtypes, devices)."""
    _check_tensor(op, "input", 1, x)
    _check_tensor(op, "weight", 2, w)
    _check_tensor(op, "bias", 3, bias, optional=True)
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, "
                           f"but got input of size: {size_repr(x._shape)}")
    if w.ndim < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if w.ndim != nd + 2:
        raise RuntimeError(f"{op}: expected a {nd + 2}-D weight, but got weight of size "
                           f"{size_repr(w._shape)}")
    same_device(op, [x, w, bias])
    if w._dtype is not x._dtype and x._dtype is not dtypes.bool_:   # bool: refused later
        raise RuntimeError(f"Input type ({_C_NAMES.get(x._dtype, x._dtype.name)}) and weight type "
                           f"({_C_NAMES.get(w._dtype, w._dtype.name)}) should be the same")
    if bias is not None and bias._dtype is not x._dtype:
        raise RuntimeError(f"Input type ({_C_NAMES.get(x._dtype, x._dtype.name)}) and bias type "
                           f"({_C_NAMES.get(bias._dtype, bias._dtype.name)}) should be the same")
    if x._dtype in FLOATS:            # integers: check_int_conv, once the geometry is known
        _check_float(op, x)
    if not isinstance(groups, numbers.Integral) or isinstance(groups, bool):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if 0 in w._shape[2:]:
        ks = w._shape[2:]
        raise RuntimeError("kernel size should be greater than zero, but got " + (
            f"kernel_height: {ks[0]} kernel_width: {ks[1]}" if len(ks) == 2 else
            f"kernel size {size_repr(ks)}") + f" ({op}: weight of size {size_repr(w._shape)})")
    if not transposed and w._shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {size_repr(w._shape)} instead")
    if w._shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {size_repr(w._shape)} "
                           f"instead")
    batched = x.ndim == nd + 2
    shape = x._shape if batched else (1,) + tuple(x._shape)
    cin = w._shape[0] if transposed else w._shape[1] * groups
    if shape[1] != cin:
        t = "transposed=1" if transposed else f"groups={groups}"
        raise RuntimeError(f"Given {t}, weight of size {size_repr(w._shape)}, expected "
                           f"input{size_repr(shape)} to have {cin} channels, but got {shape[1]} "
                           f"channels instead")
    cout = w._shape[1] * groups if transposed else w._shape[0]
    if bias is not None and (bias.ndim != 1 or bias._shape[0] != cout):
        t = "transposed=1, " if transposed else ""
        raise RuntimeError(f"Given {t}weight of size {size_repr(w._shape)}, expected bias to be "
                           f"1-dimensional with {cout} elements, but got bias of size "
                           f"{size_repr(bias._shape)} instead")
    return batched


def check_int_conv(op, x, dilation, transposed):
    """Whether x is an integer input to compute by clgrad.ops.conv_int; raises torch's
    NotImplementedError (CPU) for the ones torch has no kernel for: bool, the integers narrower
    than int64 in dilated or transposed convolutions. Empty inputs are computed, any dtype."""
    if x._dtype in FLOATS:
        return False
    if numel_of(x._shape) and (x._dtype is dtypes.bool_ or x._dtype is not dtypes.int64 and
                               (transposed or any(d != 1 for d in dilation))):
        what = "transposed " if transposed else "dilated " if x._dtype is not dtypes.bool_ else ""
        raise NotImplementedError(f'"{op}" not implemented for \'{_TORCH_NAMES[x._dtype]}\' '
                                  f"({what}convolution of input of shape {size_repr(x._shape)}, "
                                  f"dilation {tuple(dilation)})")
    return True


def _check_geometry(stride, padding, dilation):
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")


def _x_str(sizes):
    return " x ".join(str(s) for s in sizes)


def _conv(op, nd, input, weight, bias, stride, padding, dilation, groups):
    """conv1d / conv2d: checks, then one Convolution over (batched) 3-d or 4-d tensors."""
    batched = _check_conv(op, input, weight, bias, groups, nd, False)
    stride = _ints(op, "stride", stride, nd)
    dilation = _ints(op, "dilation", dilation, nd)
    ks = tuple(weight._shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            before = after = (0,) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            # the odd one of an odd total goes after, as torch does
            total = [d * (k - 1) for d, k in zip(dilation, ks)]
            before = tuple(t // 2 for t in total)
            after = tuple(t - t // 2 for t in total)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        before = after = _ints(op, "padding", padding, nd)
    _check_geometry(stride, before, dilation)
    sizes = tuple(input._shape[-nd:])
    padded = tuple(n + a + b for n, a, b in zip(sizes, before, after))
    dilated = tuple(d * (k - 1) + 1 for d, k in zip(dilation, ks))
    if any(p < k for p, k in zip(padded, dilated)):
        raise RuntimeError(f"Calculated padded input size per channel: ({_x_str(padded)}). "
                           f"Kernel size: ({_x_str(dilated)}). Kernel size can't be greater than "
                           f"actual input size")
    out = tuple((p - k) // s + 1 for p, k, s in zip(padded, dilated, stride))
    x = input if batched else views.unsqueeze(input, 0)
    if check_int_conv(op, x, dilation, False):
        y = int_conv(x, weight, bias, stride, before, after, dilation, groups)
        return y if batched else views.squeeze(y, 0)
    if nd == 1:
        stride, before, dilation, out = (1,) + stride, (0,) + before, (1,) + dilation, (1,) + out
    y = Convolution.apply(x, weight, bias, stride, before, dilation, False, out, groups)
    return y if batched else views.squeeze(y, 0)


# ---- public functions ----------------------------------------------------------------------------
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) of (N, C_in, L) or (C_in, L) input with a
    (C_out, C_in / groups, K) weight; padding is an int, a 1-tuple, 'valid' or 'same'.

    >>> import clgrad
    >>> x = clgrad.tensor([[[1.0, 2.0, 3.0, 4.0]]])
    >>> clgrad.conv1d(x, clgrad.tensor([[[1.0, 1.0]]])).tolist()
    [[[3.0, 5.0, 7.0]]]
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of (N, C_in, H, W) or (C_in, H, W) input with a
    (C_out, C_in / groups, KH, KW) weight; padding is an int, a pair, 'valid' or 'same'.

    >>> import clgrad
    >>> x = clgrad.arange(16.0).reshape(1, 1, 4, 4)
    >>> clgrad.conv2d(x, clgrad.ones(1, 1, 2, 2), stride=2).tolist()
    [[[[10.0, 18.0], [42.0, 50.0]]]]
    >>> clgrad.conv2d(x, clgrad.ones(2, 1, 3, 3), padding="same").shape
    clgrad.Size([1, 2, 4, 4])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution (the input gradient of conv2d) of (N, C_in, H, W) or
    (C_in, H, W) input with a (C_in, C_out / groups, KH, KW) weight. Output size per dim:
    (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1.

    >>> import clgrad
    >>> x = clgrad.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    >>> clgrad.conv_transpose2d(x, clgrad.ones(1, 1, 2, 2), stride=2).tolist()[0][0][0]
    [1.0, 1.0, 2.0, 2.0]
    """
    op = "conv_transpose2d"
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    batched = _check_conv(op, input, weight, bias, groups, 2, True)
    stride = _ints(op, "stride", stride, 2)
    padding = _ints(op, "padding", padding, 2)
    output_padding = _ints(op, "output_padding", output_padding, 2)
    dilation = _ints(op, "dilation", dilation, 2)
    _check_geometry(stride, padding, dilation)
    if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)) or \
            any(o < 0 for o in output_padding):
        (oh, ow), (sh, sw), (dh, dw) = output_padding, stride, dilation
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but "
                           f"got output_padding_height: {oh} output_padding_width: {ow} "
                           f"stride_height: {sh} stride_width: {sw} dilation_height: {dh} "
                           f"dilation_width: {dw}")
    sizes = tuple(input._shape[-2:])
    out = tuple((n - 1) * s - 2 * p + d * (k - 1) + o + 1 for n, s, p, d, k, o in
                zip(sizes, stride, padding, dilation, weight._shape[2:], output_padding))
    if any(o < 1 for o in out):
        raise RuntimeError(f"Given input size per channel: ({_x_str(sizes)}). Calculated output "
                           f"size per channel: ({_x_str(out)}). Output size is too small")
    x = input if batched else views.unsqueeze(input, 0)
    if check_int_conv(op, x, dilation, True):
        y = int_conv_transpose(x, weight, bias, stride, padding, output_padding, dilation, groups,
                               out)
        return y if batched else views.squeeze(y, 0)
    y = Convolution.apply(x, weight, bias, stride, padding, dilation, True, out, groups)
    return y if batched else views.squeeze(y, 0)


# ---- pooling -------------------------------------------------------------------------------------
# The pooling ops take (N, C, H, W) or unbatched (C, H, W) tensors, as torch's kernels do (the
# pool family: clgrad.kernels.pool).
class MaxPool2DWithIndices(Op):
    """max_pool2d: (values, int64 index of each max in its H * W plane)."""

    @staticmethod
    def forward(ctx, x, k, stride, pad, dilation, out_hw, want_idx):
        # the indices are only written when someone needs them (the caller or backward)
        out, idx = max_pool2d_raw(x, k, stride, pad, dilation, out_hw,
                                  want_idx or ctx.needs_input_grad)
        ctx.geo = (k, stride, pad, dilation)
        ctx.mark_non_differentiable(idx)
        if ctx.needs_input_grad:
            ctx.save_for_backward(idx)
        return out, idx

    @staticmethod
    def backward(ctx, g, _):
        idx, = ctx.saved_tensors
        gx = MaxPool2DWithIndicesBackward.apply(g, idx, ctx._in_meta[0][0], *ctx.geo)
        return gx, None, None, None, None, None, None


MaxPool2DWithIndices._backward_cls._handles_none = True


class MaxPool2DWithIndicesBackward(Op):
    """The input gradient of max_pool2d: each output's gradient goes to its max's index."""

    @staticmethod
    def forward(ctx, g, idx, x_shape, k, stride, pad, dilation):
        if ctx.needs_input_grad:
            ctx.save_for_backward(idx)
        return max_pool2d_backward_raw(g, idx, x_shape, k, stride, pad, dilation)

    @staticmethod
    def backward(ctx, ggx):
        # linear in g: the adjoint picks ggx at each output's index
        idx, = ctx.saved_tensors
        lead, (oh, ow) = tuple(idx._shape[:-2]), idx._shape[-2:]
        flat = views.reshape(ggx, lead + (-1,))
        if numel_of(idx._shape) == 0:
            picked = full_raw(idx._shape, 0, ggx._dtype, ggx._storage.device)
        else:
            picked = views.reshape(gather(flat, -1, views.reshape(idx, lead + (oh * ow,))),
                                   idx._shape)
        return picked, None, None, None, None, None, None


class AvgPool2D(Op):
    @staticmethod
    def forward(ctx, x, k, stride, pad, out_hw, include_pad, divisor):
        out = avg_pool2d_raw(x, k, stride, pad, out_hw, include_pad, divisor)
        ctx.args = (k, stride, pad, include_pad, divisor)
        return out

    @staticmethod
    def backward(ctx, g):
        gx = AvgPool2DBackward.apply(g, ctx._in_meta[0][0], *ctx.args)
        return gx, None, None, None, None, None, None


class AvgPool2DBackward(Op):
    """The input gradient of avg_pool2d: each output's gradient spread over its window."""

    @staticmethod
    def forward(ctx, g, x_shape, k, stride, pad, include_pad, divisor):
        gx = avg_pool2d_backward_raw(g, x_shape, k, stride, pad, include_pad, divisor)
        ctx.args = (k, stride, pad, include_pad, divisor)
        return gx

    @staticmethod
    def backward(ctx, ggx):
        # linear in g, and avg_pool2d is its adjoint
        k, stride, pad, include_pad, divisor = ctx.args
        out_hw = tuple(ctx._in_meta[0][0][-2:])
        gg = AvgPool2D.apply(ggx, k, stride, pad, out_hw, include_pad, divisor)
        return gg, None, None, None, None, None, None


class AdaptiveAvgPool2D(Op):
    @staticmethod
    def forward(ctx, x, out_hw):
        return adaptive_avg_pool2d_raw(x, out_hw)

    @staticmethod
    def backward(ctx, g):
        return AdaptiveAvgPool2DBackward.apply(g, ctx._in_meta[0][0]), None


class AdaptiveAvgPool2DBackward(Op):
    @staticmethod
    def forward(ctx, g, x_shape):
        return adaptive_avg_pool2d_backward_raw(g, x_shape)

    @staticmethod
    def backward(ctx, ggx):
        return AdaptiveAvgPool2D.apply(ggx, tuple(ctx._in_meta[0][0][-2:])), None


def _pool_input(op, x):
    """torch's checks of a pooling input: (N, C, H, W) or (C, H, W), only N may be 0."""
    _check_tensor(op, "input", 1, x)
    if x.ndim not in (3, 4) or any(n == 0 for n in x._shape[-3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got:{size_repr(x._shape)}")
    _check_float(op, x)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling of (N, C, H, W) or (C, H, W) input; stride defaults to kernel_size. With
    return_indices, also the int64 position of each max in its H * W plane (the first maximum in
    row-major order; a NaN wins over numbers).

    >>> import clgrad
    >>> x = clgrad.tensor([[[[1.0, 5.0], [3.0, 2.0]]]])
    >>> v, i = clgrad.max_pool2d(x, 2, return_indices=True)
    >>> v.tolist(), i.tolist()
    ([[[[5.0]]]], [[[[1]]]])
    """
    op = "max_pool2d"
    _check_tensor(op, "input", 1, input)
    if input.ndim not in (3, 4) or (input.ndim == 3 and not input.numel()):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    _pool_input(op, input)
    k, s, p, d, out = pool_geometry(op, input, 2, kernel_size, stride, padding, dilation,
                                    ceil_mode)
    values, idx = MaxPool2DWithIndices.apply(input, k, s, p, d, out, bool(return_indices))
    return (values, idx) if return_indices else values


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling of (N, C, H, W) or (C, H, W) input; stride defaults to kernel_size.
    count_include_pad counts the zero padding in each window's divisor; divisor_override
    replaces the divisor.

    >>> import clgrad
    >>> x = clgrad.arange(16.0).reshape(1, 1, 4, 4)
    >>> clgrad.nn.functional.avg_pool2d(x, 2).tolist()
    [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    op = "avg_pool2d"
    _pool_input(op, input)
    k, s, p, _, out = pool_geometry(op, input, 2, kernel_size, stride, padding, 1, ceil_mode)
    divisor = 0
    if divisor_override is not None:
        divisor = int(divisor_override)
        if divisor == 0:
            raise RuntimeError("divisor must be not zero")
    return AvgPool2D.apply(input, k, s, p, out, bool(count_include_pad), divisor)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling of (N, C, H, W) or (C, H, W) input to output_size (an int, or a pair
    whose None entries keep the input's size): output o averages input
    [floor(o * H / OH), ceil((o + 1) * H / OH)) along each dim.

    >>> import clgrad
    >>> x = clgrad.arange(5.0).reshape(1, 1, 1, 5)
    >>> clgrad.nn.functional.adaptive_avg_pool2d(x, (1, 3)).tolist()
    [[[[0.5, 2.0, 3.5]]]]
    """
    op = "adaptive_avg_pool2d"
    _check_tensor(op, "input", 1, input)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got "
                           f"{size_repr(input._shape)}")
    for i in range(1, input.ndim):
        if input._shape[i] == 0:
            raise RuntimeError(f"adaptive_avg_pool2d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes "
                               f"{size_repr(input._shape)} with dimension {i} being empty")
    _check_float(op, input)
    out = adaptive_size(op, input, output_size, 2)
    if out == (1, 1):          # a global average, as torch does it (its node is MeanBackward1)
        return input.mean((-2, -1), keepdim=True)
    return AdaptiveAvgPool2D.apply(input, out)


FUNCTIONS = {"conv1d": conv1d, "conv2d": conv2d, "conv_transpose2d": conv_transpose2d,
             "max_pool2d": max_pool2d}
METHODS = {}
