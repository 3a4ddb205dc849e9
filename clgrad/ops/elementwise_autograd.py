"""The autograd of the elementwise table (clgrad/ops/elementwise.py): one Op class per entry, made
by `register` from the entry's kernels (clgrad/kernels/elementwise.py) and its VJP rules, which
also give its forward-mode (JVP) rule (an elementwise Jacobian is diagonal). Ops of contiguous
operands of one dtype and shape are recorded by a lean path (`record`, differentiated by
`direct`) beside Op.apply's general one.

The functional forms below (exp, where, tanh_backward, ...) are what the table's gradient
formulas call; they look their Op up in OPS when called.

>>> import clgrad
>>> x = clgrad.tensor([0.0, 1.0], requires_grad=True)
>>> y = apply_ew("mul", x, x); y.sum().backward(); type(y.grad_fn).__name__, x.grad.tolist()
('MulBackward0', [0.0, 2.0])
"""
from ..autograd.grad_mode import state as _state
from ..autograd.node import SavedTensor, _validate, hooks, run_node
from ..autograd.op import Op, _null_ctx
from ..autograd.views import _edge
from ..kernels.elementwise import _fast_variant, _run_fast, run
from ..tensor import Tensor
from ._base import full_raw

def same(g, a):
    """The gradient formula of an operand that passes the gradient on unchanged (the lean
    backward skips formulas that are all `same`)."""
    return g


OPS = {}            # name -> the Op class of the table's entry of that name (register)


def register(table):
    """Make the Op class of every entry of the table ({name: Entry}) into OPS. Called once, by
    clgrad/ops/elementwise.py, when its table is complete."""
    for name, e in table.items():
        OPS[name] = _make_op(e)
    return OPS


def apply_ew(name, *args):
    """Apply entry `name` to operands and parameters with autograd."""
    op = OPS[name]
    if op._entry.vjp is None:
        return op.forward(_null_ctx, *args)
    return op.apply(*args)


class _Args:
    """The values a gradient formula reads: operands x, y, z, the output and the parameters."""

    __slots__ = ("x", "y", "z", "out", "p")


_NAMES = ("x", "y", "z")


