"""Sparse COO tensors (dense-backed) with torch's API: construction, coalescing, to_sparse,
products, clgrad.sparse's sum / softmax, gradients to the values (gradcheck in float64), torch's
errors, and a GCN program written against torch."""
import copy

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck

F64 = clgrad.float64


def scatter(idx, vals, size):
    """numpy's reference: values added at their coordinates."""
    out = np.zeros(size, vals.dtype)
    np.add.at(out, tuple(idx), vals)
    return out


def test_construction_matches_numpy(device):
    rng = np.random.default_rng(0)
    idx = np.stack([rng.integers(0, 4, 9), rng.integers(0, 5, 9)])      # duplicates likely
    for dt in (clgrad.float32, F64, clgrad.int64):
        vals = rng.normal(size=9).astype(dt.np) if dt is not clgrad.int64 else \
            rng.integers(-5, 5, 9)
        s = clgrad.sparse_coo_tensor(clgrad.tensor(idx), clgrad.tensor(vals), (4, 5))
        assert s.is_sparse and s.layout == clgrad.sparse_coo and s.dtype is dt
        assert s.shape == (4, 5) and s._nnz() == 9 and not s.is_coalesced()
        assert (s.sparse_dim(), s.dense_dim()) == (2, 0)
        np.testing.assert_allclose(s.to_dense().numpy(), scatter(idx, vals, (4, 5)))
        assert s.to_dense().layout == clgrad.strided and not s.to_dense().is_sparse
        np.testing.assert_array_equal(s._indices().numpy(), idx)
        np.testing.assert_array_equal(s._values().numpy(), vals)
    # size inferred from the indices; lists; dtype=; hybrid (values with a dense dim)
    s = clgrad.sparse_coo_tensor([[0, 2]], [[1, 2], [3, 4]], dtype=F64)
    assert s.shape == (3, 2) and s.dtype is F64 and (s.sparse_dim(), s.dense_dim()) == (1, 1)
    np.testing.assert_array_equal(s.to_dense().numpy(), [[1, 2], [0, 0], [3, 4]])
    # no entries; one entry is coalesced, as torch's
    e = clgrad.sparse_coo_tensor(clgrad.zeros(2, 0, dtype=clgrad.int64), clgrad.zeros(0), (2, 3))
    assert e._nnz() == 0 and e.to_dense().tolist() == [[0.0] * 3] * 2 and e.is_coalesced()
    assert clgrad.sparse_coo_tensor([[1]], [5.0], (2,)).is_coalesced()
    assert clgrad.sparse_coo_tensor([[1, 0]], [5.0, 1.0], is_coalesced=True).is_coalesced()


def test_construction_errors():
    with pytest.raises(RuntimeError, match="for dim 1, size is 2 but found index 2"):
        clgrad.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0], (2, 2))
    with pytest.raises(RuntimeError, match="negative index"):
        clgrad.sparse_coo_tensor([[0, -1]], [1.0, 2.0], (2,))
    with pytest.raises(RuntimeError, match="same nnz"):
        clgrad.sparse_coo_tensor([[0, 1]], [1.0, 2.0, 3.0], (2,))
    with pytest.raises(RuntimeError, match="sparse_dim x nnz"):
        clgrad.sparse_coo_tensor(clgrad.zeros(2, 2, 2, dtype=clgrad.int64), [1.0, 2.0])
    with pytest.raises(RuntimeError, match="int64"):
        clgrad.sparse_coo_tensor(clgrad.zeros(1, 2), [1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"sparse_dim \(1\) \+ dense_dim \(0\)"):
        clgrad.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (2, 2))
    x = clgrad.ones(2)
    assert (x.sparse_dim(), x.dense_dim(), x.layout, x.is_sparse) == (0, 1, clgrad.strided, False)
    for name in ("indices", "values", "coalesce", "is_coalesced", "_nnz"):
        with pytest.raises(RuntimeError, match="expected sparse coordinate tensor layout"):
            getattr(x, name)()


