"""Indexing, gathers and scatters: x[...] and x[...] = v against numpy (with torch's rules where
they differ from numpy's), index_put_, index_select, gather, scatter, scatter_add, index_add,
index_copy, index_fill, masked_select, masked_scatter, take, take_along_dim and nonzero on every
dtype, 0-d, empty and non-contiguous inputs and index tensors; random index combinations with
hypothesis; gradients with gradcheck and gradgradcheck; errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import clgrad
from helpers import (LAYOUTS, all_dtypes, assert_close, grad_dtype, grad_tols, make, random_array,
                     rounded, to_np)


# ---- the reference: numpy, after torch's first step ----------------------------------------------
def _is_adv(it):
    return isinstance(it, (np.ndarray, list)) and not isinstance(it, bool)


def ref_index(a, items):
    """a[items] as torch computes it: ints (and the rest of the basic items) apply first, as a
    view, then the advanced items by numpy's rule (numpy alone would treat an int between index
    arrays as one of them)."""
    first, second = [], []
    items = [it.item() if isinstance(it, np.ndarray) and it.ndim == 0 else it for it in items]
    for it in items:
        if _is_adv(it):
            arr = np.asarray(it)
            k = arr.ndim if arr.dtype == bool else 1
            first += [slice(None)] * k
            second.append(arr)
        else:
            first.append(it)
            if it is None or isinstance(it, slice):
                second.append(slice(None))
            elif it is Ellipsis:
                second.append(Ellipsis)
            elif isinstance(it, bool):
                second.append(slice(None))
    if Ellipsis not in first:
        first.append(Ellipsis)             # a view even when every dim is selected away
    view = a[tuple(first)]
    if any(s is Ellipsis for s in second):
        # torch expands Ellipsis before its adjacency rule: one that covers no dim does not
        # separate two index arrays (in numpy it does)
        used = sum(s.ndim if isinstance(s, np.ndarray) and s.dtype == bool else 1
                   for s in second if s is not Ellipsis)
        k = next(i for i, s in enumerate(second) if s is Ellipsis)
        second[k:k + 1] = [slice(None)] * (view.ndim - used)
    return view, tuple(second)


def ref_get(a, items):
    view, second = ref_index(a, items)
    return view[second]


def to_clgrad(items, device):
    return tuple(clgrad.tensor(np.asarray(it), device=device) if _is_adv(it) and np.ndim(it)
                 else it for it in items)


def _index_cases(shape):
    """(description, items) over a tensor of `shape` (3, 4, 5)."""
    rng = np.random.default_rng(0)
    mask3 = rng.random(shape) < 0.4
    return [
        ("one index, duplicates, negatives", [np.array([2, 0, -1, 2])]),
        ("2-d index on dim 1", [slice(None), np.array([[0, 3], [-4, 1]])]),
        ("adjacent pair", [slice(None), np.array([0, 3, 1]), np.array([4, 0, 2])]),
        ("broadcast pair", [np.array([[0], [2]]), np.array([1, 3, 0])]),
        ("non-adjacent pair goes first", [np.array([1, 0]), slice(1, 3), np.array([4, 2])]),
        ("int then index", [1, slice(None), np.array([0, 4, 4])]),
        ("int between indices", [np.array([0, 2]), 1, np.array([3, 4])]),
        ("slices with steps", [slice(0, 3, 2), np.array([3, 1]), slice(None, None, 2)]),
        ("None and Ellipsis", [None, np.array([2, 1]), Ellipsis, None]),
        ("full mask", [mask3]),
        ("mask on the last dim", [Ellipsis, np.array([True, False, True, True, False])]),
        ("mask with an index", [np.array([2, 0]), np.array([True, False, False, True])]),
        ("2-d mask after a slice", [slice(1, None), mask3[0]]),
        ("empty index", [np.array([], dtype=np.int64)]),
    ]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_getitem_matches_numpy_every_dtype(device, layout):
    shape = (3, 4, 5)
    rng = np.random.default_rng(1)
    for dt in all_dtypes(device):
        a = random_array(shape, dt, rng)
        x = make(a, dt, device, layout)
        host = rounded(a, dt)
        for name, items in _index_cases(shape):
            out = x[to_clgrad(items, device)]
            assert out.dtype is dt
            assert_close(out, ref_get(host, items), dt), (dt, name)


def test_index_tensor_forms(device):
    x = clgrad.arange(24, device=device).view(4, 6)
    a = np.arange(24).reshape(4, 6)
    idx = clgrad.tensor([[3, 0, 1], [2, 2, 0]], device=device)
    # non-contiguous index tensors: transposed and strided views
    assert_close(x[idx.t()], a[np.array([[3, 0, 1], [2, 2, 0]]).T])
    assert_close(x[:, idx[:, ::2]], a[:, np.array([[3, 1], [2, 0]])])
    # int32 indices, byte masks, lists, numpy arrays, nested lists as tuples, bool lists
    assert_close(x[idx.int()], a[np.array([[3, 0, 1], [2, 2, 0]])])
    assert_close(x[clgrad.tensor([1, 0, 1, 0], dtype=clgrad.uint8, device=device)], a[[0, 2]])
    assert_close(x[[0, 3]], a[[0, 3]])
    assert_close(x[np.array([1, -1])], a[[1, -1]])
    assert_close(x[[[0, 3], [1, 5]]], a[[0, 3], [1, 5]])       # a list of lists is a tuple
    assert_close(x[[0, slice(1, 3)]], a[0, 1:3])
    assert_close(x[[True, False, True, False]], a[[0, 2]])
    assert_close(x[(0, 1)], a[0, 1])
    # a 0-d integer tensor indexes like an int (a view, SelectBackward0), as in torch
    assert_close(x[clgrad.tensor(2, device=device)], a[2])
    y = clgrad.zeros(6, 3, 4, 5, device=device)
    assert y[:, [0, 1], :, clgrad.tensor(0, device=device)].shape == (6, 2, 4)
    assert y[:, [0, 1], :, 0].shape == (6, 2, 4)             # numpy would give (2, 6, 4)
    assert y[[0, 1], :, [0, 1]].shape == (2, 3, 5)            # non-adjacent: index dims first
    g = clgrad.zeros(3, 2, requires_grad=True, device=device)
    assert g[clgrad.tensor(1, device=device)].grad_fn.name() == "SelectBackward0"
    # more index tensors than one launch takes (they are folded into one), read and written
    b = np.arange(2 * 3 * 2 * 3 * 2 * 2).reshape(2, 3, 2, 3, 2, 2)
    z = clgrad.tensor(b, device=device)
    ix = ([1, 0], [2, -1], [0, 1], [1, 2], [1, 1])
    assert_close(z[ix], b[ix])
    z[ix] = -1
    b[ix] = -1
    assert_close(z, b)


def test_getitem_0d_and_empty(device):
    s = clgrad.tensor(5.0, device=device)
    assert s[None].tolist() == [5.0]
    assert s[...].tolist() == 5.0
    assert s[True].tolist() == [5.0]
    assert s[False].shape == (0,)
    assert s[clgrad.tensor(True, device=device)].tolist() == [5.0]
    x = clgrad.arange(6.0, device=device).view(2, 3)
    assert x[[]].shape == (0, 3)
    assert x[:, clgrad.tensor([], dtype=clgrad.int64, device=device)].shape == (2, 0)
    assert x[x > 10].shape == (0,)
    e = clgrad.zeros(0, 3, device=device)
    assert e[[]].shape == (0, 3)
    assert e[:, [2, 0]].shape == (0, 2)
    assert e[clgrad.zeros(0, 3, dtype=clgrad.bool, device=device)].shape == (0,)
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 0"):
        e[[0]]


def test_bool_scalars_are_advanced_indices(device):
    """torch: a Python bool (or 0-d bool tensor) adds a dim indexed by [0] (True) or []
    (False), an advanced index that broadcasts with the others (and makes a copy)."""
    a = np.arange(6.0).reshape(2, 3)
    x = clgrad.tensor(a, device=device)
    i = np.array([[1, -3], [-2, -2]])
    it = clgrad.tensor(i, device=device)
    z = clgrad.zeros(3, device=device)
    assert z[True, ..., it].shape == (2, 2)
    tt = clgrad.tensor(True, device=device)
    assert x[tt, tt].shape == (1, 2, 3) and x[True, True].shape == (1, 2, 3)
    assert x[tt, False].shape == (0, 2, 3)
    np.testing.assert_array_equal(x[True, :, clgrad.tensor([0, 2], device=device)].numpy(),
                                  a[:, [0, 2]].T)                 # (1,) and (2,) broadcast: (2,)
    np.testing.assert_array_equal(x[0, True, clgrad.tensor([0, 2], device=device)].numpy(),
                                  a[0, [0, 2]])
    assert x[clgrad.tensor([False, True], device=device), ..., True].shape == (1, 3)
    assert x[True, 0, 0, True].shape == (1,)
    assert clgrad.zeros(4, 1, 2, device=device)[1::3, True, clgrad.tensor([[0, 0, 0]],
                                                                            device=device)] \
        .shape == (1, 1, 3, 2)
    with pytest.raises(IndexError, match="could not be broadcast"):
        x[False, clgrad.tensor([1, 0], device=device)]
    y = x.clone()
    y[True].add_(100)                                             # a copy, not a view
    np.testing.assert_array_equal(y.numpy(), a)
    y[True, 1, clgrad.tensor([0, 2], device=device)] = 5.0
    y[False] = 7.0
    np.testing.assert_array_equal(y.numpy(), [[0, 1, 2], [5, 4, 5]])
    with pytest.raises(RuntimeError, match="shape mismatch"):
        y[True] = clgrad.ones(2, 2, 3, dtype=y.dtype, device=device)


def test_index_bounds_follow_torch(device):
    """torch checks the bounds of the indices of the elements it makes (an empty result checks
    none), a dim of size 0 indexed by a non-empty index at once, and in writes the values'
    shape (and, before it, the indices' shapes and masks) before the bounds."""
    x = clgrad.arange(9.0, device=device).view(3, 3)
    t = lambda v: clgrad.tensor(v, device=device)  # noqa: E731
    assert x[3:1, False, t([3])].shape == (0, 0)
    assert x[1:1, t([3])].shape == (0, 1)
    assert x[t([[5]])[:0], t([7])].shape == (0, 1)
    b = clgrad.zeros(3, 4, 1, dtype=clgrad.bool, device=device)
    b[0:0, t([[4, 1, 3]]), t([-1])] = True                        # nothing written, no error
    assert not b.any().item()
    with pytest.raises(IndexError, match="out of bounds for dimension 1 with size 0"):
        clgrad.zeros(3, 0, dtype=clgrad.float64, device=device).index_put(
            (t([-1, 1]), t([0, 0])), clgrad.tensor(1.0, device=device), accumulate=True)
    with pytest.raises(IndexError, match="out of bounds for dimension 1 with size 0"):
        clgrad.zeros(2, 0, device=device)[0:0, t([0])]
    v = clgrad.tensor([1.0, 2.0, 3.0], device=device)
    for f in (lambda: v.clone().__setitem__((t([3, -3, 2]), t(True)), v[1:]),
              lambda: v.clone().__setitem__(t([3, -3, 2]), v[1:]),
              lambda: v.index_put((t([3, -3, 2]),), v[1:])):
        with pytest.raises(RuntimeError, match="shape mismatch: value tensor"):
            f()
    with pytest.raises(IndexError, match="out of bounds"):
        v.clone()[t([3, -3, 2]), True] = v[:1]
    with pytest.raises(IndexError, match="could not be broadcast"):
        clgrad.zeros(3, 3, device=device)[t([1, 2]), t([1, 2, 0])] = \
            clgrad.tensor(1.0, dtype=clgrad.float64, device=device)
    with pytest.raises(IndexError, match="shape of the mask"):
        clgrad.zeros(3, 2, device=device)[t([[True, False, True]] * 4)] = \
            clgrad.ones(1, 2, 4, dtype=clgrad.bool, device=device)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_random_advanced_indexing_matches_numpy(data):
    from conftest import DEVICES
    device = DEVICES[0]
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4), "shape"))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), "seed"))
    a = rng.integers(-50, 50, shape).astype(np.int32)
    b_shape = data.draw(st.sampled_from([(), (2,), (3,), (2, 1), (1, 3), (2, 3)]), "index shape")
    items, dim = [], 0
    while dim < len(shape):
        kind = data.draw(st.sampled_from(["int", "slice", "index", "index", "mask", "full",
                                          "none", "stop"]))
        n = shape[dim]
        if kind == "stop":
            break
        if kind == "int":
            items.append(int(rng.integers(-n, n)))
        elif kind == "slice":
            items.append(slice(int(rng.integers(-n, n)), int(rng.integers(-n, n + 1)),
                               int(rng.integers(1, 3))))
        elif kind == "index":
            # a shape that broadcasts to b_shape: drop leading dims, set some to 1
            ish = list(b_shape[rng.integers(0, len(b_shape) + 1):])
            ish = [1 if rng.random() < 0.3 else s for s in ish]
            items.append(rng.integers(-n, n, ish))
        elif kind == "mask":
            items.append(rng.random(n) < 0.5)
        elif kind == "none":
            items.append(None)
            continue
        else:
            items.append(slice(None))
        dim += 1
    if data.draw(st.booleans(), "ellipsis"):       # where it covers no dim, or at the end
        items.insert(rng.integers(0, len(items) + 1) if dim == len(shape) else len(items),
                     Ellipsis)
    x = clgrad.tensor(a, device=device)
    try:
        expected = ref_get(a, items)
    except IndexError:                 # index arrays that do not broadcast together
        with pytest.raises(IndexError, match="shape mismatch"):
            x[to_clgrad(items, device)]
        return
    assert_close(x[to_clgrad(items, device)], expected, clgrad.int32)
    # the same index on the left of an assignment
    view, second = ref_index(a.copy(), items)
    target = np.arange(a.size).reshape(a.shape)
    tv, ts = ref_index(target, items)
    positions = tv[ts].ravel()
    if positions.size == len(np.unique(positions)):
        value = rng.integers(100, 200, view[second].shape).astype(np.int32)
        cl_value = clgrad.tensor(value, device=device)
    else:                                                 # duplicates: any of the values wins
        value = cl_value = 7
    b = a.copy()
    bview, bsecond = ref_index(b, items)
    bview[bsecond] = value
    y = clgrad.tensor(a, device=device)
    y[to_clgrad(items, device)] = cl_value
    assert_close(y, b, clgrad.int32)


