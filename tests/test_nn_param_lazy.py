"""nn.utils.parametrize and its parametrizations (weight_norm, spectral_norm, orthogonal, and the
legacy hook-based weight_norm / spectral_norm) against numpy formulas, with torch's state_dict
keys and errors; the lazy modules (shapes inferred at the first call, then the non-lazy class)."""
import warnings

import numpy as np
import pytest

import clgrad
from clgrad import nn
from clgrad.autograd import gradcheck
from clgrad.nn.utils import parametrizations, parametrize


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


class Scale(nn.Module):
    def forward(self, X):
        return X * 3


class Split(nn.Module):
    # parametrized by two tensors: W = a + b, stored as original0 and original1
    def forward(self, a, b):
        return a + b

    def right_inverse(self, W):
        return W * 0.5, W * 0.5


def _sym(a):
    return np.triu(a) + np.triu(a, 1).T


def test_register_parametrization_values_assignment_and_removal(device):
    lin = nn.Linear(3, 3)
    w0 = lin.weight.detach().numpy().copy()
    param = lin.weight
    parametrize.register_parametrization(lin, "weight", Symmetric())
    assert type(lin).__name__ == "ParametrizedLinear" and isinstance(lin, nn.Linear)
    assert parametrize.is_parametrized(lin) and parametrize.is_parametrized(lin, "weight")
    assert not parametrize.is_parametrized(lin, "bias")
    assert parametrize.type_before_parametrizations(lin) is nn.Linear
    # right_inverse ran at registration and kept the very Parameter object
    assert lin.parametrizations.weight.original is param
    np.testing.assert_allclose(param.detach().numpy(), np.triu(w0), rtol=1e-6)
    np.testing.assert_allclose(lin.weight.detach().numpy(), _sym(w0), rtol=1e-6)
    assert list(lin.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in lin.named_parameters()] == ["bias", "parametrizations.weight.original"]
    x = np.random.RandomState(0).randn(2, 3).astype(np.float32)
    out = lin(clgrad.tensor(x))
    ref = x @ _sym(w0).T + lin.bias.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-5, atol=1e-6)
    out.sum().backward()                         # the gradient reaches the stored tensor
    assert param.grad is not None and param.grad.shape == (3, 3)
    # assigning goes through right_inverse
    S = _sym(np.arange(9.0, dtype=np.float32).reshape(3, 3))
    lin.weight = clgrad.tensor(S)
    np.testing.assert_allclose(lin.weight.detach().numpy(), S)
    # another instance of the class is untouched
    assert "parametrizations" not in nn.Linear(2, 2).__dict__["_modules"]
    with pytest.raises(KeyError):                # torch: "attribute 'weight' already exists"
        lin.weight = nn.Parameter(clgrad.zeros(3, 3))
    parametrize.remove_parametrizations(lin, "weight")
    assert type(lin) is nn.Linear and lin.weight is param
    np.testing.assert_allclose(lin.weight.detach().numpy(), S)
    assert list(lin.state_dict()) == ["bias", "weight"]
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(lin, "weight")


