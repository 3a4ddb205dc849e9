"""Results of elementwise ops are laid out as their operands, as torch's are (TensorIterator): an
op of a transposed or permuted tensor gives a result with the same strides, so that `.view` of
it succeeds or fails where torch's does. (Each expected layout below was checked against torch.)"""
import numpy as np
import pytest

import clgrad


def _permuted(shape, order):
    n = int(np.prod(shape))
    base = np.arange(n, dtype=np.float64).reshape([shape[d] for d in order])
    inverse = [order.index(d) for d in range(len(shape))]
    return clgrad.tensor(base).permute(*inverse), base.transpose(inverse)


@pytest.mark.parametrize("shape,order", [((2, 3), [1, 0]), ((2, 3, 4), [2, 0, 1]),
                                         ((1, 8, 3), [0, 2, 1]), ((4, 2, 2, 3), [0, 2, 3, 1])])
def test_unary_and_binary_results_keep_a_permuted_layout(device, shape, order):
    x, ref = _permuted(shape, order)
    assert not x.is_contiguous()
    for f, g in ((lambda t: t.exp(), np.exp), (lambda t: t * 2 + 1, lambda r: r * 2 + 1),
                 (lambda t: t * t, lambda r: r * r), (lambda t: t > 3, lambda r: r > 3)):
        y = f(x)
        assert y.stride() == x.stride(), y.stride()
        np.testing.assert_allclose(y.numpy(), g(ref))


def test_the_first_operand_that_tells_dims_apart_decides(device):
    a = clgrad.arange(6.0).reshape(2, 3).t()            # strides (1, 3)
    c = a.contiguous()                                  # strides (2, 1)
    assert (a + c).stride() == (1, 3)
    assert (c + a).stride() == (2, 1)
    # a broadcast operand tells nothing: the other one decides
    assert (a + clgrad.ones(2)).stride() == (1, 3)
    np.testing.assert_allclose((a + c).numpy(), 2 * a.numpy())


def test_view_of_a_result_succeeds_and_fails_as_torch(device):
    x = clgrad.arange(6.0).reshape(2, 3)
    assert x.t().neg().t().view(6).tolist() == [-0.0, -1.0, -2.0, -3.0, -4.0, -5.0]
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.t().exp().view(6)


def test_gradients_through_permuted_results(device):
    x = clgrad.tensor(np.arange(6.0).reshape(2, 3), dtype=clgrad.float64, requires_grad=True)
    assert clgrad.autograd.gradcheck(lambda t: (t.t().sin() * t.t()).t().reshape(-1), (x,))


def test_clone_and_casts_keep_the_layout_as_torchs_preserve_format(device):
    x = clgrad.arange(24.0).reshape(2, 3, 4)
    for y, strides in ((x.permute(2, 0, 1), (1, 12, 4)), (x[:, ::2], (8, 4, 1)),
                       (x.transpose(0, 1)[:, :, 1:], (3, 9, 1))):
        for c in (y.clone(), y.to(clgrad.float64)):
            assert c.stride() == strides and c.storage_offset() == 0
            np.testing.assert_array_equal(c.numpy(), y.numpy())
    assert y.contiguous().is_contiguous()
    t = clgrad.arange(6.0).reshape(2, 3).t().clone()
    assert t.t().view(6).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_put_on_a_tensor_not_viewable_as_1d(device):
    """put / put_ index the row-major order of any layout (a transposed clone kept its layout,
    and put_ refused such a tensor)."""
    x = clgrad.arange(6.0).reshape(2, 3).t()
    assert clgrad.put(x, clgrad.tensor([0, 4]), clgrad.tensor([10.0, 20.0])).tolist() == \
        [[10.0, 3.0], [1.0, 4.0], [20.0, 5.0]]
    y = x.clone()
    y.put_(clgrad.tensor([1]), clgrad.tensor([7.0]))
    assert y.tolist() == [[0.0, 7.0], [1.0, 4.0], [2.0, 5.0]] and x.tolist()[0] == [0.0, 3.0]