# ---- setitem and index_put -----------------------------------------------------------------------
def test_setitem_every_dtype(device):
    rng = np.random.default_rng(2)
    for dt in all_dtypes(device):
        for layout in LAYOUTS:
            a = random_array((3, 4), dt, rng)
            host = rounded(a, dt).copy()
            x = make(a, dt, device, layout)
            v = random_array((2, 1), dt, rng)
            x[[2, 0], 1:] = clgrad.tensor(rounded(v, dt), dtype=dt, device=device)
            host[[2, 0], 1:] = rounded(v, dt)
            x[[1], [-1]] = 1
            host[1, -1] = 1
            mask = rng.random((3, 4)) < 0.3
            x[clgrad.tensor(mask, device=device)] = 0          # the masked-fill fast path
            host[mask] = 0
            x[:, clgrad.tensor([True, False, False, True], device=device)] = \
                clgrad.tensor(rounded(v[:1, 0], dt), dtype=dt, device=device)
            host[:, [0, 3]] = rounded(v[0, 0], dt)
            assert_close(x, host, dt)


def _basic_index(rng, shape):
    """A random index of None, Ellipsis, ints and slices (positive steps) over `shape`."""
    nd, items, d = len(shape), [], 0
    kinds = ["none", "int", "slice", "ellipsis"] * 2
    for kind in rng.choice(kinds, rng.integers(0, nd + 4)):
        if kind == "none":
            items.append(None)
        elif kind == "ellipsis" and Ellipsis not in items:
            items.append(Ellipsis)
        elif kind in ("int", "slice") and d < nd:
            items.append(("int" if kind == "int" else "slice", d))
            d += 1
    used, out, dim = d, [], 0
    for it in items:
        if it is None or it is Ellipsis:
            out.append(it)
            dim += (nd - used) if it is Ellipsis else 0
            continue
        n = shape[dim]
        if it[0] == "int":
            out.append(int(rng.integers(-n, n)))
        else:
            bound = lambda: None if rng.random() < 0.3 else int(rng.integers(-n - 1, n + 2))  # noqa
            out.append(slice(bound(), bound(), [None, 1, 2, 3][rng.integers(0, 4)]))
        dim += 1
    return tuple(out)


