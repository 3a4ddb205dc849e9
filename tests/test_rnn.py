"""Recurrent layers (RNN, LSTM, GRU, cells) against numpy references with the same weights, packed
sequences against running each sequence alone, gradients by finite differences, and
nn.utils.rnn."""
from contextlib import contextmanager

import numpy as np
import pytest

import clgrad
from clgrad import nn
from clgrad.autograd import gradcheck
from clgrad.nn.utils import rnn as rnn_utils


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _np_step(mode, x, state, w_ih, w_hh, b_ih, b_hh, w_hr):
    """One step of torch's documented update rules, in numpy."""
    gi = x @ w_ih.T + (0 if b_ih is None else b_ih)
    h = state[0] if mode == "LSTM" else state
    gh = h @ w_hh.T + (0 if b_hh is None else b_hh)
    if mode == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, -1)
        c = _sig(f) * state[1] + _sig(i) * np.tanh(g)
        h = _sig(o) * np.tanh(c)
        if w_hr is not None:
            h = h @ w_hr.T
        return h, (h, c)
    if mode == "GRU":
        xr, xz, xn = np.split(gi, 3, -1)
        hr, hz, hn = np.split(gh, 3, -1)
        r, z = _sig(xr + hr), _sig(xz + hz)
        n = np.tanh(xn + r * hn)
        h = (1 - z) * n + z * h
        return h, h
    h = np.tanh(gi + gh) if mode == "RNN_TANH" else np.maximum(gi + gh, 0)
    return h, h


def _np_layer(m, x, h0=None):
    """The numpy reference of a whole recurrent layer m on x [T, B, I] (time first)."""
    p = {k: v.detach().numpy() for k, v in m.named_parameters()}
    dirs = 2 if m.bidirectional else 1
    T, B = x.shape[:2]
    out_size = m.proj_size or m.hidden_size
    if h0 is None:
        h0 = [np.zeros((m.num_layers * dirs, B, out_size))]
        if m.mode == "LSTM":
            h0.append(np.zeros((m.num_layers * dirs, B, m.hidden_size)))
    finals = [[] for _ in h0]
    for layer in range(m.num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w = [p.get(n + sfx) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh",
                                          "weight_hr")]
            k = layer * dirs + d
            state = (h0[0][k], h0[1][k]) if m.mode == "LSTM" else h0[0][k]
            seq = [None] * T
            for t in (range(T - 1, -1, -1) if d else range(T)):
                seq[t], state = _np_step(m.mode, x[t], state, *w)
            outs.append(np.stack(seq))
            for f, s in zip(finals, state if m.mode == "LSTM" else (state,)):
                f.append(s)
        x = np.concatenate(outs, -1)
    return x, [np.stack(f) for f in finals]


CASES = [("RNN", {}), ("RNN", dict(nonlinearity="relu", num_layers=2, bidirectional=True)),
         ("LSTM", dict(num_layers=2, bidirectional=True)), ("LSTM", dict(proj_size=2)),
         ("GRU", dict(num_layers=2, batch_first=True)), ("GRU", dict(bias=False,
                                                                     bidirectional=True))]


@pytest.mark.parametrize("cls,kw", CASES, ids=[f"{c}-{'-'.join(k)}" for c, k in CASES])
def test_layers_match_numpy(device, cls, kw):
    clgrad.manual_seed(0)
    m = getattr(nn, cls)(3, 4, **kw).double()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 2, 3))                   # [T, B, I]
    D, L = (2 if m.bidirectional else 1), m.num_layers
    h0 = [rng.standard_normal((L * D, 2, m.proj_size or 4))]
    if cls == "LSTM":
        h0.append(rng.standard_normal((L * D, 2, 4)))
    ref_out, ref_h = _np_layer(m, x, h0)
    xin = x.transpose(1, 0, 2) if m.batch_first else x
    hx = tuple(clgrad.tensor(h) for h in h0) if cls == "LSTM" else clgrad.tensor(h0[0])
    out, h_n = m(clgrad.tensor(xin), hx)
    out = out.detach().numpy()
    np.testing.assert_allclose(out.transpose(1, 0, 2) if m.batch_first else out, ref_out,
                               rtol=1e-10, atol=1e-12)
    for got, ref in zip(h_n if cls == "LSTM" else (h_n,), ref_h):
        np.testing.assert_allclose(got.detach().numpy(), ref, rtol=1e-10, atol=1e-12)
    # unbatched input [T, I]: the same numbers as a batch of one
    out1, _ = m(clgrad.tensor(x[:, 0]))
    np.testing.assert_allclose(out1.detach().numpy(), _np_layer(m, x[:, :1])[0][:, 0],
                               rtol=1e-10, atol=1e-12)


