"""torch.utils.tensorboard: SummaryWriter, on the `tensorboard` package's protobufs and event
file writer, as torch wraps it (pip install clgrad[tensorboard]).

Written: scalars (`add_scalar`, `add_scalars`), histograms, images (`add_image`, `add_images`),
text. Values may be clgrad tensors, numpy arrays or Python numbers. Not written: graphs,
embeddings, audio, video, meshes, hparams, figures.
"""
import os
import socket
import time
from datetime import datetime

import numpy as np

try:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
except ImportError as e:                     # the same advice torch gives, with clgrad's extra
    raise ImportError("clgrad.utils.tensorboard needs the tensorboard package: pip install "
                      "clgrad[tensorboard] (or pip install tensorboard)") from e

__all__ = ["SummaryWriter"]


def _numpy(x):
    """x (a clgrad tensor, numpy array or number) as a numpy array."""
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        return x.detach().numpy()
    return np.asarray(x)


def _scalar(x):
    a = _numpy(x)
    if a.size != 1:
        raise ValueError(f"add_scalar: scalar_value must be a single number, got a value of "
                         f"shape {tuple(a.shape)}")
    return a.reshape(()).item()


def _tensorflow_bins():
    """TensorFlow's default histogram bucket edges: +-1e-12 growing by 10% to 1e20, and 0."""
    pos, v = [], 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-x for x in reversed(pos)] + [0.0] + pos


