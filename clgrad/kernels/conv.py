"""The conv family (cl_kernels/conv.mako): direct convolution kernels, not im2col + GEMM. conv_fwd
is an implicit GEMM that reads its pixel vectors straight from a zero-padded copy of the input
(`pad`) and a weight packed in panels of output channels (`pack_w`); conv_wgrad computes the
weight gradient. conv_transpose2d runs as stride_h * stride_w stride-1 conv_fwd launches, one
per output phase (the output pixels oh = a * stride + r only see the kernel taps kh with
(r + padding - kh * dilation) % stride == 0), each with its taps flipped, so that no FLOP is spent
on the zeros a "dilate the input, then convolve" scheme would multiply. Raw launches: no autograd.

Register blocking (build options of conv.mako) is the family's tuned configuration, from the
tuning database (clgrad.runtime.tuning, family "conv"), per device and code path. VW is the
vector width (the device's VEC / VEC8 unless set); MR x NV*VW the outputs of a conv_fwd
work-item, MW x TJ (times VW lanes) the sums of a conv_wgrad one; LY / LX the work-group sizes
(on a CPU the work-items of a group run on one core and share their input in its cache).
Measured on PoCL (AVX-512 machine, 256-bit vectors) for 3x3 convolutions of 32 and 64 channels:
4 x 24 forward (6 x 16 and 4 x 16 within 5%; 8 x 16 and 6 x 24 spill and take twice as long) and
3 x 4 for the weight gradient (2 x 6 within 2%, 4 x 2 and 2 x 4 15-30% slower, 4 x 3 and 3 x 5
spill: 1.7-1.9x).

>>> import clgrad
>>> x = clgrad.arange(16.0).reshape(1, 1, 4, 4)
>>> conv2d_raw(x, clgrad.ones(1, 1, 2, 2), None, (2, 2), (0, 0), (1, 1), 1, (2, 2)).tolist()
[[[[10.0, 18.0], [42.0, 50.0]]]]
"""
from .. import dtypes
from ..runtime import tuning
from ..runtime.device import check_vector_width, path_dependent
from ..runtime.family import KernelFamily
from ..tensor import empty_tensor
from ._layout import view_raw
from .copy import cast_raw, copy_into, fill_raw, full_raw
from .reduce import reduce_raw

FLOATS = dtypes.FLOATS
_KEYS = ("MR", "NV", "MW", "TJ", "LY", "LX")


def check_config(cfg, device):
    """cfg as a clean dict if `device` can run it, else ValueError saying why.

    >>> from clgrad.runtime.device import default_device
    >>> check_config({"MR": 4, "NV": 3, "MW": 3, "TJ": 4, "LY": 8, "LX": 8}, default_device())["MR"]
    4
    """
    out = {}
    for k in _KEYS + ("VW",):
        v = cfg.get(k)
        if k == "VW" and v is None:
            continue
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"convolution config {k} must be a positive int, got {v!r}")
        out[k] = v
    if "VW" in out:
        check_vector_width("convolution", out["VW"], device)
    # the launches clip LX and LY to the device's limit, but a config that needs clipping was
    # not measured on this device
    for k in ("LX", "LY"):
        if out[k] > device.max_work_group_size:
            raise ValueError(f"convolution config {k}={out[k]} exceeds the work-group size "
                             f"{device.max_work_group_size} of {device.name}")
    return out


# Without any fitting entry (a device with tiny work-groups): one work-item per group.
SMALL_DEVICE = {"MR": 4, "NV": 1, "MW": 2, "TJ": 2, "LY": 1, "LX": 1}


def _params(dt):
    return dict(dt=dt)


# every program is built with a configuration's options (none is listed without them)
CONV = KernelFamily("conv", _params, tuned=(check_config, SMALL_DEVICE))


def config(device):
    """The convolution blocking used on `device` (on its code path): the tuning database's.

    >>> from clgrad.runtime.device import default_device
    >>> sorted(config(default_device()))[:2]
    ['LX', 'LY']
    """
    return CONV.config(device)


def set_config(device, cfg):
    """Use cfg on `device` from now on in this process (the tuner and the tests); returns the
    previous one. cfg=None goes back to the tuning database's.

    >>> from clgrad.runtime.device import default_device
    >>> dev = default_device()
    >>> prev = set_config(dev, {"MR": 3, "NV": 2, "MW": 1, "TJ": 5, "LY": 3, "LX": 2, "VW": 4})
    >>> _ = set_config(dev, prev)
    """
    return CONV.set_config(device, cfg)


