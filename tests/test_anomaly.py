"""Anomaly detection: detect_anomaly / set_detect_anomaly, NaN checks with torch's message, the
forward traceback shown before the error; set_multithreading_enabled."""
import warnings

import pytest

import clgrad
from clgrad import autograd
from clgrad.autograd import Function


@pytest.fixture(autouse=True)
def _anomaly_off():
    yield
    clgrad.set_anomaly_enabled(False)


def _run(fn):
    """fn() inside detect_anomaly; (exception or None, [warning messages])."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with autograd.detect_anomaly():
            try:
                fn()
                err = None
            except Exception as e:           # noqa: BLE001 - the test looks at it
                err = e
    return err, [str(x.message) for x in w]


def test_modes_and_exports(device):
    assert autograd.anomaly_mode.detect_anomaly is autograd.detect_anomaly
    assert not clgrad.is_anomaly_enabled() and clgrad.is_anomaly_check_nan_enabled()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with autograd.detect_anomaly(check_nan=False):
            assert clgrad.is_anomaly_enabled() and not clgrad.is_anomaly_check_nan_enabled()
    assert not clgrad.is_anomaly_enabled() and clgrad.is_anomaly_check_nan_enabled()
    autograd.set_detect_anomaly(True)                       # a plain call sets it
    assert clgrad.is_anomaly_enabled()
    with autograd.set_detect_anomaly(False):
        assert not clgrad.is_anomaly_enabled()
    assert clgrad.is_anomaly_enabled()                      # restored at the end of the block
    autograd.set_detect_anomaly(False)

    with pytest.warns(UserWarning):
        @autograd.detect_anomaly()
        def inside():
            return clgrad.is_anomaly_enabled()
    assert inside() and not clgrad.is_anomaly_enabled()
    with autograd.set_multithreading_enabled(False):        # accepted, nothing to change
        x = clgrad.ones(2, requires_grad=True)
        (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_nan_names_the_node_and_shows_the_forward_line(device):
    x = clgrad.tensor([-1.0, 4.0], requires_grad=True)

    def step():
        y = x.sqrt()                                        # the line to blame
        y.sum().backward()

    err, msgs = _run(step)
    assert isinstance(err, RuntimeError)
    assert str(err) == "Function 'SqrtBackward0' returned nan values in its 0th output."
    trace = next(m for m in msgs if m.startswith("Error detected in SqrtBackward0"))
    assert "Traceback of forward call that caused the error:" in trace
    assert "y = x.sqrt()" in trace and "test_anomaly.py" in trace
    assert "clgrad/ops" not in trace                         # ends at the user's code
    # check_nan=False: the NaN goes through
    with pytest.warns(UserWarning):
        with autograd.detect_anomaly(check_nan=False):
            x.sqrt().sum().backward()
    assert x.grad.isnan().any().item()
    # and outside anomaly mode nothing is checked
    x.grad = None
    x.sqrt().sum().backward()
    assert x.grad.isnan().any().item()


class NanBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


class Broken(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        raise ValueError("broken backward")


def test_custom_functions(device):
    x = clgrad.ones(3, requires_grad=True)
    err, msgs = _run(lambda: NanBackward.apply(x).sum().backward())
    assert str(err) == "Function 'NanBackwardBackward' returned nan values in its 0th output."
    assert any("NanBackward.apply(x)" in m for m in msgs)
    # any error in a node's backward gets the forward trace, and is raised unchanged
    err, msgs = _run(lambda: Broken.apply(x).sum().backward())
    assert isinstance(err, ValueError) and str(err) == "broken backward"
    assert any(m.startswith("Error detected in BrokenBackward") and "Broken.apply(x)" in m
               for m in msgs)


def test_node_made_before_anomaly_mode(device):
    x = clgrad.tensor([-1.0], requires_grad=True)
    y = x.sqrt()                                            # recorded without a trace
    err, msgs = _run(lambda: y.sum().backward())
    assert isinstance(err, RuntimeError)
    assert any("No forward pass information available" in m for m in msgs)


class NormGrad(Function):
    """Identity whose backward is g * |x|, written in ops: with create_graph it makes nodes."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 1

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * (x * x).sqrt()


def test_double_backward_shows_both_traces(device):
    x = clgrad.tensor([0.0], requires_grad=True)

    def step():
        y = NormGrad.apply(x)
        g, = autograd.grad(y.sum(), x, create_graph=True)   # g * sqrt(0 * 0) = 0: fine
        g.sum().backward()                                  # inf * 0 in MulBackward0: nan

    err, msgs = _run(step)
    assert str(err) == "Function 'MulBackward0' returned nan values in its 0th output."
    trace = next(m for m in msgs if m.startswith("Error detected in MulBackward0"))
    # the node was made by NormGrad's backward: both stacks are shown
    assert "return g * (x * x).sqrt()" in trace
    assert "Previous calculation was induced by NormGradBackward" in trace
    assert "y = NormGrad.apply(x)" in trace
