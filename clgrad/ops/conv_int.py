"""Convolutions of integer tensors, which torch computes on the CPU (int64: every convolution;
the narrower integers: undilated convolutions, no transposed ones; see conv.check_int_conv).

No kernel of the conv family takes integers, and float64 would be exact only while the sums stay
below 2**53 (and is missing on some devices). So they are composed here of integer ops: the
taps of the zero-padded input stacked by slicing (an im2col), then one batched int64 matmul per
group, exact and wrapping on overflow like torch's integer kernels (narrower results are the
int64 result wrapped to their width, as torch's are). A transposed convolution is the
convolution of the stride-dilated input with the flipped, transposed weight over the full
output, cropped by the padding. No autograd: integer tensors carry no gradient.
"""
import itertools
import math

from .. import dtypes
from .creation import zeros
from .join import stack
from .shape import flip, pad


def _pad_list(before, after):
    """torch's pad list (last dim first) from per-dim (before, after)."""
    out = []
    for b, a in zip(reversed(before), reversed(after)):
        out += [b, a]
    return out


def int_conv(x, w, bias, stride, before, after, dilation, groups):
    """x (N, C, *S) and w (C_out, C / groups, *K) of one integer dtype, bias (C_out,) or None;
    stride, before / after (padding) and dilation per spatial dim -> (N, C_out, *O) of x's
    dtype."""
    nd = x.ndim - 2
    dt = x.dtype
    x, w = x.to(dtypes.int64), w.to(dtypes.int64)
    if any(before) or any(after):
        x = pad(x, _pad_list(before, after))
    N, C = x.shape[:2]
    K, Co, G = tuple(w.shape[2:]), w.shape[0], groups
    O = tuple((s - d * (k - 1) - 1) // st + 1
              for s, k, d, st in zip(x.shape[2:], K, dilation, stride))
    taps = [x[(slice(None), slice(None)) +
              tuple(slice(t * d, t * d + (o - 1) * st + 1, st)
                    for t, d, o, st in zip(tap, dilation, O, stride))]
            for tap in itertools.product(*[range(k) for k in K])]
    KK, L = math.prod(K), math.prod(O)
    cols = stack(taps, 2).reshape(N, G, (C // G) * KK, L).transpose(2, 3)    # [N, G, L, Cg*K]
    wm = w.reshape(G, Co // G, (C // G) * KK).transpose(1, 2)                # [G, Cg*K, Co/G]
    y = cols.matmul(wm).transpose(2, 3).reshape((N, Co) + O)
    if bias is not None:
        y = y + bias.to(dtypes.int64).reshape((1, Co) + (1,) * nd)
    return y.to(dt)


def int_conv_transpose(x, w, bias, stride, padding, output_padding, dilation, groups, out):
    """x (N, C_in, *S) and w (C_in, C_out / groups, *K) of one integer dtype; `out` the output
    sizes (already checked) -> (N, C_out, *out) of x's dtype."""
    nd = x.ndim - 2
    N, Ci = x.shape[:2]
    K, Cog, G = tuple(w.shape[2:]), w.shape[1], groups
    if any(s != 1 for s in stride):                # the input dilated by the stride
        z = zeros((N, Ci) + tuple((n - 1) * s + 1 for n, s in zip(x.shape[2:], stride)),
                  dtype=x.dtype, device=x.device)
        z[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)] = x
        x = z
    wf = w.reshape((G, Ci // G, Cog) + K).transpose(1, 2).reshape((G * Cog, Ci // G) + K)
    wf = flip(wf, list(range(2, 2 + nd)))
    full = tuple(d * (k - 1) for d, k in zip(dilation, K))
    y = int_conv(x, wf, None, (1,) * nd, full, full, dilation, groups)
    # output position o is full position o + padding; output_padding may reach past the end
    extra = tuple(max(0, p + o - n) for p, o, n in zip(padding, out, y.shape[2:]))
    if any(extra):
        y = pad(y, _pad_list((0,) * nd, extra))
    y = y[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(padding, out))]
    if bias is not None:
        y = (y.to(dtypes.int64) + bias.to(dtypes.int64).reshape((1, G * Cog) + (1,) * nd))
    return y.to(x.dtype).contiguous()
