"""Complex tensors: dtypes and promotion, creation and host interop, printing, casts, the views
between a complex tensor and its (re, im) storage, and elementwise arithmetic against numpy's
complex numbers on contiguous, strided, 0-d and empty inputs."""
import warnings

import numpy as np
import pytest

import clgrad
from clgrad import dtypes


def _cdtypes(device):
    return [clgrad.complex64] + ([clgrad.complex128] if device.has_fp64 else [])


def _rand(shape, seed=0, dt=np.complex128):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


def _close(t, expect, dt):
    tol = 1e-5 if dt in (clgrad.complex64, clgrad.float32) else 1e-11
    got = t.numpy()
    assert got.shape == np.shape(expect)
    np.testing.assert_allclose(got, expect, rtol=tol, atol=tol)


# ---- dtypes ----------------------------------------------------------------------------------------
def test_dtype_attributes():
    c64, c128 = clgrad.complex64, clgrad.complex128
    assert clgrad.cfloat is c64 and clgrad.cdouble is c128 and clgrad.chalf is clgrad.complex32
    assert c64.is_complex and not c64.is_floating_point and c64.is_signed
    assert not clgrad.float32.is_complex
    assert (c64.itemsize, c128.itemsize, clgrad.complex32.itemsize) == (8, 16, 4)
    assert c64.to_real() is clgrad.float32 and c128.to_real() is clgrad.float64
    assert clgrad.float32.to_complex() is c64 and clgrad.float64.to_complex() is c128
    assert clgrad.float16.to_complex() is clgrad.complex32 and c64.to_complex() is c64
    assert clgrad.int32.to_real() is clgrad.int32
    with pytest.raises(RuntimeError, match="Unknown Complex ScalarType for Int"):
        clgrad.int32.to_complex()
    assert repr(c64) == "clgrad.complex64" and dtypes.as_dtype("cfloat") is c64
    assert dtypes.as_dtype(np.complex128) is c128 and dtypes.as_dtype(complex) is c64
    assert clgrad.finfo(c64).eps == clgrad.finfo(clgrad.float32).eps


def test_promotion():
    c32, c64, c128 = clgrad.complex32, clgrad.complex64, clgrad.complex128
    P = clgrad.promote_types
    assert P(c64, clgrad.float64) is c128 and P(c64, clgrad.float32) is c64
    assert P(c32, clgrad.float32) is c64 and P(c32, clgrad.float16) is c32
    assert P(c32, clgrad.bfloat16) is c64 and P(c64, clgrad.int64) is c64
    assert P(clgrad.bool, c128) is c128 and P(c64, c128) is c128
    R = clgrad.result_type
    f64 = clgrad.zeros(2, dtype=clgrad.float64)
    # a complex number or 0-d tensor keeps a float tensor's precision (torch's categories)
    assert R(f64, 1j) is c128 and R(clgrad.zeros(2, dtype=clgrad.int32), 1j) is c64
    assert R(clgrad.zeros(2), clgrad.tensor(1j, dtype=c128)) is c64
    assert R(clgrad.zeros(2, dtype=clgrad.float16), 1j) is c32
    assert R(clgrad.zeros(2, dtype=c64), 2.5) is c64
    assert not clgrad.can_cast(c64, clgrad.float32) and clgrad.can_cast(clgrad.float64, c64)