def test_setitem_none_ellipsis_ints_slices_match_numpy(device):
    # every mix of basic items on the left of an assignment, numpy's np.newaxis being torch's
    # None: a value broadcast to the indexed view (with extra leading 1s, which torch drops) or a
    # number. All-size-1 views (x[None] = y of a 0-d x) once crashed the copy.
    rng = np.random.default_rng(7)
    for case in range(300):
        shape = tuple(int(n) for n in rng.integers(1, 4, rng.integers(0, 4)))
        a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        index = _basic_index(rng, shape)
        vshape = [1 if rng.random() < 0.3 else n for n in a[index].shape]
        vshape = [1] * int(rng.integers(0, 2)) + vshape[rng.integers(0, len(vshape) + 1):]
        value = rng.standard_normal(vshape).astype(np.float32) if case % 4 else np.float32(-5)
        expected = a.copy()
        # (a trailing Ellipsis makes numpy write all-int indices through a view, broadcasting)
        expected[index if Ellipsis in index else index + (Ellipsis,)] = value
        x = clgrad.tensor(a, device=device)
        x[index] = clgrad.tensor(value, device=device) if case % 4 else -5.0
        assert_close(x, expected, clgrad.float32), (shape, index, vshape)


def test_setitem_with_none_after_ops(device):
    # the forms of issue 22: a 0-d result, and views through None after reductions and matmul
    dt = grad_dtype(device)
    x = clgrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=dt, device=device, requires_grad=True)
    s = x.sum()
    v = s.clone()
    v[None] = s * 2
    v[..., None] = v * 3
    v[None, ..., None] = v + 1
    assert v.item() == 61.0
    v.backward()
    assert x.grad.tolist() == [[6.0, 6.0], [6.0, 6.0]]
    m = (x @ x).detach()
    m[0, None, ..., None] = clgrad.tensor([[5.0], [6.0]], dtype=dt, device=device)
    assert m.tolist() == [[5.0, 6.0], [15.0, 22.0]]
    w = x.var().detach()
    w[None, None] = clgrad.tensor([[2.0]], dtype=dt, device=device)
    assert w.item() == 2.0


