"""Max unpooling, LP pooling and the *_with_indices names against numpy references; gradients by
finite differences."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.autograd import gradcheck, gradgradcheck


def _unpool_ref(x, idx, size):
    N, C = x.shape[:2]
    out = np.zeros((N, C, int(np.prod(size))), x.dtype)
    for n in range(N):
        for c in range(C):
            out[n, c, idx[n, c].reshape(-1)] = x[n, c].reshape(-1)
    return out.reshape((N, C) + tuple(size))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_values_roundtrip_and_grad(device, nd):
    rs = np.random.RandomState(nd)
    shape = (2, 2) + (4,) * nd
    x = (np.abs(rs.randn(*shape)) + 0.1).astype(np.float32)    # maxima above the zeros
    pool = getattr(F, f"max_pool{nd}d")
    unpool = getattr(F, f"max_unpool{nd}d")
    out, idx = pool(clgrad.tensor(x), 2, return_indices=True)
    o2, i2 = getattr(F, f"max_pool{nd}d_with_indices")(clgrad.tensor(x), 2)
    assert clgrad.equal(o2, out) and clgrad.equal(i2, idx)
    y = unpool(out, idx, 2)
    ref = _unpool_ref(out.numpy(), idx.numpy(), (4,) * nd)
    np.testing.assert_array_equal(y.numpy(), ref)
    # the unpooled tensor keeps each window's max in place
    np.testing.assert_array_equal(pool(y, 2).numpy(), out.numpy())
    # output_size one larger than the default, given with or without N, C
    size = (5,) * nd
    y = unpool(out, idx, 2, output_size=shape[:2] + size)
    np.testing.assert_array_equal(y.numpy(), _unpool_ref(out.numpy(), idx.numpy(), size))
    # non-contiguous input: a transposed copy of the pooled values, same indices transposed
    t = out.transpose(0, 1)
    np.testing.assert_array_equal(unpool(t, idx.transpose(0, 1), 2).numpy(),
                                  _unpool_ref(t.numpy(), idx.transpose(0, 1).numpy(), (4,) * nd))
    # unbatched
    np.testing.assert_array_equal(unpool(out[0], idx[0], 2).numpy(), ref[0])
    if device.has_fp64:
        v, i1 = out[:1, :1].detach().double().requires_grad_(), idx[:1, :1]
        assert gradcheck(lambda a: unpool(a, i1, 2), (v,))
        assert gradgradcheck(lambda a: unpool(a, i1, 2), (v,))


def test_max_unpool_errors_and_modules(device):
    out, idx = F.max_pool2d(clgrad.randn(1, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(ValueError, match=r'invalid output_size "\(9, 9\)" \(dim 0 must be '
                                         r'between 2 and 6\)'):
        F.max_unpool2d(out, idx, 2, output_size=(9, 9))
    with pytest.raises(ValueError, match="output_size should be a sequence containing 2 or 4"):
        F.max_unpool2d(out, idx, 2, output_size=(4,))
    with pytest.raises(RuntimeError, match="Found an invalid max index: "):
        F.max_unpool2d(out, idx * 10, 2)
    with pytest.raises(RuntimeError, match="Expected shape of indices"):
        F.max_unpool2d(out, idx[..., :1], 2)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.max_unpool2d(out[0, 0], idx[0, 0], 2)
    m = nn.MaxUnpool2d(2)
    assert repr(m) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    assert m(out, idx).shape == (1, 1, 4, 4)
    assert m(out, idx, output_size=[5, 5]).shape == (1, 1, 5, 5)
    m = nn.MaxUnpool1d(3, stride=2, padding=1)
    assert repr(m) == "MaxUnpool1d(kernel_size=(3,), stride=(2,), padding=(1,))"
    o, i = F.max_pool1d(clgrad.randn(1, 2, 7), 3, 2, 1, return_indices=True)
    assert m(o, i).shape == (1, 2, 7)            # (4 - 1) * 2 - 2 + 3
    o, i = F.max_pool3d(clgrad.randn(1, 1, 2, 2, 4), 2, return_indices=True)
    assert nn.MaxUnpool3d(2)(o, i).shape == (1, 1, 2, 2, 4)
    x = clgrad.randn(1, 2, 5)
    for a, b in [(F.adaptive_max_pool1d_with_indices(x, 2), F.adaptive_max_pool1d(x, 2, True)),
                 (F.adaptive_max_pool2d_with_indices(x[None], 2),
                  F.adaptive_max_pool2d(x[None], 2, True)),
                 (F.adaptive_max_pool3d_with_indices(x[None, None], (1, 1, 2)),
                  F.adaptive_max_pool3d(x[None, None], (1, 1, 2), True))]:
        assert clgrad.equal(a[0], b[0]) and clgrad.equal(a[1], b[1])


def _lp_ref(x, p, k, s):
    nd = len(k)
    sp = x.shape[-nd:]
    outs = [(n - kk) // ss + 1 for n, kk, ss in zip(sp, k, s)]
    out = np.zeros(x.shape[:-nd] + tuple(outs))
    for pos in np.ndindex(*outs):
        sl = tuple(slice(i * ss, i * ss + kk) for i, ss, kk in zip(pos, s, k))
        win = x[(Ellipsis,) + sl]
        out[(Ellipsis,) + pos] = (win ** p).sum(axis=tuple(range(-nd, 0))) ** (1 / p)
    return out


@pytest.mark.parametrize("nd,p,k,s", [(1, 2.0, 3, None), (2, 1.5, (2, 3), 1), (3, 3.0, 2, None)])
def test_lp_pool(device, nd, p, k, s):
    rs = np.random.RandomState(0)
    x = rs.rand(*((2, 2) + (5,) * nd)) + 0.1          # positive: x^p is defined for every p
    kt = k if isinstance(k, tuple) else (k,) * nd
    st = kt if s is None else (s,) * nd
    fn = getattr(F, f"lp_pool{nd}d")
    out = fn(clgrad.tensor(x, dtype=clgrad.float32), p, k, s)
    np.testing.assert_allclose(out.numpy(), _lp_ref(x, p, kt, st), rtol=1e-4)
    mod = getattr(nn, f"LPPool{nd}d")(p, k, s)
    np.testing.assert_allclose(mod(clgrad.tensor(x, dtype=clgrad.float32)).numpy(),
                               out.numpy(), rtol=1e-6)
    if device.has_fp64 and nd < 3:
        v = clgrad.tensor(x[:1, :1], dtype=clgrad.float64, requires_grad=True)
        assert gradcheck(lambda a: fn(a, p, k, s), (v,))
    assert repr(nn.LPPool2d(2, 3)) == "LPPool2d(norm_type=2, kernel_size=3, stride=None, " \
                                      "ceil_mode=False)"


# ---- AdaptiveLogSoftmaxWithLoss ------------------------------------------------------------------
def _log_softmax(z):
    z = z - z.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def _asm_full_ref(asm, x):
    W = asm.head.weight.detach().numpy().astype(np.float64)
    head = x @ W.T
    if asm.head.bias is not None:
        head = head + asm.head.bias.detach().numpy()
    hl = _log_softmax(head)
    cols = [hl[:, :asm.shortlist_size]]
    for i, (a, b) in enumerate(asm.tail):
        z = x @ a.weight.detach().numpy().T @ b.weight.detach().numpy().T
        cols.append(_log_softmax(z) + hl[:, asm.shortlist_size + i:asm.shortlist_size + i + 1])
    return np.concatenate(cols, 1)


def test_adaptive_log_softmax(device):
    asm = nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[3, 6], div_value=2.0, head_bias=True)
    assert [tuple(p.shape) for p in asm.parameters()] == [(5, 8), (5,), (4, 8), (3, 4), (2, 8),
                                                          (4, 2)]
    assert sorted(asm.state_dict())[:3] == ["head.bias", "head.weight", "tail.0.0.weight"]
    rs = np.random.RandomState(0)
    x = rs.randn(6, 8).astype(np.float32)
    target = np.array([0, 4, 9, 2, 7, 5])
    full = _asm_full_ref(asm, x.astype(np.float64))
    out, loss = asm(clgrad.tensor(x), clgrad.tensor(target))
    ref = full[np.arange(6), target]
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(loss.item(), -ref.mean(), rtol=1e-5)
    assert type(asm(clgrad.tensor(x), clgrad.tensor(target))).__name__ == "_ASMoutput"
    np.testing.assert_allclose(asm.log_prob(clgrad.tensor(x)).detach().numpy(), full, rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_array_equal(asm.predict(clgrad.tensor(x)).numpy(), full.argmax(1))
    # unbatched: 1-d input, 0-d target
    o1, l1 = asm(clgrad.tensor(x[1]), clgrad.tensor(4))
    assert o1.shape == () and abs(o1.item() - ref[1]) < 1e-5
    loss.backward()
    assert all(p.grad is not None for p in asm.parameters())
    if device.has_fp64:
        asm = nn.AdaptiveLogSoftmaxWithLoss(4, 5, [2], div_value=2.0).double()
        xx = clgrad.tensor(rs.randn(3, 4), dtype=clgrad.float64, requires_grad=True)
        tt = clgrad.tensor([0, 3, 4])
        assert gradcheck(lambda a: asm(a, tt).loss, (xx,))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 5, [3, 2])
    with pytest.raises(ValueError, match="cutoffs should be a sequence of length larger than 0"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 5, [])
    asm = nn.AdaptiveLogSoftmaxWithLoss(4, 5, [2])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 4\]"):
        asm(clgrad.randn(2, 4), clgrad.tensor([0, 5]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        asm(clgrad.randn(3, 4), clgrad.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        asm(clgrad.randn(2, 4), clgrad.tensor([[0, 1]]))


# ---- fractional max pooling ----------------------------------------------------------------------
def _starts(u, n_in, n_out, k):
    # torch's interval rule, computed in float32 like its float kernels
    if n_out == 1:
        return [n_in - k]
    alpha = np.float32(n_in - k) / np.float32(n_out - 1)
    u = np.float32(u)
    return [int((np.float32(i) + u) * alpha) - int(u * alpha) for i in range(n_out - 1)] + \
        [n_in - k]


def _frac_ref(x, k, out, samples, order):
    N, C = x.shape[:2]
    nd = len(k)
    vals = np.zeros((N, C) + tuple(out), x.dtype)
    idx = np.zeros((N, C) + tuple(out), np.int64)
    for n in range(N):
        for c in range(C):
            st = [_starts(samples[n, c, order[d]], x.shape[2 + d], out[d], k[d])
                  for d in range(nd)]
            for pos in np.ndindex(*out):
                best, bi = -np.inf, None
                for off in np.ndindex(*k):
                    q = tuple(st[d][pos[d]] + off[d] for d in range(nd))
                    v = x[(n, c) + q]
                    if v > best:
                        best, bi = v, np.ravel_multi_index(q, x.shape[2:])
                vals[(n, c) + pos], idx[(n, c) + pos] = best, bi
    return vals, idx


@pytest.mark.parametrize("nd,k,out", [(2, (2, 3), (4, 3)), (3, (2, 2, 3), (2, 3, 2))])
def test_fractional_max_pool(device, nd, k, out):
    rs = np.random.RandomState(nd)
    x = rs.randn(*((2, 2) + (5, 6, 6)[3 - nd:])).astype(np.float32)
    s = rs.rand(2, 2, nd).astype(np.float32)
    fn = getattr(F, f"fractional_max_pool{nd}d")
    o, i = fn(clgrad.tensor(x), k, out, return_indices=True, _random_samples=clgrad.tensor(s))
    ref_o, ref_i = _frac_ref(x, k, out, s, (1, 0) if nd == 2 else (0, 1, 2))
    np.testing.assert_array_equal(o.numpy(), ref_o)
    np.testing.assert_array_equal(i.numpy(), ref_i)
    o2, i2 = getattr(F, f"fractional_max_pool{nd}d_with_indices")(
        clgrad.tensor(x), k, out, _random_samples=clgrad.tensor(s))
    assert clgrad.equal(o2, o) and clgrad.equal(i2, i)
    # unbatched, and the module with a fixed sample buffer
    u = fn(clgrad.tensor(x[0]), k, out, _random_samples=clgrad.tensor(s[:1]))
    np.testing.assert_array_equal(u.numpy(), ref_o[0])
    m = getattr(nn, f"FractionalMaxPool{nd}d")(k, output_size=out,
                                                _random_samples=clgrad.tensor(s))
    np.testing.assert_array_equal(m(clgrad.tensor(x)).numpy(), ref_o)
    assert repr(m) == f"FractionalMaxPool{nd}d()"
    # random windows: still a max over some k-window, shape from output_ratio
    r = fn(clgrad.tensor(x), k, output_ratio=0.5)
    assert r.shape == (2, 2) + tuple(int(v * 0.5) for v in x.shape[2:])
    if device.has_fp64 and nd == 2:
        v = clgrad.tensor(x[:1, :1], dtype=clgrad.float64, requires_grad=True)
        ss = clgrad.tensor(s[:1, :1], dtype=clgrad.float64)
        assert gradcheck(lambda a: fn(a, k, out, _random_samples=ss), (v,))


def test_fractional_max_pool_errors(device):
    x = clgrad.randn(1, 2, 5, 5)
    with pytest.raises(RuntimeError, match="pool height 3 too large relative to input height 5"):
        F.fractional_max_pool2d(x, 3, output_size=4)
    with pytest.raises(ValueError, match="requires specifying either an output_size or an "
                                         "output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(RuntimeError, match="_random_samples of shape"):
        F.fractional_max_pool2d(x, 2, 2, _random_samples=clgrad.rand(1, 3, 2))
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(ValueError, match="requires specifying either an output size"):
        nn.FractionalMaxPool3d(2)
