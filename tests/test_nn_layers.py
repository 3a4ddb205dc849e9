"""clgrad.nn layers and clgrad.nn.functional: every layer's forward against a numpy reference,
gradients with gradcheck in float64, running statistics, dropout's randomness, and the wiring of
the convolution and pooling modules (their kernels live in clgrad.ops.conv)."""
import copy
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.ops import conv as conv_ops
from helpers import float_dtypes, grad_dtype, grad_tols, make, rounded, to_np

TOLS = {clgrad.float32: dict(rtol=1e-5, atol=1e-5), clgrad.float64: dict(rtol=1e-10, atol=1e-10),
        clgrad.float16: dict(rtol=5e-3, atol=5e-3), clgrad.bfloat16: dict(rtol=3e-2, atol=3e-2)}


def close(t, expected, dt=None, **kw):
    tol = dict(TOLS[dt or t.dtype])
    tol.update(kw)
    np.testing.assert_allclose(to_np(t).astype(np.float64), np.asarray(expected, np.float64),
                               **tol)


@pytest.fixture
def precise(device):
    """Default dtype float64 where the device has it, so that modules, numpy-made tensors and
    the references agree to float64 rounding."""
    clgrad.set_default_dtype(grad_dtype(device))
    return grad_dtype(device)


def T(a):
    """A tensor of the default dtype from numpy values."""
    return clgrad.tensor(np.asarray(a, dtype=np.float64), dtype=clgrad.get_default_dtype())


def gradcheck(fn, *inputs, device):
    assert clgrad.autograd.gradcheck(fn, inputs, **grad_tols(device))


def rand(rng, shape, device, dt=None, requires_grad=False, scale=1.0):
    dt = dt or grad_dtype(device)
    return clgrad.tensor(rng.normal(size=shape) * scale, dtype=dt, requires_grad=requires_grad)


# ---- linear ------------------------------------------------------------------------------------
def test_linear(device):
    rng = np.random.default_rng(0)
    for dt in float_dtypes(device):
        lin = nn.Linear(5, 3).to(dt)
        w, b = to_np(lin.weight).astype(np.float64), to_np(lin.bias).astype(np.float64)
        for shape in ((4, 5), (2, 3, 5), (5,)):
            x = rounded(rng.normal(size=shape), dt)
            y = lin(clgrad.tensor(x, dtype=dt))
            assert y.shape == shape[:-1] + (3,) and y.dtype is dt
            close(y, x.astype(np.float64) @ w.T + b, dt)
    xt = make(rng.normal(size=(5, 4)), clgrad.float32, device, "transposed")
    close(F.linear(xt, clgrad.ones(2, 4)), np.tile(to_np(xt).sum(1, keepdims=True), (1, 2)))
    assert nn.Linear(3, 2, bias=False).bias is None
    close(nn.Linear(3, 2, bias=False)(clgrad.zeros(1, 3)), np.zeros((1, 2)))
    dt = grad_dtype(device)
    x, W, bb = (rand(rng, s, device, requires_grad=True) for s in ((3, 4), (2, 4), (2,)))
    gradcheck(F.linear, x, W, bb, device=device)
    gradcheck(lambda a, w: F.linear(a, w), rand(rng, (2, 3, 4), device, requires_grad=True), W,
              device=device)
    assert nn.Linear(2, 2, dtype=dt).weight.dtype is dt


# ---- activations -------------------------------------------------------------------------------
def _erf(a):
    return np.vectorize(math.erf)(a)


