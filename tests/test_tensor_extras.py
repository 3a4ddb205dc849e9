"""The last pieces of torch.Tensor's surface: the inverse-CDF random fills (exponential_,
cauchy_, log_normal_, geometric_), the backend and layout flags, dim_order, is_set_to,
nonzero_static, as_strided_scatter, addbmm_, the unsafe_* splits."""
import math

import numpy as np
import pytest

import clgrad


def test_random_fills_have_their_distributions(device):
    clgrad.manual_seed(0)
    n = 100000
    x = clgrad.empty(n, device=device).exponential_(2.0)
    assert x.min().item() >= 0 and abs(x.mean().item() - 0.5) < 0.01
    c = clgrad.empty(n, dtype=clgrad.float64, device=device).cauchy_(1.0, 2.0)
    # half the mass within one scale of the median
    assert abs(((c - 1).abs() < 2).double().mean().item() - 0.5) < 0.01
    assert abs(c.median().item() - 1.0) < 0.05
    z = clgrad.empty(n, device=device).log_normal_(0.5, 0.3).log()
    assert abs(z.mean().item() - 0.5) < 0.01 and abs(z.std().item() - 0.3) < 0.01
    g = clgrad.empty(n, dtype=clgrad.int64, device=device).geometric_(0.25)
    assert g.min().item() == 1 and abs(g.double().mean().item() - 4.0) < 0.1
    # P(G = 1) = p
    assert abs((g == 1).double().mean().item() - 0.25) < 0.01
    for dt in (clgrad.float16, clgrad.bfloat16):
        assert clgrad.empty(10, dtype=dt, device=device).exponential_().dtype is dt
    # the same seed, the same draws; strided targets are filled through a copy
    clgrad.manual_seed(7)
    a = clgrad.empty(6, device=device).exponential_()
    clgrad.manual_seed(7)
    b = clgrad.zeros(6, 2, device=device)
    b[:, 1].exponential_()
    np.testing.assert_array_equal(a.numpy(), b[:, 1].numpy())
    assert b[:, 0].abs().sum().item() == 0


def test_random_fill_errors():
    with pytest.raises(RuntimeError, match="lambda > 0.0"):
        clgrad.empty(2).exponential_(-1)
    with pytest.raises(RuntimeError, match="floating point"):
        clgrad.empty(2, dtype=clgrad.int64).exponential_()
    with pytest.raises(RuntimeError, match="sigma > 0.0"):
        clgrad.empty(2).cauchy_(0, -1)
    with pytest.raises(RuntimeError, match="std > 0.0"):
        clgrad.empty(2).log_normal_(0, 0)
    with pytest.raises(RuntimeError, match=r"p to be in \(0, 1\)"):
        clgrad.empty(2).geometric_(1.5)
    x = clgrad.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.exponential_()


def test_flags_and_layout_queries(device):
    x = clgrad.arange(24.0, device=device).reshape(2, 3, 4)
    for flag in ("is_meta", "is_mps", "is_xpu", "is_nested", "is_quantized", "is_mkldnn",
                 "is_sparse_csr", "is_vulkan", "is_xla", "is_ipu", "is_maia", "is_mtia"):
        assert getattr(x, flag) is False
    assert x.is_distributed() is False
    assert x.dim_order() == (0, 1, 2) and x.permute(2, 0, 1).dim_order() == (1, 2, 0)
    assert x.is_set_to(x.view(2, 3, 4)) and not x.is_set_to(x.transpose(0, 1))
    assert not x.is_set_to(x.clone())
    assert x.to_dense() is x and x.const_data_ptr() == x.data_ptr()


def test_small_composites(device):
    t = clgrad.tensor([0, 3, 0, 5], device=device)
    assert t.nonzero_static(size=3).tolist() == [[1], [3], [-1]]
    assert t.nonzero_static(size=1, fill_value=9).tolist() == [[1]]
    assert clgrad.nonzero_static(clgrad.zeros(2, 2, device=device), size=1).tolist() == [[-1, -1]]
    s = clgrad.zeros(6, device=device).as_strided_scatter(clgrad.arange(3.0, device=device),
                                                          (3,), (2,), 1)
    assert s.tolist() == [0.0, 0.0, 0.0, 1.0, 0.0, 2.0]
    rng = np.random.default_rng(0)
    a, b1, b2 = rng.normal(size=(3, 2)), rng.normal(size=(4, 3, 5)), rng.normal(size=(4, 5, 2))
    m = clgrad.tensor(a, dtype=clgrad.float64, device=device)
    m.addbmm_(clgrad.tensor(b1, device=device, dtype=clgrad.float64),
              clgrad.tensor(b2, device=device, dtype=clgrad.float64), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(m.numpy(), 0.5 * a + 2.0 * np.einsum("bij,bjk->ik", b1, b2),
                               rtol=1e-12)
    x = clgrad.arange(10.0, device=device)
    assert [p.tolist() for p in x.unsafe_split([3, 7])] == [list(range(3)),
                                                            list(range(3, 10))]
    assert len(x.unsafe_chunk(3)) == 3 and x.unsafe_split(4)[2].tolist() == [8.0, 9.0]
    assert math.isclose(sum(p.sum().item() for p in x.unsafe_split_with_sizes([5, 5])), 45.0)


def test_deprecated_and_storage_methods(device):
    x = clgrad.arange(6.0, device=device)
    with pytest.warns(UserWarning, match="deprecated"):
        assert tuple(x.resize(2, 3).shape) == (2, 3)
    with pytest.warns(UserWarning, match="deprecated"):
        assert tuple(x.resize_as(clgrad.zeros(3, 2)).shape) == (3, 2)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="preserving the number"):
        x.resize(4)
    y = clgrad.zeros(2, device=device)
    assert y.set_(x).tolist() == x.tolist() and y.is_set_to(x)
    assert y.set_(x, 1, (2,), (2,)).tolist() == [1.0, 3.0]
    x[1] = 10.0                          # one storage: the view sees the write
    assert y.tolist() == [10.0, 3.0]
    assert y.set_().numel() == 0
    with pytest.raises(RuntimeError, match="type"):
        clgrad.zeros(1, dtype=clgrad.int64).set_(x)

    class Sub(clgrad.Tensor):
        pass
    s = x.as_subclass(Sub)
    assert type(s) is Sub and s.tolist() == x.tolist()
    assert x.volatile is False and x.name is None
    assert x.hardshrink(2.5).tolist() == [0.0, 10.0, 0.0, 3.0, 4.0, 5.0]     # x[1] is 10 now
    assert x.record_stream(None) is None
    with pytest.raises(RuntimeError, match="linalg.solve"):
        x.solve(x)
