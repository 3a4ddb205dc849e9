"""torch.onnx's `export` for clgrad modules: one forward call is traced op by op (through the
op-level hook, `clgrad.autograd.node.hooks.op`, as the profiler sees ops) and written as an ONNX
model with the `onnx` package (`pip install clgrad[onnx]`). Parameters, buffers and any tensor the
forward reads that no traced op made become initializers.

Supported ops (those of MLPs, CNNs and transformer encoders): linear / addmm, mm, bmm, matmul,
+ - * / with tensors and numbers, neg, relu, gelu, silu, tanh, sigmoid, exp, log, sqrt, rsqrt, abs,
square, clamp, softmax, log_softmax, sum / mean over dims, layer_norm, batch_norm (eval, as traced),
conv1d/2d and their transposes, max_pool2d, avg_pool2d, adaptive_avg_pool2d (to sizes that divide), tril / triu, where, embedding (index_select), LSTM, GRU and RNN layers, view / reshape / flatten, transpose / t /
permute, unsqueeze / squeeze, expand, slicing and select, cat, stack, split, addcmul and clone.
Any other op raises an error that names it. Shapes are those of the traced call; `dynamic_axes`
names the marked input and output dims, and reshapes keep a leading dim that is unchanged as
"copy this dim" (0), so a dynamic batch dim survives flatten and the heads' reshapes of the
layers above; a reshape that merges the batch dim with another is baked in.

>>> import clgrad
>>> clgrad.onnx.is_in_onnx_export()
False
"""
import io
import os

import numpy as np

from . import dtypes
from .tensor import Tensor
from .autograd.node import hooks

__all__ = ["export", "is_in_onnx_export", "OnnxExporterError", "UnsupportedOperatorError"]

_exporting = False


class OnnxExporterError(RuntimeError):
    """The export failed."""


class UnsupportedOperatorError(OnnxExporterError):
    """The traced forward used an op that has no ONNX form here."""


class errors:
    """torch.onnx.errors' names."""
    OnnxExporterError = OnnxExporterError
    UnsupportedOperatorError = UnsupportedOperatorError


def is_in_onnx_export():
    return _exporting


_ONNX_DTYPES = {"float32": 1, "uint8": 2, "int8": 3, "int16": 5, "int32": 6, "int64": 7,
                "bool": 9, "float16": 10, "float64": 11, "bfloat16": 16}


class _Graph:
    def __init__(self, helper, numpy_helper, opset):
        self.h, self.nh, self.opset = helper, numpy_helper, opset
        self.names = {}           # id(tensor) -> value name
        self.keep = []            # the traced tensors, alive so their ids stay theirs
        self.nodes, self.inits = [], []
        self.n = 0

    def fresh(self, base):
        self.n += 1
        return f"{base}_{self.n}"

    def const(self, array, base="const"):
        name = self.fresh(base)
        self.inits.append(self.nh.from_array(np.asarray(array), name))
        return name

    def value(self, t):
        """The name of a tensor argument: an op's output, an input, else an initializer."""
        name = self.names.get(id(t))
        if name is None:
            a = t.detach().float().numpy() if t.dtype is dtypes.bfloat16 else t.detach().numpy()
            name = self.names[id(t)] = self.const(a, "init")
            self.keep.append(t)
        return name

    def scalar(self, v, like):
        """A number as a 0-d initializer of the dtype of tensor `like`."""
        npd = np.float32 if like.dtype is dtypes.bfloat16 else like.dtype.np
        return self.const(np.array(v, dtype=npd), "scalar")

    def node(self, op, inputs, outputs=None, **attrs):
        outs = outputs or [self.fresh(op.lower())]
        self.nodes.append(self.h.make_node(op, inputs, outs, name=self.fresh(op), **attrs))
        return outs[0] if len(outs) == 1 else outs

    def ints(self, values):
        return self.const(np.array(list(values), dtype=np.int64), "shape")


