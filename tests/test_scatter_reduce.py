"""scatter_reduce, index_reduce and scatter(reduce='multiply') against numpy's ufunc.at, every
dtype and both include_self settings; gradients by finite differences (zeros and ties
included); errors."""
import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck

UFUNC = {"sum": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _np_scatter_reduce(x, dim, idx, src, reduce, include_self):
    """torch's definition along dim 0 or 1 of a 2-D x, in numpy."""
    out = x.astype(np.float64).copy()
    rows, cols = np.indices(idx.shape)
    tgt = (idx, cols) if dim == 0 else (rows, idx)
    s = src[:idx.shape[0], :idx.shape[1]].astype(np.float64)
    count = np.ones_like(out) if include_self else np.zeros_like(out)
    if not include_self:
        ident = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
        out[tgt] = ident
    np.add.at(count, tgt, 1)
    UFUNC.get(reduce, np.add).at(out, tgt, s)
    if reduce == "mean":
        out = out / np.maximum(count, 1)
    return out


DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_reduction_matches_numpy(device, dtype):
    dt = getattr(clgrad, dtype)
    if dt is clgrad.float64 and not device.has_fp64:
        pytest.skip("the device has no float64")        # a device property
    rng = np.random.default_rng(0)
    x = rng.integers(1, 5, (4, 6)).astype(np.float64)
    src = rng.integers(1, 4, (5, 6)).astype(np.float64)
    idx = rng.integers(0, 4, (5, 6))
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            for dim, ix in ((0, idx), (1, idx[:4, :3] % 6)):
                got = clgrad.tensor(x).to(dt).scatter_reduce(
                    dim, clgrad.tensor(ix), clgrad.tensor(src).to(dt), reduce,
                    include_self=include_self)
                want = _np_scatter_reduce(x, dim, ix, src, reduce, include_self)
                if dt.kind != "f" and reduce == "mean":
                    want = np.floor(want)
                if dtype == "uint8":
                    want = np.mod(want, 256)
                tol = 1e-2 if dt.itemsize == 2 and dt.kind == "f" else 1e-6
                np.testing.assert_allclose(got.to(clgrad.float64).numpy(), want, rtol=tol,
                                           err_msg=f"{reduce} include_self={include_self}")


def test_bool_and_nan(device):
    x = clgrad.tensor([True, False, True])
    idx = clgrad.tensor([0, 1, 1])
    src = clgrad.tensor([False, True, False])
    assert x.scatter_reduce(0, idx, src, "amax").tolist() == [True, True, True]
    assert x.scatter_reduce(0, idx, src, "prod").tolist() == [False, False, True]
    y = clgrad.tensor([1.0, 2.0]).scatter_reduce(0, clgrad.tensor([0]),
                                                 clgrad.tensor([float("nan")]), "amax")
    assert np.isnan(y[0].item()) and y[1].item() == 2.0           # NaN propagates, as torch


def test_gradients(device):
    rng = np.random.default_rng(1)
    idx = clgrad.tensor(rng.integers(0, 3, (4, 3)))
    x = clgrad.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    s = clgrad.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    for reduce in ("sum", "mean", "prod", "amax", "amin"):
        for include_self in (True, False):
            assert gradcheck(lambda x, s: x.scatter_reduce(0, idx, s, reduce,
                                                           include_self=include_self), (x, s))
    # prod with zeros: each factor's gradient is the product of the others, zeros included
    x0 = clgrad.tensor([[0.0, 2.0]], dtype=clgrad.float64, requires_grad=True)
    s0 = clgrad.tensor([[3.0, 0.0], [5.0, 0.0]], dtype=clgrad.float64, requires_grad=True)
    clgrad.zeros(1, 2, dtype=clgrad.float64).add(x0).scatter_reduce(
        0, clgrad.zeros(2, 2, dtype=clgrad.int64), s0, "prod").sum().backward()
    assert x0.grad.tolist() == [[15.0, 0.0]]
    assert s0.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    # amax ties share the gradient evenly
    t = clgrad.tensor([1.0], dtype=clgrad.float64, requires_grad=True)
    u = clgrad.tensor([1.0, 0.5], dtype=clgrad.float64, requires_grad=True)
    t.scatter_reduce(0, clgrad.tensor([0, 0]), u, "amax").sum().backward()
    assert t.grad.tolist() == [0.5] and u.grad.tolist() == [0.5, 0.0]


def test_index_reduce_and_scatter_multiply(device):
    x = clgrad.ones(3, 2)
    src = clgrad.tensor([[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
    assert x.index_reduce(0, clgrad.tensor([0, 0, 2]), src, "mean",
                          include_self=False).tolist() == [[3.0, 4.0], [1.0, 1.0], [6.0, 7.0]]
    assert x.index_reduce(0, clgrad.tensor([0, 0, 2]), src, "prod").tolist() == \
        [[8.0, 15.0], [1.0, 1.0], [6.0, 7.0]]
    y = clgrad.ones(2, 3)
    y.scatter_(1, clgrad.tensor([[0, 0], [2, 1]]), clgrad.tensor([[2.0, 3.0], [4.0, 5.0]]),
               reduce="multiply")
    assert y.tolist() == [[6.0, 1.0, 1.0], [1.0, 5.0, 4.0]]


def test_errors():
    x = clgrad.ones(3)
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean"):
        x.scatter_reduce(0, clgrad.tensor([0]), clgrad.ones(1), "max")
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        x.scatter_reduce(0, clgrad.tensor([0]), clgrad.ones(1, dtype=clgrad.int64), "sum")
    with pytest.raises(RuntimeError, match="index_reduce"):
        x.index_reduce(0, clgrad.tensor([0]), clgrad.ones(1), "sum")


def test_mean_of_bool_is_refused_as_torch(device):
    """torch has no bool kernel for the mean (the other reductions take bools): found by the
    differential test's scatter family."""
    b = clgrad.tensor([True, False])
    with pytest.raises(NotImplementedError, match="reduce_mean\" not implemented for 'Bool'"):
        b.scatter_reduce(0, clgrad.tensor([0]), b, "mean", include_self=False)
    assert b.scatter_reduce(0, clgrad.tensor([0]), b, "sum").tolist() == [True, False]


def test_bool_mean_and_bounds_in_torchs_order(device):
    """torch zeroes the targets first without self (index_fill_, which checks the bounds), and
    picks the kernel by dtype before its loop checks them with self."""
    b = clgrad.tensor([True, False, True])
    with pytest.raises(RuntimeError, match="out of bounds"):
        b[3:3].scatter_reduce(0, clgrad.tensor([0, 0, 0]), b, "mean", include_self=False)
    with pytest.raises(NotImplementedError, match="reduce_mean"):
        clgrad.tensor(True).scatter_reduce(0, clgrad.tensor(1), clgrad.tensor(True), "mean")
