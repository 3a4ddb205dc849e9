"""The gemm family (cl_kernels/gemm.mako): C[b] = alpha * A[b] @ B[b] + beta * D[b] for a batch
of matrices, reading A, B and D through strides (transposed and broadcast views are never copied
first). Which kernel runs is a per-device configuration, the family's tuned configuration:

- "packed" (CPUs that need explicit vectors: PoCL): A and B are packed into panels, then each
  work-item keeps an MR x NV*VW block of C in vector registers (no local memory, no barriers);
- "lanes" (CPU runtimes that vectorise across work-items: Intel's): the same panels, scalar code,
  LX neighbouring work-items (SIMD lanes) sharing a panel of B;
- "tiled" (GPUs): work-groups stage TM x TK / TK x TN tiles in local memory, each work-item
  accumulating WM x WN elements;
- tiny products, and on CPUs products of a few rows contiguous along K (matrix-vector,
  x @ W.t() for a few x), use gemm_small: one work-item per output element.

The configuration comes from the tuning database (clgrad.runtime.tuning, family "gemm"): the
user's entry that `tools/tune_gemm.py` stored for this device, the shipped one, else the vendor's
default for the device's code path; each is checked with `check_config` before use. One program
per dtype holds gemm_small; the configured kernels are built per configuration (build options).
Raw launches: no autograd.

>>> import clgrad
>>> a = clgrad.arange(6.0).reshape(1, 2, 3)
>>> gemm(a, a.transpose(1, 2), clgrad.ones(1), beta=1).tolist()
[[[6.0, 15.0], [15.0, 51.0]]]
"""
from .. import dtypes
from ..runtime import tuning
from ..runtime.device import check_vector_width, path_dependent
from ..runtime.family import KernelFamily
from ..tensor import empty_tensor
from ._layout import expand_strides
from .copy import check_fp64, full_raw

GEMM_DTYPES = (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16, dtypes.int32,
               dtypes.int64, dtypes.int16, dtypes.int8, dtypes.uint8)

# The packed kernel reads A where it lies (gemm_packed_da) rather than from a packed copy when A
# has few rows (the pack is a launch of its own, as long as a small product: a recurrent layer's
# step) or is row-major and at most DIRECT_A_ELEMENTS (A's rows stream through the cache). A
# column-major or large A keeps the pack (measured on PoCL: 2-3x slower read in place).
DIRECT_A_ROWS = 64
DIRECT_A_ELEMENTS = 1 << 19
# values of k each work-item of pack_a packs (gemm.mako's PACK_K); of pack_a_rows and pack_b
# (PACK_KA, PACK_KB), whose work-groups are PACK_GROUP work-items along k (16 ran pack_b 3-8x
# slower on Intel's CPU runtime, which vectorises across them: gathers)
PACK_K = 16
PACK_KA = PACK_KB = 32
PACK_GROUP = 4


def pack_along_k_geometry(dev, K, blocks, batches):
    """(global, local) sizes of gemm.mako's pack_b (pack_a_rows) for `blocks` panels of B
    (blocks of A's rows) over K values of k, `batches` times.

    >>> from clgrad.runtime.device import default_device
    >>> pack_along_k_geometry(default_device(), 100, 3, 1)[0]
    (4, 3, 1)
    """
    ls = min(PACK_GROUP, dev.max_work_group_size)
    return (_ceil(_ceil(K, PACK_KB), ls) * ls, blocks, batches), (ls, 1, 1)


def _direct_a(M, K, a_sk):
    return M <= DIRECT_A_ROWS or (a_sk == 1 and M * K <= DIRECT_A_ELEMENTS)


# Below this many multiply-adds one kernel with one work-item per output beats packing or tiling
# and their extra launches.
SMALL_WORK = 1 << 12
# On CPUs, products with at most this many rows (or columns) whose rows are contiguous along K
# (matrix-vector, x @ W.t() for a few x) run gemm_small, which reads them with vectors; a GPU
# does only matrix-vector products there, and so does a CPU when B's panels are cached (a
# recurrent layer's weight). gemm_small reads B once per row of C, so its time grows with M:
# measured on PoCL (2-core EPYC, N=512, K=128), 23 / 29 / 57 / 83 us for M = 2 / 4 / 8 / 16
# against 32 / 32 / 41 / 47 us packed (12 / 12 / 19 / 27 with B's panels cached).
SMALL_ROWS_CPU = 4

