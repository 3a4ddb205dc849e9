"""clgrad._inductor: only `config`, so that scripts written for torch.compile's backend can set
its flags (llm.c: `torch._inductor.config.coordinate_descent_tuning = True`). clgrad has no
compiler: the flags are stored and have no effect."""
from . import config

__all__ = ["config"]
