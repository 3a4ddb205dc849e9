"""Kernel builds: programs split into units (one kernel with the program's prelude), every unit
compiling on the device, the binary cache per unit, and builds that print nothing."""
import os
import re
import textwrap

import pyopencl as cl
import pytest

import clgrad
from helpers import run_python
from clgrad.runtime.kernels import (ALL_PROGRAMS, _SIG, MissingKernelError, Program, _Split,
                                    built_kernels, get_kernel, split_kernels)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))



def _run(code, env=None):
    return run_python(code, env)


_CALL = re.compile(r"\b(\w+)\s*\(")     # an identifier called as a function


def _programs():
    return [p for p in ALL_PROGRAMS if p.family not in ("broken", "demo", "cachetest")]


@pytest.mark.host
def test_split_is_exact_on_every_program():
    """Each piece holds its kernel and the whole prelude, no other kernel; put back together the
    pieces are the program; no kernel calls another (a piece would miss it)."""
    for p in _programs():
        split = _Split(p.source)
        assert split.names == list(p.signatures), p.name
        assert split.source(set(split.names)) == p.source, p.name
        prelude = "".join(split.texts)
        assert not _SIG.search(prelude), p.name
        pieces = split_kernels(p.source)
        for name, piece in pieces.items():
            # the piece is the prelude (no kernel in it) and this kernel (the only one in it)
            kernel = split.kernels[split.names.index(name)]
            assert [m.group(1) for m in _SIG.finditer(kernel)] == [name], (p.name, name)
            assert kernel in piece and piece.replace(kernel, "", 1) == prelude, (p.name, name)
        kernels = set(split.names)
        for name, kernel in zip(split.names, split.kernels):
            called = set(_CALL.findall(kernel[kernel.index("{"):])) & kernels
            assert not called, (p.name, name, called)


@pytest.mark.host
def test_split_skips_braces_in_comments_strings_and_macros():
    src = textwrap.dedent("""
        #define BLOCK(x) do { x; } while (0) /* { */
        // __kernel void not_me(int a) {
        inline int helper(int a) { return a > 0 ? a : -a; }
        __kernel void first(__global int *p) { BLOCK(p[0] = helper(p[0])); /* } */ }
        #if 1
        __kernel __attribute__((reqd_work_group_size(1, 1, 1))) void second(__global int *p)
        {
            if (p[0]) { p[1] = '}'; }
        }
        #endif
    """)
    pieces = split_kernels(src)
    assert sorted(pieces) == ["first", "second"]
    assert "helper" in pieces["second"] and "void first" not in pieces["second"]
    assert "#if 1" in pieces["first"] and "#endif" in pieces["first"]
    with pytest.raises(ValueError, match="unbalanced"):
        split_kernels("__kernel void f(__global int *p) { if (p[0]) { }")


def test_units_compile_and_run(device):
    """A kernel built alone and the whole program give the same results."""
    src = textwrap.dedent("""
        inline float twice(float x) { return 2 * x; }
        __kernel void one(__global float *x) { x[get_global_id(0)] = twice(x[get_global_id(0)]); }
        __kernel void two(__global float *x) { x[get_global_id(0)] += 1; }
    """)
    p = Program("demo", "units", src)
    assert p.unit("one").kernels == ["one"] and p.unit(None).kernels == ["one", "two"]
    assert "void two" not in p.unit("one").source and "twice" in p.unit("two").source
    x = clgrad.ones(4)
    for key in ("one", None):
        cl.Kernel(p.build(device, key), "one")(device.queue, (4,), None, x._storage.buf)
    assert x.tolist() == [4.0] * 4
    get_kernel(device, p, "two")(device.queue, (4,), None, x._storage.buf)
    assert x.tolist() == [5.0] * 4
    with pytest.raises(KeyError):
        get_kernel(device, p, "three")
    with pytest.raises(KeyError):
        p.unit("three")


def test_builds_on_a_racing_build_cache_hold_a_lock_across_processes(device, monkeypatch,
                                                                     tmp_path):
    """On a device whose build cache races, a unit is built while holding an exclusive file lock
    (kernels.build_lock) in the cache directory's locks/, which another process (here another open
    file of the same lock) cannot take until the build is done; elsewhere nothing is locked."""
    fcntl = pytest.importorskip("fcntl")
    from clgrad.runtime import kernels
    real, held = cl._cl._Program, []

    def lock_is_held():
        files = list((tmp_path / "locks").glob("build-*.lock"))
        if not files:
            return False
        assert len(files) == 1, files
        with open(files[0]) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False

    class Watched:                         # the driver's program, asked at its build
        def __init__(self, *args):
            self.prog = real(*args)

        def _build(self, **kw):
            held.append(lock_is_held())
            self.prog._build(**kw)

        def __getattr__(self, name):
            return getattr(self.prog, name)
    x = clgrad.ones(4, device=device)
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    src = "__kernel void k(__global float *x) { x[get_global_id(0)] += 3; }"
    for races in (True, False):
        monkeypatch.setattr(device, "races_in_build_cache", races)
        held.clear()
        with monkeypatch.context() as m:
            m.setattr(kernels.cl._cl, "_Program", Watched)
            prog = kernels.build_unit(device, Program("demo", f"lock{races}", src).unit(None), "")
        assert held and all(h == races for h in held), held
        assert not lock_is_held()                          # released once built
    cl.Kernel(prog.prog, "k")(device.queue, (4,), None, x._storage.buf)
    assert x.tolist() == [4.0] * 4