def test_parameter_names_shapes_and_init():
    m = nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
    shapes = dict((n, tuple(p.shape)) for n, p in m.named_parameters())
    # torch's names and layout: per layer and direction w_ih, w_hh, b_ih, b_hh, w_hr
    assert list(shapes)[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                "weight_hr_l0"]
    assert shapes["weight_ih_l0"] == (20, 3) and shapes["weight_hh_l0"] == (20, 2)
    assert shapes["weight_hr_l0_reverse"] == (2, 5) and shapes["weight_ih_l1"] == (20, 4)
    bound = 1 / np.sqrt(5)
    assert all(np.abs(p.detach().numpy()).max() <= bound for p in m.parameters())
    g = nn.GRUCell(3, 4, bias=False)
    assert [n for n, _ in g.named_parameters()] == ["weight_ih", "weight_hh"]
    assert repr(nn.GRU(3, 4, batch_first=True, bidirectional=True)) == \
        "GRU(3, 4, batch_first=True, bidirectional=True)"


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_packed_sequences_run_each_sequence_alone(device, cls):
    """A packed batch (unsorted lengths) gives, per sequence, what the layer gives on that
    sequence alone: outputs, and the final state at the sequence's own last step."""
    clgrad.manual_seed(0)
    m = getattr(nn, cls)(2, 3, num_layers=2, bidirectional=True).double()
    rng = np.random.default_rng(0)
    lengths = [2, 4, 1]
    seqs = [rng.standard_normal((n, 2)) for n in lengths]
    padded = rnn_utils.pad_sequence([clgrad.tensor(s) for s in seqs])
    packed = rnn_utils.pack_padded_sequence(padded, lengths, enforce_sorted=False)
    out, h_n = m(packed)
    assert isinstance(out, rnn_utils.PackedSequence)
    out_pad, out_len = rnn_utils.pad_packed_sequence(out)
    assert out_len.tolist() == lengths
    h_n = h_n[0] if cls == "LSTM" else h_n
    for b, s in enumerate(seqs):
        alone, h_alone = m(clgrad.tensor(s[:, None]))
        h_alone = h_alone[0] if cls == "LSTM" else h_alone
        np.testing.assert_allclose(out_pad[:len(s), b].detach().numpy(),
                                   alone[:, 0].detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(h_n[:, b].detach().numpy(), h_alone[:, 0].detach().numpy(),
                                   rtol=1e-10, atol=1e-12)


def test_cell_gradients(device):
    clgrad.manual_seed(0)
    x = clgrad.randn(2, 3, dtype=clgrad.float64, requires_grad=True)
    h = clgrad.randn(2, 2, dtype=clgrad.float64, requires_grad=True)
    c = clgrad.randn(2, 2, dtype=clgrad.float64, requires_grad=True)
    lstm = nn.LSTMCell(3, 2).double()
    assert gradcheck(lambda x, h, c, *w: lstm(x, (h, c)), (x, h, c) + tuple(lstm.parameters()))
    gru = nn.GRUCell(3, 2).double()
    assert gradcheck(lambda x, h, *w: gru(x, h), (x, h) + tuple(gru.parameters()))
    cell = nn.RNNCell(3, 2, nonlinearity="relu").double()
    assert gradcheck(lambda x, h: cell(x, h), (x, h))


def test_layer_gradients_through_time(device):
    clgrad.manual_seed(0)
    m = nn.GRU(2, 2, bidirectional=True).double()
    x = clgrad.randn(3, 1, 2, dtype=clgrad.float64, requires_grad=True)
    assert gradcheck(lambda x, *w: m(x)[0], (x,) + tuple(m.parameters()))
    lstm = nn.LSTM(2, 3, proj_size=1).double()
    assert gradcheck(lambda x, *w: lstm(x)[1][1], (x,) + tuple(lstm.parameters()))


def test_dropout_between_layers_only_in_training():
    clgrad.manual_seed(0)
    m = nn.LSTM(3, 4, num_layers=2, dropout=0.5).double()
    x = clgrad.randn(4, 2, 3, dtype=clgrad.float64)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    m.train()
    c = m(x)[0]
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.2)


def test_errors_name_the_sizes():
    m = nn.LSTM(3, 4)
    with pytest.raises(RuntimeError, match="Expected 3, got 5"):
        m(clgrad.randn(2, 1, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\)"):
        m(clgrad.randn(2, 2, 3), (clgrad.zeros(1, 3, 4), clgrad.zeros(1, 2, 4)))
    with pytest.raises(ValueError, match="only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D"):
        m(clgrad.randn(1, 2, 3, 3))
    with pytest.raises(RuntimeError, match="inconsistent input_size"):
        nn.GRUCell(3, 2)(clgrad.randn(2, 4))


def test_sequence_utilities():
    a, b = clgrad.tensor([1.0, 2.0, 3.0]), clgrad.tensor([4.0])
    assert rnn_utils.pad_sequence([a, b], batch_first=True, padding_value=-1).tolist() == \
        [[1.0, 2.0, 3.0], [4.0, -1.0, -1.0]]
    assert rnn_utils.pad_sequence([a, b], padding_side="left").tolist() == \
        [[1.0, 0.0], [2.0, 0.0], [3.0, 4.0]]
    p = rnn_utils.pack_sequence([b, a], enforce_sorted=False)
    assert p.data.tolist() == [1.0, 4.0, 2.0, 3.0] and p.batch_sizes.tolist() == [2, 1, 1]
    assert p.sorted_indices.tolist() == [1, 0] and p.unsorted_indices.tolist() == [1, 0]
    padded, lengths = rnn_utils.pad_packed_sequence(p, batch_first=True, total_length=4)
    assert padded.tolist() == [[4.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, 0.0]]
    assert lengths.tolist() == [1, 3]
    assert [t.tolist() for t in rnn_utils.unpack_sequence(p)] == [[4.0], [1.0, 2.0, 3.0]]
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        rnn_utils.pack_sequence([b, a])
    with pytest.raises(ValueError, match="total_length"):
        rnn_utils.pad_packed_sequence(p, total_length=2)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-6), ("float16", 2e-3), ("bfloat16", 2e-2)])
