"""clgrad.func: torch.func's function transforms over clgrad's autograd.

`vmap` runs the function once per slice of the batch dimension and stacks the results (a loop,
not batching rules): correct for functions without side effects, and as fast as the loop.
Gradients flow through it (select and stack are differentiable) and vmaps nest. `randomness`:
'different' and 'error' draw fresh numbers per slice (clgrad does not detect random ops, so
'error' does not raise); 'same' replays the generator state for every slice.

`grad`, `grad_and_value`, `vjp`, `jvp`, `jacrev`, `jacfwd` and `hessian` are built on
clgrad.autograd (reverse mode, with create_graph so that they compose).

>>> import clgrad
>>> from clgrad.func import grad, vmap
>>> vmap(grad(lambda x: (x ** 3).sum()))(clgrad.tensor([[1.0], [2.0]])).tolist()
[[3.0], [12.0]]
"""
from . import autograd
from .autograd.grad_mode import enable_grad
from .ops.join import stack
from .tensor import Tensor
from .ops.creation import get_rng_state, set_rng_state, tensor
from .autograd import forward_ad as fwAD

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
           "functional_call"]


def _tree_map(fn, x):
    if isinstance(x, Tensor):
        return fn(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_tree_map(fn, v) for v in x)
    if isinstance(x, dict):
        return {k: _tree_map(fn, v) for k, v in x.items()}
    return x


def _tensors(x):
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func mapped over a batch dimension of its arguments: in_dims says which dimension of each
    argument is the batch (an int for all, or one entry per argument, None for unbatched);
    out_dims where the batch goes in the outputs.

    >>> import clgrad
    >>> x, w = clgrad.ones(4, 3), clgrad.tensor([1.0, 2.0, 3.0])
    >>> clgrad.vmap(lambda v, w: (v * w).sum(), in_dims=(0, None))(x, w).tolist()
    [6.0, 6.0, 6.0, 6.0]
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")

    def mapped(*args, **kwargs):
        dims = in_dims if isinstance(in_dims, (list, tuple)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap(in_dims={in_dims}): in_dims is not compatible with the "
                             f"structure of the inputs: expected one entry per argument "
                             f"({len(args)}), got {len(dims)}")
        sizes = set()
        for a, d in zip(args, dims):
            if d is None:
                continue
            for t in _tensors(a):
                sizes.add(t.shape[d])
        if not sizes:
            raise ValueError("vmap: at least one input must be batched (in_dims not None) and "
                             "be a Tensor")
        if len(sizes) > 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sorted(sizes)} for the mapped dimension")
        n = sizes.pop()
        state = get_rng_state() if randomness == "same" else None
        results = []
        for i in range(n):
            if state is not None:
                set_rng_state(state)
            sliced = [a if d is None else _tree_map(lambda t: t.select(d, i), a)
                      for a, d in zip(args, dims)]
            results.append(func(*sliced, **kwargs))
        return _stack_outputs(results, out_dims)
    return mapped


def _stack_outputs(results, out_dims):
    first = results[0]
    if isinstance(first, Tensor):
        d = out_dims if not isinstance(out_dims, (list, tuple)) else out_dims[0]
        return stack(results, d)
    if isinstance(first, (list, tuple)):
        dims = out_dims if isinstance(out_dims, (list, tuple)) else (out_dims,) * len(first)
        return type(first)(_stack_outputs([r[k] for r in results], dims[k])
                           for k in range(len(first)))
    if isinstance(first, (int, float, bool)):
        return tensor(results)
    raise ValueError(f"vmap: the function must return tensors (or tuples of them), got "
                     f"{type(first).__name__}")


