"""Forward-mode AD (clgrad.autograd.forward_ad): the API with torch's errors, and every op's JVP
rule checked against the finite-difference directional derivative."""
import numpy as np
import pytest

import clgrad
import clgrad.autograd.forward_ad as fwAD
from clgrad.autograd import function as F
from clgrad.autograd.function import Function
from clgrad.autograd.op import Op
from clgrad.ops.elementwise import OPS, TABLE
from helpers import grad_dtype


def _tols(device):
    """(eps, atol, rtol) for finite differences in grad_dtype(device)."""
    return (1e-6, 1e-6, 1e-5) if device.has_fp64 else (1e-2, 5e-2, 5e-2)


def _exact(device):
    """Tolerances between two exact derivatives computed differently."""
    return dict(rtol=1e-8, atol=1e-8) if device.has_fp64 else dict(rtol=1e-3, atol=1e-4)


def _tensors(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, clgrad.Tensor) and o.dtype.is_floating_point]


def assert_jvp(device, fn, *inputs, seed=0, eps=None):
    """fn's forward-mode tangents at inputs, along random tangents for every float input, match
    (f(x + eps v) - f(x - eps v)) / 2 eps; the primals match fn(*inputs)."""
    eps_, atol, rtol = _tols(device)
    eps = eps or eps_
    rng = np.random.default_rng(seed)
    vs = [clgrad.tensor(rng.standard_normal(x.shape), dtype=x.dtype)
          if isinstance(x, clgrad.Tensor) and x.dtype.is_floating_point else None for x in inputs]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x, v) if v is not None else x for x, v in zip(inputs, vs)]
        got = [fwAD.unpack_dual(o) for o in _tensors(fn(*duals))]
    with clgrad.no_grad():
        plain = _tensors(fn(*inputs))
        plus = _tensors(fn(*[x + eps * v if v is not None else x for x, v in zip(inputs, vs)]))
        minus = _tensors(fn(*[x - eps * v if v is not None else x for x, v in zip(inputs, vs)]))
    assert len(got) == len(plain) and got
    for (primal, tangent), p, a, b in zip(got, plain, plus, minus):
        np.testing.assert_allclose(primal.detach().numpy(), p.numpy(), **_exact(device))
        fd = (a.numpy() - b.numpy()) / (2 * eps)
        assert tangent is not None, "no tangent"
        assert tangent.shape == primal.shape and tangent.dtype == primal.dtype
        np.testing.assert_allclose(tangent.detach().numpy(), fd, atol=atol, rtol=rtol)


def _rand(device, *shape, lo=-1.0, hi=1.0, seed=1):
    rng = np.random.default_rng(seed)
    return clgrad.tensor(rng.uniform(lo, hi, size=shape), dtype=grad_dtype(device))


# ---- the API ------------------------------------------------------------------------------------
def test_dual_level_make_and_unpack(device):
    x = _rand(device, 3)
    v = _rand(device, 3, seed=2)
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, v)
        assert d._base is x and fwAD.unpack_dual(d).tangent is v
        p, t = fwAD.unpack_dual(d * 2)
        assert isinstance(fwAD.unpack_dual(d), fwAD.UnpackedDualTensor)
        assert fwAD.unpack_dual(p).tangent is None            # the primal carries none
        np.testing.assert_allclose(t.numpy(), 2 * v.numpy())
        assert fwAD.unpack_dual(x).tangent is None
        assert fwAD.unpack_dual(d.detach()).tangent is None   # detach drops it, as in torch
        with clgrad.no_grad():                                # grad mode does not matter
            assert fwAD.unpack_dual(d.sin()).tangent is not None
        kept = d * 3
    # leaving the level drops every tangent made in it
    assert fwAD.unpack_dual(kept).tangent is None and fwAD.unpack_dual(d).tangent is None
    assert F.hooks.op is None and F.hooks.forward_ad is None


def test_api_errors(device):
    x = _rand(device, 3)
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(x, x)
    assert fwAD.unpack_dual(x) == (x, None)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(x, x[:2])
        with pytest.raises(ValueError, match="Expected primal to be floating point"):
            fwAD.make_dual(clgrad.arange(3), x)
        with pytest.raises(ValueError, match="Expected tangent to be floating point"):
            fwAD.make_dual(x, clgrad.arange(3))
        with pytest.raises(RuntimeError, match="not the last one"):
            fwAD.exit_dual_level(level=1)
    with pytest.raises(RuntimeError):
        fwAD.exit_dual_level()
    level = fwAD.enter_dual_level()
    fwAD.exit_dual_level(level=level)