def test_index_put_accumulate_sums_duplicates_every_dtype(device):
    # many additions into few places: atomics (compare-and-swap on 16- and 8-bit words)
    idx = np.arange(600) % 3
    for dt in all_dtypes(device):
        x = clgrad.zeros(3, dtype=dt, device=device)
        v = clgrad.ones(600, dtype=dt, device=device)
        want = {clgrad.bool: [True] * 3, clgrad.uint8: [200] * 3, clgrad.int8: [200 - 256] * 3,
                clgrad.bfloat16: [200.0] * 3}.get(dt, [200] * 3)
        i = clgrad.tensor(idx, device=device)
        assert to_np(x.index_put((i,), v, accumulate=True)).tolist() == want
        assert to_np(x.index_add(0, i, v)).tolist() == want
        assert to_np(x.scatter_add(0, i, v)).tolist() == want
        x.index_put_((i,), v, accumulate=True)
        assert to_np(x).tolist() == want
    # accumulate with several index tensors and a broadcast value
    x = clgrad.zeros(2, 3, device=device)
    x.index_put_((clgrad.tensor([0, 0, 1], device=device), clgrad.tensor([2, 2, 0], device=device)),
                 clgrad.tensor(1.5, device=device), accumulate=True)
    assert x.tolist() == [[0.0, 0.0, 3.0], [1.5, 0.0, 0.0]]


def test_accumulate_without_64bit_atomics(device, monkeypatch):
    # a device without cl_khr_int64_base_atomics: 64-bit sums are done on the host
    monkeypatch.setattr(device, "has_int64_atomics", False)
    i = clgrad.tensor([0, 2, 0, 0], device=device)
    for dt in (clgrad.int64,) + ((clgrad.float64,) if device.has_fp64 else ()):
        x = clgrad.ones(2, 3, dtype=dt, device=device)[:, ::2]          # strided destination
        src = clgrad.tensor([[1, 2, 3, 4], [5, 6, 7, 8]], dtype=dt, device=device)
        out = x.index_add(1, clgrad.tensor([0, 1, 0, 0], device=device), src, alpha=2)
        assert out.tolist() == [[17, 5], [41, 13]]
        y = clgrad.zeros(3, dtype=dt, device=device).index_put((i,), src[0], accumulate=True)
        assert y.tolist() == [8, 0, 2]


def test_index_put_forms(device):
    x = clgrad.zeros(2, 3, device=device)
    assert clgrad.index_put(x, (clgrad.tensor([1], device=device),),
                            clgrad.tensor([1.0, 2.0, 3.0], device=device)).tolist() == \
        [[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]
    assert x.tolist() == [[0.0] * 3] * 2                          # out of place
    # values with extra leading 1s, a mask with a 1-element value of another dtype (cast)
    x.index_put_((clgrad.tensor([0, 1], device=device),), clgrad.ones(1, 1, 3, device=device))
    assert x.tolist() == [[1.0] * 3] * 2
    x.index_put_((x > 0,), clgrad.tensor([4], device=device))
    assert x.tolist() == [[4.0] * 3] * 2
    # the value is read before it is written when it shares memory with the destination
    y = clgrad.arange(4.0, device=device)
    y[[1, 2, 3]] = y[:3]
    assert y.tolist() == [0.0, 0.0, 1.0, 2.0]


def test_setitem_errors(device):
    x = clgrad.zeros(2, 3, device=device)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        x[[0, 5]]
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 1 with size 3"):
        x[:, clgrad.tensor([-4], device=device)] = 1
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="tensors used as indices must be long"):
        x[clgrad.tensor([0.0], device=device)]
    with pytest.raises(IndexError, match=r"The shape of the mask \[3\] at index 0 does not match "
                                         r"the shape of the indexed tensor \[2, 3\] at index 0"):
        x[[True, False, True]]
    with pytest.raises(IndexError, match=r"could not be broadcast together with shapes \[2\], "
                                         r"\[3\]"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="only integers, slices"):
        x[1.5]
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[2\] cannot "
                                           r"be broadcast to indexing result of shape \[1, 3\]"):
        x[[0]] = clgrad.ones(2, device=device)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes "
                                           "match, got Float for the destination and Long"):
        x[[0]] = clgrad.tensor([1, 2, 3], device=device)
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        x.index_put_((clgrad.tensor([0], device=device),), 1.0)
    with pytest.raises(TypeError, match="expected Tensor as element 1"):
        x.index_put_((clgrad.tensor([0], device=device), None), clgrad.tensor(1.0, device=device))
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1, [0]]


# ---- index_select, gather, take ------------------------------------------------------------------
def test_gathers_every_dtype(device):
    rng = np.random.default_rng(3)
    for dt in all_dtypes(device):
        for layout in LAYOUTS:
            a = random_array((3, 4), dt, rng)
            h = rounded(a, dt)
            x = make(a, dt, device, layout)
            i1 = np.array([3, 0, 3])
            assert_close(x.index_select(1, clgrad.tensor(i1, device=device)), h[:, i1], dt)
            assert_close(clgrad.index_select(x, 0, clgrad.tensor(i1[:2] - 1, device=device)
                                             .abs()), h[np.abs(i1[:2] - 1)], dt)
            g = rng.integers(0, 3, (2, 4))
            assert_close(x.gather(0, clgrad.tensor(g, device=device)),
                         np.take_along_axis(h, g, 0), dt)
            g1 = make(rng.integers(0, 4, (3, 2)), clgrad.int64, device, layout)
            assert_close(x.gather(1, g1), np.take_along_axis(h, to_np(g1), 1), dt)
            t = np.array([[0, -1], [5, 11]])
            assert_close(x.take(clgrad.tensor(t, device=device)), h.ravel()[t], dt)
            assert_close(clgrad.take_along_dim(x, clgrad.tensor([[1], [3], [0]], device=device),
                                               1), np.take_along_axis(h, np.array([[1], [3], [0]]),
                                                                      1), dt)
            assert_close(clgrad.take_along_dim(x, clgrad.tensor([2, 7], device=device)),
                         h.ravel()[[2, 7]], dt)
    # 0-d input and index, empty index
    s = clgrad.tensor(5.0, device=device)
    z = clgrad.tensor(0, device=device)
    assert s.index_select(0, z).tolist() == 5.0
    assert s.gather(0, z).tolist() == 5.0
    assert s.take(z).tolist() == 5.0
    x = clgrad.ones(2, 3, device=device)
    assert x.index_select(0, clgrad.tensor(1, device=device)).shape == (1, 3)
    assert x.gather(1, clgrad.zeros(2, 0, dtype=clgrad.int64, device=device)).shape == (2, 0)
    assert x.take(clgrad.zeros(0, dtype=clgrad.int64, device=device)).shape == (0,)
    # broadcasting in take_along_dim
    y = clgrad.arange(6, device=device).view(2, 3)
    assert clgrad.take_along_dim(y, clgrad.tensor([[2, 0]], device=device).t(), 1).tolist() == \
        [[2], [3]]