# ---- creation, host interop, printing ----------------------------------------------------------------
def test_creation_and_host(device):
    t = clgrad.tensor([1 + 2j, 3 - 4j])
    assert t.dtype is clgrad.complex64 and t.is_complex() and not t.is_floating_point()
    assert clgrad.is_complex(t) and not clgrad.is_complex(clgrad.zeros(1))
    assert t.tolist() == [1 + 2j, 3 - 4j] and isinstance(t[0].item(), complex)
    assert complex(t[1]) == 3 - 4j
    assert t.numpy().dtype == np.complex64
    a = _rand((2, 3))
    f = clgrad.from_numpy(a)
    assert f.dtype is (clgrad.complex128 if device.has_fp64 else f.dtype)
    np.testing.assert_array_equal(f.numpy(), a)
    assert clgrad.zeros(2, dtype=clgrad.cfloat).tolist() == [0j, 0j]
    assert clgrad.ones(1, dtype=clgrad.cfloat).tolist() == [1 + 0j]
    full = clgrad.full((2,), 1 - 2j)
    assert full.dtype is clgrad.complex64 and full.tolist() == [1 - 2j, 1 - 2j]
    assert clgrad.tensor(2 + 3j).shape == () and clgrad.tensor([]).to(clgrad.cfloat).numel() == 0
    h = clgrad.tensor([1 + 2j, -0.5j], dtype=clgrad.complex32)
    assert h.tolist() == [1 + 2j, -0.5j] and h.element_size() == 4


def test_randn_draws_torch_complex_normal(device):
    clgrad.manual_seed(0)
    z = clgrad.randn(20000, dtype=clgrad.cfloat)
    a = z.numpy()
    # each part normal with variance 1/2: E|z|^2 = 1
    assert abs(np.mean(np.abs(a) ** 2) - 1) < 0.05 and abs(a.real.var() - 0.5) < 0.03
    r = clgrad.rand(1000, dtype=clgrad.cfloat).numpy()
    assert (r.real >= 0).all() and (r.real < 1).all() and (r.imag >= 0).all()


def test_printing_as_torch():
    assert repr(clgrad.tensor([1 + 2j])) == "tensor([1.+2.j])"
    assert repr(clgrad.tensor(2 + 3j)) == "tensor(2.+3.j)"
    assert repr(clgrad.zeros(2, dtype=clgrad.cfloat)) == "tensor([0.+0.j, 0.+0.j])"
    assert repr(clgrad.tensor([[1.5 + 2j, -3e-5j], [1, 2]])) == (
        "tensor([[1.5000+2.0000e+00j, -0.0000-3.0000e-05j],\n"
        "        [1.0000+0.0000e+00j, 2.0000+0.0000e+00j]])")
    assert repr(clgrad.tensor([1e10 + 1j, 1])) == "tensor([1.0000e+10+1.j, 1.0000e+00+0.j])"
    assert repr(clgrad.tensor([float("nan") + 1j, float("inf") - 2j])) == \
        "tensor([nan+1.j, inf-2.j])"
    assert repr(clgrad.tensor([]).to(clgrad.cfloat)) == "tensor([], dtype=clgrad.complex64)"


def test_printing_complex128_wraps_its_suffix(device):
    if not device.has_fp64:
        pytest.skip("the device has no fp64")
    t = clgrad.tensor(np.arange(30) * (1 + 0.5j))
    assert repr(t).endswith("29.+14.5000j],\n       dtype=clgrad.complex128)")


# ---- casts ---------------------------------------------------------------------------------------------
def test_casts(device):
    z = clgrad.tensor([1 + 2j, -3 + 0.5j])
    assert clgrad.tensor([1.0, 2.0]).to(clgrad.cfloat).tolist() == [1 + 0j, 2 + 0j]
    assert clgrad.tensor([1, 2]).to(clgrad.cfloat).tolist() == [1 + 0j, 2 + 0j]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        # torch warns once per process; this test may not be the first to cast
        assert z.float().tolist() == [1.0, -3.0]
        assert z.to(clgrad.int64).tolist() == [1, -3]
        out = clgrad.zeros(2)
        out.copy_(z)
        assert out.tolist() == [1.0, -3.0]
    assert all("discards the imaginary part" in str(x.message) for x in w)
    if device.has_fp64:
        assert z.to(clgrad.complex128).dtype is clgrad.complex128
        assert z.to(clgrad.complex128).tolist() == z.tolist()
    # to bool: True where either part is nonzero (no warning); isclose on both parts
    assert clgrad.tensor([1 + 1j, 2j, 0j]).bool().tolist() == [True, True, False]
    assert clgrad.isclose(z, z + 1e-9j).all().item() and not clgrad.isclose(z, z + 1j).any()
    # a transposed complex tensor copied to contiguous memory
    a = _rand((3, 4), 1, np.complex64)
    t = clgrad.tensor(a).t()
    assert not t.is_contiguous()
    np.testing.assert_array_equal(t.contiguous().numpy(), a.T)
    np.testing.assert_array_equal(t.clone().numpy(), a.T)


