"""Higher-level derivatives of whole functions, as torch.autograd.functional has them: jacobian,
hessian, vjp, jvp, hvp, vhp.

`func` takes one tensor or a tuple of tensors and returns one tensor or a tuple of tensors; the
results nest the same way torch's do (a tuple per output, inside it one entry per input). The
inputs are not modified: func sees fresh tensors that require grad.

>>> import clgrad
>>> from clgrad.autograd.functional import jacobian
>>> jacobian(lambda x: x ** 2, clgrad.tensor([1.0, 2.0])).tolist()
[[2.0, 0.0], [0.0, 4.0]]

jvp and hvp use the double-backward trick, as torch's do (J·v is the gradient of <vᵀJ, u> with
respect to u); jacobian(..., strategy="forward-mode") and hessian(...,
outer_jacobian_strategy="forward-mode") use forward-mode AD (autograd.forward_ad) instead.
`vectorize=True` is accepted: clgrad has no vmap, so the rows (or columns) are computed one after
the other either way, with the same results.
"""
from ..ops.creation import zeros_like
from ..ops.join import stack
from ..tensor import Tensor
from . import forward_ad as fwAD
from .engine import grad as _grad
from .grad_mode import enable_grad, set_grad_enabled
from .grad_mode import state as _grad_state

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# ---- argument handling (torch's helpers, with torch's errors) ---------------------------------
def _as_tuple(inp, arg_name=None, fn_name=None):
    """(whether inp was a tuple, inp as a tuple of tensors)."""
    if arg_name is None and fn_name is None:
        return inp if isinstance(inp, tuple) else tuple(inp) if isinstance(inp, list) else (inp,)
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                                f"tuple of Tensors but the value at index {i} has type "
                                f"{type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple "
                            f"of Tensors but the given {arg_name} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undo _as_tuple: unwrap what was not a tuple (to_unpack: one flag, or (outputs, inputs))."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """Fresh tensors for func: always new objects (so that inputs func captures by closure are
    told apart), connected to the caller's graph only when create_graph asks for it."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got "
                               f"{el_v.size()}.")


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input "
                               f"{i}. This is not allowed in strict mode.")
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(f"The hessian of the user-provided function with respect to "
                                   f"input {i} is independent of the input. This is not allowed "
                                   f"in strict mode. You should ensure that your function is "
                                   f"thrice differentiable and that the hessian depends on the "
                                   f"inputs.")
            if input_type == "jacobian":
                raise RuntimeError(f"While computing the hessian, found that the jacobian of the "
                                   f"user-provided function with respect to input {i} is "
                                   f"independent of the input. This is not allowed in strict "
                                   f"mode. You should ensure that your function is twice "
                                   f"differentiable and that the jacobian depends on the inputs "
                                   f"(this would be violated by a linear function for example).")
            if input_type == "grad_inputs":
                raise RuntimeError(f"The gradient with respect to input {i} is independent of the "
                                   f"inputs of the user-provided function. This is not allowed "
                                   f"in strict mode.")
            raise RuntimeError(f"Output {i} of the user-provided function does not require "
                               f"gradients. The outputs must be computed in a differentiable "
                               f"manner from the input when running in strict mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad that skips outputs which are None or do not require grad."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grads = [], []
    for out, g in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grads.append(g)
    if not new_outputs:
        return (None,) * len(inputs)
    return _grad(new_outputs, inputs, new_grads, allow_unused=True, create_graph=create_graph,
                 retain_graph=retain_graph)


_STRICT_ZERO_MSG = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
            "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This "
                   "is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
                         "in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward mode "
                         "AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """Zeros for the gradients that are None (or torch's error in strict mode)."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT_ZERO_MSG[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            if "double" not in stage:
                raise RuntimeError(f"The jacobian of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode when "
                                   f"create_graph=True.")
            raise RuntimeError(f"The hessian of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               f"create_graph=True.")
        res.append(g)
    return tuple(res)


def _prepare(inputs, v, create_graph, fn_name):
    """Shared start of vjp, jvp, vhp, hvp: inputs made ready, v checked."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
    return is_inputs_tuple, inputs, v


def _scalar_output(func, inputs, strict, fn_name):
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           f"contain a single element")
    return is_outputs_tuple, outputs


def _v_for_inputs(v, inputs, is_inputs_tuple):
    if v is not None:
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].nelement() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")


# ---- the functions -------------------------------------------------------------------------------
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), vᵀ·J): the vector-Jacobian product at inputs, shaped like the inputs.

    >>> import clgrad
    >>> from clgrad.autograd.functional import vjp
    >>> out, g = vjp(lambda x: x.exp().sum(dim=1), clgrad.zeros(2, 2), clgrad.ones(2))
    >>> out.tolist(), g.tolist()
    ([2.0, 2.0], [[1.0, 1.0], [1.0, 1.0]])
    """
    with enable_grad():
        is_inputs_tuple, inputs, v = _prepare(inputs, v, create_graph, "vjp")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
    with set_grad_enabled(True if create_graph else _grad_state.grad_enabled):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J·v): the Jacobian-vector product at inputs, shaped like the outputs
    (computed with the double-backward trick, like torch's).

    >>> import clgrad
    >>> from clgrad.autograd.functional import jvp
    >>> out, jv = jvp(lambda x, y: 2 * x + 3 * y, (clgrad.ones(2), clgrad.ones(2)),
    ...               (clgrad.ones(2), clgrad.ones(2)))
    >>> jv.tolist()
    [5.0, 5.0]
    """
    with enable_grad():
        is_inputs_tuple, inputs, v = _prepare(inputs, v, create_graph, "jvp")
        _v_for_inputs(v, inputs, is_inputs_tuple)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        # backward is linear in grad_outputs, so their value does not matter (zeros: no inf/nan)
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else _grad_state.grad_enabled):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(res, is_outputs_tuple))


def _jacfwd(func, inputs, strict=False, vectorize=False):
    """The Jacobian by forward-mode AD: one pass per input element, its tangent a basis vector."""
    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy='
                           '"forward-mode"` are not supported together (yet). Please either set '
                           '`strict=False` or `strategy="reverse-mode"`.')
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    columns = [[] for _ in inputs]          # per input: per element, the output tangents
    is_outputs_tuple, primal_outs = None, None
    for j, inp in enumerate(inputs):
        for k in range(inp.numel()):
            basis = zeros_like(inp)
            basis.view(-1)[k] = 1
            with fwAD.dual_level():
                duals = tuple(fwAD.make_dual(x, basis if i == j else zeros_like(x))
                              for i, x in enumerate(inputs))
                is_outputs_tuple, outs = _as_tuple(func(*duals), "outputs")
                tangents, primal_outs = [], []
                for out in outs:
                    primal, tangent = fwAD.unpack_dual(out)
                    primal_outs.append(primal)
                    tangents.append(tangent if tangent is not None else zeros_like(primal))
            columns[j].append(tangents)
    if primal_outs is None:                 # every input is empty
        is_outputs_tuple, primal_outs = _as_tuple(func(*inputs), "outputs")
    jac = []
    for i, out in enumerate(primal_outs):
        row = []
        for j, inp in enumerate(inputs):
            if inp.numel():
                col = stack([c[i] for c in columns[j]], dim=-1)        # out.shape + (numel,)
            else:
                col = zeros_like(out).unsqueeze(-1)[..., :0]
            row.append(col.reshape(tuple(out.shape) + tuple(inp.shape)))
        jac.append(tuple(row))
    return _tuple_postprocess(tuple(jac), (is_outputs_tuple, is_inputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of func at inputs: a tensor of shape output.shape + input.shape, or nested
    tuples of them (jacobian[i][j]: output i with respect to input j).

    >>> import clgrad
    >>> from clgrad.autograd.functional import jacobian
    >>> f = lambda x, y: (x * y, x.sum())
    >>> j = jacobian(f, (clgrad.tensor([1.0, 2.0]), clgrad.tensor([3.0, 4.0])))
    >>> j[0][1].tolist(), j[1][0].tolist()
    ([[1.0, 0.0], [0.0, 2.0]], [1.0, 1.0])
    >>> jacobian(lambda x: x ** 2, clgrad.tensor([3.0]), vectorize=True,
    ...          strategy="forward-mode").tolist()
    [[6.0]]
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, "forward-mode" '
                             'tends to be more performant. Otherwise, prefer to use '
                             '"reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` '
                                      'and `strategy="forward-mode"` are not supported together '
                                      '(yet). Please either set `create_graph=False` or '
                                      '`strategy="reverse-mode"`.')
        return _jacfwd(func, inputs, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either set "
                               "`strict=False` or `vectorize=False`.")
        jac = []
        for i, out in enumerate(outputs):
            rows = tuple([] for _ in inputs)          # per input: one gradient per out element
            flat = out.reshape(-1)
            for k in range(out.nelement()):
                vj = _autograd_grad((flat[k],), inputs, retain_graph=True,
                                    create_graph=create_graph)
                for j, (row, g, inp) in enumerate(zip(rows, vj, inputs)):
                    if g is not None:
                        if strict and create_graph and not g.requires_grad:
                            raise RuntimeError(f"The jacobian of the user-provided function is "
                                               f"independent of input {i}. This is not allowed "
                                               f"in strict mode when create_graph=True.")
                        row.append(g)
                    else:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is "
                                               f"independent of input {j}. This is not allowed "
                                               f"in strict mode.")
                        row.append(zeros_like(inp))
            jac.append(tuple(
                (stack(row, dim=0) if row else zeros_like(inp).reshape((0,) + tuple(inp.shape)))
                .view(tuple(out.shape) + tuple(inp.shape))
                for row, inp in zip(rows, inputs)))
        jac = _grad_postprocess(tuple(jac), create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function at inputs: shape input.shape + input.shape, or
    hessian[i][j] for inputs i and j. It is the Jacobian of the (reverse-mode) gradient; the outer
    Jacobian may be taken in forward mode (forward-over-reverse).

    >>> import clgrad
    >>> from clgrad.autograd.functional import hessian
    >>> hessian(lambda x: (x ** 3).sum(), clgrad.tensor([1.0, 2.0])).tolist()
    [[6.0, 0.0], [0.0, 12.0]]
    >>> hessian(lambda x: (x ** 3).sum(), clgrad.tensor([1.0, 2.0]), vectorize=True,
    ...         outer_jacobian_strategy="forward-mode").tolist()
    [[6.0, 0.0], [0.0, 12.0]]
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            # the dual inputs must require grad, or _grad_preprocess would detach their tangents
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), vᵀ·H) for a scalar function: the vector-Hessian product, shaped like the
    inputs.

    >>> import clgrad
    >>> from clgrad.autograd.functional import vhp
    >>> out, r = vhp(lambda x: (x ** 3).sum(), clgrad.tensor([1.0, 2.0]), clgrad.ones(2))
    >>> out.item(), r.tolist()
    (9.0, [6.0, 12.0])
    """
    with enable_grad():
        is_inputs_tuple, inputs, v = _prepare(inputs, v, create_graph, "vhp")
        _v_for_inputs(v, inputs, is_inputs_tuple)
        is_outputs_tuple, outputs = _scalar_output(func, inputs, strict, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with set_grad_enabled(True if create_graph else _grad_state.grad_enabled):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H·v) for a scalar function: the Hessian-vector product, shaped like the
    inputs (the double-backward trick on top of the gradient, like torch's).

    >>> import clgrad
    >>> from clgrad.autograd.functional import hvp
    >>> out, r = hvp(lambda x, y: (x * y * y).sum(), (clgrad.ones(2), clgrad.ones(2)),
    ...              (clgrad.ones(2), clgrad.zeros(2)))
    >>> [t.tolist() for t in r]
    [[0.0, 0.0], [2.0, 2.0]]
    """
    with enable_grad():
        is_inputs_tuple, inputs, v = _prepare(inputs, v, create_graph, "hvp")
        _v_for_inputs(v, inputs, is_inputs_tuple)
        is_outputs_tuple, outputs = _scalar_output(func, inputs, strict, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else _grad_state.grad_enabled):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_inputs_tuple)
