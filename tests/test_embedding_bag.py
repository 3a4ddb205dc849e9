"""EmbeddingBag against numpy: the three modes, offsets (with include_last_offset and empty
bags), 2-D input, padding_idx, per_sample_weights, and gradients."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.autograd import gradcheck


def test_modes_match_numpy(device):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((10, 3))
    ids = np.array([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = [0, 3, 3, 5]                       # the second bag is empty
    bags = [ids[a:b] for a, b in zip(offsets, offsets[1:] + [len(ids)])]
    for mode, fn in (("sum", np.sum), ("mean", np.mean), ("max", np.max)):
        got = F.embedding_bag(clgrad.tensor(ids), clgrad.tensor(w), clgrad.tensor(offsets),
                              mode=mode).numpy()
        want = np.stack([fn(w[b], 0) if len(b) else np.zeros(3) for b in bags])
        np.testing.assert_allclose(got, want, rtol=1e-12)
    got = F.embedding_bag(clgrad.tensor(ids), clgrad.tensor(w), clgrad.tensor([0, 3, 8]),
                          mode="sum", include_last_offset=True).numpy()
    np.testing.assert_allclose(got, [w[ids[:3]].sum(0), w[ids[3:]].sum(0)], rtol=1e-12)
    two_d = np.array([[1, 2, 0], [4, 0, 0]])
    got = nn.EmbeddingBag(10, 3, padding_idx=0, _weight=clgrad.tensor(w))(
        clgrad.tensor(two_d)).detach().numpy()
    np.testing.assert_allclose(got, [w[[1, 2]].mean(0), w[4]], rtol=1e-12)
    psw = rng.standard_normal(8)
    got = F.embedding_bag(clgrad.tensor(ids), clgrad.tensor(w), clgrad.tensor([0, 4]),
                          mode="sum", per_sample_weights=clgrad.tensor(psw)).numpy()
    np.testing.assert_allclose(got, [(w[ids[:4]] * psw[:4, None]).sum(0),
                                     (w[ids[4:]] * psw[4:, None]).sum(0)], rtol=1e-12)


def test_gradients_and_errors(device):
    w = clgrad.randn(6, 2, dtype=clgrad.float64, requires_grad=True)
    ids, off = clgrad.tensor([0, 2, 2, 5, 1]), clgrad.tensor([0, 2])
    for mode in ("sum", "mean", "max"):
        assert gradcheck(lambda w: F.embedding_bag(ids, w, off, mode=mode), (w,))
    with pytest.raises(ValueError, match="offsets has to be None"):
        F.embedding_bag(clgrad.tensor([[1, 2]]), w, off)
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(ids, w, off, per_sample_weights=clgrad.ones(5, dtype=clgrad.float64))
