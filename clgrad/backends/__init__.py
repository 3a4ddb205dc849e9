"""clgrad.backends: torch.backends' switches, accepted so that ported programs run, with what each
means on OpenCL.

- `cudnn.benchmark`, `cudnn.deterministic`, `cudnn.enabled`, `cudnn.allow_tf32`: accepted and
  stored. clgrad's kernels are deterministic already (no atomics in reductions, one fixed order
  of accumulation) and choose their configuration from the tuning database, not by timing at run
  time, so none of them changes results or speed.
- `cuda.matmul.allow_tf32`, `cuda.matmul.allow_fp16_reduced_precision_reduction`,
  `cuda.matmul.allow_bf16_reduced_precision_reduction`: accepted; GEMM accumulates in float32
  whatever they say. `clgrad.set_float32_matmul_precision` stores its value likewise.
- `cuda.is_built()` is True (GPU OpenCL devices are "cuda"), `mps.is_available()` and
  `mps.is_built()` are False.

>>> import clgrad
>>> clgrad.backends.cudnn.benchmark = True
>>> clgrad.backends.mps.is_available(), clgrad.backends.cuda.is_built()
(False, True)
"""
import types


class _Flags(types.SimpleNamespace):
    """A namespace of switches; reading one that was never set is an AttributeError, as in torch
    for a name it does not have."""


def _cudnn_version():
    return None


cudnn = _Flags(benchmark=False, deterministic=False, enabled=True, allow_tf32=True,
               is_available=lambda: False, version=_cudnn_version)
cuda = _Flags(matmul=_Flags(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                            allow_bf16_reduced_precision_reduction=True),
              is_built=lambda: True, flash_sdp_enabled=lambda: False,
              mem_efficient_sdp_enabled=lambda: False, math_sdp_enabled=lambda: True,
              enable_flash_sdp=lambda enabled: None, enable_mem_efficient_sdp=lambda enabled: None,
              enable_math_sdp=lambda enabled: None)
mps = _Flags(is_available=lambda: False, is_built=lambda: False)
mkldnn = _Flags(enabled=False, is_available=lambda: False)
openmp = _Flags(is_available=lambda: False)
opt_einsum = _Flags(enabled=False, strategy=None, is_available=lambda: False)

__all__ = ["cudnn", "cuda", "mps", "mkldnn", "openmp", "opt_einsum"]
