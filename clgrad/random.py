"""clgrad.random: torch.random's functions over clgrad's one Philox generator (it serves every
device, so the "cuda" states that torch's fork_rng saves are the same state).

>>> import clgrad
>>> _ = clgrad.random.manual_seed(1); a = clgrad.rand(2)
>>> with clgrad.random.fork_rng():
...     _ = clgrad.rand(5)                  # draws inside do not move the stream outside
>>> b = clgrad.rand(2); _ = clgrad.random.manual_seed(1); _ = clgrad.rand(2)
>>> b.tolist() == clgrad.rand(2).tolist()
True
"""
import contextlib

from .ops.creation import (Generator, default_generator, get_rng_state, initial_seed,
                           manual_seed, seed, set_rng_state)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """Context manager: the generator's state is saved on entry and restored on exit, so the
    numbers drawn inside do not change those drawn after. `enabled=False` does nothing;
    `devices` and `device_type` are accepted as torch's (one generator serves every device).

    >>> import clgrad
    >>> _ = clgrad.manual_seed(0)
    >>> with clgrad.random.fork_rng():
    ...     _ = clgrad.manual_seed(5); x = clgrad.rand(1)
    >>> clgrad.initial_seed()
    0
    """
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