ACTIVATIONS = [
    (nn.ReLU(), F.relu, lambda a: np.maximum(a, 0)),
    (nn.LeakyReLU(0.2), lambda x: F.leaky_relu(x, 0.2), lambda a: np.where(a < 0, 0.2 * a, a)),
    (nn.ELU(0.7), lambda x: F.elu(x, 0.7), lambda a: np.where(a > 0, a, 0.7 * np.expm1(a))),
    (nn.GELU(), F.gelu, lambda a: 0.5 * a * (1 + _erf(a / math.sqrt(2)))),
    (nn.GELU("tanh"), lambda x: F.gelu(x, approximate="tanh"),
     lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))),
    (nn.SiLU(), F.silu, lambda a: a / (1 + np.exp(-a))),
    (nn.Softplus(2.0, 3.0), lambda x: F.softplus(x, 2.0, 3.0),
     lambda a: np.where(2 * a > 3, a, np.log1p(np.exp(2 * a)) / 2)),
    (nn.Tanh(), F.tanh, np.tanh),
    (nn.Sigmoid(), F.sigmoid, lambda a: 1 / (1 + np.exp(-a))),
    (None, F.logsigmoid, lambda a: -np.logaddexp(0, -a)),
]


@pytest.mark.parametrize("k", range(len(ACTIVATIONS)))
def test_activations(device, k):
    module, fn, ref = ACTIVATIONS[k]
    rng = np.random.default_rng(k)
    a = rng.uniform(-4, 4, size=(3, 7))
    for dt in float_dtypes(device):
        x = clgrad.tensor(a, dtype=dt)
        expected = ref(rounded(a, dt).astype(np.float64))
        close(fn(x), expected, dt)
        if module is not None:
            close(module(x), expected, dt)
    gradcheck(fn, rand(rng, (2, 5), device, requires_grad=True, scale=2), device=device)


def test_inplace_activations():
    for module in (nn.ReLU(inplace=True), nn.LeakyReLU(0.1, inplace=True),
                   nn.SiLU(inplace=True), nn.ELU(inplace=True)):
        x = clgrad.tensor([-1.0, 2.0])
        ref = copy.copy(module)
        ref.inplace = False
        expected = ref(x)
        out = module(x)
        assert out is x and out.tolist() == expected.tolist()
    leaf = clgrad.tensor([-1.0, 2.0], requires_grad=True)
    y = leaf * 1
    F.relu_(y).sum().backward()
    assert leaf.grad.tolist() == [0.0, 1.0]
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(clgrad.ones(1), approximate="fast")


def test_softmax_modules(device, precise):
    rng = np.random.default_rng(2)
    a = rng.normal(size=(2, 3, 4))
    x = T(a)
    e = np.exp(a - a.max(1, keepdims=True))
    close(nn.Softmax(dim=1)(x), e / e.sum(1, keepdims=True))
    close(nn.LogSoftmax(dim=1)(x), np.log(e / e.sum(1, keepdims=True)))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        y = nn.Softmax()(x)                       # 3-D input: torch's legacy choice is dim 0
    e0 = np.exp(a - a.max(0, keepdims=True))
    close(y, e0 / e0.sum(0, keepdims=True))
    with pytest.warns(UserWarning):
        F.log_softmax(clgrad.ones(2, 2))


# ---- batch norm --------------------------------------------------------------------------------
def np_batch_norm(x, rm, rv, w, b, training, momentum, eps):
    dims = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        mean, var = x.mean(dims), x.var(dims)
        n = x.size // x.shape[1]
        rm = (1 - momentum) * rm + momentum * mean
        rv = (1 - momentum) * rv + momentum * var * n / (n - 1)
    else:
        mean, var = rm, rv
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if w is not None:
        y = y * w.reshape(shape) + b.reshape(shape)
    return y, rm, rv


