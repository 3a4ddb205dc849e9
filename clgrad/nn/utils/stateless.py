"""clgrad.nn.utils.stateless: torch's (deprecated) functional_call, the same as
clgrad.func.functional_call, with torch's FutureWarning."""
import warnings
from ...func import functional_call as _call

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True,
                    strict=False):
    """module(*args, **kwargs) with the named parameters and buffers replaced for this call.

    >>> import clgrad, warnings
    >>> from clgrad.nn.utils.stateless import functional_call
    >>> lin = clgrad.nn.Linear(2, 1, bias=False)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     functional_call(lin, {"weight": clgrad.ones(1, 2)}, (clgrad.ones(1, 2),)).item()
    2.0
    """
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and "
                  "will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights,
                 strict=strict)
