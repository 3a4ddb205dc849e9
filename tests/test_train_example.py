"""The training example (tools/train.py) and its dataset run end to end."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import shapes  # noqa: E402
import train  # noqa: E402


def test_shapes_dataset_is_deterministic_and_balanced():
    a, la = shapes.make_shapes(50, seed=3)
    b, lb = shapes.make_shapes(50, seed=3)
    c, _ = shapes.make_shapes(50, seed=4)
    assert np.array_equal(a, b) and np.array_equal(la, lb) and not np.array_equal(a, c)
    assert a.shape == (50, 1, 28, 28) and a.dtype == np.float32
    assert np.bincount(la, minlength=10).tolist() == [5] * 10
    # every class draws something: more ink than the noise alone
    for k in range(10):
        assert a[la == k].mean() > 0.05


def test_training_example_runs_and_reloads(device, tmp_path):
    ckpt = str(tmp_path / "ckpt.clgrad")
    rc = train.main(["--model", "mlp", "--epochs", "2", "--train-size", "600", "--test-size",
                     "200", "--batch-size", "50", "--checkpoint", ckpt, "--device",
                     f"cl:{device.index}"])
    assert rc == 0 and os.path.exists(ckpt)


def test_training_example_with_float16_autocast_and_a_grad_scaler(device, tmp_path, capsys):
    ckpt = str(tmp_path / "ckpt.clgrad")
    rc = train.main(["--model", "mlp", "--epochs", "2", "--train-size", "600", "--test-size",
                     "200", "--batch-size", "50", "--checkpoint", ckpt, "--amp", "fp16",
                     "--device", f"cl:{device.index}"])
    out = capsys.readouterr().out
    assert rc == 0 and "autocast to fp16 with a GradScaler" in out
    losses = [float(line.split("train loss")[1].split()[0]) for line in out.splitlines()
              if line.startswith("epoch ")]
    acc = float(out.split("final held-out accuracy:")[1].split()[0])
    assert losses[1] < losses[0] and acc > 0.2         # it learns (ten classes: chance is 0.1)


def test_training_example_on_two_ranks(tmp_path):
    """tools/train.py --ddp under the launcher: rank 0 reports, saves and reloads."""
    import importlib.util
    import subprocess
    if importlib.util.find_spec("mpi4py") is None:   # MPI is an extra: say how to get it
        with pytest.raises(RuntimeError, match=r"pip install clgrad\[mpi\]"):
            train.main(["--ddp", "--steps", "1"])
        return
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("CLGRAD_TEST_DEVICES", None)
    r = subprocess.run([sys.executable, "-m", "clgrad.distributed.run", "--nproc-per-node", "2",
                        os.path.join(ROOT, "tools", "train.py"), "--ddp", "--model", "mlp",
                        "--epochs", "1", "--train-size", "600", "--test-size", "200",
                        "--batch-size", "50", "--checkpoint", str(tmp_path / "c.clgrad")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "rank 0 of 2" in r.stdout and r.stdout.count("final held-out accuracy") == 1
    assert "reloaded model scores" in r.stdout and "(the same)" in r.stdout


def test_gpt_example_trains_reloads_and_samples(device, tmp_path, capsys):
    import train_gpt
    rc = train_gpt.main(["--steps", "8", "--layers", "1", "--d-model", "32", "--heads", "2",
                         "--context", "16", "--batch", "4", "--sample", "20", "--lr", "1e-2",
                         "--device", f"cl:{device.index}",
                         "--checkpoint", str(tmp_path / "gpt.clgrad")])
    out = capsys.readouterr().out
    assert rc == 0 and "(the same)" in out
    before = float(out.split("held-out loss before training:")[1].split()[0])
    after = float(out.split("held-out loss after training:")[1].split()[0])
    assert after < before                                 # it learns
    sample = out.split("sample:\n")[1]
    assert sample.startswith("import clgrad\n") and len(sample.rstrip("\n")) >= 20
