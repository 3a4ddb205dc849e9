"""Convolutions: conv1d, conv2d and conv_transpose2d forward against a plain numpy convolution for
every option that changes the kernels' geometry (odd sizes, strides, dilation, groups and
depthwise, padding modes, 1x1 and non-square kernels, kernels smaller than the stride, batch of 1
and of 0), on every float dtype and on non-contiguous inputs; gradients with gradcheck (reverse
and forward mode) and gradgradcheck in float64; node names; torch's errors."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.kernels import conv as conv_kernels
from clgrad.runtime.device import wide_vectors_ok
from helpers import assert_close, float_dtypes, grad_dtype, grad_tols, make, rounded

TOL = {clgrad.float64: 1e-10, clgrad.float32: 2e-5, clgrad.float16: 4e-3, clgrad.bfloat16: 3e-2}


# ---- numpy references ----------------------------------------------------------------------------
def np_conv2d(x, w, b=None, stride=(1, 1), before=(0, 0), after=None, dilation=(1, 1),
              groups=1):
    """Cross-correlation, one kernel tap at a time: out += w[:, :, kh, kw] . shifted input."""
    after = before if after is None else after
    N, C, H, W = x.shape
    Co, Cig, KH, KW = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    xp = np.pad(x, ((0, 0), (0, 0), (before[0], after[0]), (before[1], after[1])))
    OH = (xp.shape[2] - dh * (KH - 1) - 1) // sh + 1
    OW = (xp.shape[3] - dw * (KW - 1) - 1) // sw + 1
    out = np.zeros((N, Co, OH, OW))
    Cog = Co // groups
    for g in range(groups):
        for kh in range(KH):
            for kw in range(KW):
                patch = xp[:, g * Cig:(g + 1) * Cig, kh * dh:kh * dh + sh * (OH - 1) + 1:sh,
                           kw * dw:kw * dw + sw * (OW - 1) + 1:sw]
                out[:, g * Cog:(g + 1) * Cog] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * Cog:(g + 1) * Cog, :, kh, kw])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def np_conv_transpose2d(x, w, b=None, stride=(1, 1), padding=(0, 0), output_padding=(0, 0),
                        groups=1, dilation=(1, 1)):
    """Every input pixel scatters weight * value onto the (uncropped) output, then the padding
    is cropped off."""
    N, Cin, H, W = x.shape
    _, Cog, KH, KW = w.shape
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = stride, padding, output_padding, dilation
    OH = (H - 1) * sh - 2 * ph + dh * (KH - 1) + oph + 1
    OW = (W - 1) * sw - 2 * pw + dw * (KW - 1) + opw + 1
    full = np.zeros((N, groups * Cog, (H - 1) * sh + dh * (KH - 1) + 1 + oph,
                     (W - 1) * sw + dw * (KW - 1) + 1 + opw))
    Cig = Cin // groups
    for g in range(groups):
        for kh in range(KH):
            for kw in range(KW):
                full[:, g * Cog:(g + 1) * Cog, kh * dh:kh * dh + sh * (H - 1) + 1:sh,
                     kw * dw:kw * dw + sw * (W - 1) + 1:sw] += np.einsum(
                    "nchw,co->nohw", x[:, g * Cig:(g + 1) * Cig],
                    w[g * Cig:(g + 1) * Cig, :, kh, kw])
    out = full[:, :, ph:ph + OH, pw:pw + OW]
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out


def np_conv_weight_grad(x, g, kernel, stride=(1, 1), padding=(0, 0), dilation=(1, 1),
                        groups=1):
    """The weight gradient of conv2d: the correlation of the padded input with g."""
    N, C, H, W = x.shape
    _, Co, OH, OW = g.shape
    (KH, KW), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    Cig, Cog = C // groups, Co // groups
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    gw = np.zeros((Co, Cig, KH, KW))
    for grp in range(groups):
        for kh in range(KH):
            for kw in range(KW):
                patch = xp[:, grp * Cig:(grp + 1) * Cig, kh * dh:kh * dh + sh * (OH - 1) + 1:sh,
                           kw * dw:kw * dw + sw * (OW - 1) + 1:sw]
                gw[grp * Cog:(grp + 1) * Cog, :, kh, kw] = np.einsum(
                    "nchw,nohw->oc", patch, g[:, grp * Cog:(grp + 1) * Cog])
    return gw


def pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def data(shape, dt, rng):
    return rounded(rng.uniform(-1, 1, size=shape), dt).astype(np.float64)


def check(out, expected, dt, scale=1.0):
    assert out.dtype is dt
    assert_close(out, expected, rtol=TOL[dt], atol=TOL[dt] * scale)


@pytest.fixture(params=["device", "gpu-like", "odd-blocks", "wide-blocks"])
def blocking(request, device, monkeypatch):
    """Run a test with the device's register blocking, with the GPU one and its launch shapes
    (on any device), or with odd block sizes and 4-wide vectors, so that every edge shows, and
    with 16-wide ones (8 on a device without 512-bit vectors)."""
    configs = {}                         # the configuration is looked up again for the path
    was = device.cpu_paths
    if request.param == "gpu-like":
        # set_code_paths, not a patched attribute: the kernels are then built with the GPU
        # paths' options too (REDUCE_BLOCKED, VEC), as they would be on a GPU
        device.set_code_paths(cpu=False)
    elif request.param == "odd-blocks":
        odd = {"MR": 3, "NV": 2, "MW": 1, "TJ": 5, "LY": 3, "LX": 2, "VW": 4}
        configs[device] = conv_kernels.check_config(odd, device)
    elif request.param == "wide-blocks":
        wide = {"MR": 3, "NV": 1, "MW": 2, "TJ": 3, "LY": 2, "LX": 3,
                "VW": 16 if wide_vectors_ok(device) else 8}
        configs[device] = conv_kernels.check_config(wide, device)
    monkeypatch.setattr(conv_kernels.CONV, "_configs", configs)
    monkeypatch.setattr(conv_kernels, "_PLANS", {})
    yield request.param
    if device.cpu_paths != was:
        device.set_code_paths(cpu=was)


# ---- conv2d --------------------------------------------------------------------------------------
# (N, Cin, Cout, H, W, kernel, stride, padding, dilation, groups)
CONV2D = [
    (2, 3, 4, 7, 9, 3, 1, 1, 1, 1),            # odd sizes, padding 1
    (2, 5, 7, 11, 6, 3, 2, 1, 1, 1),           # stride 2, odd channel counts
    (1, 4, 6, 10, 13, 3, (2, 1), (0, 2), 1, 1),  # per-dim stride and padding
    (2, 3, 5, 12, 11, 3, 1, 2, 2, 1),          # dilation 2
    (2, 4, 6, 9, 9, (2, 3), (1, 2), 0, (2, 1), 2),  # non-square kernel, groups 2
    (3, 6, 6, 8, 7, 3, 1, 1, 1, 6),            # depthwise
    (2, 4, 8, 7, 7, 3, 2, 1, 1, 4),            # depthwise with multiplier 2, strided
    (2, 8, 5, 6, 5, 1, 1, 0, 1, 1),            # 1x1
    (1, 3, 4, 9, 8, 1, 3, 0, 1, 1),            # 1x1 strided
    (2, 3, 4, 5, 5, 5, 1, 0, 1, 1),            # kernel as large as the input
    (1, 2, 3, 4, 6, 3, 3, 3, 1, 1),            # more padding than kernel, stride 3
    (1, 2, 30, 33, 35, 3, 1, 1, 1, 1),         # several blocks of output channels and pixels
    (2, 3, 5, 6, 16, 3, 1, 1, 1, 1),           # rows of whole tiles (8 or 16 lanes): by rows
    (1, 3, 9, 5, 32, 3, 1, 1, 1, 1),           # (32 lanes: PoCL's AVX-512 blocking)
]


def test_stride_1_outputs_are_walked_flat_or_by_rows_whichever_computes_less():
    # (rows, lanes per row, ...): 7 x 9 outputs in tiles of 8 lanes: flat over rows of 11 (80
    # lanes) rather than 7 rows of 16; 6 x 16 by rows (96 lanes, flat would be 112)
    cfg = {"NV": 2}
    assert conv_kernels._fwd_geometry(cfg, 4, 7, 9, 11, 1, 1)[:2] == (1, 77)
    assert conv_kernels._fwd_geometry(cfg, 4, 6, 16, 18, 1, 1)[:2] == (6, 16)


@pytest.mark.parametrize("case", CONV2D)
def test_conv2d(device, blocking, case):
    N, Ci, Co, H, W, k, s, p, d, G = case
    rng = np.random.default_rng(0)
    x = data((N, Ci, H, W), clgrad.float32, rng)
    w = data((Co, Ci // G) + pair(k), clgrad.float32, rng)
    b = data((Co,), clgrad.float32, rng)
    ref = np_conv2d(x, w, b, pair(s), pair(p), None, pair(d), G)
    out = F.conv2d(clgrad.tensor(x, dtype=clgrad.float32), clgrad.tensor(w, dtype=clgrad.float32),
                   clgrad.tensor(b, dtype=clgrad.float32), s, p, d, G)
    check(out, ref, clgrad.float32)
    # no bias, through clgrad.conv2d
    out = clgrad.conv2d(clgrad.tensor(x, dtype=clgrad.float32),
                        clgrad.tensor(w, dtype=clgrad.float32), None, s, p, d, G)
    check(out, ref - b.reshape(1, -1, 1, 1), clgrad.float32)


def test_conv2d_dtypes(device, blocking):
    rng = np.random.default_rng(1)
    for dt in float_dtypes(device):
        for s in (1, 2):
            x = data((2, 4, 9, 10), dt, rng)
            w = data((6, 2, 3, 3), dt, rng)
            b = data((6,), dt, rng)
            out = F.conv2d(make(x, dt, device), make(w, dt, device), make(b, dt, device), s, 1,
                           1, 2)
            check(out, np_conv2d(x, w, b, (s, s), (1, 1), None, (1, 1), 2), dt, scale=4)


def test_half_convolutions_round_as_float32_ones(device, blocking):
    """float16 / bfloat16 convolutions compute in float32 and round once: bit for bit the
    float32 convolution of the same values, cast (rows of whole vectors store through the
    vector conversion, ragged ends through the scalar one), forward and transposed; a NaN in
    the input spreads to the outputs it reaches, as in float32."""
    rng = np.random.default_rng(5)
    for dt in (clgrad.float16, clgrad.bfloat16):
        x = data((2, 3, 9, 37), dt, rng)
        x[1, 0, 4, 5] = np.nan
        w, b = data((5, 3, 3, 3), dt, rng), data((5,), dt, rng)
        half = [clgrad.tensor(a, dtype=dt, device=device) for a in (x, w, b)]
        full = [t.float() for t in half]
        for fn in (lambda x, w, b: F.conv2d(x, w, b, 1, 1),
                   lambda x, w, b: F.conv_transpose2d(x, w.transpose(0, 1), b, 1, 1)):
            got = fn(*half).float().numpy()
            ref = fn(*full).to(dt).float().numpy()
            assert np.isnan(got).any() and np.array_equal(got, ref, equal_nan=True), dt


@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_conv2d_non_contiguous(device, layout):
    rng = np.random.default_rng(2)
    x = data((2, 3, 7, 8), clgrad.float32, rng)
    w = data((4, 3, 3, 2), clgrad.float32, rng)
    b = data((4,), clgrad.float32, rng)
    for s in (1, 2):
        out = F.conv2d(make(x, clgrad.float32, device, layout), make(w, clgrad.float32, device,
                                                                       layout),
                       make(b, clgrad.float32, device, layout), s, 1)
        check(out, np_conv2d(x, w, b, (s, s), (1, 1)), clgrad.float32)
    # a channel slice and a batch slice
    big = clgrad.tensor(np.concatenate([x, x * 2], 1), dtype=clgrad.float32)
    out = F.conv2d(big[:, 3:], clgrad.tensor(w, dtype=clgrad.float32))
    check(out, np_conv2d(2 * x, w), clgrad.float32)


@pytest.mark.parametrize("k,dil", [(3, 1), (4, 1), (2, 3), ((3, 4), (2, 1))])
def test_conv2d_padding_strings(device, k, dil):
    rng = np.random.default_rng(3)
    x = data((2, 3, 7, 6), clgrad.float32, rng)
    w = data((5, 3) + pair(k), clgrad.float32, rng)
    xt, wt = clgrad.tensor(x, dtype=clgrad.float32), clgrad.tensor(w, dtype=clgrad.float32)
    total = [d * (kk - 1) for d, kk in zip(pair(dil), pair(k))]
    before = tuple(t // 2 for t in total)
    after = tuple(t - t // 2 for t in total)     # the odd one goes after, as in torch
    out = clgrad.conv2d(xt, wt, padding="same", dilation=dil)
    assert out.shape == (2, 5, 7, 6)
    check(out, np_conv2d(x, w, None, (1, 1), before, after, pair(dil)), clgrad.float32)
    out = clgrad.conv2d(xt, wt, padding="valid", dilation=dil)
    check(out, np_conv2d(x, w, None, (1, 1), (0, 0), None, pair(dil)), clgrad.float32)


def test_conv2d_unbatched_and_empty(device):
    rng = np.random.default_rng(4)
    x = data((3, 6, 5), clgrad.float32, rng)
    w = data((2, 3, 3, 3), clgrad.float32, rng)
    out = F.conv2d(clgrad.tensor(x, dtype=clgrad.float32), clgrad.tensor(w, dtype=clgrad.float32),
                   padding=1)
    check(out, np_conv2d(x[None], w, None, (1, 1), (1, 1))[0], clgrad.float32)
    e = F.conv2d(clgrad.zeros(0, 3, 6, 5), clgrad.tensor(w, dtype=clgrad.float32))
    assert e.shape == (0, 2, 4, 3)
    # no input channels: the bias alone
    e = F.conv2d(clgrad.zeros(2, 0, 4, 4), clgrad.zeros(3, 0, 3, 3), clgrad.tensor([1.0, 2, 3]))
    check(e, np.broadcast_to(np.array([1.0, 2, 3]).reshape(1, 3, 1, 1), (2, 3, 2, 2)),
          clgrad.float32)
    x = clgrad.zeros(0, 3, 6, 5, requires_grad=True)
    wt = clgrad.tensor(w, dtype=clgrad.float32, requires_grad=True)
    F.conv2d(x, wt, padding=1).sum().backward()
    assert x.grad.shape == (0, 3, 6, 5)
    assert_close(wt.grad, np.zeros(w.shape))


def _np_int_conv(x, w, b, stride, padding, dilation, groups):
    """An int64 convolution in numpy, wrapping on overflow as torch's integer kernels do."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    ks = w.shape[2:]
    outs = [(n - d * (k - 1) - 1) // s + 1 for n, k, d, s in
            zip(xp.shape[2:], ks, dilation, stride)]
    out = np.zeros((x.shape[0], w.shape[0]) + tuple(outs), dtype=np.int64)
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    with np.errstate(over="ignore"):
        for g in range(groups):
            for tap in np.ndindex(*ks):
                sl = tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                           for t, d, o, s in zip(tap, dilation, outs, stride))
                patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "nc...,oc->no...", patch, w[(slice(g * og, (g + 1) * og), slice(None)) + tap])
        if b is not None:
            out += b.reshape((1, -1) + (1,) * nd)
    return out