def test_coalesce_and_accessors(device):
    idx = np.array([[1, 0, 1, 1], [2, 1, 2, 0]])
    vals = np.array([1.0, 2.0, 3.0, 4.0])
    s = clgrad.sparse_coo_tensor(idx, clgrad.tensor(vals), (2, 3))
    with pytest.raises(RuntimeError, match="uncoalesced tensor, please call .coalesce"):
        s.indices()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.values()
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c and c._nnz() == 3
    assert c.indices().tolist() == [[0, 1, 1], [1, 0, 2]]
    assert c.values().tolist() == [2.0, 4.0, 4.0]
    assert c.indices().dtype is clgrad.int64
    np.testing.assert_array_equal(c.to_dense().numpy(), s.to_dense().numpy())
    assert "nnz=3, layout=clgrad.sparse_coo" in repr(c) and "indices=tensor([[0, 1, 1]," in repr(c)


def test_to_sparse(device):
    a = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]])
    x = clgrad.tensor(a.T.copy()).t()                          # non-contiguous input
    assert not x.is_contiguous()
    s = x.to_sparse()
    assert s.is_coalesced() and s.indices().tolist() == [[0, 1, 1], [1, 0, 2]]
    assert s.values().tolist() == [1.5, 2.0, -3.0]
    np.testing.assert_array_equal(s.to_dense().numpy(), a)
    h = x.to_sparse(1)                                        # rows sparse, columns dense
    assert (h.sparse_dim(), h.dense_dim()) == (1, 1) and h.values().shape == (2, 3)
    np.testing.assert_array_equal(h.to_dense().numpy(), a)
    assert s.to_sparse() is s and x.to_sparse_coo().is_sparse
    z = clgrad.tensor(3.0).to_sparse()                        # 0-d
    assert z.shape == () and z.to_dense().item() == 3.0 and z._nnz() == 1
    assert clgrad.zeros(2, 2).to_sparse()._nnz() == 0
    # gradient to the input: at its nonzero elements only, as torch's
    w = clgrad.tensor(a, requires_grad=True)
    (w.to_sparse().to_dense() * clgrad.tensor([[5.0, 6.0, 7.0], [8.0, 9.0, 10.0]])).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[0, 6, 0], [8, 0, 10]])


def test_products_match_numpy(device):
    rng = np.random.default_rng(1)
    idx = np.stack([rng.integers(0, 5, 12), rng.integers(0, 4, 12)])
    vals = rng.normal(size=12)
    A = scatter(idx, vals, (5, 4))
    B = rng.normal(size=(4, 3))
    s = clgrad.sparse_coo_tensor(idx, clgrad.tensor(vals), (5, 4))
    b = clgrad.tensor(B)
    for out in (clgrad.sparse.mm(s, b), clgrad.mm(s, b), s @ b, clgrad.spmm(s, b),
                clgrad.matmul(s, b)):
        assert not out.is_sparse
        np.testing.assert_allclose(out.numpy(), A @ B, rtol=1e-12)
    np.testing.assert_allclose((clgrad.tensor(A.T) @ s).numpy(), A.T @ A, rtol=1e-12)
    ss = clgrad.sparse.mm(s, s.t())                               # sparse @ sparse: sparse
    assert ss.is_sparse
    np.testing.assert_allclose(ss.to_dense().numpy(), A @ A.T, rtol=1e-12)
    m = clgrad.ones(5, 3, dtype=F64)
    np.testing.assert_allclose(clgrad.sparse.addmm(m, s, b, beta=0.5, alpha=2.0).numpy(),
                               0.5 + 2 * A @ B, rtol=1e-12)