# ---- views -------------------------------------------------------------------------------------------
def test_view_as_real_and_complex_share_storage(device):
    z = clgrad.tensor(_rand((3, 4), 2, np.complex64))
    r = clgrad.view_as_real(z)
    assert r.shape == (3, 4, 2) and r.stride() == (8, 2, 1) and r.dtype is clgrad.float32
    assert r._base is z
    np.testing.assert_array_equal(r.numpy(), np.stack([z.numpy().real, z.numpy().imag], -1))
    s = z[1:, ::2]
    rs = clgrad.view_as_real(s)
    assert rs.stride() == (8, 4, 1) and rs.storage_offset() == 2 * s.storage_offset()
    c = clgrad.view_as_complex(r)
    assert c.shape == (3, 4) and c.stride() == (4, 1) and c.dtype is clgrad.complex64
    np.testing.assert_array_equal(c.numpy(), z.numpy())
    r[0, 0, 1] = 7.0                       # one storage
    assert z[0, 0].item().imag == 7.0
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        clgrad.view_as_complex(clgrad.zeros(3, 3))
    with pytest.raises(RuntimeError, match="stride 1"):
        clgrad.view_as_complex(clgrad.zeros(2, 4)[:, ::2])
    with pytest.raises(RuntimeError, match="storage_offset divisible by 2"):
        clgrad.view_as_complex(clgrad.zeros(5)[1:3])
    with pytest.raises(RuntimeError, match="only supported for complex"):
        clgrad.view_as_real(clgrad.zeros(2))
    zero_d = clgrad.view_as_complex(clgrad.tensor([1.0, 2.0]))
    assert zero_d.shape == () and zero_d.item() == 1 + 2j


def test_real_imag_views_and_setters(device):
    z = clgrad.tensor([1 + 2j, 3 - 4j])
    assert z.real.tolist() == [1.0, 3.0] and z.imag.tolist() == [2.0, -4.0]
    assert z.real.stride() == (2,) and z.imag.storage_offset() == 1
    z.imag[0] = 9.0
    assert z.tolist()[0] == 1 + 9j
    z.real = clgrad.tensor([5.0, 6.0])
    assert z.tolist() == [5 + 9j, 6 - 4j]
    x = clgrad.tensor([1.0, 2.0])
    assert x.real is x
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        x.imag


def test_complex_polar_conj(device):
    re, im = clgrad.tensor([1.0, 2.0]), clgrad.tensor([3.0, -4.0])
    assert clgrad.complex(re, im).tolist() == [1 + 3j, 2 - 4j]
    assert clgrad.complex(re, clgrad.tensor(1.0)).tolist() == [1 + 1j, 2 + 1j]
    with pytest.raises(RuntimeError):
        clgrad.complex(re, im.double())
    p = clgrad.polar(clgrad.tensor([2.0, 1.0]), clgrad.tensor([0.5, -2.0]))
    np.testing.assert_allclose(p.numpy(), [2 * np.exp(0.5j), np.exp(-2j)], rtol=1e-6)
    z = clgrad.tensor([1 + 2j, 3 - 4j])
    assert z.conj().tolist() == [1 - 2j, 3 + 4j] and not z.conj().is_conj()
    assert z.conj().resolve_conj().tolist() == [1 - 2j, 3 + 4j]
    assert clgrad.conj_physical(z).tolist() == [1 - 2j, 3 + 4j]
    assert x_is(re.conj(), re)
    m = clgrad.tensor([[1 + 1j, 2j], [3, 4 - 1j]])
    assert m.mH.tolist() == [[1 - 1j, 3], [-2j, 4 + 1j]] and m.H.tolist() == m.mH.tolist()
    assert clgrad.isreal(clgrad.tensor([1 + 0j, 1j])).tolist() == [True, False]