@pytest.mark.parametrize("cls,shape", [(nn.BatchNorm1d, (8, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                       (nn.BatchNorm2d, (2, 3, 4, 5))])
def test_batch_norm_module(device, precise, cls, shape):
    rng = np.random.default_rng(3)
    bn = cls(3, momentum=0.2)
    with clgrad.no_grad():
        bn.weight.copy_(clgrad.tensor(rng.uniform(0.5, 2, 3)))
        bn.bias.copy_(clgrad.tensor(rng.normal(size=3)))
    w, b = to_np(bn.weight).astype(np.float64), to_np(bn.bias).astype(np.float64)
    rm, rv = np.zeros(3), np.ones(3)
    for step in range(3):
        a = rng.normal(size=shape) * 3 + step
        y = bn(T(a))
        expected, rm, rv = np_batch_norm(a, rm, rv, w, b, True, 0.2, 1e-5)
        close(y, expected)
        close(bn.running_mean, rm)
        close(bn.running_var, rv)
    assert bn.num_batches_tracked.item() == 3
    bn.eval()
    a = rng.normal(size=shape)
    close(bn(T(a)), np_batch_norm(a, rm, rv, w, b, False, 0.2, 1e-5)[0])
    close(bn.running_mean, rm)                              # evaluation leaves them alone
    assert bn.num_batches_tracked.item() == 3
    bad = (8, 3, 2, 2) if cls is nn.BatchNorm1d else (8, 3)
    with pytest.raises(ValueError, match=r"expected .*D input \(got \dD input\)"):
        bn(clgrad.zeros(*bad))


def test_batch_norm_options(device, precise):
    rng = np.random.default_rng(4)
    a = rng.normal(size=(6, 2)) * 2
    # momentum=None: a cumulative average of the batch statistics
    bn = nn.BatchNorm1d(2, momentum=None, affine=False)
    batches = [rng.normal(size=(5, 2)) + i for i in range(3)]
    for x in batches:
        bn(T(x))
    close(bn.running_mean, np.mean([x.mean(0) for x in batches], axis=0))
    close(bn.running_var, np.mean([x.var(0, ddof=1) for x in batches], axis=0))
    assert bn.weight is None and bn.bias is None
    # no running statistics: batch statistics in evaluation too
    bn = nn.BatchNorm1d(2, track_running_stats=False).eval()
    assert bn.running_mean is None and list(bn.state_dict()) == ["weight", "bias"]
    close(bn(T(a)), (a - a.mean(0)) / np.sqrt(a.var(0) + 1e-5))
    bn = nn.BatchNorm1d(2, bias=False)
    assert bn.bias is None and "bias=False" in repr(bn)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(2)(clgrad.zeros(1, 2))
    with pytest.raises(RuntimeError, match="must be defined in evaluation mode"):
        F.batch_norm(clgrad.zeros(2, 2), None, None, training=False)
    # 16-bit inputs
    for dt in (clgrad.float16, clgrad.bfloat16):
        bn = nn.BatchNorm1d(2).to(dt)
        y = bn(clgrad.tensor(a, dtype=dt))
        assert y.dtype is dt
        close(y, (rounded(a, dt) - rounded(a, dt).mean(0)) / np.sqrt(rounded(a, dt).var(0) + 1e-5),
              dt)


def test_batch_norm_gradients(device):
    rng = np.random.default_rng(5)
    x = rand(rng, (4, 3, 2), device, requires_grad=True)
    w = rand(rng, (3,), device, requires_grad=True)
    b = rand(rng, (3,), device, requires_grad=True)
    dt = grad_dtype(device)
    gradcheck(lambda x, w, b: F.batch_norm(x, clgrad.zeros(3, dtype=dt), clgrad.ones(3, dtype=dt),
                                           w, b, training=True), x, w, b, device=device)
    rm, rv = clgrad.tensor([0.1, 0.2, 0.3], dtype=dt), clgrad.tensor([1.0, 2.0, 0.5], dtype=dt)
    gradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b), x, w, b, device=device)