def test_gather_errors(device):
    x = clgrad.zeros(2, 3, device=device)
    i = clgrad.tensor([[0, 1]], device=device)
    with pytest.raises(RuntimeError, match="gather.*index 5 is out of bounds for dimension 1 with "
                                           "size 3"):
        x.gather(1, clgrad.tensor([[5]], device=device))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds"):      # no wrapping
        x.gather(1, clgrad.tensor([[-1]], device=device))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.gather(1, clgrad.tensor([0], device=device))
    with pytest.raises(RuntimeError, match=r"expected index \[3, 1\] to be no larger than self "
                                           r"\[2, 3\] apart from dimension 1"):
        x.gather(1, clgrad.zeros(3, 1, dtype=clgrad.int64, device=device))
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        x.gather(1, i.float())
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.gather(2, i)
    with pytest.raises(IndexError, match="index_select.*index 3 out of range in self"):
        x.index_select(1, clgrad.tensor([3], device=device))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_select(1, i)
    with pytest.raises(IndexError, match="take.*tried to access index 6 on a tensor of 6"):
        x.take(clgrad.tensor([6], device=device))
    with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
        x.take(i.int())
    with pytest.raises(RuntimeError, match="should have the same number of dimensions"):
        clgrad.take_along_dim(x, clgrad.tensor([0], device=device), 0)


# ---- scatters ------------------------------------------------------------------------------------
def _np_scatter(h, dim, idx, src, add=False):
    out = h.copy()
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        v = src if np.ndim(src) == 0 else src[pos]
        if add:
            out[tuple(tgt)] = out[tuple(tgt)] + v if out.dtype != bool else out[tuple(tgt)] | v
        else:
            out[tuple(tgt)] = v
    return out


def test_scatters_every_dtype(device):
    rng = np.random.default_rng(4)
    for dt in all_dtypes(device):
        for layout in LAYOUTS:
            a, b = random_array((3, 4), dt, rng), random_array((3, 4), dt, rng)
            h, hb = rounded(a, dt), rounded(b, dt)
            x, src = make(a, dt, device, layout), make(b, dt, device, layout)
            perm = np.stack([rng.permutation(4)[:2] for _ in range(3)])   # no duplicates
            i = clgrad.tensor(perm, device=device)
            assert_close(x.scatter(1, i, src), _np_scatter(h, 1, perm, hb), dt)
            assert_close(x.scatter(1, i, 1), _np_scatter(h, 1, perm, rounded(1, dt)), dt)
            dup = rng.integers(0, 3, (2, 4))
            assert_close(x.scatter_add(0, clgrad.tensor(dup, device=device), src),
                         _np_scatter(h, 0, dup, hb, add=True), dt)
            j = np.array([2, 0, 2])
            want = h.copy()
            for k, jj in enumerate(j):
                want[jj] = want[jj] + hb[k] if dt is not clgrad.bool else want[jj] | hb[k]
            assert_close(x.index_add(0, clgrad.tensor(j, device=device), src), want, dt)
            want = h.copy()
            want[:, [3, 1]] = hb[:, :2]
            assert_close(x.index_copy(1, clgrad.tensor([3, 1], device=device), src[:, :2]), want,
                         dt)
            want = h.copy()
            want[:, [0, 3]] = rounded(1, dt)
            assert_close(x.index_fill(1, clgrad.tensor([0, -1], device=device), 1), want, dt)
            assert_close(x.index_fill(1, clgrad.tensor([0, 3], device=device),
                                      clgrad.tensor(1, device=device)), want, dt)
    # alpha, for floats and ints
    x = clgrad.zeros(3, device=device)
    assert x.index_add(0, clgrad.tensor([1, 1], device=device), clgrad.ones(2, device=device),
                       alpha=2.5).tolist() == [0.0, 5.0, 0.0]
    xi = clgrad.zeros(3, dtype=clgrad.int32, device=device)
    assert xi.index_add(0, clgrad.tensor([0, 0], device=device),
                        clgrad.tensor([1, 2], dtype=clgrad.int32, device=device),
                        alpha=3).tolist() == [9, 0, 0]
    # 0-d
    s = clgrad.tensor(5.0, device=device)
    z = clgrad.tensor(0, device=device)
    assert s.scatter(0, z, 2.0).tolist() == 2.0
    assert s.index_fill(0, z, 2.0).tolist() == 2.0
    assert s.index_add(0, clgrad.tensor([0], device=device), clgrad.tensor(2.0, device=device)) \
        .tolist() == 7.0
    # scatter with reduce="add"
    assert clgrad.zeros(2, device=device).scatter(0, clgrad.tensor([1, 1], device=device), 1.5,
                                                  reduce="add").tolist() == [0.0, 3.0]


def _index_add_kernels(f):
    from clgrad.runtime import kernels
    names = []
    kernels.launch_hooks.append(lambda d, k, *a: names.append(k.function_name))
    try:
        out = f()
    finally:
        kernels.launch_hooks.pop()
    return out, [n for n in names if n in ("index_add_lines_v", "scatter_add")]


def test_index_add_by_lines_every_dtype(device, code_paths):
    """index_add along a dim whose lines are contiguous rows (an embedding's backward): on CPU
    paths a work-item per vector of lines walks the index, no atomics, summing in index order,
    so float results equal numpy's np.add.at (also in index order) bit for bit: duplicates,
    alpha, a destination and source that are views at an offset."""
    from clgrad.kernels.index import LINES_DTYPES, LINES_PER_UNIT
    rng = np.random.default_rng(11)
    cols = 4 * LINES_PER_UNIT * device.compute_units * device.vec
    idx = np.array([3, 0, 2, 3, 1, 3, 0, 4])
    for dt in [d for d in LINES_DTYPES if device.has_fp64 or d is not clgrad.float64]:
        base = random_array((2, 6, cols), dt, rng)
        src = random_array((2, 9, cols), dt, rng)[:, 1:]
        alpha = 1 if dt.kind != "f" else 0.5
        x, s = make(base, dt, device), make(src, dt, device)

        def run():
            y = x.clone()
            y[:, 1:].index_add_(1, clgrad.tensor(idx, device=device), s, alpha=alpha)
            return y
        got, launched = _index_add_kernels(run)
        assert launched == (["index_add_lines_v"] if device.cpu_paths else ["scatter_add"])
        want = to_np(x).copy()
        np.add.at(want[:, 1:], (slice(None), idx), (to_np(s) * alpha).astype(want.dtype))
        if dt in (clgrad.float16, clgrad.bfloat16):     # rounded at every add
            assert_close(got, want, dt)
        elif device.cpu_paths or dt.kind != "f":
            np.testing.assert_array_equal(to_np(got), want)
        else:
            assert_close(got, want, dt)


