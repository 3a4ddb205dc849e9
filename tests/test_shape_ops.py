"""Shape ops that copy: flip, fliplr, flipud, roll, repeat, tile, repeat_interleave, tril, triu
(and tril_, triu_), constant_pad_nd and pad: forward against numpy on every dtype, 0-d, empty and
non-contiguous inputs; gradients with gradcheck and gradgradcheck; errors."""
import numpy as np
import pytest

import clgrad
from clgrad.ops.shape import pad
from helpers import LAYOUTS, all_dtypes, assert_close, grad_dtype, grad_tols, make, random_array, \
    rounded


def _np_pad(a, p, value):
    """numpy's reference of constant_pad_nd: pad with np.pad, then crop negative pads."""
    widths = [(0, 0)] * a.ndim
    crops = [slice(None)] * a.ndim
    for i in range(len(p) // 2):
        d = a.ndim - 1 - i
        lo, hi = p[2 * i], p[2 * i + 1]
        widths[d] = (max(lo, 0), max(hi, 0))
        crops[d] = slice(max(-lo, 0), a.shape[d] + max(lo, 0) + max(hi, 0) - max(-hi, 0))
    return np.pad(a, widths, constant_values=value)[tuple(crops)]


def _cases(h):
    """(clgrad call, numpy result) pairs over a 3-d array h."""
    return [
        (lambda x: x.flip(0, 2), np.flip(h, (0, 2))),
        (lambda x: clgrad.flip(x, (-1,)), np.flip(h, -1)),
        (lambda x: x.flip(()), h),
        (lambda x: x.fliplr(), np.fliplr(h)),
        (lambda x: x.flipud(), np.flipud(h)),
        (lambda x: x.roll(2, 1), np.roll(h, 2, 1)),
        (lambda x: x.roll((-1, 7), (0, 2)), np.roll(h, (-1, 7), (0, 2))),
        (lambda x: clgrad.roll(x, 5), np.roll(h, 5)),
        (lambda x: x.repeat(2, 1, 3), np.tile(h, (2, 1, 3))),
        (lambda x: x.repeat(2, 1, 1, 2), np.tile(h, (2, 1, 1, 2))),
        (lambda x: x.tile((2,)), np.tile(h, (2,))),
        (lambda x: x.repeat_interleave(2, 1), np.repeat(h, 2, 1)),
        (lambda x: x.repeat_interleave(3), np.repeat(h, 3)),
        (lambda x: x.repeat_interleave(clgrad.tensor([2, 0, 1], device=x.device), dim=1),
         np.repeat(h, [2, 0, 1], 1)),
        (lambda x: x.tril(), np.tril(h)),
        (lambda x: x.tril(-1), np.tril(h, -1)),
        (lambda x: x.triu(2), np.triu(h, 2)),
        (lambda x: clgrad.triu(x, -5), np.triu(h, -5)),
        (lambda x: clgrad.constant_pad_nd(x, (1, 2)), _np_pad(h, (1, 2), 0)),
        (lambda x: clgrad.constant_pad_nd(x, (0, -2, 2, 0, -1, 1), 1), _np_pad(h, (0, -2, 2, 0,
                                                                                      -1, 1), 1)),
        (lambda x: pad(x, (-3, 0)), _np_pad(h, (-3, 0), 0)),
    ]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_forward_matches_numpy_every_dtype(device, layout):
    rng = np.random.default_rng(0)
    for dt in all_dtypes(device):
        a = random_array((2, 3, 4), dt, rng)
        h = rounded(a, dt)
        x = make(a, dt, device, layout)
        for f, want in _cases(h):
            out = f(x)
            assert out.dtype is dt
            assert_close(out, want, dt)


def test_0d_and_empty(device):
    s = clgrad.tensor(3.0, device=device)
    assert s.flip(0).tolist() == 3.0
    assert s.roll(1).tolist() == 3.0
    assert s.repeat(2).tolist() == [3.0, 3.0]
    assert s.repeat(()).tolist() == 3.0
    assert s.tile(()).tolist() == 3.0
    assert s.repeat_interleave(3).tolist() == [3.0] * 3
    assert clgrad.constant_pad_nd(s, ()).tolist() == 3.0
    e = clgrad.zeros(2, 0, device=device)
    assert e.flip(1).shape == (2, 0)
    assert e.roll(1, 1).shape == (2, 0)
    assert e.repeat(2, 3).shape == (4, 0)
    assert e.tril().shape == (2, 0)
    assert clgrad.constant_pad_nd(e, (1, 1)).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert clgrad.ones(2, 3, device=device).repeat(0, 1).shape == (0, 3)
    assert clgrad.ones(3, device=device).repeat_interleave(0).shape == (0,)
    # a repeat too wide for one strided copy goes dim by dim
    x = clgrad.arange(32.0, device=device).view(2, 2, 2, 2, 2)
    assert_close(x.repeat(2, 3, 2, 3, 2), np.tile(np.arange(32.0).reshape(2, 2, 2, 2, 2),
                                                  (2, 3, 2, 3, 2)))


def test_in_place_tri(device):
    a = np.arange(12.0).reshape(3, 4)
    x = clgrad.tensor(a, device=device)
    v = x._version
    assert x.tril_(1) is x
    assert_close(x, np.tril(a, 1))
    x.triu_()
    assert_close(x, np.triu(np.tril(a, 1)))
    assert x._version == v + 2
    y = clgrad.tensor(a, device=device).t()                 # a transposed tensor, in place
    y.triu_(-1)
    assert_close(y, np.triu(a.T, -1))


def test_repeat_interleave_forms(device):
    c = clgrad.tensor([2, 0, 1], device=device)
    assert clgrad.repeat_interleave(c).tolist() == [0, 0, 2]
    x = clgrad.tensor([[1, 2], [3, 4]], device=device)
    assert x.repeat_interleave(clgrad.tensor(2, device=device)).tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
    assert x.repeat_interleave(clgrad.tensor([2], device=device), 0).tolist() == \
        [[1, 2], [1, 2], [3, 4], [3, 4]]
    assert x.repeat_interleave(2, dim=-1, output_size=4).tolist() == [[1, 1, 2, 2], [3, 3, 4, 4]]


def test_node_names(device):
    x = clgrad.ones(2, 3, dtype=grad_dtype(device), device=device, requires_grad=True)
    assert x.flip(0).grad_fn.name() == "FlipBackward0"
    assert x.roll(1, 0).grad_fn.name() == "RollBackward0"
    assert x.repeat(2, 1).grad_fn.name() == "RepeatBackward0"
    assert x.tile((2,)).grad_fn.name() == "RepeatBackward0"
    assert x.tril().grad_fn.name() == "TrilBackward0"
    assert x.triu().grad_fn.name() == "TriuBackward0"
    assert clgrad.constant_pad_nd(x, (1, 1)).grad_fn.name() == "ConstantPadNdBackward0"
    assert x.repeat_interleave(clgrad.tensor([1, 2], device=device), 0).grad_fn.name() == \
        "IndexSelectBackward0"
    y = x * 1
    y.tril_()
    assert y.grad_fn.name() == "TrilBackward0"


def test_gradients(device):
    tol = grad_tols(device)
    rng = np.random.default_rng(1)
    x = make(rng.uniform(-1, 1, (2, 3)), grad_dtype(device), device, requires_grad=True)
    fns = [
        lambda a: a.flip(0, 1),
        lambda a: a.roll((1, -1), (0, 1)),
        lambda a: a.roll(4),
        lambda a: a.repeat(2, 1, 2),
        lambda a: a.repeat_interleave(2, 1),
        lambda a: a.repeat_interleave(clgrad.tensor([0, 2], device=device), 0),
        lambda a: a.tril(),
        lambda a: a.triu(1),
        lambda a: clgrad.constant_pad_nd(a, (1, -1, 0, 1), 2.0),
        lambda a: (a * 1).tril_(-1),
    ]
    for f in fns:
        assert clgrad.autograd.gradcheck(f, (x,), **tol)
    for f in fns[:4] + fns[6:9]:
        assert clgrad.autograd.gradgradcheck(f, (x,), **tol)


def test_errors(device):
    x = clgrad.zeros(2, 3, device=device)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        x.flip(0, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.flip(2)
    with pytest.raises(TypeError, match="dims"):
        x.flip()
    with pytest.raises(RuntimeError, match="Input must be >= 2-d"):
        clgrad.zeros(3, device=device).fliplr()
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        x.roll((1, 2), (0,))
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be "
                                           "smaller"):
        x.repeat(2)
    with pytest.raises(RuntimeError, match="negative dimension -2"):
        x.repeat(-1, 1)
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        clgrad.zeros(3, device=device).tril()
    with pytest.raises(RuntimeError, match="repeats must have the same size as input along dim"):
        x.repeat_interleave(clgrad.tensor([1, 2, 3], device=device), 0)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        x.repeat_interleave(clgrad.tensor([1, -1], device=device), 0)
    with pytest.raises(RuntimeError, match="Repeats must be non-negative"):
        x.repeat_interleave(-1)
    with pytest.raises(RuntimeError, match="Length of pad must be even"):
        clgrad.constant_pad_nd(x, (1, 1, 1))
    with pytest.raises(RuntimeError, match="Length of pad should be no more than twice"):
        clgrad.constant_pad_nd(x, (1,) * 6)
    with pytest.raises(RuntimeError, match="negative output size"):
        clgrad.constant_pad_nd(x, (-2, -2))
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        pad(x, (1,))
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode wrap"):
        pad(x, (1, 1), mode="wrap")


def test_forward_mode(device):
    # linear (or affine) ops: the tangent of f at x along t is f(x + t) - f(x)
    import clgrad.autograd.forward_ad as fwAD
    dt = grad_dtype(device)
    rng = np.random.default_rng(2)
    x, t = (make(rng.uniform(-1, 1, (3, 4)), dt, device) for _ in range(2))
    fns = [lambda a: a.flip(0), lambda a: a.roll(1, 1), lambda a: a.repeat(2, 1),
           lambda a: a.tril(), lambda a: a.triu(1), lambda a: a.repeat_interleave(2, 0),
           lambda a: clgrad.constant_pad_nd(a, (1, -1), 3.0)]
    for f in fns:
        with fwAD.dual_level():
            tangent = fwAD.unpack_dual(f(fwAD.make_dual(x, t))).tangent
        assert_close(tangent, (f(x + t) - f(x)).numpy(), dt)


# ---- pad's reflect, replicate and circular modes ------------------------------------------------
_NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _np_pad_mode(a, p, mode):
    """numpy's reference: negative pads crop (for circular before wrapping, as torch does)."""
    k = len(p) // 2
    widths = [(0, 0)] * (a.ndim - k) + [(max(p[2 * i], 0), max(p[2 * i + 1], 0))
                                        for i in reversed(range(k))]
    crops = [slice(None)] * (a.ndim - k) + [slice(max(-p[2 * i], 0),
                                                   (a.shape[a.ndim - 1 - i] + max(p[2 * i], 0) +
                                                    max(p[2 * i + 1], 0)) - max(-p[2 * i + 1], 0))
                                            for i in reversed(range(k))]
    if mode == "circular":
        crops = [slice(None)] * (a.ndim - k) + [slice(max(-p[2 * i], 0),
                                                       a.shape[a.ndim - 1 - i] - max(-p[2 * i + 1], 0))
                                                for i in reversed(range(k))]
        return np.pad(a[tuple(crops)], widths, mode="wrap")
    return np.pad(a, widths, mode=_NP_MODE[mode])[tuple(crops)]


PAD_CASES = [((2, 5), (2, 1)), ((2, 3, 5), (0, 3)), ((2, 3, 5), (-1, 2)),
             ((1, 4, 5), (1, 2, 3, 0)), ((2, 1, 4, 5), (-2, 1, 1, -1)),
             ((1, 3, 4, 5), (1, 1, 2, 2, 1, 0)), ((2, 1, 3, 4, 5), (0, 2, 1, 0, 2, 1))]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes_against_numpy(device, mode):
    rng = np.random.default_rng(5)
    for dt in all_dtypes(device):
        for shape, p in PAD_CASES:
            h = random_array(shape, dt, rng)
            for layout in LAYOUTS:
                out = pad(make(h, dt, device, layout), p, mode=mode)
                assert out.dtype == dt
                assert_close(out, _np_pad_mode(rounded(h, dt), p, mode), dt)
    # an empty batch is fine; a padding of zero leaves the dim alone
    assert pad(clgrad.zeros(0, 2, 3, device=device), (1, 1), mode=mode).shape == (0, 2, 5)
    assert pad(clgrad.ones(1, 2, 3, device=device), (0, 0, 1, 0), mode=mode).shape == (1, 3, 3)


def test_pad_modes_gradients(device):
    dt = grad_dtype(device)
    rng = np.random.default_rng(6)
    x = make(rng.uniform(-1, 1, (2, 3, 4)), dt, device, "transposed", requires_grad=True)
    for mode in ("reflect", "replicate", "circular"):
        for p in ((2, 1), (1, -1, 2, 2)):
            f = (lambda a, p=p, mode=mode: pad(a, p, mode=mode))
            assert clgrad.autograd.gradcheck(f, (x,), **grad_tols(device))
        assert clgrad.autograd.gradgradcheck(f, (x,), **grad_tols(device))
    # every padded copy of an element adds its gradient back into it
    y = clgrad.tensor([[1.0, 2.0, 3.0]], device=device, requires_grad=True)
    pad(y, (2, 2), mode="reflect").sum().backward()
    assert y.grad.tolist() == [[2.0, 3.0, 2.0]]


def test_pad_mode_errors(device):
    x = clgrad.ones(1, 2, 3, device=device)
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 1D input"):
        pad(clgrad.ones(3, device=device), (1, 1), mode="reflect")
    with pytest.raises(NotImplementedError, match="Padding size 4 is not supported for 2D input"):
        pad(clgrad.ones(2, 3, device=device), (1, 1, 1, 1), mode="replicate")
    with pytest.raises(RuntimeError, match=r"padding \(3, 0\) at dimension 2 of input \[1, 2, 3\]"):
        pad(x, (3, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="wrapping around more than once"):
        pad(x, (4, 0), mode="circular")
    with pytest.raises(RuntimeError, match="empty dimension"):
        pad(x, (-3, 1), mode="circular")
    with pytest.raises(RuntimeError, match=r"input \(W: 3\) is too small. Calculated output W: 0"):
        pad(x, (-2, -1), mode="replicate")
    with pytest.raises(RuntimeError, match="possibly 0 batch size and other non-zero dimensions"):
        pad(clgrad.ones(1, 2, 0, device=device), (1, 1), mode="replicate")
    with pytest.raises(RuntimeError, match='Padding mode "reflect" doesn\'t take in value'):
        pad(x, (1, 1), mode="reflect", value=1.0)
    assert pad(x, (1, 1), mode="reflect", value=0.0).shape == (1, 2, 5)
    assert pad(x, (-2, -1), mode="circular").shape == (1, 2, 0)


def test_padding_layers(device):
    from clgrad import nn
    x = clgrad.arange(24.0, device=device).view(1, 2, 3, 4)
    h = x.numpy()
    assert_close(nn.ReflectionPad2d((1, 2, 2, 1))(x), _np_pad_mode(h, (1, 2, 2, 1), "reflect"),
                 clgrad.float32)
    assert_close(nn.ReplicationPad1d(2)(x[0]), _np_pad_mode(h[0], (2, 2), "replicate"),
                 clgrad.float32)
    assert_close(nn.CircularPad3d(1)(x), _np_pad_mode(h, (1,) * 6, "circular"), clgrad.float32)
    assert nn.ConstantPad2d(1, 3.5)(x)[0, 0, 0].tolist() == [3.5] * 6
    assert nn.ZeroPad1d((0, 1))(x)[..., -1].abs().sum().item() == 0.0
    assert repr(nn.ReflectionPad2d(1)) == "ReflectionPad2d((1, 1, 1, 1))"
    assert repr(nn.ConstantPad1d(2, 1.0)) == "ConstantPad1d(padding=(2, 2), value=1.0)"
    with pytest.raises(ValueError, match="padding must be an int or 4 ints"):
        nn.ReflectionPad2d((1, 1))
    # convolutions take the same modes through padding_mode
    conv = nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular").to(device)
    ref = clgrad.nn.functional.conv2d(nn.CircularPad2d(1)(x), conv.weight, conv.bias)
    assert_close(conv(x), ref.detach().numpy(), clgrad.float32)
