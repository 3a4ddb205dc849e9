"""Gradients of complex tensors, in torch's convention (the conjugate Wirtinger derivative:
z.grad = dL/dx + i dL/dy for a real loss L of z = x + iy): gradcheck and gradgradcheck on
complex inputs (their real and imaginary parts perturbed separately), in-place changes through
views that cross between complex and real, and rotary position embeddings written the Llama way,
run verbatim with `import clgrad as torch` and checked against numpy, gradients included."""
import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck, gradgradcheck


@pytest.fixture
def c128(device):
    if not device.has_fp64:
        pytest.skip("gradcheck wants complex128: the device has no fp64")
    return clgrad.complex128


def _z(shape, seed, dt):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return clgrad.tensor(a, dtype=dt, requires_grad=True)


_FUNCS = {
    "mul": lambda a, b: a * b, "div": lambda a, b: a / b, "sub": lambda a, b: a - 2 * b,
    "pow": lambda a, b: a ** b, "pow_scalar": lambda a, b: a ** 3 + b ** 0.5,
    "exp_log": lambda a, b: a.exp() + b.log(), "sqrt_rsqrt": lambda a, b: a.sqrt() * b.rsqrt(),
    "trig": lambda a, b: a.sin() * b.cos() + a.sinh() - b.cosh(),
    "tanh_sigmoid": lambda a, b: a.tanh() + b.sigmoid(), "reciprocal": lambda a, b: a.reciprocal(),
    "abs_angle": lambda a, b: a.abs() * b.angle(), "sgn": lambda a, b: a.sgn() + b,
    "conj": lambda a, b: a.conj() * b, "real_imag": lambda a, b: a.real * b.imag,
    "view_as_real": lambda a, b: clgrad.view_as_real(a * b).sum(-1),
    "complex_polar": lambda a, b: clgrad.complex(a.real, b.imag) * clgrad.polar(a.abs(), b.angle()),
    "scalars": lambda a, b: a * 1j - b / (1 + 2j) + 3,
    "real_operand": lambda a, b: a * b.real + b.imag,
    "sum_mean_prod": lambda a, b: (a * b).sum() + a.mean(0) * b.prod(),
    "matmul": lambda a, b: a[:, None] @ b[None, :] @ a[:, None],
    "where_index": lambda a, b: clgrad.where(a.real > 0, a, b)[[0, 2]],
}


@pytest.mark.parametrize("name", sorted(_FUNCS))
def test_gradcheck_on_complex_inputs(c128, name):
    a, b = _z(3, 1, c128), _z(3, 2, c128)
    assert gradcheck(_FUNCS[name], (a, b))
    assert gradgradcheck(_FUNCS[name], (a, b))


@pytest.mark.parametrize("name", ["mul", "div", "exp_log", "tanh_sigmoid", "abs_angle", "sgn",
                                  "conj", "real_imag", "pow", "matmul", "sum_mean_prod"])
def test_forward_mode_on_complex_inputs(c128, name):
    # forward mode: t * f'(z) for holomorphic f (conj of the VJP of conj t), explicit rules for
    # abs, angle and sgn
    a, b = _z(3, 4, c128), _z(3, 5, c128)
    assert gradcheck(_FUNCS[name], (a, b), check_forward_ad=True)