# ---- each traced op as ONNX nodes: (graph, args, outputs) -> output names ------------------------
def _binary(op):
    def conv(g, args, outs):
        a, b = args[0], args[1]
        like = a if isinstance(a, Tensor) else b
        na = g.value(a) if isinstance(a, Tensor) else g.scalar(a, like)
        nb = g.value(b) if isinstance(b, Tensor) else g.scalar(b, like)
        if len(args) > 2 and args[2] not in (None, 1):          # alpha
            nb = g.node("Mul", [nb, g.scalar(args[2], like)])
        return g.node(op, [na, nb])
    return conv


def _unary(op, **attrs):
    return lambda g, args, outs: g.node(op, [g.value(args[0])], **attrs)


def _reshape(g, args, outs):
    x, shape = args[0], list(outs[0].shape)
    target = []
    for i, s in enumerate(shape):
        same = i < x.dim() and x.shape[i] == s and all(
            x.shape[j] == shape[j] for j in range(i))
        target.append(0 if same else s)
    if target.count(-1) == 0 and 0 not in target:
        target = shape
    return g.node("Reshape", [g.value(x), g.ints(target)])


def _transpose(g, args, outs):
    x, d0, d1 = args[0], args[1], args[2]
    perm = list(range(x.dim()))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return g.node("Transpose", [g.value(x)], perm=perm)


def _softmax(op):
    return lambda g, args, outs: g.node(op, [g.value(args[0])],
                                        axis=args[1] % max(args[0].dim(), 1))


def _addmm(g, args, outs):
    bias, a, b = args[0], args[1], args[2]
    beta = args[3] if len(args) > 3 else 1
    alpha = args[4] if len(args) > 4 else 1
    return g.node("Gemm", [g.value(a), g.value(b), g.value(bias)], alpha=float(alpha),
                  beta=float(beta))


def _reduce(op):
    def conv(g, args, outs):
        x, dims = args[0], args[1]
        keep = int(bool(args[2])) if len(args) > 2 else 0
        dims = list(range(x.dim())) if dims is None or dims == () else list(dims)
        if op != "ReduceSum" and g.opset < 18:         # axes were an attribute before opset 18
            return g.node(op, [g.value(x)], axes=dims, keepdims=keep)
        return g.node(op, [g.value(x), g.ints(dims)], keepdims=keep)
    return conv


def _conv(g, args, outs):
    x, w, b, stride, padding, dilation, transposed, _out_size, groups = args[:9]
    ins = [g.value(x), g.value(w)] + ([g.value(b)] if b is not None else [])
    if transposed:               # torch's weight (in, out / groups, k...) is ONNX's layout too
        spatial = range(x.dim() - 2)
        extra = [outs[0].shape[2 + i] - ((x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] +
                                         dilation[i] * (w.shape[2 + i] - 1) + 1) for i in spatial]
        return g.node("ConvTranspose", ins, strides=list(stride), pads=list(padding) * 2,
                      dilations=list(dilation), group=int(groups), output_padding=extra)
    return g.node("Conv", ins, strides=list(stride), pads=list(padding) * 2,
                  dilations=list(dilation), group=int(groups))


def _maxpool(g, args, outs):
    x, kernel, stride, padding, dilation = args[:5]
    ceil = bool(args[6]) if len(args) > 6 else False
    out = g.node("MaxPool", [g.value(x)], kernel_shape=list(kernel), strides=list(stride),
                 pads=list(padding) * 2, dilations=list(dilation), ceil_mode=int(ceil))
    return [out, None] if len(outs) > 1 else out     # torch's indices have no ONNX form here


