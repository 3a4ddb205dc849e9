"""clgrad.save / clgrad.load: round trips of every dtype and of nested containers, module and
optimizer state dicts, map_location, and clean errors for truncated, corrupted and foreign files
(the format stores no code, so loading cannot run any)."""
import io
import json
import math
import os
import pickle
import struct
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import clgrad
from clgrad import nn, serialization
from helpers import all_dtypes, random_array


def round_trip(obj, **kw):
    buf = io.BytesIO()
    clgrad.save(obj, buf)
    buf.seek(0)
    return clgrad.load(buf, **kw)


def assert_same_tensor(a, b):
    assert type(a) is type(b) and a.dtype is b.dtype and a.shape == b.shape
    assert a.requires_grad == b.requires_grad
    np.testing.assert_array_equal(a.detach()._read_host(), b.detach()._read_host())


def test_every_dtype_round_trips(device, tmp_path):
    rng = np.random.default_rng(0)
    for dt in all_dtypes(device):
        for shape in ((), (0,), (5,), (3, 4), (2, 0, 3)):
            t = clgrad.tensor(random_array(shape, dt, rng), dtype=dt)
            assert_same_tensor(round_trip(t), t)
    # values that need every bit: bfloat16 and float16 specials, int64 extremes
    special = clgrad.tensor([math.inf, -math.inf, math.nan, -0.0, 1e-40], dtype=clgrad.bfloat16)
    assert_same_tensor(round_trip(special), special)
    big = clgrad.tensor([2 ** 63 - 1, -2 ** 63], dtype=clgrad.int64)
    assert round_trip(big).tolist() == [2 ** 63 - 1, -2 ** 63]
    # non-contiguous views are saved as their values
    view = clgrad.arange(12).reshape(3, 4).t()[1:]
    assert round_trip(view).tolist() == view.tolist()
    path = tmp_path / "t.pt"
    clgrad.save(clgrad.ones(2), path)                     # paths: str or os.PathLike
    assert clgrad.load(str(path)).tolist() == [1.0, 1.0]


def test_nested_containers_and_scalars():
    a = clgrad.ones(2)
    obj = {"tensors": [a, (clgrad.zeros(1), a)], "n": 3, "x": 2.5, "inf": math.inf,
           "nan": math.nan, "flag": True, "none": None, "name": "ckpt", "raw": b"\x00\xff",
           7: "int key", (1, 2): "tuple key", "dtype": clgrad.bfloat16,
           "size": clgrad.Size([2, 3]), "nested": OrderedDict(b=[], a={}),
           "big": 10 ** 30, "np": np.arange(3, dtype=np.int16), "npf": np.float32(0.5)}
    out = round_trip(obj)
    assert list(out) == list(obj)
    t0, (t1, t2) = out["tensors"]
    assert t0 is t2                                       # one tensor saved twice stays one
    assert t1.tolist() == [0.0] and isinstance(out["tensors"][1], tuple)
    assert out["n"] == 3 and type(out["n"]) is int and out["x"] == 2.5
    assert out["inf"] == math.inf and math.isnan(out["nan"])
    assert out["flag"] is True and out["none"] is None and out["name"] == "ckpt"
    assert out["raw"] == b"\x00\xff" and out[7] == "int key" and out[(1, 2)] == "tuple key"
    assert out["dtype"] is clgrad.bfloat16 and out["size"] == (2, 3)
    assert type(out["size"]) is clgrad.Size and out["big"] == 10 ** 30
    assert out["nested"] == {"b": [], "a": {}} and list(out["nested"]) == ["b", "a"]
    assert out["np"].dtype == np.int16 and out["np"].tolist() == [0, 1, 2]
    assert out["npf"] == 0.5


def test_parameters_and_requires_grad():
    p = nn.Parameter(clgrad.tensor([1.0, 2.0]))
    frozen = nn.Parameter(clgrad.zeros(1), requires_grad=False)
    leaf = clgrad.ones(2, requires_grad=True)
    out = round_trip([p, frozen, leaf, leaf * 2])
    assert type(out[0]) is nn.Parameter and out[0].requires_grad and out[0].tolist() == [1.0, 2.0]
    assert type(out[1]) is nn.Parameter and not out[1].requires_grad
    assert out[2].requires_grad and out[2].is_leaf
    assert not out[3].requires_grad                       # a result's history is not saved


