"""Sorting and selection against numpy: sort/argsort (stable, NaN last, any dim, every dtype),
topk, kthvalue, median, mode, unique, searchsorted/bucketize, multinomial; gradients by
gradcheck."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import clgrad
from clgrad.autograd import gradcheck, gradgradcheck
from helpers import all_dtypes, grad_dtype, grad_tols, make, random_array

LAYOUTS = ("contiguous", "transposed", "strided")


def _np_sort_order(a, axis, descending):
    """numpy's stable order with torch's rules: NaN above every number, ties in input order."""
    if a.dtype == bool:
        a = a.astype(np.int64)
    if descending:
        key = -a.astype(np.float64)
        if a.dtype.kind == "f":
            key = np.where(np.isnan(a), -np.inf, key)
        return np.argsort(key, axis=axis, kind="stable")
    return np.argsort(a, axis=axis, kind="stable")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_numpy_every_dtype(device, layout, descending):
    rng = np.random.default_rng(1)
    for dt in all_dtypes(device):
        a = random_array((4, 37), dt, rng)
        if dt.kind == "f":
            a[1, 3] = np.nan
            a[2, :5] = a[2, 5]                                  # ties
        x = make(a, dt, device, layout)
        ref = x.float().numpy() if dt in (clgrad.bfloat16, clgrad.float16) else \
            x.numpy()
        for dim in (0, 1, -1):
            v, i = x.sort(dim=dim, descending=descending)
            order = _np_sort_order(ref, dim, descending)
            np.testing.assert_array_equal(i.numpy(), order, err_msg=f"{dt} dim {dim}")
            got = v.float().numpy() if dt in (clgrad.bfloat16, clgrad.float16) else v.numpy()
            np.testing.assert_array_equal(got, np.take_along_axis(ref, order, dim))
            assert v.dtype is dt and i.dtype is clgrad.int64
            np.testing.assert_array_equal(x.argsort(dim, descending=descending).numpy(), order)


def test_sort_edge_shapes(device):
    x = clgrad.tensor(5.0, device=device)
    v, i = x.sort()
    assert v.item() == 5.0 and i.item() == 0 and i.shape == ()
    e = clgrad.zeros(0, 3, device=device)
    v, i = e.sort(0)
    assert v.shape == (0, 3) and i.shape == (0, 3)
    one = clgrad.tensor([[7]], device=device)
    assert one.sort(1).values.tolist() == [[7]]
    with pytest.raises(IndexError):
        clgrad.zeros(2, 3, device=device).sort(dim=2)
    # a row longer than any work-group, not a power of two
    a = np.random.default_rng(0).integers(-50, 50, 3001)
    np.testing.assert_array_equal(clgrad.tensor(a, device=device).sort().indices.numpy(),
                                  np.argsort(a, kind="stable"))
    assert clgrad.tensor([[3, 1], [2, 0]], device=device).msort().tolist() == [[2, 0], [3, 1]]


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 6), min_size=1, max_size=3), data=st.data())
def test_sort_shapes_hypothesis(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    a = np.random.default_rng(len(shape)).integers(-3, 4, shape)
    v, i = clgrad.tensor(a).sort(dim)
    order = np.argsort(a, axis=dim, kind="stable")
    np.testing.assert_array_equal(i.numpy(), order)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, order, dim))


def test_topk_kthvalue(device):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 11))
    x = clgrad.tensor(a, device=device)
    for largest in (True, False):
        v, i = x.topk(4, dim=1, largest=largest)
        order = np.argsort(-a if largest else a, axis=1, kind="stable")[:, :4]
        np.testing.assert_array_equal(i.numpy(), order)
        np.testing.assert_allclose(v.numpy(), np.take_along_axis(a, order, 1))
    v, i = x.topk(2, dim=0)
    np.testing.assert_allclose(v.numpy(), -np.sort(-a, axis=0)[:2])
    assert x.topk(0).values.shape == (3, 0)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        x.topk(12)
    v, i = x.kthvalue(3, dim=1)
    np.testing.assert_allclose(v.numpy(), np.sort(a, 1)[:, 2])
    np.testing.assert_array_equal(i.numpy(), np.argsort(a, 1, kind="stable")[:, 2])
    v, i = x.kthvalue(2, dim=0, keepdim=True)
    assert v.shape == (1, 11)
    with pytest.raises(RuntimeError, match="out of range"):
        x.kthvalue(0)


def test_median_and_nanmedian(device):
    a = np.array([[4.0, 1.0, 3.0, 2.0], [np.nan, 5.0, 1.0, 2.0], [np.nan] * 4])
    x = clgrad.tensor(a, device=device)
    assert clgrad.tensor([4.0, 1.0, 3.0, 2.0], device=device).median().item() == 2.0
    assert np.isnan(x.median().item())
    v, i = x.median(1)
    np.testing.assert_array_equal(v.numpy()[0], 2.0)
    assert np.isnan(v.numpy()[1]) and i.tolist()[1] == 0 and np.isnan(v.numpy()[2])
    v, i = x.nanmedian(1)
    np.testing.assert_array_equal(v.numpy()[:2], [2.0, 2.0])
    assert np.isnan(v.numpy()[2])
    assert i.tolist()[:2] == [3, 3]
    assert x.nanmedian().item() == 2.0
    ints = clgrad.tensor([[5, 1, 4], [2, 2, 9]], device=device)
    assert ints.median(1).values.tolist() == [4, 2]
    assert clgrad.tensor([7], device=device).median(0, keepdim=True).values.tolist() == [7]


def test_selection_edges_follow_torch(device):
    """0-d inputs, bool inputs, empty dims and k out of range: torch's shapes and exception
    classes (each checked against torch 2.13 on the CPU)."""
    s = clgrad.tensor(1.5, device=device, requires_grad=True)
    for k in (0, 1):                  # a 0-d input is its own top-k, even for k = 0
        v, i = clgrad.topk(s, k, dim=0)
        assert v.shape == () and i.shape == () and v.item() == 1.5 and i.item() == 0
    clgrad.topk(s, 0)[0].backward()
    assert s.grad.item() == 1.0
    v, i = clgrad.kthvalue(s.detach(), 1, dim=-1, keepdim=True)
    assert v.shape == () and i.shape == ()
    for f in (lambda: clgrad.topk(s, 2), lambda: clgrad.kthvalue(s, 2, 0),
              lambda: clgrad.kthvalue(s, 0)):
        with pytest.raises(RuntimeError, match="out of range"):
            f()
    with pytest.raises(IndexError, match="Dimension out of range"):
        clgrad.topk(s, 1, dim=1)
    b = clgrad.tensor([[True, False, True]], device=device)
    for k in (0, 1):
        with pytest.raises(RuntimeError, match="topk does not support bool"):
            clgrad.topk(b, k)
    with pytest.raises(RuntimeError, match="topk does not support bool"):
        clgrad.topk(clgrad.tensor(True, device=device), 1)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        clgrad.topk(b, 4)                                  # the range is checked first
    with pytest.raises(NotImplementedError, match="kthvalue.*Bool"):
        clgrad.kthvalue(b, 1)
    with pytest.raises(RuntimeError, match="out of range"):
        clgrad.kthvalue(b, 4)
    assert clgrad.kthvalue(clgrad.tensor(True, device=device), 1).values.item() is True
    for op in (clgrad.median, clgrad.nanmedian):
        with pytest.raises(NotImplementedError, match="median.*Bool"):
            op(b, 1)
        with pytest.raises(NotImplementedError, match="median.*Bool"):
            op(b)
        assert op(clgrad.zeros(0, dtype=clgrad.bool, device=device)).item() is True
        assert op(clgrad.zeros(0, dtype=clgrad.int64, device=device)).item() == \
            np.iinfo(np.int64).min
    e = clgrad.zeros(2, 0, device=device)
    for k in (0, 1):                  # an empty dim: IndexError before k is looked at
        with pytest.raises(IndexError, match="kthvalue.*non-zero size"):
            clgrad.kthvalue(e, k, 1)
    v, i = clgrad.kthvalue(clgrad.zeros(0, 3, device=device), 1, 1)
    assert v.shape == (0,) and i.shape == (0,)
    with pytest.raises(TypeError, match="must be int"):
        clgrad.kthvalue(clgrad.zeros(3, device=device), 1.0)


def test_mode(device):
    x = clgrad.tensor([[3, 1, 3, 1, 2], [2, 2, 0, 0, 0]], device=device)
    v, i = x.mode(1)
    assert v.tolist() == [1, 0]
    assert [x.tolist()[r][c] for r, c in enumerate(i.tolist())] == [1, 0]
    assert x.mode(0, keepdim=True).values.shape == (1, 5)


@pytest.mark.parametrize("op", ["sort", "topk", "kthvalue", "median", "msort", "mode"])
def test_gradients(device, op):
    dt = grad_dtype(device)
    rng = np.random.default_rng(3)
    a = rng.permutation(24).reshape(4, 6) / 7.0               # distinct: no ties at the kinks
    x = clgrad.tensor(a, dtype=dt, device=device, requires_grad=True)
    fns = {"sort": lambda t: t.sort(1, descending=True).values,
           "topk": lambda t: t.topk(3, dim=0).values,
           "kthvalue": lambda t: t.kthvalue(2, dim=1).values,
           "median": lambda t: t.median(1).values + t.median(),
           "msort": lambda t: t.msort(),
           "mode": lambda t: t.mode(1).values}
    tol = grad_tols(device)
    assert gradcheck(fns[op], (x,), **tol)
    assert gradgradcheck(fns[op], (x,), **tol)


def test_unique(device):
    a = np.array([[2, 1, 2], [3, 1, 7]])
    x = clgrad.tensor(a, device=device)
    u, inv, cnt = x.unique(return_inverse=True, return_counts=True)
    nu, ninv, ncnt = np.unique(a, return_inverse=True, return_counts=True)
    assert u.tolist() == nu.tolist() and cnt.tolist() == ncnt.tolist()
    assert inv.shape == (2, 3) and inv.numpy().ravel().tolist() == ninv.ravel().tolist()
    f = clgrad.tensor([0.5, -1.0, 0.5], device=device)
    assert clgrad.unique(f).tolist() == [-1.0, 0.5]
    assert clgrad.tensor([], device=device).unique().shape == (0,)
    uc, cinv, ccnt = clgrad.tensor([1, 1, 2, 2, 1], device=device).unique_consecutive(
        return_inverse=True, return_counts=True)
    assert uc.tolist() == [1, 2, 1] and cinv.tolist() == [0, 0, 1, 1, 2]
    assert ccnt.tolist() == [2, 2, 1]


@pytest.mark.parametrize("shape,dim", [((7, 3), 0), ((7, 3), 1), ((4, 5, 2), 1), ((4, 5, 2), -1),
                                       ((6, 2, 3), 0), ((9,), 0), ((5, 1), 0), ((3, 11), -2)])
def test_unique_dim_matches_numpy(device, shape, dim):
    """unique(dim=...) as numpy's unique(axis=...): slices sorted lexicographically, the
    inverse (one index per slice) and the counts, on every dtype (issue 22: it was refused)."""
    rng = np.random.default_rng(abs(hash((shape, dim))) % 1000)
    for dt in all_dtypes(device):
        a = rng.integers(0, 2, shape)                 # few values: many repeated slices
        n = shape[dim]
        a = np.take(a, rng.integers(0, n, n), axis=dim)      # and some repeated whole
        a = a.astype(bool) if dt is clgrad.bool else a
        x = clgrad.tensor(a, device=device).to(dt)
        u, inv, cnt = clgrad.unique(x, dim=dim, return_inverse=True, return_counts=True)
        nu, ninv, ncnt = np.unique(a, axis=dim, return_inverse=True, return_counts=True)
        assert u.dtype is dt and u.shape == nu.shape, (dt, u.shape, nu.shape)
        np.testing.assert_array_equal(np.array(u.tolist()).astype(a.dtype).reshape(nu.shape), nu,
                                      err_msg=str(dt))
        assert inv.dtype is clgrad.int64 and inv.tolist() == ninv.ravel().tolist(), dt
        assert cnt.tolist() == ncnt.tolist(), dt
        assert x.unique(sorted=False, dim=dim).tolist() == u.tolist()
        assert x.unique(dim=dim, return_counts=True)[1].tolist() == cnt.tolist()


def test_unique_dim_edges(device):
    x = clgrad.tensor([[1, 2], [0, 5], [1, 2], [0, 1]], device=device)
    u, inv, cnt = x.unique(dim=0, return_inverse=True, return_counts=True)
    assert u.tolist() == [[0, 1], [0, 5], [1, 2]] and inv.tolist() == [2, 1, 2, 0]
    assert cnt.tolist() == [1, 1, 2]
    assert x.unique(dim=1).tolist() == x.tolist()           # distinct columns, already sorted
    nan = float("nan")
    f = clgrad.tensor([[nan, 1.0], [nan, 1.0], [0.0, -0.0], [-0.0, 0.0]], device=device)
    assert str(f.unique(dim=0).tolist()) == "[[0.0, -0.0], [nan, 1.0], [nan, 1.0]]"  # NaN != NaN
    uc, cinv, ccnt = clgrad.tensor([[1, 2], [1, 2], [0, 1], [1, 2]], device=device) \
        .unique_consecutive(dim=0, return_inverse=True, return_counts=True)
    assert uc.tolist() == [[1, 2], [0, 1], [1, 2]] and cinv.tolist() == [0, 0, 1, 2]
    assert ccnt.tolist() == [2, 1, 1]
    e, einv, ecnt = clgrad.zeros(2, 0, 3, device=device).unique(
        dim=1, return_inverse=True, return_counts=True)
    assert e.shape == (2, 0, 3) and einv.shape == ecnt.shape == (0,)
    with pytest.raises(RuntimeError, match="aren't selected"):
        clgrad.zeros(0, 3, device=device).unique(dim=1)
    with pytest.raises(RuntimeError, match="more than one"):
        clgrad.zeros(0, 0, device=device).unique(dim=1)
    with pytest.raises(IndexError, match="no dimensions"):
        clgrad.tensor(3.0, device=device).unique(dim=0)
    with pytest.raises(IndexError, match="out of range"):
        x.unique(dim=2)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize(device, right):
    rng = np.random.default_rng(4)
    seq = np.sort(rng.integers(0, 20, (3, 9)), axis=1).astype(np.float32)
    vals = rng.integers(-2, 22, (3, 5)).astype(np.float32)
    side = "right" if right else "left"
    got = clgrad.searchsorted(clgrad.tensor(seq, device=device), clgrad.tensor(vals, device=device),
                              right=right)
    ref = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq, vals)])
    np.testing.assert_array_equal(got.numpy(), ref)
    one = clgrad.searchsorted(clgrad.tensor(seq[0], device=device),
                              clgrad.tensor(vals, device=device), side=side, out_int32=True)
    np.testing.assert_array_equal(one.numpy(), np.searchsorted(seq[0], vals, side=side))
    assert one.dtype is clgrad.int32
    b = clgrad.bucketize(clgrad.tensor(vals, device=device), clgrad.tensor(seq[0], device=device),
                         right=right)
    np.testing.assert_array_equal(b.numpy(), np.searchsorted(seq[0], vals, side=side))
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension"):
        clgrad.searchsorted(clgrad.zeros(2, 3, device=device), clgrad.zeros(3, 3, device=device))
    with pytest.raises(RuntimeError, match="side can only be"):
        clgrad.searchsorted(clgrad.zeros(3, device=device), clgrad.zeros(1, device=device),
                            side="middle")


def test_multinomial(device):
    clgrad.manual_seed(0)
    p = clgrad.tensor([0.1, 0.0, 0.3, 0.6], device=device)
    draws = clgrad.multinomial(p, 4000, replacement=True).numpy()
    freq = np.bincount(draws, minlength=4) / 4000
    assert freq[1] == 0 and np.abs(freq - [0.1, 0.0, 0.3, 0.6]).max() < 0.04
    rows = clgrad.tensor([[1.0, 1.0, 1.0, 0.0], [0.0, 5.0, 1.0, 1.0]], device=device)
    for _ in range(20):
        s = clgrad.multinomial(rows, 3).numpy()
        assert s.shape == (2, 3)
        assert sorted(s[0]) == [0, 1, 2] and sorted(s[1]) == [1, 2, 3]   # no repeats, no zeros
    first = np.array([clgrad.multinomial(rows[1], 1).item() for _ in range(300)])
    assert 0.6 < np.mean(first == 1) < 0.85                      # weight 5 of 7
    with pytest.raises(RuntimeError, match="without replacement"):
        clgrad.multinomial(p, 5)
    with pytest.raises(RuntimeError, match="not enough non-negative category"):
        clgrad.multinomial(p, 4)
    with pytest.raises(RuntimeError, match="element < 0"):
        clgrad.multinomial(clgrad.tensor([0.5, -0.1], device=device), 1)
    with pytest.raises(RuntimeError, match="sum of probabilities <= 0"):
        clgrad.multinomial(clgrad.zeros(3, device=device), 1)
    with pytest.raises(RuntimeError, match="1 or 2 dim"):
        clgrad.multinomial(clgrad.ones(2, 2, 2, device=device), 1)
    g = clgrad.Generator().manual_seed(5)
    a = clgrad.multinomial(p, 10, replacement=True, generator=g).tolist()
    g.manual_seed(5)
    assert clgrad.multinomial(p, 10, replacement=True, generator=g).tolist() == a