def test_parametrize_chain_sequence_leave_unparametrized_and_errors(device):
    lin = nn.Linear(2, 2)
    w0 = lin.weight.detach().numpy().copy()
    parametrize.register_parametrization(lin, "weight", Scale())
    parametrize.register_parametrization(lin, "weight", Scale())
    np.testing.assert_allclose(lin.weight.detach().numpy(), 9 * w0, rtol=1e-6)
    assert len(lin.parametrizations.weight) == 2
    parametrize.remove_parametrizations(lin, "weight", leave_parametrized=False)
    np.testing.assert_allclose(lin.weight.detach().numpy(), w0, rtol=1e-6)
    # right_inverse returning two tensors: original0 and original1
    lin = nn.Linear(2, 2)
    w0 = lin.weight.detach().numpy().copy()
    parametrize.register_parametrization(lin, "weight", Split())
    assert sorted(lin.state_dict()) == ["bias", "parametrizations.weight.original0",
                                        "parametrizations.weight.original1"]
    np.testing.assert_allclose(lin.parametrizations.weight.original1.detach().numpy(), w0 / 2)
    with pytest.raises(ValueError, match="sequence of tensors"):
        parametrize.remove_parametrizations(lin, "weight", leave_parametrized=False)
    parametrize.remove_parametrizations(lin, "weight")
    np.testing.assert_allclose(lin.weight.detach().numpy(), w0, rtol=1e-6)
    # errors of torch's types
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        parametrize.register_parametrization(nn.Linear(2, 2), "nope", Scale())

    class Shrink(nn.Module):
        def forward(self, X):
            return X[:1]
    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(nn.Linear(2, 2), "weight", Shrink())
    m = parametrize.register_parametrization(nn.Linear(2, 2), "weight", Shrink(), unsafe=True)
    assert m.weight.shape == (1, 2)
    # a buffer can be parametrized too, and stays a buffer
    bn = nn.BatchNorm1d(2)
    parametrize.register_parametrization(bn, "running_var", Scale())
    assert "parametrizations.running_var.original" in bn.state_dict()
    np.testing.assert_allclose(bn.running_var.numpy(), [3.0, 3.0])


def test_parametrize_cached(device):
    calls = []

    class Count(nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 2
    lin = parametrize.register_parametrization(nn.Linear(2, 2), "weight", Count())
    calls.clear()
    with parametrize.cached():
        a, b = lin.weight, lin.weight
        assert a is b and len(calls) == 1
    c = lin.weight
    assert c is not a and len(calls) == 2


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_values_grads_and_keys(device, dim):
    dt = clgrad.float64 if device.has_fp64 else clgrad.float32
    conv = nn.Conv1d(2, 3, 2).to(dt)
    w = conv.weight.detach().numpy().copy()
    parametrizations.weight_norm(conv, dim=dim)
    g = conv.parametrizations.weight.original0.detach().numpy()
    axes = tuple(a for a in range(3) if a != dim) if dim is not None else None
    ref_g = np.sqrt((w ** 2).sum(axis=axes, keepdims=dim is not None))
    np.testing.assert_allclose(g, ref_g, rtol=1e-6)
    np.testing.assert_allclose(conv.weight.detach().numpy(), w, rtol=1e-6)
    assert sorted(conv.state_dict()) == ["bias", "parametrizations.weight.original0",
                                         "parametrizations.weight.original1"]
    if dt is clgrad.float64:
        wn = conv.parametrizations.weight[0]
        gg = clgrad.tensor(ref_g * 1.5, dtype=dt, requires_grad=True)
        v = clgrad.tensor(w, dtype=dt, requires_grad=True)
        assert gradcheck(lambda g_, v_: wn(g_, v_), (gg, v))
        # the forward is g * v / ||v||
        norm = np.sqrt((w ** 2).sum(axis=axes, keepdims=dim is not None))
        np.testing.assert_allclose(wn(gg, v).detach().numpy(), ref_g * 1.5 * w / norm,
                                   rtol=1e-10)


def test_spectral_norm_sigma_buffers_and_errors(device):
    lin = nn.Linear(5, 4)
    # singular values well apart, so that the power method's 15 first iterations converge
    # (a random init can have the top two close, and the test was flaky)
    rng = np.random.default_rng(3)
    u_, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    v_, _ = np.linalg.qr(rng.normal(size=(5, 4)))
    with clgrad.no_grad():
        lin.weight.copy_(clgrad.tensor((u_ * [3.0, 1.0, 0.5, 0.2]) @ v_.T, dtype=clgrad.float32))
    w = lin.weight.detach().numpy().astype(np.float64)
    parametrizations.spectral_norm(lin, n_power_iterations=3)
    assert list(lin.state_dict()) == ["bias", "parametrizations.weight.original",
                                      "parametrizations.weight.0._u",
                                      "parametrizations.weight.0._v"]
    sn = lin.parametrizations.weight[0]
    assert sn._u.shape == (4,) and sn._v.shape == (5,)
    np.testing.assert_allclose(lin.weight.detach().numpy(), w / np.linalg.svd(w)[1][0],
                               rtol=1e-3, atol=1e-5)
    # training mode runs the power method at each access; eval mode leaves u and v alone
    lin.eval()
    u = sn._u.numpy().copy()
    _ = lin.weight
    np.testing.assert_array_equal(sn._u.numpy(), u)
    lin.train()
    lin.parametrizations.weight.original.data = clgrad.tensor(2 * w.astype(np.float32))
    _ = lin.weight
    np.testing.assert_allclose(lin.weight.detach().numpy(), w / np.linalg.svd(w)[1][0],
                               rtol=1e-3, atol=1e-5)
    # ConvTranspose: the output dim is 1
    ct = parametrizations.spectral_norm(nn.ConvTranspose1d(2, 3, 2))
    assert ct.parametrizations.weight[0]._u.shape == (3,)
    # a 1-d weight is normalised
    v = nn.Module()
    v.w = nn.Parameter(clgrad.tensor([3.0, 4.0]))
    parametrizations.spectral_norm(v, "w")
    np.testing.assert_allclose(v.w.detach().numpy(), [0.6, 0.8], rtol=1e-6)
    with pytest.raises(IndexError, match="Dimension out of range"):
        parametrizations.spectral_norm(nn.Linear(2, 2), dim=2)
    with pytest.raises(ValueError, match="n_power_iterations"):
        parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="no parameter or buffer with name 'w'"):
        parametrizations.spectral_norm(nn.Linear(2, 2), "w")


