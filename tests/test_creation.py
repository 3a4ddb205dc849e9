"""Creation ops, random numbers (same numbers for the same seed on any device), repr."""
import numpy as np
import pytest

import clgrad
from helpers import all_dtypes, assert_close, to_np


def test_tensor_infers_dtypes(device):
    assert clgrad.tensor([1, 2]).dtype is clgrad.int64
    assert clgrad.tensor([1.0, 2]).dtype is clgrad.float32
    assert clgrad.tensor([True]).dtype is clgrad.bool
    assert clgrad.tensor(np.zeros(2, np.float64)).dtype is clgrad.float64 or not device.has_fp64
    assert clgrad.tensor(np.zeros(2, np.int32)).dtype is clgrad.int32
    assert clgrad.tensor([[1, 2], [3, 4]], dtype=clgrad.float16).tolist() == [[1, 2], [3, 4]]
    assert clgrad.tensor([]).shape == (0,)
    assert clgrad.tensor(clgrad.tensor([1.5])).tolist() == [1.5]
    clgrad.set_default_dtype(clgrad.float64 if device.has_fp64 else clgrad.float32)
    assert clgrad.tensor([1.0]).dtype is clgrad.get_default_dtype()
    with pytest.raises(ValueError):
        clgrad.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        clgrad.tensor(["a"])


def test_filled_tensors(device):
    for dt in all_dtypes(device):
        assert clgrad.zeros(2, 3, dtype=dt).tolist() == [[0] * 3] * 2
        assert clgrad.ones((2,), dtype=dt).tolist() == [1, 1]
        assert clgrad.full((2, 2), 1, dtype=dt).tolist() == [[1, 1], [1, 1]]
        like = clgrad.ones_like(clgrad.empty(3, dtype=dt))
        assert like.dtype is dt and like.tolist() == [1] * 3
    assert clgrad.full((2,), 7).dtype is clgrad.int64
    assert clgrad.full((2,), 7.5).dtype is clgrad.float32
    assert clgrad.full((), True).dtype is clgrad.bool
    assert clgrad.zeros(0, 4).shape == (0, 4)
    assert clgrad.zeros(()).shape == ()
    z = clgrad.zeros_like(clgrad.ones(2, 2), dtype=clgrad.int32)
    assert z.dtype is clgrad.int32
    assert clgrad.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert clgrad.eye(3, dtype=clgrad.int64).sum().item() == 3
    x = clgrad.zeros(2, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        clgrad.zeros(2, dtype=clgrad.int64, requires_grad=True)
    with pytest.raises(RuntimeError, match="negative dimension"):
        clgrad.zeros(-1)
    assert clgrad.ones(2).new_zeros(3).tolist() == [0.0] * 3
    assert clgrad.ones(2, dtype=clgrad.int32).new_tensor([1, 2]).dtype is clgrad.int32


def test_ranges(device):
    assert clgrad.arange(5).tolist() == list(range(5))
    assert clgrad.arange(2, 11, 3).tolist() == [2, 5, 8]
    assert clgrad.arange(5, 0, -2).tolist() == [5, 3, 1]
    assert_close(clgrad.arange(0, 1, 0.1), np.arange(0, 1, 0.1))
    assert clgrad.arange(0).shape == (0,)
    assert clgrad.arange(3, dtype=clgrad.float16).tolist() == [0.0, 1.0, 2.0]
    assert_close(clgrad.linspace(-1, 1, 7), np.linspace(-1, 1, 7))
    assert clgrad.linspace(0, 1, 1).tolist() == [0.0]
    assert clgrad.linspace(0, 1, 0).shape == (0,)
    assert clgrad.linspace(0, 10, 6, dtype=clgrad.int64).tolist() == [0, 2, 4, 6, 8, 10]
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        clgrad.arange(0, 1, 0)


def test_random_is_seeded_and_well_distributed(device):
    clgrad.manual_seed(123)
    a = clgrad.rand(100_000)
    clgrad.manual_seed(123)
    b = clgrad.rand(100_000)
    assert np.array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), clgrad.rand(100_000).numpy())
    u = a.numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    n = clgrad.randn(200_000).numpy()
    assert abs(n.mean()) < 0.01 and abs(n.std() - 1) < 0.01
    i = clgrad.randint(-3, 4, (50_000,)).numpy()
    assert i.min() == -3 and i.max() == 3 and set(np.unique(i)) == set(range(-3, 4))
    g = clgrad.Generator().manual_seed(5)
    x = clgrad.randn(10, generator=g)
    g.manual_seed(5)
    assert np.array_equal(x.numpy(), clgrad.randn(10, generator=g).numpy())
    state = g.get_state()
    y = clgrad.rand(4, generator=g)
    g.set_state(state)
    assert np.array_equal(y.numpy(), clgrad.rand(4, generator=g).numpy())
    p = clgrad.randperm(1000).numpy()
    assert sorted(p.tolist()) == list(range(1000))
    for dt in (clgrad.float16, clgrad.bfloat16, clgrad.float64 if device.has_fp64 else
               clgrad.float32):
        r = to_np(clgrad.rand(1000, dtype=dt))
        assert r.min() >= 0 and r.max() < 1
    t = clgrad.empty(1000).uniform_(-2, -1)
    assert -2 <= t.min().item() and t.max().item() < -1
    t.normal_(5, 0.1)
    assert abs(t.mean().item() - 5) < 0.05
    b = clgrad.empty(10_000).bernoulli_(0.25)
    assert abs(b.mean().item() - 0.25) < 0.02


