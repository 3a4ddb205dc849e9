"""gradcheck and gradgradcheck: compare the gradients autograd computes with finite differences.

The numerical Jacobian perturbs each input element in place (its own storage, so strided and
non-contiguous inputs are checked as they are); the analytical one runs one backward per output
element.

Complex inputs and outputs are checked as torch checks them: the function is seen as a real
function of the real and imaginary parts (each perturbed on its own), through view_as_real /
view_as_complex, whose gradients are torch's convention (z.grad = dL/dx + i dL/dy for a real L of
z = x + iy). A backward that breaks the convention (g * f'(z) where g * conj(f'(z)) is due, say)
then gives a real Jacobian that differs from the finite differences."""
import numpy as np
import pyopencl as cl

from ..tensor import Tensor
from .grad_mode import no_grad
from ..ops.creation import randn, tensor, zeros, zeros_like
from .engine import grad as autograd_grad
from . import forward_ad as fwAD


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the gradients disagree."""


def _as_tuple(x):
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _flat_outputs(out):
    return tuple(o for o in _as_tuple(out) if isinstance(o, Tensor))


def _element_offsets(t):
    """Storage offsets (elements) of t's elements in row-major order."""
    idx = np.indices(t._shape).reshape(len(t._shape), -1) if t._shape else np.zeros((0, 1), int)
    offs = np.full(idx.shape[1] if t._shape else 1, t._offset, dtype=np.int64)
    for d, st in enumerate(t._strides):
        offs += idx[d] * st
    return offs


def _read(t, off):
    a = np.empty(1, dtype=t._dtype.np)
    cl.enqueue_copy(t._storage.device.queue, a, t._storage.buf,
                    src_offset=int(off) * t._dtype.itemsize, is_blocking=True)
    return a[0]


def _write(t, off, value):
    a = np.array([value], dtype=t._dtype.np)
    cl.enqueue_copy(t._storage.device.queue, t._storage.buf, a,
                    dst_offset=int(off) * t._dtype.itemsize, is_blocking=True)


def _host(t):
    return np.asarray(t.detach().to(t._dtype).numpy(force=True), dtype=np.float64) \
        if t._dtype.kind == "f" else np.asarray(t.numpy(force=True), dtype=np.float64)


def _realified(func, inputs):
    """(func, inputs) with every complex input that requires grad replaced by a real leaf of its
    (re, im) pairs (read back as complex inside the function) and every complex output read as
    its real view; (func, inputs) themselves when nothing is complex."""
    # function-level: the ops sit above the autograd core
    from ..ops.complexes import view_as_complex, view_as_real
    inputs = _as_tuple(inputs)
    cidx = {i for i, t in enumerate(inputs)
            if isinstance(t, Tensor) and t._requires_grad and t._dtype.kind == "c"}
    if not cidx and not any(o._dtype.kind == "c" for o in _flat_outputs(func(*inputs))):
        return func, inputs
    real_inputs = list(inputs)
    for i in cidx:
        with no_grad():
            real_inputs[i] = view_as_real(inputs[i].detach()).clone()
        real_inputs[i].requires_grad_(True)

    def real_func(*args):
        args = [view_as_complex(a) if i in cidx else a for i, a in enumerate(args)]
        out = func(*args)
        if isinstance(out, Tensor):
            return view_as_real(out) if out._dtype.kind == "c" else out
        return tuple(view_as_real(o) if isinstance(o, Tensor) and o._dtype.kind == "c" else o
                     for o in out)
    return real_func, tuple(real_inputs)


def numerical_jacobian(func, inputs, eps=1e-6):
    """[per input: array (input numel, total output numel)] by central differences."""
    inputs = _as_tuple(inputs)
    out0 = _flat_outputs(func(*inputs))
    sizes = [o.numel() for o in out0]
    total = sum(sizes)
    jac = []
    for t in inputs:
        if not (isinstance(t, Tensor) and t._requires_grad):
            jac.append(None)
            continue
        offs = _element_offsets(t)
        j = np.zeros((len(offs), total))
        for k, off in enumerate(offs):
            orig = _read(t, off)
            _write(t, off, orig + eps)
            plus = np.concatenate([_host(o).ravel() for o in _flat_outputs(func(*inputs))]) \
                if total else np.zeros(0)
            _write(t, off, orig - eps)
            minus = np.concatenate([_host(o).ravel() for o in _flat_outputs(func(*inputs))]) \
                if total else np.zeros(0)
            _write(t, off, orig)
            j[k] = (plus - minus) / (2 * eps)
        jac.append(j)
    return jac