def test_tangent_laid_out_like_primal(device):
    # a tangent laid out differently is copied into the primal's layout, so that views of the
    # dual tensor are the same views of its tangent
    a = _rand(device, 4, 3).t()
    v = _rand(device, 3, 4, seed=3)
    with fwAD.dual_level():
        d = fwAD.make_dual(a, v)
        t = fwAD.unpack_dual(d).tangent
        assert t.stride() == a.stride() and t is not v
        np.testing.assert_array_equal(t.numpy(), v.numpy())
        row = fwAD.unpack_dual(d[1]).tangent
        np.testing.assert_array_equal(row.numpy(), v.numpy()[1])
        assert row._base is not None                 # a view of the tangent, not a copy


def test_inplace_updates_tangents(device):
    x, v = _rand(device, 3), _rand(device, 3, seed=4)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        z = clgrad.zeros(3, dtype=x.dtype)
        z.add_(d)                                   # a tensor without tangent gets one
        np.testing.assert_allclose(fwAD.unpack_dual(z).tangent.numpy(), v.numpy())
        z.mul_(d)                                   # (z * d)' = z' d + z d'
        want = 2 * v.numpy() * x.numpy()
        np.testing.assert_allclose(fwAD.unpack_dual(z).tangent.numpy(), want)
        z.fill_(1.0)
        assert not fwAD.unpack_dual(z).tangent.numpy().any()
        base = clgrad.zeros(2, 3, dtype=x.dtype)
        early = base[0]                             # made before base has a tangent
        base[1].copy_(d)                            # the base gets one, zero elsewhere
        bt = fwAD.unpack_dual(base).tangent.numpy()
        np.testing.assert_allclose(bt, np.stack([np.zeros(3), v.numpy()]))
        assert not fwAD.unpack_dual(early).tangent.numpy().any()
        base[0] = d * 2                             # setitem goes through copy_
        np.testing.assert_allclose(fwAD.unpack_dual(early).tangent.numpy(), 2 * v.numpy())


# ---- every rule against finite differences -------------------------------------------------------
# parameters of the table entries that take some, within the ranges the operands are drawn from
PARAMS = {"polygamma": (1.0,), "softplus": (1.0, 20.0), "elu": (1.0,), "leaky_relu": (0.1,), "pow_scalar": (2.5,),
          "rpow_scalar": (1.7,), "clamp": (0.6, 0.8), "clamp_min": (0.7,), "clamp_max": (0.7,),
          "nan_to_num": (0.0, 1.0, -1.0), "lerp_scalar": (0.3,), "masked_fill": (2.0,),
          "softplus_backward": (1.0, 20.0), "elu_backward": (1.0,),
          "leaky_relu_backward": (0.1,), "clamp_backward": (1.2, 1.6),
          "clamp_min_backward": (1.5,), "clamp_max_backward": (1.5,), "addcmul": (0.5,),
          "addcdiv": (0.5,)}
DIFFERENTIABLE = sorted(n for n, e in TABLE.items() if e.vjp is not None and "f" in e.exprs)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_elementwise_rule(device, name):
    e = TABLE[name]
    # operands away from every kink and branch: x in (0.55, 0.95), the others in (1.1, 1.9)
    ranges = [(0.55, 0.95), (1.1, 1.9), (0.2, 0.8)]
    operands = []
    for k, kind in enumerate(e.operands):
        if kind == "b":
            operands.append(clgrad.tensor([True, False, True, False, True, True]))
        else:
            lo, hi = ranges[k]
            if name == "acosh":
                lo, hi = 1.5, 2.5
            if name == "clamp_tensor":                # x between or outside lo < hi
                lo, hi = [(0.55, 0.95), (0.2, 0.8), (0.85, 1.9)][k]
            operands.append(_rand(device, 2, 3, lo=lo, hi=hi, seed=k + 10).reshape(-1))
    op = OPS[name]
    assert_jvp(device, lambda *a: op.apply(*a, *PARAMS.get(name, ())), *operands)


def test_elementwise_broadcast_and_scalars(device):
    x, y = _rand(device, 3), _rand(device, 2, 3, seed=5)
    assert_jvp(device, lambda a: a + y, x)            # the tangent is expanded to the result
    assert_jvp(device, lambda a, b: a * b - b / 3, x, y)
    assert_jvp(device, lambda a: 2 ** a + a ** 3 - 1 / (a + 2), x)
    assert_jvp(device, lambda a: clgrad.where(a > 0, a, a * a), x)
    # casts: the tangent is cast too (linear: a large eps keeps float32 rounding out of it)
    assert_jvp(device, lambda a: a.float().double() * 2, x, eps=0.5)


