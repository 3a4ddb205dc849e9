"""Tuned kernel parameters: one database for every tunable kernel family ("gemm", "conv"), keyed
the way CLBlast keys its own (platform -> device -> driver), with the code path ("cpu" or "gpu",
from `device.cpu_paths`) under the driver:

    {"Intel(R) OpenCL": {"AMD EPYC": {"2026.22.10.0.01_160000": {"cpu": {"gemm": {...}}}}}}

Three sources, looked up in this order for a device, a family and the device's code path:

1. the user's entries, written by the tuners in tools/ to `user_path()` (in the cache directory;
   the GEMM tuner's older `gemm_tuned.json` is still read);
2. the entries shipped with clgrad (`tuning_db.json` beside this file), measured with those tuners:
   the exact platform/device/driver first, then the same platform and device with another driver;
3. per-vendor defaults for the path (`DEFAULTS`), then the generic default of the path.

Every candidate is validated against the device (work-group size, local memory...) by the
family's checker before use; one that fails is passed over for the next. Lookups are not cached
here: the ops layer keeps the result in its per-device plans.

>>> from clgrad.runtime.device import default_device
>>> choice = lookup(default_device(), "gemm")
>>> choice.source in ("user", "shipped", "shipped (other driver)", "vendor", "generic")
True
"""
import collections
import json
import os
import tempfile
from pathlib import Path

from .kernels import cache_dir

FAMILIES = ("gemm", "conv")
SHIPPED_PATH = Path(__file__).resolve().parent / "tuning_db.json"

# ---- defaults ---------------------------------------------------------------------------------
# GEMM on the GPU paths runs gemm_tiled: (TN / WN) x (TM / WM) work-items stage TM x TK and
# TK x TN tiles in local memory, each accumulating WM x WN outputs. The per-vendor values are
# CLBlast's "default" Xgemm entries for float32 (src/database/kernels/xgemm/xgemm_32.hpp in
# github.com/CNugteren/CLBlast), mapped as TM = MWG, TN = NWG, TK = KWG, WM = MWG / MDIMC,
# WN = NWG / NDIMC (CLBlast's vector widths and KWI have no counterpart in our template, so they
# are starting points for tools/tune_gemm.py, not tuned values):
#   AMD  (KWG 32, MDIMC 16, MWG 64, NDIMC 8, NWG 64) -> 64 x 64 x 32, 4 x 8, work-groups of 128
#   Intel GPUs: the same values as AMD
#   NVIDIA (KWG 32, MDIMC 8, MWG 32, NDIMC 32, NWG 64) -> 32 x 64 x 32, 4 x 2, work-groups of 256
#   ARM Mali (KWG 32, MDIMC 16, MWG 64, NDIMC 8, NWG 32) -> 64 x 32 x 32, 4 x 4, groups of 128
#   Qualcomm Adreno (KWG 32, MDIMC 8, MWG 32, NDIMC 8, NWG 32) -> 32 x 32 x 32, 4 x 4, groups of 64
#   all others (KWG 32, MDIMC 8, MWG 32, NDIMC 16, NWG 32) -> 32 x 32 x 32, 4 x 2, groups of 128
# CLBlast has no Apple entry: Apple GPUs get the generic value with TK 16 (their OpenCL allows
# 256 work-items and 32 KiB of local memory, which these fit).
# On the CPU paths, "packed" keeps an MR x NV*VW block of C in explicit vector registers (PoCL
# vectorises nothing else); "lanes" is scalar code for runtimes that vectorise across work-items
# themselves (Intel's CPU runtime packs 8 work-items of dimension 0 into AVX2 lanes, and builds
# poor code for explicit vectors): measured on a 2-core AVX2 EPYC, 1024^2 float32 gemm takes
# ~30 ms with lanes MR 6 NJ 2 LX 8 against ~120-200 ms with the packed default there.
#
# Convolution (cl_kernels/conv.mako): MR x NV*VW outputs per conv_fwd work-item, MW x TJ sums per
# conv_wgrad one, LY / LX work-group sizes, VW the vector width (the device's VEC when absent).
# "avx512" is PoCL compiling for an AVX-512 target (device.pocl_targets_avx512): 16-float vectors,
# with the blocking measured on a 2-core Zen 5 EPYC (PoCL 3.1): the weight gradient of a 3x3
# convolution 32 -> 64 on 32 x 32 x 32 x 32 with MW 4 x TJ 6 sums per work-item took about
# 10.4-10.9 ms with its input gradient, against 12.4-12.6 with the generic 3 x 4 (and 3.3-3.5 ms
# alone against 3.7-5.3 for 3 x 8, 5 x 5, 6 x 4, 4 x 7); its forward and input gradient with
# MR 8 x NV 2 outputs (8 x 32 floats) 2.6 + 2.8 ms, against 2.7 + 3.3 with 6 x 2 (whose 11 and 6
# blocks of 64 and 32 channels compute 66 and 36), 2.9 + 3.1 with 12 x 2, 3.2-3.3 each with
# 8 x 3 and 4 x 4 (2026-12-04: each configuration set with clgrad.kernels.conv.set_config, the
# configurations in turns, best of 12 calls; tools/tune_gemm.py --conv searches the same space).
# "generic" on CPUs: MW 2 x TJ 6 sums (12 of the 16 AVX2 registers, with 2 gradient vectors and
# one of the input; 3 x 4 spills and takes twice as long), measured on PoCL 3.0 on a 2-core Zen 4
# EPYC (tools/bench_conv.py; tools/tune_gemm.py --conv searches around it).
# The CPU values were measured on PoCL (see clgrad/kernels/conv.py); the GPU ones are a guess, no
# GPU having been at hand to tune them, and no published figures exist for this template.
DEFAULTS = {
    "gemm": {
        "cpu": {
            # 6 x 16 floats in 12 AVX2 registers; 8 work-items per group share a panel of B
            "generic": {"kind": "packed", "MR": 6, "NV": 2, "VW": 8, "LX": 1, "LY": 8},
            "intel": {"kind": "lanes", "MR": 6, "NJ": 2, "LX": 8, "LY": 1},
            # PoCL on an AVX-512 target: 8 x 32 floats in 16 of the 32 zmm registers
            "avx512": {"kind": "packed", "MR": 8, "NV": 2, "VW": 16, "LX": 1, "LY": 8},
        },
        "gpu": {
            "generic": {"kind": "tiled", "TM": 32, "TN": 32, "TK": 32, "WM": 4, "WN": 2},
            "amd": {"kind": "tiled", "TM": 64, "TN": 64, "TK": 32, "WM": 4, "WN": 8},
            "intel": {"kind": "tiled", "TM": 64, "TN": 64, "TK": 32, "WM": 4, "WN": 8},
            "nvidia": {"kind": "tiled", "TM": 32, "TN": 64, "TK": 32, "WM": 4, "WN": 2},
            "arm": {"kind": "tiled", "TM": 64, "TN": 32, "TK": 32, "WM": 4, "WN": 4},
            "qualcomm": {"kind": "tiled", "TM": 32, "TN": 32, "TK": 32, "WM": 4, "WN": 4},
            "apple": {"kind": "tiled", "TM": 32, "TN": 32, "TK": 16, "WM": 4, "WN": 2},
        },
    },
    "conv": {
        "cpu": {"generic": {"MR": 4, "NV": 3, "MW": 2, "TJ": 6, "LY": 8, "LX": 8},
                "avx512": {"MR": 8, "NV": 2, "MW": 4, "TJ": 6, "LY": 8, "LX": 8, "VW": 16}},
        "gpu": {"generic": {"MR": 4, "NV": 1, "MW": 2, "TJ": 2, "LY": 4, "LX": 16}},
    },
}

