"""The autograd engine and the tensor side of torch.autograd: backward/grad, hooks and their order,
retain/create graph, saved tensors, Node inspection, memory, grad modes and threads."""
import gc
import threading

import numpy as np
import pytest

import clgrad
from clgrad import autograd
from clgrad.ops.elementwise import OPS, TABLE
from helpers import grad_dtype, make


def T(v, **kw):
    return clgrad.tensor(v, requires_grad=True, **kw)


# ---- tensor side ------------------------------------------------------------------------------
def test_requires_grad_flags(device):
    x = clgrad.ones(2)
    assert not x.requires_grad and x.is_leaf and x.grad_fn is None
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad
    y = T([1.0]) * 2
    assert y.requires_grad and not y.is_leaf and y.grad_fn.name() == "MulBackward0"
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="floating point"):
        clgrad.tensor([1, 2]).requires_grad_()
    assert clgrad.randn(2, requires_grad=True).requires_grad
    assert autograd.Variable(clgrad.ones(2), requires_grad=True).requires_grad


def test_grad_assignment_is_checked(device):
    x = T([1.0, 2.0])
    x.grad = clgrad.tensor([3.0, 4.0])
    assert x.grad.tolist() == [3.0, 4.0]
    with pytest.raises(RuntimeError, match="different size"):
        x.grad = clgrad.zeros(3)
    with pytest.raises(RuntimeError, match="different type"):
        x.grad = clgrad.zeros(2, dtype=clgrad.float16)
    with pytest.raises(TypeError):
        x.grad = [1.0, 2.0]
    x.grad = None
    assert x.grad is None


def test_backward_accumulates_and_broadcasts(device):
    x = T([1.0, 2.0, 3.0])
    b = T([0.5])
    (x * x + b).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0] and b.grad.tolist() == [3.0]
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0, 9.0]


def test_non_scalar_roots_and_several_roots(device):
    x = T([1.0, 2.0])
    y = x * x
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        y.backward()
    y.backward(clgrad.tensor([1.0, 10.0]))
    assert x.grad.tolist() == [2.0, 40.0]
    x.grad = None
    a, b = x * 2, x * x
    autograd.backward([a.sum(), b], [None, clgrad.tensor([1.0, 1.0])])
    assert x.grad.tolist() == [4.0, 6.0]
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(clgrad.ones(3))
    x.grad = None
    (x * 2).backward(clgrad.tensor([1, 2]))      # an integer gradient takes x's dtype, as torch
    assert x.grad.dtype is clgrad.float32 and x.grad.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="does not require grad"):
        clgrad.ones(2).sum().backward()


def test_backward_inputs_restricts_accumulation(device):
    x, w = T([1.0, 2.0]), T([3.0, 4.0])
    h = x * w
    loss = (h * h).sum()
    loss.backward(inputs=[w], retain_graph=True)
    assert x.grad is None and w.grad.tolist() == [2 * 3 * 1, 2 * 8 * 2]
    loss.backward(inputs=[h])                 # a non-leaf input gets .grad too
    assert h.grad.tolist() == [6.0, 16.0] and x.grad is None


def test_grad_function(device):
    x, y = T([2.0]), T([3.0])
    z = x * x * y
    gx, gy = autograd.grad(z, (x, y), retain_graph=True)
    assert gx.item() == 12.0 and gy.item() == 4.0 and x.grad is None
    unused = T([1.0])
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        autograd.grad(z, (x, unused), retain_graph=True)
    gx, gu = autograd.grad(z, (x, unused), allow_unused=True, retain_graph=True)
    assert gu is None
    gx, gu = autograd.grad(z, (x, unused), materialize_grads=True, retain_graph=True)
    assert gu.tolist() == [0.0]
    h = x * 3
    (gh,) = autograd.grad((h * h).sum(), h)           # gradient w.r.t. a non-leaf
    assert gh.tolist() == [12.0]