VIEW_CASES = {
    "view": lambda a: a.view(3, 4),
    "reshape_copy": lambda a: a.t().reshape(-1),
    "expand": lambda a: a[:1].expand(5, 4),
    "permute": lambda a: a.unsqueeze(0).permute(2, 0, 1),
    "transpose": lambda a: a.transpose(0, 1) * 1,
    "t": lambda a: a.t(),
    "squeeze": lambda a: a.unsqueeze(1).squeeze(1),
    "select": lambda a: a.select(1, 2),
    "slice": lambda a: a[1:, ::2],
    "narrow": lambda a: a.narrow(1, 1, 2),
    "diagonal": lambda a: a.diagonal(1),
    "as_strided": lambda a: a.as_strided((2, 2), (1, 4), 1),
    "unbind": lambda a: a.unbind(1),
    "split": lambda a: a.split([1, 3], dim=1),
    "chunk": lambda a: a.chunk(2),
    "contiguous": lambda a: a.t().contiguous(),
    "clone": lambda a: a.clone(),
    "flatten": lambda a: a.flatten(),
    "view_of_view": lambda a: a.t()[1:].reshape(-1)[::3],
}


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_view_rule(device, name):
    assert_jvp(device, VIEW_CASES[name], _rand(device, 3, 4))
    assert_jvp(device, VIEW_CASES[name], _rand(device, 4, 3).t().contiguous())


def test_cast_rules(device):
    # linear: a large eps keeps float32 rounding out of the finite differences
    x = _rand(device, 3, 4)
    assert_jvp(device, lambda a: a.to(clgrad.float32).to(a.dtype), x, eps=0.5)
    assert_jvp(device, lambda a: a.sum(0, dtype=clgrad.float32).to(a.dtype), x, eps=0.5)


def test_view_scatter_rule(device):
    from clgrad.ops.views import view_scatter
    assert_jvp(device, lambda b, s: view_scatter(b, s, (2,), (3,), 1),
               _rand(device, 2, 3), _rand(device, 2, seed=6))


REDUCE_CASES = {
    "sum": lambda a: a.sum(),
    "sum_dim": lambda a: a.sum(1, keepdim=True),
    "mean": lambda a: a.mean(0),
    "prod": lambda a: a.prod(1),
    "prod_all": lambda a: a.prod(),
    "amax": lambda a: a.amax(1),
    "amin": lambda a: a.amin((0, 1)),
    "max_all": lambda a: a.max(),
    "max_dim": lambda a: a.max(1),
    "min_dim": lambda a: a.min(0, keepdim=True),
    "var": lambda a: a.var(1),
    "std": lambda a: a.std(),
    "var_correction": lambda a: a.var(0, correction=0, keepdim=True),
    "logsumexp": lambda a: a.logsumexp(1),
    "norm": lambda a: a.norm(),
    "norm_dim": lambda a: a.norm(dim=0),
}


@pytest.mark.parametrize("name", sorted(REDUCE_CASES))
def test_reduce_rule(device, name):
    assert_jvp(device, REDUCE_CASES[name], _rand(device, 3, 4))


def test_prod_with_zeros(device):
    x = clgrad.tensor([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]], dtype=grad_dtype(device))
    assert_jvp(device, lambda a: a.prod(1), x)


JOIN_CASES = {
    "cat": lambda a, b: clgrad.cat([a, b, a], 1),
    "cat_legacy_empty": lambda a, b: clgrad.cat([a, clgrad.zeros(0, dtype=a.dtype), b]),
    "stack": lambda a, b: clgrad.stack([a, b], 2),
    "hstack": lambda a, b: clgrad.hstack([a, b]),
    "vstack": lambda a, b: clgrad.vstack([a, b]),
}


@pytest.mark.parametrize("name", sorted(JOIN_CASES))
def test_join_rule(device, name):
    assert_jvp(device, JOIN_CASES[name], _rand(device, 2, 3), _rand(device, 2, 3, seed=7))
    # one input without a tangent: zeros stand in for it
    b = _rand(device, 2, 3, seed=8)
    assert_jvp(device, lambda a: JOIN_CASES[name](a, b), _rand(device, 2, 3))


