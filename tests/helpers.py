"""Shared test utilities: dtypes per device, tensors in several layouts, comparisons with numpy."""
import numpy as np

import clgrad
from clgrad import dtypes

TOL = {  # (rtol, atol) for comparing against a float64 numpy reference
    clgrad.float64: (1e-10, 1e-12),
    clgrad.float32: (1e-5, 1e-6),
    clgrad.float16: (2e-3, 2e-3),
    clgrad.bfloat16: (1.6e-2, 1.6e-2),
}


def float_dtypes(device):
    out = [clgrad.float32, clgrad.float16, clgrad.bfloat16]
    if device.has_fp64:
        out.append(clgrad.float64)
    return out


def all_dtypes(device):
    return float_dtypes(device) + [clgrad.int32, clgrad.int64, clgrad.int16, clgrad.int8,
                                    clgrad.uint8, clgrad.bool]


def grad_dtype(device):
    """float64 where the device has it (gradcheck wants it), else float32."""
    return clgrad.float64 if device.has_fp64 else clgrad.float32


def grad_tols(device):
    """(eps, atol, rtol) for gradcheck in grad_dtype(device)."""
    if device.has_fp64:
        return dict(eps=1e-6, atol=1e-5, rtol=1e-3)
    return dict(eps=1e-2, atol=5e-2, rtol=5e-2)


def rounded(a, dt):
    """numpy values as they look after a round trip through dtype dt."""
    a = np.asarray(a)
    if dt is clgrad.bfloat16:
        return dtypes.bf16_bits_to_float(dtypes.float_to_bf16_bits(a.astype(np.float32)))
    if dt is clgrad.bool:
        return a.astype(bool)
    return a.astype(dt.np)


def random_array(shape, dt, rng, low=-3.0, high=3.0):
    if dt is clgrad.bool:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = 0 if dt is clgrad.uint8 else int(low * 10)
        return rng.integers(lo, int(high * 10) + 1, size=shape).astype(dt.np)
    return rounded(rng.uniform(low, high, size=shape), dt)


LAYOUTS = ("contiguous", "transposed", "strided")


def make(array, dt, device, layout="contiguous", requires_grad=False):
    """A tensor with array's values in the given memory layout: contiguous, transposed (a
    permuted view) or strided (a view that skips every other element of the last dim)."""
    array = np.asarray(array)
    host = rounded(array, dt)
    if layout == "contiguous" or array.ndim == 0:
        t = clgrad.tensor(host, dtype=dt, device=device)
    elif layout == "transposed":
        perm = tuple(reversed(range(array.ndim)))
        t = clgrad.tensor(np.ascontiguousarray(host.transpose(perm)), dtype=dt,
                          device=device).permute(*perm)
    elif layout == "strided":
        big = np.zeros(array.shape[:-1] + (array.shape[-1] * 2,), dtype=host.dtype)
        big[..., ::2] = host
        t = clgrad.tensor(big, dtype=dt, device=device)[..., ::2]
    else:
        raise ValueError(layout)
    if layout != "contiguous" and array.ndim and array.size > 1:
        assert not t.is_contiguous() or array.ndim == 1 and layout == "transposed"
    if requires_grad:
        t.requires_grad_(True)
    return t


def to_np(t):
    """A tensor's values as numpy (bfloat16 as float32)."""
    t = t.detach()
    if t.dtype is clgrad.bfloat16:
        t = t.float()
    return t.numpy()


def assert_close(actual, expected, dt=None, rtol=None, atol=None, equal_nan=True):
    dt = dt or actual.dtype
    a = to_np(actual) if isinstance(actual, clgrad.Tensor) else np.asarray(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != expected {e.shape}"
    if dt.kind in "iub":
        np.testing.assert_array_equal(a, e.astype(a.dtype))
        return
    r, t = TOL.get(dt, (1e-5, 1e-6))
    np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64),
                               rtol=rtol if rtol is not None else r,
                               atol=atol if atol is not None else t, equal_nan=equal_nan)


def run_python(code, env=None, timeout=600):
    """Run `code` (dedented) in a fresh interpreter that imports this checkout's clgrad, with
    `env` added to the environment; returns the CompletedProcess (text output captured)."""
    import os
    import subprocess
    import sys
    import textwrap
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    e = dict(os.environ)
    e["PYTHONPATH"] = root + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=e, timeout=timeout)


def run_on_two_ranks(script):
    """tests/<script> on 2 MPI ranks through clgrad's launcher; asserts that both ranks report
    "RANK k OK". Without mpi4py, asserts that clgrad says how to get it instead."""
    import importlib.util
    import os
    import subprocess
    import sys
    import pytest
    import clgrad.distributed as dist
    if importlib.util.find_spec("mpi4py") is None:
        assert not dist.is_available()
        with pytest.raises(RuntimeError, match=r"pip install clgrad\[mpi\]"):
            dist._mpi()
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("CLGRAD_TEST_DEVICES", None)
    r = subprocess.run([sys.executable, "-m", "clgrad.distributed.run", "--nproc-per-node", "2",
                        os.path.join(root, "tests", script)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "RANK 0 OK" in r.stdout and "RANK 1 OK" in r.stdout


def classifier_step(model, opt):
    """A training step of a classifier: zero_grad, cross_entropy, backward, optimizer step;
    returns the loss."""
    def step(x, y):
        opt.zero_grad()
        loss = clgrad.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step