# words in a GPU's vendor, platform or name -> key of DEFAULTS
_GPU_VENDORS = (("nvidia", "nvidia"), ("advanced micro", "amd"), ("amd", "amd"), (" ati ", "amd"),
                ("radeon", "amd"), ("intel", "intel"), ("apple", "apple"), (" arm", "arm"),
                ("mali", "arm"), ("qualcomm", "qualcomm"), ("adreno", "qualcomm"))

Choice = collections.namedtuple("Choice", "params source")


def path_of(device):
    """The code path whose entries a device uses: "cpu" or "gpu" (`device.cpu_paths`)."""
    return "cpu" if device.cpu_paths else "gpu"


def key_of(device):
    """(platform, device, driver): where a device's entries live in the database."""
    return device.platform_name, device.name, device.driver_version


def vendor_of(device):
    """Which vendor default a device gets on its code path: on the CPU paths the OpenCL
    implementation ("intel" for Intel's CPU runtime, "avx512" for PoCL compiling for an AVX-512
    target, else "generic"), on the GPU paths the GPU's
    vendor ("nvidia", "amd", "intel", "apple", "arm", "qualcomm"); a CPU or a simulator forced
    onto the GPU paths gets "generic".

    >>> from clgrad.runtime.device import default_device
    >>> vendor_of(default_device()) in DEFAULTS["gemm"][path_of(default_device())]
    True
    """
    if device.cpu_paths:
        from .device import pocl_targets_avx512
        if "intel" in device.platform_name.lower():
            return "intel"
        # the GEMM and convolution templates assemble their vectors from scalar loads (VLOAD),
        # so their AVX-512 blocking needs PoCL to compile for an AVX-512 CPU, not PoCL 3.1's
        # native vloadN (explicit_avx512, the contiguous kernels' concern): pip's PoCL 3.0 on a
        # Rocket Lake Xeon ran 1024^2 float32 GEMM at 99-110 GFLOP/s with the avx512 entry
        # against 69-74 with the generic one
        return "avx512" if pocl_targets_avx512(device) else "generic"
    if not device.is_gpu or device.is_simulator:
        return "generic"
    words = f" {device.vendor} {device.platform_name} {device.name} ".lower()
    for word, vendor in _GPU_VENDORS:
        if word in words:
            return vendor
    return "generic"


