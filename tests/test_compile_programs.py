"""Random programs, compiled and eager: hypothesis writes short programs of elementwise ops
(scalar and broadcast operands, in-place ops), views (transposes, strided slices, cat), reductions,
products with and without a relu after them, softmax and dropout; each runs eagerly and through
clgrad.compile (warm-up, capture, replays, a replay on new input values) and every call's
outputs and gradients must agree. The fusion passes of a recording (elementwise chains, relu
epilogues, copies folded away) rewrite what these programs launch; eager runs none of them.
The suite runs the same 40 programs (and 20 steps) every time; CLGRAD_FUZZ_EXAMPLES=1000 runs
that many new ones."""
import os

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import clgrad
import clgrad.nn.functional as F

R, C = 6, 8                  # every value of a program broadcasts to (R, C)
EXAMPLES = int(os.environ.get("CLGRAD_FUZZ_EXAMPLES", 40))
FUZZ = dict(deadline=None, derandomize=not os.environ.get("CLGRAD_FUZZ_EXAMPLES"),
            suppress_health_check=[HealthCheck.function_scoped_fixture])

UNARY = {
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "sin": lambda x: x.sin(),
    "relu": lambda x: x.relu(),
    "abs": lambda x: x.abs(),
    "neg": lambda x: -x,
    "scale": lambda x: x * 1.5,
    "shift": lambda x: x + 0.25,
    "rsub": lambda x: 2.0 - x,
    "square": lambda x: x * x,
    "exp_tanh": lambda x: x.tanh().exp(),
    "clamp": lambda x: x.clamp(-0.5, 0.75),
    "transposed": lambda x: (x.expand(R, C).t() * 0.5).t(),
    "cat_halves": lambda x: clgrad.cat([x.expand(R, C)[:, ::2], x.expand(R, C)[:, 1::2]], 1),
    "row_sum": lambda x: x.expand(R, C).sum(1, keepdim=True),
    "col_mean": lambda x: x.expand(R, C).mean(0),
    "row_max": lambda x: x.expand(R, C).amax(1, keepdim=True),
    "softmax": lambda x: F.softmax(x.expand(R, C), -1),
    "log_softmax": lambda x: F.log_softmax(x.expand(R, C), -1),
    "dropout": lambda x: F.dropout(x, 0.3),
    "in_place": lambda x: (x + 0.0).mul_(0.5).add_(0.125),
    "in_place_relu": lambda x: (x - 0.1).relu_(),
    "in_place_slice": lambda x: _slice_scaled(x),
    "in_place_transposed": lambda x: (x.expand(R, C) * 1.0).t().add_(0.5).t(),
    "compare": lambda x: (x > 0.1).to(x.dtype) * x,
    "masked_fill": lambda x: x.masked_fill(x < -0.2, 0.3),
    "round_trip": lambda x: x.to(clgrad.float32).to(x.dtype) if x.dtype is clgrad.float64
    else x.to(clgrad.float64).sin().to(x.dtype),
    "gelu": lambda x: F.gelu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "layer_norm": lambda x: F.layer_norm(x.expand(R, C), (C,)),
    "var": lambda x: x.expand(R, C).var(1, keepdim=True),
    "norm": lambda x: x.norm(),
    "total": lambda x: x.sum(),
    "columns": lambda x: x.expand(R, C)[:, INDEX.to(x.device)],
    "gather": lambda x: x.expand(R, C).gather(1, GATHER.to(x.device)),
    "reshape": lambda x: x.expand(R, C).reshape(C, R).t() * 2.0,
}
INDEX = clgrad.tensor([7, 0, 3, 3, 1, 6, 2, 5])
GATHER = clgrad.tensor(np.random.default_rng(3).integers(0, C, (R, C)))


def _slice_scaled(x):
    z = x.expand(R, C) * 1.0
    z[:, 1:4].mul_(2.0)
    z[2:] = z[2:] - 0.5
    return z


BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "max": lambda x, y: clgrad.maximum(x, y),
    "where": lambda x, y: clgrad.where(x > y, x, y * 0.5),
    "add_in_place": lambda x, y: (x.expand(R, C) * 1.0).add_(y),
    "copy_in": lambda x, y: _copied(x, y),
    "stack_mean": lambda x, y: clgrad.stack([x.expand(R, C), y.expand(R, C)]).mean(0),
    "atan2": lambda x, y: clgrad.atan2(x, y + 2.0),
    "lerp": lambda x, y: clgrad.lerp(x.expand(R, C), y, 0.3),
}


def _copied(x, y):
    z = x.expand(R, C) * 1.0
    z[:, :3].copy_(y.expand(R, C)[:, 5:])
    return z
