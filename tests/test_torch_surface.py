"""Pieces of torch's surface that ported programs touch: the legacy tensor types and
torch.backends' switches."""
import numpy as np
import pytest

import clgrad
from clgrad.runtime import device as _device


def test_legacy_tensor_types(device):
    x = clgrad.LongTensor([[1, 2], [3, 4]])
    assert x.dtype is clgrad.int64 and x.tolist() == [[1, 2], [3, 4]]
    assert isinstance(x, clgrad.LongTensor) and not isinstance(x, clgrad.FloatTensor)
    assert not isinstance([1], clgrad.LongTensor)
    assert clgrad.FloatTensor(2, 3).shape == (2, 3)
    assert clgrad.FloatTensor(clgrad.Size([4])).shape == (4,)
    assert clgrad.FloatTensor().shape == (0,)
    assert clgrad.BoolTensor([1, 0]).tolist() == [True, False]
    y = clgrad.DoubleTensor(x)
    assert y.dtype is clgrad.float64 and y.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    np.testing.assert_array_equal(clgrad.ByteTensor(np.array([7, 255])).numpy(), [7, 255])
    for name in ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "IntTensor",
                 "LongTensor", "ByteTensor", "BoolTensor"):
        assert isinstance(getattr(clgrad, name)([1]), getattr(clgrad, name))
        assert hasattr(clgrad.cuda, name)


def test_cuda_legacy_types_need_a_gpu():
    if _device.gpus():
        t = clgrad.cuda.FloatTensor([1.0])
        assert t.is_cuda and isinstance(t, clgrad.cuda.FloatTensor)
    else:
        with pytest.raises(RuntimeError, match="No CUDA GPUs are available"):
            clgrad.cuda.FloatTensor([1.0])
        assert not isinstance(clgrad.FloatTensor([1.0]), clgrad.cuda.FloatTensor)


def test_backends_switches_are_accepted():
    b = clgrad.backends
    b.cudnn.benchmark = True
    b.cudnn.deterministic = True
    b.cuda.matmul.allow_tf32 = True
    assert b.cudnn.benchmark is True and b.cuda.matmul.allow_tf32 is True
    assert b.mps.is_available() is False and b.mps.is_built() is False
    assert b.cuda.is_built() is True and b.cudnn.is_available() is False
    with pytest.raises(AttributeError):
        b.cudnn.no_such_switch
    clgrad.set_float32_matmul_precision("medium")
    assert clgrad.get_float32_matmul_precision() == "medium"
    with pytest.raises(RuntimeError, match="Invalid precision"):
        clgrad.set_float32_matmul_precision("low")
    clgrad.set_float32_matmul_precision("highest")


def test_numpy_argument_names(device):
    x = clgrad.arange(6.0, device=device).reshape(2, 3)
    assert x.sum(axis=1).tolist() == [3.0, 12.0]
    assert clgrad.sum(x, axis=0, keepdims=True).shape == (1, 3)
    assert x.mean(axis=0, keepdims=True).tolist() == [[1.5, 2.5, 3.5]]
    assert clgrad.amax(x, axis=1).tolist() == [2.0, 5.0]
    assert clgrad.cat([x, x], axis=0).shape == (4, 3)
    assert x.argmax(axis=1).tolist() == [2, 2]
    assert x.softmax(axis=1).shape == (2, 3)
    with pytest.raises(TypeError, match="alias"):
        x.sum(dim=0, axis=1)


def test_tensor_unfold(device):
    from numpy.lib.stride_tricks import sliding_window_view
    a = np.arange(60.0).reshape(3, 4, 5)
    x = clgrad.tensor(a, device=device)
    for dim, size, step in ((2, 3, 1), (1, 2, 2), (0, 3, 3), (-1, 5, 2), (2, 0, 1)):
        d = dim % a.ndim
        win = sliding_window_view(a, size, axis=d)
        win = np.take(win, range(0, win.shape[d], step), axis=d)
        np.testing.assert_array_equal(x.unfold(dim, size, step).numpy(), win)
    assert x.transpose(0, 2).unfold(0, 2, 2).shape == (2, 4, 3, 2)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 2 is 5"):
        x.unfold(2, 6, 1)
    with pytest.raises(RuntimeError, match="step is 0"):
        x.unfold(2, 2, 0)
    from clgrad.autograd import gradcheck
    from helpers import grad_dtype, grad_tols
    g = clgrad.tensor(a[0] / 60, dtype=grad_dtype(device), device=device, requires_grad=True)
    assert gradcheck(lambda t: t.unfold(1, 3, 1) * 2, (g,), **grad_tols(device))