def test_fused_lstm_cell_every_float_dtype(device, dtype, tol):
    from clgrad.ops.rnn_cell import lstm_cell
    rng = np.random.default_rng(3)
    g, c = rng.standard_normal((3, 8)), rng.standard_normal((3, 2))
    dt = getattr(clgrad, dtype)
    h2, c2 = lstm_cell(clgrad.tensor(g).to(dt), clgrad.tensor(c).to(dt))
    i, f, gg, o = np.split(g, 4, -1)
    want_c = _sig(f) * c + _sig(i) * np.tanh(gg)
    np.testing.assert_allclose(c2.float().numpy(), want_c, rtol=tol, atol=tol)
    np.testing.assert_allclose(h2.float().numpy(), _sig(o) * np.tanh(want_c), rtol=tol,
                               atol=tol)


def test_fused_lstm_cell_differentiates_twice(device):
    from clgrad.autograd import gradgradcheck
    from clgrad.ops.rnn_cell import lstm_cell
    g = clgrad.randn(2, 8, dtype=clgrad.float64, requires_grad=True)
    c = clgrad.randn(2, 2, dtype=clgrad.float64, requires_grad=True)
    assert gradcheck(lambda g, c: lstm_cell(g, c), (g, c))
    assert gradcheck(lambda g, c: lstm_cell(g, c)[0], (g, c))       # no gradient into c
    assert gradgradcheck(lambda g, c: lstm_cell(g, c), (g, c))


def test_fused_lstm_layer_gradients(device):
    """A 2-layer bidirectional LSTM runs each layer and direction as one fused op: gradients of
    the output and of the final cell state alone (no gradient from the output or h_n then)."""
    clgrad.manual_seed(0)
    m = nn.LSTM(2, 2, num_layers=2, bidirectional=True).double()
    x = clgrad.randn(3, 2, 2, dtype=clgrad.float64, requires_grad=True)
    h0 = clgrad.randn(4, 2, 2, dtype=clgrad.float64, requires_grad=True)
    c0 = clgrad.randn(4, 2, 2, dtype=clgrad.float64, requires_grad=True)
    # a few of the weights (each input costs two forwards): the rest are tested by their sums
    w = (m.weight_hh_l0, m.weight_ih_l1_reverse, m.bias_hh_l1)
    assert gradcheck(lambda x, h0, c0, *w: m(x, (h0, c0))[0], (x, h0, c0) + w)
    assert gradcheck(lambda x, c0: m(x, (h0, c0))[1][1], (x, c0))


def test_fused_lstm_layer_differentiates_twice(device):
    from clgrad.autograd import gradgradcheck
    from clgrad.ops.rnn_cell import lstm_layer
    clgrad.manual_seed(0)
    args = [clgrad.randn(*s, dtype=clgrad.float64, requires_grad=True)
            for s in ((2, 1, 8), (8, 2), (1, 2), (1, 2))]
    for reverse in (False, True):
        assert gradgradcheck(lambda *a: lstm_layer(*a, reverse=reverse), args)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float16", 5e-3), ("bfloat16", 5e-2)])
def test_fused_lstm_layer_every_float_dtype(device, dtype, tol):
    """The layer op against numpy steps, H = 8 (the vector kernels on every code path) and 3
    (the scalar ones), forward and reversed; and its gradients against float64's."""
    from clgrad.ops.rnn_cell import lstm_layer
    rng = np.random.default_rng(4)
    dt = getattr(clgrad, dtype)
    for H, reverse in ((8, False), (3, True)):
        proj, w = rng.standard_normal((3, 2, 4 * H)), rng.standard_normal((4 * H, H)) / 3
        h0, c0 = rng.standard_normal((2, H)), rng.standard_normal((2, H))
        h, c, want = h0, c0, [None] * 3
        for t in ((2, 1, 0) if reverse else (0, 1, 2)):
            want[t], (h, c) = _np_step("LSTM", np.zeros((2, 1)), (h, c), np.zeros((4 * H, 1)),
                                       w, proj[t], None, None)
        ins = [clgrad.tensor(a).to(dt).requires_grad_() for a in (proj, w, h0, c0)]
        out, h_n, c_n = lstm_layer(*ins, reverse=reverse)
        for got, ref in ((out, np.stack(want)), (h_n, h), (c_n, c)):
            np.testing.assert_allclose(got.detach().float().numpy(), ref, rtol=tol, atol=tol)
        (out.sum() + 2 * c_n.sum()).backward()
        ref = [clgrad.tensor(a).requires_grad_() for a in (proj, w, h0, c0)]
        o64, _, c64 = lstm_layer(*ref, reverse=reverse)
        (o64.sum() + 2 * c64.sum()).backward()
        for a, b in zip(ins, ref):
            np.testing.assert_allclose(a.grad.float().numpy(), b.grad.numpy(), rtol=tol * 4,
                                       atol=tol * 4)



