"""What a recording folds into the launch before it (clgrad/kernels/epilogue.py): a relu, or a
relu's gradient, into the GEMM or convolution whose result it reads (the product stores the
relu, bit for bit what the two launches store, inf and NaN included, on both code paths of every
device; where the product's result is read again, or the dtype is a half type, the relu stays a
launch of its own), and the copy back of an in-place op that autograd ran out of place."""
import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.ops.elementwise import threshold_backward
from clgrad.runtime.recording import Recording
from helpers import classifier_step


def _dtypes(device):
    return [clgrad.float32] + ([clgrad.float64] if device.has_fp64 else [])


def _names(rec):
    return [k.function_name for _, k, *_ in rec.kernels]


def _bits(t):
    a = t.numpy()
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _input(rng, shape, dt):
    x = rng.standard_normal(shape)
    flat = x.reshape(-1)
    flat[0], flat[flat.size // 2], flat[-1] = np.inf, -np.inf, np.nan    # inf and NaN results
    return clgrad.tensor(x, dtype=dt)


def _layer(kind, dt):
    clgrad.manual_seed(3)
    layer = {"linear": lambda: nn.Linear(37, 20),               # 20 columns: a vector and a tail
             "conv": lambda: nn.Conv2d(3, 8, 3, padding=1),
             "conv_transpose": lambda: nn.ConvTranspose2d(3, 8, 3, padding=1)}[kind]()
    return layer.to(dt)


SHAPES = {"linear": (9, 37), "conv": (2, 3, 7, 9), "conv_transpose": (2, 3, 5, 6)}


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_relu_folds_into_the_product_bit_for_bit(code_paths, device, kind):
    rng = np.random.default_rng(0)
    for dt in _dtypes(device):
        layer = _layer(kind, dt)
        x = _input(rng, SHAPES[kind], dt)
        with clgrad.no_grad():
            with Recording() as rec:
                y = F.relu(layer(x))
            assert "relu_c_t" not in _names(rec), (kind, dt, _names(rec))
            np.testing.assert_array_equal(_bits(y), _bits(F.relu(layer(x))))
            # a replay with other values in the recorded input
            x.copy_(_input(rng, SHAPES[kind], dt))
            rec.replay()
            np.testing.assert_array_equal(_bits(y), _bits(F.relu(layer(x))))
            assert np.isnan(y.numpy()).any() and np.isinf(y.numpy()).any()


def test_small_and_batched_products_and_relu_in_place(code_paths, device):
    rng = np.random.default_rng(1)
    a = clgrad.tensor(rng.standard_normal((3, 5, 7)), dtype=clgrad.float32)
    b = clgrad.tensor(rng.standard_normal((3, 7, 33)), dtype=clgrad.float32)
    s = clgrad.tensor(rng.standard_normal((2, 3)), dtype=clgrad.float32)
    t = clgrad.tensor(rng.standard_normal((3, 4)), dtype=clgrad.float32)
    with Recording() as rec:
        batched = clgrad.bmm(a, b).relu()
        small = (s @ t).relu()                   # 24 multiply-adds: gemm_small
        inplace = F.relu(clgrad.bmm(a, b) * 1.0, inplace=True)    # the relu of a table op
        direct = clgrad.bmm(a, b)
        direct.relu_()                           # in place on the product's own result
    names = _names(rec)
    assert names.count("relu_c_t") == 0 and names.count("relu__c_t") <= 1, names
    np.testing.assert_array_equal(batched.numpy(), np.maximum(clgrad.bmm(a, b).numpy(), 0))
    np.testing.assert_array_equal(small.numpy(), np.maximum((s @ t).numpy(), 0))
    np.testing.assert_array_equal(inplace.numpy(), batched.numpy())
    np.testing.assert_array_equal(direct.numpy(), batched.numpy())


def test_a_result_read_again_keeps_its_relu(device):
    """y is read after its relu (and held at the end): the product must store y itself."""
    lin = _layer("linear", clgrad.float32)
    x = clgrad.randn(9, 37)
    with clgrad.no_grad(), Recording() as rec:
        y = lin(x)
        z = y.relu()
        w = y.sum(0)                    # (not elementwise: the relu does not join a chain)
    assert "relu_c_t" in _names(rec)
    x.copy_(clgrad.randn(9, 37))
    rec.replay()
    with clgrad.no_grad():
        ref = lin(x)
    np.testing.assert_array_equal(y.numpy(), ref.numpy())
    np.testing.assert_array_equal(z.numpy(), ref.relu().numpy())
    np.testing.assert_array_equal(w.numpy(), ref.sum(0).numpy())


def test_half_types_keep_their_relu(device):
    lin = _layer("linear", clgrad.bfloat16)
    x = clgrad.randn(9, 37).to(clgrad.bfloat16)
    with clgrad.no_grad(), Recording() as rec:
        y = lin(x).relu()
    assert any(n.startswith("relu") for n in _names(rec))
    with clgrad.no_grad():
        np.testing.assert_array_equal(y.float().numpy(), lin(x).relu().float().numpy())


def test_compiled_convolutional_training_matches_eager_bit_for_bit(device):
    """The pre-activations' buffers are freed after their relu and written again by backward's
    tensors: folded relus, replays and eager agree over several steps."""
    names = _trained_alike(lambda: nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(),
        nn.Flatten(), nn.Linear(512, 16), nn.ReLU(), nn.Linear(16, 5)), seed=2)
    assert not [n for n in names if n.startswith("relu")]
    # the second convolution's input gradient stores the first relu's gradient itself
    assert names.count("threshold_backward_c_tt") < 3, names


