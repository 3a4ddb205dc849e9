"""clgrad.save / clgrad.load: checkpoints in a format that cannot run code when loaded.

A file is a fixed prefix (magic number, format version, header length), a JSON header that
describes the saved object and every tensor in it (dtype, shape, where its bytes are, their
CRC-32), then the raw little-endian bytes of the tensors, each block 64-byte aligned. Tensors,
numbers, strings, bytes, None, bools, dtypes and dicts / lists / tuples of them (state dicts,
the usual checkpoint) are stored as JSON: loading them never imports or calls anything. Any
other object (a whole module) is stored as a pickle whose tensors live in blobs beside it;
loading it needs weights_only=False or its classes allow-listed. Loading checks the whole
file before it makes a single tensor: a truncated, corrupted or foreign file raises a
RuntimeError naming the file and the problem.

>>> import clgrad, io
>>> buf = io.BytesIO()
>>> clgrad.save({"w": clgrad.ones(2, 3), "step": 7, "name": "run-1"}, buf)
>>> _ = buf.seek(0)
>>> ckpt = clgrad.load(buf)
>>> ckpt["w"].shape, ckpt["step"], ckpt["name"]
(clgrad.Size([2, 3]), 7, 'run-1')
"""
import collections
import collections.abc
import io
import json
import math
import os
import pickle
import struct
import warnings
import zipfile
import zlib

import numpy as np
import pyopencl as cl

from . import dtypes
from . import _torch_zip
from .runtime.device import Device, get_device
from .tensor import Size, Tensor, empty_tensor
from .nn.parameter import Parameter

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals"]

MAGIC = b"\x89clgrad\n"        # a non-ASCII byte and a newline catch text-mode mangling
VERSION = 1
_PREFIX = struct.Struct("<8sIQ")   # magic, format version, header length in bytes
ALIGN = 64


