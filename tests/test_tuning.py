"""The tuning database (clgrad/runtime/tuning.py): lookup order, validation, code paths, the
user's file and the old gemm_tuned.json; and every shipped entry (and every vendor default the
device accepts) giving numpy's results for GEMM and convolution on the present device."""
import json
import types

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.kernels import conv as conv_kernels
from clgrad.kernels import gemm as gemm_kernels
from clgrad.runtime import tuning


def fake_device(cpu=True, gpu=False, platform="Plat", name="Dev", driver="2.0", vendor="V",
                wg=1024, local=65536, simulator=False, version="OpenCL 3.0"):
    return types.SimpleNamespace(platform_name=platform, name=name, driver_version=driver,
                                 vendor=vendor, cpu_paths=cpu, is_gpu=gpu, is_cpu=not gpu,
                                 is_pocl="Portable" in platform, version=version,
                                 is_simulator=simulator, max_work_group_size=wg,
                                 local_mem_size=local)


P = {"kind": "packed", "MR": 4, "NV": 1, "VW": 4, "LX": 1}


def gemm_entry(ly):
    return dict(P, LY=ly)


@pytest.fixture
def db(tmp_path, monkeypatch):
    """An empty user cache and a fake shipped database: Plat/Dev with drivers 1.0 and 2.0."""
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    shipped = {"Plat": {"Dev": {
        "2.0": {"cpu": {"gemm": gemm_entry(2)}, "gpu": {"gemm": gemm_entry(3)}},
        "1.0": {"cpu": {"gemm": gemm_entry(4), "conv": {"MR": 2}}},
        "0.5": {"cpu": {"gemm": gemm_entry(5)}},
    }}}
    monkeypatch.setattr(tuning, "_shipped", shipped)
    return tmp_path


def source(dev, family="gemm", validate=gemm_kernels.check_config):
    c = tuning.lookup(dev, family, validate)
    return c.source, c.params


def test_lookup_order(db):
    dev = fake_device()
    # shipped, exact driver
    assert source(dev) == ("shipped", gemm_entry(2))
    # the user's entry for this platform, device and driver wins
    tuning.save(dev, "gemm", gemm_entry(7))
    assert source(dev) == ("user", gemm_entry(7))
    # ... but not one for another driver
    assert source(fake_device(driver="1.0")) == ("shipped", gemm_entry(4))
    # another driver of the same device: the newest one
    assert source(fake_device(driver="3.0")) == ("shipped (other driver)", gemm_entry(2))
    # another device: the vendor default, then the generic one
    intel = fake_device(platform="Intel(R) OpenCL", name="Other")
    assert source(intel) == ("vendor", tuning.DEFAULTS["gemm"]["cpu"]["intel"])
    assert source(fake_device(name="Other")) == ("generic",
                                                 tuning.DEFAULTS["gemm"]["cpu"]["generic"])


def test_code_path_picks_entries(db):
    """A device on the GPU paths (a GPU, or a CPU forced with CLGRAD_GPU_PATHS) uses the GPU
    entries and defaults."""
    assert source(fake_device(cpu=False)) == ("shipped", gemm_entry(3))
    # no GPU entry for driver 1.0 (nor any other driver but 2.0's): the GPU entry of 2.0
    assert source(fake_device(cpu=False, driver="1.0")) == ("shipped (other driver)",
                                                            gemm_entry(3))
    # a CPU forced onto the GPU paths gets the generic GPU default, not its vendor's
    cpu = fake_device(cpu=False, name="Other", vendor="Advanced Micro Devices")
    assert source(cpu) == ("generic", tuning.DEFAULTS["gemm"]["gpu"]["generic"])
    gpu = fake_device(cpu=False, gpu=True, name="Radeon RX 7900", vendor="AMD")
    assert source(gpu) == ("vendor", tuning.DEFAULTS["gemm"]["gpu"]["amd"])
    tuning.save(fake_device(), "gemm", gemm_entry(9))        # saved for the CPU paths only
    assert source(fake_device(cpu=False)) == ("shipped", gemm_entry(3))
    assert source(fake_device()) == ("user", gemm_entry(9))


def test_validation_falls_through(db):
    """An entry the device cannot run (work-groups too large, too little local memory, a broken
    entry) is passed over for the next one."""
    small = fake_device(wg=2)
    assert source(small) == ("shipped", gemm_entry(2))
    # LY=2 fits work-groups of 2; LY 4 and 5 do not; the generic default's LY 8 does not
    assert source(fake_device(wg=2, driver="1.0")) == ("shipped (other driver)", gemm_entry(2))
    tuning.save(small, "gemm", {"kind": "packed", "MR": 4})          # broken: no NV, VW...
    assert source(small) == ("shipped", gemm_entry(2))
    with pytest.raises(LookupError, match="work-groups"):
        source(fake_device(wg=1, name="Other"))
    # the tiled GPU defaults are checked against local memory
    gpu = fake_device(cpu=False, gpu=True, name="GeForce", vendor="NVIDIA Corporation",
                      local=4096)
    with pytest.raises(LookupError, match="local memory"):
        source(gpu)
    gpu.local_mem_size = 48 * 1024
    assert source(gpu) == ("vendor", tuning.DEFAULTS["gemm"]["gpu"]["nvidia"])
    # and convolution entries by the convolution checker: Dev 1.0's conv entry is incomplete
    assert source(fake_device(driver="1.0"), "conv", conv_kernels.check_config) == \
        ("generic", tuning.DEFAULTS["conv"]["cpu"]["generic"])
    with pytest.raises(LookupError):
        source(fake_device(wg=4), "conv", conv_kernels.check_config)