# ---- layer norm and group norm -----------------------------------------------------------------
def test_layer_norm(device, precise):
    rng = np.random.default_rng(6)
    a = rng.normal(size=(2, 3, 4)) * 2 + 1
    for dt in float_dtypes(device):
        ln = nn.LayerNorm((3, 4)).to(dt)
        with clgrad.no_grad():
            ln.weight.copy_(clgrad.tensor(rng.uniform(0.5, 2, (3, 4))))
            ln.bias.copy_(clgrad.tensor(rng.normal(size=(3, 4))))
        ar = rounded(a, dt).astype(np.float64)
        mean, var = ar.mean((1, 2), keepdims=True), ar.var((1, 2), keepdims=True)
        expected = (ar - mean) / np.sqrt(var + 1e-5) * to_np(ln.weight) + to_np(ln.bias)
        close(ln(clgrad.tensor(a, dtype=dt)), expected, dt)
    ln = nn.LayerNorm(4, elementwise_affine=False)
    assert ln.weight is None
    mean, var = a.mean(-1, keepdims=True), a.var(-1, keepdims=True)
    close(ln(T(a)), (a - mean) / np.sqrt(var + 1e-5))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with "
                                           r"shape \[\*, 5\], but got input of size\[2, 3, 4\]"):
        F.layer_norm(T(a), (5,))
    x, w, b = (rand(rng, s, device, requires_grad=True) for s in ((2, 3, 4), (3, 4), (3, 4)))
    gradcheck(lambda x, w, b: F.layer_norm(x, (3, 4), w, b), x, w, b, device=device)


def test_group_norm(device, precise):
    rng = np.random.default_rng(7)
    a = rng.normal(size=(2, 6, 5)) * 3
    gn = nn.GroupNorm(3, 6)
    with clgrad.no_grad():
        gn.weight.copy_(clgrad.tensor(rng.uniform(0.5, 2, 6)))
        gn.bias.copy_(clgrad.tensor(rng.normal(size=6)))
    g = a.reshape(2, 3, -1)
    norm = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    expected = norm.reshape(a.shape) * to_np(gn.weight)[:, None] + to_np(gn.bias)[:, None]
    close(gn(T(a)), expected)
    a4 = rng.normal(size=(2, 4, 3, 3))
    g = a4.reshape(2, 2, -1)
    close(F.group_norm(T(a4), 2),
          ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
          .reshape(a4.shape))
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(4, 6)
    with pytest.raises(RuntimeError, match="divisible by num_groups, but got input of shape"):
        F.group_norm(clgrad.zeros(2, 6, 2), 4)
    x, w, b = (rand(rng, s, device, requires_grad=True) for s in ((2, 4, 3), (4,), (4,)))
    gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), x, w, b, device=device)


def test_normalize(device, precise):
    rng = np.random.default_rng(8)
    a = rng.normal(size=(3, 4))
    close(F.normalize(T(a)), a / np.linalg.norm(a, axis=1, keepdims=True))
    close(F.normalize(T(a), p=1, dim=0), a / np.abs(a).sum(0, keepdims=True))
    assert F.normalize(clgrad.zeros(1, 2)).tolist() == [[0.0, 0.0]]
    gradcheck(F.normalize, rand(rng, (3, 4), device, requires_grad=True), device=device)


def test_normalize_gradient_rounds_as_torch(device):
    # F.normalize is x / max(||x||, eps) with torch's gradients: div's -g * ((x / y) / y), the
    # 2-norm's g * (x / norm), clamp_min passing the gradient at the boundary. Along a dim of
    # size 1 the exact gradient is 0 and what is left is rounding, which then is torch's
    # (checked here in float64, whose division every OpenCL device rounds correctly)
    if not device.has_fp64:
        pytest.skip("needs float64")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 1)) * 10.0 ** rng.uniform(-14, 2, (40, 1))
    a[:3] = [[0.0], [1e-12], [-3e-13]]          # a zero norm, one at eps, one below it
    w = rng.standard_normal((40, 1))
    x = clgrad.tensor(a, dtype=clgrad.float64, device=device, requires_grad=True)
    y = F.normalize(x, dim=1)
    (y * clgrad.tensor(w, dtype=clgrad.float64, device=device)).sum().backward()
    n = np.abs(a)
    e = np.maximum(n, 1e-12)
    gn = np.where(n >= 1e-12, -w * ((a / e) / e), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = w / e + np.where(n == 0, 0.0, gn * (a / n))
    assert np.array_equal(to_np(y), a / e)
    assert np.array_equal(to_np(x.grad), want)
    # at the boundary (norm == eps) the clamp passes the gradient on
    x = clgrad.tensor([[3.0, 4.0], [0.0, 0.0]], dtype=clgrad.float64, device=device,
                      requires_grad=True)
    (F.normalize(x, eps=5.0) * clgrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=clgrad.float64,
                                            device=device)).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), [[-0.064, 0.048], [0.6, 0.8]], rtol=1e-12)