@contextmanager
def packed_gemm(device, vw):
    """The packed GEMM configuration the fused recurrent steps need (5 rows by 2 vectors of vw,
    8 where the device takes no 16-wide ones) on device for the block; gives the width."""
    from clgrad.kernels import gemm as gemm_kernels
    from clgrad.runtime.device import wide_vectors_ok
    if vw == 16 and not wide_vectors_ok(device):
        vw = 8
    prev = gemm_kernels.set_config(device, {"kind": "packed", "MR": 5, "NV": 2, "VW": vw,
                                            "LX": 1, "LY": 2})
    try:
        yield vw
    finally:
        gemm_kernels.set_config(device, prev)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("vw", [4, 16])
def test_recurrent_steps_with_the_cell_in_the_gemm(device, vw, kind, monkeypatch):
    """The one-launch LSTM and GRU steps (clgrad.kernels.rnn.LSTMSteps / GRUSteps: the cell in
    the GEMM's epilogue), on a packed GEMM configuration forced on every device: 3 rows (a
    partial block of rows), H = 12 or 24 float64 units (the backward's tile only partly
    inside), both directions, GRU with and without b_hh: forward against numpy steps, gradients
    against central differences (gradcheck: whole Jacobians at H = 12, fast mode's random
    projections at 24, whose whole Jacobians took 20-25 s a test), one fused launch per step
    each way; float32 (H a
    multiple of its vector) against float64."""
    from clgrad.kernels.rnn import GRUSteps, LSTMSteps
    from clgrad.ops.rnn_cell import gru_layer, lstm_layer
    from clgrad.runtime import kernels
    from clgrad.runtime.device import wide_vectors_ok
    from clgrad.ops import rnn_cell
    monkeypatch.setattr(rnn_cell, "ONE_LAUNCH", False)    # a launch a step (below: at once)
    with packed_gemm(device, vw) as vw:
        rng = np.random.default_rng(7)
        T, B, H = 3, 3, 12 if vw == 4 else vw // 2 * 3
        G = (4 if kind == "LSTM" else 3) * H
        arrs = [rng.standard_normal((T, B, G)), rng.standard_normal((G, H)) / 3,
                rng.standard_normal((B, H))]
        arrs.append(rng.standard_normal((B, H)) if kind == "LSTM" else rng.standard_normal(G))
        args = [clgrad.tensor(a).requires_grad_() for a in arrs]
        steps = (LSTMSteps if kind == "LSTM" else GRUSteps).for_layer(args[0], H)
        assert steps is not None

        def layer(proj, w, h0, last, reverse, bias=True):
            if kind == "LSTM":
                return lstm_layer(proj, w, h0, last, reverse=reverse)
            return gru_layer(proj, w, last if bias else None, h0, reverse=reverse)

        def numpy_layer(reverse, bias=True):
            proj, w, h0, last = arrs
            state, want = (h0, last) if kind == "LSTM" else h0, [None] * T
            for t in (range(T - 1, -1, -1) if reverse else range(T)):
                if kind == "LSTM":
                    want[t], state = _np_step("LSTM", np.zeros((B, 1)), state, np.zeros((G, 1)),
                                              w, proj[t], None, None)
                else:
                    want[t], state = _np_step("GRU", np.zeros((B, 1)), state, np.zeros((G, 1)),
                                              w, proj[t], last if bias else None, None)
            return np.stack(want)

        for reverse, bias in ((False, True), (True, True), (False, False)):
            if kind == "LSTM" and not bias:
                continue
            names = []
            hook = lambda dev, k, *a: names.append(k.function_name)   # noqa: E731
            kernels.launch_hooks.append(hook)
            try:
                out = layer(*args, reverse, bias)
                (out[0].sum() + (out[-1] * out[-1]).sum()).backward()
            finally:
                kernels.launch_hooks.remove(hook)
            np.testing.assert_allclose(out[0].detach().numpy(), numpy_layer(reverse, bias),
                                       rtol=1e-12, atol=1e-12)
            name = kind.lower() + "_step_"
            assert names.count(name + "fwd") == T and names.count(name + "bwd") == T - 1
            assert not any(n.startswith(kind.lower() + "_fwd") for n in names)
            for k in (0, -1):     # the wide tile's 24 units: torch's fast mode (vᵀJu)
                assert gradcheck(lambda *a: layer(*a, reverse, bias)[k], args,
                                 fast_mode=vw != 4)
        # float32 through the same kernels (H a multiple of its vector), against float64
        H = 3 * (vw if vw != 16 or wide_vectors_ok(device) else 8)
        G = (4 if kind == "LSTM" else 3) * H
        shapes = ((T, B, G), (G, H), (B, H), (B, H) if kind == "LSTM" else (G,))
        base = [rng.standard_normal(sh) / (3 if k == 1 else 1) for k, sh in enumerate(shapes)]
        assert (LSTMSteps if kind == "LSTM" else GRUSteps).for_layer(
            clgrad.zeros(1, dtype=clgrad.float32), H) is not None
        results = []
        for dt in (clgrad.float32, clgrad.float64):
            ins = [clgrad.tensor(a, dtype=dt).requires_grad_() for a in base]
            out = layer(*ins, False)
            (out[0].sum() + (out[-1] * out[-1]).sum()).backward()
            results.append([out[0].detach().numpy()] + [a.grad.numpy() for a in ins])
        for got, ref in zip(*results):
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)



