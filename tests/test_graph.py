"""clgrad.autograd.graph: nodes and gradient edges, saved tensors hooks (save_on_cpu with the
device memory it frees), multi-grad hooks, allow_mutation_on_saved_tensors, to_dot."""
import gc
import re

import pytest

import clgrad
from clgrad.autograd.graph import (GradientEdge, Node, allow_mutation_on_saved_tensors,
                                   disable_saved_tensors_hooks, get_gradient_edge,
                                   increment_version, register_multi_grad_hook, save_on_cpu,
                                   saved_tensors_hooks, to_dot)


def test_node_and_gradient_edges(device):
    x = clgrad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    y = (h * h).sum()
    assert isinstance(y.grad_fn, Node) and isinstance(h.grad_fn.next_functions[0][0], Node)
    leaf = get_gradient_edge(x)
    assert isinstance(leaf, GradientEdge) and leaf.node.name() == "AccumulateGrad"
    assert leaf.output_nr == 0 and leaf.node.variable is x
    mid = get_gradient_edge(h)
    assert mid.node is h.grad_fn and mid.output_nr == 0
    # an edge works as `inputs` like the tensor itself
    g_edge, g_leaf = clgrad.autograd.grad(y, (mid, leaf), retain_graph=True)
    assert g_edge.tolist() == [6.0, 12.0] and g_leaf.tolist() == [18.0, 36.0]
    z = clgrad.zeros(2, requires_grad=True)
    g, = clgrad.autograd.grad(y, get_gradient_edge(z), retain_graph=True,
                              materialize_grads=True)
    assert g.tolist() == [0.0, 0.0]
    y.backward(inputs=[leaf])
    assert x.grad.tolist() == [18.0, 36.0]
    with pytest.raises(RuntimeError, match="does not require gradients"):
        get_gradient_edge(clgrad.ones(2))


def test_increment_version(device):
    x = clgrad.ones(3, requires_grad=True)
    y = x.exp()
    increment_version(y)                   # as if a kernel had written y behind autograd's back
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    a, b = clgrad.ones(1), clgrad.ones(1)
    increment_version([a, b])
    assert a._version == b._version == 1


def test_saved_tensors_hooks(device):
    log = []

    def pack(tag):
        return lambda t: log.append(f"pack {tag}") or (tag, t.detach())

    def unpack(packed):
        log.append(f"unpack {packed[0]}")
        return packed[1]

    x = clgrad.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(pack("outer"), unpack):
        with saved_tensors_hooks(pack("inner"), unpack):    # the innermost pair wins
            y = x.exp()                                    # saves its output
        z = (y * x).sum()                                   # saves both inputs
    assert log == ["pack inner", "pack outer", "pack outer"]
    z.backward()
    assert sorted(log[3:]) == ["unpack inner", "unpack outer", "unpack outer"]
    e = x.detach().numpy()
    assert x.grad.numpy() == pytest.approx(2.718281828 ** e * (1 + e))
    # a saved output comes back with its history: higher-order gradients still work
    w = clgrad.tensor([0.5], requires_grad=True)
    with saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        g, = clgrad.autograd.grad(w.exp().sum(), w, create_graph=True)
    gg, = clgrad.autograd.grad(g.sum(), w)
    assert gg.item() == pytest.approx(2.718281828 ** 0.5)
    with saved_tensors_hooks(lambda t: t, lambda t: "not a tensor"):
        bad = x.exp().sum()
    with pytest.raises(TypeError, match="expected to be a Tensor"):
        bad.backward()


def test_disable_saved_tensors_hooks(device):
    with disable_saved_tensors_hooks("hooks are off here"):
        with pytest.raises(RuntimeError, match="hooks are off here"):
            with save_on_cpu():
                pass
        x = clgrad.ones(2, requires_grad=True)
        (x * x).sum().backward()           # saving itself is fine
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match="not while hooks are set"):
            with disable_saved_tensors_hooks("not while hooks are set"):
                pass
    with save_on_cpu():                    # enabled again afterwards
        pass