def _avgpool(g, args, outs):
    x, kernel, stride, padding, out_hw, include_pad, divisor = args[:7]
    if divisor:
        raise UnsupportedOperatorError("onnx export: avg_pool2d with divisor_override is not "
                                       "supported")
    floor = [(x.shape[2 + i] + 2 * padding[i] - kernel[i]) // stride[i] + 1 for i in range(2)]
    ceil = int(any(o > f for o, f in zip(out_hw, floor)))
    return g.node("AveragePool", [g.value(x)], kernel_shape=list(kernel), strides=list(stride),
                  pads=list(padding) * 2, count_include_pad=int(bool(include_pad)),
                  ceil_mode=ceil)


def _adaptive_avgpool(g, args, outs):
    x, out_hw = args[0], tuple(args[1])
    H, W = x.shape[2], x.shape[3]
    if out_hw == (1, 1):
        return g.node("GlobalAveragePool", [g.value(x)])
    if H % out_hw[0] or W % out_hw[1]:
        raise UnsupportedOperatorError(
            f"onnx export: adaptive_avg_pool2d from {(H, W)} to {out_hw} (only sizes that "
            f"divide the input, which are plain average pools)")
    k = [H // out_hw[0], W // out_hw[1]]
    return g.node("AveragePool", [g.value(x)], kernel_shape=k, strides=k)


def _layer_norm(g, args, outs):
    x, w, b, nd, eps = args
    ins = [g.value(x)]
    ins.append(g.value(w) if w is not None else g.const(np.ones(x.shape[-nd:], np.float32)))
    ins.append(g.value(b) if b is not None else g.const(np.zeros(x.shape[-nd:], np.float32)))
    return g.node("LayerNormalization", ins, axis=-nd, epsilon=float(eps))


def _slice(g, args, outs):
    x, dim, start, end, step = args
    return g.node("Slice", [g.value(x), g.ints([start]), g.ints([end]), g.ints([dim]),
                            g.ints([step])])


def _select(g, args, outs):
    x, dim, index = args
    return g.node("Gather", [g.value(x), g.const(np.array(index, np.int64), "index")], axis=dim)


def _split(g, args, outs):
    x, sizes, dim = args
    return g.node("Split", [g.value(x), g.ints(sizes)], [g.fresh("split") for _ in sizes],
                  axis=dim)


def _unbind(g, args, outs):
    x, dim = args
    parts = g.node("Split", [g.value(x), g.ints([1] * x.shape[dim])],
                   [g.fresh("split") for _ in range(x.shape[dim])], axis=dim)
    parts = parts if isinstance(parts, list) else [parts]
    return [g.node("Squeeze", [p, g.ints([dim])]) for p in parts]


def _clamp(g, args, outs):
    x, lo, hi = args[0], args[1], args[2] if len(args) > 2 else None
    ins = [g.value(x), g.scalar(lo, x) if lo is not None else "",
           g.scalar(hi, x) if hi is not None else ""]
    return g.node("Clip", ins)


def _addcmul(g, args, outs):
    a, b, c = args[0], args[1], args[2]
    value = args[3] if len(args) > 3 else 1
    prod = g.node("Mul", [g.value(b), g.value(c)])
    if value != 1:
        prod = g.node("Mul", [prod, g.scalar(value, b)])
    return g.node("Add", [g.value(a), prod])


def _gelu(g, args, outs):
    x = g.value(args[0])
    approx = args[1] if len(args) > 1 else "none"
    if approx == "tanh":
        raise UnsupportedOperatorError("onnx export: gelu(approximate='tanh') is not supported")
    # 0.5 x (1 + erf(x / sqrt 2)): every opset has Erf
    e = g.node("Erf", [g.node("Div", [x, g.scalar(np.sqrt(2.0), args[0])])])
    return g.node("Mul", [g.node("Mul", [x, g.scalar(0.5, args[0])]),
                          g.node("Add", [e, g.scalar(1.0, args[0])])])


def _lstm_layer(g, args, outs):
    """clgrad's fused LSTM layer (the input projection already made, biases included) as an
    ONNX LSTM whose input weight is the permutation from torch's gate order (i, f, g, o) to
    ONNX's (i, o, f, c) and whose recurrent weight is w_hh in ONNX's order."""
    proj, w_hh, h0, c0, reverse = args
    H = w_hh.shape[1]
    order = np.concatenate([np.arange(H) + k * H for k in (0, 3, 1, 2)])
    w = np.eye(4 * H, dtype=np.float32)[order][None]
    r = g.node("Unsqueeze", [g.node("Gather", [g.value(w_hh), g.const(order)], axis=0),
                             g.ints([0])])
    h = g.node("Unsqueeze", [g.value(h0), g.ints([0])])
    c = g.node("Unsqueeze", [g.value(c0), g.ints([0])])
    y, yh, yc = g.node("LSTM", [g.value(proj), g.const(w, "lstm_w"), r, "", "", h, c],
                       [g.fresh("lstm_y"), g.fresh("lstm_h"), g.fresh("lstm_c")],
                       hidden_size=H, direction="reverse" if reverse else "forward")
    return [g.node("Squeeze", [y, g.ints([1])]), g.node("Squeeze", [yh, g.ints([0])]),
            g.node("Squeeze", [yc, g.ints([0])])]


def _lstm_stack(g, args, outs):
    """clgrad's stacked LSTM (ops/lstm_stack.py) as one ONNX LSTM per layer: weights and both
    biases with their gates reordered from torch's (i, f, g, o) to ONNX's (i, o, f, c)."""
    x, h0, c0, *weights = args
    H = weights[1].shape[1]
    order = g.const(np.concatenate([np.arange(H) + k * H for k in (0, 3, 1, 2)]))

    def gates(t):                          # t's rows in ONNX's gate order, with a leading 1
        return g.node("Unsqueeze", [g.node("Gather", [g.value(t), order], axis=0),
                                    g.ints([0])])
    seq, hs, cs = g.value(x), [], []
    for layer in range(len(weights) // 4):
        w_ih, w_hh, b_ih, b_hh = weights[4 * layer:4 * layer + 4]
        b = g.node("Concat", [gates(b_ih), gates(b_hh)], axis=1)
        at = g.const(np.array([layer]))
        y, yh, yc = g.node("LSTM", [seq, gates(w_ih), gates(w_hh), b, "",
                                    g.node("Gather", [g.value(h0), at], axis=0),
                                    g.node("Gather", [g.value(c0), at], axis=0)],
                           [g.fresh("lstm_y"), g.fresh("lstm_h"), g.fresh("lstm_c")],
                           hidden_size=H, direction="forward")
        seq = g.node("Squeeze", [y, g.ints([1])])
        hs.append(yh)
        cs.append(yc)
    return [seq, g.node("Concat", hs, axis=0), g.node("Concat", cs, axis=0)]


def _gru_layer(g, args, outs):
    """clgrad's fused GRU layer (input projection with b_ih made) as an ONNX GRU with
    linear_before_reset=1 (torch's form), gates reordered from torch's (r, z, n) to ONNX's
    (z, r, h), b_hh as the recurrent bias."""
    proj, w_hh, b_hh, h0, reverse = args
    H = w_hh.shape[1]
    order = np.concatenate([np.arange(H) + k * H for k in (1, 0, 2)])
    w = np.eye(3 * H, dtype=np.float32)[order][None]
    r = g.node("Unsqueeze", [g.node("Gather", [g.value(w_hh), g.const(order)], axis=0),
                             g.ints([0])])
    rb = g.node("Gather", [g.value(b_hh), g.const(order)], axis=0) if b_hh is not None \
        else g.const(np.zeros(3 * H, np.float32))
    b = g.node("Unsqueeze", [g.node("Concat", [g.const(np.zeros(3 * H, np.float32)), rb],
                                    axis=0), g.ints([0])])
    h = g.node("Unsqueeze", [g.value(h0), g.ints([0])])
    y, yh = g.node("GRU", [g.value(proj), g.const(w, "gru_w"), r, b, "", h],
                   [g.fresh("gru_y"), g.fresh("gru_h")], hidden_size=H, linear_before_reset=1,
                   direction="reverse" if reverse else "forward")
    return [g.node("Squeeze", [y, g.ints([1])]), g.node("Squeeze", [yh, g.ints([0])])]


def _rnn_layer(g, args, outs):
    """clgrad's fused Elman RNN layer (input projection with both biases made) as an ONNX
    RNN whose input weight is the identity."""
    proj, w_hh, h0, reverse, nonlinearity = args
    H = w_hh.shape[1]
    r = g.node("Unsqueeze", [g.value(w_hh), g.ints([0])])
    h = g.node("Unsqueeze", [g.value(h0), g.ints([0])])
    y, yh = g.node("RNN", [g.value(proj), g.const(np.eye(H, dtype=np.float32)[None], "rnn_w"),
                           r, "", "", h], [g.fresh("rnn_y"), g.fresh("rnn_h")], hidden_size=H,
                   activations=["Relu" if nonlinearity == "relu" else "Tanh"],
                   direction="reverse" if reverse else "forward")
    return [g.node("Squeeze", [y, g.ints([1])]), g.node("Squeeze", [yh, g.ints([0])])]


def _fused_attention(g, args, outs):
    """The fused attention kernel's op as MatMul, Softmax, MatMul (dropout off, as in eval)."""
    q, k, v, mask, causal, scale, groups, Hq, p = args
    if groups != 1 or p:
        raise UnsupportedOperatorError("onnx export: FusedAttention with grouped keys or "
                                       "dropout is not supported")
    N, L, _ = q.shape
    S = k.shape[1]
    scores = g.node("Mul", [g.node("MatMul", [g.value(q), g.node(
        "Transpose", [g.value(k)], perm=[0, 2, 1])]), g.scalar(float(scale), q)])
    if mask is not None:
        m = g.node("Expand", [g.value(mask), g.ints([N // Hq, Hq, L, S])])
        scores = g.node("Add", [scores, g.node("Reshape", [m, g.ints([N, L, S])])])
    if causal:
        tri = np.where(np.tril(np.ones((L, S), bool)), 0.0, -np.inf).astype(np.float32)
        scores = g.node("Add", [scores, g.const(tri, "causal")])
    return g.node("MatMul", [g.node("Softmax", [scores], axis=-1), g.value(v)])


def _causal_softmax(g, args, outs):
    """The causal attention scores' softmax as the -inf mask added (a constant), then Softmax."""
    x, first = args
    L, S = x.shape[-2], x.shape[-1]
    tri = np.where(np.tril(np.ones((L, S), bool), first), 0.0, -np.inf).astype(np.float32)
    return g.node("Softmax", [g.node("Add", [g.value(x), g.const(tri, "causal")])], axis=-1)


def _where(g, args, outs):
    cond, a, b = args[:3]
    like = outs[0]
    na = g.value(a) if isinstance(a, Tensor) else g.scalar(a, like)
    nb = g.value(b) if isinstance(b, Tensor) else g.scalar(b, like)
    return g.node("Where", [g.value(cond), na, nb])


def _tri(upper):
    def conv(g, args, outs):
        k = args[1] if len(args) > 1 else 0
        return g.node("Trilu", [g.value(args[0]), g.const(np.array(k, np.int64), "k")],
                      upper=upper)
    return conv


CONVERTERS = {
    "Where": _where, "Tril": _tri(0), "Triu": _tri(1),
    "LSTMLayer": _lstm_layer, "LSTMStack": _lstm_stack, "GRULayer": _gru_layer, "RNNLayer": _rnn_layer, "FusedAttention": _fused_attention,
    "Add": _binary("Add"), "Sub": _binary("Sub"), "Mul": _binary("Mul"),
    "Div": _binary("Div"), "Neg": _unary("Neg"), "Relu": _unary("Relu"),
    "Tanh": _unary("Tanh"), "Sigmoid": _unary("Sigmoid"), "Exp": _unary("Exp"),
    "Log": _unary("Log"), "Sqrt": _unary("Sqrt"), "Abs": _unary("Abs"),
    "Rsqrt": lambda g, a, o: g.node("Reciprocal", [g.node("Sqrt", [g.value(a[0])])]),
    "Square": lambda g, a, o: g.node("Mul", [g.value(a[0]), g.value(a[0])]),
    "Silu": lambda g, a, o: g.node("Mul", [g.value(a[0]), g.node("Sigmoid", [g.value(a[0])])]),
    "Gelu": _gelu, "Clamp": _clamp, "Addcmul": _addcmul,
    "Softmax": _softmax("Softmax"), "LogSoftmax": _softmax("LogSoftmax"),
    "CausalSoftmax": _causal_softmax,
    "Addmm": _addmm, "Mm": lambda g, a, o: g.node("MatMul", [g.value(a[0]), g.value(a[1])]),
    "Bmm": lambda g, a, o: g.node("MatMul", [g.value(a[0]), g.value(a[1])]),
    "Matmul": lambda g, a, o: g.node("MatMul", [g.value(a[0]), g.value(a[1])]),
    "Sum": _reduce("ReduceSum"), "Mean": _reduce("ReduceMean"),
    "LayerNorm": _layer_norm, "Convolution": _conv, "MaxPool2DWithIndices": _maxpool,
    "AvgPool2D": _avgpool, "AdaptiveAvgPool2D": _adaptive_avgpool,
    "View": _reshape, "UnsafeView": _reshape, "Reshape": _reshape,
    "T": _transpose, "Transpose": _transpose,
    "Permute": lambda g, a, o: g.node("Transpose", [g.value(a[0])],
                                      perm=[d % a[0].dim() for d in a[1]]),
    "Unsqueeze": lambda g, a, o: g.node("Unsqueeze", [g.value(a[0]), g.ints([a[1]])]),
    "Squeeze": lambda g, a, o: g.node("Reshape", [g.value(a[0]), g.ints(list(o[0].shape))]),
    "Expand": lambda g, a, o: g.node("Expand", [g.value(a[0]), g.ints(list(o[0].shape))]),
    "Clone": lambda g, a, o: g.node("Identity", [g.value(a[0])]),
    "Contiguous": lambda g, a, o: g.node("Identity", [g.value(a[0])]),
    "Slice": _slice, "Select": _select, "SplitWithSizes": _split, "Unbind": _unbind,
    "Cat": lambda g, a, o: g.node("Concat", [g.value(t) for t in a[1:]], axis=a[0]),
    "Stack": lambda g, a, o: g.node("Concat", [g.node("Unsqueeze", [g.value(t), g.ints([a[0]])])
                                               for t in a[1:]], axis=a[0]),
    "IndexSelect": lambda g, a, o: g.node("Gather", [g.value(a[0]), g.value(a[2])], axis=a[1]),
}


def _flatten(out):
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flatten(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _flatten(o)]
    return []


def export(model, args, f, export_params=True, verbose=False, training=None, input_names=None,
           output_names=None, operator_export_type=None, opset_version=None,
           do_constant_folding=True, dynamic_axes=None, keep_initializers_as_inputs=None,
           custom_opsets=None, export_modules_as_functions=False, autograd_inlining=True,
           dynamo=False, **kwargs):
    """Trace `model(*args)` (in eval mode, as torch's default) and write it to `f` (a path or a
    binary file) as an ONNX model of `opset_version` (default 17), its inputs named by
    input_names, outputs by output_names, and the dims in `dynamic_axes` ({name: {dim: label}}
    or {name: [dims]}) symbolic.

    >>> import io, clgrad
    >>> buf = io.BytesIO()
    >>> model = clgrad.nn.Sequential(clgrad.nn.Linear(3, 2), clgrad.nn.ReLU())
    >>> clgrad.onnx.export(model, (clgrad.randn(1, 3),), buf, input_names=["x"])
    >>> buf.getvalue()[:2] != b""
    True
    """
    global _exporting
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError:
        raise ImportError("clgrad.onnx.export writes models with the onnx package: "
                          "pip install clgrad[onnx]") from None
    opset = opset_version or 17
    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args)
    if args and isinstance(args[-1], dict) and not isinstance(args[-1], Tensor):
        kw, args = args[-1], args[:-1]
    else:
        kw = {}
    g = _Graph(helper, numpy_helper, opset)
    inputs = _flatten(args)            # tensors inside tuples (an LSTM's (h, c)) too
    input_names = list(input_names or [])
    for i, t in enumerate(inputs):
        if i >= len(input_names):
            input_names.append(f"input_{i}" if len(inputs) > 1 else "input")
        g.names[id(t)] = input_names[i]
        g.keep.append(t)
    unsupported = []

    depth = [0]

    def trace(cls, op_args):
        # only the ops the forward calls itself: the ops an op is made of are its own business
        if depth[0]:
            return cls._apply_op(op_args)
        depth[0] += 1
        try:
            out = cls._apply_op(op_args)
        finally:
            depth[0] -= 1
        outs = _flatten(out)
        conv = CONVERTERS.get(cls.__name__)
        if conv is None:
            unsupported.append(cls.__name__)
            return out
        names = conv(g, op_args, outs)
        names = names if isinstance(names, list) else [names]
        for t, name in zip(outs, names):
            if name is None:
                continue
            g.names[id(t)] = name
            g.keep.append(t)
        return out

    was_training = getattr(model, "training", False)
    if hasattr(model, "train"):
        model.train(bool(training) and str(training) not in ("TrainingMode.EVAL",))
    prev = hooks.op
    _exporting = True
    from .autograd.grad_mode import no_grad     # function-level: grad modes sit above this
    try:
        hooks.op = trace
        with no_grad():
            result = model(*args, **kw)
    finally:
        hooks.op = prev
        _exporting = False
        if hasattr(model, "train"):
            model.train(was_training)
    if unsupported:
        names = sorted(set(unsupported))
        raise UnsupportedOperatorError(
            f"onnx export: no ONNX form for the op(s) {', '.join(names)} (supported: "
            f"{', '.join(sorted(CONVERTERS))})")
    outputs = _flatten(result)
    output_names = list(output_names or [])
    dynamic_axes = dynamic_axes or {}

    def dims(name, t):
        marks = dynamic_axes.get(name, {})
        if isinstance(marks, (list, tuple)):
            marks = {d: f"{name}_dynamic_axes_{k + 1}" for k, d in enumerate(marks)}
        return [marks.get(i, s) for i, s in enumerate(t.shape)]

    graph_inputs = [helper.make_tensor_value_info(input_names[i], _ONNX_DTYPES[t.dtype.name],
                                                  dims(input_names[i], t))
                    for i, t in enumerate(inputs)]
    graph_outputs = []
    for i, t in enumerate(outputs):
        if i >= len(output_names):
            output_names.append(f"output_{i}" if len(outputs) > 1 else "output")
        name = g.names.get(id(t))
        if name is None:                                 # an output no op made: a constant
            name = g.value(t)
        if name != output_names[i]:
            g.node("Identity", [name], [output_names[i]])
        graph_outputs.append(helper.make_tensor_value_info(
            output_names[i], _ONNX_DTYPES[t.dtype.name], dims(output_names[i], t)))
    graph = helper.make_graph(g.nodes, type(model).__name__, graph_inputs, graph_outputs,
                              initializer=g.inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="clgrad")
    proto.ir_version = min(proto.ir_version, 9)
    onnx.checker.check_model(proto)
    data = proto.SerializeToString()
    if hasattr(f, "write"):
        f.write(data)
    else:
        with open(os.fspath(f), "wb") as out:
            out.write(data)