@pytest.mark.parametrize("vw", [4, 16])
def test_lstm_steps_in_one_launch(device, vw, monkeypatch):
    """A range of an LSTM layer's steps as one launch of one work-group (LSTMSteps.forward_steps
    / backward_steps; forced here, on a packed GEMM configuration, on every device): 11 steps of
    5 rows (blocks of 2, the last partial) by 12 float64 units (24 with 16-wide vectors: a tile
    partly inside), both directions in time, whole and in ranges of 4, 4 and 3 as the wavefront
    runs them, outputs and every gradient bit for bit those of a launch a step and against
    numpy's steps, one launch a range each way; gradients against central differences on 4
    steps, both directions; float32 against float64; nn.LSTM's wavefront of 2 layers (19 steps,
    chunks of 8) bit for bit either way. Unforced: PoCL's CPU devices alone, steps of 2^21
    multiply-adds or fewer."""
    from clgrad.kernels.rnn import LSTMSteps
    from clgrad.ops import lstm_stack, rnn_cell
    from clgrad.ops.rnn_cell import LSTMGrads, LSTMRun, _one_launch, lstm_layer
    from clgrad.runtime import kernels
    monkeypatch.setattr(rnn_cell, "ONE_LAUNCH", None)
    fused = LSTMSteps.for_layer(clgrad.zeros(1), 128)
    if fused is not None:
        one_core = device.small_kernels_use_one_core
        assert _one_launch(fused, 16, 128) == one_core          # 2^20 multiply-adds
        assert _one_launch(fused, 32, 128) == one_core          # 2^21
        assert not _one_launch(fused, 33, 128)
    assert not _one_launch(None, 16, 128)
    if not device.has_fp64:
        pytest.skip("the device has no float64")
    with packed_gemm(device, vw) as vw:
        rng = np.random.default_rng(11)
        T, B, H = 11, 5, 12 if vw == 4 else vw // 2 * 3
        G = 4 * H
        arrs = [rng.standard_normal((T, B, G)), rng.standard_normal((G, H)) / 3,
                rng.standard_normal((B, H)), rng.standard_normal((B, H))]
        r_out, r_h, r_c = (rng.standard_normal((T, B, H)), rng.standard_normal((B, H)),
                           rng.standard_normal((B, H)))
        want = {}
        for reverse in (False, True):
            state, want[reverse] = (arrs[2], arrs[3]), [None] * T
            for t in (range(T - 1, -1, -1) if reverse else range(T)):
                want[reverse][t], state = _np_step("LSTM", np.zeros((B, 1)), state,
                                                   np.zeros((G, 1)), arrs[1], arrs[0][t], None,
                                                   None)

        def run(one_launch, ranges, reverse):
            """out, h_n, c_n and the gradients of proj, w_hh, h0, c0 (the steps in `ranges`,
            each run backwards in time where reverse); and the names of the kernels
            launched."""
            monkeypatch.setattr(rnn_cell, "ONE_LAUNCH", one_launch)
            proj, w, h0, c0 = (clgrad.tensor(a) for a in arrs)
            names = []
            hook = lambda dev, k, *a: names.append(k.function_name)   # noqa: E731
            kernels.launch_hooks.append(hook)
            try:
                fwd = LSTMRun(w, h0, c0, T, proj)
                for lo, hi in ranges:
                    fwd.steps(range(hi - 1, lo - 1, -1) if reverse else range(lo, hi), proj)
                h_n, c_n = fwd.finals()
                bwd = LSTMGrads(w, h0, c0, reverse, fwd.out, fwd.cs, fwd.act,
                                clgrad.tensor(r_h), clgrad.tensor(r_c))
                dout = clgrad.tensor(r_out)
                for lo, hi in reversed(ranges):
                    bwd.steps(hi - lo, dout[lo:hi].contiguous(), lo)
                dproj, dw, dh0, dc0 = bwd.finish(True)
            finally:
                kernels.launch_hooks.remove(hook)
            return [a.numpy() for a in (fwd.out, h_n, c_n, dproj, dw, dh0, dc0)], names

        for ranges, reverse in (([(0, T)], False), ([(0, 4), (4, 8), (8, 11)], False),
                                ([(0, T)], True), ([(7, 11), (3, 7), (0, 3)], True)):
            at_once, names = run(True, ranges, reverse)
            per_step, names1 = run(False, ranges, reverse)
            for a, b in zip(at_once, per_step):
                assert np.array_equal(a, b)
            np.testing.assert_allclose(at_once[0], np.stack(want[reverse]), rtol=1e-12,
                                       atol=1e-12)
            n = len(ranges)
            assert names.count("lstm_steps_fwd") == n and names.count("lstm_step_fwd") == 0
            assert names.count("lstm_steps_bwd") == n and names.count("lstm_step_bwd") == 0
            assert names1.count("lstm_step_fwd") == T and names1.count("lstm_step_bwd") == T - 1
        monkeypatch.setattr(rnn_cell, "ONE_LAUNCH", True)
        args = [clgrad.tensor(a[:4] if k == 0 else a).requires_grad_()
                for k, a in enumerate(arrs)]
        for k in (0, 1, 2):
            for reverse in (False, True):
                assert gradcheck(lambda *a: lstm_layer(*a, reverse=reverse)[k], args,
                                 fast_mode=vw != 4)
        # float32 through the same kernels (H a multiple of its vector), against float64
        H32 = 3 * vw
        base = [rng.standard_normal(sh) / (3 if k == 1 else 1) for k, sh in
                enumerate(((T, B, 4 * H32), (4 * H32, H32), (B, H32), (B, H32)))]
        results = []
        for dt in (clgrad.float32, clgrad.float64):
            ins = [clgrad.tensor(a, dtype=dt).requires_grad_() for a in base]
            out = lstm_layer(*ins)
            (out[0].sum() + (out[2] * out[2]).sum()).backward()
            results.append([out[0].detach().numpy()] + [a.grad.numpy() for a in ins])
        for got, ref in zip(*results):
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
        # nn.LSTM's wavefront, chunks of 8 steps
        monkeypatch.setattr(lstm_stack, "WAVEFRONT", True)
        clgrad.manual_seed(0)
        m = clgrad.nn.LSTM(3, H, num_layers=2).double()
        x = clgrad.tensor(rng.standard_normal((19, B, 3)))
        got = []
        for one_launch in (True, False):
            monkeypatch.setattr(rnn_cell, "ONE_LAUNCH", one_launch)
            xi = x.clone().requires_grad_()
            out, (h, c) = m(xi)
            (out.sum() + (h * h).sum() + c.sum()).backward()
            got.append([t.detach().numpy() for t in (out, h, c, xi.grad)] +
                       [p.grad.numpy() for p in m.parameters()])
            m.zero_grad()
        for a, b in zip(*got):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("vw", [4, 16])
