"""Issue 23's smaller names: the constants, clgrad.version, clgrad.accelerator,
clgrad._inductor.config, clgrad.random and nn.init.orthogonal_ (hard facts and numpy)."""
import math

import numpy as np
import pytest

import clgrad


def test_constants_are_python_floats():
    assert type(clgrad.inf) is float and clgrad.inf == math.inf
    assert type(clgrad.nan) is float and math.isnan(clgrad.nan)
    assert clgrad.pi == math.pi and clgrad.e == math.e
    assert clgrad.full((1,), -clgrad.inf).item() == -math.inf


def test_version():
    v = clgrad.version
    assert v.__version__ == clgrad.__version__
    assert v.cuda is None and v.hip is None and v.debug is False
    assert isinstance(v.git_version, str)


def test_accelerator(device):
    acc = clgrad.accelerator
    if clgrad.cuda.is_available():
        assert acc.is_available() and acc.current_accelerator() == clgrad.device("cuda")
        assert acc.device_count() == clgrad.cuda.device_count()
        i = acc.current_device_index()
        acc.set_device_index(i)
        with acc.device_index(i):
            assert acc.current_device_index() == i
        acc.synchronize()
        assert acc.memory_allocated() >= 0
    else:
        assert not acc.is_available() and acc.current_accelerator() is None
        assert acc.current_accelerator(check_available=True) is None
        assert acc.device_count() == 0
        for f in (acc.current_device_index, acc.synchronize, acc.empty_cache,
                  acc.memory_allocated):
            with pytest.raises(RuntimeError, match="none is available"):
                f()


def test_inductor_config():
    cfg = clgrad._inductor.config
    old = cfg.coordinate_descent_tuning
    cfg.coordinate_descent_tuning = True
    assert cfg.coordinate_descent_tuning is True
    cfg.coordinate_descent_tuning = old
    cfg.triton.unique_kernel_names = True
    with pytest.raises(AttributeError, match="does not exist"):
        cfg.no_such_flag = 1
    with pytest.raises(AttributeError):
        cfg.no_such_flag
    with pytest.raises(AttributeError):
        cfg.triton.no_such_flag = 1


def test_random_module(device):
    r = clgrad.random
    r.manual_seed(3)
    assert r.initial_seed() == 3
    state = r.get_rng_state()
    a = clgrad.rand(4).tolist()
    r.set_rng_state(state)
    assert clgrad.rand(4).tolist() == a
    r.manual_seed(3)
    with r.fork_rng(devices=[], device_type="cuda"):
        r.manual_seed(9)
        clgrad.randn(7)
    assert r.initial_seed() == 3 and clgrad.rand(4).tolist() == a
    r.manual_seed(3)
    with r.fork_rng(enabled=False):
        clgrad.rand(4)
    assert clgrad.rand(4).tolist() != a
    with pytest.raises(RuntimeError):       # the state is restored on an error, too
        with r.fork_rng():
            clgrad.rand(3)
            raise RuntimeError("x")
    s = r.seed()
    assert r.initial_seed() == s


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (4, 2, 3, 3), (2, 9, 1)])
def test_orthogonal(device, shape):
    clgrad.manual_seed(0)
    w = clgrad.empty(*shape)
    out = clgrad.nn.init.orthogonal_(w, gain=1.5)
    assert out is w and w.shape == shape
    m = w.numpy().reshape(shape[0], -1).astype(np.float64) / 1.5
    rows, cols = m.shape
    gram = m @ m.T if rows <= cols else m.T @ m
    np.testing.assert_allclose(gram, np.eye(min(rows, cols)), atol=1e-5)


def test_orthogonal_errors_and_grad_free(device):
    with pytest.raises(ValueError, match="2 or more dimensions"):
        clgrad.nn.init.orthogonal_(clgrad.empty(3))
    e = clgrad.empty(0, 3)
    assert clgrad.nn.init.orthogonal_(e) is e
    p = clgrad.nn.Parameter(clgrad.empty(3, 3))
    clgrad.nn.init.orthogonal_(p)
    assert p.grad_fn is None and p.requires_grad
    g = clgrad.Generator().manual_seed(1)
    a = clgrad.nn.init.orthogonal_(clgrad.empty(3, 3), generator=g).tolist()
    g.manual_seed(1)
    assert clgrad.nn.init.orthogonal_(clgrad.empty(3, 3), generator=g).tolist() == a
