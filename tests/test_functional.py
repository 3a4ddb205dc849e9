"""clgrad.autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp with torch's nesting and
errors, checked against finite differences and against each other."""
import numpy as np
import pytest

import clgrad
from clgrad.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp
from clgrad.autograd.gradcheck import numerical_jacobian
from helpers import grad_dtype


def _rand(device, *shape, seed=0):
    rng = np.random.default_rng(seed)
    return clgrad.tensor(rng.uniform(-1, 1, size=shape), dtype=grad_dtype(device))


def _tol(device, fd=False):
    """Tolerances in grad_dtype(device); looser against finite differences."""
    if not device.has_fp64:
        return dict(rtol=5e-2, atol=5e-2)
    return dict(rtol=1e-5, atol=1e-6) if fd else dict(rtol=1e-6, atol=1e-7)


def _np(t):
    return t.detach().numpy()


def f1(x):                                  # one input, one output
    return (x.sin() * x.sum()).exp()


def f2(x, y):                               # two inputs, two outputs
    return x * y.sum(1), (x @ y).tanh()


def scalar(x, y):
    return (x.exp() * y.sum(1)).sum() + (x @ y).pow(2).sum()


def _fd_jacobian(fn, inputs):
    """numerical[out][in]: array of shape out.shape + in.shape."""
    inputs = tuple(t.detach().requires_grad_() for t in inputs)
    outs = fn(*inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    eps = 1e-6 if inputs[0].dtype == clgrad.float64 else 1e-2
    num = numerical_jacobian(fn, inputs, eps=eps)             # per input: (in numel, all outs)
    res, col = [], 0
    for o in outs:
        n = o.numel()
        res.append([num[j][:, col:col + n].T.reshape(tuple(o.shape) + tuple(x.shape))
                    for j, x in enumerate(inputs)])
        col += n
    return res


def test_jacobian_against_finite_differences(device):
    x = _rand(device, 3)
    j = jacobian(f1, x)
    assert isinstance(j, clgrad.Tensor) and j.shape == (3, 3) and not j.requires_grad
    np.testing.assert_allclose(_np(j), _fd_jacobian(f1, (x,))[0][0], **_tol(device, fd=True))
    xs = (_rand(device, 2, 3, seed=1), _rand(device, 3, 2, seed=2))
    j = jacobian(f2, xs)
    fd = _fd_jacobian(f2, xs)
    assert isinstance(j, tuple) and len(j) == 2 and all(len(r) == 2 for r in j)
    for i in range(2):
        for k in range(2):
            np.testing.assert_allclose(_np(j[i][k]), fd[i][k], **_tol(device, fd=True))
    assert j[0][1].shape == (2, 3, 3, 2) and j[1][0].shape == (2, 2, 2, 3)
    # a tuple of one input keeps its nesting, as in torch
    j = jacobian(lambda t: t * 2, (x,))
    assert isinstance(j, tuple) and len(j) == 1 and j[0].shape == (3, 3)
    j = jacobian(lambda t: (t * 2, t.sum()), x)
    assert isinstance(j, tuple) and j[1].shape == (3,)


def test_jacobian_strategies_and_vectorize(device):
    xs = (_rand(device, 2, 3, seed=3), _rand(device, 3, 2, seed=4))
    rev = jacobian(f2, xs)
    for kw in (dict(vectorize=True), dict(vectorize=True, strategy="forward-mode")):
        other = jacobian(f2, xs, **kw)
        for i in range(2):
            for k in range(2):
                np.testing.assert_allclose(_np(other[i][k]), _np(rev[i][k]), **_tol(device))


def test_jacobian_create_graph_and_strict(device):
    x = _rand(device, 3).requires_grad_()
    j = jacobian(f1, x, create_graph=True)
    assert j.requires_grad
    g, = clgrad.autograd.grad(j.sum(), x)                 # differentiable: second derivatives
    want = sum(_np(hessian(lambda t, i=i: f1(t)[i], x)) for i in range(3)).sum(0)
    np.testing.assert_allclose(_np(g), want, **_tol(device))
    ind = lambda a, b: a * 2                             # noqa: E731  independent of b
    z = jacobian(ind, (x, x))
    assert not z[1].numpy().any()
    with pytest.raises(RuntimeError, match="independent of input 1"):
        jacobian(ind, (x, x), strict=True)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        jacobian(lambda a: clgrad.ones(2), x, strict=True)
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True`"):
        jacobian(f1, x, strict=True, vectorize=True)
    with pytest.raises(AssertionError, match="Expected strategy"):
        jacobian(f1, x, strategy="sideways")
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        jacobian(f1, x, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        jacobian(f1, x, strategy="forward-mode", vectorize=True, create_graph=True)
    with pytest.raises(RuntimeError, match="`strict=True`"):
        jacobian(f1, x, strategy="forward-mode", vectorize=True, strict=True)
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        jacobian(f1, [x])
    with pytest.raises(TypeError, match="outputs of the user-provided function"):
        jacobian(lambda a: a.sum().item(), x)


def test_hessian(device):
    xs = (_rand(device, 2, 3, seed=5), _rand(device, 3, 2, seed=6))
    h = hessian(scalar, xs)
    assert len(h) == 2 and h[0][1].shape == (2, 3, 3, 2) and h[1][1].shape == (3, 2, 3, 2)
    # the Jacobian of the gradient, by finite differences
    grad_fn = lambda a, b: clgrad.autograd.grad(scalar(a, b), (a, b), create_graph=True)  # noqa
    fd = _fd_jacobian(grad_fn, xs)
    for i in range(2):
        for k in range(2):
            np.testing.assert_allclose(_np(h[i][k]), fd[i][k], **_tol(device, fd=True))
    fwd = hessian(scalar, xs, vectorize=True, outer_jacobian_strategy="forward-mode")
    for i in range(2):
        for k in range(2):
            np.testing.assert_allclose(_np(fwd[i][k]), _np(h[i][k]), **_tol(device))
    x = _rand(device, 4, seed=7)
    single = hessian(lambda t: (t ** 3).sum(), x)
    np.testing.assert_allclose(_np(single), np.diag(6 * x.numpy()), **_tol(device))
    with pytest.raises(RuntimeError, match="should contain a single element"):
        hessian(lambda t: t * 2, x)
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        hessian(lambda t: (t.sum(), t.sum()), x)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect"):
        hessian(lambda t: t.sum(), x, strict=True)         # linear: the jacobian is constant


def test_products_agree_with_full_matrices(device):
    xs = (_rand(device, 2, 3, seed=8), _rand(device, 3, 2, seed=9))
    j = jacobian(f2, xs)
    outs = f2(*xs)
    v_out = (_rand(device, 2, 3, seed=10), _rand(device, 2, 2, seed=11))
    v_in = (_rand(device, 2, 3, seed=12), _rand(device, 3, 2, seed=13))
    # vjp = vᵀ J
    out, r = vjp(f2, xs, v_out)
    assert isinstance(out, tuple) and not out[0].requires_grad
    for k in range(2):
        want = sum(np.tensordot(_np(v_out[i]), _np(j[i][k]), axes=v_out[i].ndim)
                   for i in range(2))
        np.testing.assert_allclose(_np(r[k]), want, **_tol(device))
    # jvp = J v
    out, r = jvp(f2, xs, v_in)
    np.testing.assert_allclose(_np(out[1]), _np(outs[1]), **_tol(device))
    for i in range(2):
        want = sum(np.tensordot(_np(j[i][k]), _np(v_in[k]), axes=v_in[k].ndim) for k in range(2))
        np.testing.assert_allclose(_np(r[i]), want, **_tol(device))
    # hvp = H v and vhp = vᵀ H, from the full Hessian
    h = hessian(scalar, xs)
    out, r_hvp = hvp(scalar, xs, v_in)
    _, r_vhp = vhp(scalar, xs, v_in)
    assert out.shape == () and out.item() == pytest.approx(scalar(*xs).item())
    for i in range(2):
        hv = sum(np.tensordot(_np(h[i][k]), _np(v_in[k]), axes=2) for k in range(2))
        vh = sum(np.tensordot(_np(v_in[k]), _np(h[k][i]), axes=2) for k in range(2))
        np.testing.assert_allclose(_np(r_hvp[i]), hv, **_tol(device))
        np.testing.assert_allclose(_np(r_vhp[i]), vh, **_tol(device))


def test_single_tensors_and_defaults(device):
    x = _rand(device, 3, seed=14)
    out, g = vjp(lambda t: (t * t).sum(), x)                  # v defaults to 1 for a scalar
    np.testing.assert_allclose(_np(g), 2 * x.numpy(), **_tol(device))
    one = clgrad.tensor([0.5], dtype=x.dtype)
    out, r = jvp(lambda t: t.exp(), one)                      # v defaults to 1 for one element
    np.testing.assert_allclose(_np(r), np.exp([0.5]), **_tol(device))
    out, r = hvp(lambda t: (t ** 4).sum(), one)
    np.testing.assert_allclose(_np(r), [12 * 0.25], **_tol(device))
    with pytest.raises(RuntimeError, match="v can only be None"):
        vjp(lambda t: t * 2, x)
    with pytest.raises(RuntimeError, match="v can only be None"):
        jvp(lambda t: t * 2, x)
    with pytest.raises(RuntimeError, match="v has invalid size"):
        jvp(lambda t: t * 2, x, x[:2])
    with pytest.raises(RuntimeError, match="Entry 1 in v has invalid size"):
        jvp(lambda a, b: a * b, (x, x), (x, x[:2]))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length"):
        vjp(lambda a, b: (a, b), (x, x), (x,))
    with pytest.raises(RuntimeError, match="independent of input 1"):
        vjp(lambda a, b: a * 2, (x, x), x, strict=True)
    # results are zeros, not None, for inputs the output does not depend on
    _, (ga, gb) = vjp(lambda a, b: a * 2, (x, x), x)
    assert not gb.numpy().any()


def test_create_graph_results_are_differentiable(device):
    x = _rand(device, 3, seed=15).requires_grad_()
    v = _rand(device, 3, seed=16)
    _, r = vjp(lambda t: t.sin(), x, v, create_graph=True)
    assert r.requires_grad
    g, = clgrad.autograd.grad(r.sum(), x)                     # d/dx sum(v cos x) = -v sin x
    np.testing.assert_allclose(_np(g), -v.numpy() * np.sin(x.detach().numpy()), **_tol(device))
    _, r = hvp(lambda t: (t ** 3).sum(), x, v, create_graph=True)
    g, = clgrad.autograd.grad(r.sum(), x)                     # d/dx sum(6 x v) = 6 v
    np.testing.assert_allclose(_np(g), 6 * v.numpy(), **_tol(device))
    # without create_graph nothing requires grad and the inputs are left alone
    out, r = jvp(lambda t: t.sin(), x, v)
    assert not out.requires_grad and not r.requires_grad and x.grad is None