def test_view_dtype_reinterprets_bits(device):
    f = np.array([[1.0, -2.5], [3.0, 0.5]], np.float32)
    x = clgrad.tensor(f, device=device)
    np.testing.assert_array_equal(x.view(clgrad.int32).numpy(), f.view(np.int32))
    np.testing.assert_array_equal(x.view(clgrad.uint8).numpy(), f.view(np.uint8))
    assert x.view(clgrad.uint8).shape == (2, 8)
    b = clgrad.arange(16, dtype=clgrad.uint8, device=device).reshape(2, 8)
    np.testing.assert_array_equal(b.view(clgrad.int32).numpy(),
                                  np.arange(16, dtype=np.uint8).reshape(2, 8).view(np.int32))
    np.testing.assert_array_equal(b[:, 4:].view(clgrad.float32).numpy(),
                                  np.arange(16, dtype=np.uint8).reshape(2, 8)[:, 4:].copy()
                                  .view(np.float32))
    y = clgrad.zeros(3, device=device)
    y.view(clgrad.int32).fill_(0x3F800000)                  # writes through the view
    assert y.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="stride"):
        x.t().view(clgrad.uint8)
    with pytest.raises(RuntimeError, match="divisible"):
        clgrad.zeros(3, dtype=clgrad.uint8, device=device).view(clgrad.int32)


def test_inplace_variants_and_view_changes(device):
    a = np.arange(6.0).reshape(2, 3)
    x = clgrad.tensor(a, device=device)
    v = x._version
    assert x.clamp_min_(2.0) is x and x.tolist() == np.maximum(a, 2).tolist()
    assert x._version > v
    x.cumsum_(1)
    np.testing.assert_array_equal(x.numpy(), np.cumsum(np.maximum(a, 2), 1))
    x.greater_(5.0)
    assert x.dtype is clgrad.float64 or x.dtype is clgrad.float32
    assert x.tolist() == (np.cumsum(np.maximum(a, 2), 1) > 5).astype(float).tolist()
    leaf = clgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf.deg2rad_()
    y = clgrad.zeros(1, 3, device=device)
    assert y.squeeze_() is y and y.shape == (3,)
    y.unsqueeze_(1)
    assert y.shape == (3, 1)
    y.t_()
    assert y.shape == (1, 3)
    z = clgrad.arange(6, device=device).reshape(2, 3)
    z.transpose_(0, 1)
    assert z.tolist() == [[0, 3], [1, 4], [2, 5]]