def x_is(a, b):
    return a is b


# ---- elementwise arithmetic -------------------------------------------------------------------------
_UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
          "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "neg": np.negative,
          "reciprocal": lambda a: 1 / a, "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
          "rsqrt": lambda a: 1 / np.sqrt(a), "square": np.square, "conj": np.conj,
          "abs": np.abs, "angle": np.angle, "sgn": lambda a: a / np.abs(a)}
_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
           "pow": np.power, "eq": np.equal, "ne": np.not_equal}


def _layouts(a):
    """(tensor, numpy) pairs: contiguous, transposed, strided, 0-d, empty."""
    t = clgrad.tensor(a)
    return [(t, a), (t.t(), a.T), (t[:, ::2], a[:, ::2]), (t[1, 2], a[1, 2]),
            (t[:0], a[:0])]


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_unary_against_numpy(device, name):
    for dt in _cdtypes(device):
        a = _rand((3, 4), 3, dt.np)
        for t, ref in _layouts(a):
            got = getattr(clgrad, name)(t)
            want = _UNARY[name](ref.astype(np.complex128))
            if name in ("abs", "angle"):
                assert got.dtype is dt.to_real()
            _close(got, np.asarray(want).astype(got.numpy().dtype), dt)


@pytest.mark.parametrize("name", sorted(_BINARY))
def test_binary_against_numpy(device, name):
    for dt in _cdtypes(device):
        a, b = _rand((3, 4), 4, dt.np), _rand((3, 4), 5, dt.np)
        b[0, 0] = a[0, 0]                                  # eq sees one equal pair
        f = getattr(clgrad, name)
        for (t, ra), (u, rb) in zip(_layouts(a), _layouts(b)):
            _close(f(t, u), _BINARY[name](ra, rb), dt)
        ta = clgrad.tensor(a)
        # broadcasting, real and complex operands mixed, Python complex numbers
        _close(f(ta, clgrad.tensor(b[0])), _BINARY[name](a, b[0]), dt)
        real = np.linspace(0.5, 2.0, 4).astype(dt.to_real().np)
        _close(f(ta, clgrad.tensor(real)), _BINARY[name](a, real), dt)
        _close(f(ta, 1.5 - 0.5j), _BINARY[name](a, np.asarray(1.5 - 0.5j, dt.np)), dt)
        if name not in ("pow", "eq", "ne"):
            _close(f(2 + 1j, ta) if name != "pow" else ta, _BINARY[name](2 + 1j, a), dt)


def test_operators_and_scalars(device):
    a = _rand((4,), 6, np.complex64)
    z = clgrad.tensor(a)
    _close(z * 1j, a * 1j, clgrad.complex64)
    _close(1j * z, a * 1j, clgrad.complex64)
    _close(2 - z, 2 - a, clgrad.complex64)
    _close(z / (1 + 1j), a / (1 + 1j), clgrad.complex64)
    _close(z ** 2, a ** 2, clgrad.complex64)
    _close(z ** 0.5, a ** 0.5, clgrad.complex64)
    _close(-z, -a, clgrad.complex64)
    x = clgrad.tensor([1.0, 2.0])
    assert (x * 1j).dtype is clgrad.complex64 and (x * 1j).tolist() == [1j, 2j]
    assert (z == z).all().item() and not (z != z).any().item()
    with pytest.raises(NotImplementedError):
        z < z
    w = clgrad.tensor(a)
    w.mul_(2j)
    _close(w, a * 2j, clgrad.complex64)


def test_float64_operand_promotes_to_complex128(device):
    if not device.has_fp64:
        with pytest.raises(TypeError, match="complex128"):
            clgrad.zeros(2, dtype=clgrad.complex128)
        return
    x = clgrad.tensor([1.0, 2.0], dtype=clgrad.float64)
    assert (x * 1j).dtype is clgrad.complex128
    assert (x + clgrad.tensor([1j])).dtype is clgrad.complex128


