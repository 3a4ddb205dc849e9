"""Parameters to one flat vector and back."""
from ...autograd.grad_mode import no_grad
from ...ops.join import cat


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated into one vector.

    >>> import clgrad
    >>> clgrad.nn.utils.parameters_to_vector(clgrad.nn.Linear(3, 2).parameters()).shape
    clgrad.Size([8])
    """
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of vec into the parameters (in place).

    >>> import clgrad
    >>> lin = clgrad.nn.Linear(1, 1)
    >>> clgrad.nn.utils.vector_to_parameters(clgrad.tensor([2.0, 3.0]), lin.parameters())
    >>> lin.weight.item(), lin.bias.item()
    (2.0, 3.0)
    """
    if not hasattr(vec, "shape") or vec.ndim != 1:
        raise TypeError(f"expected a 1-D Tensor, but got: {type(vec).__name__}")
    pointer = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[pointer:pointer + n].view_as(p))
            pointer += n