def test_module_and_optimizer_checkpoint(tmp_path):
    clgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1))
    opt = clgrad.optim.Adam(model.parameters(), lr=0.01, amsgrad=True)
    sched = clgrad.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 4])
    x, y = clgrad.randn(8, 3), clgrad.randn(8, 1)

    def train_step(m, o, s):
        o.zero_grad()
        loss = nn.functional.mse_loss(m(x), y)
        loss.backward()
        o.step()
        s.step()
        return loss.item()
    for _ in range(3):
        train_step(model, opt, sched)
    path = tmp_path / "ckpt.pt"
    clgrad.save({"model": model.state_dict(), "opt": opt.state_dict(),
                 "sched": sched.state_dict(), "epoch": 3}, path)
    ckpt = clgrad.load(path)
    model2 = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1))
    opt2 = clgrad.optim.Adam(model2.parameters())
    sched2 = clgrad.optim.lr_scheduler.MultiStepLR(opt2, milestones=[1])
    model2.load_state_dict(ckpt["model"])
    opt2.load_state_dict(ckpt["opt"])
    sched2.load_state_dict(ckpt["sched"])
    assert ckpt["epoch"] == 3 and model2[1].num_batches_tracked.item() == 3
    losses = [train_step(model, opt, sched) for _ in range(3)]
    assert [train_step(model2, opt2, sched2) for _ in range(3)] == losses
    for a, b in zip(model.parameters(), model2.parameters()):
        assert a.tolist() == b.tolist()
    assert sched.get_last_lr() == sched2.get_last_lr()


def test_map_location(device):
    t = clgrad.arange(3).float()
    saved = str(clgrad.device(device))
    for ml in (None, saved, f"cl:{device.index}", clgrad.device(device), {saved: saved}):
        out = round_trip(t, map_location=ml)
        assert out.tolist() == [0.0, 1.0, 2.0] and out._storage.device is device
    out = round_trip(t, map_location="cpu")
    assert out.device == clgrad.device("cpu") and out.is_cpu
    out = round_trip(t, map_location=lambda tensor, where: tensor * 2)
    assert out.tolist() == [0.0, 2.0, 4.0]
    out = round_trip({"w": t}, map_location="cl", weights_only=True)
    assert out["w"].tolist() == [0.0, 1.0, 2.0]


def test_whole_modules_round_trip_only_when_allowed(tmp_path):
    path = tmp_path / "model.pt"
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    model[0].weight.grad = clgrad.ones(4, 3)
    clgrad.save({"model": model, "epoch": 3}, path)
    with pytest.raises(pickle.UnpicklingError,
                       match="Unsupported global: GLOBAL clgrad.nn.modules.container.Sequential"):
        clgrad.load(path)                                   # weights_only=True by default
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        clgrad.load(path, weights_only=True)
    ck = clgrad.load(path, weights_only=False)
    x = clgrad.randn(5, 3)
    assert ck["epoch"] == 3 and type(ck["model"]) is nn.Sequential
    np.testing.assert_array_equal(ck["model"](x).detach().numpy(), model(x).detach().numpy())
    assert isinstance(ck["model"][0].weight, nn.Parameter)
    with clgrad.serialization.safe_globals([nn.Sequential, nn.Linear, nn.ReLU]):
        again = clgrad.load(path)["model"]
    np.testing.assert_array_equal(again(x).detach().numpy(), model(x).detach().numpy())
    with pytest.raises(pickle.UnpicklingError):
        clgrad.load(path)                                   # the context has ended
    clgrad.serialization.add_safe_globals([nn.Sequential, nn.Linear, nn.ReLU])
    try:
        assert type(clgrad.load(path)["model"][1]) is nn.ReLU
    finally:
        clgrad.serialization.clear_safe_globals()
    clgrad.save({"s": {1, 2}}, path)                         # a set is safe by default
    assert clgrad.load(path) == {"s": {1, 2}}


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_weights_only_never_runs_code(tmp_path):
    path = tmp_path / "evil.pt"
    clgrad.save([_Evil()], path)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL posix.system|GLOBAL os.system"):
        clgrad.load(path)


def test_unsupported_objects_raise_and_write_nothing(tmp_path):
    path = tmp_path / "bad.pt"
    with pytest.raises(TypeError, match="cannot store an object of type generator"):
        clgrad.save((i for i in range(3)), path)
    with pytest.raises(TypeError, match="numpy arrays of dtype object"):
        clgrad.save(np.array([None]), path)
    assert not path.exists() and os.listdir(tmp_path) == []
    with pytest.raises(TypeError, match="are not pickled"):
        pickle.dumps(clgrad.ones(1))


def _saved_bytes(obj):
    buf = io.BytesIO()
    clgrad.save(obj, buf)
    return buf.getvalue()


def _load_bytes(data, name="ckpt.pt", tmp_path=None):
    path = tmp_path / name
    path.write_bytes(data)
    return clgrad.load(path)


