"""Views share storage and never copy; basic indexing; contiguous/clone/casts; their gradients."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import clgrad
from helpers import (all_dtypes, assert_close, grad_dtype, grad_tols, make, random_array,
                     to_np)


def _shares(a, b):
    return a._storage is b._storage


def test_views_share_storage_and_version(device):
    x = clgrad.arange(24, dtype=clgrad.float32).reshape(2, 3, 4)
    views = [x.view(6, 4), x.reshape(4, 6), x.transpose(0, 2), x.permute(2, 0, 1), x.t() if False
             else x.transpose(1, 2), x[0], x[:, 1:3], x[..., ::2], x.unsqueeze(1), x[None],
             x.flatten(), x.narrow(2, 1, 2), x.select(1, 2), x.diagonal(0, 1, 2),
             x[0].expand(5, 3, 4), x.unflatten(2, (2, 2)), x.squeeze(), x.as_strided((2, 2), (1, 4))]
    views += list(x.unbind(1)) + list(x.split(2, 2)) + list(x.chunk(2, 0))
    root = x._base
    assert root is not None and root._base is None       # x is itself a view of arange's result
    for v in views:
        assert _shares(v, x)
        assert v._base is root
    x.add_(1)
    assert all(v._version == x._version for v in views)


def test_view_values_match_numpy(device):
    rng = np.random.default_rng(0)
    for dt in all_dtypes(device):
        a = random_array((2, 3, 4), dt, rng)
        for layout in ("contiguous", "transposed", "strided"):
            x = make(a, dt, device, layout)
            ref = a
            checks = [
                (x.transpose(0, 2), ref.transpose(2, 1, 0)), (x.permute(1, 2, 0), ref.transpose(1, 2, 0)),
                (x[1], ref[1]), (x[:, 1:3], ref[:, 1:3]), (x[..., ::2], ref[..., ::2]),
                (x[::-1 + 2, 2:0:1], ref[::1, 2:0]), (x[None, :, None], ref[None, :, None]),
                (x.reshape(6, 4), ref.reshape(6, 4)), (x.reshape(-1), ref.reshape(-1)),
                (x.flatten(1), ref.reshape(2, 12)), (x.select(2, -1), ref[:, :, -1]),
                (x.narrow(1, 1, 2), ref[:, 1:3]), (x.diagonal(1, 1, 2), np.diagonal(ref, 1, 1, 2)),
                (x[:, :1].expand(2, 5, 4), np.broadcast_to(ref[:, :1], (2, 5, 4))),
                (x.unsqueeze(-1).squeeze(-1), ref), (x[1, 2, 3], ref[1, 2, 3]),
                (x.contiguous(), ref), (x.clone(), ref),
            ]
            for got, want in checks:
                assert tuple(got.shape) == want.shape
                assert_close(got, want, dt)
            for got, want in zip(x.unbind(2), [ref[:, :, i] for i in range(4)]):
                assert_close(got, want, dt)
            for got, want in zip(x.split([1, 3], 2), [ref[..., :1], ref[..., 1:]]):
                assert_close(got, want, dt)


def test_reshape_copies_only_when_it_must(device):
    x = clgrad.arange(12, dtype=clgrad.float32).reshape(3, 4)
    assert _shares(x.reshape(2, 6), x)
    t = x.t()
    assert _shares(t.reshape(4, 3), x)          # same shape: a view
    assert _shares(x[:, :2].reshape(3, 2), x)
    r = t.reshape(12)
    assert not _shares(r, x)                    # transposed data cannot be flattened as a view
    assert r.tolist() == np.arange(12).reshape(3, 4).T.reshape(12).tolist()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.view(12)
    assert x[:, 1:3].view(3, 2, 1).shape == (3, 2, 1)


def test_zero_dim_and_empty_views(device):
    s = clgrad.tensor(5.0)
    assert s.shape == () and s.reshape(1, 1).shape == (1, 1) and s.unsqueeze(0).tolist() == [5.0]
    assert s.expand(3).tolist() == [5.0, 5.0, 5.0]
    assert s.t().item() == 5.0 and s.flatten().tolist() == [5.0]
    e = clgrad.zeros(0, 3)
    assert e.t().shape == (3, 0) and e.reshape(3, 0, 1).shape == (3, 0, 1)
    assert e.reshape(-1, 3).shape == (0, 3) and e[:, 1].shape == (0,)
    assert clgrad.zeros(2, 0)[1].shape == (0,)


def test_view_errors(device):
    x = clgrad.zeros(2, 3)
    with pytest.raises(RuntimeError, match="invalid for input of size 6"):
        x.view(4, 2)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.view(-1, -1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.transpose(0, 2)
    with pytest.raises(IndexError, match="out of bounds"):
        x[2]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(RuntimeError, match="must match the existing size"):
        x.expand(4, 3, 4)
    with pytest.raises(RuntimeError, match="duplicate dims"):
        x.permute(0, 0)
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions"):
        clgrad.zeros(2, 2, 2).t()
    with pytest.raises(ValueError, match="step must be greater than zero"):
        clgrad.arange(4)[::-1]


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_basic_indexing_matches_numpy(data):
    from conftest import DEVICES
    shape = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
    a = np.arange(int(np.prod(shape))).reshape(shape)
    x = clgrad.tensor(a, device=DEVICES[0])
    idx = []
    for n in shape:
        kind = data.draw(st.sampled_from(["int", "slice", "none", "all"]))
        if kind == "int" and n > 0:
            idx.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            idx.append(slice(data.draw(st.integers(-5, 5)), data.draw(st.integers(-5, 5)),
                             data.draw(st.integers(1, 3))))
        elif kind == "none":
            idx.append(None)
            idx.append(slice(None))
        else:
            idx.append(slice(None))
    if data.draw(st.booleans()) and idx:
        idx = idx[:1] + [Ellipsis]
    got = x[tuple(idx)]
    want = a[tuple(idx)]
    assert tuple(got.shape) == want.shape
    assert np.array_equal(got.numpy(), want)


def test_setitem_basic(device):
    x = clgrad.zeros(3, 4)
    x[1] = 5
    x[:, 2] = clgrad.tensor([1.0, 2.0, 3.0])
    x[0, ::2] = clgrad.tensor(7.0)
    x[..., -1] = 9
    want = np.zeros((3, 4))
    want[1] = 5
    want[:, 2] = [1, 2, 3]
    want[0, ::2] = 7
    want[..., -1] = 9
    assert np.array_equal(x.numpy(), want)


def test_casts(device):
    x = clgrad.tensor([1.7, -2.5, 0.0, 300.0])
    assert x.int().tolist() == [1, -2, 0, 300]
    assert x.bool().tolist() == [True, True, False, True]
    assert x.half().float().tolist() == [1.7001953125, -2.5, 0.0, 300.0]
    assert x.bfloat16().float().tolist() == [1.703125, -2.5, 0.0, 300.0]
    assert x.to(clgrad.int64).dtype is clgrad.int64
    assert x.to(x) is x and x.to(clgrad.float32) is x
    assert clgrad.tensor([True, False]).float().tolist() == [1.0, 0.0]
    # round to nearest even for bfloat16: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7
    halfway = clgrad.tensor([1 + 2 ** -8, 1 + 3 * 2 ** -8], dtype=clgrad.float32)
    assert halfway.bfloat16().float().tolist() == [1.0, 1 + 2 ** -6]
    nan = clgrad.tensor([float("nan"), float("inf")]).bfloat16().float().numpy()
    assert np.isnan(nan[0]) and nan[1] == np.inf


def test_view_gradients(device):
    dt = grad_dtype(device)
    tol = grad_tols(device)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 4))
    fns = [
        lambda t: t.contiguous().view(6, 4), lambda t: t.reshape(4, 6), lambda t: t.transpose(0, 2),
        lambda t: t.permute(2, 0, 1), lambda t: t[1], lambda t: t[:, 1:3, ::2],
        lambda t: t[None, ..., None], lambda t: t[:, :1].expand(2, 5, 4),
        lambda t: t.flatten(), lambda t: t.select(2, 1), lambda t: t.narrow(1, 1, 2),
        lambda t: t.diagonal(0, 1, 2), lambda t: t.as_strided((2, 2), (1, 3), 1),
        lambda t: t.unbind(1)[2], lambda t: t.split([1, 3], 2)[1] * 2, lambda t: t.chunk(3, 1)[0],
        lambda t: t.contiguous(), lambda t: t.clone(), lambda t: t.squeeze(), lambda t: t.mT,
    ]
    for layout in ("contiguous", "transposed"):
        x = make(a, dt, device, layout, requires_grad=True)
        for f in fns:
            assert clgrad.autograd.gradcheck(f, (x,), **tol)
        for f in fns[:8]:
            assert clgrad.autograd.gradgradcheck(f, (x,), **tol)


def test_unbind_gradient_with_unused_outputs(device):
    x = clgrad.randn(3, 2, requires_grad=True)
    a, b, c = x.unbind(0)
    (b * 2).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0], [2.0, 2.0], [0.0, 0.0]]


def test_cast_gradient_comes_back_in_the_input_dtype(device):
    dt = grad_dtype(device)
    x = clgrad.tensor([1.0, 2.0], dtype=dt, requires_grad=True)
    y = x.half()
    assert y.grad_fn.name() == "ToCopyBackward0"
    (y.float() * 3).sum().backward()
    assert x.grad.dtype is dt and x.grad.tolist() == [3.0, 3.0]
    assert not x.int().requires_grad


def test_copy_broadcasts_and_casts(device):
    dst = clgrad.zeros(2, 3)
    dst.copy_(clgrad.tensor([1, 2, 3]))
    assert dst.tolist() == [[1, 2, 3], [1, 2, 3]]
    dst.t().copy_(clgrad.tensor([[7.5], [8.5], [9.5]], dtype=clgrad.float16))
    assert dst.tolist() == [[7.5, 8.5, 9.5], [7.5, 8.5, 9.5]]
    with pytest.raises(RuntimeError, match="must match"):
        dst.copy_(clgrad.zeros(4))


@pytest.mark.parametrize("L", [3, 8, 32, 37])
def test_copies_of_whole_rows(device, code_paths, L):
    """A permutation that keeps the last dim (attention's head split and merge) copies whole rows
    with vector loads (copy_r); rows shorter than a vector take the strided walk. Every dtype,
    with casts, rows with a vector tail, offsets on both sides, and into a strided destination."""
    from clgrad.autograd import profiler
    from clgrad.runtime.kernels import vec_width
    rng = np.random.default_rng(L)
    for dt in all_dtypes(device):
        a = random_array((2, 5, 3, L), dt, rng)
        x = make(a, dt, device)[:, 1:]                         # an offset into the storage
        y = x.permute(2, 0, 1, 3)
        with profiler.profile(use_device="cl") as prof:
            c = y.contiguous()
        kernels = {e.key for e in prof.key_averages() if e.device_type != "cpu"}
        walk = "r" if L >= vec_width(device, dt) else "s"
        assert kernels == {f"copy_{walk}_{dt.short}"}, kernels
        assert_close(c, a[:, 1:].transpose(2, 0, 1, 3), dt)
        other = clgrad.float32 if dt is not clgrad.float32 else clgrad.int64
        assert_close(y.to(other), rounded_to(a[:, 1:].transpose(2, 0, 1, 3), other), other)
        big = clgrad.zeros((3, 2, 4, 2 * L), dtype=dt, device=device)
        big[..., 1::2].copy_(y)                                # destination rows not contiguous
        big[:, :, :, :L].copy_(y)                              # contiguous rows, strided outer dims
        expect = np.zeros((3, 2, 4, 2 * L))
        expect[..., 1::2] = a[:, 1:].transpose(2, 0, 1, 3)
        expect[..., :L] = a[:, 1:].transpose(2, 0, 1, 3)
        assert_close(big, expect.astype(to_np(big).dtype), dt)


@pytest.mark.parametrize("shape", [(8, 4, 16, 32), (6, 4, 5, 33), (2, 3, 2, 17), (4, 2, 3, 64),
                                   (3, 5, 2, 1029)])
def test_rows_kernels_fit_their_rows(device, code_paths, shape):
    """A rows kernel's work-groups (rows_geometry) are as wide as the row and take as many rows
    as dim 1 has where the kernel is built per local size (PoCL): a head merge (copy_r) and a
    broadcast add and multiply (add_r_, mul_r_) on rows of one vector to many, odd counts of rows
    and a tail, match numpy; every launch's groups divide its grid and fit the device."""
    from clgrad.runtime import kernels
    from clgrad.kernels.copy import ROWS_LX
    from clgrad.runtime.kernels import vec_width
    rng = np.random.default_rng(len(shape) + shape[-1])
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal((shape[1], 1, shape[3])).astype(np.float32)
    c = rng.standard_normal(shape[:2] + (1, 1)).astype(np.float32)
    x, y, z = (clgrad.tensor(v, device=device) for v in (a, b, c))
    seen = []

    def hook(dev, k, gsize, lsize, args, evt):
        seen.append((k.function_name, gsize, lsize, dev.max_work_group_size))
    kernels.launch_hooks.append(hook)
    try:
        merged = x.transpose(1, 2).contiguous()
        summed = x + y
        scaled = z.expand(shape) * x
    finally:
        kernels.launch_hooks.remove(hook)
    assert_close(merged, a.transpose(0, 2, 1, 3), clgrad.float32)
    assert_close(summed, a + b, clgrad.float32)
    assert_close(scaled, c * a, clgrad.float32)
    assert [k for k, *_ in seen] == ["copy_r_f32", "add_r_tt", "mul_r_tt"]
    for name, gsize, lsize, most in seen:
        assert all(g % ls == 0 for g, ls in zip(gsize, lsize)), (name, gsize, lsize)
        assert np.prod(lsize) <= most, (name, lsize)
    dev = clgrad.runtime.default_device()
    vectors = -(-shape[-1] // vec_width(dev, clgrad.float32))
    if dev.compiles_per_local_size:            # at most half a group idle along the row and
        (_, gsize, lsize, _) = seen[0]           # along dim 1 (the merge: shape[2] rows there)
        assert lsize[0] == min(ROWS_LX, lsize[0]) and lsize[0] < 2 * vectors, (shape, lsize)
        assert lsize[1] < 2 * shape[1], (shape, lsize)


@pytest.mark.parametrize("shape", [(2, 3, 37, 19), (1, 40, 33), (2, 16, 16)])
def test_copies_of_transposes(device, code_paths, shape):
    """A transpose of the last two dims (x.mT.contiguous(), permute(0, 2, 1)) copies a tile per
    work-item (copy_t): sizes that are not multiples of the tile and that are, an offset into
    the source, every dtype with casts, and into a strided destination."""
    from clgrad.autograd import profiler
    rng = np.random.default_rng(len(shape))
    for dt in all_dtypes(device):
        a = random_array((2,) + shape, dt, rng)
        x = make(a, dt, device)[1]                            # an offset into the storage
        y = x.mT
        with profiler.profile(use_device="cl") as prof:
            c = y.contiguous()
        kernels = {e.key for e in prof.key_averages() if e.device_type != "cpu"}
        assert kernels == {f"copy_t_{dt.short}"}, kernels
        want = np.swapaxes(a[1], -1, -2)
        assert_close(c, want, dt)
        other = clgrad.float32 if dt is not clgrad.float32 else clgrad.int64
        assert_close(y.to(other), rounded_to(want, other), other)
        big = clgrad.zeros(want.shape[:-1] + (2 * want.shape[-1],), dtype=dt, device=device)
        big[..., 1::2].copy_(y)                               # destination rows not contiguous
        expect = np.zeros(big.shape)
        expect[..., 1::2] = want
        assert_close(big, expect.astype(to_np(big).dtype), dt)


def rounded_to(a, dt):
    """numpy values as a cast to dtype dt gives them (truncation towards zero for integers)."""
    return a.astype(np.float64).astype(dt.np) if dt.kind != "f" else a.astype(np.float64)


def test_sizes_and_dims_as_torchs_keywords(device):
    """torch takes the sizes of view / reshape / expand and the dims of permute, and repeat's and
    tile's and flip's counts, as keywords too (issue 22, beside the creation ops' size=)."""
    x = clgrad.arange(6, device=device).view(2, 3)
    assert x.view(size=(3, 2)).shape == (3, 2) and x.view(size=[6]).shape == (6,)
    assert x.float().view(dtype=clgrad.int32).dtype is clgrad.int32
    assert x.reshape(shape=(3, 2)).shape == (3, 2)
    assert clgrad.reshape(x, shape=[1, 6]).shape == (1, 6)
    assert x[:1].expand(size=(4, 3)).shape == (4, 3)
    assert x.permute(dims=(1, 0)).tolist() == clgrad.permute(x, dims=[1, 0]).tolist() == \
        [[0, 3], [1, 4], [2, 5]]
    assert x.repeat(repeats=(2, 1)).shape == (4, 3) and x.tile(dims=(2,)).shape == (2, 6)
    assert x.flip(dims=(0,)).tolist() == clgrad.flip(x, dims=[0]).tolist() == [[3, 4, 5], [0, 1, 2]]
    for call, name in ((lambda: x.view(6, size=(6,)), "size"),
                       (lambda: x.reshape(6, shape=(6,)), "shape"),
                       (lambda: x.expand(2, 3, size=(2, 3)), "size"),
                       (lambda: x.permute(1, 0, dims=(1, 0)), "dims"),
                       (lambda: x.repeat(1, 1, repeats=(1, 1)), "repeats"),
                       (lambda: x.flip(0, dims=(0,)), "dims")):
        with pytest.raises(TypeError, match=f"multiple values for argument '{name}'"):
            call()
    with pytest.raises(TypeError, match="unexpected keyword argument 'sizes'"):
        x.reshape(sizes=(6,))
