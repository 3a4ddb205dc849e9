"""clgrad.nn bookkeeping: Parameter, Module registration and walking, state_dict round trips and
load_state_dict's errors, modes, conversions, hooks, repr, containers, initialisers and their
statistics, gradient clipping; the deprecated Container, DataParallel and SyncBatchNorm in one
process (tests/distributed_checks.py runs it on 2 ranks). Layer numerics are in test_nn_layers.py,
losses in test_nn_losses.py."""
import copy
import math
from collections import OrderedDict

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.nn import init
from helpers import to_np


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.scale = nn.Parameter(clgrad.ones(1))
        self.register_buffer("steps", clgrad.zeros(1))
        self.register_buffer("scratch", clgrad.zeros(2), persistent=False)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))

    def forward(self, x):
        return self.head(self.bn(self.fc1(x))) * self.scale


# ---- Parameter ---------------------------------------------------------------------------------
def test_parameter_shares_data_and_survives_ops():
    data = clgrad.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    assert isinstance(p, nn.Parameter) and isinstance(p, clgrad.Tensor)
    assert p.requires_grad and p.is_leaf and not data.requires_grad
    with clgrad.no_grad():
        data.add_(1)                      # shares storage and version counter with data
    assert p.tolist() == [2.0, 3.0] and p._version == data._version
    y = (p * 2 + 1).exp().sum()
    assert type(p * 2) is clgrad.Tensor and type(p.detach()) is clgrad.Tensor
    y.backward()
    np.testing.assert_allclose(to_np(p.grad), 2 * np.exp(2 * np.array([2.0, 3.0]) + 1), rtol=1e-5)
    assert not nn.Parameter(clgrad.zeros(1), requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    assert repr(nn.Parameter(clgrad.tensor([1.0]))) == \
        "Parameter containing:\ntensor([1.], requires_grad=True)"
    with pytest.raises(TypeError):
        nn.Parameter([1.0])


def test_parameter_deepcopy_and_data_assignment():
    p = nn.Parameter(clgrad.tensor([1.0, 2.0]))
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.requires_grad and q.tolist() == [1.0, 2.0]
    assert q._storage is not p._storage
    p.data = clgrad.tensor([5.0], dtype=clgrad.float64)
    assert type(p) is nn.Parameter and p.dtype is clgrad.float64 and p.tolist() == [5.0]


# ---- registration ------------------------------------------------------------------------------
def test_registration_and_walks():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "scale", "fc1.weight", "fc1.bias", "bn.weight", "bn.bias", "head.1.weight", "head.1.bias"]
    assert [n for n, _ in net.named_buffers()] == [
        "steps", "scratch", "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    assert [n for n, _ in net.named_children()] == ["fc1", "bn", "head"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "bn", "head", "head.0", "head.1"]
    assert len(list(net.parameters(recurse=False))) == 1
    assert [n for n, _ in net.named_parameters(prefix="model")][0] == "model.scale"
    assert net.get_submodule("head.1") is net.head[1]
    assert net.get_parameter("head.1.bias") is net.head[1].bias
    assert net.get_buffer("bn.running_var") is net.bn.running_var
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        net.get_submodule("head.nope")
    assert "fc1" in dir(net) and "scale" in dir(net)


def test_shared_modules_and_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4


def test_setattr_bookkeeping_and_errors():
    m = nn.Module()
    m.w = nn.Parameter(clgrad.zeros(2))
    m.w = None                                   # a parameter slot may be cleared
    assert "w" in m._parameters and m.w is None
    with pytest.raises(TypeError, match=r"cannot assign 'clgrad.Float32Tensor' as parameter 'w' "
                                        r"\(clgrad.nn.Parameter or None expected\)"):
        m.w = clgrad.zeros(2)
    m.sub = nn.ReLU()
    with pytest.raises(TypeError, match="as child module 'sub'"):
        m.sub = 3
    m.sub = nn.Parameter(clgrad.zeros(1))        # a parameter replaces the module
    assert "sub" not in m._modules and "sub" in m._parameters
    m.register_buffer("b", clgrad.zeros(1))
    m.b = clgrad.ones(1)                        # assigning a tensor to a buffer name updates it
    assert m._buffers["b"].tolist() == [1.0]
    with pytest.raises(TypeError, match="as buffer 'b'"):
        m.b = 3
    m.plain = 5
    assert m.plain == 5 and "plain" in m.__dict__
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        m.register_buffer("plain", clgrad.zeros(1))
    with pytest.raises(KeyError, match="parameter name can.+t contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(KeyError, match="empty string"):
        m.register_buffer("", None)
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor"):
        m.register_parameter("bad", _non_leaf())
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'missing'"):
        m.missing
    del m.b, m.sub, m.plain
    assert "b" not in m._buffers and "sub" not in m._parameters and not hasattr(m, "plain")

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(clgrad.zeros(1))
    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def _non_leaf():
    p = nn.Parameter(clgrad.zeros(1))
    q = p * 2
    q.__class__ = nn.Parameter                   # a Parameter with history
    return q


def test_buffer_marker():
    m = nn.Module()
    m.kept = nn.Buffer(clgrad.zeros(2))
    m.temp = nn.Buffer(clgrad.ones(1), persistent=False)
    assert list(m.state_dict()) == ["kept"]
    assert [n for n, _ in m.named_buffers()] == ["kept", "temp"]
    assert isinstance(m.kept, nn.Buffer) and type(m.kept) is clgrad.Tensor


# ---- state dict --------------------------------------------------------------------------------
def test_state_dict_round_trip():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd) == ["scale", "steps", "fc1.weight", "fc1.bias", "bn.weight", "bn.bias",
                        "bn.running_mean", "bn.running_var", "bn.num_batches_tracked",
                        "head.1.weight", "head.1.bias"]
    assert all(type(v) is clgrad.Tensor and not v.requires_grad for v in sd.values())
    assert type(a.state_dict(keep_vars=True)["scale"]) is nn.Parameter
    assert sd["fc1.weight"]._storage is a.fc1.weight._storage      # detached, not copied
    w_before = b.fc1.weight
    res = b.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    assert b.fc1.weight is w_before and type(b.fc1.weight) is nn.Parameter
    for k, v in b.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())
    x = clgrad.randn(5, 3)
    np.testing.assert_allclose(to_np(a(x)), to_np(b(x)), rtol=1e-6)