PRODUCT = {
    "linear": lambda x, w: x.expand(R, C) @ w,
    "linear_relu": lambda x, w: (x.expand(R, C) @ w).relu(),
    "linear_t_relu": lambda x, w: F.linear(x.expand(R, C), w).relu(),
}

step = st.one_of(
    st.tuples(st.just("u"), st.sampled_from(sorted(UNARY)), st.integers(0, 99)),
    st.tuples(st.just("b"), st.sampled_from(sorted(BINARY)), st.integers(0, 99),
              st.integers(0, 99)),
    st.tuples(st.just("p"), st.sampled_from(sorted(PRODUCT)), st.integers(0, 99)),
    st.tuples(st.just("i"), st.just("b"), st.integers(0, 99)))


def _program(steps):
    """The program of `steps`: (a, b, w) -> (its last three values, a loss over all of them)."""
    def run(a, b, w):
        env = [a, b, a[0], b.sum()]          # (R, C), (C,) or (R, 1), a row, a 0-d tensor
        for s in steps:
            x = env[s[2] % len(env)]
            if s[0] == "i":                   # an argument changed in place
                env.append(b.mul_(0.5).add_(env[s[2] % len(env)].detach().sum()))
            elif s[0] == "u":
                env.append(UNARY[s[1]](x))
            elif s[0] == "b":
                env.append(BINARY[s[1]](x, env[s[3] % len(env)]))
            else:
                env.append(PRODUCT[s[1]](x, w))
        loss = sum((v * (0.1 * k + 0.2)).sum() for k, v in enumerate(env[4:]))
        loss = loss + (a * 0.01).sum() + (w * 0.01).sum()     # a gradient for a and w
        return env[-3:], loss
    return run


def _inputs(dt, seed, b_shape, b_slice):
    """a (R, C), requiring grad; b of b_shape, a slice of a bigger tensor when b_slice (a
    compiled call copies it into a staging tensor, and back when the program writes it)."""
    rng = np.random.default_rng(seed)
    a = clgrad.tensor(rng.standard_normal((R, C)), dtype=dt, requires_grad=True)
    b = clgrad.tensor(rng.standard_normal((2,) + b_shape), dtype=dt)
    return a, (b[1] if b_slice else b[1].clone())


def _call(fn, a, b, w, grad):
    """The outputs of one call as numpy, and the gradients of a and w when grad."""
    a.grad = w.grad = None
    clgrad.manual_seed(11)                  # dropout draws the same numbers in both runs
    if grad:
        outs, loss = fn(a, b, w)
        loss.backward()
        return [o.detach().numpy() for o in outs] + [loss.detach().numpy(), a.grad.numpy(),
                                                        w.grad.numpy(), b.numpy()]
    with clgrad.no_grad():
        outs, loss = fn(a, b, w)
    return [o.numpy() for o in outs] + [loss.numpy(), b.numpy()]


def _outcome(fn, a, b, w, grad):
    """_call's values, or the message's start of the RuntimeError it raised (an argument
    saved for backward and then changed in place)."""
    try:
        return _call(fn, a, b, w, grad)
    except RuntimeError as err:
        return str(err)[:60]


@settings(max_examples=EXAMPLES, **FUZZ)
@given(steps=st.lists(step, min_size=1, max_size=8),
       dtype=st.sampled_from(["float64", "float32"]),
       b_shape=st.sampled_from([(C,), (R, 1), (R, C)]),
       b_slice=st.booleans(), grad=st.booleans())
def test_random_programs_compiled_match_eager(device, steps, dtype, b_shape, b_slice, grad):
    if dtype == "float64" and not device.has_fp64:
        dtype = "float32"
    dt = getattr(clgrad, dtype)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=1e-5, atol=1e-5)
    program = _program(steps)
    compiled = clgrad.compile(program)
    w = clgrad.tensor(np.random.default_rng(1).standard_normal((C, C)), dtype=dt,
                      requires_grad=True)
    for seed in (0, 0, 0, 0, 1):            # warm-up, capture, two replays, new values
        want = _outcome(program, *_inputs(dt, seed, b_shape, b_slice), w, grad)
        got = _outcome(compiled, *_inputs(dt, seed, b_shape, b_slice), w, grad)
        if isinstance(want, str):           # eager raised: so must the compiled call
            assert got == want, (steps, seed, got)
            return
        for g, e in zip(got, want):
            np.testing.assert_allclose(g, e, **tol, err_msg=f"{steps} seed {seed}")
    assert compiled.stats["replays"] >= 2, compiled.stats