def _program(dt, vw, cfg):
    """(the Program's build options) of configuration cfg at vector width vw for dt, made once."""
    opts = f"-DVW={vw} " + " ".join(f"-D{k}={cfg[k]}" for k in ("MR", "NV", "MW", "TJ"))
    tag = "x".join(str(cfg[k]) for k in ("MR", "NV", "MW", "TJ"))
    CONV.program(dt, opts, f"{tag}v{vw}")
    return opts


_PLANS = path_dependent({})  # (device, dtype) -> (config, vector width, build options)


def _plan(dev, dt):
    """(config, vector width, build options) of the convolution kernels for dtype dt on dev:
    the device's vector width (VEC, or VEC8 for float64) unless the config sets one; made again
    when the configuration changes (set_config)."""
    cfg = CONV.config(dev)
    plan = _PLANS.get((dev, dt))
    if plan is None or plan[0] is not cfg:
        vw = cfg.get("VW") or min(8, dev.vec8 if dt is dtypes.float64 else dev.vec)
        if dt is dtypes.float64 and "VW" in cfg:
            vw = max(2, vw // 2)          # the same register width
        plan = _PLANS[(dev, dt)] = (cfg, vw, _program(dt, vw, cfg))
    return plan


for _dt in FLOATS:          # what CPUs use by default, listed at import for the prebuild tool
    _program(_dt, 4 if _dt is dtypes.float64 else 8, tuning.DEFAULTS["conv"]["cpu"]["generic"])


def compute_dtype(dt):
    """The dtype the kernels compute (and pad and pack) dt in."""
    return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt


def _ceil(a, b):
    return -(-a // b)


def _bias_args(bias, fallback):
    """(tensor, stride, present) of the bias kernel arguments; any fresh tensor when none."""
    if bias is None:
        return fallback, 0, 0
    return bias, bias._strides[0], 1


# ---- raw kernels (no autograd) -------------------------------------------------------------------
def _pad_raw(x, top, left, Hq, Wq, slack, cdt):
    """x (N, C, H, W, any strides) in a fresh zero-padded buffer of dtype cdt: plane r = n * C + c
    holds x[n, c, i - top, j - left] at i * Wq + j, planes Hq * Wq apart, followed by `slack`
    elements that reads past the last plane may touch (never used)."""
    N, C, H, W = x._shape
    dev = x._storage.device
    plane = Hq * Wq
    buf = empty_tensor((N * C * plane + slack,), cdt, dev)
    rows = N * C * Hq
    if rows:
        _, _, opts = _plan(dev, x._dtype)
        CONV.launch(dev, x._dtype, "pad", rows, buf._storage.buf, plane, x, *x._strides, C, H, W,
                    Hq, Wq, top, left, rows, options=opts)
    return buf


def _pack_raw(w, offset, strides, G, Cog, Cig, KH, KW, R):
    """The weight of a (grouped) convolution in panels of R output channels, in the compute
    dtype: element ((g * MB + mb) * K + k) * R + i is the weight of output channel mb * R + i of
    group g at tap k = (ci * KH + kh) * KW + kw, read at offset + (g, co, ci, kh, kw) . strides."""
    dev = w._storage.device
    _, _, opts = _plan(dev, w._dtype)
    MB = _ceil(Cog, R)
    total = G * MB * Cig * KH * KW * R
    wp = empty_tensor((total,), compute_dtype(w._dtype), dev)
    CONV.launch(dev, w._dtype, "pack_w", G * MB * R, wp._storage.buf, w._storage.buf, offset,
                *strides, Cog, Cig, KH, KW, MB, R, total, options=opts)
    return wp


def _fwd_geometry(cfg, vw, OH, OW, Wq, sh, sw):
    """How conv_fwd walks the output: stride-1 convolutions flat over a virtual image Wq wide
    (one virtual row of OH * Wq lanes) where that computes fewer lanes than row by row, the
    others row by row. Returns (rows, lanes per row, wrap, rowstep, lane stride, tiles per row).

    >>> g = {"NV": 2}                   # tiles of 32 lanes
    >>> _fwd_geometry(g, 16, 32, 20, 22, 1, 1)[:2], _fwd_geometry(g, 16, 32, 32, 34, 1, 1)[:2]
    ((1, 704), (32, 32))
    """
    nr = cfg["NV"] * vw
    # Flat, rows of OW = 20 in tiles of 32 lanes waste 2 lanes each instead of 12; by
    # rows, OW = 32 computes no pad columns and every vector lies in one row, stored whole, not
    # lane by lane: PoCL, Zen 5, 3x3 32 -> 64 channels on 32 x 32: 2.43 ms against 2.71 flat
    # (and a relu gradient folded into the store costs nothing by rows, 1.2 ms flat)
    if sh == 1 and sw == 1 and _ceil(OH * Wq, nr) < OH * _ceil(OW, nr):
        VR, VL, wrap, rowstep = 1, OH * Wq, Wq, 0
    else:
        VR, VL, wrap, rowstep = OH, OW, 1 << 30, sh * Wq
    return VR, VL, wrap, rowstep, sw, _ceil(VL, nr)


def _fwd_reach(cfg, vw, geo, Cig, KH, KW, dh, dw, Wq, plane):
    """The furthest element (from a plane's origin) a conv_fwd work-item reads."""
    VR, VL, wrap, rowstep, ls, tiles = geo
    nr = cfg["NV"] * vw
    return ((Cig - 1) * plane + (VR - 1) * rowstep + (tiles * nr - 1) * ls + (KH - 1) * dh * Wq
            + (KW - 1) * dw)


def _conv_fwd(out, xp, xo, plane, Wq, wp, bias, G, Cig, Cog, KH, KW, dh, dw, OH, OW, sh, sw):
    dev = out._storage.device
    cfg, vw, opts = _plan(dev, out._dtype)
    VR, VL, wrap, rowstep, ls, tiles = _fwd_geometry(cfg, vw, OH, OW, Wq, sh, sw)
    N = out._shape[0]
    MB = _ceil(Cog, cfg["MR"])
    ntiles = VR * tiles
    # (where each local size is a code generation at first launch, the work-group size stays
    # the configured one even when fewer blocks need it; the idle work-items test their index)
    per_size = dev.compiles_per_local_size
    if dev.cpu_paths:
        # a CPU runs a work-group on one core: LY blocks of output channels share the input
        lx, ly = 1, min(cfg["LY"], MB if not per_size else cfg["LY"], dev.max_work_group_size)
    else:
        lx, ly = min(cfg["LX"], dev.max_work_group_size), 1
    CONV.launch(dev, out._dtype, "conv_fwd_1" if sw == 1 else "conv_fwd_s",
                ((_ceil(ntiles, lx) * lx, _ceil(MB, ly) * ly, N * G), (lx, ly, 1)),
                out, *out._strides, xp._storage.buf, xo, plane, Wq, wp._storage.buf,
                *_bias_args(bias, xp), Cig, Cog, G, KH, KW, dh, dw, OH, OW, VL, tiles, ntiles,
                wrap, rowstep, sw, MB, options=opts)


def conv2d_raw(x, w, bias, stride, pad, dilation, groups, out_hw):
    """conv2d of 4-d x (N, G * Cig, H, W) and w (G * Cog, Cig, KH, KW) with padding (top, left)
    and output size out_hw (the bottom and right padding follow from it); not recorded."""
    N, C, H, W = x._shape
    Co, Cig, KH, KW = w._shape
    (sh, sw), (pt, pl), (dh, dw), (OH, OW), G = stride, pad, dilation, out_hw, groups
    dev = x._storage.device
    out = empty_tensor((N, Co, OH, OW), x._dtype, dev)
    if not out.numel():
        return out
    if Cig * KH * KW == 0:                   # no input channels: the bias alone
        return _fill_bias(out, bias)
    cfg, vw, _ = _plan(dev, x._dtype)
    Cog = Co // G
    Hq, Wq = (OH - 1) * sh + (KH - 1) * dh + 1, (OW - 1) * sw + (KW - 1) * dw + 1
    geo = _fwd_geometry(cfg, vw, OH, OW, Wq, sh, sw)
    plane = Hq * Wq
    slack = max(0, _fwd_reach(cfg, vw, geo, Cig, KH, KW, dh, dw, Wq, plane) + 1 - Cig * plane)
    xp = _pad_raw(x, pt, pl, Hq, Wq, slack, compute_dtype(x._dtype))
    s = w._strides
    wp = _pack_raw(w, w._offset, (Cog * s[0],) + s, G, Cog, Cig, KH, KW, cfg["MR"])
    _conv_fwd(out, xp, 0, plane, Wq, wp, bias, G, Cig, Cog, KH, KW, dh, dw, OH, OW, sh, sw)
    return out


def _fill_bias(out, bias):
    """out (N, C, H, W) <- the bias broadcast (zeros without one)."""
    if bias is None:
        return fill_raw(out, 0)
    b = view_raw(bias, out._shape, (0, bias._strides[0], 0, 0), bias._offset)
    return copy_into(out, b)


def _phases(K, s, p, d, out):
    """conv_transpose along one dim as `s` stride-1 correlations: output index o = a * s + r
    (a = 0 .. A - 1) sums input[a + c0 - t * dd] * weight[taps[t]] over the taps kh with
    (r + p - kh * d) % s == 0. Returns per phase r: (r, A, taps, dd, top) where the correlation
    with its taps flipped reads a zero-padded input with `top` rows of padding."""
    phases = []
    for r in range(s):
        A = max(0, _ceil(out - r, s))
        taps = [k for k in range(K) if (r + p - k * d) % s == 0]
        if not taps or not A:
            phases.append((r, A, [], 1, 0))
            continue
        dd = (taps[1] - taps[0]) * d // s if len(taps) > 1 else 1
        c0 = (r + p - taps[0] * d) // s
        phases.append((r, A, taps, dd, (len(taps) - 1) * dd - c0))
    return phases


def conv_transpose2d_raw(x, w, bias, stride, pad, dilation, groups, out_hw):
    """conv_transpose2d of 4-d x (N, G * Cig, H, W) and w (G * Cig, Cog, KH, KW) with padding
    (top, left) and output size out_hw; not recorded. One stride-1 conv_fwd per output phase,
    all reading one padded copy of x."""
    N, C, H, W = x._shape
    _, Cog, KH, KW = w._shape
    (sh, sw), (pt, pl), (dh, dw), (OH, OW), G = stride, pad, dilation, out_hw, groups
    Cig = C // G
    dev = x._storage.device
    out = empty_tensor((N, G * Cog, OH, OW), x._dtype, dev)
    if not out.numel():
        return out
    ph = [q for q in _phases(KH, sh, pt, dh, OH) if q[1]]
    pw = [q for q in _phases(KW, sw, pl, dw, OW) if q[1]]
    live = [(a, b) for a in ph for b in pw if a[2] and b[2]]
    if Cig == 0 or len(live) < len(ph) * len(pw):       # some outputs see no tap: bias only
        _fill_bias(out, bias)
        if Cig == 0:
            return out
    if not live:
        return out
    cfg, vw, _ = _plan(dev, x._dtype)
    # one padded input for every phase: as much padding as the most padded phase wants, each
    # phase starting `top - its top` rows (and columns) in
    top = max(a[4] for a, _ in live)
    left = max(b[4] for _, b in live)
    Hq = max(top - a[4] + a[1] + (len(a[2]) - 1) * a[3] for a, _ in live)
    Wq = max(left - b[4] + b[1] + (len(b[2]) - 1) * b[3] for _, b in live)
    plane = Hq * Wq
    reach = 0
    for a, b in live:
        geo = _fwd_geometry(cfg, vw, a[1], b[1], Wq, 1, 1)
        start = (top - a[4]) * Wq + (left - b[4])
        reach = max(reach, start + _fwd_reach(cfg, vw, geo, Cig, len(a[2]), len(b[2]), a[3],
                                              b[3], Wq, plane))
    xp = _pad_raw(x, top, left, Hq, Wq, max(0, reach + 1 - Cig * plane), compute_dtype(x._dtype))
    s0, s1, s2, s3 = w._strides
    on, oc, oh_, ow_ = out._strides
    for a, b in live:
        (r, A, th, ddh, ta), (c, B, tw, ddw, tb) = a, b
        step_h = th[1] - th[0] if len(th) > 1 else 1
        step_w = tw[1] - tw[0] if len(tw) > 1 else 1
        # taps flipped: tap t reads weight[th[-1] - t * step]
        wp = _pack_raw(w, w._offset + th[-1] * s2 + tw[-1] * s3,
                       (Cig * s0, s1, s0, -step_h * s2, -step_w * s3), G, Cog, Cig, len(th),
                       len(tw), cfg["MR"])
        view = view_raw(out, (N, G * Cog, A, B), (on, oc, sh * oh_, sw * ow_),
                        out._offset + r * oh_ + c * ow_)
        _conv_fwd(view, xp, (top - ta) * Wq + (left - tb), plane, Wq, wp, bias, G, Cig, Cog,
                  len(th), len(tw), ddh, ddw, A, B, 1, 1)
    return out


def conv_weight_grad_raw(x, g, stride, pad, dilation, groups, k_hw):
    """The weight gradient of conv2d(x, w) for output gradient g: (G * Cog, Cig, KH, KW) with
    dW[co, ci, kh, kw] = sum over n, oh, ow of g[n, co, oh, ow] * x_padded[n, ci, oh * sh + kh * dh,
    ow * sw + kw * dw] (within each group); not recorded."""
    N, C, H, W = x._shape
    _, Co, OH, OW = g._shape
    (sh, sw), (pt, pl), (dh, dw), (KH, KW), G = stride, pad, dilation, k_hw, groups
    Cig, Cog = C // G, Co // G
    dev = x._storage.device
    dt, cdt = x._dtype, compute_dtype(x._dtype)
    K = Cig * KH * KW
    if N * OH * OW == 0 or K * Co == 0:
        return full_raw((Co, Cig, KH, KW), 0, dt, dev)
    cfg, vw, opts = _plan(dev, dt)
    Hq, Wq = (OH - 1) * sh + (KH - 1) * dh + 1, (OW - 1) * sw + (KW - 1) * dw + 1
    plane = Hq * Wq
    OWv = _ceil(OW, vw) * vw
    # masked lanes past the end of the last row still read (then drop) elements
    reach = ((Cig - 1) * plane + (OH - 1) * sh * Wq + (OWv - 1) * sw + (KH - 1) * dh * Wq
             + (KW - 1) * dw)
    xp = _pad_raw(x, pt, pl, Hq, Wq, max(0, reach + 1 - Cig * plane), cdt)
    # the gradient's rows are read VW at a time: a padded copy unless they are whole vectors,
    # which the _st kernels read in a 16-bit dtype as they are (the copy would convert them)
    name = "conv_wgrad_1" if sw == 1 else "conv_wgrad_s"
    if g._strides[3] == 1 and OW % vw == 0 and (g._dtype is cdt or g._dtype is dt):
        gv = g
        name += "_st" if g._dtype is not cdt else ""
    else:
        gv = view_raw(_pad_raw(g, 0, 0, OH, OWv, 0, cdt), (N, Co, OH, OWv),
                      (Co * OH * OWv, OH * OWv, OWv, 1), 0)
    JB, CB = _ceil(K, cfg["TJ"]), _ceil(Cog, cfg["MW"])
    # split the batch when there are too few blocks of sums to keep every core busy
    want = 16 * dev.compute_units * (1 if dev.cpu_paths else 16)
    NC = max(1, min(N, want // (JB * CB * G)))
    part = empty_tensor((NC, Co, Cig, KH, KW), cdt, dev)
    # (the configured work-group size where each local size is a code generation: _conv_fwd)
    lx = min(cfg["LX"], JB if not dev.compiles_per_local_size else cfg["LX"],
             dev.max_work_group_size)
    CONV.launch(dev, dt, name, ((_ceil(JB, lx) * lx, CB, NC * G), (lx, 1, 1)),
                part._storage.buf, gv, *gv._strides[:3], xp._storage.buf, plane, Wq, Cig, Cog, G,
                KH, KW, dh, dw, OH, OW, sh * Wq, sw, N, NC, options=opts)
    if NC > 1:
        return reduce_raw("sum", part, (0,), False, out_dtype=dt)
    return cast_raw(view_raw(part, (Co, Cig, KH, KW), part._strides[1:], 0), dt)


# ---- a relu folded into the store (a recording's pass, clgrad/kernels/epilogue.py) -------------
EPILOGUE_KERNELS = ("conv_fwd_1", "conv_fwd_s")
# kernels that copy an operand into a layout of their own: they write their first argument alone
PACK_KERNELS = ("pad", "pack_w")


def written_block(args, gsize):
    """(element offset, elements) of the output when a conv_fwd launch (_conv_fwd's arguments;
    the batch times the groups along the grid's third dimension) writes it as one contiguous
    block, else None (a phase of a strided transposed convolution writes a strided view)."""
    o_sn, o_sc, o_sh, o_sw = args[2:6]
    Cog, G, OH, OW = args[16], args[17], args[22], args[23]
    if (o_sw, o_sh, o_sc, o_sn) != (1, OW, OH * OW, G * Cog * OH * OW):
        return None
    return args[1], gsize[2] // G * o_sn