def test_embedding_backward_by_lines(device, code_paths):
    """The gradient of an embedding: the sum of each row's output gradients, in token order
    (bit for bit against np.add.at on CPU paths); too few lines, and lines that are not
    contiguous, keep the atomic scatter."""
    import clgrad.nn.functional as F
    rng = np.random.default_rng(12)
    w = clgrad.tensor(rng.standard_normal((7, 64)).astype(np.float32), device=device,
                      requires_grad=True)
    tokens = rng.integers(0, 7, (3, 40))
    g = rng.standard_normal((3, 40, 64)).astype(np.float32)
    out = F.embedding(clgrad.tensor(tokens, device=device), w)
    _, launched = _index_add_kernels(
        lambda: out.backward(clgrad.tensor(g, device=device)))
    want = np.zeros((7, 64), np.float32)
    np.add.at(want, tokens.reshape(-1), g.reshape(-1, 64))
    if device.cpu_paths:
        assert launched == ["index_add_lines_v"]
        np.testing.assert_array_equal(w.grad.numpy(), want)
    else:
        assert_close(w.grad, want, clgrad.float32)
    few = clgrad.zeros(4, 3, device=device)                     # 3 columns: atomics
    _, launched = _index_add_kernels(lambda: few.index_add_(0, clgrad.tensor([1, 1]),
                                                            clgrad.ones(2, 3, device=device)))
    assert launched == ["scatter_add"] and few.tolist()[1] == [2.0] * 3
    cols = clgrad.zeros(64, 4, device=device).t()               # lines not contiguous
    _, launched = _index_add_kernels(lambda: cols.index_add_(0, clgrad.tensor([2, 2]),
                                                             clgrad.ones(2, 64, device=device)))
    assert launched == ["scatter_add"] and cols[2].tolist() == [2.0] * 64


def test_deterministic_algorithms_sum_embedding_gradients_in_token_order(device, code_paths):
    """Under use_deterministic_algorithms(True) an embedding's backward goes by lines on GPU
    paths too, and with few lines (16 columns): bit for bit np.add.at's sums in token order, the
    same bits on every run. Off again, GPU paths scatter with atomics."""
    import clgrad.nn.functional as F
    rng = np.random.default_rng(13)
    tokens = rng.integers(0, 5, (4, 30))
    g = rng.standard_normal((4, 30, 16)).astype(np.float32)
    want = np.zeros((5, 16), np.float32)
    np.add.at(want, tokens.reshape(-1), g.reshape(-1, 16))

    def grad():
        w = clgrad.zeros(5, 16, device=device, requires_grad=True)
        out = F.embedding(clgrad.tensor(tokens, device=device), w)
        out.backward(clgrad.tensor(g, device=device))
        return w.grad
    clgrad.use_deterministic_algorithms(True)
    try:
        got, launched = _index_add_kernels(grad)
    finally:
        clgrad.use_deterministic_algorithms(False)
    assert launched == ["index_add_lines_v"]
    np.testing.assert_array_equal(got.numpy(), want)
    if not device.cpu_paths:
        assert _index_add_kernels(grad)[1] == ["scatter_add"]


def test_inplace_scatters(device):
    x = clgrad.zeros(2, 3, device=device)
    v0 = x._version
    i = clgrad.tensor([[2, 0]], device=device)
    assert x.scatter_(1, i, clgrad.ones(1, 2, device=device)) is x
    x.scatter_add_(1, i, clgrad.ones(1, 2, device=device))
    x.index_add_(0, clgrad.tensor([1], device=device), clgrad.ones(1, 3, device=device), alpha=3)
    x.index_fill_(1, clgrad.tensor([1], device=device), -1)
    x.index_copy_(0, clgrad.tensor([0], device=device), x[1:].clone())
    assert x.tolist() == [[3.0, -1.0, 3.0], [3.0, -1.0, 3.0]]
    x.masked_scatter_(clgrad.tensor([True, False, True], device=device),
                      clgrad.tensor([7.0, 8.0, 9.0, 10.0], device=device))
    assert x.tolist() == [[7.0, -1.0, 8.0], [9.0, -1.0, 10.0]]
    assert x._version == v0 + 6
    # a strided destination, written in place
    y = clgrad.zeros(3, 4, device=device).t()
    y.index_fill_(0, clgrad.tensor([1, 3], device=device), 1)
    assert y.t().tolist() == [[0.0, 1.0, 0.0, 1.0]] * 3


def test_scatter_errors(device):
    x = clgrad.zeros(2, 3, device=device)
    i = clgrad.tensor([[0, 1]], device=device)
    with pytest.raises(RuntimeError, match="scatter.*index 3 is out of bounds for dimension 1"):
        x.scatter(1, clgrad.tensor([[3]], device=device), 1.0)
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        x.scatter(1, i, clgrad.ones(1, 2, dtype=clgrad.int32, device=device))
    with pytest.raises(RuntimeError, match=r"Expected index \[1, 2\] to be no larger than self "
                                           r"\[2, 3\] apart from dimension 1 and to be no larger "
                                           r"size than src \[1, 1\]"):
        x.scatter(1, i, clgrad.ones(1, 1, device=device))
    with pytest.raises(RuntimeError, match="Number of indices \\(2\\) should be equal to "
                                           "source.size\\(dim\\)"):
        x.index_add(1, clgrad.tensor([0, 1], device=device), clgrad.ones(2, 3, device=device))
    with pytest.raises(RuntimeError, match="self \\(Float\\) and source \\(Int\\) must have the "
                                           "same scalar type"):
        x.index_add(1, clgrad.tensor([0], device=device),
                    clgrad.ones(2, 1, dtype=clgrad.int32, device=device))
    with pytest.raises(IndexError, match="index_add_.*index 3 out of range in self"):
        x.index_add(1, clgrad.tensor([3], device=device), clgrad.ones(2, 1, device=device))
    with pytest.raises(IndexError, match="index_copy_.*index -1 is out of bounds"):
        x.index_copy(1, clgrad.tensor([-1], device=device), clgrad.ones(2, 1, device=device))
    with pytest.raises(RuntimeError, match="Expected a long tensor for index, but got Int"):
        x.index_copy(1, clgrad.tensor([0], dtype=clgrad.int32, device=device),
                     clgrad.ones(2, 1, device=device))
    with pytest.raises(IndexError, match="index_fill_.*index 3 is out of bounds"):
        x.index_fill(1, clgrad.tensor([3], device=device), 0)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        x.index_fill(1, clgrad.tensor([0], device=device), clgrad.ones(2, device=device))
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply"):
        x.scatter(1, i, 1.0, reduce="max")