# ---- reductions, products, data movement, save / load, fp64 ------------------------------------------
def test_reductions(device):
    for dt in _cdtypes(device):
        a = _rand((3, 5, 4), 7, dt.np)
        t = clgrad.tensor(a)
        for dim in (None, 0, 1, (0, 2)):
            kw = {} if dim is None else {"dim": dim}
            ax = None if dim is None else dim
            _close(t.sum(**kw), a.sum(axis=ax), dt)
            _close(t.mean(**kw), a.mean(axis=ax), dt)
        for dim in (None, 1, 2):
            got = t.prod() if dim is None else t.prod(dim)
            want = a.astype(np.complex128).prod(axis=dim)
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-4 if dt is clgrad.complex64
                                       else 1e-10)
        _close(t.transpose(0, 2).sum(1), a.transpose(2, 1, 0).sum(1), dt)
        _close(t.sum(1, keepdim=True), a.sum(1, keepdims=True), dt)
        _close(t[:0].sum(), np.zeros((), dt.np), dt)
        _close(t[:0].prod(), np.ones((), dt.np), dt)
        _close(t.cumsum(1), a.cumsum(1), dt)
        _close(t.transpose(0, 1).cumsum(0), a.transpose(1, 0, 2).cumsum(0), dt)
        r = dt.to_real()
        _close(t.norm(), np.asarray(np.linalg.norm(a), r.np), r)
        _close(clgrad.linalg.vector_norm(t, 1, dim=2), np.abs(a).sum(2), r)


def test_matrix_products(device):
    for dt in _cdtypes(device):
        a, b = _rand((3, 4), 8, dt.np), _rand((4, 5), 9, dt.np)
        A, B = clgrad.tensor(a), clgrad.tensor(b)
        _close(A @ B, a @ b, dt)
        _close(A.t().contiguous().t() @ B, a @ b, dt)          # a transposed operand
        a3, b3 = _rand((2, 3, 4), 10, dt.np), _rand((2, 4, 5), 11, dt.np)
        _close(clgrad.tensor(a3) @ clgrad.tensor(b3), a3 @ b3, dt)
        _close(clgrad.bmm(clgrad.tensor(a3), clgrad.tensor(b3)), a3 @ b3, dt)
        _close(clgrad.tensor(a3) @ B, a3 @ b, dt)
        v = _rand((4,), 12, dt.np)
        _close(A @ clgrad.tensor(v), a @ v, dt)
        _close(clgrad.dot(clgrad.tensor(v), clgrad.tensor(v)), v @ v, dt)
        _close(clgrad.vdot(clgrad.tensor(v), clgrad.tensor(v)), np.vdot(v, v), dt)
        _close(clgrad.addmm(clgrad.tensor(a @ b), A, B, beta=0.5, alpha=2j),
               0.5 * (a @ b) + 2j * (a @ b), dt)
        _close(clgrad.einsum("ij,jk->ik", A, B), a @ b, dt)
        with pytest.raises(RuntimeError, match="same dtype"):
            A @ clgrad.tensor(b.real.copy())


