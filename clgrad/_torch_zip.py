"""torch.save's zip format, read and written without torch.

A torch checkpoint is a zip archive (entries stored, not compressed) whose entries share one
folder name (`archive/` or the file's stem): `data.pkl`, a pickle (protocol 2) of the saved
object in which every tensor is a call of `torch._utils._rebuild_tensor_v2(storage, offset,
size, stride, requires_grad, backward_hooks)` and every storage a persistent id
`('storage', torch.<Type>Storage, key, location, numel)` whose raw little-endian bytes are the
entry `data/<key>`; `byteorder` ("little"), `version` and `.data/serialization_id` beside it.
Tensors that share a storage in the file (views, tied weights) share one device buffer here.

Loading never imports torch: the names the pickle gives are resolved to stand-ins below
(clgrad's dtypes, Size, device, Parameter). With weights_only=True (torch 2.6's default) only
those, the containers and the user's safe globals may be named, as torch's weights-only
unpickler allows; weights_only=False resolves `torch.X` to `clgrad.X` for whole objects.
"""
import _compat_pickle
import codecs
import collections
import importlib
import io
import os
import pickle
import zipfile

import numpy as np
import pyopencl as cl

from . import dtypes
from .runtime.device import Device, get_device
from .runtime.memory import Storage
from .tensor import Size, Tensor, device as _device_cls, make_tensor, is_contiguous_layout
from .nn.parameter import Parameter

# torch's legacy storage class names, by the dtype of their elements
STORAGE_DTYPES = {
    "FloatStorage": dtypes.float32, "DoubleStorage": dtypes.float64,
    "HalfStorage": dtypes.float16, "BFloat16Storage": dtypes.bfloat16,
    "LongStorage": dtypes.int64, "IntStorage": dtypes.int32, "ShortStorage": dtypes.int16,
    "CharStorage": dtypes.int8, "ByteStorage": dtypes.uint8, "BoolStorage": dtypes.bool_,
}
for _name, _dt in (("ComplexFloatStorage", "complex64"), ("ComplexDoubleStorage", "complex128")):
    if hasattr(dtypes, _dt):                       # where clgrad has complex dtypes
        STORAGE_DTYPES[_name] = getattr(dtypes, _dt)
STORAGE_NAMES = {dt.name: name for name, dt in STORAGE_DTYPES.items()}


class _Bad(Exception):
    """Something wrong with the archive: serialization turns it into a RuntimeError naming the
    file."""


class Refused(pickle.UnpicklingError):
    """A name the checkpoint's pickle gives that may not be loaded (weights_only) or that clgrad
    does not have."""


class StorageType:
    """What `torch.FloatStorage` (and the other storage classes) stand for in a checkpoint."""

    def __init__(self, name):
        self.name = name
        self.dtype = STORAGE_DTYPES[name]

    def __repr__(self):
        return f"StorageType({self.name})"


class HostStorage:
    """A storage as map_location's callable sees it (torch passes a CPU storage and the saved
    location): `.cpu()`, `.cuda(i)` and `.to(device)` say where its tensors should go."""

    def __init__(self, dtype, numel, target):
        self.dtype, self._numel, self.target = dtype, numel, target

    def size(self):
        return self._numel

    @property
    def device(self):
        return _device_cls(self.target)

    def cpu(self):
        return HostStorage(self.dtype, self._numel, "cpu")

    def cuda(self, device=None):
        target = "cuda" if device is None else f"cuda:{device}" if isinstance(device, int) \
            else device
        return HostStorage(self.dtype, self._numel, target)

    def to(self, device):
        return HostStorage(self.dtype, self._numel, device)


class LoadedStorage:
    """One storage of the checkpoint on its device, shared by every tensor that names it."""

    def __init__(self, storage, dtype, numel):
        self.storage, self.dtype, self.numel = storage, dtype, numel
        self.vc = [0]                    # one version counter, as views of one storage share