def test_higher_order_gradients(device):
    x = T([2.0])
    y = x ** 3
    (g1,) = autograd.grad(y, x, create_graph=True)
    (g2,) = autograd.grad(g1, x, create_graph=True)
    (g3,) = autograd.grad(g2, x)
    assert (g1.item(), g2.item(), g3.item()) == (12.0, 12.0, 6.0)
    z = T([0.5])
    g = autograd.grad(z.tanh().sum(), z, create_graph=True)[0]
    gg = autograd.grad(g.sum(), z)[0]
    t = np.tanh(0.5)
    assert abs(gg.item() - (-2 * t * (1 - t * t))) < 1e-6
    w = T([1.0, 2.0])
    loss = (w * w).sum()
    loss.backward(create_graph=True)
    assert w.grad.requires_grad
    w.grad.sum().backward()
    assert w.grad.tolist() == [4.0, 6.0]         # 2w plus d(sum 2w)/dw = 2


def test_freed_graph_raises_and_retain_graph_keeps_it(device):
    x = T([1.0, 2.0])
    y = (x.exp() * 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert np.allclose(x.grad.numpy(), 4 * np.exp([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    z = (x + 1).sum()                            # nothing saved: a second backward is fine
    z.backward()
    z.backward()


def test_saved_tensor_modified_in_place_is_caught(device):
    x = T([1.0, 2.0])
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    msg = str(info.value)
    assert "modified by an inplace operation" in msg and "ExpBackward0" in msg
    assert "version 1; expected version 0" in msg
    a = x * 1
    b = a * a
    a.mul_(2)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        b.sum().backward()


def test_inplace_on_leaf_and_views_of_leaves(device):
    x = T([1.0, 2.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x[0].mul_(2)
    with clgrad.no_grad():
        x.add_(1)
    assert x.tolist() == [2.0, 3.0] and x.is_leaf


def test_inplace_on_non_leaf_gives_torch_gradients(device):
    x, w = T([1.0, 2.0, 3.0]), T([2.0, 3.0, 4.0])
    y = x * 1
    y.mul_(w)                                    # the old y is needed for w's gradient
    y.exp_()
    y.sum().backward()
    e = np.exp(np.array([2.0, 6.0, 12.0]))
    assert np.allclose(x.grad.numpy(), e * [2, 3, 4]) and np.allclose(w.grad.numpy(), e * [1, 2, 3])
    assert y.grad_fn.name() == "ExpBackward0"


def test_inplace_on_views_rebases_the_base(device):
    x = T([1.0, 2.0, 3.0, 4.0])
    base = x.clone()
    v = base[1:3]
    v.mul_(10)
    assert base.grad_fn.name() == "CopySlices"
    assert v.grad_fn.name() == "AsStridedBackward0"
    (base * clgrad.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 20.0, 30.0, 4.0]
    # a view made before the base changed sees the new history
    x.grad = None
    b = x * 1
    first = b[0]
    b.mul_(3)
    first.sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 0.0, 0.0]
    # setitem on a non-leaf
    x.grad = None
    c = x * 1
    c[2] = c[0] * 5
    c.sum().backward()
    assert x.grad.tolist() == [6.0, 1.0, 0.0, 1.0]
    # multi-output views may not be modified in place
    with pytest.raises(RuntimeError, match="returns multiple views"):
        (x * 1).unbind(0)[0].add_(1)


def test_detach_and_data(device):
    x = T([1.0, 2.0])
    d = x.detach()
    assert not d.requires_grad and d._storage is x._storage
    d.add_(1)                                     # shares the version counter
    assert x._version == d._version == 1
    data = x.data
    assert not data.requires_grad and data._storage is x._storage
    y = x * 2
    y.detach_()
    assert y.is_leaf and not y.requires_grad and y.grad_fn is None


# ---- hooks -------------------------------------------------------------------------------------
def test_tensor_hooks_replace_gradients_and_can_be_removed(device):
    x = T([1.0, 2.0])
    h = x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [20.0, 20.0]
    h.remove()
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    y = x * 3
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    (y * y).sum().backward()
    assert seen == [[6.0, 12.0]]
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        clgrad.ones(1).register_hook(lambda g: g)


def test_retain_grad(device):
    x = T([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    assert y.grad.tolist() == [4.0, 8.0]
    z = x * 2
    (z * z).sum().backward()
    assert z.grad is None


def test_hook_order_is_torchs(device):
    order = []
    x = T([1.0])
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: order.append("tensor hook") or g * 10)
    node = y.grad_fn
    node.register_prehook(lambda go: order.append(("node prehook", go[0].item())) or
                          (go[0] * 100,))
    node.register_hook(lambda gi, go: order.append(("node hook", gi[0].item(), go[0].item())))
    x.register_post_accumulate_grad_hook(lambda t: order.append(("post accumulate",
                                                                 t.grad.item())))
    (y * 3).sum().backward()
    assert order == ["tensor hook", ("node prehook", 30.0), ("node hook", 6000.0, 3000.0),
                     ("post accumulate", 6000.0)]
    assert y.grad.item() == 30.0                 # retain_grad sees the tensor hook's result


def test_node_post_hook_can_replace_grad_inputs(device):
    x = T([1.0, 2.0])
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, None))
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_node_inspection(device):
    x = T([1.0, 2.0])
    w = T([3.0, 4.0])
    y = (x * w).sum()
    node = y.grad_fn
    assert node.name() == "SumBackward0"
    mul = node.next_functions[0][0]
    assert mul.name() == "MulBackward0"
    names = [n.name() if n is not None else None for n, _ in mul.next_functions]
    assert names == ["AccumulateGrad", "AccumulateGrad"]
    assert mul.next_functions[0][0].variable is x
    node.metadata["tag"] = 1
    assert y.grad_fn.metadata == {"tag": 1}
    e = x.exp()
    assert np.allclose(e.grad_fn._saved_result.detach().numpy(), e.detach().numpy()) if hasattr(
        type(e.grad_fn), "_saved_names") and type(e.grad_fn)._saved_names else True
    assert (x * 2).grad_fn.next_functions[0][0] is mul.next_functions[0][0]


# ---- memory ------------------------------------------------------------------------------------
def test_graph_memory_is_freed(device):
    gc.collect()
    x = clgrad.randn(1000, requires_grad=True)
    x.grad = clgrad.zeros(1000)
    base = clgrad.cl.memory_allocated()
    loss = ((x * 2).exp() * x).tanh().sum()
    assert clgrad.cl.memory_allocated() > base
    loss.backward()
    del loss
    assert clgrad.cl.memory_allocated() == base
    y = (x.sigmoid() * 3).sum()                  # dropping a graph without backward
    del y
    assert clgrad.cl.memory_allocated() == base


def test_training_loop_memory_is_flat(device):
    gc.disable()                                 # no reference cycles: nothing needs the collector
    try:
        w = clgrad.randn(64, 32, requires_grad=True)
        b = clgrad.zeros(32, requires_grad=True)
        x = clgrad.randn(16, 64)
        marks = []
        for step in range(1000):
            h = (x.unsqueeze(2) * w).sum(1) + b
            loss = (h.tanh() ** 2).mean()
            loss.backward()
            with clgrad.no_grad():
                w -= w.grad * 0.01
                b -= b.grad * 0.01
                w.grad.zero_()
                b.grad.zero_()
            if step in (10, 999):
                marks.append(clgrad.cl.memory_allocated())
        assert marks[0] == marks[1]
    finally:
        gc.enable()


def test_user_gradient_is_not_aliased_into_grad(device):
    x = T([1.0, 2.0])
    g = clgrad.tensor([5.0, 6.0])
    (x + 0).backward(g)
    x.grad.zero_()
    assert g.tolist() == [5.0, 6.0]


# ---- grad modes ---------------------------------------------------------------------------------
def test_grad_modes(device):
    x = T([1.0])
    with clgrad.no_grad():
        assert not clgrad.is_grad_enabled()
        assert not (x * 2).requires_grad
        with clgrad.enable_grad():
            assert (x * 2).requires_grad
    assert clgrad.is_grad_enabled()

    @clgrad.no_grad()
    def f():
        return x * 2

    @clgrad.no_grad
    def g():
        return x * 2

    assert not f().requires_grad and not g().requires_grad
    prev = clgrad.set_grad_enabled(False)
    assert not clgrad.is_grad_enabled()
    clgrad.set_grad_enabled(True)
    with clgrad.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert clgrad.is_grad_enabled()

    @clgrad.set_grad_enabled(False)
    def h():
        return clgrad.is_grad_enabled()

    assert h() is False and clgrad.is_grad_enabled()
    assert autograd.no_grad is clgrad.no_grad
    del prev

    def gen():
        yield clgrad.is_grad_enabled()
        yield clgrad.is_grad_enabled()

    assert list(clgrad.no_grad()(gen)()) == [False, False]


def test_inference_mode(device):
    x = T([1.0])
    with clgrad.inference_mode():
        assert clgrad.is_inference_mode_enabled() and not clgrad.is_grad_enabled()
        y = x * 2
        z = clgrad.ones(2)
        z.add_(1)                                 # in-place inside inference mode is fine
    assert y.is_inference() and not y.requires_grad and not x.is_inference()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside"):
        z.add_(1)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        (x * y).sum()
    assert (x + y).requires_grad                  # add saves nothing: allowed

    @clgrad.inference_mode()
    def f():
        return clgrad.is_inference_mode_enabled()

    assert f() and not clgrad.is_inference_mode_enabled()
    with clgrad.inference_mode(False):
        assert not clgrad.is_inference_mode_enabled()


def test_grad_mode_is_thread_local(device):
    results = {}
    barrier = threading.Barrier(2)

    def worker(name, enabled):
        with clgrad.set_grad_enabled(enabled):
            barrier.wait()
            x = T([1.0])
            y = x * 2
            barrier.wait()
            results[name] = (clgrad.is_grad_enabled(), y.requires_grad)

    threads = [threading.Thread(target=worker, args=("on", True)),
               threading.Thread(target=worker, args=("off", False))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {"on": (True, True), "off": (False, False)}


# ---- the lean path of elementwise ops -----------------------------------------------------------
# Contiguous operands of one shape and dtype (or a tensor and a Python number) are recorded by
# elementwise._make_op's `record` and differentiated by its `direct`, apart from Op.apply and the
# engine's general path; other layouts take the general path. Both must agree.
LEAN_OPS = [name for name, e in TABLE.items()
            if e.vjp is not None and e.out != "bool" and not e.nparams and "f" in e.exprs and
            (e.arity == 1 or e.operands == "TT")]


def _lean_and_general(name, device, scalar):
    e = TABLE[name]
    rng = np.random.default_rng(len(name))
    values = [rng.uniform(0.2, 0.9, (3, 4)) for _ in range(e.arity)]
    dt = grad_dtype(device)
    results = []
    for layout in ("contiguous", "transposed"):
        leaves = [make(v, dt, device, layout, requires_grad=True) for v in values]
        args = [leaves[0], 0.7] if scalar else leaves
        out = OPS[name].apply(*args)
        inputs = leaves[:1] if scalar else leaves
        first = autograd.grad(out.sum(), inputs, create_graph=True, allow_unused=True,
                              materialize_grads=True)
        second = ()
        if any(g.requires_grad for g in first):       # else the second derivative is zero
            second = autograd.grad(sum(g.sum() for g in first), inputs, allow_unused=True,
                                   materialize_grads=True)
        results.append((out, first, second))
    return results


@pytest.mark.parametrize("name", LEAN_OPS)
def test_lean_path_matches_general_path(device, name):
    for scalar in ((False, True) if TABLE[name].arity == 2 else (False,)):
        (lean, lean_1, lean_2), (general, general_1, general_2) = \
            _lean_and_general(name, device, scalar)
        assert type(lean.grad_fn)._direct_backward is not None     # the paths under test
        assert type(general.grad_fn)._direct_backward is None
        assert lean.grad_fn.name() == general.grad_fn.name()
        assert len(lean.grad_fn.next_functions) == len(general.grad_fn.next_functions)
        assert len(lean_2) == len(general_2)
        for a, b in [(lean, general)] + list(zip(lean_1 + lean_2, general_1 + general_2)):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.requires_grad == b.requires_grad
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6,
                                       atol=1e-9, equal_nan=True)


def test_lean_backward_checks_a_gradient_a_hook_replaced(device):
    # a post-hook may hand the next node a gradient of another shape: the lean backward then
    # takes the general path, which sums it back to the input's shape
    x = T([1.0, 2.0])
    y = x * 3.0
    z = y.sum()
    z.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0].reshape(1, 2),))
    z.backward()
    assert x.grad.shape == (2,) and x.grad.tolist() == [3.0, 3.0]


def test_lean_path_keeps_saved_tensor_rules(device):
    x = T([1.0, 2.0])
    a = x * 1
    b = a * a                                    # saves both operands
    assert type(b.grad_fn)._direct_backward is not None
    b.sum().backward(retain_graph=True)
    assert x.grad.tolist() == [2.0, 4.0]
    b.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        b.sum().backward()
    with clgrad.inference_mode():
        frozen = clgrad.ones(2)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved"):
        T([1.0, 2.0]) * frozen


@pytest.mark.parametrize("bias", [True, False])
def test_linear_gradients_reach_grad_without_copies(device, bias):
    """F.linear's weight gradient is computed in the weight's layout (addmm with a bias, mm
    without) and its bias gradient by a reduction without keepdim, so .grad keeps both as they
    are: no copy kernel runs."""
    from clgrad.autograd import profiler
    lin = clgrad.nn.Linear(5, 7, bias=bias).to(device)
    x = clgrad.randn(4, 5, device=device, requires_grad=True)
    with profiler.profile(use_device="cl") as prof:
        lin(x).square().sum().backward()
    assert [e.name for e in prof.function_events if e.name.startswith("copy")] == []
    for p in (lin.weight, lin.bias, x):
        if p is not None:
            assert p.grad.is_contiguous() and p.grad._base is None
    w, xn = (t.detach().numpy().astype(np.float64) for t in (lin.weight, x))
    b = lin.bias.detach().numpy().astype(np.float64) if bias else 0
    g = 2 * (xn @ w.T + b)
    np.testing.assert_allclose(lin.weight.grad.numpy(), g.T @ xn, rtol=1e-4, atol=1e-5)
    if bias:
        np.testing.assert_allclose(lin.bias.grad.numpy(), g.sum(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), g @ w, rtol=1e-4, atol=1e-5)


def test_linear_double_backward_through_the_weight_layout():
    x = clgrad.randn(3, 4, dtype=clgrad.float64, requires_grad=True)
    w = clgrad.randn(2, 4, dtype=clgrad.float64, requires_grad=True)
    b = clgrad.randn(2, dtype=clgrad.float64, requires_grad=True)
    f = lambda x, w, b: clgrad.nn.functional.linear(x, w, b).tanh()
    assert clgrad.autograd.gradcheck(f, (x, w, b))
    assert clgrad.autograd.gradgradcheck(f, (x, w, b))
    f = lambda x, w: clgrad.nn.functional.linear(x, w).tanh()       # mm, no bias
    assert clgrad.autograd.gradcheck(f, (x, w))
    assert clgrad.autograd.gradgradcheck(f, (x, w))


def test_attention_scores_copy_whole_rows_forward_and_backward(device):
    """q @ k.transpose(-2, -1) of heads split from one projection ([B, T, H, D] viewed as
    [B, H, T, D]: batch dims that do not merge): k goes to bmm as a row copy handed over
    transposed, and its gradient comes back in that layout, so no copy in either direction moves
    single elements (copy_s), only whole rows (copy_r)."""
    from clgrad.autograd import profiler
    rng = np.random.default_rng(5)
    B, T, H, D = 2, 24, 3, 16
    qkv = clgrad.tensor(rng.standard_normal((B, T, 3 * H * D)), dtype=clgrad.float32,
                        requires_grad=True)
    with profiler.profile(use_device="cl") as prof:
        q, k, _ = (t.view(B, T, H, D).transpose(1, 2) for t in qkv.split(H * D, dim=2))
        s = q @ k.transpose(-2, -1)
        s.square().sum().backward()
    copies = [e.name for e in prof.function_events if e.name.startswith("copy_s")]
    assert copies == []
    qn, kn = (qkv.detach().numpy().astype(np.float64)[..., i * H * D:(i + 1) * H * D]
              .reshape(B, T, H, D).transpose(0, 2, 1, 3) for i in (0, 1))
    sn = qn @ kn.transpose(0, 1, 3, 2)
    np.testing.assert_allclose(s.detach().numpy(), sn, rtol=1e-4, atol=1e-4)
    gq, gk = 2 * sn @ kn, 2 * sn.transpose(0, 1, 3, 2) @ qn
    expect = np.concatenate([g.transpose(0, 2, 1, 3).reshape(B, T, H * D) for g in (gq, gk)]
                            + [np.zeros((B, T, H * D))], axis=2)
    np.testing.assert_allclose(qkv.grad.numpy(), expect, rtol=1e-4, atol=1e-3)


def test_gradcheck_fast_mode_checks_random_projections(device):
    """fast_mode=True (torch's): vᵀJu against central differences along u, by backward and by
    forward mode, with two calls of the function per input instead of two per element; strided
    inputs as they are; a wrong backward or forward rule is caught; a complex function is
    checked whole."""
    from clgrad.autograd.gradcheck import GradcheckError
    f64 = clgrad.float64
    x = clgrad.randn(6, 5, dtype=f64, device=device, requires_grad=True)
    w = clgrad.randn(3, 5, dtype=f64, device=device).t().requires_grad_()   # strided leaf
    calls = []

    def f(a, b):
        calls.append(1)
        return (a @ b).sin(), a.exp()
    assert autograd.gradcheck(f, (x, w), fast_mode=True, check_forward_ad=True)
    # 2 per input, 1 for the backward, 1 per input in forward mode, 2 for the outputs: 9
    # (whole Jacobians: 2 per element of x and w, 90)
    assert len(calls) == 9
    assert autograd.gradgradcheck(lambda a, b: (a @ b).sin(), (x, w), fast_mode=True)

    def square(scale_grad, scale_jvp):
        class Square(autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a * a

            @staticmethod
            def backward(ctx, g):
                return g * ctx.saved_tensors[0] * scale_grad

            @staticmethod
            def jvp(ctx, t):
                return t * ctx.saved_tensors[0] * scale_jvp
        return Square.apply
    assert autograd.gradcheck(square(2, 2), (x,), fast_mode=True, check_forward_ad=True)
    with pytest.raises(GradcheckError, match="output 0 with respect to input 0"):
        autograd.gradcheck(square(2.01, 2), (x,), fast_mode=True)
    with pytest.raises(GradcheckError, match="forward mode"):
        autograd.gradcheck(square(2, 2.01), (x,), fast_mode=True, check_forward_ad=True)
    assert not autograd.gradcheck(square(2.01, 2), (x,), fast_mode=True, raise_exception=False)
    z = clgrad.randn(4, dtype=clgrad.complex128, device=device, requires_grad=True)
    assert autograd.gradcheck(lambda t: (t * t).exp(), (z,), fast_mode=True)


def test_batched_product_with_transposed_operands_gradcheck():
    # batch dims that do not merge, a column-major right operand, and one broadcast over a batch
    a = clgrad.randn(2, 5, 3, 4, dtype=clgrad.float64).transpose(1, 2).requires_grad_()
    b = clgrad.randn(2, 6, 3, 4, dtype=clgrad.float64).transpose(1, 2).requires_grad_()
    f = lambda a, b: a @ b.transpose(-2, -1)                   # noqa: E731
    assert clgrad.autograd.gradcheck(f, (a, b))
    assert clgrad.autograd.gradgradcheck(f, (a, b))
    c = clgrad.randn(3, 7, 4, dtype=clgrad.float64).transpose(-2, -1).requires_grad_()
    assert clgrad.autograd.gradcheck(lambda a, c: a @ c, (a, c))
    an, cn = a.detach().numpy(), c.detach().numpy()
    np.testing.assert_allclose((a @ c).detach().numpy(), an @ cn, rtol=1e-12)