def test_spectral_norm_gradcheck(device):
    if not device.has_fp64:
        pytest.skip("gradcheck needs float64")
    lin = nn.Linear(3, 2).double()
    parametrizations.spectral_norm(lin)
    sn = lin.parametrizations.weight[0].eval()     # fixed u, v: a smooth function of W
    W = lin.parametrizations.weight.original.detach().clone().requires_grad_()
    assert gradcheck(lambda w: sn(w), (W,))


@pytest.mark.parametrize("shape,orth_map", [((3, 3), None), ((4, 2), "cayley"),
                                             ((2, 4), "matrix_exp"), ((4, 3), None)])
def test_orthogonal(device, shape, orth_map):
    lin = nn.Linear(shape[1], shape[0])
    parametrizations.orthogonal(lin, orthogonal_map=orth_map)
    Q = lin.weight.detach().numpy().astype(np.float64)
    k = min(shape)
    gram = Q.T @ Q if shape[0] >= shape[1] else Q @ Q.T
    np.testing.assert_allclose(gram, np.eye(k), atol=2e-5)
    assert list(lin.state_dict()) == ["bias", "parametrizations.weight.original",
                                      "parametrizations.weight.0.base"]
    # training moves the stored tensor, and the weight stays orthogonal
    opt = clgrad.optim.SGD(lin.parameters(), lr=0.1)
    lin(clgrad.randn(2, shape[1])).pow(2).sum().backward()
    assert lin.parametrizations.weight.original.grad is not None
    opt.step()
    Q2 = lin.weight.detach().numpy().astype(np.float64)
    assert not np.allclose(Q2, Q)
    gram = Q2.T @ Q2 if shape[0] >= shape[1] else Q2 @ Q2.T
    np.testing.assert_allclose(gram, np.eye(k), atol=2e-5)
    # assigning an orthogonal matrix gives it back
    A = np.linalg.qr(np.random.RandomState(1).randn(max(shape), k))[0].astype(np.float32)
    A = A if shape[0] >= shape[1] else A.T
    lin.weight = clgrad.tensor(A)
    np.testing.assert_allclose(lin.weight.detach().numpy(), A, atol=2e-5)


