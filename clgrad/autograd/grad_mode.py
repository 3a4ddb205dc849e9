"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode. Thread-local, like torch's."""
import functools
import inspect

from .._grad_state import state


def is_grad_enabled():
    """Whether operations record the graph in this thread.

    >>> import clgrad
    >>> clgrad.is_grad_enabled()
    True
    """
    return state.grad_enabled


def is_inference_mode_enabled():
    """Whether this thread is inside `inference_mode()`.

    >>> import clgrad
    >>> clgrad.is_inference_mode_enabled()
    False
    """
    return state.inference


class _DecoratorContextManager:
    """Usable as `with mode():`, as `@mode()` and as `@mode` on functions and generators."""

    def __new__(cls, *args, **kwargs):
        if cls is not set_grad_enabled and len(args) == 1 and callable(args[0]) and not kwargs \
                and not isinstance(args[0], bool):
            return cls()(args[0])           # used as a bare decorator: @no_grad
        return super().__new__(cls)

    def __call__(self, func):
        if inspect.isclass(func):
            raise RuntimeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                with self.clone():
                    try:
                        value = next(gen)
                    except StopIteration as e:
                        return e.value
                while True:
                    try:
                        sent = yield value
                    except GeneratorExit:
                        gen.close()
                        raise
                    except BaseException:
                        with self.clone():
                            value = gen.throw(*__import__("sys").exc_info())
                        continue
                    with self.clone():
                        try:
                            value = gen.send(sent)
                        except StopIteration as e:
                            return e.value
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self):
        return type(self)()


class no_grad(_DecoratorContextManager):
    """Context manager and decorator that turns graph recording off.

    >>> import clgrad
    >>> x = clgrad.ones(2, requires_grad=True)
    >>> with clgrad.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    def __enter__(self):
        self.prev = state.grad_enabled
        state.grad_enabled = False

    def __exit__(self, *exc):
        state.grad_enabled = self.prev
        return False


class enable_grad(_DecoratorContextManager):
    """Context manager and decorator that turns graph recording on (inside no_grad, say).

    >>> import clgrad
    >>> x = clgrad.ones(2, requires_grad=True)
    >>> with clgrad.no_grad():
    ...     with clgrad.enable_grad():
    ...         y = x * 2
    >>> y.requires_grad
    True
    """

    def __enter__(self):
        self.prev = state.grad_enabled
        state.grad_enabled = True

    def __exit__(self, *exc):
        state.grad_enabled = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode on or off: takes effect at once as a plain call, and is undone at the end of
    a `with` block or decorated function.

    >>> import clgrad
    >>> _ = clgrad.set_grad_enabled(False)
    >>> clgrad.is_grad_enabled()
    False
    >>> _ = clgrad.set_grad_enabled(True)
    """

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not "
                            f"{type(mode).__name__}")
        self.prev = state.grad_enabled
        self.mode = mode
        state.grad_enabled = mode

    def __call__(self, func):
        state.grad_enabled = self.prev          # as a decorator it applies only inside func
        return super().__call__(func)

    def __enter__(self):
        state.grad_enabled = self.mode

    def __exit__(self, *exc):
        state.grad_enabled = self.prev
        return False

    def clone(self):
        return set_grad_enabled.__new__(set_grad_enabled)._init_quiet(self.mode)

    def _init_quiet(self, mode):
        self.prev = state.grad_enabled
        self.mode = mode
        return self


class inference_mode(_DecoratorContextManager):
    """Like no_grad, and tensors made inside are inference tensors: they can never be saved for
    backward nor modified in place outside inference mode.

    >>> import clgrad
    >>> with clgrad.inference_mode():
    ...     y = clgrad.ones(2) * 2
    >>> y.is_inference(), y.requires_grad
    (True, False)
    """

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        self.prev = (state.grad_enabled, state.inference)
        if self.mode:
            state.grad_enabled = False
            state.inference = True
        else:
            state.inference = False

    def __exit__(self, *exc):
        state.grad_enabled, state.inference = self.prev
        return False

    def clone(self):
        return type(self)(self.mode)


class set_multithreading_enabled(_DecoratorContextManager):
    """Accepted for torch compatibility: clgrad's engine always runs backward on the calling
    thread (one in-order queue per device leaves nothing to overlap), so the mode changes nothing.

    >>> import clgrad
    >>> with clgrad.autograd.set_multithreading_enabled(False):
    ...     pass
    """

    def __init__(self, mode):
        self.prev = state.multithreading
        self.mode = bool(mode)
        state.multithreading = self.mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state.multithreading = self.prev
        return False

    def clone(self):
        return type(self)(self.mode)