@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_relu_gradient_folds_into_the_product_bit_for_bit(code_paths, device, kind):
    """threshold_backward(product, m) (a relu's gradient, m its output): the product stores
    m > 0 ? v : 0 itself, inf and NaN in both v and m included, also when replayed."""
    rng = np.random.default_rng(5)
    for dt in _dtypes(device):
        layer = _layer(kind, dt)
        x = _input(rng, SHAPES[kind], dt)
        with clgrad.no_grad():
            m = _input(rng, tuple(layer(x).shape), dt)
            with Recording() as rec:
                y = threshold_backward(layer(x), m)
            assert "threshold_backward_c_tt" not in _names(rec), (kind, dt, _names(rec))
            np.testing.assert_array_equal(_bits(y), _bits(threshold_backward(layer(x), m)))
            x.copy_(_input(rng, SHAPES[kind], dt))
            m.copy_(_input(rng, tuple(m.shape), dt))
            rec.replay()
            np.testing.assert_array_equal(_bits(y), _bits(threshold_backward(layer(x), m)))
            assert np.isnan(y.numpy()).any() and (y.numpy() == 0).any()


def test_a_relu_gradient_whose_operands_change_in_between_stays(device):
    """The relu's output m changes after the product and so does the product's input: folded
    at either launch, one of the two would read the wrong values, so both launches stay."""
    lin = _layer("linear", clgrad.float32)
    x, m = clgrad.randn(9, 37), clgrad.randn(9, 20)
    with clgrad.no_grad():
        def f():
            p = lin(x)
            x[0] = 1.0                  # fills, not elementwise ops that would join a chain
            m[0] = -1.0
            return threshold_backward(p, m)
        with Recording() as rec:
            y = f()
        assert "threshold_backward_c_tt" in _names(rec)
        x.copy_(clgrad.randn(9, 37))
        x0 = x.clone()
        rec.replay()
        m[0] = -1.0
        ref = threshold_backward(lin(x0), m)
    np.testing.assert_array_equal(y.numpy(), ref.numpy())


def test_a_relu_gradient_read_after_its_mask_changed_moves_the_product(device):
    """m changes between the product and the relu's gradient, the product's inputs do not:
    the product runs where the relu's gradient ran, reading m as it was then."""
    lin = _layer("linear", clgrad.float32)
    x, m = clgrad.randn(9, 37), clgrad.randn(9, 20)
    with clgrad.no_grad():
        def f():
            p = lin(x)
            m[0] = -1.0
            return threshold_backward(p, m)
        with Recording() as rec:
            y = f()
        assert "threshold_backward_c_tt" not in _names(rec)
        m.copy_(clgrad.randn(9, 20))
        rec.replay()
        m[0] = -1.0
        ref = threshold_backward(lin(x), m)
    np.testing.assert_array_equal(y.numpy(), ref.numpy())


def test_compiled_mlp_training_folds_its_relu_gradient(device):
    """The first layer's weight gradient reads the relu's output before the relu's gradient
    does (a read, not a write): the gradient still folds, and training agrees bit for bit."""
    names = _trained_alike(lambda: nn.Sequential(
        nn.Flatten(), nn.Linear(192, 64), nn.ReLU(), nn.Linear(64, 5)), seed=1)
    assert not [n for n in names if n.startswith(("relu", "threshold"))], names