# When no configuration in the database fits a device (tiny work-groups, little local memory):
# packed needs neither local memory nor more than one work-item per group.
SMALL_DEVICE = {"kind": "packed", "MR": 6, "NV": 2, "VW": 4, "LX": 1, "LY": 1}
_KEYS = {"packed": ("MR", "NV", "VW", "LX", "LY"), "lanes": ("MR", "NJ", "LX", "LY"),
         "tiled": ("TM", "TN", "TK", "WM", "WN")}


# ---- configuration ----------------------------------------------------------------------------
def check_config(cfg, device):
    """cfg as a clean dict if `device` can run it, else ValueError saying why.

    >>> from clgrad.runtime.device import default_device
    >>> check_config(SMALL_DEVICE, default_device())["MR"]
    6
    """
    kind = cfg.get("kind")
    if kind not in _KEYS:
        raise ValueError(f"GEMM config kind must be one of {', '.join(_KEYS)}, got {kind!r}")
    out = {"kind": kind}
    for k in _KEYS[kind]:
        v = cfg.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"GEMM config {k} must be a positive int, got {v!r}")
        out[k] = v
    if kind == "packed":
        check_vector_width("GEMM", out["VW"], device)
    if kind != "tiled":
        wg = out["LX"] * out["LY"]
    else:
        if out["TM"] % out["WM"] or out["TN"] % out["WN"]:
            raise ValueError("GEMM config needs TM % WM == 0 and TN % WN == 0")
        wg = (out["TM"] // out["WM"]) * (out["TN"] // out["WN"])
        local = out["TK"] * (out["TM"] + out["TN"] + 2) * 8
        if local > device.local_mem_size:
            raise ValueError(f"GEMM tiles need {local} bytes of local memory, {device.name} has "
                             f"{device.local_mem_size}")
    if wg > device.max_work_group_size:
        raise ValueError(f"GEMM config needs work-groups of {wg}, {device.name} allows "
                         f"{device.max_work_group_size}")
    return out


def _simd_width(cfg, device):
    """A checked "lanes" entry of the database with its LX raised to the device's SIMD width:
    Intel's CPU runtime runs LX neighbouring work-items as the lanes of one vector, and a
    work-group narrower than the vector leaves its vectoriser out (an entry measured with LX 8
    on an AVX2 CPU ran 1024^2 float32 GEMM at 23 GFLOP/s on an AVX-512 one, against 244 with
    LX 16). A configuration set explicitly (set_config: the tuner, the tests) is kept as is."""
    w = getattr(device, "simd_floats", 1)
    if cfg["kind"] == "lanes" and cfg["LX"] < w and w * cfg["LY"] <= device.max_work_group_size:
        cfg = dict(cfg, LX=w)
    return cfg


def _checked_for_simd(cfg, device):
    """check_config, then _simd_width: what the tuning database's entries go through."""
    return _simd_width(check_config(cfg, device), device)


def _params(dt):
    return dict(dt=dt)


GEMM = KernelFamily("gemm", _params, GEMM_DTYPES, tuned=(check_config, SMALL_DEVICE),
                    adapt=_simd_width)


def config(device):
    """The GEMM configuration used on `device` (on its code path): the tuning database's.

    >>> from clgrad.runtime.device import default_device
    >>> config(default_device())["kind"] in ("packed", "lanes", "tiled")
    True
    """
    return GEMM.config(device)


def set_config(device, cfg):
    """Use cfg on `device` from now on in this process (the tuner and the tests); returns the
    previous one. cfg=None goes back to the tuning database's.

    >>> import clgrad
    >>> from clgrad.runtime.device import default_device
    >>> dev = default_device()
    >>> prev = set_config(dev, {"kind": "packed", "MR": 2, "NV": 1, "VW": 4, "LX": 1, "LY": 1})
    >>> (clgrad.ones(70, 3) @ clgrad.ones(3, 70)).sum().item()
    14700.0
    >>> _ = set_config(dev, prev)
    """
    return GEMM.set_config(device, cfg)


def save_tuned(device, cfg):
    """Store cfg (checked) as the user's GEMM entry for this device, driver and code path in
    the tuning database; returns the file written. The next process reads it at first use."""
    return tuning.save(device, "gemm", check_config(cfg, device))


def _vw(cfg, dt):
    # vectors of 8-byte elements get half the lanes: the same register width
    return cfg["VW"] // 2 if dt.ct in ("double", "long") else cfg["VW"]


def _options(cfg, dt):
    """(build options, program tag) of configuration cfg for dtype dt."""
    if cfg["kind"] == "packed":
        vw = _vw(cfg, dt)
        return (f"-DMR={cfg['MR']} -DNV={cfg['NV']} -DVW={vw} -DNR={cfg['NV'] * vw}",
                f"p{cfg['MR']}x{cfg['NV']}x{vw}")
    if cfg["kind"] == "lanes":
        return (" ".join(f"-D{k}={cfg[k]}" for k in _KEYS["lanes"]) +
                f" -DNR={cfg['NJ'] * cfg['LX']}",
                "l" + "x".join(str(cfg[k]) for k in _KEYS["lanes"]))
    return (" ".join(f"-D{k}={cfg[k]}" for k in _KEYS["tiled"]),
            "t" + "x".join(str(cfg[k]) for k in _KEYS["tiled"]))


_PLANS = path_dependent({})  # (device, dtype) -> (config, build options)


def _plan(device, dt):
    """(configuration, build options) of the configured kernels for dt on device; made again
    when the configuration changes (set_config)."""
    cfg = GEMM.config(device)
    plan = _PLANS.get((device, dt))
    if plan is None or plan[0] is not cfg:
        opts, tag = _options(cfg, dt)
        GEMM.program(dt, opts, tag)
        plan = _PLANS[(device, dt)] = (cfg, opts)
    return plan


# ---- the raw product -------------------------------------------------------------------------
def compute_dtype(dt):
    """The dtype products of dt accumulate (and are packed) in."""
    return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt


def _scalar(dt, v):
    # torch truncates alpha and beta for integer products
    return float(v) if dt.kind == "f" else int(v)


def _ceil(a, b):
    return -(-a // b)


def _is_small(dev, M, N, K, a_sk, b_sk, cached=False):
    rows = SMALL_ROWS_CPU if dev.cpu_paths and not cached else 1
    return M * N * K <= SMALL_WORK or (min(M, N) <= rows and a_sk == 1 and b_sk == 1)


def _small_local(dev, M, N):
    if dev.max_work_group_size < 64:
        return 1, 1
    if N == 1:
        return 1, 64
    if M == 1:
        return 64, 1
    return 8, 8


def gemm(a, b, bias=None, beta=0, alpha=1, b_cache=None, a_cache=None):
    """alpha * a @ b + beta * bias for a batch of matrices; not recorded by autograd.

    a is (Ba, M, K) and b is (Bb, K, N) with Ba and Bb each 1 or the batch size (a batch of one
    is broadcast); any strides. bias, read only when beta != 0, broadcasts to (batch, M, N).
    Returns a new contiguous (batch, M, N) tensor of a's dtype. b_cache, a dict the caller keeps
    for one unchanged b (a recurrent layer's weight, multiplied at every step), holds b's packed
    panels after the first call, so that later calls skip packing it; a_cache likewise for one
    unchanged a multiplied by several b (a recurrent layer's gate gradients, transposed, by its
    input and by its previous states: the weight gradients), where a is packed.

    >>> import clgrad
    >>> a = clgrad.tensor([[[1.0, 2.0]]]); b = clgrad.tensor([[[3.0], [4.0]]])
    >>> gemm(a, b).tolist()
    [[[11.0]]]
    """
    dev = a._storage.device
    dt = a._dtype
    check_fp64(dt, dev)
    (ba, M, K), (bb, _, N) = a._shape, b._shape
    batch = 0 if ba == 0 or bb == 0 else max(ba, bb)
    out = empty_tensor((batch, M, N), dt, dev)
    if batch == 0 or M == 0 or N == 0:
        return out
    if K == 0 and (bias is None or beta == 0):      # no terms: zeros, any dtype (bool too)
        return full_raw((batch, M, N), 0, dt, dev)
    a_sb = a._strides[0] if ba > 1 else 0
    b_sb = b._strides[0] if bb > 1 else 0
    if bias is None or beta == 0:
        dargs = (out, 0, 0, 0)
        beta = 0
    else:
        dargs = (bias, *expand_strides(bias, (batch, M, N)))
    tail = dargs + (M, N, K, _scalar(dt, alpha), _scalar(dt, beta))
    cargs = (out, M * N, N)                  # (out is fresh: offset 0)
    aargs = (a, a_sb) + a._strides[1:]
    bargs = (b, b_sb) + b._strides[1:]
    if _is_small(dev, M, N, K, a._strides[2], b._strides[1], b_cache is not None):
        lx, ly = _small_local(dev, M, N)
        GEMM.launch(dev, dt, "gemm_small", ((_ceil(N, lx) * lx, _ceil(M, ly) * ly, batch),
                                            (lx, ly, 1)), *cargs, *aargs, *bargs, *tail)
        return out
    cfg, opts = _plan(dev, dt)
    if cfg["kind"] == "tiled":
        rm, rn = cfg["TM"] // cfg["WM"], cfg["TN"] // cfg["WN"]
        GEMM.launch(dev, dt, "gemm_tiled",
                    ((_ceil(N, cfg["TN"]) * rn, _ceil(M, cfg["TM"]) * rm, batch), (rn, rm, 1)),
                    *cargs, *aargs, *bargs, *tail, options=opts)
        return out
    # packed and lanes: an operand broadcast over the batch is packed once
    lanes = cfg["kind"] == "lanes"
    mr = cfg["MR"]
    nr = cfg["NJ"] * cfg["LX"] if lanes else cfg["NV"] * _vw(cfg, dt)
    mb, nb = _ceil(M, mr), _ceil(N, nr)
    pa_n, pb_n = (batch if a_sb else 1), (batch if b_sb else 1)
    cdt = compute_dtype(dt)
    # half types are packed (converted once) rather than read in place: the packed kernel's inner
    # loop would convert every element of A it reads, MR per step (PoCL, bfloat16 W3 MLP:
    # gemm_packed_da 3.9 ms against float32's 2.5)
    direct_a = lanes or (_direct_a(M, K, a._strides[2]) and cdt is dt)
    pa = a_cache.get("packed") if a_cache is not None and not direct_a else None
    if not direct_a and pa is None:
        pa = empty_tensor((pa_n, mb * K * mr), cdt, dev)
        if a_cache is not None:
            a_cache["packed"] = pa
        if a._strides[2] < a._strides[1]:        # rows along k: a stretch of each row
            GEMM.launch(dev, dt, "pack_a_rows", pack_along_k_geometry(dev, K, mb, pa_n),
                        pa._storage.buf, mb * K * mr, *aargs, M, K, options=opts)
        else:
            lm = min(16, dev.max_work_group_size)
            GEMM.launch(dev, dt, "pack_a", ((_ceil(mb, lm) * lm, _ceil(K, PACK_K), pa_n),
                                            (lm, 1, 1)),
                        pa._storage.buf, mb * K * mr, *aargs, M, K, options=opts)
    lx, ly = cfg["LX"], cfg["LY"]
    gx = nb * lx if lanes else _ceil(nb, lx) * lx
    geometry = ((gx, _ceil(mb, ly) * ly, batch), (lx, ly, 1))
    if lanes and b._strides[2] == 1 and N % nr == 0:
        GEMM.launch(dev, dt, "gemm_lanes_db", geometry, *cargs, *aargs, *bargs[:3], *tail,
                    options=opts)
        return out
    pb = b_cache.get("packed") if b_cache is not None else None
    if pb is None:
        pb = empty_tensor((pb_n, nb * K * nr), cdt, dev)
        GEMM.launch(dev, dt, "pack_b", pack_along_k_geometry(dev, K, nb, pb_n), pb._storage.buf,
                    nb * K * nr, *bargs, K, N, options=opts)
        if b_cache is not None:
            b_cache["packed"] = pb
    # gemm_lanes: LX work-items (SIMD lanes) per panel of B; gemm_packed: one
    pb_args = (pb._storage.buf, nb * K * nr if pb_n > 1 else 0)
    if direct_a:
        GEMM.launch(dev, dt, "gemm_lanes" if lanes else "gemm_packed_da", geometry, *cargs,
                    *aargs, *pb_args, *tail, options=opts)
        return out
    GEMM.launch(dev, dt, "gemm_packed", geometry, *cargs, pa._storage.buf,
                mb * K * mr if pa_n > 1 else 0, *pb_args, *tail, options=opts)
    return out


# ---- a relu folded into the store (a recording's pass, clgrad/kernels/epilogue.py) -------------
# Every product kernel stores through gemm.mako's epilogue, which the EPI_RELU build option turns
# into relu(value).
EPILOGUE_KERNELS = ("gemm_small", "gemm_packed", "gemm_packed_da", "gemm_lanes", "gemm_lanes_db",
                    "gemm_tiled")
# kernels that copy an operand into a layout of their own: they write their first argument alone
PACK_KERNELS = ("pack_a", "pack_a_rows", "pack_b", "pack_b_gates")


def written_block(args, gsize):
    """(element offset, elements) of C when a product kernel's launch (arguments C, co, c_sb,
    ldc, ..., M, N, K, alpha, beta; the batch along the grid's third dimension) writes it as one
    contiguous block, else None."""
    M, N = args[-5], args[-4]
    if args[2] != M * N or args[3] != N:
        return None
    return args[1], gsize[2] * M * N