# ---- masks and nonzero ---------------------------------------------------------------------------
def test_masked_and_nonzero_every_dtype(device):
    rng = np.random.default_rng(5)
    for dt in all_dtypes(device):
        for layout in LAYOUTS:
            a = random_array((3, 4), dt, rng)
            a.flat[[0, 5]] = 0
            h = rounded(a, dt)
            x = make(a, dt, device, layout)
            m = rng.random((3, 4)) < 0.5
            mask = make(m, clgrad.bool, device, layout)
            assert_close(x.masked_select(mask), h[m], dt)
            assert_close(x.masked_select(mask[0]), h[np.broadcast_to(m[0], (3, 4))], dt)
            src = random_array((12,), dt, rng)
            want = h.copy()
            want[m] = rounded(src, dt)[:m.sum()]
            assert_close(x.masked_scatter(mask, clgrad.tensor(rounded(src, dt), dtype=dt,
                                                              device=device)), want, dt)
            nz = np.stack(np.nonzero(h != 0), 1)
            assert x.nonzero().tolist() == nz.tolist()
            assert x.nonzero().dtype is clgrad.int64
            assert [t.tolist() for t in x.nonzero(as_tuple=True)] == [c.tolist() for c in nz.T]
            assert [t.tolist() for t in clgrad.where(x)] == [c.tolist() for c in nz.T]
    # 0-d, empty, and a long input (many chunks of the compaction)
    assert clgrad.tensor(5, device=device).nonzero().shape == (1, 0)
    assert [t.tolist() for t in clgrad.tensor(0, device=device).nonzero(as_tuple=True)] == [[]]
    assert [t.tolist() for t in clgrad.tensor(5, device=device).nonzero(as_tuple=True)] == [[0]]
    assert clgrad.zeros(0, 3, device=device).nonzero().shape == (0, 2)
    big = rng.random(100000) < 0.01
    assert clgrad.tensor(big, device=device).nonzero()[:, 0].tolist() == np.flatnonzero(big) \
        .tolist()
    assert clgrad.argwhere(clgrad.tensor([0, 2], device=device)).tolist() == [[1]]
    s = clgrad.tensor(3.0, device=device)
    assert s.masked_select(clgrad.tensor(True, device=device)).tolist() == [3.0]
    assert s.masked_scatter(clgrad.tensor(True, device=device),
                            clgrad.tensor([4.0], device=device)).tolist() == 4.0


def test_mask_errors(device):
    x = clgrad.zeros(2, 3, device=device)
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        x.masked_select(clgrad.tensor([1, 0, 1], device=device))
    with pytest.raises(RuntimeError, match="must match the size"):
        x.masked_select(clgrad.tensor([True, False], device=device))
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        x.masked_scatter(x == 0, clgrad.ones(5, device=device))
    with pytest.raises(RuntimeError, match="expected self and source to have same dtypes"):
        x.masked_scatter(x == 0, clgrad.ones(6, dtype=clgrad.float16, device=device))


def test_as_strided_overlapping_backward(device):
    from clgrad.ops.index import as_strided_backward_overlapping
    g = clgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    out = as_strided_backward_overlapping(g.t().contiguous().t(), (5,), (2, 3), (1, 1), 1)
    want = np.zeros(5)
    for r in range(2):
        for c in range(3):
            want[1 + r + c] += g.tolist()[r][c]
    assert_close(out, want)
    x = clgrad.arange(6.0, device=device).requires_grad_()
    w = x.as_strided((3, 3), (1, 1), 1)
    (w * clgrad.arange(9.0, device=device).view(3, 3)).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 4.0, 12.0, 12.0, 8.0]


# ---- autograd ------------------------------------------------------------------------------------
def _g(device, shape, seed=0):
    rng = np.random.default_rng(seed)
    return make(rng.uniform(-1, 1, shape), grad_dtype(device), device, requires_grad=True)


def test_node_names(device):
    x = _g(device, (2, 3))
    i = clgrad.tensor([[0, 2]], device=device)
    m = clgrad.tensor([True, False, True], device=device)
    v = clgrad.tensor(1.0, dtype=x.dtype, device=device, requires_grad=True)
    y = x * 1
    y[[0, 1], [2, 0]] = v
    names = {
        "IndexBackward0": x[[1, 0]], "IndexSelectBackward0": x.index_select(1, i[0]),
        "GatherBackward0": x.gather(1, i), "ScatterBackward0": x.scatter(1, i, x),
        "ScatterBackward1": x.scatter(1, i, 2.0), "ScatterAddBackward0": x.scatter_add(1, i, x),
        "IndexAddBackward0": x.index_add(1, i[0], x[:, :2]),
        "IndexCopyBackward0": x.index_copy(1, i[0], x[:, :2]),
        "IndexFillBackward0": x.index_fill(1, i[0], 2.0),
        "IndexFillBackward1": x.index_fill(1, i[0], v),
        "MaskedSelectBackward0": x.masked_select(m),
        "MaskedScatterBackward0": x.masked_scatter(m, x), "TakeBackward0": x.take(i),
        "IndexPutBackward0": y,
    }
    for name, t in names.items():
        assert t.grad_fn.name() == name
    z = x * 1
    z[0][[1]] = v
    assert z.grad_fn.name() == "CopySlices"
    assert not x.nonzero().requires_grad and not i.requires_grad


def test_index_gradients(device):
    tol = grad_tols(device)
    x = _g(device, (3, 4))
    i = clgrad.tensor([2, 0, 2], device=device)
    j = clgrad.tensor([[1, 3], [1, 1]], device=device)
    m = clgrad.tensor([[True, False, True, True]] * 2 + [[False] * 4], device=device)
    fns = [
        lambda a: a[i],                              # duplicates add up in the gradient
        lambda a: a[i[:2], j[0]],
        lambda a: a[1:, j],
        lambda a: a[m],
        lambda a: a[[0, 2], None, [3, 1]],
    ]
    for f in fns:
        assert clgrad.autograd.gradcheck(f, (x,), **tol)
    for f in fns[:2] + fns[3:4]:
        assert clgrad.autograd.gradgradcheck(f, (x,), **tol)