def test_a_build_that_fails_without_a_diagnostic_is_tried_again(device, monkeypatch):
    """On a device whose build cache races (PoCL 3.1: a build fails now and then, with no
    diagnostic, when processes build one kernel at once), such a failure is built again and the
    kernel runs; a failure whose log has a compiler diagnostic is reported at once."""
    from clgrad.runtime import kernels
    real, builds = cl._cl._Program, []

    class FailsFirst:                      # the driver's program, whose first build fails
        def __init__(self, *args):
            self.prog = real(*args)

        def _build(self, **kw):
            builds.append(self)
            if len(builds) == 1:
                raise cl.Error("build failed")
            self.prog._build(**kw)

        def get_build_info(self, *args):
            return self.log

        def __getattr__(self, name):
            return getattr(self.prog, name)
    monkeypatch.setattr(device, "races_in_build_cache", True)
    before = kernels.BUILD_STATS["retried_builds"]
    src = "__kernel void k(__global float *x) { x[get_global_id(0)] += 2; }"
    x = clgrad.ones(4, device=device)
    for log, retried in (("Device X failed to build the program\n", 1),
                         ("x.cl:1:5: error: use of undeclared identifier\n", 0)):
        builds.clear()
        FailsFirst.log = log
        unit = Program("demo", f"retry{retried}", src).unit(None)
        with monkeypatch.context() as m:
            m.setattr(kernels.cl._cl, "_Program", FailsFirst)
            m.setattr(kernels, "_binary_path", lambda *a: None)     # built, not loaded
            if retried:
                prog = kernels.build_unit(device, unit, "")
            else:
                with pytest.raises(kernels.KernelBuildError, match="undeclared"):
                    kernels.build_unit(device, unit, "")
        assert len(builds) == 1 + retried
    cl.Kernel(prog.prog, "k")(device.queue, (4,), None, x._storage.buf)
    assert x.tolist() == [3.0] * 4
    assert kernels.BUILD_STATS["retried_builds"] == before + 1


def test_a_kernel_missing_from_a_built_program_says_so(device):
    """A program that builds without a kernel its source defines (here the build options leave it
    out; a driver that drops one fails the same way) raises with the kernel, the unit, what was
    built and the build log, not the driver's bare INVALID_KERNEL_NAME."""
    src = textwrap.dedent("""
        __kernel void kept(__global float *x) { x[0] = 1; }
        #ifdef NEVER_DEFINED
        __kernel void gone(__global float *x) { x[0] = 2; }
        #endif
    """)
    p = Program("demo", "missing", src)
    get_kernel(device, p, "kept")
    with pytest.raises(MissingKernelError, match=r"(?s)'gone' is missing.*demo_missing.*"
                                                  r"--- build log ---"):
        get_kernel(device, p, "gone")


def _check_build(device, program, key):
    if "f64" in program.variant and not device.has_fp64:
        return
    missing = set(program.unit(key).kernels) - built_kernels(program.build(device, key))
    if missing:        # only kernels that the program's build options leave out (#ifdef)
        assert not missing & built_kernels(program.build(device, None)), (program.name, key)


def test_every_family_builds_in_units(device):
    """The first and last kernel of every float32 program built alone (the last one needs the
    whole prelude). With CLGRAD_TEST_ALL_UNITS=1: every kernel of every program (many minutes)."""
    everything = os.environ.get("CLGRAD_TEST_ALL_UNITS") == "1"
    for p in _programs():
        if not everything and p.variant != "f32" and not p.variant.startswith("f32_"):
            continue
        names = list(p.signatures)
        for key in names if everything else [names[0], names[-1]]:
            _check_build(device, p, key)