def analytical_jacobian(func, inputs):
    inputs = _as_tuple(inputs)
    diff = [t for t in inputs if isinstance(t, Tensor) and t._requires_grad]
    outs = _flat_outputs(func(*inputs))
    sizes = [o.numel() for o in outs]
    total = sum(sizes)
    jac = [np.zeros((t.numel(), total)) if isinstance(t, Tensor) and t._requires_grad else None
           for t in inputs]
    col = 0
    for o, n in zip(outs, sizes):
        if not o._requires_grad:
            col += n
            continue
        for k in range(n):
            g = zeros(*o._shape, dtype=o._dtype, device=o.device)
            flat = g.view(-1) if o._shape else g
            with no_grad():
                if o._shape:
                    flat[k] = 1
                else:
                    g.fill_(1)
            grads = autograd_grad((o,), diff, (g,), retain_graph=True, allow_unused=True)
            gi = iter(grads)
            for i, t in enumerate(inputs):
                if jac[i] is None:
                    continue
                gr = next(gi)
                if gr is not None:
                    jac[i][:, col + k] = _host(gr).ravel()
        col += n
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of func at inputs against finite differences (use float64 inputs, or
    complex128: the real and imaginary parts are perturbed separately); with
    check_forward_ad=True, the forward-mode derivatives too. fast_mode=True checks vᵀJu for
    random unit vectors instead of whole Jacobians (as torch does, for real functions only: a
    complex one is checked whole), which costs two calls of func per input instead of two per
    input element.

    >>> import clgrad
    >>> x = clgrad.randn(3, dtype=clgrad.float64, requires_grad=True)
    >>> clgrad.autograd.gradcheck(lambda t: (t * t).sin(), (x,))
    True
    >>> z = clgrad.randn(3, dtype=clgrad.complex128, requires_grad=True)
    >>> clgrad.autograd.gradcheck(lambda t: (t * t.conj()).exp(), (z,))
    True
    >>> w = clgrad.randn(40, 30, dtype=clgrad.float64, requires_grad=True)
    >>> clgrad.autograd.gradcheck(lambda t: (t @ t.T).tanh(), (w,), fast_mode=True)
    True
    """
    inputs = _as_tuple(inputs)
    original = func
    if any(isinstance(t, Tensor) and t._requires_grad for t in inputs):
        func, inputs = _realified(func, inputs)
    # torch's fast mode is for real functions: with a complex input or output it falls back
    fast_mode = fast_mode and func is original
    if not any(isinstance(t, Tensor) and t._requires_grad for t in inputs):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for i, t in enumerate(inputs):
        if isinstance(t, Tensor) and t._requires_grad and t._dtype.kind == "f" and \
                t._dtype.itemsize < 8:      # (complex inputs are real views by now)
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          f"point. gradcheck needs float64 to be reliable.")
    if fast_mode:
        return _fast_check(func, inputs, eps, atol, rtol, raise_exception, check_backward_ad,
                           check_forward_ad)
    num = numerical_jacobian(func, inputs, eps)
    ana = analytical_jacobian(func, inputs) if check_backward_ad else [None] * len(num)
    for i, (n, a) in enumerate(zip(num, ana)):
        if n is None or a is None:
            continue
        if not np.allclose(a, n, rtol=rtol, atol=atol):
            bad = np.argmax(np.abs(a - n) - (atol + rtol * np.abs(n)))
            msg = (f"Jacobian mismatch for output 0 with respect to input {i},\n"
                   f"numerical:{n}\nanalytical:{a}\n"
                   f"(largest difference at flat position {bad}: numerical "
                   f"{n.ravel()[bad]}, analytical {a.ravel()[bad]})")
            if raise_exception:
                raise GradcheckError(msg)
            return False
    if check_forward_ad:
        fw = forward_jacobian(func, inputs)
        for i, (n, f) in enumerate(zip(num, fw)):
            if n is not None and not np.allclose(f, n, rtol=rtol, atol=atol):
                msg = (f"Jacobian computed with forward mode mismatch for output 0 with respect "
                       f"to input {i},\nnumerical:{n}\nforward mode:{f}")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def _storage_values(t):
    a = np.empty(t._storage.nbytes // t._dtype.itemsize, dtype=t._dtype.np)
    cl.enqueue_copy(t._storage.device.queue, a, t._storage.buf, is_blocking=True)
    return a


def _set_storage(t, values):
    cl.enqueue_copy(t._storage.device.queue, t._storage.buf, values, is_blocking=True)


def _fast_check(func, inputs, eps, atol, rtol, raise_exception, backward, forward):
    """torch's fast mode: instead of whole Jacobians, one number per (input, output) pair:
    vᵀ(J u) for a random unit vector u over the input and v over the output, from central
    differences along u (two calls of func per input) against (vᵀJ)·u from one backward per
    output (and vᵀ(J u) from one forward-mode pass per input)."""
    rng = np.random.default_rng(0)          # reproducible, as the tests that use it must be

    def unit(n):
        x = rng.standard_normal(n)
        return x / np.linalg.norm(x) if n else x

    outs = _flat_outputs(func(*inputs))
    vs = [unit(o.numel()) for o in outs]
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]
    us, numeric = {}, {}          # input -> u; (input, output) -> vᵀ(J u) by differences
    for i in diff:
        t = inputs[i]
        us[i] = unit(t.numel())
        offs, store = _element_offsets(t), _storage_values(t)
        sides = []
        for sign in (1, -1):      # the storage is written whole: strided inputs stay as they are
            moved = store.copy()
            moved[offs] = store[offs] + sign * eps * us[i]
            _set_storage(t, moved)
            sides.append([_host(o).ravel() for o in _flat_outputs(func(*inputs))])
        _set_storage(t, store)
        for j, (p, m) in enumerate(zip(*sides)):
            numeric[(i, j)] = float(vs[j] @ ((p - m) / (2 * eps)))
    checks = []                   # (input, output, what computed it, its vᵀ(J u))
    if backward:
        outs = _flat_outputs(func(*inputs))
        for j, o in enumerate(outs):
            grads = [None] * len(diff)
            if o._requires_grad and o.numel():
                v = tensor(vs[j].reshape(o._shape), dtype=o._dtype, device=o.device)
                grads = autograd_grad((o,), [inputs[i] for i in diff], (v,), retain_graph=True,
                                      allow_unused=True)
            checks += [(i, j, "analytical", 0.0 if g is None else float(_host(g).ravel() @ us[i]))
                       for i, g in zip(diff, grads)]
    if forward:
        for i in diff:
            t = inputs[i]
            with fwAD.dual_level():
                args = list(inputs)
                args[i] = fwAD.make_dual(t, tensor(us[i].reshape(t._shape), dtype=t._dtype,
                                                   device=t.device))
                for j, o in enumerate(_flat_outputs(func(*args))):
                    tan = fwAD.unpack_dual(o).tangent
                    checks.append((i, j, "forward mode",
                                   0.0 if tan is None else float(vs[j] @ _host(tan).ravel())))
    for i, j, what, got in checks:
        want = numeric[(i, j)]
        if not np.isclose(got, want, rtol=rtol, atol=atol):
            msg = (f"Jacobian mismatch for output {j} with respect to input {i},\n"
                   f"numerical:{want}\n{what}:{got}\n\nThe above quantities relating the "
                   f"numerical and analytical jacobians are computed in fast mode: vᵀ(J u) for "
                   f"random unit vectors u and v. Rerun with fast_mode=False for the whole "
                   f"Jacobians.")
            if raise_exception:
                raise GradcheckError(msg)
            return False
    return True


def forward_jacobian(func, inputs):
    """[per input: array (input numel, total output numel)] by forward-mode AD: one pass per
    input element, with that element's basis vector as tangent.

    >>> import clgrad
    >>> x = clgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> forward_jacobian(lambda t: t * t, (x,))[0].tolist()
    [[2.0, 0.0], [0.0, 4.0]]
    """
    inputs = _as_tuple(inputs)
    jac = []
    for i, t in enumerate(inputs):
        if not (isinstance(t, Tensor) and t._requires_grad):
            jac.append(None)
            continue
        rows = []
        for k in range(t.numel()):
            v = zeros_like(t)
            with no_grad():
                v.view(-1)[k] = 1
            with fwAD.dual_level():
                args = list(inputs)
                args[i] = fwAD.make_dual(t, v)
                outs = _flat_outputs(func(*args))
                row = []
                for o in outs:
                    tan = fwAD.unpack_dual(o).tangent
                    row.append(_host(tan).ravel() if tan is not None else np.zeros(o.numel()))
            rows.append(np.concatenate(row) if row else np.zeros(0))
        jac.append(np.array(rows).reshape(t.numel(), -1))
    return jac


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Check second derivatives: gradcheck of the map (inputs, v) -> vᵀJ.

    >>> import clgrad
    >>> x = clgrad.randn(3, dtype=clgrad.float64, requires_grad=True)
    >>> clgrad.autograd.gradgradcheck(lambda t: (t * t * t).sum(), (x,))
    True
    """
    inputs = _as_tuple(inputs)
    func, inputs = _realified(func, inputs)
    outs = _flat_outputs(func(*inputs))
    if grad_outputs is None:
        grad_outputs = tuple(randn(*o._shape, dtype=o._dtype, device=o.device,
                                   requires_grad=True) for o in outs if o._requires_grad)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]

    def first_order(*args):
        ins, gos = args[:n_in], args[n_in:]
        o = [x for x in _flat_outputs(func(*ins)) if x._requires_grad]
        gs = autograd_grad(o, [ins[i] for i in diff_idx], gos, create_graph=True,
                           allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_order, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, fast_mode=fast_mode)