def _histogram(values, bins, max_bins):
    """A HistogramProto of values: TensorBoard keeps right bin edges only, so the bins are cut to
    the support of the counts plus one empty bin on the left."""
    values = values.reshape(-1).astype(np.float64)
    if values.size == 0:
        raise ValueError("add_histogram: the input has no element")
    counts, edges = np.histogram(values, bins=_tensorflow_bins() if bins == "tensorflow" else bins)
    if max_bins is not None and counts.size > max_bins:          # merge neighbours
        group = -(-counts.size // max_bins)
        pad = (-counts.size) % group
        counts = np.pad(counts, (0, pad)).reshape(-1, group).sum(-1)
        edges = np.append(edges[:-1:group], edges[-1])
    nonzero = np.flatnonzero(counts)
    first, last = nonzero[0], nonzero[-1]
    if first > 0:
        counts, edges = counts[first - 1:last + 1], edges[first:last + 2]
    else:
        counts, edges = np.concatenate([[0], counts[:last + 1]]), edges[:last + 2]
    return HistogramProto(min=values.min(), max=values.max(), num=values.size,
                          sum=values.sum(), sum_squares=values.dot(values),
                          bucket_limit=edges.tolist(), bucket=counts.tolist())


def _to_hwc(img, dataformats):
    """An image array in `dataformats` (CHW, HWC, HW, and with a leading N for a batch, laid out
    in a grid of up to 8 columns) as HWC with 1, 3 or 4 channels."""
    fmt = dataformats.upper()
    if len(fmt) != img.ndim or sorted(fmt) not in (sorted("CHW"), sorted("HW"), sorted("NCHW"),
                                                   sorted("NHW")):
        raise ValueError(f"add_image: dataformats {dataformats!r} does not fit an image of "
                         f"shape {tuple(img.shape)}")
    if "C" not in fmt:
        img, fmt = img[..., None], fmt + "C"
    if "N" in fmt:                          # N images in a grid, row-major, 8 per row at most
        img = img.transpose([fmt.index(c) for c in "NHWC"])
        n, h, w, c = img.shape
        cols = min(n, 8)
        rows = -(-n // cols)
        grid = np.zeros((rows * h, cols * w, c), img.dtype)
        for i in range(n):
            r, q = divmod(i, cols)
            grid[r * h:(r + 1) * h, q * w:(q + 1) * w] = img[i]
        img = grid
    else:
        img = img.transpose([fmt.index(c) for c in "HWC"])
    if img.shape[2] not in (1, 3, 4):
        raise ValueError(f"add_image: an image has 1, 3 or 4 channels, got {img.shape[2]}")
    return img


def _png(img):
    """HWC image -> a Summary.Image: floats are taken as [0, 1], integers as [0, 255]."""
    import io

    from PIL import Image
    if img.dtype.kind == "f":
        img = (np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8)
    else:
        img = np.clip(img, 0, 255).astype(np.uint8)
    h, w, c = img.shape
    buf = io.BytesIO()
    Image.fromarray(img[..., 0] if c == 1 else img).save(buf, format="PNG")
    return Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=buf.getvalue())


class SummaryWriter:
    """Writes TensorBoard event files into `log_dir` (default runs/DATETIME_HOSTNAME+comment).

    >>> import tempfile, clgrad
    >>> from clgrad.utils.tensorboard import SummaryWriter
    >>> with SummaryWriter(tempfile.mkdtemp()) as w:
    ...     for step in range(3):
    ...         w.add_scalar("loss", clgrad.tensor(1.0 / (step + 1)), step)
    ...     w.add_histogram("weights", clgrad.randn(100), 0)
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, \
            filename_suffix
        self._writer = self._open(self.log_dir)
        self._scalar_writers = {}               # add_scalars' writers, one per sub-run
        if purge_step is not None:             # TensorBoard drops later steps of a restarted run
            self._writer.add_event(Event(step=purge_step, file_version="brain.Event:2"))

    def _open(self, path):
        return EventFileWriter(path, self.max_queue, self.flush_secs, self.filename_suffix)

    def get_logdir(self):
        """The directory the event files go to."""
        return self.log_dir

    def _add(self, summary, global_step, walltime, writer=None):
        event = Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if global_step is not None:
            event.step = int(_scalar(global_step))
        (writer or self._writer).add_event(event)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """Log one number under `tag` at `global_step`."""
        value = _scalar(scalar_value)
        if new_style:
            meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
            dtype = "DT_DOUBLE" if double_precision else "DT_FLOAT"
            field = "double_val" if double_precision else "float_val"
            tensor = TensorProto(dtype=dtype, tensor_shape=TensorShapeProto(), **{field: [value]})
            val = Summary.Value(tag=tag, tensor=tensor, metadata=meta)
        else:
            val = Summary.Value(tag=tag, simple_value=value)
        self._add(Summary(value=[val]), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Log several numbers as curves of one chart: each key is a run in its own
        sub-directory (log_dir/MAINTAG_KEY), each logged under `main_tag`."""
        walltime = time.time() if walltime is None else walltime
        for key, value in tag_scalar_dict.items():
            path = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{key}")
            if path not in self._scalar_writers:
                self._scalar_writers[path] = self._open(path)
            val = Summary.Value(tag=main_tag, simple_value=_scalar(value))
            self._add(Summary(value=[val]), global_step, walltime, self._scalar_writers[path])

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        """Log the distribution of `values`; `bins` as numpy.histogram's, or 'tensorflow'
        (TensorFlow's exponential buckets, the default)."""
        hist = _histogram(_numpy(values), bins, max_bins)
        self._add(Summary(value=[Summary.Value(tag=tag, histo=hist)]), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """Log an image: floats in [0, 1] or integers in [0, 255], laid out as `dataformats`."""
        img = _png(_to_hwc(_numpy(img_tensor), dataformats))
        self._add(Summary(value=[Summary.Value(tag=tag, image=img)]), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """Log a batch of images as one grid (8 per row at most)."""
        self.add_image(tag, img_tensor, global_step, walltime, dataformats)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Log a string (TensorBoard renders it as markdown) under tag + '/text_summary'."""
        meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
            plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
        tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf-8")],
                             tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
        val = Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=tensor)
        self._add(Summary(value=[val]), global_step, walltime)

    def flush(self):
        """Write what is queued to disk."""
        for w in [self._writer, *self._scalar_writers.values()]:
            w.flush()

    def close(self):
        """Flush and close every event file."""
        for w in [self._writer, *self._scalar_writers.values()]:
            w.close()
        self._scalar_writers = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
