"""Differential test: random short op programs (tests/differential.py) over broadcasting,
strided views (transpose, slices, expand), empty and size-1 dims and float32/float64/int64/bool,
run in clgrad and in a numpy reference that follows torch's rules (values, dtypes, which op and
dtype combinations raise what, in-place overlap); float64 programs also compare gradients with
central differences. A fixed, derandomized budget keeps CI reproducible; tools/fuzz.py runs long
campaigns with the same generator."""
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import clgrad
import differential as D


@settings(max_examples=250, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), grad=st.booleans())
def test_programs_agree_with_reference(device, seed, grad):
    prog = D.generate(np.random.default_rng(seed), grad=grad)
    try:
        D.check(clgrad, prog, device)
    except D.Mismatch as e:
        small = D.shrink(clgrad, prog, device, lambda p: _fails(p, device))
        raise AssertionError(f"{e}\nminimised reproducer:\n{small.source()}") from None


def _fails(prog, device):
    try:
        D.check(clgrad, prog, device)
    except D.Mismatch:
        return True
    return False


def test_reference_knows_torchs_rules():
    """The table itself: a few of torch's rules, so that a wrong reference cannot pass silently."""
    b = np.array([True, False])
    x = np.array([1.0, 2.0], dtype=np.float32)
    i = np.array([1, 2])
    assert isinstance(D.reference("sub", [b, x], ()), D.Raises)
    assert D.reference("gelu", [i], ()).exc is NotImplementedError
    assert D.reference("abs", [b], ()).exc is NotImplementedError
    assert D.reference("square", [b], ()).dtype == np.int64
    assert D.reference("add", [i, x], ()).dtype == np.float32
    assert D.reference("add", [x, np.array(1.0)], ()).dtype == np.float32
    assert D.reference("amax", [np.zeros((2, 0))], (1,)).exc is IndexError
    assert D.reference("amax", [np.zeros((2, 0))], (0,)).shape == (0,)
    assert D.reference("masked_fill", [b, b], (0.32,)).tolist() == [True, False]
    e = np.broadcast_to(np.zeros((1, 3)), (2, 3))
    assert D.reference("floor_", [e], ()).exc is RuntimeError
    a = np.arange(6.0)
    assert D.reference("add_", [a[1:4], a[0:3]], ()).exc is RuntimeError
    assert D.reference("add_", [a, a], ()).tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
