"""Training-step benchmarks for tools/bench.py (its "training" section):

W3: one step of a 784-512-512-10 ReLU MLP, batch 256, cross-entropy, SGD (momentum 0.9) and Adam.
W5: one step of batch 32 of 3x32x32 through conv 3->32 3x3 pad 1, ReLU, conv 32->64 3x3 pad 1,
    ReLU, global mean pool, linear 64->10, cross-entropy, backward, SGD.

The same model, data and optimiser run in torch (CPU) and tinygrad (its OpenCL device) where they
are installed, in the same process.
"""
import numpy as np

import clgrad


def _data(rng, shape, classes, n):
    return rng.standard_normal((n,) + shape).astype(np.float32), \
        rng.integers(0, classes, n).astype(np.int64)


# ---- clgrad and torch: one definition, since clgrad.nn is torch.nn's API -------------------------
def make_models(nn):
    """The W3 MLP and the W5 CNN, built with torch.nn or clgrad.nn alike."""
    mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                        nn.Linear(512, 10))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 32, 3, padding=1)
            self.c2 = nn.Conv2d(32, 64, 3, padding=1)
            self.fc = nn.Linear(64, 10)

        def forward(self, x):
            x = self.c2(self.c1(x).relu()).relu()
            return self.fc(x.mean((2, 3)))
    return mlp, Net()


def make_step(lib, model, optimiser, x, y, amp=None, device_type="cpu"):
    """One training step (zero_grad, forward, cross-entropy, backward, optimiser step) with
    `lib` being torch or clgrad; with `amp` (a dtype of lib) the forward runs under autocast."""
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9) if optimiser == "sgd" else \
        lib.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        with lib.autocast(device_type, dtype=amp or lib.bfloat16, enabled=amp is not None):
            loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


# ---- tinygrad -----------------------------------------------------------------------------------
def tinygrad_setup(kind, xn, yn, optimiser):
    from tinygrad import Tensor, nn
    from tinygrad.nn.state import get_parameters

    if kind == "mlp":
        class Net:
            def __init__(self):
                self.l1, self.l2, self.l3 = nn.Linear(784, 512), nn.Linear(512, 512), \
                    nn.Linear(512, 10)

            def __call__(self, x):
                return self.l3(self.l2(self.l1(x).relu()).relu())
    else:
        class Net:
            def __init__(self):
                self.c1 = nn.Conv2d(3, 32, 3, padding=1)
                self.c2 = nn.Conv2d(32, 64, 3, padding=1)
                self.fc = nn.Linear(64, 10)

            def __call__(self, x):
                x = self.c2(self.c1(x).relu()).relu()
                return self.fc(x.mean((2, 3)))
    model = Net()
    params = get_parameters(model)
    opt = nn.optim.SGD(params, lr=0.01, momentum=0.9) if optimiser == "sgd" else \
        nn.optim.Adam(params, lr=1e-3)
    x, y = Tensor(xn), Tensor(yn.astype(np.int32))

    def step():
        with Tensor.train():
            opt.zero_grad()
            loss = model(x).sparse_categorical_crossentropy(y)
            loss.backward()
            opt.step()
            loss.realize()
    return step


def training_section(table, args, torch, tinygrad):
    from bench import _rows, best_of, nothing, sync_cl, _tg_sync
    from bench_compile import interleaved
    rep = 10 if not args.quick else 3
    rng = np.random.default_rng(0)
    print("\nTraining steps (ms per step; clgrad and torch timed in turns; ratio = clgrad / other)")
    xn, yn = _data(rng, (784,), 10, 256)
    cases = [("W3 MLP 784-512-512-10, batch 256, SGD momentum", "mlp", "sgd", xn, yn),
             ("W3 MLP 784-512-512-10, batch 256, Adam", "mlp", "adam", xn, yn)]
    cx, cy = _data(rng, (3, 32, 32), 10, 32)
    cases.append(("W5 conv-conv-pool-linear, batch 32 of 3x32x32, SGD", "cnn", "sgd", cx, cy))
    # the same steps under autocast to bfloat16 (torch: its CPU autocast), beside float32 above
    cases += [(name + ", autocast bf16", kind, optname, xn_, yn_, "bf16")
              for name, kind, optname, xn_, yn_ in cases if "SGD" not in name or kind == "cnn"]
    device_type = "cpu" if clgrad.runtime.default_device().is_cpu else "cuda"
    for name, kind, optname, xn_, yn_, *amp in cases:
        clgrad.manual_seed(0)
        model = make_models(clgrad.nn)[0 if kind == "mlp" else 1]
        step = make_step(clgrad, model, optname, clgrad.tensor(xn_), clgrad.tensor(yn_),
                         clgrad.bfloat16 if amp else None, device_type)
        try:
            step()
            sync_cl()
        except NotImplementedError as e:
            print(f"  {name}: not available ({e})")
            continue
        steps = {"clgrad": (step, sync_cl)}
        if torch is not None:
            torch.manual_seed(0)
            tm = make_models(torch.nn)[0 if kind == "mlp" else 1]
            steps["torch"] = (make_step(torch, tm, optname, torch.tensor(xn_), torch.tensor(yn_),
                                        torch.bfloat16 if amp else None), nothing)
        # clgrad and torch in turns, so that the machine's drift hits both alike
        times = interleaved(steps, rep)
        t = times.pop("clgrad")
        others = list(times.items())
        if tinygrad is not None and not amp:
            try:
                others.append(("tinygrad", best_of(tinygrad_setup(kind, xn_, yn_, optname),
                                                   max(2, rep // 3), _tg_sync(tinygrad))))
            except Exception as e:          # a tinygrad version without some piece
                print(f"  (tinygrad: {type(e).__name__}: {e})")
        _rows(table, name, t * 1e3, "ms", others, 1e3)
