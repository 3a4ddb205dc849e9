"""torch.cuda's graph capture (`CUDAGraph`, `graph`, `make_graphed_callables`) over recordings
(runtime/recording.py), on every device: `clgrad.cuda.graph` and `clgrad.cl.graph` are the same.

As with CUDA graphs, what a capture allocates stays the graph's: a replay writes the same output
tensors again (static outputs), and new inputs are copied into the captured input tensors.

>>> import clgrad
>>> static_x = clgrad.zeros(3)
>>> g = CUDAGraph()
>>> with graph(g):
...     static_y = static_x.exp() * 2
>>> _ = static_x.copy_(clgrad.tensor([0.0, 1.0, 2.0])); g.replay()
>>> [round(v, 3) for v in static_y.tolist()]
[2.0, 5.437, 14.778]
"""
from ..nn.modules.module import Module
from ..runtime.recording import Recording, active_recording
from ._compiled import CompiledFunction


class CUDAGraph:
    """A captured stretch of device work (torch.cuda.CUDAGraph): capture_begin / capture_end
    around the work (or `with graph(g):`), then replay()."""

    def __init__(self, keep_graph=False):
        self._rec = None
        self._capturing = None

    def capture_begin(self, pool=None, capture_error_mode="global"):
        if self._capturing is not None:
            raise RuntimeError("CUDAGraph: capture_begin while this graph is capturing")
        self.reset()
        self._capturing = Recording()
        self._capturing.__enter__()

    def capture_end(self):
        rec, self._capturing = self._capturing, None
        if rec is None:
            raise RuntimeError("CUDAGraph: capture_end without capture_begin")
        rec.__exit__(None, None, None)
        if rec.broken:
            raise RuntimeError(f"operation not permitted when stream is capturing: {rec.broken}")
        self._rec = rec

    def _abort(self, exc):
        rec, self._capturing = self._capturing, None
        if rec is not None:
            rec.__exit__(type(exc), exc, None)

    def replay(self):
        """Enqueue the captured work again."""
        if self._rec is None:
            raise RuntimeError("CUDAGraph: replay() before a capture ended")
        self._rec.replay()

    def reset(self):
        """Drop the capture (its buffers go back to the pool)."""
        if self._rec is not None:
            self._rec.release()
        self._rec = None

    def pool(self):
        """A handle naming this graph's memory (accepted by graph(pool=...), which shares
        nothing here: each capture keeps its own)."""
        return ("graph pool", id(self))

    def enable_debug_mode(self):
        pass

    def debug_dump(self, debug_path):
        with open(debug_path, "w") as f:
            f.write(f"clgrad recording: {self._rec.launches if self._rec else 0} launches\n")


class graph:
    """`with graph(g):` captures the block's device work into the CUDAGraph g
    (torch.cuda.graph; pool, stream and capture_error_mode are accepted)."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        self.cuda_graph = cuda_graph

    def __enter__(self):
        self.cuda_graph.capture_begin()
        return self.cuda_graph

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.cuda_graph.capture_end()
        else:
            self.cuda_graph._abort(exc)
        return False


def graph_pool_handle():
    """An opaque handle for graph(pool=...) (torch.cuda.graph_pool_handle)."""
    return ("graph pool", None)


def is_current_stream_capturing():
    """True while a graph (or a compiled function) captures."""
    return active_recording() is not None


def make_graphed_callables(callables, sample_args, num_warmup_iters=3,
                           allow_unused_input=False, pool=None):
    """Graphed versions of modules or functions (torch.cuda.make_graphed_callables): their
    forward and backward are recorded and replayed, as clgrad.compile does (a module is
    compiled in place and returned). sample_args run the warm-up and the recording now.

    >>> import clgrad
    >>> lin = clgrad.nn.Linear(4, 2)
    >>> x = clgrad.randn(3, 4)
    >>> lin = make_graphed_callables(lin, (x,))
    >>> lin(x).sum().backward(); lin.weight.grad.shape
    clgrad.Size([2, 4])
    """
    single = not isinstance(callables, tuple)
    if single:
        callables, sample_args = (callables,), (sample_args,)
    out = []
    for fn, args in zip(callables, sample_args):
        if isinstance(fn, Module):
            fn.compile()
            run = fn
        else:
            run = CompiledFunction(fn)
        for _ in range(2):         # warm-up, then the recording with its backward
            res = run(*args)
            leaves = [r for r in (res if isinstance(res, (tuple, list)) else (res,))
                      if getattr(r, "grad_fn", None) is not None]
            if leaves:
                sum(r.sum() for r in leaves).backward()
        if isinstance(fn, Module):
            fn.zero_grad()
        out.append(run)
    return out[0] if single else tuple(out)
