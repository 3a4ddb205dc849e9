"""Tune clgrad's GEMM (and convolution) on an OpenCL device and store the winners in the tuning
database (clgrad/runtime/tuning.py).

    python tools/tune_gemm.py                  # the default device (CLGRAD_DEVICE picks another)
    python tools/tune_gemm.py --device intel   # another device
    python tools/tune_gemm.py --gpu-paths      # tune the GPU code paths (as CLGRAD_GPU_PATHS=1)
    python tools/tune_gemm.py --conv           # convolution too
    python tools/tune_gemm.py --quick          # fewer candidates and repeats
    python tools/tune_gemm.py --no-save        # search and report, store nothing
    python tools/tune_gemm.py --ship           # store in clgrad's shipped database instead
    python tools/tune_gemm.py --report         # only the report, with the configuration in use

Every candidate GEMM configuration (the packed register-blocked kernel with explicit vectors,
the "lanes" one that leaves vectorisation to the compiler, and the local-memory tiled one, with
several block, tile and vector sizes) is checked against numpy, timed on float32 products of a
few sizes and ranked by the geometric mean of its GFLOP/s. Convolution candidates (register
blocking of conv.mako) are checked the same way and timed on a 3x3 convolution forward and
backward. The winners go to the user's database (clgrad.runtime.tuning.user_path(), keyed by
platform, device, driver and code path), where clgrad reads them at first use; with --ship, to
clgrad/runtime/tuning_db.json (for entries measured on machines clgrad ships figures for). The
report then gives GFLOP/s at 512, 1024 and 2048 for the default and the winner beside numpy's
matmul (OpenBLAS or whatever BLAS numpy has) measured in the same run.
"""
import argparse
import itertools
import math
import os
import sys
import time

import numpy as np

try:
    from tqdm import tqdm
except ImportError:                      # the progress bar is a nicety
    tqdm = None

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import clgrad  # noqa: E402
import clgrad.nn.functional as F  # noqa: E402
from clgrad.kernels import conv as conv_kernels  # noqa: E402
from clgrad.kernels import gemm as gemm_kernels  # noqa: E402
from clgrad.runtime import tuning  # noqa: E402
from clgrad.runtime.device import default_device, pocl_targets_avx512, set_default_device  # noqa: E402


def packed_candidates(device, quick):
    # PoCL on an AVX-512 target: 16-float vectors in 32 registers; otherwise 16 registers
    wide = device.cpu_paths and pocl_targets_avx512(device)
    vws = (8, 16) if wide else (4, 8) if device.cpu_paths else (2, 4)
    out = []
    for mr, nv, vw in itertools.product((4, 6, 8), (1, 2, 3), vws):
        if mr * nv > (24 if wide else 16) or mr * nv < 6:   # accumulators fit the registers
            continue
        for lx, ly in ((1, 8), (1, 32), (8, 1)) if not quick else ((1, 8),):
            out.append({"kind": "packed", "MR": mr, "NV": nv, "VW": vw, "LX": lx, "LY": ly})
    return out


