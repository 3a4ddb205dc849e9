"""The fused GRU and Elman RNN layers (clgrad/ops/rnn_cell.py: gru_layer, rnn_layer): whole
modules against a numpy reference with the same weights (outputs, and every gradient against
central differences of that reference), gradcheck and gradgradcheck of the layer ops, every
float dtype (vector and scalar kernels), empty batches."""
import numpy as np
import pytest
from helpers import float_dtypes
from test_rnn import _np_step

import clgrad
from clgrad import nn
from clgrad.autograd import gradcheck, gradgradcheck
from clgrad.ops.rnn_cell import gru_layer, rnn_layer

_NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


def _np_forward(mode, p, L, D, x, h0):
    """A recurrent module in numpy from its parameter dict p: x [T, B, I], h0 [L*D, B, H]."""
    T = x.shape[0]
    finals = []
    for layer in range(L):
        outs = []
        for d in range(D):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w = [p.get(n + sfx) for n in _NAMES] + [None]
            h, seq = h0[layer * D + d], [None] * T
            for t in (range(T - 1, -1, -1) if d else range(T)):
                seq[t], h = _np_step(mode, x[t], h, *w)
            outs.append(np.stack(seq))
            finals.append(h)
        x = np.concatenate(outs, -1)
    return x, np.stack(finals)


def _np_grads(mode, p, L, D, x, h0, r_out, r_h, eps=1e-6):
    """Central differences of sum(out * r_out) + sum(h_n * r_h) in every parameter, x and h0."""
    def loss():
        out, h = _np_forward(mode, p, L, D, x, h0)
        return (out * r_out).sum() + (h * r_h).sum()
    grads = {}
    for name, a in list(p.items()) + [("x", x), ("h0", h0)]:
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            keep = a[i]
            a[i] = keep + eps
            up = loss()
            a[i] = keep - eps
            g[i] = (up - loss()) / (2 * eps)
            a[i] = keep
        grads[name] = g
    return grads


CASES = [("GRU", dict(batch_first=True), True), ("GRU", dict(bias=False), False),
         ("RNN", dict(batch_first=True), True), ("RNN", dict(nonlinearity="relu"), False)]


@pytest.mark.parametrize("cls,kw,given", CASES,
                         ids=[f"{c}-{'-'.join(k) or 'bias'}-{g}" for c, k, g in CASES])
def test_fused_module_matches_numpy(device, cls, kw, given):
    """2 layers, bidirectional, h0 given or not: outputs, h_n and the gradients of every
    parameter, the input and h0."""
    clgrad.manual_seed(0)
    m = getattr(nn, cls)(2, 3, num_layers=2, bidirectional=True, **kw).double()
    rng = np.random.default_rng(0)
    T, B = 3, 2
    x = rng.standard_normal((T, B, 2))
    h0 = rng.standard_normal((4, B, 3)) if given else np.zeros((4, B, 3))
    r_out, r_h = rng.standard_normal((T, B, 6)), rng.standard_normal((4, B, 3))
    p = {k: v.detach().numpy().copy() for k, v in m.named_parameters()}
    ref_out, ref_h = _np_forward(m.mode, p, 2, 2, x, h0)

    xt = clgrad.tensor(x.transpose(1, 0, 2) if m.batch_first else x).requires_grad_()
    ht = clgrad.tensor(h0).requires_grad_()
    out, h_n = m(xt, ht) if given else m(xt)
    got = out.detach().numpy()
    np.testing.assert_allclose(got.transpose(1, 0, 2) if m.batch_first else got, ref_out,
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h_n.detach().numpy(), ref_h, rtol=1e-10, atol=1e-12)

    ro = clgrad.tensor(r_out.transpose(1, 0, 2) if m.batch_first else r_out)
    ((out * ro).sum() + (h_n * clgrad.tensor(r_h)).sum()).backward()
    want = _np_grads(m.mode, p, 2, 2, x, h0, r_out, r_h)
    for name, prm in m.named_parameters():
        np.testing.assert_allclose(prm.grad.numpy(), want[name], rtol=1e-6, atol=1e-7,
                                   err_msg=name)
    gx = xt.grad.numpy()
    np.testing.assert_allclose(gx.transpose(1, 0, 2) if m.batch_first else gx, want["x"],
                               rtol=1e-6, atol=1e-7)
    if given:
        np.testing.assert_allclose(ht.grad.numpy(), want["h0"], rtol=1e-6, atol=1e-7)
    else:
        assert ht.grad is None


def test_fused_module_runs_the_layer_ops(device):
    """nn.GRU and nn.RNN over a whole sequence record one layer op per layer and direction."""
    x = clgrad.randn(3, 2, 2, requires_grad=True)
    for m, name in ((nn.GRU(2, 3), "GRULayerBackward"), (nn.RNN(2, 3), "RNNLayerBackward")):
        out, h = m(x)
        assert type(out.grad_fn).__name__.startswith(name)