def test_splits_and_small_composites(device):
    t = clgrad.arange(7, device=device)
    assert [p.tolist() for p in t.tensor_split(3)] == [[0, 1, 2], [3, 4], [5, 6]]
    assert [p.tolist() for p in t.tensor_split([1, 5])] == [[0], [1, 2, 3, 4], [5, 6]]
    m = clgrad.zeros(4, 6, 2, device=device)
    assert [p.shape for p in m.hsplit(3)] == [(4, 2, 2)] * 3
    assert [p.shape for p in m.vsplit([1])] == [(1, 6, 2), (3, 6, 2)]
    assert [p.shape for p in m.dsplit(2)] == [(4, 6, 1)] * 2
    with pytest.raises(RuntimeError, match="not divisible"):
        m.hsplit(4)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5))
    A = clgrad.tensor(a, device=device)
    np.testing.assert_allclose(A.cov().numpy(), np.cov(a), rtol=1e-6)
    np.testing.assert_allclose(A.cov(correction=0).numpy(), np.cov(a, bias=True), rtol=1e-6)
    fw = np.array([1, 2, 1, 3, 1])
    np.testing.assert_allclose(A.cov(fweights=clgrad.tensor(fw, device=device)).numpy(),
                               np.cov(a, fweights=fw), rtol=1e-6)
    np.testing.assert_allclose(A.corrcoef().numpy(), np.corrcoef(a), rtol=1e-6)
    sq = rng.standard_normal((3, 3))
    S = clgrad.tensor(sq, device=device)
    for n in range(5):
        np.testing.assert_allclose(S.matrix_power(n).numpy(), np.linalg.matrix_power(sq, n),
                                   rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(clgrad.addr(S, S[0], S[1], beta=2, alpha=3).numpy(),
                               2 * sq + 3 * np.outer(sq[0], sq[1]))
    b1, b2 = rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 2, 3))
    np.testing.assert_allclose(clgrad.addbmm(S, clgrad.tensor(b1), clgrad.tensor(b2)).numpy(),
                               sq + np.einsum("bij,bjk->ik", b1, b2), rtol=1e-6)
    p = clgrad.zeros(2, 3, device=device)
    p.put_(clgrad.tensor([0, -1, 4], device=device), clgrad.tensor([1.0, 2.0, 3.0], device=device))
    assert p.tolist() == [[1.0, 0.0, 0.0], [0.0, 3.0, 2.0]]
    p.put_(clgrad.tensor([0, 0], device=device), clgrad.tensor([1.0, 1.0], device=device),
           accumulate=True)
    assert p[0, 0].item() == 3.0
    base = clgrad.zeros(3, 4, device=device)
    assert base.select_scatter(clgrad.ones(4), 0, 1).sum(1).tolist() == [0.0, 4.0, 0.0]
    assert base.slice_scatter(clgrad.ones(3, 2), 1, 0, 4, 2)[:, ::2].sum().item() == 6.0
    assert base[:3, :3].diagonal_scatter(clgrad.ones(3)).trace().item() == 3.0
    assert base.sum().item() == 0.0                                # the copies left it alone
    d = clgrad.zeros(3, 3, 3, device=device).fill_diagonal_(2.0)
    assert d.sum().item() == 6.0 and d[2, 2, 2].item() == 2.0
    wrapped = clgrad.zeros(7, 3, device=device).fill_diagonal_(1.0, wrap=True).numpy()
    ref = np.zeros((7, 3))
    np.fill_diagonal(ref, 1.0, wrap=True)
    np.testing.assert_array_equal(wrapped, ref)


def test_predicates_and_real_only_no_ops(device):
    x = clgrad.tensor([1.0, float("inf"), -float("inf")], device=device)
    assert x.isposinf().tolist() == [False, True, False]
    assert x.isneginf().tolist() == [False, False, True]
    assert x.conj() is x and x.resolve_conj() is x and not x.is_conj() and x.isreal().all()
    assert x.is_signed() and not clgrad.tensor([1], dtype=clgrad.uint8).is_signed()
    assert clgrad.tensor([2.0]).is_nonzero()
    with pytest.raises(RuntimeError, match="ambiguous"):
        clgrad.ones(2).is_nonzero()
    assert x.get_device() == (-1 if x.is_cpu else x.device.index)
    assert clgrad.ldexp(clgrad.tensor([1.5]), clgrad.tensor([2])).item() == 6.0
    s = x.new_empty_strided((2, 2), (1, 2))
    assert s.shape == (2, 2) and s.stride() == (1, 2)
    assert x.pin_memory() is x and not x.is_pinned()
    assert clgrad.vdot(clgrad.tensor([1.0, 2.0]), clgrad.tensor([3.0, 4.0])).item() == 11.0


def test_values_that_used_to_differ_from_torch(device):
    inf = float("inf")
    got = clgrad.isclose(clgrad.tensor([inf, 0.0, inf, 1.0, -inf], device=device),
                         clgrad.tensor([-inf, inf, inf, 1.0 + 1e-9, -inf], device=device))
    assert got.tolist() == [False, False, True, True, True]
    # the tanh-approximate gelu saturates: gradient 1 far right, 0 far left
    x = clgrad.tensor([300.0, 350.0, 0.5], device=device, requires_grad=True)
    clgrad.nn.functional.gelu(x, approximate="tanh").sum().backward()
    g = x.grad.tolist()
    assert g[0] == g[1] == 1.0 and abs(g[2] - 0.8673698) < 1e-5
    # a number base: out * log(base), NaN for a negative base, 0 at base 0 for exponent >= 0
    for base, ref in ((-2, [float("nan")] * 2), (2, [2 ** 0.5 * np.log(2), 4 * np.log(2)])):
        y = clgrad.tensor([0.5, 2.0], device=device, requires_grad=True)
        (base ** y).sum().backward()
        np.testing.assert_allclose(y.grad.numpy(), ref, rtol=1e-6)
    y = clgrad.tensor([0.5, 0.0, -1.0], device=device, requires_grad=True)
    (0 ** y).sum().backward()
    assert y.grad.tolist()[:2] == [0.0, 0.0] and y.grad.tolist()[2] == -inf
    c = clgrad.tensor([True, False], device=device)
    assert clgrad.where(c, 1, 3).tolist() == [1, 3] and clgrad.where(c, 1, 3).dtype is clgrad.int64
    assert clgrad.where(c, 1.5, 3).dtype is clgrad.get_default_dtype()
    assert clgrad.where(c, True, False).dtype is clgrad.bool