def test_integer_convolutions(device):
    """torch computes convolutions of integer tensors on the CPU (int64: all of them; the
    narrower integers: undilated, not transposed; bool: none, refused after the shape checks),
    exactly and wrapping on overflow: so does clgrad, whatever the size of the sums."""
    rng = np.random.default_rng(11)
    x = rng.integers(-9, 10, (2, 4, 6, 7))
    w = rng.integers(-9, 10, (6, 2, 3, 2))
    b = rng.integers(-9, 10, (6,))
    t = lambda a, dt=clgrad.int64: clgrad.tensor(a, dtype=dt, device=device)  # noqa: E731
    for s, p, d in ((1, 0, 1), (2, 1, 1), (1, 1, 2), (2, 0, 2)):
        out = F.conv2d(t(x), t(w), t(b), s, p, d, 2)
        assert out.dtype == clgrad.int64
        np.testing.assert_array_equal(out.numpy(), _np_int_conv(x, w, b, (s,) * 2, (p,) * 2,
                                                                (d,) * 2, 2))
    assert F.conv2d(t([[[[1]], [[0]]]]), t([[[[1]], [[0]]]]), dilation=2).tolist() == [[[[1]]]]
    same = F.conv2d(t(x), t(w[:, :, :, :1]), None, padding="same", groups=2)
    np.testing.assert_array_equal(same.numpy(), _np_int_conv(x, w[:, :, :, :1], None, (1, 1),
                                                             (1, 0), (1, 1), 2))
    big = rng.integers(-2 ** 40, 2 ** 40, (1, 4, 5, 5))       # sums far beyond 2 ** 53: wrap
    wb = rng.integers(-2 ** 30, 2 ** 30, (3, 4, 3, 3))
    np.testing.assert_array_equal(F.conv2d(t(big), t(wb)).numpy(),
                                  _np_int_conv(big, wb, None, (1, 1), (0, 0), (1, 1), 1))
    x1, w1 = x[0, :, 0], w[:4, :, 0]                           # unbatched conv1d
    np.testing.assert_array_equal(F.conv1d(t(x1), t(w1), None, 2, 1, 1, 2).numpy(),
                                  _np_int_conv(x1[None], w1, None, (2,), (1,), (1,), 2)[0])
    x3, w3 = x[:, :, None], w[:, :, None]
    np.testing.assert_array_equal(F.conv3d(t(x3), t(w3), None, 1, 1, 1, 2).numpy(),
                                  _np_int_conv(x3, w3, None, (1,) * 3, (1,) * 3, (1,) * 3, 2))
    for dt, nt in ((clgrad.int32, np.int32), (clgrad.int8, np.int8)):   # wrapped to the width
        out = F.conv2d(t(x * 7, dt), t(w * 5, dt), None, 1, 1, 1, 2)
        assert out.dtype == dt
        ref = _np_int_conv(x * 7, w * 5, None, (1, 1), (1, 1), (1, 1), 2)
        np.testing.assert_array_equal(out.numpy(), ref.astype(nt))
    # transposed, int64: the adjoint of the convolution, checked against the float reference
    xt, wt = x[:, :4], rng.integers(-9, 10, (4, 3, 3, 2))
    for s, p, op, d, g in (((1, 1), (0, 0), (0, 0), (1, 1), 1), ((2, 3), (1, 0), (1, 2), (1, 1), 2),
                           ((2, 1), (2, 1), (0, 0), (2, 1), 1)):
        wg = wt if g == 1 else wt[:, :3]
        out = F.conv_transpose2d(t(xt), t(wg), t(b[:wg.shape[1] * g]), s, p, op, g, d)
        ref = np_conv_transpose2d(xt.astype(np.float64), wg.astype(np.float64),
                                  b[:wg.shape[1] * g].astype(np.float64), s, p, op, g, d)
        assert out.dtype == clgrad.int64
        np.testing.assert_array_equal(out.numpy(), ref.astype(np.int64))
    y1 = F.conv_transpose1d(t(xt[:, :, 0]), t(wt[:, :, 0]), None, 2)
    ref = np_conv_transpose2d(xt[:, :, :1].astype(np.float64), wt[:, :, :1].astype(np.float64),
                              None, (1, 2))[:, :, 0]
    np.testing.assert_array_equal(y1.numpy(), ref.astype(np.int64))

    def refused(match, fn, *args, **kw):
        with pytest.raises(NotImplementedError, match=match):
            fn(*args, **kw)
    refused("conv2d.*'Int'", F.conv2d, t(x, clgrad.int32), t(w, clgrad.int32), groups=2,
            dilation=2)
    refused("conv_transpose2d.*'Char'", F.conv_transpose2d, t(xt, clgrad.int8),
            t(wt, clgrad.int8))
    refused("conv2d.*'Bool'", F.conv2d, t(x, clgrad.bool), t(w, clgrad.bool), groups=2)
    refused("conv1d.*'Bool'", F.conv1d, t(x1, clgrad.bool), t(w1, clgrad.float32), groups=2)
    with pytest.raises(RuntimeError, match="expected input"):  # the shapes come first
        F.conv2d(t(x, clgrad.bool), t(w, clgrad.bool))
    with pytest.raises(RuntimeError, match="weight type"):
        F.conv2d(t(x), t(w, clgrad.int32), groups=2)
    with pytest.raises(RuntimeError, match="strided convolutions"):   # torch: not ValueError
        F.conv2d(t(x), t(w), stride=2, padding="same", groups=2)
    with pytest.raises(RuntimeError, match="Invalid padding string"):
        F.conv1d(t(x1), t(w1), padding="full", groups=2)