def tiled_candidates(device, quick):
    out = []
    for tm, tn, tk, wm, wn in itertools.product((32, 64, 128), (32, 64, 128), (8, 16, 32),
                                                 (2, 4, 8), (2, 4, 8)):
        wg = (tm // wm) * (tn // wn)
        if tm != tn or wm != wn or not 64 <= wg <= 256 or wm * wn > 64:
            continue
        cfg = {"kind": "tiled", "TM": tm, "TN": tn, "TK": tk, "WM": wm, "WN": wn}
        try:
            out.append(gemm_kernels.check_config(cfg, device))
        except ValueError:
            pass
    return out[::3] if quick else out


def lanes_candidates(device, quick):
    out = []
    for mr, nj, lx in itertools.product((4, 6, 8), (1, 2, 3), (8, 16)):
        if not 6 <= mr * nj <= 16:          # accumulators must fit 16 vector registers
            continue
        for ly in (1, 2, 4) if not quick else (1,):
            out.append({"kind": "lanes", "MR": mr, "NJ": nj, "LX": lx, "LY": ly})
    return out


def candidates(device, quick):
    """Every kernel everywhere; the ones a device is unlikely to like get a few tries only
    (tiled kernels cost ~0.6 s each to compile on PoCL): on the CPU paths, "lanes" for runtimes
    that vectorise across work-items (Intel's), "packed" for the others."""
    groups = {"packed": packed_candidates(device, quick), "lanes": lanes_candidates(device, quick),
              "tiled": tiled_candidates(device, quick)}
    if not device.cpu_paths:
        main = "tiled"
    else:
        main = "lanes" if tuning.vendor_of(device) == "intel" else "packed"
    for kind, cands in groups.items():
        if kind != main:
            groups[kind] = cands[::max(1, len(cands) // 3)]
    default = gemm_kernels.config(device)
    cands = [default]
    for cfg in groups["packed"] + groups["lanes"] + groups["tiled"]:
        try:
            cfg = gemm_kernels.check_config(cfg, device)
        except ValueError:
            continue
        if cfg not in cands:
            cands.append(cfg)
    return cands


def progress(items, desc):
    """A tqdm progress bar over items (printing goes through tqdm.write meanwhile)."""
    return tqdm(items, desc=desc, leave=False, dynamic_ncols=True) if tqdm else items


def say(text):
    if tqdm:
        tqdm.write(text)
    else:
        print(text, flush=True)


def timed(fn):
    t0 = time.perf_counter()
    fn()
    clgrad.cl.synchronize()
    return time.perf_counter() - t0


def interleaved(fns, rounds, burst=3, settle=0.0):
    """Best time of each function over `rounds` rounds that run them in turn, so that a busy
    moment on the machine costs all of them alike. Within a round each function runs `burst`
    times in a row, `settle` seconds after the previous one: BLAS threads keep spinning for up
    to ~0.1 s after a call (OpenBLAS's thread timeout) and would slow what runs next."""
    for fn in fns:
        timed(fn)                         # builds, first-launch compiles, warm caches
    best = [math.inf] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            time.sleep(settle)
            for _ in range(burst):
                best[i] = min(best[i], timed(fn))
    return best


def operands(n, rng):
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    return a, b, clgrad.tensor(a), clgrad.tensor(b)


def gflops(n, seconds):
    return 2.0 * n ** 3 / seconds / 1e9


def correct(device, rng):
    """The configuration in use gives numpy's result on odd sizes, plain and transposed."""
    for m, k, n in ((67, 45, 83), (17, 130, 19)):
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        for ta, tb in ((clgrad.tensor(a), clgrad.tensor(b)),
                       (clgrad.tensor(a.T.copy()).t(), clgrad.tensor(b.T.copy()).t())):
            if not np.allclose((ta @ tb).numpy(), a @ b, rtol=1e-4, atol=1e-4):
                return False
    return True


def blas_name():
    try:
        return np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]
    except (AttributeError, KeyError, TypeError):
        return "unknown"


def fmt(cfg):
    return " ".join(f"{k}={v}" for k, v in cfg.items() if k != "kind").ljust(36)


def product(device, cfg, a, b):
    def run():
        gemm_kernels.set_config(device, cfg)
        return a @ b
    return run


def search(device, sizes, repeat, quick):
    """Time every candidate; then time the best four and the configuration in use again in
    interleaved rounds and return the winner of those."""
    rng = np.random.default_rng(0)
    mats = {n: operands(n, rng) for n in sizes}
    head = "  ".join(f"{n:>7d}" for n in sizes)
    print(f"\n{'kind':7s} {'parameters':36s} {head}   geomean GFLOP/s")
    results = []
    cands = candidates(device, quick)
    for cfg in progress(cands, "GEMM candidates"):
        gemm_kernels.set_config(device, cfg)
        try:
            ok = correct(device, rng)
        except Exception as e:            # a build failure on this device: skip the candidate
            say(f"{cfg['kind']:7s} {fmt(cfg)} failed: {str(e).splitlines()[0]}")
            continue
        if not ok:
            say(f"{cfg['kind']:7s} {fmt(cfg)} WRONG RESULTS, skipped")
            continue
        results.append((score(device, [cfg], mats, repeat)[0], cfg))
    results.sort(key=lambda r: -r[0])
    passed = [cfg for _, cfg in results]
    default = cands[0] if cands[0] in passed else passed[0]
    finalists = [default] + [cfg for _, cfg in results[:4] if cfg != default]
    print("\nfinal round, interleaved (the configuration in use first):")
    scores = score(device, finalists, mats, 2 * repeat)
    best = max(range(len(scores)), key=scores.__getitem__)
    # a win within the noise of a shared machine is no reason to change
    return finalists[best] if scores[best] > 1.03 * scores[0] else default


def score(device, cfgs, mats, rounds):
    """Geometric mean of GFLOP/s over the sizes, per configuration (printing a row each)."""
    speeds = {}
    for n, (_, _, ta, tb) in mats.items():
        times = interleaved([product(device, cfg, ta, tb) for cfg in cfgs], rounds)
        speeds[n] = [gflops(n, t) for t in times]
    out = []
    for i, cfg in enumerate(cfgs):
        row = [speeds[n][i] for n in mats]
        out.append(math.exp(sum(math.log(v) for v in row) / len(row)))
        cols = "  ".join(f"{v:7.1f}" for v in row)
        say(f"{cfg['kind']:7s} {fmt(cfg)} {cols}   {out[-1]:7.1f}")
    return out


def report(device, configs, rounds):
    """GFLOP/s at 512, 1024 and 2048 per configuration and numpy's, timed in interleaved
    rounds in this run."""
    rng = np.random.default_rng(1)
    names = list(configs)
    print(f"\nfloat32 n x n @ n x n, best of {rounds} interleaved rounds of 3 calls")
    print(f"{'n':>6s}  " + "  ".join(f"{name:>18s}" for name in names) +
          f"  {'numpy':>10s}  ratio to numpy")
    for n in (512, 1024, 2048):
        a, b, ta, tb = operands(n, rng)
        fns = [product(device, configs[name], ta, tb) for name in names] + [lambda: a @ b]
        speeds = [gflops(n, t) for t in interleaved(fns, rounds, settle=0.3)]
        ref = speeds.pop()
        cols = "  ".join(f"{v:18.1f}" for v in speeds)
        ratios = " ".join(f"{v / ref:.2f}" for v in speeds)
        print(f"{n:6d}  {cols}  {ref:10.1f}  {ratios}", flush=True)


# ---- convolution ---------------------------------------------------------------------------------
def conv_reference(x, w):
    """conv2d with padding 1 in float64 (numpy)."""
    n, _, h, wd = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(w.shape[2]):
        for j in range(w.shape[3]):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out


def conv_correct(rng):
    x = rng.standard_normal((2, 5, 11, 13)).astype(np.float32)
    w = rng.standard_normal((7, 5, 3, 3)).astype(np.float32)
    out = F.conv2d(clgrad.tensor(x), clgrad.tensor(w), padding=1).numpy()
    return np.allclose(out, conv_reference(x, w), rtol=1e-4, atol=1e-4)


def conv_stages(device, base):
    """Two rounds of candidates around `base`: the forward blocking (MR x NV*VW outputs, the
    work-group, the vector width), then the weight gradient's (MW x TJ, its work-group)."""
    fwd = [dict(base, MR=mr, NV=nv) for mr, nv in
           ((4, 3), (6, 2), (4, 2), (3, 4), (2, 4), (8, 1), (4, 1), (2, 2))]
    if device.cpu_paths:
        fwd += [dict(base, LY=ly) for ly in (1, 4, 16)]
    else:
        fwd += [dict(base, LX=lx) for lx in (8, 32, 64)]
    fwd += [dict(base, VW=vw) for vw in (2, 4, 8, 16)
            if vw != base.get("VW") and (vw < 16 or pocl_targets_avx512(device))]
    wgrad = [dict(base, MW=mw, TJ=tj) for mw, tj in
             ((3, 4), (2, 6), (3, 3), (4, 2), (2, 4), (1, 8), (2, 2), (1, 4))]
    wgrad += [dict(base, LX=lx) for lx in (1, 4, 16, 32)]
    return fwd, wgrad


def conv_search(device, rounds):
    """Coordinate search over conv.mako's blocking, timed on a 3x3 convolution of 8 x 32 x 32 x
    32 to 64 channels forward and backward (input, weight and bias gradients)."""
    rng = np.random.default_rng(3)
    x = clgrad.tensor(rng.standard_normal((8, 32, 32, 32)).astype(np.float32),
                      requires_grad=True)
    w = clgrad.tensor((rng.standard_normal((64, 32, 3, 3)) * 0.1).astype(np.float32),
                      requires_grad=True)
    b = clgrad.tensor(rng.standard_normal(64).astype(np.float32), requires_grad=True)
    g = clgrad.tensor(rng.standard_normal((8, 64, 32, 32)).astype(np.float32))

    def step():
        F.conv2d(x, w, b, padding=1).backward(g)

    def time_of(cfg):
        conv_kernels.set_config(device, cfg)
        return interleaved([step], rounds)[0]

    start = best = conv_kernels.config(device)
    best_t = time_of(best)
    print(f"\nconvolution, 3x3 32->64 on 8x32x32x32 forward + backward (ms)\n"
          f"  in use: {best}  {best_t * 1e3:8.2f}")
    for stage in range(2):
        cands = conv_stages(device, best)[stage]
        for cfg in progress(cands, f"conv stage {stage + 1}"):
            try:
                cfg = conv_kernels.check_config(cfg, device)
                if cfg == best:
                    continue
                conv_kernels.set_config(device, cfg)
                if not conv_correct(rng):
                    say(f"  {cfg} WRONG RESULTS, skipped")
                    continue
                t = time_of(cfg)
            except Exception as e:        # too big for the device, or a build failure
                say(f"  {cfg} failed: {str(e).splitlines()[0]}")
                continue
            say(f"  {str(cfg):72s} {t * 1e3:8.2f}")
            # a win within the noise of a shared machine is no reason to change
            if t < 0.97 * best_t:
                best, best_t = cfg, t
    if best != start:
        # one quiet moment can crown a candidate: confirm against the start, interleaved
        fns = []
        for cfg in (start, best):
            fns.append(lambda cfg=cfg: (conv_kernels.set_config(device, cfg), step()))
        t_start, t_best = interleaved(fns, 3 * rounds)
        print(f"  final round, interleaved: in use {t_start * 1e3:.2f} ms, best "
              f"{t_best * 1e3:.2f} ms")
        if t_best > 0.97 * t_start:
            best = start
    conv_kernels.set_config(device, best)
    return best


def store(device, family, params, ship):
    path = tuning.save(device, family, params, tuning.SHIPPED_PATH if ship else None)
    where = " / ".join(tuning.key_of(device) + (tuning.path_of(device),))
    print(f"stored the {family} entry in {path} under {where}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", metavar="SPEC",
                   help="device to tune (pocl, intel, cl:N...; as CLGRAD_DEVICE)")
    p.add_argument("--gpu-paths", action="store_true",
                   help="tune the GPU code paths on this device (as CLGRAD_GPU_PATHS=1)")
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024],
                   help="square float32 sizes the search times (default 256 512 1024)")
    p.add_argument("--quick", action="store_true", help="fewer candidates and repeats")
    p.add_argument("--conv", action="store_true", help="tune the convolution kernels too")
    p.add_argument("--no-gemm", action="store_true", help="skip the GEMM search")
    p.add_argument("--no-save", action="store_true", help="do not store the winners")
    p.add_argument("--ship", action="store_true",
                   help="store the winners in clgrad's shipped database, not the user's")
    p.add_argument("--report", action="store_true", help="only report the configuration in use")
    p.add_argument("--rounds", type=int, default=5,
                   help="interleaved timing rounds of the report (default 5)")
    args = p.parse_args()
    if args.device:
        set_default_device(args.device)
    device = default_device()
    if args.gpu_paths:
        device.set_code_paths(cpu=False)
    repeat = 3 if args.quick else 5
    path = tuning.path_of(device)
    vendor = tuning.vendor_of(device)
    default = tuning.DEFAULTS["gemm"][path].get(vendor, tuning.DEFAULTS["gemm"][path]["generic"])
    choice = tuning.lookup(device, "gemm", gemm_kernels.check_config)
    print(f"device: {device.name} ({device.platform_name}, driver {device.driver_version}), "
          f"{device.compute_units} compute units; {path} code paths; vendor defaults: {vendor}")
    print(f"in use: {gemm_kernels.config(device)} ({choice.source})")
    print(f"numpy's BLAS: {blas_name()}; user database: {tuning.user_path()}")
    if args.report:
        report(device, {"in use": gemm_kernels.config(device)}, args.rounds)
        return
    if not args.no_gemm:
        best = search(device, args.sizes, repeat, args.quick)
        print(f"\nwinner: {best}")
        if not args.no_save:
            store(device, "gemm", best, args.ship)
    if args.conv:
        best_conv = conv_search(device, 2 if args.quick else 3)
        print(f"\nconvolution winner: {best_conv}")
        if not args.no_save:
            store(device, "conv", best_conv, args.ship)
    if not args.no_gemm:
        configs = {f"default ({vendor})": gemm_kernels.check_config(default, device), "tuned": best}
        if configs["tuned"] == configs[f"default ({vendor})"]:
            del configs["tuned"]
        report(device, configs, args.rounds)


if __name__ == "__main__":
    main()
