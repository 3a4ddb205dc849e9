"""torch.nn.attention: which kernels run F.scaled_dot_product_attention.

clgrad has two forms (clgrad/ops/attention.py): the fused kernels (flash-attention style: tiled,
online softmax, memory linear in the sequence length), which stand for torch's FLASH_ATTENTION
and EFFICIENT_ATTENTION, and the composed MATH form (matmul, softmax, matmul). With every
backend enabled clgrad picks per call; `sdpa_kernel` narrows the choice, as torch's does.
"""
import contextlib
import enum

from ..ops import attention as _attention

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """torch's backend names and values. FLASH_ATTENTION and EFFICIENT_ATTENTION both select
    clgrad's fused kernels; CUDNN_ATTENTION and OVERRIDEABLE have no clgrad kernel.

    >>> from clgrad.nn.attention import SDPBackend
    >>> int(SDPBackend.FLASH_ATTENTION)
    1
    """
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_FORM = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "fused",
         SDPBackend.EFFICIENT_ATTENTION: "fused"}


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Within the block, F.scaled_dot_product_attention uses only `backends` (one SDPBackend or
    a list); with set_priority=True the first usable one in the list's order.

    >>> import clgrad, clgrad.nn.functional as F
    >>> from clgrad.nn.attention import SDPBackend, sdpa_kernel
    >>> q = clgrad.randn(1, 2, 5, 8)
    >>> with sdpa_kernel(SDPBackend.FLASH_ATTENTION):      # the fused kernels
    ...     out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    >>> out.shape
    clgrad.Size([1, 2, 5, 8])
    """
    if isinstance(backends, SDPBackend):
        backends = [backends]
    if not isinstance(backends, (list, tuple)) or \
            not all(isinstance(b, SDPBackend) for b in backends):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    forms = tuple(dict.fromkeys(_FORM[b] for b in backends if b in _FORM))
    saved = dict(_attention.BACKENDS)
    _attention.BACKENDS.update(enabled=forms, priority=bool(set_priority))
    try:
        yield {}
    finally:
        _attention.BACKENDS.update(saved)