# ---- conv1d --------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", [(2, 3, 4, 11, 3, 1, 1, 1, 1), (1, 4, 6, 16, 5, 3, 2, 2, 2),
                                  (3, 4, 4, 7, 1, 1, 0, 1, 4), (2, 2, 3, 9, 4, 1, "same", 2, 1)])
def test_conv1d(device, case):
    N, Ci, Co, L, k, s, p, d, G = case
    rng = np.random.default_rng(5)
    for dt in float_dtypes(device):
        x = data((N, Ci, L), dt, rng)
        w = data((Co, Ci // G, k), dt, rng)
        b = data((Co,), dt, rng)
        if p == "same":
            total = d * (k - 1)
            before, after = (0, total // 2), (0, total - total // 2)
        else:
            before = after = (0, p)
        ref = np_conv2d(x[:, :, None], w[:, :, None], b, (1, s), before, after, (1, d), G)[:, :, 0]
        out = clgrad.conv1d(make(x, dt, device), make(w, dt, device), make(b, dt, device), s, p,
                            d, G)
        check(out, ref, dt, scale=4)
    out = F.conv1d(make(x[0], dt, device, "strided"), make(w, dt, device), None, s, p, d, G)
    check(out, ref[0] - b[:, None], dt, scale=4)


# ---- conv_transpose2d ----------------------------------------------------------------------------
# (N, Cin, Cout, H, W, kernel, stride, padding, output_padding, groups, dilation)
CONVT = [
    (2, 3, 4, 5, 6, 3, 1, 1, 0, 1, 1),
    (2, 4, 6, 5, 4, 3, 2, 1, 1, 2, 1),         # stride 2, output padding, groups
    (1, 3, 2, 4, 5, (2, 3), (3, 2), (0, 1), (2, 1), 1, 1),   # per-dim everything
    (2, 2, 3, 4, 4, 3, 2, 0, 1, 1, 2),         # dilation with stride: taps every other phase
    (1, 2, 2, 3, 3, 1, 2, 0, 1, 1, 1),         # 1x1 kernel, stride 2: phases without taps
    (1, 3, 3, 4, 3, 2, 3, 0, 0, 3, 1),         # kernel smaller than the stride, depthwise
    (2, 3, 5, 6, 5, 3, 1, 2, 1, 1, 2),         # padding > kernel reach: a crop
    (1, 2, 30, 7, 9, 4, 2, 1, 0, 1, 1),        # several blocks of output channels
]


@pytest.mark.parametrize("case", CONVT)
def test_conv_transpose2d(device, blocking, case):
    N, Ci, Co, H, W, k, s, p, op, G, d = case
    rng = np.random.default_rng(6)
    x = data((N, Ci, H, W), clgrad.float32, rng)
    w = data((Ci, Co // G) + pair(k), clgrad.float32, rng)
    b = data((Co,), clgrad.float32, rng)
    ref = np_conv_transpose2d(x, w, b, pair(s), pair(p), pair(op), G, pair(d))
    out = F.conv_transpose2d(clgrad.tensor(x, dtype=clgrad.float32),
                             clgrad.tensor(w, dtype=clgrad.float32),
                             clgrad.tensor(b, dtype=clgrad.float32), s, p, op, G, d)
    check(out, ref, clgrad.float32)
    out = clgrad.conv_transpose2d(clgrad.tensor(x, dtype=clgrad.float32),
                                  clgrad.tensor(w, dtype=clgrad.float32), None, s, p, op, G, d)
    check(out, ref - b.reshape(1, -1, 1, 1), clgrad.float32)


def test_conv_transpose2d_dtypes_layouts(device):
    rng = np.random.default_rng(7)
    for dt in float_dtypes(device):
        x = data((2, 4, 5, 6), dt, rng)
        w = data((4, 3, 3, 3), dt, rng)
        b = data((6,), dt, rng)
        ref = np_conv_transpose2d(x, w, b, (2, 2), (1, 1), (1, 0), 2)
        for layout in ("contiguous", "transposed"):
            out = F.conv_transpose2d(make(x, dt, device, layout), make(w, dt, device, layout),
                                     make(b, dt, device), 2, 1, (1, 0), 2)
            check(out, ref, dt, scale=4)
    x3 = data((4, 5, 6), clgrad.float32, rng)
    out = F.conv_transpose2d(make(x3, clgrad.float32, device, "strided"),
                             clgrad.tensor(w, dtype=clgrad.float32), None, 2, 1, 1, 2)
    check(out, np_conv_transpose2d(x3[None], w, None, (2, 2), (1, 1), (1, 1), 2)[0],
          clgrad.float32)
    assert F.conv_transpose2d(clgrad.zeros(0, 4, 5, 6), clgrad.zeros(4, 3, 3, 3)).shape == \
        (0, 3, 7, 8)


# ---- gradients -----------------------------------------------------------------------------------
GRAD_CASES = [
    ("conv2d", (2, 2, 3, 5, 4), dict(stride=1, padding=1)),
    ("conv2d", (1, 4, 4, 6, 5), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)),
    ("conv2d", (2, 3, 3, 5, 5), dict(stride=2, padding=2, groups=3)),        # depthwise
    ("conv2d", (1, 2, 2, 5, 6), dict(padding="same", dilation=1)),            # 3x2: asymmetric
    ("conv1d", (2, 2, 4, 7), dict(stride=2, padding=1, dilation=2, groups=2)),
    ("conv_transpose2d", (1, 4, 2, 3, 4), dict(stride=2, padding=1, output_padding=1,
                                                groups=2)),
    ("conv_transpose2d", (2, 2, 3, 3, 3), dict(stride=(1, 3), dilation=(2, 1))),
]


@pytest.mark.parametrize("name,sizes,kw", GRAD_CASES)
def test_gradients(device, name, sizes, kw):
    dt = grad_dtype(device)
    rng = np.random.default_rng(8)
    G = kw.get("groups", 1)
    if name == "conv1d":
        N, Ci, Co, L = sizes
        x, w = data((N, Ci, L), dt, rng), data((Co, Ci // G, 3), dt, rng)
        fn = clgrad.conv1d
    elif name == "conv2d":
        N, Ci, Co, H, W = sizes
        kernel = (3, 2) if kw.get("padding") == "same" else (3, 3)
        x, w = data((N, Ci, H, W), dt, rng), data((Co, Ci // G) + kernel, dt, rng)
        fn = clgrad.conv2d
    else:
        N, Ci, Co, H, W = sizes
        x, w = data((N, Ci, H, W), dt, rng), data((Ci, Co // G, 2, 3), dt, rng)
        fn = clgrad.conv_transpose2d
    b = data((Co,), dt, rng)
    args = tuple(clgrad.tensor(a, dtype=dt, requires_grad=True) for a in (x, w, b))

    def f(x, w, b):
        return fn(x, w, b, **kw)
    tol = grad_tols(device)
    assert clgrad.autograd.gradcheck(f, args, check_forward_ad=True, **tol)
    assert clgrad.autograd.gradgradcheck(f, args, **tol)


def test_gradients_match_numpy(device, blocking):
    """The three gradients of a strided, grouped conv2d against numpy, in float32."""
    rng = np.random.default_rng(9)
    x, w, b = data((2, 4, 9, 8), clgrad.float32, rng), data((6, 2, 3, 3), clgrad.float32, rng), \
        data((6,), clgrad.float32, rng)
    xt, wt, bt = (clgrad.tensor(a, dtype=clgrad.float32, requires_grad=True) for a in (x, w, b))
    y = F.conv2d(xt, wt, bt, stride=2, padding=1, groups=2)
    g = data(tuple(y.shape), clgrad.float32, rng)
    y.backward(clgrad.tensor(g, dtype=clgrad.float32))
    # input gradient: the transposed convolution; weight gradient: a correlation of x with g
    gx = np_conv_transpose2d(g, w, None, (2, 2), (1, 1), (0, 1), 2)
    assert_close(xt.grad, gx, rtol=1e-5, atol=1e-5)
    gw = np_conv_weight_grad(x, g, (3, 3), (2, 2), (1, 1), (1, 1), 2)
    assert_close(wt.grad, gw, rtol=1e-5, atol=1e-5)
    assert_close(bt.grad, g.sum((0, 2, 3)), rtol=1e-5, atol=1e-5)


def test_gradients_dtypes(device):
    """Backward on every float dtype (computed in float32 for 16-bit ones), conv2d and
    conv_transpose2d, strided and grouped."""
    rng = np.random.default_rng(10)
    for dt in float_dtypes(device):
        x, w, b = data((2, 4, 7, 6), dt, rng), data((6, 2, 3, 3), dt, rng), data((6,), dt, rng)
        xt, wt, bt = (make(a, dt, device, requires_grad=True) for a in (x, w, b))
        y = F.conv2d(xt, wt, bt, stride=(2, 1), padding=1, groups=2)
        g = data(tuple(y.shape), dt, rng)
        y.backward(make(g, dt, device))
        gx = np_conv_transpose2d(g, w, None, (2, 1), (1, 1), (0, 0), 2)
        gw = np_conv_weight_grad(x, g, (3, 3), (2, 1), (1, 1), (1, 1), 2)
        for t, ref in ((xt.grad, gx), (wt.grad, gw), (bt.grad, g.sum((0, 2, 3)))):
            assert t.dtype is dt
            check(t, ref, dt, scale=8)
        # the transposed convolution's weight gradient reads its input as the gradient
        wt2 = make(data((4, 3, 2, 2), dt, rng), dt, device, requires_grad=True)
        xt.grad = None
        y = F.conv_transpose2d(xt, wt2, stride=2, groups=2)
        g = data(tuple(y.shape), dt, rng)
        y.backward(make(g, dt, device))
        check(wt2.grad, np_conv_weight_grad(g, x, (2, 2), (2, 2), groups=2), dt, scale=8)


def test_half_weight_gradients_read_the_gradient_as_stored(device, blocking):
    """A float16 / bfloat16 gradient whose rows are whole vectors is read by the weight
    gradient's kernel as it is (no converted copy: one pad launch, the input's, where there were
    two), stride 1 and 2, grouped, in batch chunks on the GPU paths; bit for bit the float32
    weight gradient of the same values, rounded once. A gradient with a ragged last vector or a
    non-contiguous one still goes through the copy, with the same bits."""
    from clgrad.runtime import kernels
    rng = np.random.default_rng(12)
    names = []
    kernels.launch_hooks.append(lambda d, k, *rest: names.append(k.function_name))
    try:
        for dt in (clgrad.float16, clgrad.bfloat16):
            for stride, groups, W, transposed in ((1, 1, 64, False), (2, 2, 64, False),
                                                  (1, 1, 63, False), (1, 2, 64, True)):
                x = clgrad.tensor(data((3, 4, 5, W), dt, rng), dtype=dt, device=device)
                w = clgrad.tensor(data((6, 4 // groups, 3, 3), dt, rng), dtype=dt,
                                  device=device, requires_grad=True)
                y = F.conv2d(x, w, stride=stride, padding=1, groups=groups)
                g = clgrad.tensor(data(tuple(y.shape), dt, rng), dtype=dt, device=device)
                if transposed:       # the same values in a layout whose rows are not contiguous
                    g = g.transpose(2, 3).contiguous().transpose(2, 3)
                names.clear()
                y.backward(g)
                whole = not transposed and y.shape[3] % conv_kernels._plan(device, dt)[1] == 0
                assert names.count("pad") == (1 if whole else 2), (dt, stride, W, names)
                assert any(n.endswith("_st") for n in names) == whole
                w32 = w.detach().float().requires_grad_()
                F.conv2d(x.float(), w32, stride=stride, padding=1, groups=groups).backward(
                    g.float())
                assert np.array_equal(w.grad.float().numpy(), w32.grad.to(dt).float().numpy())
                gw = np_conv_weight_grad(x.float().numpy().astype(np.float64),
                                         g.float().numpy().astype(np.float64), (3, 3),
                                         (stride, stride), (1, 1), (1, 1), groups)
                check(w.grad, gw, dt, scale=16)
    finally:
        kernels.launch_hooks.pop()


def test_weight_gradient_ignores_inf_past_row_ends(device, blocking):
    """Lanes past the end of an output row are masked: an inf the kernel reads there for no
    output must not turn the weight gradient into NaN."""
    x = np.zeros((1, 1, 3, 11))
    x[0, 0, 1, 0] = np.inf          # only output column 0 reads it, through kernel column 1
    xt = clgrad.tensor(x, dtype=clgrad.float32)
    w = clgrad.zeros(1, 1, 3, 3, requires_grad=True)
    F.conv2d(xt, w, padding=1).sum().backward()
    got = w.grad.numpy()[0, 0]
    assert np.isinf(got[:, :2]).all() and np.isfinite(got[:, 2]).all()


def test_node_names(device):
    x = clgrad.ones(1, 2, 5, 5, requires_grad=True)
    assert F.conv2d(x, clgrad.ones(2, 2, 3, 3)).grad_fn.name() == "ConvolutionBackward0"
    assert F.conv1d(x[:, :, 0], clgrad.ones(2, 2, 3)).grad_fn.name() == "ConvolutionBackward0"
    assert F.conv_transpose2d(x, clgrad.ones(2, 2, 3, 3)).grad_fn.name() == \
        "ConvolutionBackward0"
    # unbatched: torch too runs the batched op between an unsqueeze and a squeeze
    assert F.conv2d(x[0], clgrad.ones(2, 2, 3, 3)).grad_fn.name().startswith("SqueezeBackward")


# ---- errors --------------------------------------------------------------------------------------
def test_errors(device):
    x = clgrad.ones(2, 4, 5, 5)
    w = clgrad.ones(6, 4, 3, 3)

    def raises(exc, match, fn, *args, **kw):
        with pytest.raises(exc, match=match):
            fn(*args, **kw)
    raises(RuntimeError, r"Given groups=1, weight of size \[6, 3, 3, 3\], expected "
           r"input\[2, 4, 5, 5\] to have 3 channels, but got 4 channels instead",
           F.conv2d, x, clgrad.ones(6, 3, 3, 3))
    raises(RuntimeError, r"expected weight to be divisible by 3 at dimension 0",
           F.conv2d, clgrad.ones(2, 6, 5, 5), clgrad.ones(4, 2, 3, 3), groups=3)
    raises(RuntimeError, "non-positive groups", F.conv2d, x, w, groups=0)
    raises(RuntimeError, r"Calculated padded input size per channel: \(2 x 2\). Kernel size: "
           r"\(3 x 3\). Kernel size can't be greater than actual input size",
           F.conv2d, clgrad.ones(2, 4, 2, 2), w)
    raises(RuntimeError, r"Kernel size: \(5 x 5\)", F.conv2d, clgrad.ones(2, 4, 4, 4), w,
           dilation=2)
    raises(RuntimeError, r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got "
           r"input of size: \[5, 5\]", F.conv2d, clgrad.ones(5, 5), w)
    raises(RuntimeError, r"input to conv1d", F.conv1d, x, clgrad.ones(6, 4, 3))
    raises(RuntimeError, "weight should have at least three dimensions", F.conv2d, x,
           clgrad.ones(6))
    raises(RuntimeError, r"expected bias to be 1-dimensional with 6 elements, but got bias of "
           r"size \[5\]", F.conv2d, x, w, clgrad.ones(5))
    raises(RuntimeError, "negative padding", F.conv2d, x, w, padding=-1)
    raises(RuntimeError, "non-positive stride", F.conv2d, x, w, stride=0)
    raises(RuntimeError, "non-positive dilation", F.conv2d, x, w, dilation=0)
    raises(RuntimeError, "padding='same' is not supported for strided", clgrad.conv2d, x, w,
           stride=2, padding="same")
    raises(RuntimeError, "Invalid padding string: 'foo'", clgrad.conv2d, x, w, padding="foo")
    raises(RuntimeError, r"expected padding to be a single integer value or a list of 2 values",
           F.conv2d, x, w, padding=(1, 1, 1))
    raises(RuntimeError, r"Input type \(float\) and weight type \(c10::Half\) should be the same",
           F.conv2d, x, w.half())
    raises(RuntimeError, r"Input type \(float\) and bias type \(c10::Half\)", F.conv2d, x, w,
           clgrad.ones(6, dtype=clgrad.float16))
    raises(NotImplementedError, "\"conv2d\" not implemented for 'Bool'", F.conv2d,
           x.bool(), w.bool())
    raises(TypeError, "must be Tensor", F.conv2d, [1.0], w)
    # transposed
    raises(RuntimeError, r"Given transposed=1, weight of size \[3, 6, 3, 3\], expected "
           r"input\[2, 4, 5, 5\] to have 3 channels", F.conv_transpose2d, x,
           clgrad.ones(3, 6, 3, 3))
    raises(RuntimeError, "output padding must be smaller than either stride or dilation",
           F.conv_transpose2d, x, clgrad.ones(4, 2, 3, 3), output_padding=1)
    raises(RuntimeError, r"Output size is too small", F.conv_transpose2d, clgrad.ones(1, 4, 1, 1),
           clgrad.ones(4, 2, 1, 1), padding=2)
    raises(RuntimeError, r"Given transposed=1, weight of size \[4, 2, 3, 3\], expected bias to "
           r"be 1-dimensional with 2 elements", F.conv_transpose2d, x, clgrad.ones(4, 2, 3, 3),
           clgrad.ones(3))
    raises(TypeError, "argument 'padding' must be tuple of ints, not str", F.conv_transpose2d,
           x, clgrad.ones(4, 2, 3, 3), padding="same")
    # output padding below the dilation is allowed
    assert F.conv_transpose2d(x, clgrad.ones(4, 2, 3, 3), dilation=2,
                              output_padding=1).shape == (2, 2, 10, 10)


def test_forward_mode_through_convolution_and_pooling(device):
    """Tangents through conv and the pooling ops match the finite-difference directional
    derivative (pooling uses the generic rule built from its own backward)."""
    import clgrad.autograd.forward_ad as fwAD
    import clgrad.nn.functional as F
    from helpers import grad_dtype
    dt = grad_dtype(device)
    x = clgrad.randn(1, 2, 6, 6, dtype=dt)
    v = clgrad.randn(1, 2, 6, 6, dtype=dt)
    w = clgrad.randn(3, 2, 3, 3, dtype=dt)
    eps = 1e-6 if dt is clgrad.float64 else 1e-2
    tol = 1e-6 if dt is clgrad.float64 else 5e-2
    for f in (lambda t: F.conv2d(t, w, padding=1), lambda t: F.max_pool2d(t, 2),
              lambda t: F.avg_pool2d(t, 3, 2, 1), lambda t: F.adaptive_avg_pool2d(t, (4, 3))):
        with fwAD.dual_level():
            tangent = fwAD.unpack_dual(f(fwAD.make_dual(x, v))).tangent
        fd = (f(x + eps * v) - f(x - eps * v)) / (2 * eps)
        np.testing.assert_allclose(tangent.numpy(), fd.numpy(), atol=tol, rtol=tol)


def test_weights_without_kernel_or_out_channels_raise(device):
    """torch's checks: a kernel size of 0 and fewer output channels than groups (found by the
    differential test: both computed here before)."""
    x = clgrad.ones(2, 2, 3)
    with pytest.raises(RuntimeError, match="kernel size should be greater than zero"):
        F.conv1d(x, clgrad.ones(2, 2, 0))
    with pytest.raises(RuntimeError, match="kernel_height: 0 kernel_width: 1"):
        F.conv2d(clgrad.ones(1, 2, 3, 3), clgrad.ones(2, 2, 0, 1))
    with pytest.raises(RuntimeError, match=r"expected weight to be at least 1 at dimension 0, but "
                                           r"got weight of size \[0, 2, 1\]"):
        F.conv1d(x, clgrad.ones(0, 2, 1))