def _trained_alike(make_model, seed):
    """Four SGD steps of make_model() on 4 x 3 x 8 x 8 batches, eager and compiled: losses and
    parameters must agree bit for bit. Returns the compiled step's recorded kernel names."""
    rng = np.random.default_rng(seed)
    data = [(clgrad.tensor(rng.standard_normal((4, 3, 8, 8)).astype(np.float32)),
             clgrad.tensor(rng.integers(0, 5, 4))) for _ in range(4)]
    results = []
    for compiled in (False, True):
        clgrad.manual_seed(0)
        model = make_model()
        opt = clgrad.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        step = classifier_step(model, opt)
        run = clgrad.compile(step) if compiled else step
        losses = [run(x, y).item() for x, y in data]
        results.append((losses, [p.detach().numpy() for p in model.parameters()]))
    assert results[0][0] == results[1][0]
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(a, b)
    return _names(next(iter(run._variants.values())).rec)


def _copies(rec):
    return [n for n in _names(rec) if n.startswith("copy_c")]


@pytest.mark.parametrize("square", [False, True])
def test_in_place_ops_under_autograd_lose_their_copy_back(code_paths, device, square):
    """Autograd runs y.add_(w) out of place and copies the result back into y: recorded, the op
    writes y itself. y.mul_(y) keeps its copy: autograd saves clones of y's old value, read
    between the op and its copy back."""
    rng = np.random.default_rng(4)
    for dt in _dtypes(device):
        x = clgrad.tensor(rng.standard_normal(1000), dtype=dt, requires_grad=True)
        w = clgrad.tensor(rng.standard_normal(1000), dtype=dt)

        def f():
            y = x * 2
            y.add_(w)
            y.relu_()
            y.mul_(y if square else 1.5)
            return y, y.sum()
        with Recording() as rec:
            y, total = f()
        assert (_copies(rec) == []) != square, _names(rec)
        x.data.copy_(clgrad.tensor(rng.standard_normal(1000), dtype=dt))
        rec.replay()
        ref, ref_total = f()
        np.testing.assert_array_equal(y.detach().numpy(), ref.detach().numpy())
        np.testing.assert_array_equal(total.detach().numpy(), ref_total.detach().numpy())


def test_a_copy_whose_source_is_read_again_stays(device):
    """t = x * 2 is read after its copy into y: the copy stays (t is what is read)."""
    x, y = clgrad.randn(64), clgrad.zeros(64)
    with Recording() as rec:
        t = x * 2
        y.copy_(t)
        s = t.sum()
    assert len(_copies(rec)) == 1
    x.copy_(clgrad.randn(64))
    rec.replay()
    np.testing.assert_array_equal(y.numpy(), (x * 2).numpy())
    np.testing.assert_array_equal(s.numpy(), (x * 2).sum().numpy())


def test_compiled_residual_network_with_in_place_ops_matches_eager(device):
    """ReLU(inplace=True) after each convolution and a residual `out += x`: the in-place ops'
    copies and the relus fold away, and training agrees with eager bit for bit."""
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(6, 6, 3, padding=1), nn.Conv2d(6, 6, 3, padding=1)
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            out = self.c2(self.act(self.c1(x)))
            out += x
            return self.act(out)
    names = _trained_alike(lambda: nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(inplace=True), Block(), nn.Flatten(),
        nn.Linear(384, 5)), seed=5)
    assert not [n for n in names if n.startswith("relu")], names
    assert not [n for n in names if n.startswith("copy_c")], names


# ---- copies of copies (fold_copy_chains) ------------------------------------------------------
def _all_copies(rec):
    return [n for n in _names(rec) if n.startswith("copy")]


def _heads_joined(x, u):
    """x [B, H, T, D] -> [B, T, H * D] (a copy: the transpose does not reshape as a view), then
    joined to u along the last dim (a copy into a slice): the first copy's result is dropped."""
    B, H, T, D = x.shape
    return clgrad.cat([x.transpose(1, 2).reshape(B, T, H * D), u], dim=2)


