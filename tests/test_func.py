"""clgrad.func (torch.func): vmap against a Python loop, in_dims/out_dims, nesting, randomness;
grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian against closed forms; functional_call."""
import numpy as np
import pytest

import clgrad
from clgrad import func


def test_vmap(device):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 3)), rng.standard_normal(3)
    out = clgrad.vmap(lambda v, w: (v * w).sum(), in_dims=(0, None))(clgrad.tensor(x),
                                                                     clgrad.tensor(w))
    np.testing.assert_allclose(out.numpy(), x @ w, rtol=1e-12)
    cols = func.vmap(lambda v: v * 2, in_dims=1, out_dims=1)(clgrad.tensor(x))
    np.testing.assert_allclose(cols.numpy(), x * 2, rtol=1e-12)
    pair = func.vmap(lambda v: (v.sum(), v.max()))(clgrad.tensor(x))
    np.testing.assert_allclose(pair[0].numpy(), x.sum(1), rtol=1e-12)
    np.testing.assert_allclose(pair[1].numpy(), x.max(1), rtol=1e-12)
    outer = func.vmap(func.vmap(lambda a, b: a * b, in_dims=(None, 0)), in_dims=(0, None))
    np.testing.assert_allclose(outer(clgrad.tensor(x[:, 0]), clgrad.tensor(w)).numpy(),
                               np.outer(x[:, 0], w), rtol=1e-12)
    # gradients flow through the loop
    xt = clgrad.tensor(x, requires_grad=True)
    func.vmap(lambda v: (v ** 2).sum())(xt).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), 2 * x, rtol=1e-12)
    # randomness='same' gives every slice the same draw
    same = func.vmap(lambda v: v + clgrad.rand(()), randomness="same")(clgrad.zeros(3))
    assert len(set(same.tolist())) == 1
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        func.vmap(lambda a, b: a + b)(clgrad.ones(2), clgrad.ones(3))


def test_derivative_transforms(device):
    w = clgrad.tensor([0.5, -1.0, 2.0], dtype=clgrad.float64)
    wn = w.numpy()
    g = func.grad(lambda x: (x ** 3).sum())(w)
    np.testing.assert_allclose(g.numpy(), 3 * wn ** 2, rtol=1e-12)
    assert not g.requires_grad
    assert func.grad(func.grad(lambda x: x ** 3))(clgrad.tensor(2.0)).item() == 12.0
    ga, gb = func.grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(w, 2 * w)
    np.testing.assert_allclose(ga.numpy(), 2 * wn, rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), wn, rtol=1e-12)
    g, (val, aux) = func.grad_and_value(lambda x: ((x ** 2).sum(), x.max()), has_aux=True)(w)
    assert val.item() == pytest.approx((wn ** 2).sum()) and aux.item() == 2.0
    out, fn = func.vjp(lambda x: x.sin(), w)
    np.testing.assert_allclose(fn(clgrad.ones(3, dtype=clgrad.float64))[0].numpy(), np.cos(wn))
    _, t = func.jvp(lambda x: x.exp(), (w,), (clgrad.ones(3, dtype=clgrad.float64),))
    np.testing.assert_allclose(t.numpy(), np.exp(wn), rtol=1e-12)
    for jac in (func.jacrev, func.jacfwd):
        np.testing.assert_allclose(jac(lambda x: x.sin() * 2)(w).numpy(),
                                   np.diag(2 * np.cos(wn)), rtol=1e-12, atol=1e-15)
    h = func.hessian(lambda x: (x ** 3).sum())(w)
    np.testing.assert_allclose(h.numpy(), np.diag(6 * wn), rtol=1e-12, atol=1e-15)


def test_functional_call(device):
    lin = clgrad.nn.Linear(2, 1)
    x = clgrad.ones(3, 2)
    out = func.functional_call(lin, {"weight": clgrad.ones(1, 2), "bias": clgrad.zeros(1)}, (x,))
    assert out.reshape(-1).tolist() == [2.0, 2.0, 2.0]
    before = lin.weight.detach().clone()
    func.functional_call(lin, {"weight": clgrad.zeros(1, 2)}, x)
    assert np.array_equal(lin.weight.detach().numpy(), before.numpy())      # restored