class _AsSequence(clgrad.nn.Module):
    """A sequence layer over (R, C) features read as (R, 2, C // 2) sequences."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        out = self.layer(x.reshape(x.shape[0], 2, C // 2))
        return (out[0] if isinstance(out, tuple) else out).reshape(x.shape[0], C)


LAYERS = {
    "linear": lambda: clgrad.nn.Linear(C, C),
    "linear_nobias": lambda: clgrad.nn.Linear(C, C, bias=False),
    "relu": lambda: clgrad.nn.ReLU(),
    "gelu": lambda: clgrad.nn.GELU(),
    "tanh": lambda: clgrad.nn.Tanh(),
    "layer_norm": lambda: clgrad.nn.LayerNorm(C),
    "batch_norm": lambda: clgrad.nn.BatchNorm1d(C),
    "dropout": lambda: clgrad.nn.Dropout(0.25),
    "lstm": lambda: _AsSequence(clgrad.nn.LSTM(C // 2, C // 2, batch_first=True)),
    "gru": lambda: _AsSequence(clgrad.nn.GRU(C // 2, C // 2, num_layers=2, batch_first=True)),
    "encoder": lambda: _AsSequence(clgrad.nn.TransformerEncoderLayer(
        C // 2, 2, dim_feedforward=8, dropout=0.1, batch_first=True)),
}
OPTIMIZERS = {
    "sgd": lambda ps: clgrad.optim.SGD(ps, lr=0.05),
    "sgd_momentum": lambda ps: clgrad.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True,
                                                weight_decay=1e-3),
    "adam": lambda ps: clgrad.optim.Adam(ps, lr=1e-2),
    "adamw_amsgrad": lambda ps: clgrad.optim.AdamW(ps, lr=1e-2, amsgrad=True),
    "rmsprop": lambda ps: clgrad.optim.RMSprop(ps, lr=1e-2, momentum=0.5, centered=True),
}


def _model(layers, seed, conv):
    """The stack, after a convolutional stem over (2, 4, 4) images when conv."""
    nn = clgrad.nn
    clgrad.manual_seed(seed)
    stem = [nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.BatchNorm2d(4), nn.MaxPool2d(2),
            nn.Conv2d(4, 4, 1, bias=False), nn.ReLU(), nn.Flatten(), nn.Linear(16, C)] \
        if conv else []
    return nn.Sequential(*stem, *[LAYERS[name]() for name in layers], nn.Linear(C, 3))


@settings(max_examples=EXAMPLES // 2, **FUZZ)
@given(layers=st.lists(st.sampled_from(sorted(LAYERS)), min_size=1, max_size=5),
       optimizer=st.sampled_from(sorted(OPTIMIZERS)),
       set_to_none=st.booleans(), whole_step=st.booleans(), amp=st.booleans(),
       conv=st.booleans())
def test_random_training_steps_compiled_match_eager(device, layers, optimizer, set_to_none,
                                                    whole_step, amp, conv):
    """A training step (forward, cross-entropy, backward, optimizer step) of a random stack of
    layers, compiled whole or with only the model compiled (its backward then runs from the
    node of the compiled call), with a convolutional stem or not, its forward under bfloat16
    autocast or not: every step's loss, and the parameters, buffers (batch norm's
    running statistics) and optimizer state after five steps on changing batches, are eager's."""
    rng = np.random.default_rng(0)
    shape = (R, 2, 4, 4) if conv else (R, C)
    batches = [(clgrad.tensor(rng.standard_normal(shape).astype(np.float32)),
                clgrad.tensor(rng.integers(0, 3, R))) for _ in range(5)]
    runs = []
    for compiled in (False, True):
        net = _model(layers, 0, conv)
        opt = OPTIMIZERS[optimizer](net.parameters())
        model = clgrad.compile(net) if compiled and not whole_step else net

        def step(x, y):
            opt.zero_grad(set_to_none=set_to_none)
            with clgrad.autocast("cpu", dtype=clgrad.bfloat16, enabled=amp):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        run = clgrad.compile(step) if compiled and whole_step else step
        clgrad.manual_seed(5)
        losses = [run(x, y).item() for x, y in batches]
        state = [t.detach().numpy() for t in net.state_dict().values()]
        state += [v.numpy() for s in opt.state.values() for v in s.values()
                  if isinstance(v, clgrad.Tensor)]
        runs.append((losses, state))
        if compiled:
            stats = run.stats if whole_step else model._compiled.stats
            assert stats["replays"] >= 3, stats
    (want, want_state), (got, got_state) = runs
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(layers))
    assert len(got_state) == len(want_state)
    for g, e in zip(got_state, want_state):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, err_msg=str(layers))