def _needs_graph(args):
    return any(t.requires_grad for t in _tensors(args))


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (the gradient of func's scalar output with respect to the
    arguments argnums, the output); with has_aux func returns (output, aux) and the value is
    (output, aux).

    >>> import clgrad
    >>> from clgrad.func import grad_and_value
    >>> g, v = grad_and_value(lambda x: (x * x).sum())(clgrad.tensor([1.0, 2.0]))
    >>> g.tolist(), v.item()
    ([2.0, 4.0], 5.0)
    """
    def wrapper(*args, **kwargs):
        outer = _needs_graph(args)
        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        args = list(args)
        for k in nums:
            args[k] = _tree_map(lambda t: t if t.requires_grad else
                                t.detach().requires_grad_(), args[k])
        with enable_grad():
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                out, aux = out
            if not isinstance(out, Tensor) or out.numel() != 1:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with "
                                   f"{out.dim() if isinstance(out, Tensor) else '?'} dims")
            inputs = [t for k in nums for t in _tensors(args[k])]
            gs = list(autograd.grad(out, inputs, create_graph=True, allow_unused=True))
        gs = [g if g is not None else t.new_zeros(t.shape) for g, t in zip(gs, inputs)]
        if not outer:
            gs = [g.detach() for g in gs]
            out = out.detach()
        it = iter(gs)
        grads = tuple(_tree_map(lambda t: next(it), args[k]) for k in nums)
        grads = grads[0] if isinstance(argnums, int) else grads
        return grads, ((out, aux) if has_aux else out)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of func's scalar output with respect to argument
    argnums (an int or a tuple); composes with itself and with vmap.

    >>> import clgrad
    >>> from clgrad.func import grad
    >>> grad(grad(lambda x: x ** 3))(clgrad.tensor(2.0)).item()
    12.0
    """
    def wrapper(*args, **kwargs):
        g, value = grad_and_value(func, argnums, has_aux)(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn) where vjp_fn(v) gives the vector-Jacobian products with v, one
    per primal.

    >>> import clgrad
    >>> from clgrad.func import vjp
    >>> out, fn = vjp(lambda x: x * 3, clgrad.tensor([1.0, 2.0]))
    >>> fn(clgrad.ones(2))[0].tolist()
    [3.0, 3.0]
    """
    outer = _needs_graph(primals)
    ps = [p if p.requires_grad else p.detach().requires_grad_() for p in primals]
    with enable_grad():
        out = func(*ps)
    aux = None
    if has_aux:
        out, aux = out

    def vjp_fn(v):
        outs, vs = _tensors(out), _tensors(v)
        gs = autograd.grad(outs, ps, vs, retain_graph=True, create_graph=True,
                           allow_unused=True)
        gs = [g if g is not None else p.new_zeros(p.shape) for g, p in zip(gs, ps)]
        return tuple(gs if outer else [g.detach() for g in gs])
    shown = out if outer else _tree_map(lambda t: t.detach(), out)
    return (shown, vjp_fn, aux) if has_aux else (shown, vjp_fn)


def jvp(func, primals, tangents, *, has_aux=False):
    """(func(*primals), the Jacobian of func times tangents), by forward-mode AD.

    >>> import clgrad
    >>> from clgrad.func import jvp
    >>> jvp(lambda x: x ** 2, (clgrad.tensor([3.0]),), (clgrad.tensor([1.0]),))[1].tolist()
    [6.0]
    """
    with fwAD.dual_level():
        duals = [fwAD.make_dual(p, t) for p, t in zip(primals, tangents)]
        out = func(*duals)
        aux = None
        if has_aux:
            out, aux = out
        primal_out = _tree_map(lambda t: fwAD.unpack_dual(t).primal, out)
        tangent_out = _tree_map(lambda t: _zero_if_none(fwAD.unpack_dual(t)), out)
    return (primal_out, tangent_out, aux) if has_aux else (primal_out, tangent_out)


def _zero_if_none(d):
    """A dual's tangent; zeros where the output does not depend on the primals."""
    return d.tangent if d.tangent is not None else d.primal.new_zeros(d.primal.shape)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """A function returning the Jacobian of func with respect to argument argnums, by reverse
    mode (shape: output shape + input shape).

    >>> import clgrad
    >>> from clgrad.func import jacrev
    >>> jacrev(lambda x: x * clgrad.tensor([2.0, 3.0]))(clgrad.ones(2)).tolist()
    [[2.0, 0.0], [0.0, 3.0]]
    """
    def wrapper(*args):
        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

        def f(*xs):
            full = list(args)
            for k, x in zip(nums, xs):
                full[k] = x
            return func(*full)
        create = _needs_graph(args)
        jac = autograd.functional.jacobian(f, tuple(args[k] for k in nums),
                                           create_graph=create)
        return jac[0] if isinstance(argnums, int) else jac
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of func with respect to argument argnums (computed like jacrev: the
    numbers are the same, the mode is an implementation choice).

    >>> import clgrad
    >>> from clgrad.func import jacfwd
    >>> jacfwd(lambda x: x ** 2)(clgrad.tensor([1.0, 2.0])).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
    """
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func, argnums=0):
    """A function returning the Hessian of func's scalar output with respect to argument argnums.

    >>> import clgrad
    >>> from clgrad.func import hessian
    >>> hessian(lambda x: (x ** 3).sum())(clgrad.tensor([1.0, 2.0])).tolist()
    [[6.0, 0.0], [0.0, 12.0]]
    """
    return jacrev(jacrev(func, argnums), argnums)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """module(*args, **kwargs) with some of its parameters and buffers replaced by the given
    tensors for this call only.

    >>> import clgrad
    >>> from clgrad.func import functional_call
    >>> lin = clgrad.nn.Linear(2, 1, bias=False)
    >>> functional_call(lin, {"weight": clgrad.ones(1, 2)}, (clgrad.ones(1, 2),)).item()
    2.0
    """
    if isinstance(parameter_and_buffer_dicts, (list, tuple)):
        merged = {}
        for d in parameter_and_buffer_dicts:
            merged.update(d)
    else:
        merged = dict(parameter_and_buffer_dicts)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    saved = []
    try:
        for name, value in merged.items():
            *path, leaf = name.split(".")
            owner = module
            for p in path:
                owner = getattr(owner, p)
            where = "_parameters" if leaf in owner._parameters else \
                "_buffers" if leaf in owner._buffers else None
            if where is None:
                if strict:
                    raise RuntimeError(f"functional_call: unexpected key {name!r}")
                continue
            table = getattr(owner, where)
            saved.append((table, leaf, table[leaf]))
            table[leaf] = value
        return module(*args, **(kwargs or {}))
    finally:
        for table, leaf, old in reversed(saved):
            table[leaf] = old
