"""clgrad.load reads what torch.save wrote (tests/data/torch_checkpoints/*.pt, made by
tools/make_torch_checkpoints.py with torch; the values torch had are in the .npz beside each), and
clgrad.save(..., _use_new_zipfile_serialization=True) writes that format. torch is not imported."""
import io
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import clgrad
from clgrad import nn

DATA = os.path.join(os.path.dirname(__file__), "data", "torch_checkpoints")


def fixture(name, **kw):
    kw.setdefault("map_location", clgrad.get_default_device())
    return clgrad.load(os.path.join(DATA, name + ".pt"), **kw), \
        np.load(os.path.join(DATA, name + ".npz"))


def host(t):
    t = t.detach()
    return t._read_host() if t.dtype is clgrad.bfloat16 else t.numpy()


def compare(prefix, obj, ref):
    """Every tensor in obj equals (dtype, shape, bits) what torch saved; returns how many."""
    if isinstance(obj, clgrad.Tensor):
        key = prefix + (".bf16bits" if obj.dtype is clgrad.bfloat16 else "")
        a = host(obj)
        assert a.dtype == ref[key].dtype and a.shape == ref[key].shape, key
        np.testing.assert_array_equal(a, ref[key])
        return 1
    if isinstance(obj, dict):
        return sum(compare(f"{prefix}/{k}", v, ref) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return sum(compare(f"{prefix}/{i}", v, ref) for i, v in enumerate(obj))
    return 0


def test_every_dtype_of_a_torch_state_dict(device):
    sd, ref = fixture("dtypes")
    assert type(sd) is OrderedDict and list(sd)[:3] == ["f32", "f16", "bf16"]
    assert compare("", sd, ref) == len(ref.files) == 11
    assert {k: v.dtype for k, v in sd.items()} == {
        "f32": clgrad.float32, "f16": clgrad.float16, "bf16": clgrad.bfloat16,
        "f64": clgrad.float64, "i64": clgrad.int64, "i32": clgrad.int32, "i8": clgrad.int8,
        "u8": clgrad.uint8, "bool": clgrad.bool, "scalar": clgrad.float32,
        "empty": clgrad.float32}
    assert sd["scalar"].shape == () and sd["empty"].shape == (0, 3)
    assert sd["bf16"].float().tolist()[:3] == [1.0, -2.5, 3.140625]
    assert sd["f32"].device == device.torch_device


def test_complex_tensors(device):
    c, ref = fixture("complex")
    assert compare("", c, ref) == 2
    assert c["c64"].dtype is clgrad.complex64 and c["c128"].dtype is clgrad.complex128
    buf = io.BytesIO()
    clgrad.save(c, buf, _use_new_zipfile_serialization=True)
    buf.seek(0)
    assert compare("", clgrad.load(buf, map_location=device), ref) == 2


def test_views_share_one_storage(device):
    v, ref = fixture("views")
    assert compare("", v, ref) == 5
    assert len({id(t._storage) for t in v.values()}) == 1
    assert v["t"].stride() == (1, 6) and v["strided"].stride() == (12, 3)
    assert v["cols"].storage_offset() == 1 and not v["cols"].is_contiguous()
    v["base"].add_(1)                       # one buffer: a write shows through every view
    assert v["row"].tolist() == [13.0, 14.0, 15.0, 16.0, 17.0, 18.0]


class TinyGPT(nn.Module):
    """tools/make_torch_checkpoints.py's TinyGPT, written with clgrad."""

    def __init__(self, vocab=11, block=8, d=8):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block, d)
        self.ln = nn.LayerNorm(d)
        self.attn = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d, bias=False)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight
        self.register_buffer("mask", clgrad.tril(clgrad.ones(block, block, dtype=clgrad.bool)))

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(clgrad.arange(idx.shape[1]))
        x = x + self.proj(self.attn(self.ln(x))[..., :x.shape[-1]])
        return self.head(x)


def test_a_nanogpt_checkpoint_resumes(device):
    ckpt, ref = fixture("nanogpt")
    assert compare("", ckpt, ref) == len(ref.files)
    assert ckpt["iter_num"] == 2 and ckpt["model_args"]["n_embd"] == 8
    assert ckpt["config"]["betas"] == (0.9, 0.95) and ckpt["config"]["dtype"] == "float32"
    sd = ckpt["model"]
    assert sd["head.weight"]._storage is sd["wte.weight"]._storage     # tied in torch's file
    model = TinyGPT()
    model.load_state_dict(sd)
    logits = np.load(os.path.join(DATA, "nanogpt_logits.npz"))
    out = model(clgrad.tensor(logits["idx"]))
    np.testing.assert_allclose(out.detach().numpy(), logits["logits"], rtol=1e-5, atol=1e-5)
    # the optimizer's state goes into clgrad's AdamW and training goes on
    opt = clgrad.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    opt.load_state_dict(ckpt["optimizer"])
    assert opt.param_groups[0]["betas"] == (0.9, 0.95)
    loss = model(clgrad.tensor(logits["idx"])).logsumexp(-1).mean()
    loss.backward()
    opt.step()
    assert float(ckpt["best_val_loss"]) == pytest.approx(float(ref["/best_val_loss"]))


def test_parameters_keep_their_class_and_requires_grad(device):
    p, ref = fixture("parameter")
    assert compare("", p, ref) == 2
    assert type(p["p"]) is nn.Parameter and p["p"].requires_grad
    assert type(p["frozen"]) is nn.Parameter and not p["frozen"].requires_grad