def _device_of(location, map_location):
    """Where a storage saved at `location` goes: torch's map_location rules (None: where it was
    saved, a device or string: there, a dict: saved location -> wanted one, a callable(storage,
    location): its answer, None meaning where it was saved). A saved device this machine does not
    have means the default device, as clgrad.load does for its own files."""
    ml = map_location
    if isinstance(ml, dict):
        ml = ml.get(location, location)
    elif callable(ml) and not isinstance(ml, (str, Device, _device_cls)):
        ml = None
    if ml is None:
        try:
            return get_device(location)
        except (RuntimeError, ValueError, TypeError):
            return get_device(None)
    return get_device(ml)


# ---- the rebuild functions a torch pickle calls ------------------------------------------------
def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    if not isinstance(storage, LoadedStorage):
        raise _Bad("a tensor in the checkpoint does not name a storage")
    shape, strides = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(shape) != len(strides) or any(s < 0 for s in shape) or storage_offset < 0:
        raise _Bad(f"a tensor in the checkpoint has a bad size {shape} or "
                                     f"stride {strides}")
    if all(shape):
        last = storage_offset + sum((s - 1) * abs(st) for s, st in zip(shape, strides))
        if last >= storage.numel:
            raise _Bad(
                f"a tensor of size {list(shape)}, stride {list(strides)} and offset "
                f"{storage_offset} lies outside its storage of {storage.numel} elements")
    t = make_tensor(storage.storage, shape, strides, int(storage_offset), storage.dtype,
                    is_contiguous_layout(shape, strides), storage.vc)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    if dtype is not storage.dtype:
        raise Refused(f"clgrad cannot view a {storage.dtype} storage as {dtype}")
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    return Parameter(data, requires_grad=requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _rebuild_parameter(data, requires_grad, backward_hooks)
    if isinstance(state, dict):
        for k, v in state.items():
            setattr(p, k, v)
    return p


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor with attributes or of a subclass: only Tensor and Parameter are rebuilt."""
    out = func(*args)
    if new_type is Parameter and type(out) is not Parameter:
        out = Parameter(out, requires_grad=out.requires_grad)
    if state:
        if isinstance(state, tuple):
            state = state[0] or {}
        for k, v in state.items():
            setattr(out, k, v)
    return out


def _get_layout(name):
    if name != "torch.strided":
        raise Refused(f"clgrad has only strided tensors, not {name}")
    return "strided"


def _device(type, index=None):
    return _device_cls(type, index)


def _encode(text, encoding="latin1"):              # how protocol 2 pickles bytes
    return codecs.encode(text, encoding)


# what a torch checkpoint may name when loaded with weights_only=True (torch's own list, less
# quantized and sparse tensors, which clgrad does not have)
SAFE = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "Counter"): collections.Counter,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    ("torch.serialization", "_get_layout"): _get_layout,
    ("torch.nn.parameter", "Parameter"): Parameter,
    ("torch", "Tensor"): Tensor,
    ("torch", "Size"): Size,
    ("torch", "device"): _device,
    ("_codecs", "encode"): _encode,
    ("builtins", "bytearray"): bytearray,
    ("builtins", "set"): set,
    ("builtins", "complex"): complex,
}
SAFE.update({("torch", name): StorageType(name) for name in STORAGE_DTYPES})
SAFE.update({("torch", dt.name): dt for dt in dtypes.ALL})


def _clgrad_global(module, name):
    """torch.X (weights_only=False): the same name in clgrad, where it has one."""
    target = "clgrad" + module[len("torch"):]
    try:
        obj = importlib.import_module(target)
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj
    except (ImportError, AttributeError):
        raise Refused(f"the checkpoint names {module}.{name}, which clgrad does "
                                     f"not have") from None


def read(zf, map_location, weights_only, allowed, message):
    """The object a torch checkpoint holds. zf: an open zipfile; allowed: the (module, name)
    pairs the user allow-listed (serialization.add_safe_globals); message(module, name): the
    error for a name weights_only refuses."""
    names = zf.namelist()
    pkls = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if not pkls:
        raise _Bad("is a zip archive without a data.pkl (not a torch checkpoint)")
    prefix = pkls[0][:-len("data.pkl")]
    order = "little"
    if prefix + "byteorder" in names:
        order = zf.read(prefix + "byteorder").decode("ascii", "replace").strip()
        if order not in ("little", "big"):
            raise _Bad(f"has an unknown byte order {order!r}")
    storages = {}

    def load_storage(pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise _Bad(f"unknown persistent id {pid!r} in the checkpoint")
        _, stype, key, location, numel = pid
        if key in storages:
            return storages[key]
        if not isinstance(stype, StorageType):
            raise Refused(f"the checkpoint has a storage of type {stype!r}, "
                                         f"which clgrad does not have")
        dt = stype.dtype
        entry = f"{prefix}data/{key}"
        try:
            data = zf.read(entry)
        except KeyError:
            raise _Bad(f"has no entry {entry} for a storage its pickle names") from None
        if len(data) != numel * dt.itemsize:
            raise _Bad(f"has {len(data)} bytes in {entry}, its {numel} {dt.name} elements "
                       f"need {numel * dt.itemsize}")
        if callable(map_location) and not isinstance(map_location, (str, Device, dict,
                                                                    _device_cls)):
            moved = map_location(HostStorage(dt, numel, location), location)
            dev = _device_of(moved.target if isinstance(moved, HostStorage) else location,
                             None if moved is None or isinstance(moved, HostStorage)
                             else moved)
        else:
            dev = _device_of(location, map_location)
        host = np.frombuffer(data, dtype=np.dtype(dt.np).newbyteorder(
            "<" if order == "little" else ">")).astype(dt.np, copy=False)
        st = Storage(dev, numel * dt.itemsize)
        if numel:
            cl.enqueue_copy(dev.queue, st.buf, np.ascontiguousarray(host), is_blocking=True)
        storages[key] = LoadedStorage(st, dt, numel)
        return storages[key]

    class Unpickler(pickle.Unpickler):
        def persistent_load(self, pid):
            return load_storage(pid)

        def find_class(self, module, name):
            # protocol 2 writes Python 2's names (__builtin__.set): checked as Python 3's
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
            if (module, name) in SAFE:
                return SAFE[(module, name)]
            if module == "torch" or module.startswith("torch."):
                # torch.X is clgrad.X; allow-listed under either name
                if weights_only and (module, name) not in allowed and (
                        "clgrad" + module[5:], name) not in allowed:
                    raise Refused(message(module, name))
                return _clgrad_global(module, name)
            if weights_only and (module, name) not in allowed:
                raise Refused(message(module, name))
            return super().find_class(module, name)

    try:
        data = zf.read(prefix + "data.pkl")
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise _Bad(f"is a damaged zip archive ({e})") from None
    try:
        return Unpickler(io.BytesIO(data), encoding="utf-8").load()
    except Refused:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError) as e:
        raise _Bad(f"has a corrupted data.pkl ({type(e).__name__}: {e})") from None


# ---- writing -----------------------------------------------------------------------------------
class _Global:
    """A name in torch's namespace, written into the pickle as GLOBAL module.name (pickle's own
    save_global would import the module to check it, and torch need not be installed)."""

    _made = {}

    def __new__(cls, module, name):
        key = (module, name)
        if key not in cls._made:                 # one object per name: the pickle memoizes it
            obj = super().__new__(cls)
            obj.module, obj.name, obj.__name__ = module, name, name
            cls._made[key] = obj
        return cls._made[key]

    def __call__(self, *args):
        raise TypeError(f"{self.module}.{self.name} is only a name written into a checkpoint")


class _Pickler(pickle._Pickler):
    """Protocol 2, tensors as torch pickles them (pure-Python pickler: its dispatch table is
    extensible per class)."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, writer):
        super().__init__(file, protocol=2)
        self.writer = writer

    def save_torch_global(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    def save_dtype(self, obj):
        self.save(_Global("torch", obj.name))

    def save_size(self, obj):
        self.save_reduce(_Global("torch", "Size"), (tuple(obj),), obj=obj)

    def save_device(self, obj):
        args = (obj.type,) if obj.index is None else (obj.type, obj.index)
        self.save_reduce(_Global("torch", "device"), args, obj=obj)

    dispatch[_Global] = save_torch_global
    dispatch[dtypes.dtype] = save_dtype
    dispatch[Size] = save_size
    dispatch[_device_cls] = save_device

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self.writer.reduce_tensor(obj)
        return NotImplemented

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            return ("storage", _Global("torch", STORAGE_NAMES[obj.dtype.name]), obj.key,
                    obj.location, obj.numel)
        return None


class _StorageRef:
    def __init__(self, key, dtype, location, numel):
        self.key, self.dtype, self.location, self.numel = key, dtype, location, numel


class _Writer:
    def __init__(self):
        self.refs = {}                 # id(clgrad Storage) -> _StorageRef
        self.records = []              # (key, bytes)
        self.keep = []

    def storage(self, t):
        st = t._storage
        ref = self.refs.get(id(st))
        if ref is not None:
            if ref.dtype is not t.dtype:
                raise RuntimeError("Cannot save multiple tensors or storages that view the "
                                   "same data as different types")
            return ref
        if t.dtype.name not in STORAGE_NAMES:
            raise TypeError(f"clgrad.save cannot write {t.dtype} tensors in torch's format")
        numel = st.nbytes // t.dtype.itemsize
        host = np.empty(numel, dtype=t.dtype.np)
        if numel:
            cl.enqueue_copy(st.device.queue, host, st.buf, is_blocking=True)
        loc = str(t.device)
        ref = _StorageRef(str(len(self.records)), t.dtype,
                          loc if loc == "cpu" or loc.startswith("cuda") else "cpu", numel)
        self.records.append((ref.key, host.astype(host.dtype.newbyteorder("<"),
                                                  copy=False).tobytes()))
        self.refs[id(st)] = ref
        self.keep.append(st)
        return ref

    def reduce_tensor(self, t):
        ref = self.storage(t)
        rebuild = (_Global("torch._utils", "_rebuild_tensor_v2"),
                   (ref, t._offset, Size(t._shape), tuple(t._strides),
                    bool(t.requires_grad and t.grad_fn is None), collections.OrderedDict()))
        if t._is_param:
            return (_Global("torch._utils", "_rebuild_parameter"),
                    (_Tensorless(rebuild), bool(t.requires_grad), collections.OrderedDict()))
        return rebuild


class _Tensorless:
    """The plain-tensor rebuild of a Parameter's data, pickled as its reduce tuple."""

    def __init__(self, rebuild):
        self.rebuild = rebuild

    def __reduce__(self):
        return self.rebuild


def write(obj, out, name="archive"):
    """Write obj to the binary file `out` in torch's zip format."""
    w = _Writer()
    buf = io.BytesIO()
    _Pickler(buf, w).dump(obj)
    records = [("data.pkl", buf.getvalue()), (".format_version", b"1"),
               (".storage_alignment", b"64"), ("byteorder", b"little")]
    records += [(f"data/{key}", data) for key, data in w.records]
    records += [("version", b"3\n"), (".data/serialization_id",
                                      str(int.from_bytes(os.urandom(16), "little")).encode())]
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for rec, data in records:
            info = zipfile.ZipInfo(f"{name}/{rec}", date_time=(1980, 1, 1, 0, 0, 0))
            # torch aligns every record's bytes to 64 in the file (for mmap loading): an extra
            # field in the local header pads to it
            start = zf.fp.tell() + 30 + len(info.filename.encode("utf-8")) + 4
            pad = -start % 64
            info.extra = b"FB" + pad.to_bytes(2, "little") + b"Z" * pad
            zf.writestr(info, data)