# ---- saving ------------------------------------------------------------------------------------
class _Writer:
    """Encodes an object into the JSON header's form, collecting the tensors it meets."""

    def __init__(self):
        self.blobs = []            # (entry dict, bytes)
        self.seen = {}             # id(tensor or array) -> index, so shared tensors stay shared
        self.keep = []             # keeps the objects whose ids are in `seen` alive
        self.size = 0

    def _add_blob(self, obj, entry, data):
        index = len(self.blobs)
        self.seen[id(obj)] = index
        self.keep.append(obj)
        entry["offset"] = self.size
        entry["nbytes"] = len(data)
        entry["crc32"] = zlib.crc32(data)
        self.blobs.append((entry, data))
        self.size += -(-len(data) // ALIGN) * ALIGN
        return index

    def tensor(self, t):
        if id(t) in self.seen:
            return self.seen[id(t)]
        host = np.ascontiguousarray(t.detach()._read_host())      # bfloat16 as its 16-bit words
        data = host.astype(host.dtype.newbyteorder("<"), copy=False).tobytes()
        entry = {"kind": "tensor", "dtype": t.dtype.name, "shape": list(t.shape),
                 "requires_grad": bool(t.requires_grad and t.grad_fn is None),
                 "parameter": bool(t._is_param), "device": str(t.device)}
        return self._add_blob(t, entry, data)

    def ndarray(self, a):
        if id(a) in self.seen:
            return self.seen[id(a)]
        if a.dtype.kind not in "biuf":
            raise TypeError(f"clgrad.save cannot store numpy arrays of dtype {a.dtype} (only "
                            f"numbers and bools)")
        a = np.ascontiguousarray(a)
        data = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        entry = {"kind": "ndarray", "dtype": a.dtype.newbyteorder("<").str, "shape": list(a.shape)}
        return self._add_blob(a, entry, data)

    def encode(self, obj):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return obj
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"float": repr(obj)}
        if isinstance(obj, Tensor):
            return {"tensor": self.tensor(obj)}
        if isinstance(obj, np.ndarray):
            return {"ndarray": self.ndarray(obj)}
        if isinstance(obj, np.generic):
            return self.encode(obj.item())
        if isinstance(obj, dtypes.dtype):
            return {"dtype": obj.name}
        if isinstance(obj, bytes):
            return {"bytes": obj.hex()}
        if isinstance(obj, Size):
            return {"size": list(obj)}
        if isinstance(obj, collections.Counter):
            return {"counter": [[self.encode(k), self.encode(v)] for k, v in obj.items()]}
        if isinstance(obj, dict):
            return {"dict": [[self.encode(k), self.encode(v)] for k, v in obj.items()]}
        if isinstance(obj, tuple):
            return {"tuple": [self.encode(v) for v in obj]}
        if isinstance(obj, list):
            return [self.encode(v) for v in obj]
        return {"pickle": self.pickled(obj)}

    def pickled(self, obj):
        """Any other object (a whole module, an optimizer, a set): pickled, with its tensors
        and arrays kept out of the pickle as blobs of their own. Loading it needs
        weights_only=False, or its classes allow-listed with add_safe_globals."""
        buf = io.BytesIO()
        writer = self

        class Pickler(pickle.Pickler):
            def persistent_id(self, o):
                if isinstance(o, Tensor):
                    return ("tensor", writer.tensor(o))
                if isinstance(o, np.ndarray) and o.dtype.kind in "biuf":
                    return ("ndarray", writer.ndarray(o))
                return None
        try:
            Pickler(buf, protocol=4).dump(obj)
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            raise TypeError(f"clgrad.save cannot store an object of type "
                            f"{type(obj).__name__}: {e}") from None
        data = buf.getvalue()
        return self._add_blob(buf, {"kind": "pickle", "shape": [len(data)]}, data)


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=None,
         **kwargs):
    """Write obj (tensors of any dtype, numbers, strings, None, bools, and dicts / lists /
    tuples of them: state dicts of modules and optimizers) to a path or a writable binary file.
    Any other object (a whole module) is pickled with its tensors stored beside the pickle;
    loading it needs weights_only=False or allow-listed classes.
    Written to a temporary file first, so an interrupted save never leaves half a checkpoint.

    >>> import clgrad, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "model.pt")
    >>> clgrad.save(clgrad.nn.Linear(2, 1).state_dict(), path)
    >>> sorted(clgrad.load(path))
    ['bias', 'weight']

    `_use_new_zipfile_serialization=True` writes torch's zip format instead (what torch.save
    writes), which torch.load reads: tensors, Parameters, numbers, strings, containers, dtypes
    and Size; tensors that share storage share it in the file.

    >>> clgrad.save({"w": clgrad.ones(2)}, path, _use_new_zipfile_serialization=True)
    >>> clgrad.load(path)["w"].tolist()
    [1.0, 1.0]
    """
    if _use_new_zipfile_serialization:
        if hasattr(f, "write"):
            _torch_zip.write(obj, f)
            return
        path = os.path.realpath(os.fspath(f))
        fd, tmp = _create_temporary(path)
        try:
            with os.fdopen(fd, "w+b") as out:
                stem = os.path.splitext(os.path.basename(path))[0]
                _torch_zip.write(obj, out, name=stem if stem.isidentifier() else "archive")
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        return
    w = _Writer()
    root = w.encode(obj)
    header = {"format": "clgrad", "version": VERSION, "root": root,
              "blobs": [entry for entry, _ in w.blobs], "data_bytes": w.size}
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    start = _PREFIX.size + len(head)
    pad = -start % ALIGN

    def write(out):
        out.write(_PREFIX.pack(MAGIC, VERSION, len(head)))
        out.write(head)
        out.write(b"\0" * pad)
        for _, data in w.blobs:
            out.write(data)
            out.write(b"\0" * (-len(data) % ALIGN))

    if hasattr(f, "write"):
        write(f)
        return
    # The new checkpoint is written whole under a temporary name in the destination's folder and
    # renamed over it (atomic): a save killed at any point leaves the previous file as it was.
    # A symbolic link is followed, as open() would, so the link stays and its target is replaced.
    path = os.path.realpath(os.fspath(f))
    fd, tmp = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _create_temporary(path):
    """A new file beside `path` (same folder, so the rename is atomic) with the permissions
    open(path, "wb") would leave: the existing file's, else a new file's (0o666 less the umask),
    where mkstemp's are 0o600."""
    folder, name = os.path.split(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        mode = None
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        if mode is not None and hasattr(os, "fchmod"):
            try:
                os.fchmod(fd, mode)
            except OSError:
                pass
        return fd, tmp
    raise FileExistsError(f"could not create a temporary file beside {path}")


# ---- the allow-list of weights_only loading ------------------------------------------------------
# What a pickle may name when loaded with weights_only=True: containers that cannot run code, the
# two helpers pickle uses to rebuild a plain object (they only build classes that are themselves
# allow-listed), and what the user adds.
_DEFAULT_SAFE = {("collections", "OrderedDict"), ("collections", "defaultdict"),
                 ("collections", "Counter"), ("builtins", "set"), ("builtins", "frozenset"),
                 ("builtins", "slice"), ("builtins", "range"), ("builtins", "complex"),
                 ("builtins", "object"), ("copyreg", "_reconstructor")}
_user_safe = set()


def _key(obj):
    if isinstance(obj, tuple):                 # (object, "module.name") as torch accepts
        obj, full = obj
        module, _, name = full.rpartition(".")
        return module, name
    return obj.__module__, obj.__qualname__


def _allowed_globals():
    return _DEFAULT_SAFE | _user_safe


def _weights_only_message(module, name):
    return (f"Weights only load failed. This file can still be loaded, to do so you have two "
            f"options, do those steps only if you trust the source of the checkpoint. (1) "
            f"Re-running `clgrad.load` with `weights_only` set to `False` will likely succeed, "
            f"but it can result in arbitrary code execution. (2) Alternatively, to load with "
            f"`weights_only=True` please check the recommended steps in the following error "
            f"message.\nWeightsUnpickler error: Unsupported global: GLOBAL {module}.{name} was "
            f"not an allowed global by default. Please use `clgrad.serialization."
            f"add_safe_globals([{name}])` or the `clgrad.serialization.safe_globals([{name}])` "
            f"context manager to allowlist this global if you trust this class/function.")


def add_safe_globals(safe_globals):
    """Allow these classes and functions in checkpoints loaded with weights_only=True.

    >>> import clgrad
    >>> clgrad.serialization.add_safe_globals([clgrad.nn.Linear])
    >>> clgrad.nn.Linear in clgrad.serialization.get_safe_globals()
    True
    >>> clgrad.serialization.clear_safe_globals()
    """
    for g in safe_globals:
        _user_safe.add(_key(g))
    _user_objects.extend(safe_globals)


_user_objects = []


def get_safe_globals():
    return list(_user_objects)


def clear_safe_globals():
    _user_safe.clear()
    _user_objects.clear()


class safe_globals:
    """Context manager: allow these globals within the block only.

    >>> import clgrad
    >>> with clgrad.serialization.safe_globals([clgrad.nn.ReLU]):
    ...     clgrad.nn.ReLU in clgrad.serialization.get_safe_globals()
    True
    """

    def __init__(self, safe_globals):
        self.globals = list(safe_globals)

    def __enter__(self):
        self.saved = (set(_user_safe), list(_user_objects))
        add_safe_globals(self.globals)

    def __exit__(self, *exc):
        _user_safe.clear()
        _user_safe.update(self.saved[0])
        _user_objects[:] = self.saved[1]
        return False


# ---- loading -----------------------------------------------------------------------------------
class _Bad(Exception):
    """Something wrong with the file: turned into a RuntimeError that names it."""


def _check(cond, msg):
    if not cond:
        raise _Bad(msg)


def _describe_foreign(head):
    if head[:1] == b"\x80":
        return "looks like a pickle; clgrad.load never unpickles (that could run code)"
    return "is not a clgrad checkpoint (bad magic number)"


def _validate_blob(i, e, data_bytes):
    _check(isinstance(e, dict), f"blob {i} is not an object")
    kind = e.get("kind")
    _check(kind in ("tensor", "ndarray", "pickle"), f"blob {i} has unknown kind {kind!r}")
    shape = e.get("shape")
    _check(isinstance(shape, list) and all(isinstance(s, int) and not isinstance(s, bool) and
                                          s >= 0 for s in shape), f"blob {i} has a bad shape")
    if kind == "pickle":
        itemsize = 1
    elif kind == "tensor":
        _check(e.get("dtype") in dtypes.BY_NAME, f"blob {i} has unknown dtype {e.get('dtype')!r}")
        itemsize = dtypes.BY_NAME[e["dtype"]].itemsize
    else:
        try:
            npd = np.dtype(e.get("dtype"))
        except TypeError:
            raise _Bad(f"blob {i} has unknown dtype {e.get('dtype')!r}") from None
        _check(npd.kind in "biuf", f"blob {i} has unsupported dtype {npd}")
        itemsize = npd.itemsize
    n = 1
    for s in shape:
        n *= s
    for key in ("offset", "nbytes", "crc32"):
        _check(isinstance(e.get(key), int) and e[key] >= 0, f"blob {i} has a bad {key}")
    _check(e["nbytes"] == n * itemsize, f"blob {i} holds {e['nbytes']} bytes, its shape "
                                        f"{shape} needs {n * itemsize}")
    _check(e["offset"] + e["nbytes"] <= data_bytes,
           f"blob {i} lies outside the data section")


class _Reader:
    """Decodes the header's form back into objects, creating tensors on first use."""

    def __init__(self, blobs, raw, map_location, weights_only=True):
        self.weights_only = weights_only
        self.blobs = blobs
        self.raw = raw               # index -> bytes, already checked
        self.map_location = map_location
        self.made = {}

    def _device(self, saved):
        ml = self.map_location
        if isinstance(ml, dict):
            ml = ml.get(saved, None)
            if ml is None:
                return self._saved_device(saved)
        if ml is None or callable(ml) and not isinstance(ml, (str, Device)):
            return self._saved_device(saved)
        return get_device(ml)

    @staticmethod
    def _saved_device(saved):
        # "cpu", "cuda:K" or "cl:N" as the saving process named it; a device this machine does
        # not have means the default device
        try:
            return get_device(saved)
        except (RuntimeError, ValueError, TypeError):
            return get_device(None)

    def blob(self, i, kind):
        _check(isinstance(i, int) and 0 <= i < len(self.blobs) and
               self.blobs[i]["kind"] == kind, f"refers to a missing {kind} ({i!r})")
        if i in self.made:
            return self.made[i]
        e = self.blobs[i]
        shape = tuple(e["shape"])
        if kind == "ndarray":
            out = np.frombuffer(self.raw[i], dtype=np.dtype(e["dtype"])).reshape(shape).copy()
        else:
            out = self._tensor(e, self.raw[i], shape)
        self.made[i] = out
        return out

    def _tensor(self, e, data, shape):
        dt = dtypes.BY_NAME[e["dtype"]]
        dev = self._device(e.get("device"))
        t = empty_tensor(shape, dt, dev)
        if data:
            host = np.frombuffer(data, dtype=dt.np.newbyteorder("<")).astype(dt.np, copy=False)
            cl.enqueue_copy(dev.queue, t._storage.buf, np.ascontiguousarray(host),
                            is_blocking=True)
        if callable(self.map_location) and not isinstance(self.map_location, (str, Device, dict)):
            t = self.map_location(t, e.get("device"))
        if e.get("parameter"):
            return Parameter(t, requires_grad=bool(e.get("requires_grad")))
        if e.get("requires_grad") and t._dtype.kind in "fc":
            t.requires_grad_(True)
        return t

    def unpickle(self, i):
        _check(isinstance(i, int) and 0 <= i < len(self.blobs) and
               self.blobs[i]["kind"] == "pickle", f"refers to a missing pickle ({i!r})")
        reader = self

        class Unpickler(pickle.Unpickler):
            def persistent_load(self, pid):
                _check(isinstance(pid, tuple) and len(pid) == 2 and pid[0] in
                       ("tensor", "ndarray"), "has a malformed reference in a pickle")
                return reader.blob(pid[1], pid[0])

            def find_class(self, module, name):
                if reader.weights_only and (module, name) not in _allowed_globals():
                    raise pickle.UnpicklingError(_weights_only_message(module, name))
                return super().find_class(module, name)
        return Unpickler(io.BytesIO(self.raw[i])).load()

    def decode(self, v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list):
            return [self.decode(x) for x in v]
        _check(isinstance(v, dict) and len(v) == 1, "has a malformed value")
        (tag, body), = v.items()
        if tag == "tensor":
            return self.blob(body, "tensor")
        if tag == "pickle":
            return self.unpickle(body)
        if tag == "ndarray":
            return self.blob(body, "ndarray")
        if tag in ("dict", "counter"):
            _check(isinstance(body, list) and all(isinstance(p, list) and len(p) == 2
                                                  for p in body), f"has a malformed {tag}")
            out = {} if tag == "dict" else collections.Counter()
            for k, x in body:
                k = self.decode(k)
                _check(isinstance(k, collections.abc.Hashable) and not isinstance(k, list),
                       "has a dict key that is not hashable")
                out[k] = self.decode(x)
            return out
        if tag == "tuple":
            _check(isinstance(body, list), "has a malformed tuple")
            return tuple(self.decode(x) for x in body)
        if tag == "float":
            _check(body in ("nan", "inf", "-inf"), "has a malformed float")
            return float(body)
        if tag == "dtype":
            _check(body in dtypes.BY_NAME, f"has an unknown dtype {body!r}")
            return dtypes.BY_NAME[body]
        if tag == "bytes":
            try:
                return bytes.fromhex(body)
            except (TypeError, ValueError):
                raise _Bad("has malformed bytes") from None
        if tag == "size":
            _check(isinstance(body, list) and all(isinstance(s, int) for s in body),
                   "has a malformed size")
            return Size(body)
        raise _Bad(f"has an unknown value tag {tag!r}")


def _read(f, name, map_location, weights_only=True):
    f.seek(0, io.SEEK_END)
    size = f.tell()
    f.seek(0)
    prefix = f.read(_PREFIX.size)
    if prefix.startswith(b"PK\x03\x04"):                   # torch.save's zip format
        f.seek(0)
        try:
            with zipfile.ZipFile(f) as zf:
                return _torch_zip.read(zf, map_location, weights_only, _allowed_globals(),
                                       _weights_only_message)
        except zipfile.BadZipFile as e:
            raise _Bad(f"is a damaged zip archive ({e})") from None
        except _torch_zip._Bad as e:
            raise _Bad(str(e)) from None
    if len(prefix) < _PREFIX.size or not prefix.startswith(MAGIC):
        if prefix.startswith(MAGIC[:len(prefix)]) and len(prefix) < _PREFIX.size and prefix:
            raise _Bad(f"is truncated ({size} bytes, shorter than the fixed prefix)")
        _check(len(prefix) > 0, "is empty")
        raise _Bad(_describe_foreign(prefix))
    _, version, head_len = _PREFIX.unpack(prefix)
    _check(version <= VERSION, f"was written by a newer clgrad (format version {version}; this "
                               f"one reads up to {VERSION})")
    _check(_PREFIX.size + head_len <= size, f"is truncated ({size} bytes; the header alone "
                                            f"needs {_PREFIX.size + head_len})")
    try:
        header = json.loads(f.read(head_len).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise _Bad(f"has a corrupted header ({type(e).__name__}: {e})") from None
    _check(isinstance(header, dict) and header.get("format") == "clgrad",
           "has a corrupted header (not a clgrad header)")
    blobs, data_bytes = header.get("blobs"), header.get("data_bytes")
    _check(isinstance(blobs, list) and isinstance(data_bytes, int) and data_bytes >= 0,
           "has a corrupted header (no blob table)")
    start = _PREFIX.size + head_len
    start += -start % ALIGN
    _check(start + data_bytes <= size, f"is truncated ({size} bytes; its data needs "
                                       f"{start + data_bytes})")
    for i, e in enumerate(blobs):
        _validate_blob(i, e, data_bytes)
    raw = {}
    for i, e in enumerate(blobs):
        f.seek(start + e["offset"])
        data = f.read(e["nbytes"])
        _check(len(data) == e["nbytes"], f"is truncated in blob {i}")
        _check(zlib.crc32(data) == e["crc32"], f"is corrupted: blob {i} fails its checksum")
        raw[i] = data
    reader = _Reader(blobs, raw, map_location, weights_only)
    try:
        return reader.decode(header.get("root"))
    except RecursionError:
        raise _Bad("nests values too deeply") from None


def _weights_only(weights_only):
    """torch's rule: True unless told otherwise; TORCH_FORCE_WEIGHTS_ONLY_LOAD forces True,
    TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD makes False the default (a caller's explicit value wins)."""
    true_values = ("1", "y", "yes", "true")
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or "
                           "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should be set, but both were set.")
    if force:
        return True
    if weights_only is None:
        if force_no:
            warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since "
                          "the `weights_only` argument was not explicitly passed to "
                          "`clgrad.load`, forcing weights_only=False.", UserWarning, stacklevel=3)
            return False
        return True
    return bool(weights_only)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **kwargs):
    """Read what clgrad.save or torch.save wrote, from a path or a readable, seekable binary
    file. Tensors go to the device they were saved from (when it exists; else the default
    device), or to map_location: a device ("cpu", "cuda:0", "cl:1", ...), a dict from saved to
    wanted device names, or a callable: for clgrad's files (tensor, saved device name) -> the
    tensor to use, for torch's files torch's (storage, location) -> storage, as in
    `map_location=lambda storage, loc: storage`.

    torch's zip format (what torch.save writes) is read without torch: its pickle may name only
    tensors, Parameters, storages, dtypes, Size, device and containers under weights_only, as
    torch's weights-only unpickler allows; with weights_only=False other `torch.X` names are
    resolved to `clgrad.X`. TORCH_FORCE_WEIGHTS_ONLY_LOAD and TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD
    act as in torch.

    Other objects (a whole module saved with clgrad.save(model)) are stored pickled. As in torch
    2.6 and later, `weights_only=True` is the default and never runs code: such an object loads
    only if every class it names is allow-listed (add_safe_globals / safe_globals), else
    pickle.UnpicklingError says which; `weights_only=False` is the caller's explicit choice to
    unpickle a file they trust.

    >>> import clgrad, io
    >>> buf = io.BytesIO()
    >>> clgrad.save([clgrad.tensor([1.5], dtype=clgrad.bfloat16), (1, None)], buf)
    >>> _ = buf.seek(0)
    >>> t, rest = clgrad.load(buf, map_location="cpu")
    >>> t.tolist(), t.dtype, t.device, rest
    ([1.5], clgrad.bfloat16, device(type='cpu'), (1, None))
    """
    weights_only = _weights_only(weights_only)
    if hasattr(f, "read"):
        name = getattr(f, "name", None) or type(f).__name__
        try:
            return _read(f, name, map_location, weights_only)
        except _Bad as e:
            raise RuntimeError(f"clgrad.load: {name!r} {e}") from None
    name = os.fspath(f)
    with open(name, "rb") as fh:
        try:
            return _read(fh, name, map_location, weights_only)
        except _Bad as e:
            raise RuntimeError(f"clgrad.load: {name!r} {e}") from None