@pytest.mark.parametrize("dt", [clgrad.float32, clgrad.int64, clgrad.bfloat16])
def test_a_copy_of_a_copy_is_one_copy(code_paths, device, dt):
    rng = np.random.default_rng(5)
    x = clgrad.tensor(rng.standard_normal((2, 3, 5, 4)) * 10, dtype=dt)
    u = clgrad.tensor(rng.standard_normal((2, 5, 7)) * 10, dtype=dt)
    with Recording() as rec:
        y = _heads_joined(x, u)
    assert len(_all_copies(rec)) == 2, _names(rec)       # x's, now straight into y; u's
    np.testing.assert_array_equal(y.float().numpy(), _heads_joined(x, u).float().numpy())
    x.copy_(clgrad.tensor(rng.standard_normal((2, 3, 5, 4)) * 10, dtype=dt))
    rec.replay()
    np.testing.assert_array_equal(y.float().numpy(), _heads_joined(x, u).float().numpy())


def test_a_copy_of_a_copy_stays_two_where_it_must(device):
    """The first copy's result read again, its source changed in between, and walks whose dims
    do not divide each other ([5, 6] and [3, 10]): two copies each time, same values."""
    rng = np.random.default_rng(6)
    x = clgrad.tensor(rng.standard_normal((2, 3, 5, 4)), dtype=clgrad.float32)
    u = clgrad.tensor(rng.standard_normal((2, 5, 7)), dtype=clgrad.float32)
    a = clgrad.tensor(rng.standard_normal((6, 5)), dtype=clgrad.float32)
    out = {}

    def read_again():
        t = x.transpose(1, 2).reshape(2, 5, 12)
        return clgrad.cat([t, u], dim=2), t.sum()

    def source_changed():
        t = x.transpose(1, 2).reshape(2, 5, 12)
        x.add_(1.0)
        return clgrad.cat([t, u], dim=2)

    def uneven():
        return clgrad.cat([a.t().reshape(3, 10), a.reshape(3, 10)], dim=1)
    for name, f in (("read", read_again), ("changed", source_changed), ("uneven", uneven)):
        x0 = x.clone()
        with Recording() as rec:
            out[name] = f()
        assert len(_all_copies(rec)) == 3, (name, _names(rec))
        x.copy_(x0)
        ref = f()
        x.copy_(x0)
        rec.replay()
        for got, want in zip(out[name] if isinstance(out[name], tuple) else [out[name]],
                             ref if isinstance(ref, tuple) else [ref]):
            np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.fixture
def deterministic():
    clgrad.use_deterministic_algorithms(True)
    yield
    clgrad.use_deterministic_algorithms(False)


def test_compiled_attention_training_matches_eager_bit_for_bit(device, monkeypatch, deterministic):
    """tools/train_gpt.py's model: the gradients of q, k and v are reshaped from their heads (a
    copy each), then joined by the split's backward (a copy into each third): compiled, one copy
    each (3 per layer fewer than with the pass off), and training agrees with eager bit for bit.
    Deterministic algorithms: on a GPU the embedding's backward would otherwise add atomically,
    in an order that varies between runs (an H200 gave three last bits apart, eager or not)."""
    import os
    import sys
    from clgrad.kernels import fused
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
    from train_gpt import gpt_class
    rng = np.random.default_rng(7)
    x = clgrad.tensor(rng.integers(0, 11, (2, 16)))
    y = clgrad.tensor(rng.integers(0, 11, (2, 16)))
    results, copies = [], {}
    for compiled, chains in ((False, True), (True, False), (True, True)):
        if not chains:
            monkeypatch.setattr(fused, "fold_copy_chains", lambda ops, frees: (ops, frees))
        clgrad.manual_seed(0)
        model = gpt_class(clgrad)(11, 16, d=16, layers=2, heads=2)
        opt = clgrad.optim.AdamW(model.parameters(), lr=1e-2)

        def step():
            opt.zero_grad()
            loss = F.cross_entropy(model(x).reshape(-1, 11), y.reshape(-1))
            loss.backward()
            opt.step()
            return loss
        run = clgrad.compile(step) if compiled else step
        results.append(([run().item() for _ in range(3)],
                        [p.detach().numpy() for p in model.parameters()]))
        if compiled:
            copies[chains] = len(_all_copies(next(iter(run._variants.values())).rec))
        monkeypatch.undo()
    for other in results[1:]:
        assert other[0] == results[0][0]
        for a, b in zip(other[1], results[0][1]):
            np.testing.assert_array_equal(a, b)
    assert copies[True] == copies[False] - 3 * 2, copies
