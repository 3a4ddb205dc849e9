"""Reductions over any set of dims, against numpy, on every dtype, layout, 0-d and empty inputs;
their gradients (including ties and zeros)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import clgrad
from helpers import (all_dtypes, assert_close, float_dtypes, grad_dtype, grad_tols, make,
                     random_array, to_np)

DIMS = [None, 0, 1, -1, (0, 2), (1, 2), (0, 1, 2)]


def _np_dims(d):
    return d if d is None or isinstance(d, int) else tuple(d)


def _sum_dtype(dt):
    return np.float64 if dt.kind == "f" else np.int64


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "amax", "amin"])
def test_reductions_match_numpy(device, op):
    rng = np.random.default_rng(0)
    ref = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "amax": np.max, "amin": np.min}[op]
    for dt in all_dtypes(device):
        if op == "mean" and dt.kind != "f":
            continue
        a = random_array((3, 4, 5), dt, rng, -1.5, 1.5)
        if op == "prod" and dt.kind in "iu":
            a = random_array((3, 4, 5), dt, rng, 0, 0.2)
        for layout in ("contiguous", "transposed", "strided"):
            x = make(a, dt, device, layout)
            for dim in DIMS:
                for keepdim in (False, True):
                    if op in ("amax", "amin"):
                        got = getattr(x, op)(() if dim is None else dim, keepdim)
                    else:
                        got = getattr(x, op)(dim, keepdim=keepdim) if dim is not None else \
                            getattr(x, op)()
                        if dim is None and keepdim:
                            continue
                    want = ref(a.astype(_sum_dtype(dt)) if op in ("sum", "prod", "mean")
                               else a, axis=_np_dims(dim), keepdims=keepdim)
                    if op in ("sum", "prod") and dt.kind in "iub":
                        assert got.dtype is clgrad.int64
                    rt = {clgrad.float16: 2e-3, clgrad.bfloat16: 2e-2}.get(dt, 2e-5)
                    assert_close(got, np.asarray(want), got.dtype, rtol=rt, atol=rt)


def test_sum_of_large_inputs_uses_split_rows(device):
    a = np.random.default_rng(1).standard_normal(1_000_003).astype(np.float32)
    x = clgrad.tensor(a)
    assert abs(x.sum().item() - a.astype(np.float64).sum()) < 1e-2
    m = np.random.default_rng(2).standard_normal((3, 200_001)).astype(np.float32)
    assert_close(clgrad.tensor(m).sum(1), m.astype(np.float64).sum(1), rtol=1e-4, atol=1e-3)
    assert_close(clgrad.tensor(m).t().sum(0), m.astype(np.float64).sum(1), rtol=1e-4, atol=1e-3)
    h = clgrad.tensor(a[:100_000], dtype=clgrad.float16)
    assert abs(h.sum().item() - to_np(h).astype(np.float64).sum()) < 1.0


def test_max_min_with_indices(device):
    a = np.array([[1.0, 5.0, 5.0, 2.0], [7.0, 0.0, 7.0, 0.5], [3.0, 3.0, 3.0, 3.0]])
    for dt in all_dtypes(device):
        if dt is clgrad.bool:
            continue
        x = clgrad.tensor(a, dtype=dt)
        v, i = x.max(1)
        assert to_np(v).tolist() == [5.0, 7.0, 3.0]
        assert i.tolist() == [1, 0, 0]               # first of the ties, like torch
        v, i = x.min(0, keepdim=True)
        assert i.tolist() == [[0, 1, 2, 1]] and tuple(v.shape) == (1, 4)
        assert x.argmax().item() == 4 and x.argmin(1).tolist() == [0, 1, 0]
        assert x.max().item() == 7.0
    n = clgrad.tensor([1.0, float("nan"), 3.0])
    assert np.isnan(n.max().item()) and n.argmax().item() == 1 and np.isnan(n.amin().item())


def test_all_any_var_std_logsumexp_norm(device):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 6))
    x = clgrad.tensor(a, dtype=clgrad.float32)
    assert x.gt(-10).all().item() is True and not bool(x.gt(10).any())
    assert (x > 0).any(1).tolist() == (a > 0).any(1).tolist()
    assert clgrad.tensor([1, 0, 2]).all().item() is False
    assert_close(x.var(1), a.var(1, ddof=1), rtol=1e-5)
    assert_close(x.var(0, correction=0), a.var(0), rtol=1e-5)
    assert_close(x.std(), np.std(a, ddof=1), rtol=1e-5)
    assert_close(x.std(1, keepdim=True, unbiased=False), a.std(1, keepdims=True), rtol=1e-5)
    big = np.array([[1000.0, 1000.0], [-1000.0, -1e30]])
    assert_close(clgrad.tensor(big).logsumexp(1), [1000 + np.log(2), -1000.0], rtol=1e-6)
    assert clgrad.tensor([float("-inf")] * 2).logsumexp(0).item() == float("-inf")
    assert_close(x.norm(), np.linalg.norm(a), rtol=1e-5)
    assert_close(x.norm(1, dim=1), np.abs(a).sum(1), rtol=1e-5)
    assert_close(x.norm(float("inf"), 0), np.abs(a).max(0), rtol=1e-6)
    assert_close(x.norm(3, 1), (np.abs(a) ** 3).sum(1) ** (1 / 3), rtol=1e-5)


def test_zero_dim_and_empty(device):
    s = clgrad.tensor(2.5)
    assert s.sum().item() == 2.5 and s.sum(0).item() == 2.5 and s.amax(0).item() == 2.5
    assert s.max(0).indices.item() == 0
    e = clgrad.zeros(0, 3)
    assert e.sum().item() == 0 and e.sum(0).tolist() == [0.0] * 3 and e.prod(0).tolist() == [1.0] * 3
    assert e.sum(1).shape == (0,)
    assert np.isnan(e.mean().item())
    with pytest.raises(IndexError):
        e.max(0)
    with pytest.raises(RuntimeError):
        e.amax()
    with pytest.raises(RuntimeError, match="mean"):
        clgrad.tensor([1, 2]).mean()
    with pytest.raises(IndexError, match="Dimension out of range"):
        clgrad.zeros(2, 3).sum(2)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        clgrad.zeros(2, 3).sum((0, 0))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_sum_any_dims_hypothesis(shape, data):
    from conftest import DEVICES
    a = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    keep = data.draw(st.booleans())
    x = clgrad.tensor(a, device=DEVICES[0])
    if data.draw(st.booleans()) and len(shape) >= 2:
        x = clgrad.tensor(np.ascontiguousarray(a.T), device=DEVICES[0]).t() if len(shape) == 2 else x
    got = x.sum(tuple(dims), keepdim=keep) if dims else x.sum()
    want = a.astype(np.float64).sum(axis=tuple(dims) if dims else None,
                                     keepdims=keep if dims else False)
    assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_reduction_gradients(device):
    dt = grad_dtype(device)
    tol = grad_tols(device)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 4))
    fns = [
        lambda t: t.sum(), lambda t: t.sum(1), lambda t: t.sum((0, 1), keepdim=True),
        lambda t: t.mean(0), lambda t: t.mean(), lambda t: t.prod(1), lambda t: t.prod(),
        lambda t: t.amax(1), lambda t: t.amin(), lambda t: t.max(0).values,
        lambda t: t.min(1, keepdim=True)[0], lambda t: t.max(), lambda t: t.var(1),
        lambda t: t.std(0, correction=0), lambda t: t.logsumexp(1), lambda t: t.norm(),
        lambda t: t.norm(1, 0), lambda t: t.norm(3, 1), lambda t: t.norm(float("inf")),
        lambda t: t.sum_to_size(1, 4),
    ]
    for layout in ("contiguous", "transposed"):
        x = make(a, dt, device, layout, requires_grad=True)
        for f in fns:
            assert clgrad.autograd.gradcheck(f, (x,), **tol)
        for f in fns[:7] + fns[12:16]:
            assert clgrad.autograd.gradgradcheck(f, (x,), **tol)


def test_reduction_gradient_special_cases(device):
    x = clgrad.tensor([[2.0, 0.0, 3.0], [0.0, 0.0, 1.0], [1.0, 2.0, 4.0]], requires_grad=True)
    x.prod(1).sum().backward()
    assert x.grad.tolist() == [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [8.0, 4.0, 2.0]]
    y = clgrad.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    y.amax().backward()                                    # ties share the gradient
    assert y.grad.tolist() == [0.0, 0.5, 0.5, 0.0]
    z = clgrad.tensor([[1.0, 3.0, 3.0]], requires_grad=True)
    z.max(1).values.sum().backward()                       # max(dim): to the chosen index
    assert z.grad.tolist() == [[0.0, 1.0, 0.0]]
    w = clgrad.zeros(3, requires_grad=True)
    w.norm().backward()                                    # no NaN at zero
    assert w.grad.tolist() == [0.0, 0.0, 0.0]
    assert not clgrad.tensor([1.0], requires_grad=True).argmax().requires_grad


def test_amax_amin_pass_nan_gradients_to_every_element(device):
    # var() of one element is NaN (correction 1), so is its gradient; torch's amax / amin
    # backward multiplies by the mask of the extremes, so the NaN reaches every element, while
    # max() / min() without dim fill only the chosen places (torch on CPU)
    dt = grad_dtype(device)
    x = clgrad.tensor([[1.0, 5.0], [3.0, 2.0]], dtype=dt, device=device, requires_grad=True)
    for f in (lambda t: t.amax().var(), lambda t: t.amin().std(),
              lambda t: t.amax(1).sum().var(), lambda t: t.amin((0, 1), keepdim=True).var()):
        g, = clgrad.autograd.grad(f(x), x)
        assert np.isnan(to_np(g)).all()
    g, = clgrad.autograd.grad(x.max().var(), x)
    assert np.array_equal(np.isnan(to_np(g)), [[False, True], [False, False]])
    assert to_np(g)[0, 0] == 0


@pytest.mark.parametrize("p", [3, 4, 1.5, 0.5, -1])
def test_p_norm_gradient_at_zero(device, p):
    # torch's norm_backward: zero where an element or the whole norm is zero (the composed
    # |x|^p summed to the power 1/p gave inf * 0 = NaN there)
    dt = grad_dtype(device)
    a = np.array([[0.0, 1.0, -2.0], [0.0, 0.0, 0.0]])
    x = clgrad.tensor(a, dtype=dt, device=device, requires_grad=True)
    clgrad.norm(x, p=p, dim=1).sum().backward()
    with np.errstate(divide="ignore"):
        n = (np.abs(a[0]) ** p).sum() ** (1 / p)        # p = -1: 0, a zero element in the row
    want = np.zeros_like(a)
    want[0, 1:] = np.sign(a[0, 1:]) * np.abs(a[0, 1:]) ** (p - 1) * n ** (1 - p)
    assert_close(x.grad, want, dt)
    x.grad = None
    clgrad.linalg.vector_norm(x[1], ord=p).backward()
    assert x.grad.tolist() == [[0.0] * 3] * 2
    # away from zero: finite differences, both modes
    b = make(np.random.default_rng(5).uniform(0.5, 2, (3, 4)) * [1, -1, 1, -1], dt, device,
             requires_grad=True)
    tol = grad_tols(device)
    f = lambda t: t.norm(p, dim=(0, 1) if p < 1 else 1)  # noqa: E731
    assert clgrad.autograd.gradcheck(f, (b,), check_forward_ad=True, **tol)
    assert clgrad.autograd.gradgradcheck(f, (b,), **tol)


def test_zero_norm_requires_grad_without_a_gradient(device):
    # as torch: norm with p = 0 (a count) is recorded, and gives no gradient
    x = clgrad.tensor([[0.0, 1.5], [2.0, -1.0]], requires_grad=True, device=device)
    y = x.norm(0, dim=1)
    assert y.tolist() == [1.0, 2.0] and y.requires_grad
    y.sum().backward()
    assert x.grad is None


def test_std_var_of_integer_tensors_raise_runtime_error(device):
    # torch checks the dtype first: a dim out of range or repeated does not turn it into an
    # IndexError
    x = clgrad.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    for f, op in ((lambda: x.std(), "std and var"), (lambda: x.var(5), "std and var"),
                  (lambda: x.std((0, -2)), "std and var"),
                  (lambda: clgrad.tensor(3, device=device).var(1), "std and var"),
                  (lambda: (x > 2).std(-3), "std and var"),
                  (lambda: clgrad.var_mean(x, 5), "var_mean"),
                  (lambda: clgrad.std_mean(x, dim=0), "std_mean")):
        with pytest.raises(RuntimeError, match=f"{op} only support floating point"):
            f()
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.float().var(5)


ODD_SHAPES = [(3, 4, 5), (2, 6, 5, 4), (3, 7, 11), (5, 300), (300, 3), (2, 3, 1, 257)]


@pytest.mark.parametrize("op", ["sum", "amax", "argmax"])
def test_reductions_over_odd_shapes_on_both_paths(device, code_paths, op):
    """Every combination of dims of shapes whose sizes are odd, tiny or just past a work-group:
    work-groups of any count (below the SIMD width too), strided and staged reductions."""
    import itertools
    rng = np.random.default_rng(3)
    for shape in ODD_SHAPES:
        a = rng.standard_normal(shape).astype(np.float32)
        x = clgrad.tensor(a)
        for r in range(1, len(shape) + 1):
            for dims in itertools.combinations(range(len(shape)), r):
                if op == "argmax":
                    if r > 1:
                        continue
                    got = x.argmax(dims[0])
                    assert np.array_equal(to_np(got), a.argmax(dims[0])), (shape, dims)
                    continue
                got = getattr(x, op)(dims)
                want = (np.sum if op == "sum" else np.max)(a.astype(np.float64), axis=dims)
                assert_close(got, want, rtol=2e-5, atol=2e-5 * np.sqrt(a.size))
