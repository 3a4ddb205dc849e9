"""The training example (tools/train.py) and its dataset run end to end."""
import os
import sys

import numpy as np

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