def test_load_state_dict_errors_and_non_strict():
    lin = nn.Linear(3, 2)
    with pytest.raises(RuntimeError) as e:
        lin.load_state_dict({"weight": clgrad.zeros(3, 3), "foo": clgrad.zeros(1)})
    assert str(e.value) == (
        'Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias". \n\t'
        'Unexpected key(s) in state_dict: "foo". \n\tsize mismatch for weight: copying a param '
        'with shape clgrad.Size([3, 3]) from checkpoint, the shape in current model is '
        'clgrad.Size([2, 3]).')
    res = lin.load_state_dict({"weight": clgrad.ones(2, 3), "foo": clgrad.zeros(1)}, strict=False)
    assert res.missing_keys == ["bias"] and res.unexpected_keys == ["foo"]
    assert lin.weight.sum().item() == 6.0
    with pytest.raises(RuntimeError, match="size mismatch for bias"):
        lin.load_state_dict({"bias": clgrad.zeros(5)}, strict=False)   # shapes always checked
    with pytest.raises(RuntimeError, match="expected clgrad.Tensor"):
        lin.load_state_dict({"weight": 1.0, "bias": clgrad.zeros(2)})
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        lin.load_state_dict([1, 2])
    seq = nn.Sequential(nn.Linear(2, 2))
    res = seq.load_state_dict({"0.weight": clgrad.zeros(2, 2), "0.bias": clgrad.zeros(2),
                               "1.weight": clgrad.zeros(1)}, strict=False)
    assert res.unexpected_keys == ["1.weight"]