# ---- dropout -----------------------------------------------------------------------------------
def test_dropout(device):
    x = clgrad.ones(200, 100)
    drop = nn.Dropout(0.3)
    clgrad.manual_seed(0)
    y = drop(x)
    kept = to_np(y) != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(to_np(y)[kept], 1 / 0.7, rtol=1e-6)
    clgrad.manual_seed(0)
    assert drop(x).tolist() == y.tolist()                 # the seed fixes the mask
    assert drop(x).tolist() != y.tolist()                 # the next draw differs
    drop.eval()
    assert drop(x) is x
    assert F.dropout(x, 0.0) is x and F.dropout(x, 1.0).abs().sum().item() == 0
    z = clgrad.ones(10)
    assert F.dropout(z, 0.5, inplace=True) is z
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                                         "got 1.5"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError):
        F.dropout(x, -0.1)
    for dt in float_dtypes(device):
        assert F.dropout(clgrad.ones(8, dtype=dt), 0.5).dtype is dt
    # the gradient goes through the kept elements, scaled
    leaf = clgrad.ones(1000, requires_grad=True)
    clgrad.manual_seed(1)
    out = F.dropout(leaf, 0.5)
    out.sum().backward()
    np.testing.assert_array_equal(to_np(leaf.grad), to_np(out))

    def seeded(t):
        clgrad.manual_seed(2)
        return F.dropout(t, 0.4)
    gradcheck(seeded, rand(np.random.default_rng(9), (4, 5), device, requires_grad=True),
              device=device)


@pytest.mark.parametrize("layer, shape, lead", [
    (nn.Dropout1d, (16, 32, 5), 2), (nn.Dropout1d, (32, 5), 1), (nn.Dropout2d, (16, 32, 3, 3), 2),
    (nn.Dropout2d, (16, 32, 5), 2), (nn.Dropout3d, (4, 16, 2, 2, 2), 2),
    (nn.Dropout3d, (32, 2, 2, 2), 1)])
def test_channel_dropout(device, layer, shape, lead):
    drop = layer(0.25)
    x = clgrad.ones(*shape, requires_grad=True)
    clgrad.manual_seed(3)
    y = drop(x)
    per_channel = to_np(y).reshape(shape[:lead] + (-1,))
    # each channel is dropped or kept (and scaled) whole
    dropped = (per_channel == 0).all(-1)
    kept = np.isclose(per_channel, 1 / 0.75).all(-1)
    assert (dropped | kept).all() and dropped.any() and kept.any()
    assert abs(kept.mean() - 0.75) < 0.2
    y.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), to_np(y))
    clgrad.manual_seed(3)
    assert drop(x).tolist() == y.tolist()
    assert drop.eval()(x) is x and repr(drop) == f"{layer.__name__}(p=0.25, inplace=False)"
    for dt in float_dtypes(device):
        assert layer(0.5)(clgrad.ones(*shape, dtype=dt)).dtype is dt


def test_channel_dropout_errors(device):
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D"):
        F.dropout1d(clgrad.ones(2, 2, 2, 2))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        assert F.dropout2d(clgrad.ones(4, 3), 0.5).shape == (4, 3)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.dropout3d(clgrad.ones(3))
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout2d(clgrad.ones(1, 2, 2), 2.0)
    x = clgrad.ones(2, 3, 4)
    assert F.dropout1d(x, 0.5, inplace=True) is x
    assert F.dropout2d(x, 1.0).abs().sum().item() == 0
    assert F.dropout3d(clgrad.ones(1, 1, 1, 1), 0.0).item() == 1.0


