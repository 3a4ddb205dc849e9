"""The thread-local grad-mode flags: below every layer, since tensors, the engine and the ops all
read them."""
import threading


class _State(threading.local):
    grad_enabled = True
    inference = False
    multithreading = True          # set_multithreading_enabled (no effect in clgrad)


state = _State()