def test_load_state_dict_assign_and_casts():
    lin = nn.Linear(2, 2)
    src = {"weight": clgrad.ones(2, 2, dtype=clgrad.float64), "bias": clgrad.zeros(2)}
    lin.load_state_dict(src)                       # copy_ casts into the existing parameter
    assert lin.weight.dtype is clgrad.float32 and lin.weight.sum().item() == 4.0
    lin.load_state_dict({"weight": clgrad.full((2, 2), 3.0), "bias": clgrad.zeros(2)},
                        assign=True)
    assert type(lin.weight) is nn.Parameter and lin.weight.requires_grad
    assert lin.weight.sum().item() == 12.0


# ---- modes and conversions ---------------------------------------------------------------------
def test_train_eval_requires_grad_zero_grad():
    net = Net()
    assert net.training and net.head[0].training
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    net(clgrad.randn(4, 3)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and p.grad.abs().sum().item() == 0 for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_to_and_dtype_casts(device):
    net = Net()
    params = list(net.parameters())
    net(clgrad.randn(4, 3)).sum().backward()
    for cast, dt in ((net.double, clgrad.float64), (net.half, clgrad.float16),
                     (net.bfloat16, clgrad.bfloat16), (net.float, clgrad.float32)):
        if dt is clgrad.float64 and not device.has_fp64:
            continue
        cast()
        assert all(p.dtype is dt for p in net.parameters())
        assert all(p.grad.dtype is dt for p in net.parameters())
        assert net.bn.running_mean.dtype is dt and net.steps.dtype is dt
        assert net.bn.num_batches_tracked.dtype is clgrad.int64     # integers are left alone
    assert all(a is b for a, b in zip(net.parameters(), params))     # the same objects
    assert net.to(clgrad.float32) is net
    net.to(device=str(clgrad.device(device)))
    net.to(clgrad.zeros(1))                         # device and dtype of a tensor
    with pytest.raises(TypeError, match="only accepts floating point"):
        net.to(clgrad.int64)
    with pytest.raises(TypeError, match="unexpected keyword"):
        net.to(colour="red")
    assert net.cpu() is net


def test_apply_and_deepcopy():
    net = Net()
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "BatchNorm1d", "ReLU", "Linear", "Sequential", "Net"]
    twin = copy.deepcopy(net)
    assert twin.fc1.weight is not net.fc1.weight and type(twin.fc1.weight) is nn.Parameter
    np.testing.assert_array_equal(twin.fc1.weight.detach().numpy(),
                                  net.fc1.weight.detach().numpy())