# ---- embedding and one_hot ---------------------------------------------------------------------
def test_embedding(device, precise):
    rng = np.random.default_rng(10)
    emb = nn.Embedding(6, 3, padding_idx=2)
    w = to_np(emb.weight)
    assert (w[2] == 0).all()
    idx = np.array([[1, 2, 5], [0, 2, 2]])
    out = emb(clgrad.tensor(idx))
    close(out, w[idx])
    out.sum().backward()
    counts = np.bincount(idx.ravel(), minlength=6)[:, None] * np.ones((1, 3))
    counts[2] = 0                                   # the padding row gets no gradient
    close(emb.weight.grad, counts)
    close(emb(clgrad.tensor(idx, dtype=clgrad.int32)), w[idx])
    # scale_grad_by_freq divides each row's gradient by its count in the batch
    emb = nn.Embedding(6, 3, scale_grad_by_freq=True)
    emb(clgrad.tensor(idx)).sum().backward()
    close(emb.weight.grad, (np.bincount(idx.ravel(), minlength=6) > 0)[:, None] * np.ones((1, 3)))
    # max_norm renormalises the rows used, in place
    big = T(rng.normal(size=(4, 3)) * 5)
    emb = nn.Embedding.from_pretrained(big, max_norm=1.0)
    assert not emb.weight.requires_grad
    before = to_np(big)
    out = emb(clgrad.tensor([0, 3]))
    norms = np.linalg.norm(to_np(emb.weight), axis=1)
    assert np.all(norms[[0, 3]] <= 1.0 + 1e-5)
    np.testing.assert_array_equal(to_np(emb.weight)[[1, 2]], before[[1, 2]])
    close(out, to_np(emb.weight)[[0, 3]])
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types"):
        emb(clgrad.zeros(2))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)
    W = rand(rng, (5, 3), device, requires_grad=True)
    gradcheck(lambda w: F.embedding(clgrad.tensor([[0, 4], [4, 1]]), w), W, device=device)


