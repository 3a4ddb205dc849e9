"""GradScaler: loss scaling for float16 training, with torch's defaults and rules.

scale(loss) multiplies by the current scale; unscale_(optimizer) divides the optimizer's
gradients by it and notes whether any is inf or NaN; step(optimizer) unscales if needed and
skips the step when one was; update() shrinks the scale after a skipped step (backoff_factor)
and grows it after growth_interval clean steps in a row (growth_factor).

The unscale and the check run on the device for all gradients together: the gradients of each
dtype are flattened into one tensor, multiplied by 1/scale and checked with one isfinite
reduction; only the final found-inf flag is read to the host, once per step.
"""
from ..autograd.grad_mode import no_grad
from ..kernels.optim import amp_unscale
from ..runtime.recording import host_call


class GradScaler:
    """torch.amp.GradScaler: GradScaler(device="cuda", init_scale=2.**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True).

    >>> import clgrad
    >>> scaler = clgrad.amp.GradScaler("cpu")
    >>> w = clgrad.nn.Parameter(clgrad.ones(2))
    >>> opt = clgrad.optim.SGD([w], lr=0.1)
    >>> scaler.scale((w * 3).sum()).backward()
    >>> scaler.step(opt); scaler.update()
    >>> w.tolist(), scaler.get_scale()
    ([0.699999988079071, 0.699999988079071], 65536.0)
    """

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        if growth_factor <= 1.0:
            raise ValueError("The growth factor must be > 1.0.")
        if backoff_factor >= 1.0:
            raise ValueError("The backoff factor must be < 1.0.")
        self._device = device
        self._enabled = enabled
        self._scale = float(init_scale)
        self._init_scale = float(init_scale)
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._per_optimizer = {}        # id(optimizer) -> {"unscaled": bool, "found_inf": bool}

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def scale(self, outputs):
        """outputs (a tensor or nested lists/tuples of them) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"unscaled": False,
                                                              "found_inf": False})

    @host_call    # host work in a compiled step (runtime/recording.py)
    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale, in place, and record whether any of
        them is inf or NaN. Once per optimizer between updates."""
        if not self._enabled:
            return
        st = self._state(optimizer)
        if st["unscaled"]:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        grads = [p.grad for group in optimizer.param_groups for p in group["params"]
                 if p.grad is not None]
        st["found_inf"] = _unscale_and_check(grads, 1.0 / self._scale)
        st["unscaled"] = True

    @host_call    # host work in a compiled step (runtime/recording.py)
    def step(self, optimizer, *args, **kwargs):
        """unscale_ (if not done), then optimizer.step() unless a gradient was inf or NaN.
        Returns what optimizer.step returned, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        st = self._state(optimizer)
        if not st["unscaled"]:
            self.unscale_(optimizer)
        if st["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    @host_call    # host work in a compiled step (runtime/recording.py)
    def update(self, new_scale=None):
        """Adjust the scale for the next iteration (or set it to new_scale)."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if hasattr(new_scale, "item") else new_scale)
        else:
            found = any(s["found_inf"] for s in self._per_optimizer.values())
            if found:
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer = {}

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._growth_tracker = state_dict["_growth_tracker"]


def _unscale_and_check(grads, inv_scale):
    """Multiply every gradient by inv_scale in place; whether any element was inf or NaN (the
    fused kernel of cl_kernels/optim.mako: one launch per gradient, one flag read)."""
    with no_grad():
        return amp_unscale(grads, inv_scale)