def test_gru_steps_in_one_launch(device, vw, monkeypatch):
    """A GRU layer's steps as one launch each way (GRUSteps.forward_steps / backward_steps;
    forced here, on a packed GEMM configuration, on every device): 11 steps of 5 rows by 12
    float64 units (24 with 16-wide vectors), both directions in time, with and without b_hh:
    outputs and every gradient bit for bit those of a launch a step and against numpy's steps,
    one launch each way; gradients against central differences on 4 steps. Unforced: PoCL's
    CPU devices alone, steps of 2^21 multiply-adds (B x 3H x H) or fewer."""
    from clgrad.kernels.rnn import GRUSteps
    from clgrad.ops import rnn_cell
    from clgrad.ops.rnn_cell import _one_launch, gru_layer
    from clgrad.runtime import kernels
    monkeypatch.setattr(rnn_cell, "ONE_LAUNCH", None)
    fused = GRUSteps.for_layer(clgrad.zeros(1), 128)
    if fused is not None:
        one_core = device.small_kernels_use_one_core
        assert _one_launch(fused, 42, 128) == one_core          # 2.06 M multiply-adds
        assert not _one_launch(fused, 43, 128)                  # 2.11 M
    if not device.has_fp64:
        pytest.skip("the device has no float64")
    with packed_gemm(device, vw) as vw:
        rng = np.random.default_rng(12)
        T, B, H = 11, 5, 12 if vw == 4 else vw // 2 * 3
        G = 3 * H
        arrs = [rng.standard_normal((T, B, G)), rng.standard_normal((G, H)) / 3,
                rng.standard_normal(G), rng.standard_normal((B, H))]
        r_out, r_h = rng.standard_normal((T, B, H)), rng.standard_normal((B, H))
        for reverse in (False, True):
            for bias in (True, False):
                h, want = arrs[3], [None] * T
                for t in (range(T - 1, -1, -1) if reverse else range(T)):
                    want[t], h = _np_step("GRU", np.zeros((B, 1)), h, np.zeros((G, 1)),
                                          arrs[1], arrs[0][t], arrs[2] if bias else None, None)
                got = {}
                for at_once in (True, False):
                    monkeypatch.setattr(rnn_cell, "ONE_LAUNCH", at_once)
                    args = [clgrad.tensor(a).requires_grad_() for a in arrs]
                    names = []
                    hook = lambda dev, k, *a: names.append(k.function_name)   # noqa: E731
                    kernels.launch_hooks.append(hook)
                    try:
                        out, h_n = gru_layer(args[0], args[1], args[2] if bias else None,
                                             args[3], reverse=reverse)
                        ((out * clgrad.tensor(r_out)).sum() +
                         (h_n * clgrad.tensor(r_h)).sum()).backward()
                    finally:
                        kernels.launch_hooks.remove(hook)
                    got[at_once] = [out.detach().numpy(), h_n.detach().numpy()] + \
                        [a.grad.numpy() for a in (args if bias else args[:2] + args[3:])]
                    once = names.count("gru_steps_fwd"), names.count("gru_steps_bwd")
                    each = names.count("gru_step_fwd"), names.count("gru_step_bwd")
                    assert (once, each) == (((1, 1), (0, 0)) if at_once else ((0, 0), (T, T - 1)))
                for a, b in zip(got[True], got[False]):
                    assert np.array_equal(a, b)
                np.testing.assert_allclose(got[True][0], np.stack(want), rtol=1e-12, atol=1e-12)
        monkeypatch.setattr(rnn_cell, "ONE_LAUNCH", True)
        args = [clgrad.tensor(a[:4] if k == 0 else a).requires_grad_()
                for k, a in enumerate(arrs)]
        for k in (0, 1):
            for reverse in (False, True):
                assert gradcheck(lambda *a: gru_layer(*a, reverse=reverse)[k], args,
                                 fast_mode=vw != 4)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_steps_keep_their_rows_in_registers(device, kind):
    """_FusedSteps.rows on the tuned GEMM configurations: a step's accumulators, its gates'
    vectors of B and one of A stay within one vector of what the tuned GEMM holds (an LSTM step
    on the 6 x 2 configuration of PoCL's AVX2 code keeps 2 rows, not 3: 17 vectors spilled), and
    every configuration of the tuning database passes; the layer on the 6 x 2 configuration (5
    rows: blocks of 2 or 4, the last partial) against numpy's steps in float64, and its
    gradients against central differences."""
    import json
    import os
    from clgrad.kernels import gemm as gemm_kernels
    from clgrad.kernels.rnn import GRUSteps, LSTMSteps
    from clgrad.ops.rnn_cell import gru_layer, lstm_layer
    steps_cls = LSTMSteps if kind == "LSTM" else GRUSteps
    gates = steps_cls.GATES

    def packed(tree):
        if isinstance(tree, dict):
            if tree.get("kind") == "packed":
                yield tree
            for v in tree.values():
                yield from packed(v)
    db = os.path.join(os.path.dirname(clgrad.__file__), "runtime", "tuning_db.json")
    with open(db) as f:
        configs = list(packed(json.load(f))) + [{"MR": 6, "NV": 2}]
    for cfg in configs:
        rows = steps_cls.rows(cfg, gates)
        assert 1 <= rows <= max(1, cfg["MR"] * cfg["NV"] // gates)
        assert rows == 1 or rows * gates + gates + 1 <= cfg["MR"] * cfg["NV"] + cfg["NV"] + 2
    assert steps_cls.rows({"MR": 6, "NV": 2}, gates) == (2 if kind == "LSTM" else 4)
    if not device.has_fp64:
        pytest.skip("the device has no float64")
    prev = gemm_kernels.set_config(device, {"kind": "packed", "MR": 6, "NV": 2, "VW": 4,
                                            "LX": 1, "LY": 2})
    try:
        rng = np.random.default_rng(3)
        T, B, H = 3, 5, 4
        G = gates * H
        arrs = [rng.standard_normal((T, B, G)), rng.standard_normal((G, H)) / 3,
                rng.standard_normal((B, H)),
                rng.standard_normal((B, H)) if kind == "LSTM" else rng.standard_normal(G)]
        args = [clgrad.tensor(a).requires_grad_() for a in arrs]
        steps = steps_cls.for_layer(args[0], H)
        assert steps is not None and steps.mr == (2 if kind == "LSTM" else 4)

        def layer(proj, w, h0, last):
            if kind == "LSTM":
                return lstm_layer(proj, w, h0, last)
            return gru_layer(proj, w, last, h0)
        proj, w, h0, last = arrs
        state, want = (h0, last) if kind == "LSTM" else h0, []
        for t in range(T):
            out, state = _np_step(kind, np.zeros((B, 1)), state, np.zeros((G, 1)), w, proj[t],
                                  None if kind == "LSTM" else last, None)
            want.append(out)
        got = layer(*args)
        np.testing.assert_allclose(got[0].detach().numpy(), np.stack(want), rtol=1e-12,
                                   atol=1e-12)
        assert gradcheck(lambda *a: layer(*a)[0], args)
    finally:
        gemm_kernels.set_config(device, prev)

def test_cell_ops_check_their_arguments_as_torch(device):
    """torch's cell ops (checked in torch 2.13) ask input.size(1) and each hidden state's
    size(0) and size(1): a 1-d input or state is an IndexError there (nn's cell modules take a
    1-d input, unsqueezing it first), sizes that disagree a RuntimeError naming the state; and
    lstm_cell's c promotes with the gates (a bool or int64 c computes in float32, a float64 c
    gives float64 states)."""
    o = clgrad.ones
    cells = (("rnn_tanh_cell", 1), ("rnn_relu_cell", 1), ("gru_cell", 3), ("lstm_cell", 4))
    for name, g in cells:
        f = getattr(clgrad, name)
        for x, h in ((o(2), o(2)), (o(3), o(1)), (o(2), o(1, 2)), (o(1, 2), o(1))):
            with pytest.raises(IndexError, match="Dimension out of range"):
                f(x, (h, h) if g == 4 else h, o(g * h.shape[-1], x.shape[-1]),
                  o(g * h.shape[-1], h.shape[-1]))
        with pytest.raises(IndexError, match="Dimension specified as 1 but tensor has no "
                                             "dimensions"):
            f(clgrad.tensor(1.0), (o(1, 1), o(1, 1)) if g == 4 else o(1, 1), o(g, 1), o(g, 1))
        with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 3 "
                                               "expected 2"):
            f(o(1, 3), (o(1, 2), o(1, 2)) if g == 4 else o(1, 2), o(2 * g, 2), o(2 * g, 2))
        with pytest.raises(RuntimeError, match="Input batch size 1 doesn't match hidden0 batch "
                                               "size 2"):
            f(o(1, 2), (o(2), o(2)) if g == 4 else o(2), o(2 * g, 2), o(2 * g, 2))
    with pytest.raises(RuntimeError, match="hidden1 has inconsistent hidden_size: got 3, "
                                           "expected 2"):
        clgrad.lstm_cell(o(2, 2), (o(2, 2), o(2, 3)), o(8, 2), o(8, 2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        clgrad.lstm_cell(o(2, 2), (o(2, 2), o(2)), o(8, 2), o(8, 2))
    # nn's cells take an unbatched input
    for cls, g in ((nn.RNNCell, 1), (nn.LSTMCell, 4), (nn.GRUCell, 3)):
        out = cls(2, 3)(o(2))
        assert all(t.shape == (3,) for t in (out if g == 4 else (out,)))
    # lstm_cell's c of another dtype: promoted with the gates
    rng = np.random.default_rng(5)
    x, h = rng.standard_normal((2, 2)), rng.standard_normal((2, 2))
    wi, wh = rng.standard_normal((8, 2)) * 0.5, rng.standard_normal((8, 2)) * 0.5
    cb = np.array([[True, False], [False, True]])
    i, f_, gg, og = np.split(x @ wi.T + h @ wh.T, 4, 1)
    c2 = _sig(f_) * cb + _sig(i) * np.tanh(gg)
    h2 = _sig(og) * np.tanh(c2)
    T = clgrad.tensor
    f32 = [T(a, dtype=clgrad.float32) for a in (x, h, wi, wh)]
    for c in (T(cb), T(cb).long()):
        hn, cn = clgrad.lstm_cell(f32[0], (f32[1], c), f32[2], f32[3])
        assert hn.dtype is cn.dtype is clgrad.float32
        assert np.allclose(hn.numpy(), h2, atol=1e-5) and np.allclose(cn.numpy(), c2, atol=1e-5)
    if device.has_fp64:
        hn, cn = clgrad.lstm_cell(f32[0], (f32[1], T(cb).double()), f32[2], f32[3])
        assert hn.dtype is cn.dtype is clgrad.float64
        assert np.allclose(hn.numpy(), h2, atol=1e-5) and np.allclose(cn.numpy(), c2, atol=1e-5)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_float_cells_keep_their_accuracy_over_the_whole_range(device, mode):
    """The cells' exp and tanh in float are written out (rnn.mako's cell_math: PoCL calls the
    built-ins out of line): one step of each float32 layer whose gates' pre-activations are its
    input bias exactly (zero weights), spread over [-95, 95] and around 0 (where tanh and the
    sigmoid saturate, and where tanh's relative accuracy is hardest), against numpy's float64
    step. Three batch rows with their own states (c, and GRU's z * h, use them). H = 64: whole
    vectors on every code path (CPUs: the fused steps)."""
    cls = {"LSTM": nn.LSTM, "GRU": nn.GRU, "RNN_TANH": nn.RNN}[mode]
    H, gates = 64, {"LSTM": 4, "GRU": 3, "RNN_TANH": 1}[mode]
    m = cls(2, H)
    rng = np.random.default_rng(7)
    grid = np.concatenate([np.linspace(-95, 95, 41), np.geomspace(1e-6, 3, 20),
                           -np.geomspace(1e-6, 3, 20)])
    with clgrad.no_grad():
        for p in m.parameters():
            p.zero_()
        m.bias_ih_l0.copy_(clgrad.tensor(rng.choice(grid, gates * H).astype(np.float32)))
    x = rng.standard_normal((1, 3, 2)).astype(np.float32)              # [T=1, B=3, 2]
    h0 = (0.5 * rng.standard_normal((1, 3, H))).astype(np.float32)
    state = (clgrad.tensor(h0), clgrad.tensor(h0 * 2)) if mode == "LSTM" else clgrad.tensor(h0)
    with clgrad.no_grad():
        out, _ = m(clgrad.tensor(x), state)
    w = [m.weight_ih_l0, m.weight_hh_l0, m.bias_ih_l0, m.bias_hh_l0]
    w = [t.detach().numpy().astype(np.float64) for t in w] + [None]
    s64 = (h0[0].astype(np.float64), 2 * h0[0].astype(np.float64)) if mode == "LSTM" else \
        h0[0].astype(np.float64)
    want, _ = _np_step(mode, x[0].astype(np.float64), s64, *w)
    np.testing.assert_allclose(out.numpy()[0], want, rtol=2e-6, atol=1e-7)