def test_vendor_of():
    def gpu(vendor, name):
        return tuning.vendor_of(fake_device(cpu=False, gpu=True, vendor=vendor, name=name))
    assert gpu("NVIDIA Corporation", "NVIDIA GeForce RTX 3080") == "nvidia"
    assert gpu("Advanced Micro Devices, Inc.", "gfx1100") == "amd"
    assert gpu("Intel(R) Corporation", "Intel(R) Arc(TM) A770 Graphics") == "intel"
    assert gpu("Apple", "Apple M2") == "apple"
    assert gpu("ARM", "Mali-G78") == "arm"
    assert gpu("QUALCOMM", "QUALCOMM Adreno(TM)") == "qualcomm"
    assert gpu("Vivante", "GC7000") == "generic"
    assert tuning.vendor_of(fake_device(platform="Intel(R) OpenCL")) == "intel"
    assert tuning.vendor_of(fake_device(platform="Portable Computing Language")) == "generic"
    # PoCL compiling for an AVX-512 CPU, whatever its release (the GEMM and convolution
    # templates assemble their vectors): 16-float vectors; for an AVX2 one (pip's PoCL takes a
    # Zen 4 for znver3) the generic 8-float ones
    hstr = "OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-"
    for target, driver, vendor in (("skylake-avx512", "3.1+debian", "avx512"),
                                   ("znver4", "5.0", "avx512"), ("znver3", "3.1", "generic"),
                                   ("rocketlake", "3.0-rc2", "avx512"),
                                   ("znver3", "3.0-rc2", "generic")):
        assert tuning.vendor_of(fake_device(platform="Portable Computing Language",
                                            version=hstr + target, driver=driver)) == vendor
    assert tuning.vendor_of(fake_device(cpu=False, gpu=True, simulator=True,
                                        vendor="Oclgrind")) == "generic"
    # every default is a complete configuration, and each path has a generic one
    roomy = fake_device(wg=1024, local=64 * 1024)
    checks = {"gemm": gemm_kernels.check_config, "conv": conv_kernels.check_config}
    for family, paths in tuning.DEFAULTS.items():
        for path in paths.values():
            assert "generic" in path
            for params in path.values():
                assert checks[family](params, roomy) == params


def test_user_file(db):
    dev = fake_device()
    path = tuning.save(dev, "conv", {"MR": 3, "NV": 2, "MW": 1, "TJ": 5, "LY": 3, "LX": 2})
    tuning.save(dev, "gemm", gemm_entry(6))
    table = json.loads(path.read_text())
    assert table["Plat"]["Dev"]["2.0"]["cpu"] == {
        "conv": {"MR": 3, "NV": 2, "MW": 1, "TJ": 5, "LY": 3, "LX": 2}, "gemm": gemm_entry(6)}
    assert source(dev, "conv", conv_kernels.check_config)[0] == "user"
    path.write_text("[1, 2")                              # unreadable: ignored
    assert source(dev)[0] == "shipped"
    with pytest.raises(ValueError, match="family"):
        tuning.save(dev, "fft", {})


def test_old_gemm_tuned_file(db):
    """Entries the GEMM tuner stored before the database existed are still read."""
    dev = fake_device(driver="9.9")
    (db / "gemm_tuned.json").write_text(json.dumps({
        "Dev | Plat | 9.9 | clgrad 0.1": gemm_entry(6),
        "Dev | Plat | 8.8 | clgrad 0.1": gemm_entry(7)}))
    assert source(dev) == ("user", gemm_entry(6))
    assert source(fake_device(driver="8.8")) == ("user", gemm_entry(7))
    assert source(fake_device(driver="8.8", cpu=False))[0] == "shipped (other driver)"
    tuning.save(dev, "gemm", gemm_entry(1))              # the new file comes first
    assert source(dev) == ("user", gemm_entry(1))


def test_shipped_file_is_valid():
    """The shipped database parses and every entry passes its family's shape checks on a
    roomy device."""
    table = json.loads(tuning.SHIPPED_PATH.read_text())
    roomy = fake_device(wg=1 << 16, local=1 << 20)
    checks = {"gemm": gemm_kernels.check_config, "conv": conv_kernels.check_config}
    n = 0
    for platform, devs in table.items():
        if platform.startswith("_"):
            continue
        for drivers in devs.values():
            for paths in drivers.values():
                for path, families in paths.items():
                    assert path in ("cpu", "gpu")
                    for family, params in families.items():
                        checks[family](params, roomy)
                        n += 1
    assert n > 0


