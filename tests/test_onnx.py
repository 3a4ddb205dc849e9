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
    if hasattr(model, "eval"):
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


def test_average_pools_and_means(device):
    clgrad.manual_seed(0)
    check(nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.AvgPool2d(2), nn.ReLU(),
                        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(3, 2)),
          clgrad.randn(2, 1, 8, 8))
    check(nn.Sequential(nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True,
                                     count_include_pad=False), nn.AdaptiveAvgPool2d((1, 5))),
          clgrad.randn(2, 1, 9, 9))
    check(lambda x: (x.mean(-1, keepdim=True), x.sum((0, 2))), clgrad.randn(2, 3, 4))
    check(nn.Sequential(nn.ConvTranspose2d(2, 4, 3, stride=2, padding=1, output_padding=1,
                                           groups=2), nn.Tanh()), clgrad.randn(1, 2, 5, 5))
    check(nn.ConvTranspose1d(3, 2, 4, stride=2, dilation=2), clgrad.randn(2, 3, 6))
    with pytest.raises(clgrad.onnx.UnsupportedOperatorError, match="from \\(5, 5\\) to "
                                                                  "\\(2, 2\\)"):
        clgrad.onnx.export(nn.AdaptiveAvgPool2d((2, 2)), (clgrad.randn(1, 1, 5, 5),),
                           io.BytesIO())


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


class RNNModel(nn.Module):
    """pytorch/examples' word_language_model RNNModel (its main.py exports it with
    torch.onnx.export(model, (dummy_input, hidden), path))."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ["LSTM", "GRU"]:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return nn.functional.log_softmax(decoded, dim=1), hidden


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
def test_word_language_models(device, kind):
    clgrad.manual_seed(0)
    model = RNNModel(kind, 20, 8, 8, 2)
    dummy_input = clgrad.LongTensor(5 * 1).zero_().view(-1, 1)
    shape = (2, 1, 8)
    hidden = (clgrad.randn(*shape), clgrad.randn(*shape)) if kind == "LSTM" else \
        clgrad.randn(*shape)
    buf = io.BytesIO()
    clgrad.onnx.export(model, (dummy_input, hidden), buf)
    sess = onnxruntime.InferenceSession(buf.getvalue())
    inp = clgrad.randint(0, 20, (5, 1))
    flat = [inp] + list(hidden if kind == "LSTM" else (hidden,))
    assert len(sess.get_inputs()) == len(flat)
    got = sess.run(None, {i.name: t.numpy() for i, t in zip(sess.get_inputs(), flat)})
    model.eval()
    with clgrad.no_grad():
        ref = clgrad.onnx._flatten(model(inp, hidden))
    assert len(got) == len(ref) == (3 if kind == "LSTM" else 2)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r.numpy(), rtol=1e-4, atol=1e-5)