def test_ops_that_stay_sparse(device):
    idx = np.array([[0, 1, 1], [2, 0, 2]])
    s = clgrad.sparse_coo_tensor(idx, clgrad.tensor([1.0, 2.0, 3.0]), (2, 3))
    A = s.to_dense().numpy()
    t = s.t()
    assert t.is_sparse and t.shape == (3, 2) and t._indices().tolist() == [[2, 0, 2], [0, 1, 1]]
    np.testing.assert_array_equal(t.to_dense().numpy(), A.T)
    for r, ref in ((s * 2, A * 2), (2 * s, A * 2), (s / 4, A / 4), (-s, -A), (s + s, 2 * A),
                   (s - s.coalesce(), 0 * A), (s * clgrad.tensor(3.0), 3 * A)):
        assert r.is_sparse
        np.testing.assert_allclose(r.to_dense().numpy(), ref)
    assert (s.coalesce() + s.coalesce()).is_coalesced() and not (s * 2).is_coalesced()
    dense = s + clgrad.ones(2, 3)                                  # sparse + dense: dense
    assert not dense.is_sparse and dense.tolist() == (A + 1).tolist()
    assert not (s * clgrad.ones(2, 3)).is_sparse                   # elementwise with dense
    d = s.double()
    assert d.is_sparse and d.dtype is F64 and d._nnz() == 3
    assert s.detach().is_sparse and s.clone()._values().tolist() == [1.0, 2.0, 3.0]
    c = copy.deepcopy(s)
    assert c.is_sparse and c.to_dense().tolist() == A.tolist()
    c = s.coalesce()
    c.mul_(2)                              # in place on the dense tensor: the values follow
    assert c.values().tolist() == [2.0, 4.0, 6.0] and c.is_sparse


def test_sum_and_softmax_match_numpy(device):
    idx = np.array([[0, 1, 1, 0], [2, 0, 2, 2]])
    s = clgrad.sparse_coo_tensor(idx, clgrad.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64), (3, 3))
    A = s.to_dense().numpy()
    assert clgrad.sparse.sum(s).item() == 10.0 and s.sum().item() == 10.0
    r = clgrad.sparse.sum(s, 1)
    assert r.is_sparse and r.indices().tolist() == [[0, 1]]
    np.testing.assert_allclose(r.to_dense().numpy(), A.sum(1))
    assert s.sum(0).to_dense().tolist() == A.sum(0).tolist()
    both = clgrad.sparse.sum(s, (0, 1))
    assert not both.is_sparse and both.item() == 10.0
    sm = clgrad.sparse.softmax(s, 1)
    assert sm.is_sparse and sm.indices().tolist() == [[0, 1, 1], [2, 0, 2]]
    ref = np.array([1.0, np.exp(2) / (np.exp(2) + np.exp(3)), np.exp(3) / (np.exp(2) + np.exp(3))])
    np.testing.assert_allclose(sm.values().numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(clgrad.sparse.log_softmax(s, 1).values().numpy(), np.log(ref),
                               rtol=1e-12)
    with pytest.raises(RuntimeError, match="expected a sparse tensor"):
        clgrad.sparse.sum(clgrad.ones(2))


def test_gradients_reach_the_values(device):
    idx = clgrad.tensor([[0, 1, 1, 2, 0], [1, 0, 2, 2, 1]])     # (0, 1) twice
    v = clgrad.tensor(np.linspace(0.5, 2.5, 5), dtype=F64, requires_grad=True)
    x = clgrad.tensor(np.random.default_rng(2).normal(size=(3, 2)), dtype=F64, requires_grad=True)

    def build(v):
        return clgrad.sparse_coo_tensor(idx, v, (3, 3))
    assert gradcheck(lambda v, x: clgrad.sparse.mm(build(v), x), (v, x))
    assert gradcheck(lambda v: build(v).to_dense(), (v,))
    assert gradcheck(lambda v: build(v).coalesce().values(), (v,))
    assert gradcheck(lambda v: (build(v).t() * 3.0) @ x, (v,))
    assert gradcheck(lambda v: clgrad.sparse.sum(build(v), 0).to_dense(), (v,))
    assert gradcheck(lambda v: clgrad.sparse.softmax(build(v), 1).values(), (v,))
    assert gradcheck(lambda v: (build(v) + build(v * 2)).to_dense(), (v,))
    # a sparse leaf: its gradient is dense, and its values read from it
    leaf = clgrad.sparse_coo_tensor(idx, v.detach(), (3, 3), requires_grad=True)
    assert leaf.is_leaf and leaf.requires_grad and leaf.is_coalesced()
    (leaf @ x).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), np.broadcast_to(x.detach().numpy().sum(1),
                                                                  (3, 3)))
    assert leaf._values().grad_fn is not None
    assert gradcheck(lambda x: clgrad.sparse.mm(leaf.detach(), x), (x,))