# ---- the files ----------------------------------------------------------------------------------
def user_path():
    """The user's database (None when CLGRAD_CACHE_DIR is off)."""
    d = cache_dir()
    return None if d is None else d / "tuning.json"


def _read(path):
    try:
        table = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}                      # absent or unreadable: the other levels are always safe
    return table if isinstance(table, dict) else {}


_shipped = None


def shipped():
    """The database shipped with clgrad (read once)."""
    global _shipped
    if _shipped is None:
        _shipped = _read(SHIPPED_PATH)
    return _shipped


def _drivers(table, device):
    """{driver: {path: {family: params}}} of this platform and device in `table`."""
    entry = table.get(device.platform_name, {})
    entry = entry.get(device.name, {}) if isinstance(entry, dict) else {}
    return entry if isinstance(entry, dict) else {}


def _params(by_path, path, family):
    found = by_path.get(path, {}) if isinstance(by_path, dict) else {}
    found = found.get(family) if isinstance(found, dict) else None
    return found if isinstance(found, dict) else None


def _legacy_gemm(device):
    """The entry tools/tune_gemm.py stored before this database existed (gemm_tuned.json, keyed
    "name | platform | driver | clgrad version"; packed results count for the CPU paths, tiled
    ones for the GPU paths)."""
    d = cache_dir()
    if d is None:
        return None
    for key, cfg in _read(d / "gemm_tuned.json").items():
        parts = [p.strip() for p in key.split("|")]
        if parts[:3] == [device.name, device.platform_name, device.driver_version] and \
                isinstance(cfg, dict):
            if ("cpu" if cfg.get("kind") in ("packed", "lanes") else "gpu") == path_of(device):
                return cfg
    return None


def candidates(device, family):
    """Every entry that applies to `device` and its code path for `family`, in lookup order, as
    (source, params) pairs; not validated."""
    path = path_of(device)
    out = []
    user = user_path()
    if user is not None:
        found = _params(_drivers(_read(user), device).get(device.driver_version), path, family)
        if found is None and family == "gemm":
            found = _legacy_gemm(device)
        if found is not None:
            out.append(("user", found))
    drivers = _drivers(shipped(), device)
    found = _params(drivers.get(device.driver_version), path, family)
    if found is not None:
        out.append(("shipped", found))
    # another driver of the same device: the newest first (driver versions sort as text well
    # enough for that: same vendor, same format)
    for driver in sorted(drivers, reverse=True):
        found = _params(drivers[driver], path, family)
        if driver != device.driver_version and found is not None:
            out.append(("shipped (other driver)", found))
    defaults = DEFAULTS.get(family, {}).get(path, {})
    vendor = vendor_of(device)
    if vendor != "generic" and vendor in defaults:
        out.append(("vendor", defaults[vendor]))
    if "generic" in defaults:
        out.append(("generic", defaults["generic"]))
    return out


def configured(memo, device, family, check, fallback):
    """The parameters `family` uses on `device`, memoised in `memo` (a path_dependent dict): the
    database's first entry that `check` accepts, else check(fallback)."""
    cfg = memo.get(device)
    if cfg is None:
        try:
            cfg = lookup(device, family, check).params
        except LookupError:
            cfg = check(fallback, device)
        memo[device] = cfg
    return cfg


def lookup(device, family, validate=None):
    """The parameters of kernel `family` for `device` on its code path, as Choice(params,
    source): the first candidate (see `candidates`) that `validate(params, device)` accepts.
    `validate` returns the cleaned parameters or raises ValueError. LookupError when none fits.

    >>> from clgrad.runtime.device import default_device
    >>> sorted(lookup(default_device(), "conv").params)[:3]
    ['LX', 'LY', 'MR']
    """
    reasons = []
    for source, params in candidates(device, family):
        try:
            return Choice(dict(validate(params, device) if validate else params), source)
        except ValueError as e:
            reasons.append(f"{source}: {e}")
    raise LookupError(f"no {family} parameters fit {device.name}: " + "; ".join(reasons))


def save(device, family, params, path=None):
    """Store `params` as the user's entry for `family` on this device, driver and code path (what
    the tuners call); returns the file written. The next process reads it at first use.

    >>> import tempfile, pathlib
    >>> from clgrad.runtime.device import default_device
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "tuning.json"
    >>> save(default_device(), "conv", {"MR": 4, "NV": 3, "MW": 3, "TJ": 4, "LY": 8, "LX": 8},
    ...      f).name
    'tuning.json'
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown kernel family {family!r} (one of {', '.join(FAMILIES)})")
    path = Path(path) if path is not None else user_path()
    if path is None:
        raise RuntimeError("CLGRAD_CACHE_DIR is off: nowhere to store tuned parameters")
    table = _read(path) if path.exists() else {}
    platform, name, driver = key_of(device)
    node = table
    for key in (platform, name, driver, path_of(device)):
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[family] = dict(params)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
    os.replace(tmp, path)
    return path
