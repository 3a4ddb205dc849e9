"""clgrad.version: as torch.version, what the build is. clgrad runs on OpenCL, not CUDA, ROCm
or XPU, so those are None (torch's value on a build without them), and scripts that test
`torch.version.cuda` take their non-CUDA path.

>>> import clgrad
>>> clgrad.version.__version__ == clgrad.__version__, clgrad.version.cuda, clgrad.version.hip
(True, None, None)
"""
from ._version import __version__

__all__ = ["__version__", "cuda", "hip", "rocm", "xpu", "debug", "git_version"]

cuda = None
hip = None
rocm = None
xpu = None
debug = False
git_version = "Unknown"         # a source tree, not a build that recorded its commit