def test_gcn_program_trains(device):
    # A GCN written against torch (Kipf & Welling's propagation rule), with import clgrad as torch
    import clgrad as torch
    import clgrad.nn as nn
    import clgrad.nn.functional as F

    torch.manual_seed(0)
    N, E = 12, 30
    gen = np.random.default_rng(3)
    src, dst = gen.integers(0, N, E), gen.integers(0, N, E)
    edge_index = torch.tensor(np.stack([np.r_[src, dst], np.r_[dst, src]]))
    x = torch.randn(N, 8)
    y = torch.tensor(gen.integers(0, 3, N))

    def normalized_adjacency(edge_index, n):
        loops = torch.arange(n).unsqueeze(0).repeat(2, 1)
        ei = torch.cat([edge_index, loops], dim=1)
        adj = torch.sparse_coo_tensor(ei, torch.ones(ei.size(1)), (n, n)).coalesce()
        deg = torch.sparse.sum(adj, dim=1).to_dense()
        d = deg.pow(-0.5)
        i = adj.indices()
        return torch.sparse_coo_tensor(i, d[i[0]] * adj.values() * d[i[1]], (n, n))

    class GCN(nn.Module):
        def __init__(self, nin, nhid, nout):
            super().__init__()
            self.W1 = nn.Parameter(torch.randn(nin, nhid) * 0.3)
            self.W2 = nn.Parameter(torch.randn(nhid, nout) * 0.3)

        def forward(self, x, adj):
            h = F.relu(torch.sparse.mm(adj, x @ self.W1))
            return torch.sparse.mm(adj, h @ self.W2)

    adj = normalized_adjacency(edge_index, N)
    assert adj.is_sparse and adj.shape == (N, N)
    model = GCN(8, 16, 3)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = F.cross_entropy(model(x, adj), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses


def test_smm_hspmm_dsmm_sparse_mask(device):
    s = clgrad.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 0.0], (3, 2))
    b = clgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    ref = s.to_dense().numpy() @ b.numpy()
    h = clgrad.hspmm(s, b)                    # as torch: rows 0 and 1 (row 1 is all zeros)
    assert h.is_sparse and (h.sparse_dim(), h.dense_dim()) == (1, 1)
    assert h.indices().tolist() == [[0, 1]] and h.values().tolist() == ref[:2].tolist()
    m = clgrad.smm(s, b)
    assert m.indices().tolist() == [[0, 0, 1, 1], [0, 1, 0, 1]] and m._nnz() == 4
    np.testing.assert_array_equal(m.to_dense().numpy(), ref)
    assert s.smm(b)._nnz() == 4 and clgrad.dsmm(s, b).tolist() == ref.tolist()
    k = clgrad.arange(6.0).reshape(3, 2).sparse_mask(s)
    assert k.indices().tolist() == [[0, 1], [1, 0]] and k.values().tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="incompatible sizes"):
        clgrad.ones(2, 2).sparse_mask(s)
    assert clgrad.sparse.as_sparse_gradcheck(gradcheck) is gradcheck