def test_builds_print_nothing(device, tmp_path):
    """No compiler output reaches the user: neither the compiler's own lines on stderr nor
    pyopencl's CompilerWarning (Intel's build log is never empty), for the programs whose
    templates used to warn, built whole and in units, from source and then from the caches
    (clgrad's binaries, or PoCL's own cache)."""
    code = f"""
        import clgrad
        from clgrad.runtime.kernels import get_kernel
        from clgrad.ops.elementwise import PROGRAMS
        dev = clgrad.cl.devices()[{device.index}]
        for dt in (clgrad.int32, clgrad.uint8, clgrad.bool):
            p = PROGRAMS[(1, dt)]
            for key in (None, "isnan_c_t", "isfinite_s_t"):
                p.build(dev, key)
            get_kernel(dev, p, "isinf_s_t")
        print("built")
    """
    env = {"CLGRAD_CACHE_DIR": str(tmp_path), "POCL_CACHE_DIR": str(tmp_path / "pocl"),
           "PYTHONWARNINGS": "always"}
    for _ in range(2):                 # from source, then from the caches
        r = _run(code, env)
        assert r.returncode == 0 and r.stdout.strip() == "built", r.stderr
        assert r.stderr == "", r.stderr


def test_binary_cache_round_trip_per_unit(tmp_path):
    """A second process loads each unit's binary instead of compiling; a damaged binary is
    rebuilt from source."""
    code = """
        import clgrad
        from clgrad.runtime.kernels import BUILD_STATS, Program, get_kernel
        p = Program("cachetest", "f32", '''
            inline float three(void) { return 3; }
            __kernel void twice(__global float *x) { x[0] *= 2; }
            __kernel void thrice(__global float *x) { x[0] *= three(); }''')
        x = clgrad.ones(1)
        for name in ("twice", "thrice"):
            get_kernel(x._device, p, name)(x._device.queue, (1,), (1,), x._storage.buf)
        assert x.item() == 6.0, x.item()
        print(BUILD_STATS["built_from_source"], BUILD_STATS["loaded_binary"])
    """
    env = {"CLGRAD_CACHE_DIR": str(tmp_path), "CLGRAD_BINARY_CACHE": "always",
           "CLGRAD_BUILD_UNIT": "kernel"}
    first = _run(code, env)
    assert first.returncode == 0, first.stderr
    built, loaded = map(int, first.stdout.split())
    bins = sorted(tmp_path.glob("*.bin"))
    assert built >= 2 and loaded == 0 and len(bins) >= 2
    second = _run(code, env)
    assert second.returncode == 0, second.stderr
    built2, loaded2 = map(int, second.stdout.split())
    assert loaded2 >= 2 and built2 == built - loaded2
    for b in bins:
        b.write_bytes(b"not a binary")
    third = _run(code, env)
    assert third.returncode == 0, third.stderr
    assert third.stdout.split() == first.stdout.split()


@pytest.mark.host
def test_template_modules_are_kept_by_the_templates_contents(tmp_path, monkeypatch):
    """Mako's modules of the templates go to a folder of the cache named by the templates'
    contents: a second process renders from them what a process without a cache renders; a
    checkout whose template differs gets another folder (Mako alone picks a module by its name
    and time); without a cache there is no folder."""
    import shutil
    from clgrad.runtime import kernels
    code = """
        import hashlib
        import clgrad
        from clgrad.runtime.kernels import ALL_PROGRAMS, _templates
        print(_templates().module_directory)
        print(hashlib.sha256("".join(p.source for p in ALL_PROGRAMS).encode()).hexdigest())
    """
    runs = [run_python(code, {"CLGRAD_CACHE_DIR": d})
            for d in (str(tmp_path), str(tmp_path), "off")]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    (folder, first), (again, second), (none, plain) = (r.stdout.split() for r in runs)
    assert folder == again and none == "None" and first == second == plain
    assert os.path.dirname(folder) == str(tmp_path / "templates")
    assert {"common.mako.py", "elementwise.mako.py"} <= set(os.listdir(folder))

    checkout = tmp_path / "cl_kernels"
    shutil.copytree(kernels.KERNEL_DIR, checkout)
    monkeypatch.setattr(kernels, "KERNEL_DIR", checkout)
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    assert kernels._template_modules() == folder
    (checkout / "copy.mako").write_text((checkout / "copy.mako").read_text() + "## changed\n")
    assert kernels._template_modules() not in (folder, None)
    monkeypatch.setenv("CLGRAD_CACHE_DIR", "off")
    assert kernels._template_modules() is None


@pytest.mark.host
def test_every_package_is_in_the_wheel():
    """setup.cfg lists clgrad's packages one by one: a package missing there is missing from the
    wheel (CI's last stage would find it; this finds it in the first)."""
    import configparser
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(root, "setup.cfg"))
    listed = set(cfg["options"]["packages"].split())
    found = {os.path.relpath(d, root).replace(os.sep, ".")
             for d, _, files in os.walk(os.path.join(root, "clgrad")) if "__init__.py" in files}
    assert found <= listed, f"add to setup.cfg's packages: {sorted(found - listed)}"