def test_philox_matches_a_host_implementation(device):
    """The generator is pure integer arithmetic, so a numpy Philox4x32-10 reproduces it: the
    same numbers on every device."""
    def philox(counter, seed):
        M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
        c = [counter & 0xFFFFFFFF, counter >> 32, 0, 0]
        k = [seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF]
        for _ in range(10):
            p0, p1 = M0 * c[0], M1 * c[2]
            c = [((p1 >> 32) ^ c[1] ^ k[0]) & 0xFFFFFFFF, p1 & 0xFFFFFFFF,
                 ((p0 >> 32) ^ c[3] ^ k[1]) & 0xFFFFFFFF, p0 & 0xFFFFFFFF]
            k = [(k[0] + W0) & 0xFFFFFFFF, (k[1] + W1) & 0xFFFFFFFF]
        return c
    g = clgrad.Generator().manual_seed(42)
    got = clgrad.rand(8, generator=g).numpy()
    want = np.array([(philox(i, 42)[0] >> 8) * 2.0 ** -24 for i in range(8)], np.float32)
    assert np.array_equal(got, want)


def test_repr_like_torch(device):
    assert repr(clgrad.tensor([1.0, 2.0, 3.0])) == "tensor([1., 2., 3.])"
    assert repr(clgrad.tensor([1.5, 2.25])) == "tensor([1.5000, 2.2500])"
    assert repr(clgrad.tensor(3.0)) == "tensor(3.)"
    assert repr(clgrad.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(clgrad.tensor([True, False])) == "tensor([ True, False])"
    assert repr(clgrad.tensor([1, 2], dtype=clgrad.int32)) == \
        "tensor([1, 2], dtype=clgrad.int32)"
    assert repr(clgrad.tensor([1e-5, 1e5])) == "tensor([1.0000e-05, 1.0000e+05])"
    assert repr(clgrad.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(clgrad.tensor([[1.0, 2.0], [3.0, 4.0]])) == \
        "tensor([[1., 2.],\n        [3., 4.]])"
    x = clgrad.tensor([1.0], requires_grad=True)
    assert repr(x) == "tensor([1.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2.], grad_fn=<MulBackward0>)"
    assert repr(clgrad.tensor([float("nan"), float("inf")])) == "tensor([nan, inf])"
    assert "..." in repr(clgrad.arange(2000))
    assert repr(clgrad.zeros(2).shape) == "clgrad.Size([2])"
    assert repr(clgrad.float16) == "clgrad.float16"


def test_size_keyword(device):
    """torch's size= keyword gives the shape (issue 22: it was swallowed and gave a 0-d tensor);
    size given both ways is torch's TypeError."""
    for fn in (clgrad.empty, clgrad.zeros, clgrad.ones, clgrad.rand, clgrad.randn):
        assert fn(size=(2, 3)).shape == (2, 3), fn.__name__
        assert fn(size=[4]).shape == (4,), fn.__name__
        assert fn(size=clgrad.Size([1, 2])).shape == (1, 2), fn.__name__
        assert fn(size=()).shape == (), fn.__name__
        with pytest.raises(TypeError, match="multiple values for argument 'size'"):
            fn(2, size=(2,))
    assert clgrad.zeros(size=(2,), dtype=clgrad.int32).tolist() == [0, 0]
    assert clgrad.full(size=(2,), fill_value=3).tolist() == [3, 3]
    assert clgrad.randint(0, 5, size=(3,)).shape == (3,)
    assert clgrad.randint(5, size=(3,)).shape == (3,)
    assert clgrad.randint(high=5, size=(2, 2)).shape == (2, 2)
    with pytest.raises(TypeError):
        clgrad.randint(0, 5, (2,), size=(2,))
    x = clgrad.ones(3, dtype=clgrad.int32)
    for name in ("new_zeros", "new_ones", "new_empty"):
        y = getattr(x, name)(size=(2, 2))
        assert y.shape == (2, 2) and y.dtype is clgrad.int32, name
        with pytest.raises(TypeError, match="multiple values for argument 'size'"):
            getattr(x, name)(2, size=(2,))
    assert x.new_zeros(size=[2]).tolist() == [0, 0]
    assert x.new_full(size=(2,), fill_value=7).tolist() == [7, 7]