def test_bitwise_shifts(device):
    a = np.array([1, -8, 3, 255], np.int64)
    x = clgrad.tensor(a, device=device)
    assert (x << 2).tolist() == (a << 2).tolist() and (x >> 1).tolist() == (a >> 1).tolist()
    s = clgrad.tensor([0, 1, 40, 70], device=device)
    assert (x << s).tolist() == [1, -16, 3 << 40, 0]              # past the width: 0, as torch
    assert clgrad.bitwise_right_shift(x, clgrad.tensor([1, 70, 1, 3], device=device)).tolist() \
        == [0, -1, 1, 31]                                          # negatives fill with ones
    u = clgrad.tensor([1, 128, 255], dtype=clgrad.uint8, device=device)
    assert (u << 1).tolist() == [2, 0, 254] and (u >> 3).tolist() == [0, 16, 31]
    assert (1 << clgrad.tensor([1, 2], device=device)).tolist() == [2, 4]
    y = clgrad.tensor([1, 2], dtype=clgrad.int32, device=device)
    y <<= 3
    assert y.tolist() == [8, 16] and y.dtype is clgrad.int32
    assert x.bitwise_left_shift(1).tolist() == (a << 1).tolist()
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        clgrad.tensor([1.0], device=device) << 1


def test_conjugate_transposes(device):
    x = clgrad.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(x.H.numpy(), x.numpy().T)
    b = clgrad.arange(12.0).reshape(2, 2, 3)
    np.testing.assert_array_equal(b.mH.numpy(), b.numpy().transpose(0, 2, 1))
    assert x.H.data_ptr() == x.data_ptr()                   # a view
    assert clgrad.tensor(2.0).H.item() == 2.0
    with pytest.raises(RuntimeError, match="only supported on matrices.*3-D"):
        b.H
    with pytest.raises(RuntimeError, match="mH is only supported.*1-D"):
        clgrad.zeros(3).mH


def test_host_callables_new_and_resize(device):
    y = clgrad.arange(4.0)
    assert y.apply_(lambda v: v * v) is y
    np.testing.assert_array_equal(y.numpy(), [0, 1, 4, 9])
    z = clgrad.arange(6).reshape(2, 3)
    z.map_(clgrad.tensor([10, 20, 30]), lambda a, b: a + b)      # broadcast over rows
    np.testing.assert_array_equal(z.numpy(), np.arange(6).reshape(2, 3) + [10, 20, 30])
    w = clgrad.zeros(2)
    w.map2_(clgrad.ones(2), clgrad.full((2,), 3.0), lambda a, b, c: a + b * c)
    np.testing.assert_array_equal(w.numpy(), [3, 3])
    with pytest.raises(TypeError, match="not callable"):
        y.apply_(1)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        clgrad.zeros(2, requires_grad=True).apply_(abs)

    x = clgrad.zeros(2, dtype=clgrad.float64)
    assert x.new(3, 4).shape == (3, 4) and x.new(3, 4).dtype is clgrad.float64
    assert x.new([1, 2]).dtype is clgrad.float64 and x.new().shape == (0,)
    assert x.new(clgrad.Size([5])).shape == (5,)

    r = clgrad.arange(6.0)
    assert r.resize_(2, 2) is r
    np.testing.assert_array_equal(r.numpy(), [[0, 1], [2, 3]])
    r.resize_(3, 3)                                  # grows: a new storage, old values first
    assert r.shape == (3, 3) and r.is_contiguous()
    np.testing.assert_array_equal(r.flatten()[:6].numpy(), np.arange(6))
    r.resize_as_(clgrad.zeros(1, 2))
    np.testing.assert_array_equal(r.numpy(), [[0, 1]])
    v = clgrad.arange(6.0)[::2]                      # strides reset over the same storage
    np.testing.assert_array_equal(v.resize_(2).numpy(), [0, 1])
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        clgrad.zeros(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError, match="negative dimension"):
        clgrad.zeros(2).resize_(-1)
