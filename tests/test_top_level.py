"""torch's top-level functions (clgrad/_nn_top_level.py, clgrad/ops/function_forms.py,
creation_forms.py): ATen's argument lists mapped onto nn.functional, in-place forms, and the
composed utilities, against numpy."""
import itertools
import warnings

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck, gradgradcheck

from helpers import assert_close, grad_dtype, grad_tols, make, rounded, to_np

RNG = np.random.default_rng(7)


def _t(a, **kw):
    return clgrad.tensor(np.asarray(a), **kw)


def _sig(x):
    return 1 / (1 + np.exp(-x))


# ---- group 1: nn.functional under ATen's names and argument lists --------------------------------
def test_activations_and_inplace_forms(device):
    x = RNG.uniform(-2, 2, (3, 4)).astype(np.float32)
    cases = [
        (lambda t: clgrad.celu(t, 2.0), np.where(x > 0, x, 2 * np.expm1(x / 2))),
        (lambda t: clgrad.selu(t), 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772
                                                                 * np.expm1(x))),
        (lambda t: clgrad.threshold(t, 0.2, -3.0), np.where(x > 0.2, x, -3.0)),
        (lambda t: clgrad.hardshrink(t, 0.7), np.where(np.abs(x) > 0.7, x, 0)),
        (lambda t: clgrad.rrelu(t), np.where(x >= 0, x, x * (1 / 8 + 1 / 3) / 2)),
        (lambda t: clgrad.prelu(t, _t(np.float32([0.1, 0.2, 0.3, 0.4]))),
         np.where(x > 0, x, x * np.float32([0.1, 0.2, 0.3, 0.4]))),
    ]
    for fn, ref in cases:
        assert_close(fn(_t(x)), ref)
    for fn, ref in ((lambda t: clgrad.celu_(t, 2.0), cases[0][1]), (clgrad.selu_, cases[1][1]),
                    (lambda t: clgrad.threshold_(t, 0.2, -3.0), cases[2][1]),
                    (lambda t: clgrad.rrelu_(t), cases[4][1])):
        t = _t(x)
        assert fn(t) is t
        assert_close(t, ref)
    with pytest.raises(TypeError):
        clgrad.threshold(_t(x), 0.2)                       # ATen: no default value


def test_shuffles(device):
    x = np.arange(24, dtype=np.float32).reshape(1, 4, 2, 3)
    ref = x.reshape(1, 2, 2, 2, 3).transpose(0, 2, 1, 3, 4).reshape(1, 4, 2, 3)
    assert_close(clgrad.channel_shuffle(_t(x), 2), ref)
    assert_close(clgrad.native_channel_shuffle(_t(x), 2), ref)
    ps = clgrad.pixel_shuffle(_t(x), 2)
    assert_close(ps, x.reshape(1, 1, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 1, 4, 6))
    assert_close(clgrad.pixel_unshuffle(ps, 2), x)


def test_dropout_forms(device):
    x = clgrad.ones(4, 30, 3)
    for fn in (clgrad.dropout, clgrad.alpha_dropout, clgrad.feature_dropout,
               clgrad.feature_alpha_dropout):
        assert fn(x, 0.5, False) is x
        with pytest.raises(TypeError):
            fn(x, 0.5)                                     # ATen: train has no default
    y = clgrad.feature_dropout(x, 0.5, True)
    v = to_np(y)
    assert (v == v[..., :1]).all() and set(np.unique(v)) <= {0.0, 2.0} and 0 < v.sum() < 720
    assert set(np.unique(to_np(clgrad.dropout(x, 0.5, True)))) == {0.0, 2.0}
    t = clgrad.ones(2, 3)
    assert clgrad.dropout_(t, 1.0, True) is t and to_np(t).sum() == 0
    t = clgrad.ones(2, 3)
    assert clgrad.feature_dropout_(t, 1.0, True) is t and to_np(t).sum() == 0
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        clgrad.feature_dropout(clgrad.ones(3), 0.5, True)


def test_embedding_weight_first(device):
    w = RNG.standard_normal((5, 3))
    idx = np.array([[0, 4], [2, 2]])
    out = clgrad.embedding(_t(w), _t(idx))
    assert_close(out, w[idx])
    wt = _t(w, requires_grad=True)
    clgrad.embedding(wt, _t(idx), 2).sum().backward()     # padding_idx gets no gradient
    assert_close(wt.grad, np.array([[1] * 3, [0] * 3, [0] * 3, [0] * 3, [1] * 3], float))


def test_norms_aten_argument_order(device):
    x = RNG.standard_normal((3, 4, 5))
    w, b = RNG.standard_normal(4), RNG.standard_normal(4)
    rm, rv = RNG.standard_normal(4), RNG.uniform(0.5, 2, 4)
    ch = (None, slice(None), None)
    assert_close(clgrad.batch_norm(_t(x), _t(w), _t(b), _t(rm), _t(rv), False, 0.1, 1e-5, True),
                 (x - rm[ch]) / np.sqrt(rv[ch] + 1e-5) * w[ch] + b[ch], rtol=1e-4)
    m, v = x.mean((0, 2), keepdims=True), x.var((0, 2), keepdims=True)
    rmt, rvt = _t(rm), _t(rv)
    assert_close(clgrad.batch_norm(_t(x), None, None, rmt, rvt, True, 0.5, 1e-5, False),
                 (x - m) / np.sqrt(v + 1e-5), rtol=1e-4)
    assert_close(rmt, 0.5 * rm + 0.5 * m.ravel())
    m, v = x.mean(2, keepdims=True), x.var(2, keepdims=True)
    assert_close(clgrad.instance_norm(_t(x), _t(w), _t(b), None, None, True, 0.1, 1e-5, False),
                 (x - m) / np.sqrt(v + 1e-5) * w[ch] + b[ch], rtol=1e-4)
    m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    assert_close(clgrad.layer_norm(_t(x), [5], None, None, 1e-3, False),
                 (x - m) / np.sqrt(v + 1e-3), rtol=1e-4)
    g = x.reshape(3, 2, 10)
    gn = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    assert_close(clgrad.group_norm(_t(x), 2, _t(w), _t(b)),
                 gn.reshape(x.shape) * w[ch] + b[ch], rtol=1e-4)
    assert_close(clgrad.rms_norm(_t(x), [4, 5], eps=1e-6),
                 x / np.sqrt((x ** 2).mean((1, 2), keepdims=True) + 1e-6), rtol=1e-4)