def _make_op(e):
    arity = e.arity
    # what each operand's gradient formula reads: a string per operand, or one for all
    per_operand = e.saves if isinstance(e.saves, tuple) else (e.saves,) * arity

    plans = {}       # needs_input_grad -> [(slot, operand index or None for the output)]

    def save_plan(needs):
        wanted = set()
        for i, spec in enumerate(per_operand):
            if needs[i]:
                wanted.update(spec)
        return [("out" if s == "o" else s, None if s == "o" else _NAMES.index(s))
                for s in ("x", "y", "z", "o") if s in wanted]

    def forward(ctx, *args):
        operands = args[:arity]
        out = run(e, operands, args[arity:])
        if ctx is not _null_ctx:
            ctx.operand_values = [None if isinstance(a, Tensor) else a for a in operands]
            ctx.params = args[arity:]
            needs = ctx.needs_input_grad
            plan = plans.get(needs)
            if plan is None:
                plan = plans[needs] = save_plan(needs)
            to_save = []
            slots = []
            for slot, idx in plan:
                v = out if idx is None else operands[idx]
                if isinstance(v, Tensor):
                    to_save.append(v)
                    slots.append(slot)
            ctx.slots = slots
            if to_save:
                ctx.save_for_backward(*to_save)
        return out

    vjps = e.vjp

    def formula_args(ctx):
        """What the gradient formulas read, from what forward kept on the node."""
        a = _Args()
        vals = ctx.operand_values
        a.x = vals[0]
        a.y = vals[1] if arity > 1 else None
        a.z = vals[2] if arity > 2 else None
        a.out = None
        slots = ctx.slots
        if slots:
            for s, t in zip(slots, ctx._unpack_saved()):
                setattr(a, s, t)
        a.p = ctx.params
        return a

    def backward(ctx, g):
        needs = ctx.needs_input_grad
        if all(vjps[i] is same or not needs[i] for i in range(arity)):
            # only pass-through gradients wanted (add, and the like): no formula to evaluate
            grads = [None] * len(needs)
            for i in range(arity):
                if needs[i]:
                    shape = ctx._in_meta[ctx._tensor_positions.index(i)][0]
                    grads[i] = g if g._shape == shape else sum_to(g, shape)
            return grads
        a = formula_args(ctx)
        positions = ctx._tensor_positions
        grads = [None] * (arity + len(ctx.params))
        for i in range(arity):
            if needs[i] and vjps[i] is not None:
                gi = vjps[i](g, a)
                shape = ctx._in_meta[positions.index(i)][0]
                if gi._shape != shape:
                    gi = sum_to(gi, shape)
                grads[i] = gi
        return grads

    def jvp(tangents, operands, params, out):
        """Forward-mode rule: sum over operands of (partial derivative * tangent)."""
        a = _Args()
        for i in range(3):
            setattr(a, _NAMES[i], operands[i] if i < arity else None)
        a.out = out
        a.p = params
        cplx = any(isinstance(v, Tensor) and v._dtype.kind == "c"
                   for v in tuple(operands[:arity]) + (out,))
        if cplx and e.name in COMPLEX_JVP:
            return COMPLEX_JVP[e.name](tangents[0], a)
        total = None
        for i in range(arity):
            t = tangents[i]
            if t is None or e.vjp[i] is None:
                continue
            if cplx:
                # the VJPs are g * conj(f'(z)) (torch's convention); the tangent of a holomorphic
                # f is t * f'(z) = conj(vjp(conj(t)))
                term = _conj(e.vjp[i](_conj(t), a))
            else:
                term = e.vjp[i](t, a)
            total = term if total is None else total + term
        return total

    def op_jvp(args, tangents, out):
        if e.vjp is None:               # not differentiable: no tangent
            return None
        return jvp(tangents[:arity], args[:arity], args[arity:], out)

    attrs = {"forward": staticmethod(forward), "_entry": e, "_jvp_rule": staticmethod(jvp),
             "jvp": staticmethod(op_jvp)}
    if e.vjp is not None:
        attrs["backward"] = staticmethod(backward)
    cls = type(e.cls_name, (Op,), attrs)
    if e.vjp is None or e.out == "bool" or e.nparams:
        return cls
    generic_apply = cls.apply.__func__

    def direct(node, g):
        """The backward of a node made by `record`: every operand and g have one shape and
        dtype, so the formulas' results need no summing or casting."""
        shape, dt, _ = node._in_meta[0]
        if g._shape != shape or g._dtype is not dt:      # a hook changed it: the general path
            return run_node(node, [g])
        a = formula_args(node)
        needs = node.needs_input_grad
        res = []
        fits = True
        for i in node._tensor_positions:
            if needs[i] and vjps[i] is not None:
                gi = vjps[i](g, a)
                if type(gi) is not Tensor or gi._shape != shape or gi._dtype is not dt:
                    fits = False
                res.append(gi)
            else:
                res.append(None)
        return res if fits else _validate(node, res)

    # nodes made by `record` answer to the same name and carry `direct`; one class per variant
    # holds what is constant for it
    def lean_node_class(**constants):
        return type(cls._backward_cls.__name__, (cls._backward_cls,),
                    {"_direct_backward": staticmethod(direct), "params": (), "slots": (),
                     **constants})

    node_t = lean_node_class(needs_input_grad=(True,), _tensor_positions=(0,),
                             operand_values=(None, None))
    node_ts = lean_node_class(needs_input_grad=(True, False), _tensor_positions=(0,))
    node_tt = lean_node_class(_tensor_positions=(0, 1), operand_values=(None, None))

    def record(args, variant):
        # Op._apply_recorded plus forward's bookkeeping, for the operands of the fast variants:
        # the output has the first operand's shape, dtype and device, so one meta fits all
        a = args[0]
        out = _run_fast(e, variant, args, (), None)
        meta = ((a._shape, a._dtype, a._storage.device),)
        fn = a._grad_fn
        edge = (fn, a._output_nr) if fn is not None and a._base is None else _edge(a)
        if variant == "tt":
            node = node_tt()
            b = args[1]
            node.needs_input_grad = needs = (a._requires_grad, b._requires_grad)
            node.next_functions = (edge, _edge(b))
            node._in_meta = meta * 2
        else:
            if variant == "ts":
                node = node_ts()
                node.operand_values = (None, args[1])
            else:
                node = node_t()
            needs = node.needs_input_grad
            node.next_functions = (edge,)
            node._in_meta = meta
        node._out_meta = meta
        plan = plans.get(needs)
        if plan is None:
            plan = plans[needs] = save_plan(needs)
        out._grad_fn = node
        out._requires_grad = True
        if plan:
            slots = []
            saved = []
            for slot, idx in plan:
                if idx is None:                 # the output
                    slots.append(slot)
                    saved.append(SavedTensor(out, 0))
                else:
                    v = args[idx]
                    if type(v) is Tensor:
                        slots.append(slot)
                        saved.append(SavedTensor(v))
            if slots:
                node.slots = slots
                node._saved = saved
        return out

    def apply(cls, *args):
        if hooks.op is None and len(args) == arity:
            variant = _fast_variant(e, args, ())
            if variant is not None:
                if _state.grad_enabled and (args[0]._requires_grad or
                                            (variant == "tt" and args[1]._requires_grad)):
                    return record(args, variant)
                return _run_fast(e, variant, args, (), None)
        return generic_apply(cls, *args)

    cls.apply = classmethod(apply)
    return cls