def test_one_hot():
    assert F.one_hot(clgrad.tensor([2, 0])).tolist() == [[0, 0, 1], [1, 0, 0]]
    oh = F.one_hot(clgrad.tensor([[1], [3]]), num_classes=5)
    assert oh.shape == (2, 1, 5) and oh.dtype is clgrad.int64 and oh.sum().item() == 2
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(clgrad.tensor([3]), 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative"):
        F.one_hot(clgrad.tensor([-1, 1]))
    with pytest.raises(RuntimeError, match="only applicable to index tensor"):
        F.one_hot(clgrad.tensor([1.0]))


def test_flatten_unflatten_identity():
    x = clgrad.zeros(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Unflatten(1, (3, 1))(clgrad.zeros(2, 3)).shape == (2, 3, 1)
    assert nn.Identity(3, k=4)(x) is x
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        nn.Unflatten(1, 3)


# ---- convolution and pooling -------------------------------------------------------------------
class Recorder:
    """Stands in for a clgrad.ops.conv function and records how it was called."""

    def __init__(self, result=None):
        self.calls = []
        self.result = result

    def __call__(self, *args):
        self.calls.append(args)
        return self.result if self.result is not None else args[0]


@pytest.fixture
def recorded(monkeypatch):
    recs = {}
    for name in ("conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d",
                 "adaptive_avg_pool2d"):
        recs[name] = Recorder()
        monkeypatch.setattr(conv_ops, name, recs[name])
    return recs


def test_conv_modules_pass_torchs_arguments(recorded):
    conv = nn.Conv2d(4, 6, (3, 5), stride=2, padding=(1, 2), dilation=(1, 2), groups=2)
    x = clgrad.zeros(1, 4, 9, 9)
    conv(x)
    args = recorded["conv2d"].calls[-1]
    assert args[0] is x and args[1] is conv.weight and args[2] is conv.bias
    assert args[3:] == ((2, 2), (1, 2), (1, 2), 2)
    nn.Conv1d(2, 4, 3, bias=False)(clgrad.zeros(1, 2, 7))
    assert recorded["conv1d"].calls[-1][2] is None and recorded["conv1d"].calls[-1][3:] == \
        ((1,), (0,), (1,), 1)
    # padding="same": odd total padding pads the right / bottom by one more, as torch does
    same = nn.Conv2d(1, 1, (4, 3), padding="same", dilation=(1, 2))
    same(clgrad.zeros(1, 1, 6, 6))
    args = recorded["conv2d"].calls[-1]
    assert args[0].shape == (1, 1, 7, 6) and args[4] == (1, 2)
    nn.Conv1d(1, 1, 3, padding="valid")(clgrad.zeros(1, 1, 5))
    assert recorded["conv1d"].calls[-1][4] == 0
    t = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=1)
    t(clgrad.zeros(1, 4, 5, 5))
    assert recorded["conv_transpose2d"].calls[-1][3:] == ((2, 2), (1, 1), (1, 1), 2, (1, 1))
    t(clgrad.zeros(1, 4, 5, 5), output_size=(9, 9))               # the smallest valid size
    assert recorded["conv_transpose2d"].calls[-1][5] == (0, 0)
    with pytest.raises(ValueError, match="requested an output size of"):
        t(clgrad.zeros(1, 4, 5, 5), output_size=(12, 12))


def test_conv_module_errors_and_repr():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv1d(1, 1, 3, padding="full")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(1, 1, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported'):
        nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect")
    assert repr(nn.Conv2d(2, 4, 3, padding="same", bias=False)) == \
        "Conv2d(2, 4, kernel_size=(3, 3), stride=(1, 1), padding=same, bias=False)"
    assert repr(nn.Conv1d(2, 4, 3, padding_mode="circular")) == \
        "Conv1d(2, 4, kernel_size=(3,), stride=(1,), padding_mode=circular)"


def test_pool_modules_pass_torchs_arguments(recorded):
    x = clgrad.zeros(1, 1, 8, 8)
    nn.MaxPool2d(3, padding=1, dilation=2, ceil_mode=True, return_indices=True)(x)
    assert recorded["max_pool2d"].calls[-1][1:] == (3, 3, 1, 2, True, True)
    nn.AvgPool2d(2, stride=1, count_include_pad=False, divisor_override=3)(x)
    assert recorded["avg_pool2d"].calls[-1][1:] == (2, 1, 0, False, False, 3)
    nn.AdaptiveAvgPool2d((2, None))(x)
    assert recorded["adaptive_avg_pool2d"].calls[-1][1:] == ((2, None),)


# numpy references for the end-to-end checks
def np_conv2d(x, w, b, stride, padding, dilation, groups):
    (s0, s1), (p0, p1), (d0, d1) = stride, padding, dilation
    x = np.pad(x, ((0, 0), (0, 0), (p0, p0), (p1, p1)))
    N, C, H, W = x.shape
    O, cg, kh, kw = w.shape
    Ho, Wo = (H - d0 * (kh - 1) - 1) // s0 + 1, (W - d1 * (kw - 1) - 1) // s1 + 1
    og = O // groups
    out = np.zeros((N, O, Ho, Wo))
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * d0:i * d0 + s0 * (Ho - 1) + 1:s0,
                           j * d1:j * d1 + s1 * (Wo - 1) + 1:s1]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                         w[g * og:(g + 1) * og, :, i, j])
    return out if b is None else out + b[None, :, None, None]