@pytest.mark.parametrize("reverse", [False, True])
def test_layer_ops_differentiate_twice(device, reverse):
    clgrad.manual_seed(0)
    mk = lambda *s: clgrad.randn(*s, dtype=clgrad.float64, requires_grad=True)  # noqa: E731
    proj, w, b, h0 = mk(2, 1, 6), mk(6, 2), mk(6), mk(1, 2)
    assert gradcheck(lambda *a: gru_layer(*a, reverse=reverse), (proj, w, b, h0))
    assert gradcheck(lambda p, w, h: gru_layer(p, w, None, h, reverse)[1], (proj, w, h0))
    assert gradgradcheck(lambda *a: gru_layer(*a, reverse=reverse), (proj, w, b, h0))
    proj, w = mk(2, 1, 2), mk(2, 2)
    for nl in ("tanh", "relu"):
        assert gradcheck(lambda *a: rnn_layer(*a, reverse, nl), (proj, w, h0))
        assert gradgradcheck(lambda *a: rnn_layer(*a, reverse, nl), (proj, w, h0))


def _np_gru_layer(proj, w, b, h0, reverse):
    h, outs = h0, [None] * len(proj)
    for t in (range(len(proj) - 1, -1, -1) if reverse else range(len(proj))):
        H = h.shape[1]
        outs[t], h = _np_step("GRU", np.zeros((h.shape[0], 1)), h, np.zeros((3 * H, 1)), w,
                              proj[t], b, None)
    return np.stack(outs), h


def _np_rnn_layer(proj, w, h0, reverse, mode):
    h, outs = h0, [None] * len(proj)
    for t in (range(len(proj) - 1, -1, -1) if reverse else range(len(proj))):
        H = h.shape[1]
        outs[t], h = _np_step(mode, np.zeros((h.shape[0], 1)), h, np.zeros((H, 1)), w, proj[t],
                              None, None)
    return np.stack(outs), h


def test_layer_ops_every_float_dtype(device):
    """Each op against numpy steps, H = 8 (the vector kernels on every code path) and 3 (the
    scalar ones), forward and reversed; and its gradients against float64's."""
    rng = np.random.default_rng(4)
    tols = {"float32": 1e-5, "float16": 5e-3, "bfloat16": 5e-2}
    for dt in float_dtypes(device):
        if dt == clgrad.float64:
            continue
        tol = tols[str(dt).split(".")[1]]
        for H, reverse in ((8, False), (3, True)):
            gru = [rng.standard_normal(s) / d for s, d in (((3, 2, 3 * H), 1), ((3 * H, H), 3),
                                                           ((3 * H,), 1), ((2, H), 1))]
            relu = H == 3
            rnn = [rng.standard_normal(s) / d for s, d in (((3, 2, H), 1), ((H, H), 3),
                                                           ((2, H), 1))]
            for op, arrays, extra, ref in (
                    (gru_layer, gru, (reverse,), _np_gru_layer(*gru, reverse)),
                    (rnn_layer, rnn, (reverse, "relu" if relu else "tanh"),
                     _np_rnn_layer(*rnn, reverse, "RNN_RELU" if relu else "RNN_TANH"))):
                ins = [clgrad.tensor(a).to(dt).requires_grad_() for a in arrays]
                out, h_n = op(*ins, *extra)
                for got, want in zip((out, h_n), ref):
                    np.testing.assert_allclose(got.detach().float().numpy(), want, rtol=tol,
                                               atol=tol, err_msg=f"{op.__name__} {dt} {H}")
                (out.sum() + 2 * h_n.sum()).backward()
                ref64 = [clgrad.tensor(a).requires_grad_() for a in arrays]
                o64, h64 = op(*ref64, *extra)
                (o64.sum() + 2 * h64.sum()).backward()
                for a, b in zip(ins, ref64):
                    np.testing.assert_allclose(a.grad.float().numpy(), b.grad.numpy(),
                                               rtol=tol * 4, atol=tol * 4,
                                               err_msg=f"{op.__name__} {dt} {H}")


def test_empty_batch_and_zero_length(device):
    """A batch of zero sequences runs (empty outputs and input gradient, zero weight
    gradients); a sequence of zero steps is torch's error."""
    for m in (nn.GRU(2, 3, num_layers=2, bidirectional=True), nn.RNN(2, 3, nonlinearity="relu")):
        x = clgrad.zeros(3, 0, 2, requires_grad=True)
        out, h = m(x)
        assert out.shape == (3, 0, 3 * (2 if m.bidirectional else 1))
        assert h.shape == (m.num_layers * (2 if m.bidirectional else 1), 0, 3)
        (out.sum() + h.sum()).backward()
        assert x.grad.shape == (3, 0, 2)
        assert m.weight_hh_l0.grad.abs().sum().item() == 0
        with pytest.raises(RuntimeError, match="sequence length to be larger than 0"):
            m(clgrad.zeros(0, 2, 2))