def test_index_put_gradients(device):
    tol = grad_tols(device)
    x = _g(device, (3, 2))
    v = _g(device, (2,), 1)
    i = clgrad.tensor([2, 0], device=device)
    d = clgrad.tensor([1, 1], device=device)
    for idx, acc in (((i,), False), ((d,), True), ((i, d), False), ((d, d), True)):
        f = lambda a, b: clgrad.index_put(a, idx, b, accumulate=acc)  # noqa: E731
        assert clgrad.autograd.gradcheck(f, (x, v if len(idx) == 2 else v[:, None] * 1), **tol)
    f = lambda a, b: clgrad.index_put(a, (d,), b, accumulate=True)     # noqa: E731
    assert clgrad.autograd.gradgradcheck(f, (x, v), **tol)


def test_setitem_through_autograd(device):
    dt = grad_dtype(device)
    x = clgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=dt, device=device,
                      requires_grad=True)
    v = clgrad.tensor([10.0, 20.0], dtype=dt, device=device, requires_grad=True)
    y = x * 2
    y[[1, 0], [2, 2]] = v                    # overwritten places get no gradient
    y[0, [0]] = v[1:] * 3                    # through a view: CopySlices
    (y * clgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=dt, device=device)).sum() \
        .backward()
    # checked by hand and against torch: d/dx = 2 * w except at the 3 overwritten places
    assert x.grad.tolist() == [[0.0, 4.0, 0.0], [8.0, 10.0, 0.0]]
    assert v.grad.tolist() == [6.0, 3.0 + 3.0]
    assert y.grad_fn.name() == "CopySlices"
    # x[mask] = value on a non-leaf, and a leaf that requires grad refuses in-place changes
    z = x * 1
    z[z > 3] = 0.0
    z.sum().backward()
    assert x.grad.tolist() == [[1.0, 5.0, 1.0], [8.0, 10.0, 0.0]]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x[[0]] = 1.0
    # an index tensor changed in place after use is caught by backward
    k = clgrad.tensor([0, 1], device=device)
    w = (x * 1)[k]
    k.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()
    # gradcheck through setitem
    f = lambda a, b: _set(a, b)  # noqa: E731
    assert clgrad.autograd.gradcheck(f, (_g(device, (2, 3)), _g(device, (2,), 2)),
                                     **grad_tols(device))


def _set(a, b):
    y = a * 1
    y[:, [2, 0]] = b[:, None] * b[None, :]
    return y


def test_gather_scatter_gradients(device):
    tol = grad_tols(device)
    x = _g(device, (2, 3))
    s = _g(device, (2, 3), 1)
    t0 = _g(device, (), 2)
    i = clgrad.tensor([[2, 0], [1, 1]], device=device)
    p = clgrad.tensor([[2, 0], [0, 1]], device=device)
    r = clgrad.tensor([1, 0, 1], device=device)
    m = clgrad.tensor([True, False, True], device=device)
    cases = [
        (lambda a: a.index_select(1, r), (x,)),
        (lambda a: a.gather(1, i), (x,)),
        (lambda a, b: a.scatter(1, p, b), (x, s)),
        (lambda a: a.scatter(1, p, 2.0), (x,)),
        (lambda a, b: a.scatter_add(1, i, b), (x, s)),
        (lambda a, b: a.index_add(1, r, b, alpha=2.0), (x, s)),
        (lambda a, b: a.index_copy(1, clgrad.tensor([2, 0, 1], device=device), b), (x, s)),
        (lambda a, b: a.index_fill(1, r[:2], b), (x, t0)),
        (lambda a: a.masked_select(m), (x,)),
        (lambda a, b: a.masked_scatter(m, b), (x, s)),
        (lambda a: a.take(i), (x,)),
        (lambda a: clgrad.take_along_dim(a, i[:1], 1), (x,)),
    ]
    for f, args in cases:
        assert clgrad.autograd.gradcheck(f, args, **tol)
    for f, args in (cases[1], cases[4], cases[5], cases[8], cases[9], cases[10]):
        assert clgrad.autograd.gradgradcheck(f, args, **tol)
    # in-place forms on a non-leaf
    f = lambda a, b: (a * 1).index_add_(1, r, b).scatter_(1, p[:1], b[:1, :2])  # noqa: E731
    assert clgrad.autograd.gradcheck(f, (x, s), **tol)
    # scatter's src larger than index: its other elements get zero gradient
    big = _g(device, (2, 4), 3)
    assert clgrad.autograd.gradcheck(lambda a, b: a.scatter(1, p, b), (x, big), **tol)


def _set_pairs(a):
    y = a * 1
    y[[0, 2], [1, 1]] = a[1, :2]
    return y


def test_forward_mode(device):
    # every op here is linear (or affine) in its data arguments: the tangent of f at x along t
    # is f(x + t) - f(x)
    import clgrad.autograd.forward_ad as fwAD
    dt = grad_dtype(device)
    rng = np.random.default_rng(7)
    x, t, s = (make(rng.uniform(-1, 1, (3, 4)), dt, device) for _ in range(3))
    i = clgrad.tensor([[2, 0, 1, 1]], device=device)
    m = x > 0
    fns = [
        lambda a: a[[2, 0, 2], 1:], lambda a: a[m],
        lambda a: a.index_put((clgrad.tensor([1, 1], device=device),), a[0, :1] * 2,
                              accumulate=True),
        _set_pairs, lambda a: a.index_select(1, i[0]),
        lambda a: a.gather(0, i), lambda a: a.scatter(0, i, s), lambda a: a.scatter(0, i, 5.0),
        lambda a: a.scatter_add(0, i, a * 2), lambda a: a.index_add(1, i[0], a, alpha=3.0),
        lambda a: a.index_fill(1, i[0, :2], 4.0), lambda a: s.masked_scatter(m, a),
        lambda a: a.take(i),
    ]
    for f in fns:
        with fwAD.dual_level():
            tangent = fwAD.unpack_dual(f(fwAD.make_dual(x, t))).tangent
        assert_close(tangent, to_np(f(x + t) - f(x)), dt)
