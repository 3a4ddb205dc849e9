"""clgrad.nn.utils: gradient clipping, flattening parameters into one vector, parametrizations
(utils.parametrize, utils.parametrizations and the legacy hook-based weight_norm and
spectral_norm), pruning (utils.prune), utils.stateless.functional_call, and (utils.rnn)
variable-length sequences for the recurrent layers."""
from . import parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import clip_grad_norm_, clip_grad_value_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters", "rnn", "parametrize", "parametrizations", "weight_norm",
           "remove_weight_norm", "spectral_norm", "remove_spectral_norm", "prune", "stateless"]
