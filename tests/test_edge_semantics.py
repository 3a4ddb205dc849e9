"""Edge inputs where clgrad used to give silent wrong values or the wrong error (issue 13): one test
per group, against numpy and torch's documented behaviour."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F

INTERNAL = "more than one element of the written-to tensor refers to a single memory location"
PARTIAL = "some elements of the input tensor and the written-to tensor refer to a single memory"


def test_silent_wrong_values(device):
    # a nonzero fill of a bool tensor is True, also when the mask comes from a comparison
    b = clgrad.tensor([True, False, False], device=device)
    m = clgrad.tensor([True, True, False], device=device)
    assert b.masked_fill(m, 0.32).tolist() == [True, True, False]
    x = clgrad.tensor([1.0, -1.0, 2.0], device=device)
    assert (x > 0).masked_fill(x < 0, 0.5).tolist() == [True, True, True]
    assert b.masked_fill(m, 0).tolist() == [False, False, False]
    # layer_norm / group_norm of a constant row is exactly 0 (the float mean alone is off by an ulp)
    rng = np.random.default_rng(0)
    for n in (3, 5, 7, 100):
        v = np.repeat(rng.standard_normal((8, 1)).astype(np.float32), n, 1)
        assert np.abs(F.layer_norm(clgrad.tensor(v, device=device), (n,)).numpy()).max() == 0
    v = np.repeat(rng.standard_normal((2, 1)).astype(np.float32), 6, 1)
    assert np.abs(F.group_norm(clgrad.tensor(v, device=device), 2).numpy()).max() == 0
    # ...and still normalises everything else
    a = rng.standard_normal((4, 6)).astype(np.float32) * 3 + 5
    ref = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(F.layer_norm(clgrad.tensor(a, device=device), (6,)).numpy(), ref,
                               rtol=1e-4, atol=1e-4)
    # so are std / var of a constant row (fuzz: std then logical_not disagreed)
    v = np.repeat(rng.standard_normal((6, 1)).astype(np.float32), 3, 1)
    t = clgrad.tensor(v, device=device)
    assert t.std(1).tolist() == [0.0] * 6 and t.var(1).tolist() == [0.0] * 6
    assert t.t().std(0).tolist() == [0.0] * 6
    np.testing.assert_allclose(clgrad.tensor(a, device=device).var(1).numpy(), a.var(1, ddof=1),
                               rtol=1e-5)
    # chunk of an empty dim gives `chunks` empty pieces
    pieces = clgrad.zeros(0, 1, device=device).chunk(2, -2)
    assert [tuple(p.shape) for p in pieces] == [(0, 1), (0, 1)]
    assert len(clgrad.zeros(0, device=device).chunk(3)) == 3
    assert [p.numel() for p in clgrad.arange(5, device=device).chunk(3)] == [2, 2, 1]
    # gelu's negative tail in float32 (1 + erf cancelled: 3e-4 off at -4)
    import math
    xs = np.array([-9.0, -6.0, -4.0, -2.0, 0.5, 3.0], dtype=np.float32)
    ref = [0.5 * v * math.erfc(-v / math.sqrt(2)) for v in xs.tolist()]
    np.testing.assert_allclose(F.gelu(clgrad.tensor(xs, device=device)).numpy(), ref, rtol=2e-5)
    # slice assignment drops the value's leading 1s, as torch (fuzz: x[4:4] = ones(1, 1) raised)
    z = clgrad.zeros(4, device=device)
    z[0] = clgrad.ones(1, device=device)
    z[1:3] = clgrad.full((1, 1, 2), 2.0, device=device)
    z[4:4] = clgrad.ones(1, 1, device=device)
    assert z.tolist() == [1.0, 2.0, 2.0, 0.0]
    with pytest.raises(RuntimeError):
        z[0:2] = clgrad.ones(1, 3, device=device)


def test_gradients_at_singular_points(device):
    dt = clgrad.float64
    # std of a constant row: zero gradient (torch), not NaN; var was already fine
    x = clgrad.full((2, 3), 1.5, dtype=dt, device=device, requires_grad=True)
    x.std(1).sum().backward()
    assert x.grad.tolist() == [[0.0] * 3] * 2
    x = clgrad.tensor([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]], dtype=dt, device=device,
                      requires_grad=True)
    s, _ = clgrad.std_mean(x, 1)
    s.sum().backward()
    a = np.array([1.0, 2.0, 4.0])
    expected = (a - a.mean()) / (2 * np.sqrt(a.var(ddof=1))) * (2 / 2)
    np.testing.assert_allclose(x.grad.numpy(), [[0.0] * 3, expected.tolist()], rtol=1e-12)
    # forward mode too
    import clgrad.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        d = fwAD.make_dual(clgrad.ones(3, dtype=dt, device=device),
                           clgrad.tensor([1.0, 2.0, 3.0], dtype=dt, device=device))
        assert fwAD.unpack_dual(d.std()).tangent.item() == 0.0
    # a single element: NaN, as torch (the std itself is NaN)
    y = clgrad.ones(1, dtype=dt, device=device, requires_grad=True)
    y.std().backward()
    assert np.isnan(y.grad.item())
    # atan2 at the origin: zero gradient, elsewhere the usual one
    u = clgrad.tensor([0.0, 1.0], dtype=dt, device=device, requires_grad=True)
    v = clgrad.tensor([0.0, 2.0], dtype=dt, device=device, requires_grad=True)
    clgrad.atan2(u, v).sum().backward()
    np.testing.assert_allclose(u.grad.numpy(), [0.0, 2 / 5])
    np.testing.assert_allclose(v.grad.numpy(), [0.0, -1 / 5])
    assert clgrad.autograd.gradcheck(lambda p, q: clgrad.atan2(p, q),
                                     (clgrad.tensor([0.3, -1.0], dtype=dt, device=device,
                                                    requires_grad=True),
                                      clgrad.tensor([0.7, 0.5], dtype=dt, device=device,
                                                    requires_grad=True)))


def test_inplace_writes_into_overlapping_memory(device):
    def expanded():
        return clgrad.zeros(1, 3, device=device).expand(4, 3)
    # internal overlap: an expanded tensor cannot be written element by element
    for write in (lambda t: t.add_(1), lambda t: t.floor_(), lambda t: t.mul_(2),
                  lambda t: t.clamp_(0, 1), lambda t: t.exp_(), lambda t: t.copy_(
                      clgrad.ones(4, 3, device=device)), lambda t: F.relu_(t),
                  lambda t: clgrad.add(clgrad.ones(4, 3, device=device), 1, out=t)):
        with pytest.raises(RuntimeError, match=INTERNAL):
            write(expanded())
    with pytest.raises(RuntimeError, match=INTERNAL):
        clgrad.zeros((), device=device).expand(3).mul_(2)
    idx = clgrad.tensor([0], device=device)
    col = clgrad.ones(4, 1, device=device)
    for write in (lambda t: t.index_add_(1, idx, col), lambda t: t.index_copy_(1, idx, col),
                  lambda t: t.scatter_(1, clgrad.zeros(4, 1, dtype=clgrad.int64, device=device),
                                       1.0),
                  lambda t: t.masked_scatter_(clgrad.ones(4, 3, dtype=clgrad.bool, device=device),
                                              clgrad.ones(12, device=device)),
                  lambda t: t.uniform_(), lambda t: t.normal_(), lambda t: t.bernoulli_()):
        with pytest.raises(RuntimeError, match=INTERNAL):
            write(expanded())
    assert expanded().index_fill_(1, idx, 1).tolist() == [[1.0, 0.0, 0.0]] * 4
    # other self-overlap (torch: too hard to tell, order-dependent result): raises too
    with pytest.raises(RuntimeError, match=INTERNAL):
        clgrad.zeros(4, device=device).as_strided((2, 2), (1, 1)).add_(1)
    with pytest.raises(RuntimeError, match=INTERNAL):
        clgrad.zeros(6, device=device).as_strided((4, 3), (1, 1)).mul_(2)     # sliding windows
    # ...but strided layouts that do not overlap write as usual
    base = clgrad.zeros(12, device=device)
    base.as_strided((2, 3), (1, 4)).add_(1)              # offsets 0, 4, 8, 1, 5, 9
    base.as_strided((2, 3), (3, 2), 2).add_(2)           # 2, 4, 6, 5, 7, 9: ranges interleave
    assert base.tolist() == [1, 1, 2, 0, 3, 3, 2, 2, 1, 3, 0, 0]
    # writes torch lets through: fills, size-1 expansions, masked_fill_ (deprecated in torch)
    assert expanded().fill_(2).tolist() == [[2.0] * 3] * 4
    assert clgrad.zeros(1, device=device).expand(1).add_(2).tolist() == [2.0]
    assert expanded().masked_fill_(clgrad.ones(4, 3, dtype=clgrad.bool, device=device),
                                   1).tolist() == [[1.0] * 3] * 4
    # partial overlap between the written tensor and an input
    a = clgrad.arange(6.0, device=device)
    for write in (lambda: a[1:4].add_(a[0:3]), lambda: a[1:4].copy_(a[0:3]),
                  lambda: a.__setitem__(slice(1, 4), a[0:3]),
                  lambda: clgrad.add(a[0:3], 1, out=a[1:4]),
                  lambda: a.view(2, 3).add_(a.view(3, 2).t())):
        with pytest.raises(RuntimeError, match=PARTIAL):
            write()
    sq = clgrad.arange(4.0, device=device).reshape(2, 2)
    with pytest.raises(RuntimeError, match=PARTIAL):
        sq.add_(sq.t())
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]      # nothing was written
    # full overlap is fine, and so is disjoint memory of one storage
    assert a.add_(a).tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    a[3:].add_(a[:3])
    assert a.tolist() == [0.0, 2.0, 4.0, 6.0, 10.0, 14.0]
    # overlap that torch cannot tell (strided, not dense) goes through a temporary
    y = clgrad.arange(5.0, device=device)
    y[1::2].add_(y[0:4:2])
    assert y.tolist() == [0.0, 1.0, 2.0, 5.0, 4.0]


def test_missing_errors(device):
    b = clgrad.tensor([True, False], device=device)
    x = clgrad.ones(2, device=device)
    i = clgrad.tensor([1, -2], device=device)
    for f in (lambda: b - x, lambda: x - b, lambda: i - b, lambda: b.sub(1), lambda: x - True,
              lambda: True - x, lambda: clgrad.rsub(b, x), lambda: x.sub_(b)):
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool"):
            f()
    with pytest.raises(RuntimeError, match="with two bool tensors"):
        b - b
    for t in (i, b):
        for f in (F.gelu, F.silu, F.softplus, F.leaky_relu, F.elu, F.logsigmoid,
                  lambda u: F.gelu(u, approximate="tanh")):
            with pytest.raises(NotImplementedError):
                f(t)
    for f in (clgrad.round, clgrad.trunc, clgrad.abs, clgrad.floor, clgrad.ceil, clgrad.frac):
        with pytest.raises(NotImplementedError, match="'Bool'"):
            f(b)
    with pytest.raises(NotImplementedError, match="'Long'"):
        clgrad.frac(i)
    assert clgrad.round(i).tolist() == [1, -2] and clgrad.abs(i).tolist() == [1, 2]
    assert clgrad.sign(b).tolist() == [True, False]
    with pytest.raises(TypeError):
        clgrad.zeros(2, 3, device=device).permute()
    assert clgrad.zeros(2, 3, device=device).permute(1, 0).shape == (3, 2)


def test_error_kinds_and_empty_reductions(device):
    e = clgrad.zeros(2, 0, 3, device=device)
    # only a kept dim is empty: an empty result
    for f in (clgrad.amax, clgrad.amin):
        assert tuple(f(e, 2).shape) == (2, 0)
        assert tuple(f(e, (0, 2), keepdim=True).shape) == (1, 0, 1)
        with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
            f(e, 1)
        with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
            f(e)
    assert tuple(e.norm(dim=2).shape) == (2, 0)
    assert e.norm(dim=1).tolist() == [[0.0] * 3] * 2
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        e.max()
    for f in (clgrad.argmax, clgrad.argmin):
        with pytest.raises(IndexError, match="Expected reduction dim to be specified"):
            f(clgrad.zeros(0, device=device))
        with pytest.raises(IndexError):
            f(e, 1)
        assert tuple(f(e, 2).shape) == (2, 0)
    with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value") as info:
        clgrad.tensor(1.0, device=device).index_select(0, clgrad.tensor([0, 0], device=device))
    assert type(info.value) is RuntimeError
    with pytest.raises(RuntimeError, match="self indexing axis dim should be positive"):
        clgrad.zeros(0, 2, device=device).index_select(0, clgrad.tensor([0], device=device))
    with pytest.raises(IndexError):
        clgrad.zeros(0, device=device).index_select(0, clgrad.tensor([0], device=device))
    # square of a bool tensor computes, as pow(x, 2), in int64
    sq = clgrad.square(clgrad.tensor([True, False], device=device))
    assert sq.dtype == clgrad.int64 and sq.tolist() == [1, 0]