def test_gradcheck_catches_a_wrong_convention(c128):
    # a backward of g * f'(z) instead of g * conj(f'(z)) is wrong for complex z
    class BadMul(clgrad.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return g * 2 * a

    z = _z(2, 3, c128)
    assert not gradcheck(BadMul.apply, (z,), raise_exception=False)
    x = clgrad.tensor([0.5, -1.0], dtype=clgrad.float64, requires_grad=True)
    assert gradcheck(BadMul.apply, (x,))                    # right for real inputs


def test_gradient_convention_against_closed_forms(device):
    z0 = np.array([1 + 2j, -0.5 + 0.25j, 3 - 1j])
    z = clgrad.tensor(z0, dtype=clgrad.complex64, requires_grad=True)
    (z.abs() ** 2).sum().backward()            # |z|^2 = x^2 + y^2: grad 2x + 2iy = 2z
    np.testing.assert_allclose(z.grad.numpy(), 2 * z0, rtol=1e-5)
    z.grad = None
    z.angle().sum().backward()                 # atan2(y, x): (-y + ix) / |z|^2
    np.testing.assert_allclose(z.grad.numpy(), 1j * z0 / np.abs(z0) ** 2, rtol=1e-5)
    w = clgrad.tensor([2 - 1j, 1j, 0.5], dtype=clgrad.complex64)
    z.grad = None
    (z * w).real.sum().backward()              # Re(z w): grad conj(w)
    np.testing.assert_allclose(z.grad.numpy(), np.conj(w.numpy()), rtol=1e-6)
    x = clgrad.tensor([1.0, 2.0], requires_grad=True)
    (x * (1 + 2j)).imag.sum().backward()       # a real input takes the real part
    assert x.grad.dtype is clgrad.float32 and x.grad.tolist() == [2.0, 2.0]


def test_inplace_through_views_between_complex_and_real(device):
    z0 = np.array([1 + 2j, 3 - 1j, -0.5 + 0.5j], dtype=np.complex64)
    z = clgrad.tensor(z0, requires_grad=True)
    w = z * 1
    w.real.mul_(3)                             # a real view of a complex tensor, in place
    m = np.array([1j, 2, 3 + 1j], dtype=np.complex64)
    loss = (w * clgrad.tensor(m)).abs().sum() + clgrad.view_as_real(w)[..., 1].sum()
    loss.backward()
    # the reference: w = 3 Re z + i Im z, L = sum |w m| + sum Im w
    wv = 3 * z0.real + 1j * z0.imag
    gw = np.conj(m) * (wv * m) / np.abs(wv * m) + 1j
    np.testing.assert_allclose(z.grad.numpy(), 3 * gw.real + 1j * gw.imag, rtol=1e-5)
    x = clgrad.tensor(np.arange(6.0, dtype=np.float32).reshape(3, 2), requires_grad=True)
    y = x * 1
    clgrad.view_as_complex(y).mul_(1j)         # a complex view of a real tensor, in place
    (y * clgrad.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
    # y = (-x1, x0) per row: dL/dx0 = c1, dL/dx1 = -c0
    assert x.grad.tolist() == [[2.0, -1.0], [4.0, -3.0], [6.0, -5.0]]


# ---- rotary position embeddings, as Llama writes them ------------------------------------------
LLAMA = '''
import clgrad as torch


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)  # type: ignore
    freqs = torch.outer(t, freqs).float()  # type: ignore
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex64
    return freqs_cis


def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor):
    ndim = x.ndim
    assert 0 <= 1 < ndim
    assert freqs_cis.shape == (x.shape[1], x.shape[-1])
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)
'''


def _rope_reference(x, dim, end):
    """numpy: rotate each (even, odd) pair of the last dim by t * theta^(-2j / dim)."""
    freqs = 1.0 / (10000.0 ** (np.arange(0, dim, 2)[: dim // 2].astype(np.float32) / dim))
    ang = np.outer(np.arange(end), freqs)                         # (seq, dim / 2)
    rot = np.exp(1j * ang)[None, :, None, :]                      # (1, seq, 1, dim / 2)
    xc = x[..., 0::2] + 1j * x[..., 1::2]
    return xc * rot, rot


def test_llama_rotary_embeddings_verbatim(device):
    ns = {}
    exec(compile(LLAMA, "llama_rope", "exec"), ns)
    bsz, seq, heads, dim = 2, 5, 3, 8
    rng = np.random.default_rng(0)
    q = rng.standard_normal((bsz, seq, heads, dim)).astype(np.float32)
    k = rng.standard_normal((bsz, seq, heads, dim)).astype(np.float32)
    xq = clgrad.tensor(q, requires_grad=True)
    xk = clgrad.tensor(k, requires_grad=True)
    freqs_cis = ns["precompute_freqs_cis"](dim, seq)
    assert freqs_cis.dtype is clgrad.complex64 and freqs_cis.shape == (seq, dim // 2)
    oq, ok = ns["apply_rotary_emb"](xq, xk, freqs_cis)
    assert oq.shape == (bsz, seq, heads, dim) and oq.dtype is clgrad.float32
    rq, rot = _rope_reference(q, dim, seq)
    rk, _ = _rope_reference(k, dim, seq)
    np.testing.assert_allclose(oq.detach().numpy(), np.stack([rq.real, rq.imag], -1)
                               .reshape(q.shape), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ok.detach().numpy(), np.stack([rk.real, rk.imag], -1)
                               .reshape(k.shape), rtol=1e-5, atol=1e-5)
    # gradients: a rotation's gradient is the incoming gradient rotated back
    gq = rng.standard_normal(q.shape).astype(np.float32)
    gk = rng.standard_normal(k.shape).astype(np.float32)
    ((oq * clgrad.tensor(gq)).sum() + (ok * clgrad.tensor(gk)).sum()).backward()
    for x, g in ((xq, gq), (xk, gk)):
        back = (g[..., 0::2] + 1j * g[..., 1::2]) * np.conj(rot)
        np.testing.assert_allclose(x.grad.numpy(), np.stack([back.real, back.imag], -1)
                                   .reshape(g.shape), rtol=1e-5, atol=1e-5)