def test_orthogonal_keeps_orthogonal_init_and_errors(device):
    lin = nn.Linear(3, 3, bias=False)
    Q = np.linalg.qr(np.random.RandomState(2).randn(3, 3))[0].astype(np.float32)
    with clgrad.no_grad():
        lin.weight.copy_(clgrad.tensor(Q))
    parametrizations.orthogonal(lin)
    np.testing.assert_allclose(lin.weight.detach().numpy(), Q, atol=2e-5)
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        parametrizations.orthogonal(nn.Linear(2, 2), orthogonal_map="qr")
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
        parametrizations.orthogonal(nn.Linear(2, 2), "bias")
    m = parametrizations.orthogonal(nn.Linear(2, 2), use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        m.weight = clgrad.eye(2)


@pytest.mark.parametrize("shape", [(5, 3), (2, 4)])
def test_orthogonal_householder_without_trivialization(device, shape):
    lin = nn.Linear(shape[1], shape[0])
    w = lin.weight.detach().numpy().astype(np.float64)
    parametrizations.orthogonal(lin, orthogonal_map="householder", use_trivialization=False)
    assert list(lin.state_dict()) == ["bias", "parametrizations.weight.original"]
    # starts from the Q of w = QR with diag(R) >= 0 (of w.T when wide)
    tall = w if shape[0] >= shape[1] else w.T
    q, r = np.linalg.qr(tall)
    q = q * np.sign(np.diag(r))
    ref = q if shape[0] >= shape[1] else q.T
    np.testing.assert_allclose(lin.weight.detach().numpy(), ref, atol=2e-5)
    lin(clgrad.randn(2, shape[1])).sum().backward()
    assert lin.parametrizations.weight.original.grad is not None


def test_legacy_weight_norm_and_spectral_norm(device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lin = nn.utils.weight_norm(nn.Linear(3, 2))
    w = lin.weight_v.detach().numpy()
    assert list(lin.state_dict()) == ["bias", "weight_g", "weight_v"]
    np.testing.assert_allclose(lin.weight_g.detach().numpy(),
                               np.sqrt((w ** 2).sum(1, keepdims=True)), rtol=1e-6)
    with clgrad.no_grad():
        lin.weight_g.mul_(2)
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(lin(clgrad.tensor(x)).detach().numpy(),
                               x @ (2 * w).T + lin.bias.detach().numpy(), rtol=1e-5)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nn.utils.weight_norm(lin)
    nn.utils.remove_weight_norm(lin)
    assert sorted(lin.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(lin.weight.detach().numpy(), 2 * w, rtol=1e-5)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(lin)

    lin = nn.utils.spectral_norm(nn.Linear(4, 3))
    w = lin.weight_orig.detach().numpy().astype(np.float64)
    assert list(lin.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    for _ in range(15):
        lin(clgrad.zeros(1, 4))
    np.testing.assert_allclose(lin.weight.detach().numpy(), w / np.linalg.svd(w)[1][0],
                               rtol=1e-3, atol=1e-5)
    nn.utils.remove_spectral_norm(lin)
    assert sorted(lin.state_dict()) == ["bias", "weight"]
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(lin)


# ---- lazy modules --------------------------------------------------------------------------------
def test_lazy_linear(device):
    m = nn.LazyLinear(3)
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert m.has_uninitialized_params()
    assert isinstance(m.weight, nn.UninitializedParameter) and isinstance(m.weight, nn.Parameter)
    assert repr(m.weight) == "<UninitializedParameter>"
    sd = m.state_dict()
    assert list(sd) == ["weight", "bias"] and isinstance(sd["weight"], nn.UninitializedParameter)
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        m.weight.shape
    with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
        m.weight + 1
    with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
        m.weight.sum()
    weight = m.weight
    opt = clgrad.optim.SGD(m.parameters(), lr=0.5)      # made before the shapes are known
    x = np.random.RandomState(0).randn(2, 5).astype(np.float32)
    out = m(clgrad.tensor(x))
    assert type(m) is nn.Linear and m.in_features == 5 and m.weight is weight
    assert not hasattr(m, "has_uninitialized_params")
    W, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert W.shape == (3, 5) and np.abs(W).max() <= 1 / np.sqrt(5) and np.abs(W).max() > 0
    np.testing.assert_allclose(out.detach().numpy(), x @ W.T + b, rtol=1e-5, atol=1e-6)
    out.sum().backward()
    opt.step()
    np.testing.assert_allclose(m.weight.detach().numpy(), W - 0.5 * x.sum(0)[None].repeat(3, 0),
                               rtol=1e-5, atol=1e-6)


def test_lazy_load_state_dict_dtype_and_errors(device):
    src = nn.Linear(4, 2)
    m = nn.LazyLinear(2)
    m.load_state_dict(src.state_dict())
    assert not m.has_uninitialized_params() and type(m) is nn.LazyLinear
    x = clgrad.randn(3, 4)
    np.testing.assert_allclose(m(x).detach().numpy(), src(x).detach().numpy(), rtol=1e-6)
    assert type(m) is nn.Linear and m.in_features == 4
    # lazy into lazy: nothing to copy, still lazy
    m = nn.LazyLinear(2)
    m.load_state_dict(nn.LazyLinear(2).state_dict())
    assert m.has_uninitialized_params()
    # .to() before materializing decides the dtype
    if device.has_fp64:
        m = nn.LazyLinear(2, bias=False).double()
        assert m(clgrad.ones(1, 3, dtype=clgrad.float64)).dtype == clgrad.float64
        assert m.bias is None and m.weight.dtype == clgrad.float64

    class Forgetful(nn.modules.lazy.LazyModuleMixin, nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.UninitializedParameter()

        def initialize_parameters(self, x):
            pass

        def forward(self, x):
            return x
    with pytest.raises(RuntimeError, match="has not been fully initialized"):
        Forgetful()(clgrad.ones(1))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv1d(4, 1, groups=2)(clgrad.ones(1, 3, 4))
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\)"):
        nn.LazyConv2d(4, 1)(clgrad.ones(3, 4))


def _corr1d(x, w, b):
    # numpy cross-correlation, stride 1, no padding: (N, C, L) * (O, C, K) -> (N, O, L-K+1)
    K = w.shape[-1]
    L = x.shape[-1] - K + 1
    cols = np.stack([x[:, :, i:i + K] for i in range(L)], axis=2)      # N, C, L, K
    return np.einsum("nclk,ock->nol", cols, w) + b[None, :, None]


def test_lazy_convs(device):
    x = np.random.RandomState(1).randn(2, 3, 6).astype(np.float32)
    m = nn.LazyConv1d(4, 3)
    assert repr(m) == "LazyConv1d(0, 4, kernel_size=(3,), stride=(1,))"
    out = m(clgrad.tensor(x))
    assert type(m) is nn.Conv1d and m.in_channels == 3 and m.weight.shape == (4, 3, 3)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert 0 < np.abs(w).max() <= 1 / 3 and np.abs(b).max() <= 1 / 3       # fan_in 9
    np.testing.assert_allclose(out.detach().numpy(), _corr1d(x, w, b), rtol=1e-4, atol=1e-5)
    # unbatched input gives in_channels from dim 0
    m = nn.LazyConv1d(2, 1, bias=False)
    m(clgrad.tensor(x[0]))
    assert m.weight.shape == (2, 3, 1) and m.bias is None
    cases = [(nn.LazyConv2d(4, 2, groups=2), (1, 2, 3, 3), nn.Conv2d, (4, 1, 2, 2), (1, 4, 2, 2)),
             (nn.LazyConv3d(2, 2), (1, 3, 2, 2, 2), nn.Conv3d, (2, 3, 2, 2, 2), (1, 2, 1, 1, 1)),
             (nn.LazyConvTranspose1d(4, 3, stride=2), (2, 5, 4), nn.ConvTranspose1d, (5, 4, 3),
              (2, 4, 9)),
             (nn.LazyConvTranspose2d(2, 2, groups=2), (1, 4, 2, 2), nn.ConvTranspose2d,
              (4, 1, 2, 2), (1, 2, 3, 3)),
             (nn.LazyConvTranspose3d(1, 2), (1, 2, 1, 1, 1), nn.ConvTranspose3d, (2, 1, 2, 2, 2),
              (1, 1, 2, 2, 2))]
    for m, xshape, cls, wshape, oshape in cases:
        assert m.has_uninitialized_params()
        assert m(clgrad.ones(*xshape)).shape == oshape
        assert type(m) is cls and m.weight.shape == wshape and m.bias.shape == (oshape[1],)


def test_lazy_norms_and_batchnorm3d(device):
    rs = np.random.RandomState(2)
    x = rs.randn(4, 3, 2, 2, 2).astype(np.float32) * 2 + 1
    m = nn.LazyBatchNorm3d(momentum=0.5)
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                    "num_batches_tracked"]
    out = m(clgrad.tensor(x))
    assert type(m) is nn.BatchNorm3d and m.num_features == 3
    mean = x.mean(axis=(0, 2, 3, 4))
    var = x.var(axis=(0, 2, 3, 4))
    ref = (x - mean[None, :, None, None, None]) / np.sqrt(var + 1e-5)[None, :, None, None, None]
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-4, atol=1e-4)
    n = x.size / 3
    np.testing.assert_allclose(m.running_mean.numpy(), 0.5 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.running_var.numpy(), 0.5 + 0.5 * var * n / (n - 1), rtol=1e-5)
    assert m.num_batches_tracked.item() == 1
    with pytest.raises(ValueError, match="expected 5D input"):
        nn.BatchNorm3d(3)(clgrad.ones(2, 3, 2))
    m = nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
    m(clgrad.ones(2, 5))
    # nothing lazy to infer: torch leaves num_features at 0
    assert type(m) is nn.BatchNorm1d and m.num_features == 0 and list(m.state_dict()) == []
    m = nn.LazyBatchNorm2d(bias=False)
    m(clgrad.ones(2, 2, 1, 1))
    assert m.weight.shape == (2,) and m.bias is None
    # instance norm: torch's lazy defaults track statistics and are affine
    x = rs.randn(2, 3, 5).astype(np.float32)
    m = nn.LazyInstanceNorm1d()
    out = m(clgrad.tensor(x))
    assert type(m) is nn.InstanceNorm1d and m.num_features == 3 and m.affine
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                    "num_batches_tracked"]
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-4, atol=1e-5)
    for m, shape, cls in [(nn.LazyInstanceNorm2d(affine=False), (1, 2, 3, 3), nn.InstanceNorm2d),
                          (nn.LazyInstanceNorm3d(), (1, 2, 2, 2, 2), nn.InstanceNorm3d)]:
        m(clgrad.randn(*shape))
        assert type(m) is cls and m.running_mean.shape == (2,)


def test_weight_norm_loads_legacy_checkpoints(device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = nn.utils.weight_norm(nn.Linear(3, 2))
    with clgrad.no_grad():
        old.weight_g.mul_(3)
    new = parametrizations.weight_norm(nn.Linear(3, 2))
    new.load_state_dict(old.state_dict())
    x = clgrad.randn(4, 3)
    np.testing.assert_allclose(new(x).detach().numpy(), old(x).detach().numpy(), rtol=1e-6)
    # and nested, under a prefix
    outer = nn.Sequential(parametrizations.weight_norm(nn.Linear(3, 2)))
    outer.load_state_dict(nn.Sequential(old).state_dict())
    np.testing.assert_allclose(outer(x).detach().numpy(), old(x).detach().numpy(), rtol=1e-6)
