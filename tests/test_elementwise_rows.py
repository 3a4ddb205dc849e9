"""The elementwise table's rows kernels (<op>_r_<pattern>): results whose rows every operand
either walks (stride 1) or repeats one element along (stride 0): a sliced tensor, a broadcast
bias, a mean's gradient. Every entry and dtype, with a vector and a tail per row, against the
same entry on contiguous copies of the operands (the contiguous kernel), on both code paths."""
import numpy as np
import pytest

import clgrad
from clgrad import dtypes
from clgrad.ops.elementwise import TABLE, run
from clgrad.runtime import kernels
from helpers import all_dtypes, assert_close, random_array, to_np


def _launched(fn):
    names = []

    def hook(*a):
        names.append(a[1].function_name)
    kernels.launch_hooks.append(hook)
    try:
        out = fn()
    finally:
        kernels.launch_hooks.remove(hook)
    return out, names


def _operands(e, pat, dt, device, rng, L):
    """Operand 0 a (3, L) slice of a (3, 2L) tensor (rows with a gap between them), the others
    (3, 1) columns expanded along the rows (stride 0); scalars where the pattern has them."""
    ops = []
    for k, (kind, p) in enumerate(zip(e.operands, pat)):
        d = dt if kind == "T" else dtypes.bool_
        if p == "s":
            ops.append(True if d.kind == "b" else 2 if d.kind != "f" else 0.5)
        elif k == 0:
            a = random_array((3, 2 * L), d, rng)
            ops.append(clgrad.tensor(a, dtype=d, device=device)[:, :L])
        else:         # positive: no integer division by zero
            a = random_array((3, 1), d, rng, low=0.1)
            ops.append(clgrad.tensor(a, dtype=d, device=device).expand(3, L))
    return ops


@pytest.mark.parametrize("dt", [clgrad.float32, clgrad.float64, clgrad.float16, clgrad.bfloat16,
                                clgrad.int32, clgrad.int64, clgrad.int8, clgrad.uint8,
                                clgrad.bool])
def test_every_entry_by_rows(device, code_paths, dt):
    if dt not in all_dtypes(device):
        pytest.skip(f"{device.name} has no {dt}")
    rng = np.random.default_rng(7)
    L = 2 * clgrad.runtime.kernels.vec_width(device, dt) + 3        # two vectors and a tail
    ran_rows = 0
    for e in TABLE.values():
        if dt.kind not in e.exprs:
            continue
        params = [2 if dt.kind != "f" else 0.5] * e.nparams
        for pat in e.patterns:
            ops = _operands(e, pat, dt, device, rng, L)
            got, names = _launched(lambda: run(e, ops, params, cdt=dt))
            want = run(e, [o.contiguous() if isinstance(o, clgrad.Tensor) else o for o in ops],
                       params, cdt=dt)
            assert got.shape == want.shape == (3, L)
            assert_close(got, to_np(want), got.dtype)
            ran_rows += any(n == f"{e.name}_r_{pat}" for n in names)
    # every entry with vector code took the rows kernel (complex and scalar-loop ones walk)
    assert ran_rows > 0


def test_broadcast_bias_and_mean_gradient_take_rows(device):
    """The cases the rows kernels are for: x + bias over (N, C, H, W) and relu's backward of a
    mean's gradient; no strided walk."""
    x = clgrad.randn(4, 6, 5, 7, device=device, requires_grad=True)
    b = clgrad.randn(1, 6, 1, 1, device=device)
    with clgrad.no_grad():
        y, names = _launched(lambda: x + b)
    assert names == ["add_r_tt"]
    np.testing.assert_allclose(y.numpy(), x.detach().numpy() + b.numpy(), rtol=1e-6)
    _, names = _launched(lambda: x.relu().mean((2, 3)).sum().backward())
    assert not [n for n in names if "_s_" in n], names
    xn = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), (xn > 0) / 35.0, rtol=1e-6)
