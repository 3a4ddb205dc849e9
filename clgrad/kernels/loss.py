"""The loss family (cl_kernels/loss.mako): cross_entropy over rows of class scores with class-index
targets in two kernels after log_softmax, one for the loss and one for the scores' gradient,
where the composed form (gather, its index check, a weight per target, sums, a division, and
backward their gradients and a scatter into zeros) took about fifteen launches. Raw launches:
no autograd.

>>> import clgrad
>>> from clgrad.kernels.softmax import softmax_raw
>>> logp = softmax_raw(clgrad.tensor([[0.0, 0.0], [0.0, 0.0]]), 1, True)
>>> loss, count = nll_rows_raw(logp, clgrad.tensor([1, -100]), -100, True, "target", IndexError)
>>> round(loss.item(), 4), count.item()
(0.6931, 1.0)
>>> cross_entropy_backward_raw(clgrad.tensor(1.0), logp, clgrad.tensor([1, -100]), count, -100,
...                            True).tolist()
[[0.5, -0.5], [0.0, 0.0]]
"""

from .. import dtypes
from ..runtime.family import KernelFamily
from ..runtime.kernels import group_limit
from ..runtime.recording import check_flag
from ..tensor import empty_tensor

DTYPES = (dtypes.float32, dtypes.float64)
LOSS = KernelFamily("loss", lambda dt: dict(dt=dt), DTYPES)
GROUP_MAX = 256         # nll_rows' local arrays (loss.mako)
_GROUP = {}             # (device, dtype) -> nll_rows' work-group size


def _group(dev, dt):
    """nll_rows' work-group size on dev: a power of two, at most GROUP_MAX and what the kernel
    may have."""
    key = (dev, dt)
    if key not in _GROUP:
        most = group_limit(dev, LOSS.kernel(dev, dt, "nll_rows"), GROUP_MAX)
        _GROUP[key] = 1 << (most.bit_length() - 1)
    return _GROUP[key]


def nll_rows_raw(logp, target, ignore_index, mean, what, error):
    """(loss, count): the negative log-likelihood of contiguous logp [n, C] at the int64 class
    indices target [n] (any stride), rows whose target is ignore_index left out, summed (over the
    number of rows counted when `mean`), and that number, 0-d tensors of logp's dtype. A counted
    target outside [0, C) makes error(bad) (bad: the first such value, None when target no
    longer holds one) the exception raised at the device's next wait, as a GPU's asynchronous
    errors are (recording.check_flag): no host sync here, and a replay of a compiled step reads
    the flag later and raises IndexError(what)."""
    dev, dt = logp._storage.device, logp._dtype
    n, C = logp._shape
    loss = empty_tensor((), dt, dev)
    count = empty_tensor((), dt, dev)
    flag = empty_tensor((1,), dtypes.int32, dev)
    ls = _group(dev, dt)
    LOSS.launch(dev, dt, "nll_rows", ((ls,), (ls,)), logp, C, target, target._strides[0], n,
                int(ignore_index), int(mean), loss, count, flag._storage.buf)

    def failed():
        t = target._read_host().reshape(-1)
        bad = t[(t != ignore_index) & ((t < 0) | (t >= C))]
        return error(int(bad[0]) if bad.size else None)
    check_flag(dev, flag._storage.buf, what, failed)
    return loss, count


def cross_entropy_backward_raw(g, logp, target, count, ignore_index, mean):
    """The scores' gradient of nll_rows_raw(log_softmax(scores)) for the loss's gradient g (0-d):
    g (over count when `mean`) times softmax minus the one-hot target, 0 in ignored rows."""
    n, C = logp._shape
    gx = empty_tensor((n, C), logp._dtype, logp._storage.device)
    if n:
        _rows_launch("ce_backward", gx, logp, C, target, ignore_index, g, count, mean)
    return gx


def nll_backward_raw(g, shape, dt, target, count, ignore_index, mean):
    """The gradient of nll_rows_raw's loss for its gradient g (0-d) with respect to logp (of
    `shape` (n, C) and dtype dt): -g (over count when `mean`) at each counted target, else 0."""
    n, C = shape
    gx = empty_tensor(shape, dt, g._storage.device)
    if n:
        _rows_launch("nll_backward", gx, C, target, ignore_index, g, count, mean)
    return gx


def _rows_launch(name, gx, *args):
    """A backward kernel over gx (n, C): a work-item per element."""
    n, C = gx._shape
    *head, target, ignore_index, g, count, mean = args
    LOSS.launch(gx._storage.device, gx._dtype, name, n * C, gx, *head, target,
                target._strides[0], int(ignore_index), g, count, int(mean), n * C)