# ---- the entries on the present device ---------------------------------------------------------
def entries_for(device, family):
    """Every parameter set that could apply to the device on either code path: the shipped ones
    for its platform and device (any driver) and the vendor defaults, that it accepts."""
    check = {"gemm": gemm_kernels.check_config, "conv": conv_kernels.check_config}[family]
    found = []
    drivers = tuning.shipped().get(device.platform_name, {}).get(device.name, {})
    for paths in drivers.values():
        found += [p[family] for p in paths.values() if family in p]
    for path in tuning.DEFAULTS[family].values():
        found += list(path.values())
    out = []
    for params in found:
        try:
            params = check(params, device)
        except ValueError:
            continue
        if params not in out:
            out.append(params)
    return out


def test_gemm_with_each_entry(device, monkeypatch):
    rng = np.random.default_rng(0)
    monkeypatch.setattr(gemm_kernels, "SMALL_WORK", 0)
    monkeypatch.setattr(gemm_kernels, "SMALL_ROWS_CPU", 0)
    shipped = entries_for(device, "gemm")
    assert shipped
    prev = gemm_kernels.config(device)
    try:
        for cfg in shipped:
            gemm_kernels.set_config(device, cfg)
            # odd sizes on both sides of every tile edge, plain and transposed, and a batch
            for m, k, n in [(1, 1, 1), (7, 9, 5), (67, 45, 83), (33, 130, 17)]:
                a = rng.standard_normal((m, k)).astype(np.float32)
                b = rng.standard_normal((k, n)).astype(np.float32)
                ta, tb = clgrad.tensor(a), clgrad.tensor(b)
                want = a.astype(np.float64) @ b
                for out in (ta @ tb, clgrad.tensor(a.T.copy()).t() @ clgrad.tensor(b.T.copy()).t()):
                    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-4, atol=1e-4,
                                               err_msg=str(cfg))
            a = rng.standard_normal((3, 19, 21)).astype(np.float32)
            b = rng.standard_normal((21, 13)).astype(np.float32)
            np.testing.assert_allclose((clgrad.tensor(a) @ clgrad.tensor(b)).numpy(), a @ b,
                                       rtol=1e-4, atol=1e-4, err_msg=str(cfg))
    finally:
        gemm_kernels.set_config(device, prev)


def test_conv_with_each_entry(device):
    rng = np.random.default_rng(1)
    prev = conv_kernels.config(device)
    try:
        for cfg in entries_for(device, "conv"):
            conv_kernels.set_config(device, cfg)
            x = rng.standard_normal((2, 5, 11, 13)).astype(np.float32)
            w = rng.standard_normal((7, 5, 3, 3)).astype(np.float32)
            tx = clgrad.tensor(x, requires_grad=True)
            tw = clgrad.tensor(w, requires_grad=True)
            out = F.conv2d(tx, tw, padding=1)
            want = reference_conv(x, w)
            np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-4, atol=1e-4,
                                       err_msg=str(cfg))
            out.sum().backward()
            # d sum / d w[co, ci, kh, kw] = the sum of the padded input under that tap
            xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
            gw = np.stack([xp[:, :, i:i + 11, j:j + 13].sum((0, 2, 3))
                           for i in range(3) for j in range(3)], -1).reshape(5, 3, 3)
            np.testing.assert_allclose(tw.grad.numpy(), np.broadcast_to(gw, (7, 5, 3, 3)),
                                       rtol=1e-4, atol=1e-3, err_msg=str(cfg))
    finally:
        conv_kernels.set_config(device, prev)


def reference_conv(x, w):
    """conv2d with padding 1, stride 1, in float64."""
    n, c, h, wd = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(w.shape[2]):
        for j in range(w.shape[3]):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out


def test_lanes_entries_fill_the_simd_width():
    lanes = {"kind": "lanes", "MR": 6, "NJ": 2, "LX": 8, "LY": 1}
    avx512 = fake_device()
    avx512.simd_floats = 16
    assert gemm_kernels._checked_for_simd(lanes, avx512)["LX"] == 16      # raised to the width
    avx2 = fake_device()
    avx2.simd_floats = 8
    assert gemm_kernels._checked_for_simd(lanes, avx2)["LX"] == 8
    assert gemm_kernels._checked_for_simd(dict(lanes, LX=32), avx512)["LX"] == 32   # wider stays
    assert gemm_kernels._checked_for_simd(P | {"LY": 2}, avx512)["LX"] == 1      # packed untouched
    small = fake_device(wg=8)
    small.simd_floats = 16
    assert gemm_kernels._checked_for_simd(lanes, small)["LX"] == 8    # no group that wide: kept
