"""Custom autograd Functions and their ctx, as torch.autograd.Function defines them."""
import numpy as np
import pytest

import clgrad
from clgrad import autograd
from clgrad.autograd import Function
from clgrad.autograd.function import once_differentiable
from helpers import grad_dtype, grad_tols


class MulAdd(Function):
    """x * y + scale, with a non-tensor argument in the middle."""

    @staticmethod
    def forward(ctx, x, scale, y):
        ctx.save_for_backward(x, y)
        ctx.scale = scale
        return x * y + scale

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = g * y if ctx.needs_input_grad[0] else None
        gy = g * x if ctx.needs_input_grad[2] else None
        return gx, None, gy


def test_custom_function_basics(device):
    x = clgrad.tensor([1.0, 2.0], requires_grad=True)
    y = clgrad.tensor([3.0, 4.0], requires_grad=True)
    z = MulAdd.apply(x, 10.0, y)
    assert z.tolist() == [13.0, 18.0]
    assert z.grad_fn.name() == "MulAddBackward"
    assert len(z.grad_fn.next_functions) == 2
    z.sum().backward()
    assert x.grad.tolist() == [3.0, 4.0] and y.grad.tolist() == [1.0, 2.0]
    dt = grad_dtype(device)
    a = clgrad.randn(3, dtype=dt, requires_grad=True)
    b = clgrad.randn(3, dtype=dt, requires_grad=True)
    assert autograd.gradcheck(lambda p, q: MulAdd.apply(p, 2.0, q), (a, b), **grad_tols(device))
    assert autograd.gradgradcheck(lambda p, q: MulAdd.apply(p, 2.0, q), (a, b),
                                  **grad_tols(device))
    assert MulAdd()(x, 1.0, y).tolist() == [4.0, 9.0]       # the legacy call style
    with clgrad.no_grad():
        assert not MulAdd.apply(x, 1.0, y).requires_grad


def test_needs_input_grad_and_none_gradients(device):
    seen = {}

    class F(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            seen["needs"] = ctx.needs_input_grad
            return g * 2, None

    x = clgrad.ones(2, requires_grad=True)
    F.apply(x, clgrad.ones(2)).sum().backward()
    assert seen["needs"] == (True, False) and x.grad.tolist() == [2.0, 2.0]


def test_setup_context_style(device):
    class Cube(Function):
        @staticmethod
        def forward(x, power):
            return x ** power

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, power = inputs
            ctx.save_for_backward(x)
            ctx.power = power

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * ctx.power * x ** (ctx.power - 1), None

    x = clgrad.tensor([2.0], requires_grad=True)
    y = Cube.apply(x, 3)
    y.backward()
    assert y.item() == 8.0 and x.grad.item() == 12.0


def test_multiple_outputs_and_materialized_grads(device):
    class Split(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            assert ga is not None and gb is not None          # zeros for the unused output
            return ga * 2 + gb * 3

    x = clgrad.ones(2, requires_grad=True)
    a, b = Split.apply(x)
    a.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]

    class NoMaterialize(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, ga, gb):
            return ga if gb is None else ga + gb

    y = clgrad.ones(2, requires_grad=True)
    p, q = NoMaterialize.apply(y)
    (p * 5).sum().backward()
    assert y.grad.tolist() == [5.0, 5.0]


def test_mark_non_differentiable(device):
    class SortValues(Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax(0, keepdim=True)
            mask = (x == x.amax()).to(x.dtype)
            ctx.mark_non_differentiable(mask)
            ctx.save_for_backward(mask)
            return x.amax(), mask

        @staticmethod
        def backward(ctx, g, g_mask):
            mask, = ctx.saved_tensors
            return g * mask

    x = clgrad.tensor([1.0, 5.0, 2.0], requires_grad=True)
    v, m = SortValues.apply(x)
    assert v.requires_grad and not m.requires_grad
    v.backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]


def test_mark_dirty(device):
    class AddOne_(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 1

    leaf = clgrad.tensor([1.0, 2.0], requires_grad=True)
    y = leaf * 2
    z = AddOne_.apply(y)
    assert z is y and y.grad_fn.name() == "AddOne_Backward"
    (z * z).sum().backward()
    assert leaf.grad.tolist() == [12.0, 20.0]
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        AddOne_.apply(clgrad.tensor([1.0], requires_grad=True))


def test_returning_an_input_gives_a_new_tensor(device):
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = clgrad.tensor([1.0], requires_grad=True)
    y = Identity.apply(x)
    assert y is not x and y._storage is x._storage
    y.backward()
    assert x.grad.tolist() == [2.0]


def test_wrong_backward_results_raise(device):
    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    class NotForNonTensor(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return clgrad.ones(5)

    x = clgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        TooMany.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="not a Variable"):
        NotForNonTensor.apply(x, 2.0).sum().backward()
    with pytest.raises(RuntimeError, match="invalid gradient at index 0"):
        BadShape.apply(x).backward()


def test_once_differentiable(device):
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    x = clgrad.tensor([3.0], requires_grad=True)
    (g,) = autograd.grad(Square.apply(x), x, create_graph=True)
    assert g.item() == 6.0 and not g.requires_grad        # as torch: the grad output did not
    v = clgrad.ones(1, requires_grad=True)
    (g,) = autograd.grad(Square.apply(x), x, grad_outputs=v, create_graph=True)
    assert g.grad_fn.name() == "Error"
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.backward()


def test_saved_tensors_are_freed_and_versioned(device):
    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 2

    x = clgrad.ones(2, requires_grad=True)
    y = Keep.apply(x)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        y.grad_fn.saved_tensors
    a = x * 1
    b = Keep.apply(a)
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_builtin_ops_use_the_same_mechanism(device):
    from clgrad.autograd.function import BackwardCFunction, Node
    x = clgrad.ones(2, requires_grad=True)
    node = x.exp().grad_fn
    assert isinstance(node, BackwardCFunction) and isinstance(node, Node)
    assert node.name() == "ExpBackward0"
