"""optim.Muon: the Newton-Schulz orthogonalisation (singular values pulled towards 1) and the
optimizer's momentum, Nesterov, weight decay and learning-rate rules against numpy."""
import math

import numpy as np
import pytest

import clgrad
from clgrad.optim.muon import zeropower_via_newtonschulz


@pytest.mark.parametrize("shape", [(6, 10), (12, 5)])
def test_newton_schulz_pulls_singular_values_towards_one(device, shape):
    g = np.random.default_rng(0).normal(size=shape) * np.geomspace(0.2, 2, shape[1])
    X = zeropower_via_newtonschulz(clgrad.tensor(g, dtype=clgrad.float32, device=device))
    assert X.dtype is clgrad.bfloat16 and tuple(X.shape) == shape
    s = np.linalg.svd(X.float().numpy(), compute_uv=False)
    # five quintic steps land every singular value (10x apart at the start) in the band
    # around 1 the iteration is designed for (about 0.5 to 1.5)
    assert s.min() > 0.5 and s.max() < 1.5, s
    # and keep the singular vectors: X is close to U V^T of G
    u, _, vt = np.linalg.svd(g, full_matrices=False)
    cos = (X.float().numpy() * (u @ vt)).sum() / np.linalg.norm(u @ vt) / np.linalg.norm(s)
    assert cos > 0.9


@pytest.mark.parametrize("nesterov,adjust", [(True, None), (False, "match_rms_adamw")])
def test_muon_steps_match_numpy(device, nesterov, adjust):
    rng = np.random.default_rng(1)
    w = rng.normal(size=(6, 3))
    p = clgrad.nn.Parameter(clgrad.tensor(w, dtype=clgrad.float32, device=device))
    opt = clgrad.optim.Muon([p], lr=0.05, weight_decay=0.1, momentum=0.9, nesterov=nesterov,
                            adjust_lr_fn=adjust)
    ref, buf = w.astype(np.float32), np.zeros((6, 3), np.float32)
    ratio = math.sqrt(max(1, 6 / 3)) if adjust is None else 0.2 * math.sqrt(6)
    for _ in range(3):
        g = rng.normal(size=(6, 3)).astype(np.float32)
        p.grad = clgrad.tensor(g, device=device)
        opt.step()
        buf = buf + (g - buf) * (1 - 0.9)
        upd = g + (buf - g) * 0.9 if nesterov else buf
        ortho = zeropower_via_newtonschulz(clgrad.tensor(upd, device=device)).float().numpy()
        ref = ref * (1 - 0.05 * 0.1) - 0.05 * ratio * ortho
        np.testing.assert_allclose(p.detach().numpy(), ref, rtol=1e-5, atol=1e-6)
    assert list(opt.state_dict()["state"][0]) == ["momentum_buffer"]


def test_muon_errors():
    with pytest.raises(ValueError, match="only supports 2D parameters"):
        clgrad.optim.Muon([clgrad.nn.Parameter(clgrad.zeros(3))])
    with pytest.raises(ValueError, match="not supported"):
        clgrad.optim.Muon([clgrad.nn.Parameter(clgrad.zeros(2, 2))], adjust_lr_fn="x")
    with pytest.raises(ValueError, match="less than 100"):
        zeropower_via_newtonschulz(clgrad.zeros(2, 2), ns_steps=100)