def test_truncated_files_fail_cleanly(tmp_path):
    data = _saved_bytes({"w": clgrad.randn(4, 5), "b": clgrad.zeros(7, dtype=clgrad.int64)})
    for cut in sorted({0, 1, 7, 8, 12, 19, 20, 40, len(data) // 2, len(data) - 65,
                       len(data) - 1}):
        with pytest.raises(RuntimeError) as e:
            _load_bytes(data[:cut], tmp_path=tmp_path)
        msg = str(e.value)
        assert msg.startswith("clgrad.load: ") and "ckpt.pt" in msg
        assert "truncated" in msg or "empty" in msg or "corrupted" in msg, msg


def test_corrupted_files_fail_cleanly(tmp_path):
    data = _saved_bytes({"w": clgrad.randn(4, 5)})
    head_len = struct.unpack("<Q", data[12:20])[0]
    # a flipped bit in the tensor data: the checksum catches it
    flipped = bytearray(data)
    flipped[20 + head_len + (-(20 + head_len) % 64) + 5] ^= 0x10
    with pytest.raises(RuntimeError, match="is corrupted: blob 0 fails its checksum"):
        _load_bytes(bytes(flipped), tmp_path=tmp_path)
    # damage in the JSON header
    broken = bytearray(data)
    broken[25:30] = b"\xff\xfe{{{"
    with pytest.raises(RuntimeError, match="has a corrupted header"):
        _load_bytes(bytes(broken), tmp_path=tmp_path)

    def with_header(edit):
        header = json.loads(data[20:20 + head_len])
        edit(header)
        head = json.dumps(header).encode()
        body = data[20 + head_len + (-(20 + head_len) % 64):]
        prefix = struct.pack("<8sIQ", serialization.MAGIC, 1, len(head))
        return prefix + head + b"\0" * (-(20 + len(head)) % 64) + body

    cases = [
        (lambda h: h["blobs"][0].update(shape=[1000, 1000]), "holds 80 bytes, its shape"),
        (lambda h: h["blobs"][0].update(dtype="float8_e4m3fn"), "unknown dtype 'float8_e4m3fn'"),
        (lambda h: h["blobs"][0].update(offset=10 ** 9), "lies outside the data section"),
        (lambda h: h.update(data_bytes=10 ** 12), "is truncated"),
        (lambda h: h.update(root={"pickle": "cos\nsystem\n"}), "refers to a missing pickle"),
        (lambda h: h.update(root={"tensor": 5}), "refers to a missing tensor"),
        (lambda h: h.update(root={"dict": [[[1], 2]]}), "not hashable"),
        (lambda h: h.update(format="other"), "not a clgrad header"),
    ]
    for edit, message in cases:
        with pytest.raises(RuntimeError, match=message):
            _load_bytes(with_header(edit), tmp_path=tmp_path)
    newer = bytearray(data)
    newer[8:12] = struct.pack("<I", 99)
    with pytest.raises(RuntimeError, match="written by a newer clgrad \\(format version 99"):
        _load_bytes(bytes(newer), tmp_path=tmp_path)


def test_foreign_files_fail_cleanly(tmp_path):
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as z:
        z.writestr("archive/data.pkl", b"x")
    with pytest.raises(RuntimeError, match="has a corrupted data.pkl"):    # read as torch's
        _load_bytes(zbuf.getvalue(), tmp_path=tmp_path)
    ran = []

    class Evil:
        def __reduce__(self):
            return (ran.append, ("code ran",))
    with pytest.raises(RuntimeError, match="looks like a pickle; clgrad.load never unpickles"):
        _load_bytes(pickle.dumps(Evil(), protocol=2), tmp_path=tmp_path)
    assert ran == []
    with pytest.raises(RuntimeError, match="is not a clgrad checkpoint \\(bad magic number\\)"):
        _load_bytes(b"hello world, this is text" * 3, tmp_path=tmp_path)
    with pytest.raises(RuntimeError, match="is empty"):
        _load_bytes(b"", tmp_path=tmp_path)
    with pytest.raises(FileNotFoundError):
        clgrad.load(tmp_path / "missing.pt")
    with pytest.raises(RuntimeError, match="clgrad.load: 'BytesIO' is not a clgrad checkpoint"):
        clgrad.load(io.BytesIO(b"not a checkpoint at all"))


def test_saving_over_a_file_is_atomic(tmp_path):
    path = tmp_path / "ckpt.pt"
    clgrad.save({"v": 1}, path)
    with pytest.raises(TypeError):
        clgrad.save({"v": (i for i in range(2))}, path)        # cannot be stored
    assert clgrad.load(path) == {"v": 1}                  # the old checkpoint is intact
    assert os.listdir(tmp_path) == ["ckpt.pt"]