def np_conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation):
    (s0, s1), (p0, p1), (q0, q1), (d0, d1) = stride, padding, output_padding, dilation
    N, C, H, W = x.shape
    _, og, kh, kw = w.shape
    cg = C // groups
    full = np.zeros((N, og * groups, (H - 1) * s0 + d0 * (kh - 1) + 1 + q0,
                     (W - 1) * s1 + d1 * (kw - 1) + 1 + q1))
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                full[:, g * og:(g + 1) * og, i * d0:i * d0 + s0 * (H - 1) + 1:s0,
                     j * d1:j * d1 + s1 * (W - 1) + 1:s1] += np.einsum(
                    "nchw,co->nohw", x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg, :, i, j])
    out = full[:, :, p0:full.shape[2] - p0, p1:full.shape[3] - p1]
    return out if b is None else out + b[None, :, None, None]


def test_conv_modules_end_to_end(device, precise):
    rng = np.random.default_rng(11)
    x = rng.normal(size=(2, 4, 7, 6))
    conv = nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
    y = conv(T(x))
    w, b = to_np(conv.weight).astype(np.float64), to_np(conv.bias).astype(np.float64)
    close(y, np_conv2d(x, w, b, (2, 1), (1, 0), (1, 2), 2), rtol=1e-4, atol=1e-4)
    same = nn.Conv2d(4, 2, 4, padding="same")
    close(same(T(x)), np_conv2d(np.pad(x, ((0, 0), (0, 0), (0, 1), (0, 1))),
                                            to_np(same.weight), to_np(same.bias), (1, 1), (1, 1),
                                            (1, 1), 1), rtol=1e-4, atol=1e-4)
    c1 = nn.Conv1d(4, 2, 3, stride=2, padding=1)
    x1 = x[:, :, 0, :]
    close(c1(T(x1)), np_conv2d(x1[:, :, None], to_np(c1.weight)[:, :, None],
                                           to_np(c1.bias), (1, 2), (0, 1), (1, 1), 1)[:, :, 0],
          rtol=1e-4, atol=1e-4)
    t = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    close(t(T(x)), np_conv_transpose2d(x, to_np(t.weight), to_np(t.bias), (2, 2),
                                                   (1, 1), (1, 1), 2, (1, 1)),
          rtol=1e-4, atol=1e-4)


def test_pool_modules_end_to_end(device, precise):
    rng = np.random.default_rng(12)
    x = rng.normal(size=(2, 3, 6, 6))
    y = nn.MaxPool2d(2)(T(x))
    close(y, x.reshape(2, 3, 3, 2, 3, 2).max((3, 5)))
    close(nn.AvgPool2d(3, stride=3)(T(x)), x.reshape(2, 3, 2, 3, 2, 3).mean((3, 5)))
    close(nn.AdaptiveAvgPool2d(1)(T(x)), x.mean((2, 3), keepdims=True))
    close(nn.AdaptiveAvgPool2d((3, 2))(T(x)), x.reshape(2, 3, 3, 2, 2, 3).mean((3, 5)))


def test_second_derivatives(device, precise):
    """The layers are built from differentiable ops, so create_graph works through them."""
    rng = np.random.default_rng(13)
    tols = grad_tols(device)
    x = rand(rng, (3, 4), device, requires_grad=True)
    w, b = rand(rng, (4,), device, requires_grad=True), rand(rng, (4,), device, requires_grad=True)
    assert clgrad.autograd.gradgradcheck(lambda x, w, b: F.layer_norm(x, (4,), w, b), (x, w, b),
                                         **tols)
    assert clgrad.autograd.gradgradcheck(lambda x: F.gelu(x, approximate="tanh"), (x,), **tols)
    assert clgrad.autograd.gradgradcheck(
        lambda x: F.cross_entropy(x, clgrad.tensor([1, 0, 3]), label_smoothing=0.1), (x,), **tols)
    assert clgrad.autograd.gradgradcheck(
        lambda x: F.batch_norm(x, None, None, training=True), (x,), **tols)
