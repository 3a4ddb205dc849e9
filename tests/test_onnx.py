"""clgrad.onnx.export: the ONNX file onnxruntime runs gives the module's outputs (an MLP, a CNN,
a transformer encoder layer, an LSTM), dynamic axes work, and an op without an ONNX form is
named in the error."""
import io

import numpy as np
import pytest

import clgrad
import clgrad.onnx
from clgrad import nn
import onnxruntime          # the test extra brings it (clgrad[onnx] brings onnx alone)


def run(model, args, **kw):
    buf = io.BytesIO()
    clgrad.onnx.export(model, args, buf, **kw)
    sess = onnxruntime.InferenceSession(buf.getvalue())
    return sess, sess.run(None, {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)})


def check(model, *args, **kw):
    sess, got = run(model, args, **kw)
    model.eval()
    with clgrad.no_grad():
        ref = clgrad.onnx._flatten(model(*args))
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r.numpy(), rtol=1e-4, atol=1e-5)
    return sess


def test_mlp_and_cnn(device):
    clgrad.manual_seed(0)
    sess = check(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Softmax(-1)),
                 clgrad.randn(2, 4), input_names=["x"], output_names=["probs"])
    assert [i.name for i in sess.get_inputs()] == ["x"]
    assert [o.name for o in sess.get_outputs()] == ["probs"]
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 10), nn.LogSoftmax(1))
    cnn.train()
    cnn(clgrad.randn(4, 1, 8, 8))              # running statistics that are not the defaults
    clgrad.onnx.export(cnn, (clgrad.randn(2, 1, 8, 8),), io.BytesIO())
    assert cnn.training                          # exported in eval mode, given back as it was
    check(cnn, clgrad.randn(2, 1, 8, 8))


class _Causal(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.enc(x, src_mask=mask, is_causal=True)


def test_transformer_encoder_layer_and_embedding(device):
    clgrad.manual_seed(0)
    check(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
          clgrad.randn(2, 5, 8))
    check(_Causal(), clgrad.randn(2, 5, 8))
    check(nn.Sequential(nn.Embedding(10, 4), nn.LayerNorm(4), nn.GELU(), nn.Linear(4, 4),
                        nn.SiLU()), clgrad.tensor([[1, 2, 3], [4, 5, 9]]))


def test_lstm(device):
    clgrad.manual_seed(0)
    check(nn.LSTM(4, 6, num_layers=2, batch_first=True), clgrad.randn(2, 3, 4))
    check(nn.LSTM(4, 5, bidirectional=True), clgrad.randn(3, 2, 4))


def test_dynamic_batch_and_errors(device, tmp_path):
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(72, 3))
    path = tmp_path / "m.onnx"
    clgrad.onnx.export(model, (clgrad.randn(2, 1, 8, 8),), str(path), input_names=["x"],
                       output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                       opset_version=17)
    sess = onnxruntime.InferenceSession(str(path))
    x = np.random.default_rng(0).standard_normal((5, 1, 8, 8)).astype(np.float32)
    (y,) = sess.run(None, {"x": x})
    with clgrad.no_grad():
        np.testing.assert_allclose(y, model(clgrad.tensor(x)).numpy(), rtol=1e-4, atol=1e-5)
    assert sess.get_inputs()[0].shape[0] == "batch"
    with pytest.raises(clgrad.onnx.UnsupportedOperatorError, match="no ONNX form for the op"
                                                                  "\\(s\\) Erfinv \\("):
        clgrad.onnx.export(lambda t: t.erfinv(), (clgrad.zeros(2),), io.BytesIO())
    assert not clgrad.onnx.is_in_onnx_export()