INPLACE_CASES = {
    "add_": lambda a, b: a.clone().add_(b, alpha=2),
    "mul_": lambda a, b: a.clone().mul_(b),
    "div_": lambda a, b: a.clone().div_(b + 3),
    "pow_": lambda a, b: (a + 2).pow_(2),
    "clamp_": lambda a, b: a.clone().clamp_(-0.5, 0.5),
    "copy_": lambda a, b: a.clone().copy_(b),
    "copy_broadcast": lambda a, b: clgrad.zeros(2, 2, 3, dtype=a.dtype).copy_(b),
    "copy_into_view": lambda a, b: (lambda z: (z[:, 1:].copy_(b[:, 1:]), z)[1])(a.clone()),
    "fill_tensor": lambda a, b: a.clone().fill_(b[0, 1]),
    "zero_": lambda a, b: a.clone().zero_() + b,
    "setitem": lambda a, b: (lambda z: (z.__setitem__((0, slice(None)), b[1]), z)[1])(a.clone()),
    "index_put": lambda a, b: a.clone().index_put_((clgrad.tensor([1, 0]),), b),
    "mul_view_of_dual": lambda a, b: (lambda z: (z[0].mul_(b[0]), z)[1])(a * 1),
}


@pytest.mark.parametrize("name", sorted(INPLACE_CASES))
def test_inplace_rule(device, name):
    assert_jvp(device, INPLACE_CASES[name], _rand(device, 2, 3), _rand(device, 2, 3, seed=9))


# ops of other modules: an explicit rule where the module has one, else the generic one that
# derives J·v from the op's backward
OTHER_CASES = {
    "mm": lambda a, b: a @ b.t(),
    "bmm": lambda a, b: clgrad.bmm(a.unsqueeze(0), b.t().unsqueeze(0)),
    "addmm": lambda a, b: clgrad.addmm(a[:, :2], a, b.t()[:, :2], beta=0.5, alpha=2.0),
    "mv": lambda a, b: clgrad.mv(a, b[0]),
    "dot": lambda a, b: clgrad.dot(a[0], b[1]),
    "outer": lambda a, b: clgrad.outer(a[0], b[1]),
    "softmax": lambda a, b: a.softmax(1),
    "log_softmax": lambda a, b: a.log_softmax(0),
    "cumsum": lambda a, b: a.cumsum(1),
    "cumprod": lambda a, b: a.cumprod(1),
    "logcumsumexp": lambda a, b: a.logcumsumexp(1),
    "cummax": lambda a, b: a.cummax(1),
    "gather": lambda a, b: a.gather(1, clgrad.tensor([[0, 2], [1, 1]])),
    "index_select": lambda a, b: a.index_select(1, clgrad.tensor([2, 0])),
    "getitem_advanced": lambda a, b: a[clgrad.tensor([1, 0, 1])],
    "masked_select": lambda a, b: a.masked_select(a > 0),
    "take": lambda a, b: a.take(clgrad.tensor([5, 0])),
    "scatter_add": lambda a, b: a.scatter_add(1, clgrad.tensor([[0, 0, 1], [2, 2, 2]]), b),
    "index_add": lambda a, b: a.index_add(1, clgrad.tensor([2, 0, 1]), b),
    "flip": lambda a, b: a.flip(1),
    "roll": lambda a, b: a.roll(1, 1),
    "tril": lambda a, b: a.tril(),
    "repeat_interleave": lambda a, b: a.repeat_interleave(2, dim=0),
}


@pytest.mark.parametrize("name", sorted(OTHER_CASES))
def test_other_module_rule(device, name):
    assert_jvp(device, OTHER_CASES[name], _rand(device, 2, 3), _rand(device, 2, 3, seed=11))


def _op_classes():
    todo, seen = [Op], []
    while todo:
        for c in todo.pop().__subclasses__():
            seen.append(c)
            todo.append(c)
    return seen


def test_owned_modules_have_explicit_rules():
    """The ops of the modules written with forward mode in mind carry their own jvp; only ops
    elsewhere may rely on the rule derived from their backward."""
    for cls in _op_classes():
        module = cls.__module__.split(".")[-1]
        if module in ("views", "reduce", "join", "inplace", "elementwise") and \
                cls.backward is not Op.backward and not cls.__name__.startswith("_"):
            assert cls.jvp is not None, cls.__name__