def test_a_whole_module_torch_saved(device):
    path = os.path.join(DATA, "whole_module.pt")
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL torch.nn.modules.container.Sequ"):
        clgrad.load(path)
    ref = np.load(os.path.join(DATA, "whole_module.npz"))
    with clgrad.serialization.safe_globals([nn.Sequential, nn.Linear, nn.ReLU, nn.BatchNorm1d]):
        model = clgrad.load(path, map_location=device)       # allow-listed by clgrad's names
    assert type(model) is nn.Sequential and type(model[2]) is nn.BatchNorm1d
    assert not model.training and model[2].num_batches_tracked.item() == 1
    out = model(clgrad.tensor(ref["x"]))
    np.testing.assert_allclose(out.detach().numpy(), ref["y"], rtol=1e-5, atol=1e-6)
    model2 = clgrad.load(path, map_location=device, weights_only=False)
    assert isinstance(model2[0], nn.Linear) and model2[0].weight.requires_grad


def test_map_location_forms(device):
    path = os.path.join(DATA, "views.pt")
    for ml in (device.torch_device, str(device.torch_device), {"cpu": str(device.torch_device)}):
        assert clgrad.load(path, map_location=ml)["base"].device == device.torch_device
    seen = []

    def keep(storage, location):
        seen.append(location)
        return storage.to(device.torch_device)
    t = clgrad.load(path, map_location=keep)["row"]
    assert seen == ["cpu"] and t.device == device.torch_device and t[0].item() == 12.0


def _torch_zip_with(pickled):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", pickled)
        z.writestr("archive/byteorder", b"little")
        z.writestr("archive/version", b"3\n")
    buf.seek(0)
    return buf


ran = []


def record(what):
    ran.append(what)


class Evil:
    def __reduce__(self):
        return (record, ("code ran",))


def test_weights_only_refuses_other_globals_and_honours_torchs_switches(monkeypatch):
    data = pickle.dumps({"x": Evil()}, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL test_torch_checkpoints.record"):
        clgrad.load(_torch_zip_with(data))
    assert ran == []
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        clgrad.load(_torch_zip_with(data), weights_only=False)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(RuntimeError, match="Only one of"):
        clgrad.load(_torch_zip_with(data))
    monkeypatch.delenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD")
    with pytest.warns(UserWarning, match="forcing weights_only=False"):
        out = clgrad.load(_torch_zip_with(data))
    assert ran == ["code ran"] and out == {"x": None}
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        clgrad.load(_torch_zip_with(data), weights_only=True)     # an explicit True wins
    # torch.X names go to clgrad.X when the caller trusts the file
    ran.clear()
    assert clgrad.load(_torch_zip_with(b"\x80\x02ctorch.nn.modules.linear\nLinear\n."),
                       weights_only=False) is nn.Linear
    with pytest.raises(pickle.UnpicklingError, match="which clgrad does not have"):
        clgrad.load(_torch_zip_with(b"\x80\x02ctorch\nno_such_thing\n."), weights_only=False)


def test_damaged_archives_fail_cleanly(device):
    with open(os.path.join(DATA, "views.pt"), "rb") as f:
        good = f.read()
    with pytest.raises(RuntimeError, match="is a damaged zip archive|is not a clgrad"):
        clgrad.load(io.BytesIO(good[:len(good) // 2]))
    z = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(good)) as src, zipfile.ZipFile(z, "w") as dst:
        for n in src.namelist():
            if n != "views/data/0":
                dst.writestr(n, src.read(n))
    z.seek(0)
    with pytest.raises(RuntimeError, match="has no entry views/data/0"):
        clgrad.load(z)
    with pytest.raises(RuntimeError, match="without a data.pkl"):
        clgrad.load(_torch_zip_without_pickle())


def _torch_zip_without_pickle():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/version", b"3\n")
    buf.seek(0)
    return buf


def test_clgrad_writes_torchs_format(device, tmp_path):
    """The file has torch's layout (one folder, data.pkl, data/<key>, byteorder, version,
    records 64-byte aligned) and reads back with views still sharing storage."""
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    base = clgrad.arange(24, dtype=clgrad.float32).reshape(4, 6)
    obj = {"model": m.state_dict(), "p": m[0].weight, "base": base, "t": base.t(),
           "bf": clgrad.tensor([1.5, -2.0], dtype=clgrad.bfloat16), "step": 3,
           "size": clgrad.Size([2, 3]), "dtype": clgrad.float16, "b": clgrad.tensor([True])}
    path = tmp_path / "ckpt.pt"
    clgrad.save(obj, path, _use_new_zipfile_serialization=True)
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        assert {"ckpt/data.pkl", "ckpt/byteorder", "ckpt/version"} <= set(names)
        assert all(n.startswith("ckpt/") for n in names)
        for info in z.infolist():
            header = 30 + len(info.filename) + len(info.extra)
            assert (info.header_offset + header) % 64 == 0, info.filename
    back = clgrad.load(path, map_location=device)
    assert back["t"]._storage is back["base"]._storage and back["t"].stride() == (1, 6)
    assert type(back["p"]) is nn.Parameter and back["p"].requires_grad
    assert back["bf"].float().tolist() == [1.5, -2.0] and back["bf"].dtype is clgrad.bfloat16
    assert back["size"] == clgrad.Size([2, 3]) and back["dtype"] is clgrad.float16
    assert back["step"] == 3 and back["b"].tolist() == [True]
    np.testing.assert_array_equal(back["model"]["2.weight"].numpy(), m[2].weight.detach().numpy())
    m2 = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    m2.load_state_dict(back["model"])