def _conv1d_ref(x, w, stride, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    K = w.shape[-1]
    L = (x.shape[-1] - K) // stride + 1
    return np.stack([np.einsum("nck,ock->no", x[:, :, i * stride:i * stride + K], w)
                     for i in range(L)], -1)


def test_convolution_dispatch(device):
    x, w = RNG.standard_normal((2, 3, 7)), RNG.standard_normal((4, 3, 3))
    out = clgrad.convolution(_t(x), _t(w), None, [2], [1], [1], False, [0], 1)
    assert_close(out, _conv1d_ref(x, w, 2, 1), rtol=1e-4)
    # transposed convolution is the adjoint of convolution: <conv(x), y> == <x, conv_t(y)>
    y = RNG.standard_normal(out.shape)
    xt = clgrad.convolution(_t(y), _t(w), None, [2], [1], [1], True, [0], 1)
    assert xt.shape == x.shape
    np.testing.assert_allclose((to_np(out) * y).sum(), (x * to_np(xt)).sum(), rtol=1e-4)
    xt1 = clgrad.conv_transpose1d(_t(y), _t(w), None, 2, 1)
    assert_close(xt1, to_np(xt), rtol=1e-5)
    x3, w3 = RNG.standard_normal((1, 2, 3, 3, 3)), RNG.standard_normal((2, 2, 2, 2, 2))
    c3 = clgrad.conv3d(_t(x3), _t(w3))
    assert_close(c3[0, :, 0, 0, 0], np.einsum("cdhw,ocdhw->o", x3[0, :, :2, :2, :2], w3),
                 rtol=1e-4)
    assert clgrad.conv_transpose3d(c3, _t(w3)).shape == x3.shape
    with pytest.raises(RuntimeError, match="convolution"):
        clgrad.convolution(_t(x), _t(np.ones((4, 3))), None, [1], [0], [1], False, [0], 1)


def test_pooling_forms(device):
    x = RNG.standard_normal((2, 3, 8))
    w = x.reshape(2, 3, 4, 2)
    assert_close(clgrad.max_pool1d(_t(x), 2), w.max(-1))
    v, i = clgrad.max_pool1d_with_indices(_t(x), 2)
    assert_close(v, w.max(-1))
    assert_close(i, w.argmax(-1) + 2 * np.arange(4))
    v, i = clgrad.adaptive_max_pool1d(_t(x), 4)            # ATen: always (values, indices)
    assert_close(v, w.max(-1))
    assert_close(clgrad.avg_pool1d(_t(x), 2, []), w.mean(-1))
    assert_close(clgrad.adaptive_avg_pool1d(_t(x), 4), w.mean(-1))
    x3 = RNG.standard_normal((1, 1, 4, 4, 4))
    assert_close(clgrad.max_pool3d(_t(x3), 2, [2]),
                 x3.reshape(1, 1, 2, 2, 2, 2, 2, 2).max((3, 5, 7)))


def test_losses_with_int_reductions(device):
    p, q = RNG.uniform(0.1, 1, (4, 3)), RNG.uniform(0.1, 1, (4, 3))
    tgt = np.array([1.0, -1.0, 1.0, -1.0])
    red = {0: lambda a: a, 1: np.mean, 2: np.sum}
    for r, f in red.items():
        assert_close(clgrad.kl_div(_t(np.log(p)), _t(q), r), f(q * (np.log(q) - np.log(p))))
        assert_close(clgrad.kl_div(_t(np.log(p)), _t(np.log(q)), r, log_target=True),
                     f(q * (np.log(q) - np.log(p))))
        assert_close(clgrad.margin_ranking_loss(_t(p[:, 0]), _t(q[:, 0]), _t(tgt), 0.1, r),
                     f(np.maximum(0, -tgt * (p[:, 0] - q[:, 0]) + 0.1)))
        assert_close(clgrad.hinge_embedding_loss(_t(p[:, 0]), _t(tgt), 0.8, r),
                     f(np.where(tgt > 0, p[:, 0], np.maximum(0, 0.8 - p[:, 0]))))
        assert_close(clgrad.poisson_nll_loss(_t(p), _t(q), True, False, 1e-8, r),
                     f(np.exp(p) - q * p))
        assert_close(clgrad.poisson_nll_loss(_t(p), _t(q), False, False, 1e-8, r),
                     f(p - q * np.log(p + 1e-8)))
        cos = (p * q).sum(1) / np.linalg.norm(p, axis=1) / np.linalg.norm(q, axis=1)
        assert_close(clgrad.cosine_embedding_loss(_t(p), _t(q), _t(tgt), 0.2, r),
                     f(np.where(tgt > 0, 1 - cos, np.maximum(0, cos - 0.2))), rtol=1e-4)
        pw = np.array([1.0, 2.0, 0.5])
        ls = np.log(_sig(p))
        assert_close(clgrad.binary_cross_entropy_with_logits(_t(p), _t(q), None, _t(pw), r),
                     f(-(pw * q * ls + (1 - q) * np.log(1 - _sig(p)))), rtol=1e-4)
        d = lambda a, b: np.linalg.norm(a - b + 1e-6, axis=1)   # noqa: E731
        assert_close(clgrad.triplet_margin_loss(_t(p), _t(q), _t(p[::-1].copy()), 0.5, 2.0,
                                                1e-6, False, r),
                     f(np.maximum(d(p, q) - d(p, p[::-1]) + 0.5, 0)), rtol=1e-4)
    with pytest.raises(RuntimeError, match="reduction"):
        clgrad.kl_div(_t(p), _t(q), "mean")


def test_ctc_loss_reductions_agree(device):
    lp = np.log(RNG.dirichlet(np.ones(4), size=(6, 2)))
    args = (_t(lp), _t(np.array([[1, 2], [3, 3]])), [6, 5], [2, 2])
    each = to_np(clgrad.ctc_loss(*args, 0, 0))
    assert each.shape == (2,) and (each > 0).all()
    assert_close(clgrad.ctc_loss(*args, 0, 2), each.sum())
    assert_close(clgrad.ctc_loss(*args), (each / 2).mean())
    assert_close(F.ctc_loss(*args, reduction="none"), each)


def test_grid_sampler_and_affine_grid(device):
    img = RNG.standard_normal((1, 2, 3, 4))
    grid = RNG.uniform(-1.2, 1.2, (1, 2, 3, 2))
    for im, mode in ((0, "bilinear"), (1, "nearest")):
        for pm, pad in ((0, "zeros"), (1, "border"), (2, "reflection")):
            assert_close(clgrad.grid_sampler(_t(img), _t(grid), im, pm, True),
                         to_np(F.grid_sample(_t(img), _t(grid), mode, pad, True)))
    # the identity transform samples every pixel centre
    eye = np.array([[[1.0, 0, 0], [0, 1.0, 0]]])
    g = clgrad.affine_grid_generator(_t(eye), [1, 2, 3, 4], False)
    assert_close(clgrad.grid_sampler_2d(_t(img), g, 0, 0, False), img, rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="grid_sampler"):
        clgrad.grid_sampler(_t(img), _t(grid), 5, 0, True)


def _cell_ref(kind, x, h, c, wi, wh, bi, bh):
    gi, gh = x @ wi.T + bi, h @ wh.T + bh
    if kind == "rnn_tanh_cell":
        return np.tanh(gi + gh)
    if kind == "rnn_relu_cell":
        return np.maximum(gi + gh, 0)
    if kind == "gru_cell":
        (ir, iz, inn), (hr, hz, hn) = np.split(gi, 3, 1), np.split(gh, 3, 1)
        r, z = _sig(ir + hr), _sig(iz + hz)
        n = np.tanh(inn + r * hn)
        return (1 - z) * n + z * h
    i, f, g, o = np.split(gi + gh, 4, 1)
    c2 = _sig(f) * c + _sig(i) * np.tanh(g)
    return _sig(o) * np.tanh(c2), c2


@pytest.mark.parametrize("kind", ["rnn_tanh_cell", "rnn_relu_cell", "gru_cell", "lstm_cell"])
def test_rnn_cells(device, kind):
    B, I, H = 2, 3, 2
    G = {"gru_cell": 3, "lstm_cell": 4}.get(kind, 1)
    dt = grad_dtype(device)
    arrs = [RNG.standard_normal(s) for s in ((B, I), (B, H), (B, H), (G * H, I), (G * H, H),
                                            (G * H,), (G * H,))]
    x, h, c, wi, wh, bi, bh = [_t(a, dtype=dt, requires_grad=True) for a in arrs]
    fn = getattr(clgrad, kind)
    state = (h, c) if kind == "lstm_cell" else h
    out = fn(x, state, wi, wh, bi, bh)
    ref = _cell_ref(kind, *arrs)
    for o, r in zip(out, ref) if kind == "lstm_cell" else [(out, ref)]:
        assert_close(o, r, rtol=1e-4, atol=1e-5)
    nob = fn(x, state, wi, wh)                             # biases are optional
    ref0 = _cell_ref(kind, *arrs[:5], 0, 0)
    assert_close(nob[0] if kind == "lstm_cell" else nob, ref0[0] if kind == "lstm_cell" else ref0,
                 rtol=1e-4, atol=1e-5)
    if kind in ("gru_cell", "lstm_cell"):
        if kind == "lstm_cell":
            f = lambda x, h, c, wi, wh, bi, bh: fn(x, (h, c), wi, wh, bi, bh)   # noqa: E731
            assert gradcheck(f, (x, h, c, wi, wh, bi, bh), **grad_tols(device))
        else:
            assert gradcheck(fn, (x, h, wi, wh, bi, bh), **grad_tols(device))
    with pytest.raises(IndexError, match=kind):            # torch's op: a 1-d input has no dim 1
        fn(x[0], h[0] if kind != "lstm_cell" else (h[0], c[0]), wi, wh)


def test_pairwise_and_bilinear(device):
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    assert_close(clgrad.cosine_similarity(_t(a), _t(b)),
                 (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1))
    assert_close(clgrad.pairwise_distance(_t(a), _t(b), 1.0),
                 np.abs(a - b + 1e-6).sum(1), rtol=1e-5)
    assert_close(clgrad.pdist(_t(a)), [np.linalg.norm(a[i] - a[j])
                                      for i, j in itertools.combinations(range(3), 2)])
    w = RNG.standard_normal((2, 4, 4))
    assert_close(clgrad.bilinear(_t(a), _t(b), _t(w)), np.einsum("ni,kij,nj->nk", a, w, b),
                 rtol=1e-5)


# ---- group 1: in-place aliases, predicates, creation ---------------------------------------------
def test_inplace_aliases(device):
    x = np.array([-2.0, 0.25, 3.0])
    for name, args, ref in (("clamp_", (-1, 1), np.clip(x, -1, 1)),
                            ("clamp_min_", (0,), np.maximum(x, 0)),
                            ("clamp_max_", (0,), np.minimum(x, 0)),
                            ("clip_", (None, 1), np.minimum(x, 1)),
                            ("deg2rad_", (), np.deg2rad(x)), ("rad2deg_", (), np.rad2deg(x)),
                            ("sinc_", (), np.sinc(x)), ("fill_", (7,), np.full(3, 7.0)),
                            ("zero_", (), np.zeros(3)), ("ldexp_", (_t([1, 2, 3]),), x * [2, 4, 8]),
                            ("xlogy_", (2.0,), x * np.log(2.0))):
        t = _t(x)
        assert getattr(clgrad, name)(t, *args) is t, name
        assert_close(t, ref)
    t = _t([0.5, 0.25])
    assert_close(clgrad.logit_(t), np.log([1.0, 1 / 3]))
    t = _t([np.nan, np.inf])
    assert_close(clgrad.nan_to_num_(t, 0.0, 5.0), [0.0, 5.0])
    t = clgrad.zeros(2)
    assert_close(clgrad.addmv_(t, clgrad.tensor([[1.0, 2], [3, 4]]), clgrad.ones(2), beta=0,
                                alpha=2), [6., 14.])
    assert clgrad.resize_as_(clgrad.zeros(2), clgrad.zeros(3, 1)).shape == (3, 1)
    assert_close(clgrad.as_strided_(clgrad.arange(6.0), (2, 2), (3, 1)), [[0., 1], [3, 4]])
    with pytest.raises(RuntimeError, match="ldexp"):
        clgrad.ldexp_(_t([1, 2]), _t([1]))


def test_predicates(device):
    x = clgrad.zeros(2)
    assert clgrad.is_complex(x) is False and clgrad.is_distributed(x) is False
    assert clgrad.is_inference(x) is False
    with clgrad.inference_mode():
        assert clgrad.is_inference(clgrad.zeros(1)) is True
    assert clgrad.is_storage(x) is False and clgrad.is_storage(x._storage) is True
    with pytest.raises(TypeError):
        clgrad.is_distributed([1])


def test_creation_helpers(device):
    s = clgrad.scalar_tensor(3)
    assert s.shape == () and s.dtype is clgrad.float32 and s.item() == 3.0
    assert clgrad.scalar_tensor(True, dtype=clgrad.int64).item() == 1
    with pytest.warns(UserWarning, match="deprecated"):
        r = clgrad.range(0, 1, 0.25)
    assert_close(r, [0, 0.25, 0.5, 0.75, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert clgrad.range(5, 1, -2, dtype=clgrad.int64).tolist() == [5, 3, 1]
        with pytest.raises(RuntimeError):
            clgrad.range(0, 3, -1)
    t = clgrad.zeros(2)
    assert clgrad.asarray(t) is t
    assert clgrad.asarray(t, dtype=clgrad.int64).dtype is clgrad.int64
    c = clgrad.asarray(t, copy=True)
    assert c is not t and c.tolist() == [0.0, 0.0]
    with pytest.raises(ValueError):
        clgrad.asarray(t, dtype=clgrad.int64, copy=False)
    with pytest.raises(ValueError):
        clgrad.asarray([1, 2], copy=False)
    assert clgrad.asarray([1.5, 2]).dtype is clgrad.float32
    assert clgrad.asarray(3).dtype is clgrad.int64
    assert clgrad.asarray([1.0], requires_grad=True).requires_grad
    e = clgrad.empty_strided((2, 3), (1, 2))
    assert e.shape == (2, 3) and e.stride() == (1, 2)


def test_fill_is_differentiable_in_value(device):
    dt = grad_dtype(device)
    x = _t(np.ones((2, 3)), dtype=dt, requires_grad=True)
    v = _t(2.5, dtype=dt, requires_grad=True)
    y = clgrad.fill(x, v)
    assert_close(y, np.full((2, 3), 2.5))
    assert_close(x, np.ones((2, 3)))                       # input untouched
    y.sum().backward()
    assert_close(v.grad, 6.0)
    assert_close(x.grad, np.zeros((2, 3)))


# ---- integers and float bits ---------------------------------------------------------------------
@pytest.mark.parametrize("dt", [clgrad.int32, clgrad.int64, clgrad.uint8])
def test_gcd_lcm(device, dt):
    lo = 0 if dt is clgrad.uint8 else -40
    a = RNG.integers(lo, 40, (3, 5))
    b = RNG.integers(lo, 12, (5,))
    a[0, :2], b[:1] = 0, 0
    ta = make(a, dt, device, "transposed")
    assert_close(clgrad.gcd(ta, _t(b, dtype=dt)), np.gcd(a, b))
    assert_close(clgrad.lcm(ta, _t(b, dtype=dt)), np.lcm(a, b))
    t = _t(a, dtype=dt)
    assert clgrad.gcd_(t, _t(b, dtype=dt)) is t
    assert_close(t, np.gcd(a, b))
    assert_close(_t(a, dtype=dt).lcm(_t(b, dtype=dt)), np.lcm(a, b))


def test_gcd_rejects_floats(device):
    with pytest.raises(NotImplementedError, match="gcd"):
        clgrad.gcd(_t([4.0]), _t([6.0]))


def _specials(npdt):
    info = np.finfo(npdt)
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -3.0, 0.75, info.max, info.tiny,
                     info.tiny / 8, -info.tiny / 1024, info.smallest_subnormal, 1e-3], npdt)


@pytest.mark.parametrize("dt", [clgrad.float32, clgrad.float64, clgrad.float16])
def test_frexp(device, dt):
    if dt is clgrad.float64 and not device.has_fp64:
        pytest.skip("device without fp64")
    x = np.concatenate([_specials(dt.np), RNG.standard_normal(10).astype(dt.np) * 1e3])
    m, e = clgrad.frexp(make(x.reshape(4, 6), dt, device, "transposed"))
    rm, re = np.frexp(x.reshape(4, 6))
    assert m.dtype is dt and e.dtype is clgrad.int32
    np.testing.assert_array_equal(to_np(m), rm)
    np.testing.assert_array_equal(to_np(e), np.where(np.isfinite(x.reshape(4, 6)), re, 0))
    with pytest.raises(RuntimeError, match="frexp"):
        clgrad.frexp(_t([1, 2]))


@pytest.mark.parametrize("dt", [clgrad.float32, clgrad.float64])
def test_nextafter(device, dt):
    if dt is clgrad.float64 and not device.has_fp64:
        pytest.skip("device without fp64")
    x = _specials(dt.np)
    ys = [np.roll(x, k) for k in range(0, len(x), 3)] + [np.full_like(x, np.inf),
                                                        -x, np.zeros_like(x)]
    for y in ys:
        out = clgrad.nextafter(_t(x, dtype=dt), _t(y, dtype=dt))
        with np.errstate(over="ignore"):
            ref = np.nextafter(x, y)
        np.testing.assert_array_equal(to_np(out), ref)
        num = ~np.isnan(ref)                               # (a NaN's sign means nothing)
        np.testing.assert_array_equal(np.signbit(to_np(out))[num], np.signbit(ref)[num])
    t = _t(x[:3], dtype=dt)
    assert clgrad.nextafter_(t, _t(1.0, dtype=dt)) is t
    with pytest.raises(NotImplementedError, match="nextafter"):
        clgrad.nextafter(_t([1]), _t([2]))


# ---- sets, combinations, histograms, finite differences ------------------------------------------
def test_isin(device):
    e = RNG.integers(0, 10, (3, 4))
    tst = np.array([2.0, 5.0, 7.0, 11.0])
    assert_close(clgrad.isin(make(e, clgrad.int64, device, "transposed"), _t(tst)),
                 np.isin(e, tst))
    assert_close(clgrad.isin(_t(e), _t(tst), invert=True), ~np.isin(e, tst))
    assert clgrad.isin(5, _t(tst)).item() is True
    assert_close(clgrad.isin(_t(e), 5), e == 5)
    assert_close(clgrad.isin(_t(e), _t(np.zeros(0))), np.zeros(e.shape, bool))
    assert_close(clgrad.isin(_t([np.nan, 1.0]), _t([np.nan, 1.0])), [False, True])


def test_combinations(device):
    x = np.array([1.0, 2.0, 3.0, 4.0])
    for r, rep in ((2, False), (3, False), (2, True)):
        pick = itertools.combinations_with_replacement if rep else itertools.combinations
        assert_close(clgrad.combinations(_t(x), r, rep), np.array(list(pick(x, r))))
    assert clgrad.combinations(_t(x), 0).shape == (0,)
    assert clgrad.combinations(_t(x[:2]), 3).shape == (0, 3)
    xt = _t(x, requires_grad=True)
    clgrad.combinations(xt).sum().backward()                # each element in 3 of the 6 pairs
    assert_close(xt.grad, np.full(4, 3.0))
    with pytest.raises(RuntimeError, match="1D"):
        clgrad.combinations(clgrad.ones(2, 2))


@pytest.mark.parametrize("dt", [clgrad.float32, clgrad.float64])
def test_histogram(device, dt):
    if dt is clgrad.float64 and not device.has_fp64:
        pytest.skip("device without fp64")
    x = np.round(RNG.standard_normal(40), 2) + 0.003
    w = RNG.uniform(0, 2, 40)
    xt = make(x.reshape(5, 8), dt, device, "transposed")
    h, e = clgrad.histogram(xt, 7)
    assert h.dtype is dt and e.dtype is dt
    assert_close(e, np.histogram(x, 7)[1], rtol=1e-6)
    # a value can sit on an edge (x has two decimals, the range too), where the last bit of the
    # edge decides its bin: the counts are checked against the edges clgrad made (torch's
    # linspace rounding, not numpy's) and the values the tensor holds
    assert_close(h, np.histogram(to_np(xt).astype(np.float64), to_np(e).astype(np.float64))[0])
    h, e = clgrad.histogram(_t(x, dtype=dt), 4, range=(-1.0, 1.0), weight=_t(w, dtype=dt),
                            density=True)
    rh, re = np.histogram(x, 4, range=(-1.0, 1.0), weights=w, density=True)
    assert_close(h, rh, rtol=1e-5)
    edges = np.array([-1.0, 0.0, 0.5, 2.0])
    h, e = clgrad.histogram(_t(x, dtype=dt), _t(edges, dtype=dt))
    assert_close(h, np.histogram(x, edges)[0])
    h, e = clgrad.histogram(clgrad.ones(3, dtype=dt), 4)   # a point: the range widens by 0.5
    assert_close(e, [0.5, 0.75, 1.0, 1.25, 1.5])
    assert_close(h, [0, 0, 3, 0])
    with pytest.raises(NotImplementedError):
        clgrad.histogram(_t([1, 2]), 2)


def test_gradient(device):
    dt = grad_dtype(device)
    f = RNG.standard_normal((4, 5))
    for kw, ref in (({}, np.gradient(f)), ({"edge_order": 2}, np.gradient(f, edge_order=2)),
                    ({"spacing": 2.0, "dim": 1}, [np.gradient(f, 2.0, axis=1)]),
                    ({"spacing": (2.0, 0.5)}, np.gradient(f, 2.0, 0.5))):
        out = clgrad.gradient(make(f, dt, device, "strided"), **kw)
        assert isinstance(out, tuple) and len(out) == len(ref)
        for o, r in zip(out, ref):
            assert_close(o, r, rtol=1e-5, atol=1e-6)
    xs = np.array([0.0, 1.0, 3.0, 3.5, 5.0])
    for order in (1, 2):
        (o,) = clgrad.gradient(_t(f, dtype=dt), spacing=[_t(xs, dtype=dt)], dim=1,
                               edge_order=order)
        assert_close(o, np.gradient(f, xs, axis=1, edge_order=order), rtol=1e-5, atol=1e-6)
    assert_close(clgrad.gradient(_t([1, 4, 9, 16]))[0], [3.0, 4.0, 6.0, 7.0])
    with pytest.raises(RuntimeError, match="edge_order"):
        clgrad.gradient(_t([1.0, 2.0]), edge_order=2)
    xt = _t(f, dtype=dt, requires_grad=True)
    assert gradcheck(lambda t: clgrad.gradient(t, edge_order=2), (xt,), **grad_tols(device))


def test_windows(device):
    N = 7
    refs = {"hann_window": np.hanning, "hamming_window": np.hamming,
            "blackman_window": np.blackman, "bartlett_window": np.bartlett,
            "kaiser_window": lambda n: np.kaiser(n, 12.0)}
    for name, ref in refs.items():
        fn = getattr(clgrad, name)
        assert_close(fn(N, periodic=False), ref(N), atol=1e-6)
        assert_close(fn(N), ref(N + 1)[:N], atol=1e-6)
        assert fn(1).tolist() == [1.0] and fn(0).shape == (0,)
        if device.has_fp64:
            w = fn(N, False, dtype=clgrad.float64)
            assert w.dtype is clgrad.float64
            assert_close(w, ref(N), atol=1e-12)
        with pytest.raises(RuntimeError, match="non-negative"):
            fn(-1)
        with pytest.raises(RuntimeError, match="floating point"):
            fn(3, dtype=clgrad.int64)
    assert_close(clgrad.hamming_window(5, False, 0.5, 0.5), np.hanning(5), atol=1e-6)
    assert_close(clgrad.kaiser_window(5, False, 3.0), np.kaiser(5, 3.0), atol=1e-6)


def test_deprecated_norms(device):
    a = RNG.standard_normal((2, 3, 4))
    assert_close(clgrad.frobenius_norm(_t(a), (1, 2)), np.sqrt((a ** 2).sum((1, 2))))
    assert_close(clgrad.frobenius_norm(_t(a), 1, True), np.sqrt((a ** 2).sum(1, keepdims=True)))
    with pytest.raises(RuntimeError, match="at most 2"):
        clgrad.frobenius_norm(_t(a), (0, 1, 2))
    nuc = np.linalg.svd(a, compute_uv=False).sum(-1)
    assert_close(clgrad.nuclear_norm(_t(a)), nuc, rtol=1e-4)
    assert_close(clgrad.nuclear_norm(_t(a), True), nuc[:, None, None], rtol=1e-4)
    assert_close(clgrad.nuclear_norm(_t(a), (0, 2)),
                 np.linalg.svd(a.transpose(1, 0, 2), compute_uv=False).sum(-1), rtol=1e-4)


def test_tensor_methods_and_aliases(device):
    a, b = _t([12, 18]), _t([8, 27])
    assert a.gcd(b).tolist() == [4, 9] and a.lcm(b).tolist() == [24, 54]
    m, e = _t([8.0]).frexp()
    assert (m.item(), e.item()) == (0.5, 4)
    assert _t([1.0]).histogram(2, range=(0.0, 2.0))[0].tolist() == [0.0, 1.0]
    x = clgrad.arange(5.0)
    assert [t.tolist() for t in clgrad.unsafe_split(x, 2)] == [[0, 1], [2, 3], [4]]
    assert [t.numel() for t in x.unsafe_chunk(2)] == [3, 2]
    assert [t.numel() for t in clgrad.unsafe_split_with_sizes(x, [1, 4])] == [1, 4]


# ---- group 2: process-wide settings --------------------------------------------------------------
def test_threads_settings():
    n = clgrad.get_num_threads()
    try:
        clgrad.set_num_threads(3)
        assert clgrad.get_num_threads() == 3
        for bad, exc in ((0, RuntimeError), (-1, RuntimeError), (2.5, RuntimeError)):
            with pytest.raises(exc, match="set_num_threads"):
                clgrad.set_num_threads(bad)
        clgrad.set_num_interop_threads(2)
        assert clgrad.get_num_interop_threads() == 2
        assert clgrad.init_num_threads() is None
    finally:
        clgrad.set_num_threads(n)


def test_printoptions(device):
    x = clgrad.arange(10.0) / 3
    try:
        clgrad.set_printoptions(precision=2, threshold=5, edgeitems=2)
        assert str(x) == "tensor([0.00, 0.33,  ..., 2.67, 3.00])"  # torch's " ..."
        clgrad.set_printoptions(sci_mode=True)
        assert "e+00" in str(clgrad.tensor([1.5]))
        clgrad.set_printoptions(profile="full")
        assert "..." not in str(clgrad.zeros(1001))
        clgrad.set_printoptions(profile="short")
        assert str(clgrad.tensor([1.2345])) == "tensor([1.23])"
        with pytest.raises(ValueError):
            clgrad.set_printoptions(profile="long")
    finally:
        clgrad.set_printoptions(profile="default")
    assert str(clgrad.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
    assert "..." in str(clgrad.zeros(1001))


def test_typename_and_legacy_default_type(device):
    # the strings torch gives, so that torch programs comparing them keep working
    cuda = "cuda." if device.is_gpu else ""
    assert clgrad.typename(clgrad.zeros(1, dtype=clgrad.int64)) == f"torch.{cuda}LongTensor"
    assert clgrad.zeros(1, device=device).type() == ("torch.cuda.FloatTensor" if device.is_gpu
                                                     else "torch.FloatTensor")
    assert clgrad.typename(3) == "int" and clgrad.typename(clgrad.nn.Linear) == \
        "clgrad.nn.modules.linear.Linear"
    with pytest.warns(UserWarning, match="deprecated"):
        clgrad.set_default_tensor_type("torch.DoubleTensor")
    assert clgrad.get_default_dtype() is clgrad.float64
    with pytest.warns(UserWarning):
        clgrad.set_default_tensor_type(clgrad.FloatTensor)
    assert clgrad.get_default_dtype() is clgrad.float32
    with pytest.warns(UserWarning), pytest.raises(TypeError, match="floating-point"):
        clgrad.set_default_tensor_type(clgrad.IntTensor)


def test_determinism_and_warn_flags():
    try:
        assert clgrad.are_deterministic_algorithms_enabled() is False
        clgrad.use_deterministic_algorithms(True, warn_only=True)
        assert clgrad.is_deterministic_algorithms_warn_only_enabled()
        assert clgrad.get_deterministic_debug_mode() == 1
        clgrad.set_deterministic_debug_mode("error")
        assert clgrad.are_deterministic_algorithms_enabled()
        assert not clgrad.is_deterministic_algorithms_warn_only_enabled()
        with pytest.raises(RuntimeError, match="debug_mode"):
            clgrad.set_deterministic_debug_mode("bad")
        with pytest.raises(RuntimeError, match="debug_mode"):
            clgrad.set_deterministic_debug_mode(5)
        clgrad.set_warn_always(True)
        assert clgrad.is_warn_always_enabled()
    finally:
        clgrad.use_deterministic_algorithms(False)
        clgrad.set_warn_always(False)
    assert clgrad.get_deterministic_debug_mode() == 0
    assert clgrad.compiled_with_cxx11_abi() is False


def test_get_device(device):
    x = clgrad.zeros(1)
    d = x.device                                           # "cpu", "cuda:K" or "cl:N"
    assert clgrad.get_device(x) == (-1 if d.type == "cpu" else d.index)
    with pytest.raises(TypeError):
        clgrad.get_device([1])


def test_autocast_state(device):
    assert clgrad.is_autocast_enabled("cpu") is False
    assert clgrad.get_autocast_dtype("cpu") is clgrad.bfloat16
    try:
        clgrad.set_autocast_enabled("cpu", True)
        assert clgrad.is_autocast_enabled("cpu")
        clgrad.set_autocast_dtype("cpu", clgrad.float16)
        assert clgrad.get_autocast_dtype("cpu") is clgrad.float16
        a = clgrad.ones(2, 2, device="cpu")
        assert (a @ a).dtype is clgrad.float16               # the set state drives the ops
        with clgrad.autocast("cpu", enabled=False):          # a region keeps its own state
            assert not clgrad.is_autocast_enabled("cpu")
            assert (a @ a).dtype is clgrad.float32
        assert clgrad.is_autocast_enabled("cpu")
        with pytest.raises(RuntimeError):
            clgrad.set_autocast_dtype("cpu", clgrad.float32)
    finally:
        clgrad.set_autocast_enabled("cpu", False)
        clgrad.set_autocast_dtype("cpu", clgrad.bfloat16)
    assert (clgrad.ones(2, 2, device="cpu") @ clgrad.ones(2, 2, device="cpu")).dtype is \
        clgrad.float32
    with pytest.warns(DeprecationWarning):
        assert clgrad.is_autocast_cpu_enabled() is False
    with pytest.warns(DeprecationWarning):
        assert clgrad.get_autocast_gpu_dtype() is clgrad.float16
    assert clgrad.is_autocast_cache_enabled()
    assert clgrad.autocast_increment_nesting() == 1 and clgrad.autocast_decrement_nesting() == 0


def test_copy_variants_are_fresh_tensors(device):
    a = np.arange(24.0).reshape(2, 3, 4)
    cases = [("alias_copy", (), a), ("detach_copy", (), a),
             ("diagonal_copy", (0, 1, 2), np.diagonal(a, 0, 1, 2)),
             ("expand_copy", ([2, 2, 3, 4],), np.broadcast_to(a, (2, 2, 3, 4))),
             ("permute_copy", ([2, 0, 1],), a.transpose(2, 0, 1)),
             ("select_copy", (1, 2), a[:, 2]), ("slice_copy", (2, 1, None, 2), a[:, :, 1::2]),
             ("squeeze_copy", (), a), ("t_copy", (), a[0].T),
             ("transpose_copy", (0, 2), a.transpose(2, 1, 0)),
             ("unfold_copy", (2, 2, 2), a.reshape(2, 3, 2, 2)),
             ("unsqueeze_copy", (1,), a[:, None]), ("view_copy", ([6, 4],), a.reshape(6, 4)),
             ("as_strided_copy", ((2, 2), (1, 2)), np.array([[0.0, 2], [1, 3]]))]
    for name, args, ref in cases:
        x = _t(a)
        src = x[0] if name == "t_copy" else x
        out = getattr(clgrad, name)(src, *args)
        assert out.is_contiguous(), name
        assert_close(out, ref)
        out.fill_(-1)                                      # a copy: the source is untouched
        assert_close(x, a)
    parts = clgrad.split_copy(_t(a), 2, 2)
    assert [p.shape[2] for p in parts] == [2, 2] and all(p.is_contiguous() for p in parts)
    assert [p.shape[0] for p in clgrad.split_with_sizes_copy(_t(a), [1, 1])] == [1, 1]
    assert [p.tolist() for p in clgrad.unbind_copy(_t(a[0, 0]))] == [0.0, 1.0, 2.0, 3.0]
    xt = _t(a, requires_grad=True)
    clgrad.diagonal_copy(xt, 0, 1, 2).sum().backward()     # differentiable like the view
    assert_close(xt.grad, np.broadcast_to(np.eye(3, 4), a.shape))


def test_unravel_index_norm_except_dim_empty_permuted(device):
    idx = np.array([[0, 5], [-1, 23]])
    out = clgrad.unravel_index(_t(idx), (2, 3, 4))
    for o, r in zip(out, np.unravel_index(idx % 24, (2, 3, 4))):
        assert_close(o, r)
    with pytest.raises(ValueError):
        clgrad.unravel_index(_t([24]), (2, 3, 4))
    with pytest.raises(TypeError):
        clgrad.unravel_index(_t([1.0]), (2, 3))
    v = RNG.standard_normal((3, 4, 2))
    assert_close(clgrad.norm_except_dim(_t(v), 2, 1),
                 np.sqrt((v ** 2).sum((0, 2), keepdims=True)))
    assert_close(clgrad.norm_except_dim(_t(v), 2, -1), np.sqrt((v ** 2).sum()))
    e = clgrad.empty_permuted((2, 3, 4), (2, 0, 1))
    assert e.shape == (2, 3, 4) and e.stride() == (3, 1, 6)
    with pytest.raises(RuntimeError, match="permutation"):
        clgrad.empty_permuted((2, 3), (0, 0))


@pytest.mark.parametrize("dt", [clgrad.float32, clgrad.float64, clgrad.bfloat16])
def test_i0(device, dt):
    if dt is clgrad.float64 and not device.has_fp64:
        pytest.skip("device without fp64")
    x = np.concatenate([np.linspace(-20, 20, 18), [7.99, 8.0, 8.01, np.inf, -np.inf, np.nan]])
    out = clgrad.i0(make(x.reshape(2, 12), dt, device, "transposed"))
    assert out.dtype is dt
    rtol = {clgrad.float32: 1e-6, clgrad.float64: 1e-13}.get(dt)
    with np.errstate(invalid="ignore"):                    # I0(+-inf) is nan here, as torch's
        ref = np.i0(rounded(x, dt).astype(np.float64).reshape(2, 12))
    assert_close(out, ref, rtol=rtol)
    t = _t(x, dtype=dt)
    assert clgrad.i0_(t) is t and t.i0().dtype is dt


def test_i0_gradients(device):
    dt = grad_dtype(device)
    x = _t([-9.0, -1.5, 0.0, 2.0, 7.0, 12.0], dtype=dt, requires_grad=True)
    assert gradcheck(clgrad.i0, (x,), **grad_tols(device))
    assert gradgradcheck(clgrad.i0, (x,), **grad_tols(device))
    assert clgrad.i0(_t([1, 2])).dtype is clgrad.float32
    with pytest.raises(RuntimeError):
        clgrad.i0_(_t([1, 2]))


def test_native_forms(device):
    x = RNG.standard_normal((2, 3, 4))
    w, b = RNG.standard_normal(4), RNG.standard_normal(4)
    out, mean, rstd = clgrad.native_layer_norm(_t(x), [4], _t(w), _t(b), 1e-5)
    m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    assert_close(mean, m)
    assert_close(rstd, 1 / np.sqrt(v + 1e-5), rtol=1e-5)
    assert_close(out, (x - m) / np.sqrt(v + 1e-5) * w + b, rtol=1e-5)
    rm, rv = clgrad.zeros(3, dtype=clgrad.float64), clgrad.ones(3, dtype=clgrad.float64)
    out, sm, si = clgrad.native_batch_norm(_t(x), None, None, rm, rv, True, 0.1, 1e-5)
    m, v = x.mean((0, 2)), x.var((0, 2))
    assert_close(sm, m)
    assert_close(si, 1 / np.sqrt(v + 1e-5), rtol=1e-5)
    assert_close(rm, 0.1 * m)                               # running stats move as batch_norm's
    out, sm, si = clgrad.native_batch_norm(_t(x), None, None, rm, rv, False, 0.1, 1e-5)
    assert sm.shape == (0,) and si.shape == (0,)
    out, mean, rstd = clgrad.native_group_norm(_t(x), None, None, 2, 3, 4, 3, 1e-5)
    assert_close(mean, x.mean(-1))
    assert_close(rstd, 1 / np.sqrt(x.var(-1) + 1e-5), rtol=1e-5)
    assert_close(out, (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5),
                 rtol=1e-5)
    o, mask = clgrad.native_dropout(clgrad.ones(400), 0.25, True)
    on, mn = to_np(o), to_np(mask)
    assert mask.dtype is clgrad.bool and np.allclose(on[mn], 4 / 3) and (on[~mn] == 0).all()
    o, mask = clgrad.native_dropout(clgrad.ones(3), 0.25, False)
    assert to_np(mask).all() and to_np(o).tolist() == [1.0, 1.0, 1.0]


def test_conv_tbc_and_nonzero_static(device):
    i, w, b = RNG.standard_normal((5, 2, 3)), RNG.standard_normal((2, 3, 4)), RNG.standard_normal(4)
    out = clgrad.conv_tbc(_t(i), _t(w), _t(b), 1)
    ip = np.pad(i, ((1, 1), (0, 0), (0, 0)))
    ref = np.stack([np.einsum("kbc,kco->bo", ip[t:t + 2], w) for t in range(6)]) + b
    assert_close(out, ref, rtol=1e-5)
    x = _t([[0, 1], [1, 1]])
    assert_close(clgrad.nonzero_static(x, size=4, fill_value=-5),
                 [[0, 1], [1, 0], [1, 1], [-5, -5]])
    assert_close(clgrad.nonzero_static(x, size=1), [[0, 1]])
    assert clgrad.set_flush_denormal(True) is False and clgrad.is_vulkan_available() is False


def test_embedding_renorm_(device):
    w = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    t = _t(w)
    assert clgrad.embedding_renorm_(t, _t([[0, 1], [1, 1]]), 1.0, 2.0) is t
    assert_close(t, [[3 / (5 + 1e-7), 4 / (5 + 1e-7)], [0.3, 0.4], [6.0, 8.0]])
    with pytest.raises(RuntimeError, match="leaf"):
        clgrad.embedding_renorm_(clgrad.ones(2, 2, requires_grad=True), _t([0]), 1.0, 2.0)
