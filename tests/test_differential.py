"""Differential test: random short op programs (tests/differential.py and its families beside
it: indexing, scatter/gather, sort, linalg, conv/pool, norms, losses, rnn cells, autocast) over
broadcasting, strided views, empty and size-1 dims and float32/float64/int64/bool, run in clgrad
and in a numpy reference that follows torch's rules (values, dtypes, which op and dtype
combinations raise what, in-place overlap); float64 programs also compare gradients with central
differences. A fixed, derandomized budget keeps CI reproducible (each example draws one family);
tools/fuzz.py runs long campaigns with the same generator."""
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import clgrad
import differential as D

# Known findings of issue 22 that CI's examples would meet, each kept away from by a switch of
# the generator (differential.SWITCHES) until its fix lands: take its name out then.
AVOID = ()
# Families whose clgrad disagreements are still open (findings of the wider campaign, each
# reproduced by `tools/fuzz.py --families NAME`): CI draws from the others until they are fixed.
OPEN_FAMILIES = {}
FAMILIES = [f for f in D.FAMILIES if f not in OPEN_FAMILIES]


@settings(max_examples=250, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), grad=st.booleans())
def test_programs_agree_with_reference(device, seed, grad):
    fams = FAMILIES
    if clgrad.empty(0).device.type != "cpu":
        # the autocast family's regions are torch.autocast("cpu"): they cast the tensors of the
        # CPU device only (another OpenCL CPU device is a "cl:N" one, a GPU has other lists)
        fams = [f for f in FAMILIES if f != "autocast"]
    prog = D.generate(np.random.default_rng(seed), grad=grad, avoid=AVOID, families=fams)
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


def test_family_tables_know_torchs_rules():
    """A few of the families' rules, each checked against torch with tools/fuzz.py --backend
    torch."""
    x = np.arange(6.0).reshape(2, 3)
    assert D.reference("getitem", [x], ((slice(None, None, -1),),)).exc is ValueError
    assert D.reference("getitem", [x], ((0, 0, 0),)).exc is IndexError       # too many first
    assert D.reference("getitem", [x], ((D.Lit(np.array([1, 0])), None),)).shape == (2, 1, 3)
    assert D.reference("getitem", [x], ((0, True),)).shape == (1, 3)
    b = np.array([True, False])
    assert D.reference("mse_loss", [b, b], ("mean",)).exc is NotImplementedError
    assert D.reference("l1_loss", [x, x.astype(bool)], ("sum",)).exc is RuntimeError
    assert D.reference("huber_loss", [x.astype(np.float32), x], ("sum", 1.0)).dtype == \
        np.float32
    i = np.ones((1, 2, 4), dtype=np.int64)
    assert D.reference("max_pool1d", [i], (2, None, 0, 1, False)).exc is NotImplementedError
    assert D.reference("avg_pool1d", [i], (2, None, 0, False, True)).dtype == np.int64
    assert D.reference("inv", [np.zeros((2, 2))], ()).exc.__name__ == "LinAlgError"
    assert isinstance(D.bf16(np.float32(1.00390625)), D.Bf16)
    assert float(D.bf16(np.float32(1.00390625))) == 1.0              # ties to even