def test_indexing_joins_and_movement(device):
    a = _rand((3, 4), 13, np.complex64)
    z = clgrad.tensor(a)
    np.testing.assert_array_equal(clgrad.cat([z, z[:1]]).numpy(), np.concatenate([a, a[:1]]))
    np.testing.assert_array_equal(clgrad.stack([z, z], 1).numpy(), np.stack([a, a], 1))
    np.testing.assert_array_equal(z[clgrad.tensor([2, 0])].numpy(), a[[2, 0]])
    mask = a.real > 0
    np.testing.assert_array_equal(z[clgrad.tensor(mask)].numpy(), a[mask])
    np.testing.assert_array_equal(clgrad.gather(z, 1, clgrad.tensor([[0], [3], [1]])).numpy(),
                                  np.take_along_axis(a, np.array([[0], [3], [1]]), 1))
    np.testing.assert_array_equal(z.flip(0).numpy(), a[::-1])
    np.testing.assert_array_equal(z.roll(1, 1).numpy(), np.roll(a, 1, 1))
    np.testing.assert_array_equal(z.tril().numpy(), np.tril(a))
    np.testing.assert_array_equal(z.repeat(2, 1).numpy(), np.tile(a, (2, 1)))
    w = z.clone()
    w[1] = 5j
    w[clgrad.tensor([0, 2]), 0] = clgrad.tensor([1 + 1j, 2 - 2j])
    ref = a.copy()
    ref[1] = 5j
    ref[[0, 2], 0] = [1 + 1j, 2 - 2j]
    np.testing.assert_array_equal(w.numpy(), ref)
    acc = clgrad.zeros(3, dtype=clgrad.cfloat).index_add_(0, clgrad.tensor([0, 0, 2]),
                                                          clgrad.tensor([1j, 2 + 1j, 3.0 + 0j]))
    assert acc.tolist() == [2 + 2j, 0j, 3 + 0j]
    nz = clgrad.nonzero(clgrad.tensor([0j, 1j, 0, 2 + 0j]))
    assert nz.tolist() == [[1], [3]]
    np.testing.assert_array_equal(clgrad.where(clgrad.tensor(mask), z, 0).numpy(),
                                  np.where(mask, a, 0))


def test_save_and_load(device, tmp_path):
    path = tmp_path / "c.pt"
    a = _rand((2, 3), 14, np.complex64)
    z = clgrad.tensor(a, requires_grad=True)
    clgrad.save({"z": z, "h": clgrad.tensor([1 + 2j], dtype=clgrad.complex32)}, path)
    back = clgrad.load(path)
    assert back["z"].dtype is clgrad.complex64 and back["z"].requires_grad
    np.testing.assert_array_equal(back["z"].detach().numpy(), a)
    assert back["h"].dtype is clgrad.complex32 and back["h"].tolist() == [1 + 2j]


def test_complex128_follows_the_float64_rule(device, monkeypatch):
    # on a device without fp64, complex128 is refused where float64 is, with the same error
    monkeypatch.setattr(device, "has_fp64", False)
    for make in (lambda: clgrad.zeros(2, dtype=clgrad.complex128),
                 lambda: clgrad.tensor([1j], dtype=clgrad.complex128),
                 lambda: clgrad.tensor([1j]).to(clgrad.complex128)):
        with pytest.raises(TypeError, match="complex128 is not supported .* use complex64"):
            make()
    with pytest.raises(TypeError, match="float64 is not supported"):
        clgrad.zeros(2, dtype=clgrad.float64)
    assert (clgrad.tensor([1j]) * 2).dtype is clgrad.complex64


def test_complex_values_into_real_tensors(device):
    # torch raises where a complex value with an imaginary part would be written into a real
    # tensor, and takes one without it
    z = clgrad.tensor(1 + 1j)
    for f, what in ((lambda: float(z), "double"), (lambda: int(z), "int64_t"),
                    (lambda: clgrad.zeros(2).__setitem__(0, 1j), "float"),
                    (lambda: clgrad.zeros(2).fill_(1j), "float"),
                    (lambda: clgrad.full((2,), 1j, dtype=clgrad.int64), "int64_t"),
                    (lambda: clgrad.zeros(2).masked_fill(clgrad.tensor([True, False]), 1j),
                     "float")):
        with pytest.raises(RuntimeError, match=f"converted to type {what} without overflow"):
            f()
    assert float(clgrad.tensor(2 + 0j)) == 2.0
    t = clgrad.zeros(2)
    t[0] = 2 + 0j
    assert t.tolist() == [2.0, 0.0]
    with pytest.raises(TypeError, match="must be real number, not complex"):
        clgrad.tensor([1j], dtype=clgrad.float32)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Float"):
        clgrad.zeros(2).mul_(1j)
    # a complex exponent makes a complex power
    np.testing.assert_allclose((clgrad.tensor([2]) ** 1j).numpy(), [2 ** 1j], rtol=1e-6)
    np.testing.assert_allclose((clgrad.tensor([2.0]) ** (1 + 1j)).numpy(), [2 ** (1 + 1j)],
                               rtol=1e-6)