def _conj(t):
    return OPS["conj"].apply(t) if isinstance(t, Tensor) and t._dtype.kind == "c" else t


def _real(t):
    # function-level: complexes' views sit beside this module; it is imported on use only
    from .complexes import real
    return real(t)


# Forward-mode rules of the entries that are not holomorphic on complex inputs (with z = x + iy,
# r = |z|): abs' tangent is Re(t conj(z)) / r, angle's Im(conj(z) t) / r^2, sgn's
# (t - Re(t conj(s)) s) / r; each 0 where z = 0.
def _abs_jvp(t, a):
    r = apply_ew("abs", a.x)
    d = _real(t * _conj(a.x)) / r
    return where(r == 0, zeros_like_(d), d)


def _angle_jvp(t, a):
    r2 = apply_ew("abs", a.x) ** 2
    d = _real(_conj(a.x) * t * -1j) / r2
    return where(r2 == 0, zeros_like_(d), d)


def _sgn_jvp(t, a):
    r = apply_ew("abs", a.x)
    s = a.out if a.out is not None else apply_ew("sgn", a.x)
    d = (t - _real(t * _conj(s)) * s) / r
    return where(r == 0, zeros_like_(d), d)


COMPLEX_JVP = {"abs": _abs_jvp, "angle": _angle_jvp, "sgn": _sgn_jvp}


# ---- functional forms, used by the table's gradient formulas (and exported by clgrad.ops) -------
def _unary(name):
    def f(x):
        return apply_ew(name, x)
    f.__name__ = f.__qualname__ = name
    return f


exp = _unary("exp")
log = _unary("log")
sin = _unary("sin")
cos = _unary("cos")
sinh = _unary("sinh")
cosh = _unary("cosh")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
rsqrt = _unary("rsqrt")
sign = _unary("sign")
trunc = _unary("trunc")
isfinite = _unary("isfinite")
digamma = _unary("digamma")
i0 = _unary("i0")
i0e = _unary("i0e")
i1 = _unary("i1")
i1e = _unary("i1e")


def polygamma(n, x):
    return OPS["polygamma"].apply(x, float(n))


def tanh_backward(g, y):
    return OPS["tanh_backward"].apply(g, y)


def sigmoid_backward(g, y):
    return OPS["sigmoid_backward"].apply(g, y)


def threshold_backward(g, x):
    return OPS["threshold_backward"].apply(g, x)


def silu_backward(g, x):
    return OPS["silu_backward"].apply(g, x)


def gelu_backward(g, x):
    return OPS["gelu_backward"].apply(g, x)


def gelu_tanh_backward(g, x):
    return OPS["gelu_tanh_backward"].apply(g, x)


def softplus_backward(g, x, beta, threshold):
    return OPS["softplus_backward"].apply(g, x, beta, threshold)


def elu_backward(g, x, alpha):
    return OPS["elu_backward"].apply(g, x, alpha)


def leaky_relu_backward(g, x, slope):
    return OPS["leaky_relu_backward"].apply(g, x, slope)


def clamp_backward(g, x, lo, hi):
    return OPS["clamp_backward"].apply(g, x, lo, hi)


def clamp_min_backward(g, x, lo):
    return OPS["clamp_min_backward"].apply(g, x, lo)


def clamp_max_backward(g, x, hi):
    return OPS["clamp_max_backward"].apply(g, x, hi)


def where(cond, x, y):
    return OPS["where"].apply(cond, x, y)


def masked_fill(x, mask, value):
    return OPS["masked_fill"].apply(x, mask, value)


def logical_and(x, y):
    return OPS["logical_and"].forward(_null_ctx, x, y)


def floor_divide(x, y):
    return OPS["floor_divide"].forward(_null_ctx, x, y)


def pow(x, y):
    if isinstance(y, Tensor):
        return OPS["pow"].apply(x, y)
    return OPS["pow_scalar"].apply(x, y)


def zeros_like_(t):
    return full_raw(t._shape, 0, t._dtype, t._storage.device)


def ones_like_(t):
    return full_raw(t._shape, 1, t._dtype, t._storage.device)


def sum_to(t, shape):
    """Sum t down to `shape` (the reverse of broadcasting); recorded by autograd."""
    # function-level: import cycle: reduce imports elementwise, which imports this module
    from .reduce import sum_to as _sum_to
    return _sum_to(t, shape)