class Cubic(Op):
    """x³ + x·y with a backward and no jvp: forward mode derives J·v from the backward."""

    @staticmethod
    def forward(ctx, x, y):
        from clgrad.ops.elementwise import TABLE, run
        ctx.save_for_backward(x, y)
        x3 = run(TABLE["mul"], (run(TABLE["mul"], (x, x)), x))
        return run(TABLE["add"], (x3, run(TABLE["mul"], (x, y))))

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * (3 * x * x + y), g * x


def test_rule_derived_from_backward(device):
    assert Cubic.jvp is None
    x, y = _rand(device, 2, 3), _rand(device, 2, 3, seed=14)
    assert_jvp(device, lambda a, b: Cubic.apply(a, b), x, y)
    assert_jvp(device, lambda a: Cubic.apply(a, y), x)               # one input with a tangent
    xr = x.detach().requires_grad_()
    with fwAD.dual_level():                                        # recorded by autograd too
        out = Cubic.apply(fwAD.make_dual(xr, y), y)
        assert out.grad_fn.name() == "CubicBackward0"
        t = fwAD.unpack_dual(out).tangent
        g, = clgrad.autograd.grad(t.sum(), xr)                     # d/dx (3x² + y) v = 6 x v
    np.testing.assert_allclose(g.numpy(), 6 * x.numpy() * y.numpy(), **_exact(device))
    with fwAD.dual_level():                                        # not recorded: no history
        out = Cubic.apply(fwAD.make_dual(x, y), y)
        assert not out.requires_grad and fwAD.unpack_dual(out).tangent is not None


# ---- custom Functions ----------------------------------------------------------------------------
class Cube(Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x * x * ctx.scale, None

    @staticmethod
    def jvp(ctx, tx, tscale):
        x, = ctx.saved_tensors              # what save_for_forward kept
        assert tscale is None               # non-tensor arguments get None
        return tx * 3 * x * x * ctx.scale


def test_custom_function_jvp(device):
    x = _rand(device, 4)
    assert_jvp(device, lambda a: Cube.apply(a, 2.0), x)
    assert_jvp(device, lambda a: Cube.apply(a.sin(), 0.5).exp(), x)

    class NoJvp(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with fwAD.dual_level():
        d = fwAD.make_dual(x, x)
        with pytest.raises(NotImplementedError, match="jvp function for custom"):
            NoJvp.apply(d)
        assert fwAD.unpack_dual(NoJvp.apply(x)).tangent is None     # no tangent in: fine

    class Materialized(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def jvp(ctx, ta, tb):
            seen.append(tb)
            return ta * 0

    seen = []
    with fwAD.dual_level():
        Materialized.apply(fwAD.make_dual(x, x), x)
    assert seen[0] is not None and not seen[0].numpy().any()      # zeros for a tensor input


# ---- mixing with reverse mode --------------------------------------------------------------------
def _f(t):
    m = t.view(2, 2)
    return (t.sin() * t).sum() + t.exp().prod() + t.softmax(0)[1] + (m @ m).sum()


def test_forward_over_reverse_is_hessian_vector_product(device):
    from clgrad.autograd.functional import hessian
    x, v = _rand(device, 4), _rand(device, 4, seed=12)
    hv = (hessian(_f, x) @ v).numpy()
    xr = x.detach().requires_grad_()
    with fwAD.dual_level():
        d = fwAD.make_dual(xr, v)
        g, = clgrad.autograd.grad(_f(d), d)
        np.testing.assert_allclose(fwAD.unpack_dual(g).tangent.numpy(), hv, **_exact(device))


def test_reverse_over_forward(device):
    from clgrad.autograd.functional import hessian
    x, v = _rand(device, 4), _rand(device, 4, seed=13)
    hv = (hessian(_f, x) @ v).numpy()
    xr = x.detach().requires_grad_()
    with fwAD.dual_level():
        jv = fwAD.unpack_dual(_f(fwAD.make_dual(xr, v))).tangent
        g, = clgrad.autograd.grad(jv, xr)          # d/dx (J(x) v) = H v for a scalar f
    np.testing.assert_allclose(g.numpy(), hv, **_exact(device))


def test_gradcheck_checks_forward_mode(device):
    x = _rand(device, 2, 3).requires_grad_()
    assert clgrad.autograd.gradcheck(lambda t: (t.sin() @ t.t()).softmax(1), (x,),
                                     check_forward_ad=True, atol=1e-5 if device.has_fp64 else 5e-2,
                                     eps=1e-6 if device.has_fp64 else 1e-2)
