"""int8 and int16: torch's wrap-around arithmetic, promotion, numpy round trips, the GEMM and
the atomics on 8- and 16-bit words, fill overflow checks, finfo / iinfo."""
import numpy as np
import pytest

import clgrad

SMALL = [clgrad.int8, clgrad.int16]


def _extremes(dt):
    info = np.iinfo(dt.np)
    return np.array([info.min, -5, 0, 7, 100, info.max], dtype=dt.np)


@pytest.mark.parametrize("dt", SMALL, ids=lambda d: d.name)
def test_arithmetic_wraps_as_numpy(device, dt):
    a = _extremes(dt)
    b = np.array([3, -2, 5, 9, 100, 1], dtype=dt.np)
    x, y = clgrad.tensor(a, device=device), clgrad.tensor(b, device=device)
    with np.errstate(over="ignore"):
        for got, want in [(x + y, a + b), (x - y, a - b), (x * y, a * b), (-x, -a),
                          (x * 3, a * np.array(3, dt.np)), (x.abs(), np.abs(a)),
                          (x << 1, a << 1), (x >> 2, a >> 2), (x & y, a & b), (x ^ y, a ^ b),
                          (x // y, a // b), (x % y, a % b), (x.pow(2), a ** 2)]:
            assert got.dtype is dt
            np.testing.assert_array_equal(got.numpy(), want)
    # strided operands take the general kernels
    np.testing.assert_array_equal((x[::2] + y[1::2]).numpy(), a[::2] + b[1::2])


@pytest.mark.parametrize("dt", SMALL, ids=lambda d: d.name)
def test_reductions_scans_sort(device, dt):
    rng = np.random.default_rng(0)
    a = rng.integers(-100, 100, size=(3, 50)).astype(dt.np)
    x = clgrad.tensor(a, device=device)
    assert x.sum().dtype is clgrad.int64 and x.sum().item() == a.astype(np.int64).sum()
    np.testing.assert_array_equal(x.sum(1).numpy(), a.astype(np.int64).sum(1))
    np.testing.assert_array_equal(x.cumsum(1).numpy(), a.astype(np.int64).cumsum(1))
    np.testing.assert_array_equal(x.amax(0).numpy(), a.max(0))
    np.testing.assert_array_equal(x.amin(1).numpy(), a.min(1))
    np.testing.assert_array_equal(x.argmax(1).numpy(), a.argmax(1))
    np.testing.assert_array_equal(x.sort(1).values.numpy(), np.sort(a, 1))
    np.testing.assert_array_equal(x.sort(1, stable=True).indices.numpy(),
                                  np.argsort(a, 1, kind="stable"))
    np.testing.assert_array_equal(x.topk(3, 1).values.numpy(), -np.sort(-a, 1)[:, :3])


@pytest.mark.parametrize("dt", SMALL + [clgrad.uint8], ids=lambda d: d.name)
def test_matmul_wraps(device, dt):
    rng = np.random.default_rng(1)
    lo = -100 if dt.is_signed else 0
    for m, k, n in [(2, 3, 2), (33, 40, 29)]:
        a = rng.integers(lo, 100, size=(m, k)).astype(dt.np)
        b = rng.integers(lo, 100, size=(k, n)).astype(dt.np)
        got = clgrad.tensor(a, device=device) @ clgrad.tensor(b, device=device)
        assert got.dtype is dt
        np.testing.assert_array_equal(got.numpy(), (a.astype(np.int64) @ b).astype(dt.np))


@pytest.mark.parametrize("dt", SMALL, ids=lambda d: d.name)
def test_atomic_accumulation_on_sub_words(device, dt):
    # index_add_ and scatter_reduce on 8- and 16-bit elements: compare-and-swap on the 32-bit
    # word that holds them, neighbours untouched, sums wrap
    idx = clgrad.tensor([0, 0, 1, 3, 3, 3], device=device)
    src = np.array([100, 100, 3, -7, 50, 90], dtype=dt.np)
    out = clgrad.zeros(5, dtype=dt, device=device).index_add_(0, idx, clgrad.tensor(src, device=device))
    want = np.zeros(5, dt.np)
    np.add.at(want, idx.numpy(), src)
    np.testing.assert_array_equal(out.numpy(), want)
    m = clgrad.full((5,), -1, dtype=dt, device=device).scatter_reduce(
        0, idx, clgrad.tensor(src, device=device), "amax")
    want = np.full(5, -1, dt.np)
    np.maximum.at(want, idx.numpy(), src)
    np.testing.assert_array_equal(m.numpy(), want)


def test_promotion_and_conversion(device):
    i8 = clgrad.ones(2, dtype=clgrad.int8, device=device)
    u8 = clgrad.ones(2, dtype=clgrad.uint8, device=device)
    i16 = clgrad.ones(2, dtype=clgrad.int16, device=device)
    assert clgrad.promote_types(clgrad.int8, clgrad.uint8) is clgrad.int16
    assert (i8 + u8).dtype is clgrad.int16 and (i8 + i16).dtype is clgrad.int16
    assert (i16 + clgrad.ones(2, dtype=clgrad.int32, device=device)).dtype is clgrad.int32
    assert (i8 + 1).dtype is clgrad.int8 and (i8 + 1.5).dtype is clgrad.float32
    assert (i8 / 2).dtype is clgrad.float32
    assert clgrad.tensor(np.arange(3, dtype=np.int8)).dtype is clgrad.int8
    assert clgrad.tensor(np.arange(3, dtype=np.int16)).dtype is clgrad.int16
    assert clgrad.tensor([1.7, -2.5, 300.0], device=device).to(clgrad.int16).tolist() == [1, -2, 300]
    assert i8.short().dtype is clgrad.int16 and i16.char().dtype is clgrad.int8
    assert i8.type() == f"torch.{'cuda.' if device.is_gpu else ''}CharTensor" and i16.type("torch.LongTensor").dtype is clgrad.int64
    assert isinstance(i16, clgrad.ShortTensor) and clgrad.short is clgrad.int16
    # to bool stores 1 for any non-zero, from every integer type (uint8 shares bool's compute
    # type, and its copy was once a plain copy: 2 stayed 2)
    for dt in (clgrad.uint8, clgrad.int8, clgrad.int16):
        v = clgrad.tensor([0, 2, 255 if dt is clgrad.uint8 else -3, 1] * 5, dtype=dt, device=device)
        assert v.bool().to(dt).tolist() == [0, 1, 1, 1] * 5 and v.bool().sum().item() == 15
        assert v[::2].bool().int().tolist() == [0, 1] * 5
    x = clgrad.tensor([1.0, -2.0], device=device)
    np.testing.assert_array_equal(x.view(clgrad.int16).numpy(),
                                  np.array([1.0, -2.0], np.float32).view(np.int16))


def test_fill_overflow_is_an_error(device):
    with pytest.raises(RuntimeError, match="int8_t without overflow"):
        clgrad.full((2,), 300, dtype=clgrad.int8, device=device)
    with pytest.raises(RuntimeError, match="int16_t without overflow"):
        clgrad.zeros(2, dtype=clgrad.int16, device=device).fill_(40000)
    with pytest.raises(RuntimeError, match="c10::Half without overflow"):
        clgrad.zeros(2, dtype=clgrad.float16, device=device).fill_(1e6)
    with pytest.raises(RuntimeError, match="int8_t without overflow"):
        clgrad.zeros(2, dtype=clgrad.int8, device=device).masked_fill(
            clgrad.tensor([True, False], device=device), -129)
    # in range, unsigned wrap of small negatives, and infinities in floats stay allowed
    assert clgrad.full((1,), -128, dtype=clgrad.int8, device=device).item() == -128
    assert clgrad.zeros(1, dtype=clgrad.uint8, device=device).fill_(-1).item() == 255
    assert clgrad.full((1,), float("-inf"), dtype=clgrad.float16, device=device).item() == -np.inf
    # arithmetic with a number out of range wraps, as torch's does
    assert (clgrad.tensor([1], dtype=clgrad.int8, device=device) + 300).item() == 45


def test_finfo_iinfo():
    for dt in (clgrad.float32, clgrad.float64, clgrad.float16):
        f, ref = clgrad.finfo(dt), np.finfo(dt.np)
        assert (f.bits, f.eps, f.max, f.min, f.tiny) == (ref.bits, ref.eps, ref.max, ref.min,
                                                        ref.tiny)
    assert clgrad.finfo().dtype == "float32" and clgrad.finfo(clgrad.bfloat16).eps == 2.0 ** -7
    for dt in (clgrad.int8, clgrad.int16, clgrad.int32, clgrad.int64, clgrad.uint8):
        i, ref = clgrad.iinfo(dt), np.iinfo(dt.np)
        assert (i.bits, i.min, i.max) == (ref.bits, ref.min, ref.max)
    with pytest.raises(TypeError, match="floating point"):
        clgrad.finfo(clgrad.int32)
    with pytest.raises(TypeError, match="integer"):
        clgrad.iinfo(clgrad.float32)
    with pytest.raises(TypeError, match="not supported"):
        clgrad.iinfo(clgrad.bool)
