"""clgrad.utils.tensorboard.SummaryWriter: what it writes, read back with tensorboard's own
event file loader."""
import glob
import io
import os

import numpy as np
import pytest
from PIL import Image
from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader as EventFileLoader

import clgrad
from clgrad.utils.tensorboard import SummaryWriter


def events(path):
    """The summary values written under `path` (one directory): [(step, value proto)]."""
    files = glob.glob(os.path.join(path, "events.out.tfevents.*"))
    assert len(files) == 1
    return [(e.step, v) for e in EventFileLoader(files[0]).Load() for v in e.summary.value]


def test_scalars(tmp_path, device):
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalar("loss", clgrad.tensor(0.5 * step), step)
        w.add_scalar("lr", 1e-3, 7, new_style=True, double_precision=True)
        w.add_scalars("acc", {"train": 0.9, "test": np.float32(0.8)}, 2)
    got = events(tmp_path)
    assert [(s, v.tag, v.simple_value) for s, v in got if v.tag == "loss"] == \
        [(0, "loss", 0.0), (1, "loss", 0.5), (2, "loss", 1.0)]
    lr = [v for _, v in got if v.tag == "lr"][0]
    assert lr.tensor.double_val == [1e-3] and lr.metadata.plugin_data.plugin_name == "scalars"
    for key, want in (("train", 0.9), ("test", 0.8)):
        (step, v), = events(tmp_path / f"acc_{key}")
        assert step == 2 and v.tag == "acc" and v.simple_value == pytest.approx(want)
    with SummaryWriter(tmp_path / "bad") as w, pytest.raises(ValueError, match="add_scalar"):
        w.add_scalar("x", clgrad.ones(2))


def test_histogram(tmp_path, device):
    x = np.random.default_rng(0).standard_normal(1000)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", clgrad.tensor(x), 1)
        w.add_histogram("w10", x, 1, bins=10)
        w.add_histogram("few", x, 1, bins=100, max_bins=7)
        with pytest.raises(ValueError, match="no element"):
            w.add_histogram("empty", clgrad.zeros(0))
    h = {v.tag: v.histo for _, v in events(tmp_path)}
    for tag in ("w", "w10", "few"):
        assert sum(h[tag].bucket) == 1000 and h[tag].num == 1000
        assert h[tag].min == x.min() and h[tag].max == x.max()
        assert h[tag].sum == pytest.approx(x.sum()) and h[tag].sum_squares == pytest.approx(x @ x)
        assert len(h[tag].bucket) == len(h[tag].bucket_limit)
    counts, edges = np.histogram(x, bins=10)
    assert list(h["w10"].bucket) == [0] + counts.tolist()    # an empty bin on the left
    assert np.allclose(h["w10"].bucket_limit, edges)
    assert len(h["few"].bucket) <= 8
    assert h["w"].bucket_limit[0] < x.min() and h["w"].bucket_limit[-1] >= x.max()


def test_images_and_text(tmp_path, device):
    rng = np.random.default_rng(1)
    chw = rng.random((3, 4, 5)).astype(np.float32)
    batch = rng.integers(0, 256, (3, 4, 5, 1)).astype(np.uint8)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", clgrad.tensor(chw), 0)
        w.add_image("hw", chw[0], 0, dataformats="HW")
        w.add_images("grid", batch, 0, dataformats="NHWC")
        w.add_text("note", "**hello** clgrad", 3)
        with pytest.raises(ValueError, match="dataformats"):
            w.add_image("bad", chw, 0, dataformats="NCHW")
    got = {v.tag: v for _, v in events(tmp_path)}

    def decode(v):
        return np.asarray(Image.open(io.BytesIO(v.image.encoded_image_string)))
    rgb = decode(got["chw"])
    assert rgb.shape == (4, 5, 3) and got["chw"].image.colorspace == 3
    assert np.abs(rgb.astype(int) - np.round(chw.transpose(1, 2, 0) * 255)).max() <= 1
    assert decode(got["hw"]).shape == (4, 5)
    grid = decode(got["grid"])                              # three images in one row
    assert grid.shape == (4, 15) and np.array_equal(grid[:, 5:10], batch[1, ..., 0])
    text = got["note/text_summary"]
    assert text.tensor.string_val == [b"**hello** clgrad"]
    assert text.metadata.plugin_data.plugin_name == "text"


def test_default_log_dir_and_purge_step(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_exp1", purge_step=5)
    w.add_scalar("a", 1.0, 6)
    w.close()
    logdir = w.get_logdir()
    assert logdir.startswith("runs" + os.sep) and logdir.endswith("_exp1")
    files = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
    steps = [e.step for e in EventFileLoader(files[0]).Load()]
    assert 5 in steps and 6 in steps
