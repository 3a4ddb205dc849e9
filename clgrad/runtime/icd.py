"""Make OpenCL drivers installed from pip visible to the ICD loader.

The loader inside pyopencl's wheel finds PoCL and Oclgrind (their wheels put their `.icd` files
where it looks) and whatever `/etc/OpenCL/vendors` (or `$OCL_ICD_VENDORS`) lists. Intel's CPU
runtime from pip (`pip install clgrad[intel]`, i.e. `intel-opencl-rt`) installs `libintelocl.so`
into the environment's `lib/`, but the `.icd` file its wheel carries names a path on the machine
that built it, so no loader finds the driver. Before the first platform query clgrad therefore
writes a vendors folder that holds the `.icd` files the loader would have read anyway plus one
that names the installed library, and points `OCL_ICD_VENDORS` at it. The loader reads that
variable once, at its first call, so this must run before anything lists the platforms.

CLGRAD_PIP_DRIVERS=0 turns it off.
"""
import hashlib
import os
import site
import sys
import tempfile
from pathlib import Path

SYSTEM_VENDORS = "/etc/OpenCL/vendors"

# (name of the .icd we write, the library a pip package installs)
PIP_DRIVERS = [("clgrad-intel-cpu.icd", "libintelocl.so")]


def _lib_dirs():
    """Where pip puts a package's shared libraries: the environment's lib/ (a venv, conda or
    the system prefix) and the user base's lib/ for `pip install --user`."""
    dirs = [Path(sys.prefix) / "lib", Path(sys.base_prefix) / "lib"]
    try:
        dirs.append(Path(site.getuserbase()) / "lib")
    except Exception:         # pragma: no cover - site without a user base
        pass
    if os.environ.get("CONDA_PREFIX"):
        dirs.append(Path(os.environ["CONDA_PREFIX"]) / "lib")
    seen, out = set(), []
    for d in dirs:
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def find_pip_drivers():
    """{icd file name: absolute library path} for each pip-installed driver present.

    >>> isinstance(find_pip_drivers(), dict)
    True
    """
    found = {}
    for icd, lib in PIP_DRIVERS:
        for d in _lib_dirs():
            if (d / lib).is_file():
                found[icd] = str((d / lib).resolve())
                break
    return found


def _existing_icds(vendors):
    """{file name: contents} of the .icd files in the vendors folder the loader would read."""
    out = {}
    if vendors and os.path.isdir(vendors):
        for name in sorted(os.listdir(vendors)):
            if name.endswith(".icd"):
                try:
                    out[name] = Path(vendors, name).read_text().strip()
                except OSError:
                    pass
    return out


def vendors_folder(drivers, vendors, base):
    """Write (under `base`) a vendors folder holding the .icd files of the folder `vendors` plus
    one per driver in `drivers` ({icd name: library path}) that `vendors` does not already name.
    Returns the folder, or None when there is nothing to add.

    >>> import tempfile
    >>> vendors_folder({}, "/nonexistent", tempfile.gettempdir()) is None
    True
    """
    icds = _existing_icds(vendors)
    listed = {os.path.basename(v) for v in icds.values()}
    # a driver the system already lists (by library name) is not added twice
    add = {n: lib for n, lib in drivers.items() if os.path.basename(lib) not in listed}
    if not add:
        return None
    icds.update(add)
    text = "\n".join(f"{n}={v}" for n, v in sorted(icds.items()))
    folder = Path(base) / ("clgrad-icd-" + hashlib.sha256(text.encode()).hexdigest()[:16])
    folder.mkdir(parents=True, exist_ok=True)
    for name, contents in icds.items():
        path = folder / name
        if not path.exists() or path.read_text().strip() != contents:
            tmp = folder / f".{name}.{os.getpid()}"        # atomic: other processes may read it
            tmp.write_text(contents + "\n")
            os.replace(tmp, path)
    return str(folder)


def register_pip_drivers():
    """Point the ICD loader at a vendors folder that also names the pip-installed drivers (see
    the module's docstring). Returns the folder, or None when there was nothing to add, when
    OCL_ICD_VENDORS names a single library (the user's choice) or when it is turned off."""
    if os.environ.get("CLGRAD_PIP_DRIVERS", "1").strip().lower() in ("0", "off", "no", "false"):
        return None
    drivers = find_pip_drivers()
    if not drivers:
        return None
    vendors = os.environ.get("OCL_ICD_VENDORS") or SYSTEM_VENDORS
    if vendors != SYSTEM_VENDORS and not os.path.isdir(vendors):
        return None
    try:
        folder = vendors_folder(drivers, vendors, tempfile.gettempdir())
    except OSError:
        return None          # an unwritable temp folder: the driver stays invisible
    if folder is not None:
        os.environ["OCL_ICD_VENDORS"] = folder
    return folder
