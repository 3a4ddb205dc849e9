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