def test_save_on_cpu_frees_device_memory(device):
    n = 1 << 20                            # 4 MB per float32 tensor
    x = clgrad.rand(n, requires_grad=True)

    def graph_bytes(ctx):
        gc.collect()
        clgrad.cl.synchronize()
        before = clgrad.cl.memory_allocated()
        with ctx:
            loss = x.exp().exp().sum()     # each exp saves its 4 MB output
        clgrad.cl.synchronize()
        return loss, clgrad.cl.memory_allocated() - before

    class Nothing:
        def __enter__(self):
            pass

        def __exit__(self, *exc):
            pass

    loss_dev, on_device = graph_bytes(Nothing())
    loss_cpu, on_host = graph_bytes(save_on_cpu())
    assert on_device >= 2 * 4 * n
    assert on_host < 4 * n                 # the saved outputs live in host memory instead
    (g_dev,) = clgrad.autograd.grad(loss_dev, x)
    (g_cpu,) = clgrad.autograd.grad(loss_cpu, x)
    assert (g_dev - g_cpu).abs().max().item() == 0


def test_register_multi_grad_hook(device):
    a = clgrad.rand(2, 3, requires_grad=True)
    b = clgrad.rand(2, 3, requires_grad=True)
    c, d = a * b, a * b
    calls = []
    h = register_multi_grad_hook((a, b, c, d), lambda grads: calls.append(
        [g is not None for g in grads]))
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    assert calls == [[True, True, True, False], [True, False, True, False]]
    h.remove()
    c.sum().backward(retain_graph=True)
    assert len(calls) == 2
    first = []
    register_multi_grad_hook((a, b), lambda g: first.append(g.shape), mode="any")
    (a * b).sum().backward()
    assert first == [(2, 3)]                 # once per backward, with the first gradient
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        register_multi_grad_hook((a,), print, mode="some")


def test_allow_mutation_on_saved_tensors(device):
    with allow_mutation_on_saved_tensors() as ctx:
        a = clgrad.ones(2, 3, requires_grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        b.sin_()                            # b was saved: it is copied before it changes
        out.backward()
        assert a.grad.tolist() == [[2.0] * 3] * 2
        assert ctx.cloned                   # the copy that backward used
        with pytest.raises(RuntimeError, match="cannot be nested"):
            with allow_mutation_on_saved_tensors():
                pass
    assert not ctx.cloned and not ctx.original     # cleared on exit
    # without it, the same program fails as in torch
    a = clgrad.ones(2, 3, requires_grad=True)
    b = a.clone()
    out = (b ** 2).sum()
    b.sin_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()
    # a graph recorded inside may not run backward outside
    with allow_mutation_on_saved_tensors():
        out = (a.clone() ** 2).sum()
    with pytest.raises(AssertionError, match="outside of the 'allow_mutation_on_saved_tensors'"):
        out.backward()


def test_to_dot(device):
    w = clgrad.ones(2, 3, requires_grad=True)
    x = clgrad.ones(3)
    y = (w.exp() @ x).sum()
    dot = to_dot(y, params={"w": w})
    assert dot.startswith("digraph backward {") and dot.rstrip().endswith("}")
    nodes = dict(re.findall(r'^  (n\d+) \[label="([^"]*)"', dot, re.M))
    labels = sorted(nodes.values())
    assert "SumBackward0" in labels
    assert "ExpBackward0\\nsaved: (2, 3)" in labels           # saved its output
    assert any(lbl.startswith("MvBackward0") or lbl.startswith("MmBackward0") for lbl in labels)
    assert "w\\n(2, 3)" in labels                             # the leaf, named
    assert re.search(r'\[label="w\\n\(2, 3\)", fillcolor=lightblue\]', dot)
    edges = re.findall(r"^  (\w+) -> (\w+);$", dot, re.M)
    assert len(edges) == len(nodes)       # a chain: root -> sum -> mv -> exp -> leaf
    y.backward()
    assert "saved: freed" in to_dot(y)     # what backward released
    two = to_dot([w.sum(), (w * 2).sum()])
    assert "out0 ->" in two and "out1 ->" in two
    assert to_dot(clgrad.ones(2)).count("->") == 0            # no history: just the tensor