# ---- hooks -------------------------------------------------------------------------------------
def test_forward_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: calls.append("pre") or (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append("post") or out + 1)
    h3 = lin.register_forward_hook(lambda m, args, out: calls.append("first"), prepend=True)
    out = lin(clgrad.ones(1, 2))
    assert calls == ["pre", "first", "post"]
    np.testing.assert_allclose(to_np(out), to_np(lin.bias)[None] + 1, rtol=1e-6)
    for h in (h1, h2, h3):
        h.remove()
    calls.clear()
    lin(clgrad.ones(1, 2))
    assert calls == []
    # with_kwargs and always_call
    ident = nn.Identity()
    ident.forward = lambda x, scale=1.0: x * scale
    ident.register_forward_pre_hook(lambda m, a, kw: (a, {"scale": 3.0}), with_kwargs=True)
    ident.register_forward_hook(lambda m, a, kw, out: out + kw["scale"], with_kwargs=True)
    assert ident(clgrad.ones(1)).tolist() == [6.0]
    boom = nn.Module()
    boom.forward = lambda: 1 / 0
    seen = []
    boom.register_forward_hook(lambda m, a, out: seen.append(out), always_call=True)
    with pytest.raises(ZeroDivisionError):
        boom()
    assert seen == [None]
    bad = nn.Identity()
    bad.register_forward_pre_hook(lambda m, a, kw: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        bad(clgrad.ones(1))


def test_full_backward_hooks():
    lin = nn.Linear(3, 2)
    log = []
    lin.register_full_backward_pre_hook(lambda m, go: log.append(("pre", go[0].shape)))
    lin.register_full_backward_hook(
        lambda m, gi, go: log.append(("hook", gi[0].shape, go[0].shape)) or (gi[0] * 10,))
    x = clgrad.ones(4, 3, requires_grad=True)
    lin(x).sum().backward()
    assert log == [("pre", (4, 2)), ("hook", (4, 3), (4, 2))]
    expected = 10 * np.tile(to_np(lin.weight).sum(0), (4, 1))
    np.testing.assert_allclose(to_np(x.grad), expected, rtol=1e-5)
    assert lin.weight.grad is not None          # parameter gradients are not affected
    # inputs without grad: the hook still runs, with grad_input None
    got = []
    lin2 = nn.Linear(3, 2)
    lin2.register_full_backward_hook(lambda m, gi, go: got.append(gi))
    lin2(clgrad.ones(1, 3)).sum().backward()
    assert got == [(None,)]
    # a pre-hook may replace grad_output
    lin3 = nn.Linear(1, 1)
    lin3.register_full_backward_pre_hook(lambda m, go: (go[0] * 0,))
    xx = clgrad.ones(1, 1, requires_grad=True)
    lin3(xx).sum().backward()
    assert xx.grad.item() == 0.0 and lin3.weight.grad.item() == 0.0
    wrong = nn.Linear(1, 1)
    wrong.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but expected 1"):
        wrong(clgrad.ones(1, 1, requires_grad=True)).sum().backward()


# ---- repr and containers -----------------------------------------------------------------------
def test_repr_like_torch():
    net = nn.Sequential(OrderedDict([
        ("conv", nn.Conv2d(3, 8, 3, padding=1, bias=False)), ("bn", nn.BatchNorm2d(8)),
        ("act", nn.ReLU(inplace=True)), ("blocks", nn.ModuleList([nn.GELU()] * 2 + [nn.Tanh()])),
        ("flat", nn.Flatten()), ("fc", nn.Linear(8, 2))]))
    assert repr(net) == """Sequential(
  (conv): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
  (bn): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
  (act): ReLU(inplace=True)
  (blocks): ModuleList(
    (0-1): 2 x GELU(approximate='none')
    (2): Tanh()
  )
  (flat): Flatten(start_dim=1, end_dim=-1)
  (fc): Linear(in_features=8, out_features=2, bias=True)
)"""
    assert repr(nn.ModuleList()) == "ModuleList()"
    assert repr(nn.Dropout(0.3)) == "Dropout(p=0.3, inplace=False)"
    assert repr(nn.Embedding(5, 2, padding_idx=-1, max_norm=1.0)) == \
        "Embedding(5, 2, padding_idx=4, max_norm=1.0)"
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"


def test_sequential_indexing():
    a, b, c = nn.ReLU(), nn.Tanh(), nn.Sigmoid()
    seq = nn.Sequential(a, b, c)
    assert seq[0] is a and seq[-1] is c and len(seq) == 3 and list(seq) == [a, b, c]
    assert isinstance(seq[1:], nn.Sequential) and list(seq[1:]) == [b, c]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    del seq[0]
    assert list(seq._modules) == ["0", "1"] and seq[0] is b
    seq.append(a).insert(0, c)
    assert list(seq) == [c, b, c, a]
    seq[1] = a
    assert seq[1] is a
    assert len(seq + nn.Sequential(b)) == 5
    assert seq.extend([b]) is seq and len(seq) == 5
    x = clgrad.tensor([-1.0, 0.5])
    np.testing.assert_allclose(to_np(nn.Sequential(nn.ReLU(), nn.Tanh())(x)),
                               np.tanh(np.maximum([-1.0, 0.5], 0)), rtol=1e-6)


def test_modulelist_and_moduledict():
    ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    ml += [nn.Sigmoid()]
    ml.insert(1, nn.GELU())
    assert [type(m).__name__ for m in ml] == ["ReLU", "GELU", "Tanh", "Sigmoid"]
    assert type(ml.pop(0)).__name__ == "ReLU" and len(ml) == 3
    assert list(ml._modules) == ["0", "1", "2"]
    assert isinstance(ml[:2], nn.ModuleList) and len(ml[:2]) == 2
    with pytest.raises(TypeError, match="should be called with an iterable"):
        ml.extend(3)
    with pytest.raises(NotImplementedError, match="missing the required \"forward\""):
        ml(clgrad.ones(1))
    md = nn.ModuleDict([("a", nn.ReLU())])
    md["b"] = nn.Linear(1, 1)
    md.update({"c": nn.Tanh()})
    assert list(md) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert len(list(md.parameters())) == 2
    assert type(md.pop("a")).__name__ == "ReLU" and list(md.keys()) == ["b", "c"]
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        md.update([("x", nn.ReLU(), 1)])
    md.clear()
    assert len(md) == 0
    pl = nn.ParameterList([clgrad.zeros(2), nn.Parameter(clgrad.ones(1))])
    pl.append(clgrad.zeros(3))
    assert [p.shape for p in pl] == [(2,), (1,), (3,)] and all(
        type(p) is nn.Parameter for p in pl)
    assert len(list(pl.parameters())) == 3
    pd = nn.ParameterDict({"w": clgrad.zeros(2)})
    pd.update([("b", nn.Parameter(clgrad.ones(1)))])
    pd["none"] = None
    assert list(pd) == ["w", "b", "none"] and "b" in pd and len(pd) == 3
    assert type(pd["w"]) is nn.Parameter and pd["w"].requires_grad
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"]
    assert repr(pd).splitlines()[1:] == [
        "    (w): Parameter containing: [clgrad.float32 of size 2]",
        "    (b): Parameter containing: [clgrad.float32 of size 1]", "    (none): None", ")"]
    assert pd.get("missing") is None and pd.pop("none") is None and len(pd) == 2
    holder = nn.Module()
    holder.params = pd
    assert [n for n, _ in holder.named_parameters()] == ["params.w", "params.b"]
    assert set(holder.state_dict()) == {"params.w", "params.b"}
    with pytest.raises(TypeError, match="ParameterDict holds tensors"):
        pd["x"] = 3.0
    with pytest.raises(KeyError, match=r'contain "\."'):
        pd["a.b"] = clgrad.zeros(1)
    with pytest.raises(ValueError, match="element #0 should be a"):
        pd.update([("x",)])
    pd.clear()
    assert len(pd) == 0


# ---- initialisation ----------------------------------------------------------------------------
def test_calculate_gain_and_fans():
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("conv2d") == 1 and init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("leaky_relu") == math.sqrt(2 / (1 + 0.01 ** 2))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", True)
    assert init._calculate_fan_in_and_fan_out(clgrad.empty(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(clgrad.empty(3))
    with pytest.raises(ValueError, match="Mode fan_mid not supported"):
        init.kaiming_normal_(clgrad.empty(3, 3), mode="fan_mid")


def _stats(t):
    a = to_np(t).astype(np.float64).ravel()
    return a.min(), a.max(), a.mean(), a.std()


def test_init_statistics():
    clgrad.manual_seed(0)
    n_out, n_in = 200, 300
    lo, hi, mean, std = _stats(init.uniform_(clgrad.empty(n_out, n_in), -2, 3))
    assert -2 <= lo and hi < 3 and abs(mean - 0.5) < 0.05 and abs(std - 5 / math.sqrt(12)) < 0.02
    _, _, mean, std = _stats(init.normal_(clgrad.empty(n_out, n_in), 1.0, 0.5))
    assert abs(mean - 1.0) < 0.01 and abs(std - 0.5) < 0.01
    bound = math.sqrt(6 / n_in)                                    # kaiming, relu, fan_in
    lo, hi, _, std = _stats(init.kaiming_uniform_(clgrad.empty(n_out, n_in), nonlinearity="relu"))
    assert -bound <= lo and hi <= bound and abs(std - bound / math.sqrt(3)) < 0.01 * bound
    _, _, _, std = _stats(init.kaiming_normal_(clgrad.empty(n_out, n_in), mode="fan_out",
                                               nonlinearity="relu"))
    assert abs(std - math.sqrt(2 / n_out)) < 0.02 * math.sqrt(2 / n_out)
    a = math.sqrt(6 / (n_in + n_out))
    lo, hi, _, _ = _stats(init.xavier_uniform_(clgrad.empty(n_out, n_in)))
    assert -a <= lo and hi <= a and hi > 0.95 * a
    _, _, _, std = _stats(init.xavier_normal_(clgrad.empty(n_out, n_in), gain=2.0))
    assert abs(std - 2 * math.sqrt(2 / (n_in + n_out))) < 0.02 * std
    lo, hi, mean, std = _stats(init.trunc_normal_(clgrad.empty(n_out, n_in), std=1.0))
    # N(0, 1) truncated to [-2, 2] has std 0.8796
    assert -2 <= lo and hi <= 2 and abs(mean) < 0.01 and abs(std - 0.8796) < 0.01
    lo, hi, mean, _ = _stats(init.trunc_normal_(clgrad.empty(10000), mean=3.0, std=0.5, a=2.5,
                                                b=3.25))
    assert 2.5 <= lo and hi <= 3.25 and lo < 2.52 and hi > 3.23
    assert init.zeros_(clgrad.empty(3)).tolist() == [0.0] * 3
    assert init.ones_(clgrad.empty(2)).tolist() == [1.0, 1.0]
    assert init.constant_(clgrad.empty(2), 0.25).tolist() == [0.25, 0.25]
    assert init.eye_(clgrad.empty(2, 2)).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(clgrad.empty(0, 3))


def test_init_is_reproducible_and_works_on_parameters():
    g = clgrad.Generator().manual_seed(5)
    p = nn.Parameter(clgrad.empty(4, 4))
    init.kaiming_uniform_(p, generator=g)
    q = init.kaiming_uniform_(clgrad.empty(4, 4), generator=clgrad.Generator().manual_seed(5))
    assert p.tolist() == q.tolist() and p.requires_grad and p.grad_fn is None
    clgrad.manual_seed(3)
    a = nn.Linear(5, 5).weight.tolist()
    clgrad.manual_seed(3)
    assert nn.Linear(5, 5).weight.tolist() == a


def test_default_initialisation_of_layers():
    clgrad.manual_seed(0)
    lin = nn.Linear(400, 300)
    b = 1 / math.sqrt(400)                    # kaiming_uniform_(a=sqrt(5)) gives 1/sqrt(fan_in)
    lo, hi, _, std = _stats(lin.weight)
    assert -b <= lo and hi <= b and hi > 0.99 * b and abs(std - b / math.sqrt(3)) < 0.01 * b
    lo, hi, _, _ = _stats(lin.bias)
    assert -b <= lo and hi <= b and hi > 0.9 * b
    conv = nn.Conv2d(16, 32, 3, groups=2)
    b = 1 / math.sqrt(8 * 9)
    assert conv.weight.shape == (32, 8, 3, 3)
    lo, hi, _, _ = _stats(conv.weight)
    assert -b <= lo and hi <= b and hi > 0.98 * b
    lo, hi, _, _ = _stats(conv.bias)
    assert -b <= lo and hi <= b
    tconv = nn.ConvTranspose2d(16, 32, 3, groups=2)
    assert tconv.weight.shape == (16, 16, 3, 3)
    b = 1 / math.sqrt(16 * 9)                    # torch's fan_in of a transposed weight: dim 1
    assert _stats(tconv.weight)[1] <= b and _stats(tconv.bias)[1] <= b
    _, _, mean, std = _stats(nn.Embedding(1000, 50).weight)
    assert abs(mean) < 0.01 and abs(std - 1) < 0.01
    bn = nn.BatchNorm1d(3)
    assert bn.weight.tolist() == [1.0] * 3 and bn.bias.tolist() == [0.0] * 3
    assert bn.running_var.tolist() == [1.0] * 3 and bn.num_batches_tracked.item() == 0
    ln = nn.LayerNorm((2, 3), bias=False)
    assert ln.weight.shape == (2, 3) and ln.bias is None


# ---- gradient clipping -------------------------------------------------------------------------
def _params_with_grads(grads):
    ps = []
    for g in grads:
        p = nn.Parameter(clgrad.zeros(len(g)))
        p.grad = clgrad.tensor(g)
        ps.append(p)
    return ps


def test_clip_grad_norm():
    grads = [[3.0, 4.0], [12.0]]
    ps = _params_with_grads(grads)
    total = nn.utils.clip_grad_norm_(ps, 6.5)
    assert abs(total.item() - 13.0) < 1e-5
    scale = 6.5 / (13.0 + 1e-6)
    np.testing.assert_allclose(to_np(ps[0].grad), np.array([3.0, 4.0]) * scale, rtol=1e-6)
    ps = _params_with_grads(grads)
    assert abs(nn.utils.clip_grad_norm_(ps, 100.0).item() - 13.0) < 1e-5
    assert ps[1].grad.tolist() == [12.0]                       # below the limit: unchanged
    ps = _params_with_grads([[3.0, -4.0], [1.0]])
    total = nn.utils.clip_grad_norm_(ps, 2.0, norm_type=math.inf)
    assert total.item() == 4.0 and ps[0].grad.tolist()[1] == pytest.approx(-2.0, rel=1e-5)
    total = nn.utils.clip_grad_norm_(_params_with_grads([[1.0, -2.0]]), 1.0, norm_type=1)
    assert total.item() == 3.0
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(_params_with_grads([[float("inf")]]), 1.0,
                                 error_if_nonfinite=True)
    assert nn.utils.clip_grad_norm_([nn.Parameter(clgrad.zeros(1))], 1.0).item() == 0.0
    single = _params_with_grads([[6.0, 8.0]])[0]
    nn.utils.clip_grad_norm_(single, 5.0)                      # a single tensor is accepted
    assert single.grad.norm().item() == pytest.approx(5.0, rel=1e-5)


def test_clip_grad_value_and_vector_conversion():
    ps = _params_with_grads([[-3.0, 0.5], [2.0]])
    nn.utils.clip_grad_value_(ps, 1.0)
    assert ps[0].grad.tolist() == [-1.0, 0.5] and ps[1].grad.tolist() == [1.0]
    lin = nn.Linear(2, 2)
    vec = nn.utils.parameters_to_vector(lin.parameters())
    assert vec.shape == (6,)
    nn.utils.vector_to_parameters(clgrad.arange(6).float(), lin.parameters())
    assert lin.weight.tolist() == [[0.0, 1.0], [2.0, 3.0]] and lin.bias.tolist() == [4.0, 5.0]
    assert lin.weight.requires_grad


def test_containers_parallel_and_sync_batchnorm(device):
    lin = nn.Linear(2, 1).to(device)
    with pytest.warns(UserWarning, match="deprecated"):
        c = nn.Container(fc=lin)
    assert c.fc is lin
    dp = nn.DataParallel(lin)
    x = clgrad.ones(4, 2, device=device)
    np.testing.assert_array_equal(dp(x).detach().numpy(), lin(x).detach().numpy())
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    with pytest.raises(NotImplementedError, match="DistributedDataParallel"):
        nn.DataParallel(lin, device_ids=[0, 1])
    assert nn.NLLLoss2d()(F.log_softmax(clgrad.zeros(1, 2, 2, 2, device=device), 1),
                          clgrad.zeros(1, 2, 2, dtype=clgrad.int64, device=device)).item() > 0
    # without a process group SyncBatchNorm is a batch norm, statistics included
    x = clgrad.randn(4, 3, 5, device=device)
    sbn, bn = nn.SyncBatchNorm(3).to(device), nn.BatchNorm1d(3).to(device)
    np.testing.assert_allclose(sbn(x).detach().numpy(), bn(x).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(sbn.running_var.numpy(), bn.running_var.numpy(), rtol=1e-6)
    net = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Conv2d(1, 2, 1), bn))
    assert type(net[1]) is nn.SyncBatchNorm and net[1].weight is bn.weight
    assert net[1].running_mean is bn.running_mean
