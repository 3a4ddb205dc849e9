"""torch's top-level RNN cell ops (clgrad.rnn_tanh_cell, rnn_relu_cell, lstm_cell, gru_cell) live
in clgrad/ops/rnn_step.py, beside the step functions they run; this name is kept only for the
namespace's import of it (clgrad/__init__.py), which moves to the ops module next."""
from ..ops.rnn_step import *  # noqa: F401,F403
from ..ops.rnn_step import __all__  # noqa: F401
