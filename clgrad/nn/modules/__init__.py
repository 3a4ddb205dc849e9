"""The layer classes of clgrad.nn, one module per family as in torch.nn.modules."""
from .module import Module
from .container import (Container, ModuleDict, ModuleList, ParameterDict, ParameterList,
                        Sequential)
from .linear import Bilinear, Identity, Linear
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .fold import Fold, Unfold
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm
from .normalization import GroupNorm, LayerNorm
from .dropout import (AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d,
                      FeatureAlphaDropout)
from .sparse import Embedding, EmbeddingBag
from . import activation as _activation, loss as _loss, upsampling as _upsampling
from . import normalization as _normalization, pooling as _pooling, pixelshuffle as _pixel
from .pooling import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
from .activation import (ELU, GELU, LeakyReLU, LogSoftmax, MultiheadAttention, ReLU, SiLU,
                         Sigmoid, Softmax, Softplus, Tanh)
from .activation import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .flatten import Flatten, Unflatten
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,
                          TransformerEncoder, TransformerEncoderLayer)
from . import lazy as _lazy
from .adaptive import AdaptiveLogSoftmaxWithLoss
from .lazy import *  # noqa: F401,F403
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase
from . import padding as _padding
from .padding import *  # noqa: F401,F403
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss,
                   NLLLoss, SmoothL1Loss)

__all__ = [
    "Module", "Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
    "ParameterDict", "Identity", "Linear", "Bilinear", "AlphaDropout", "FeatureAlphaDropout",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "Fold", "Unfold", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LayerNorm", "GroupNorm", "Dropout", "Dropout1d",
    "Dropout2d", "Dropout3d", "Embedding", "EmbeddingBag", "ReLU",
    "LeakyReLU", "ELU", "GELU", "SiLU", "Softplus", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
    "Flatten", "Unflatten", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "NLLLoss",
    "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss", "RNNBase", "RNN", "LSTM", "GRU",
    "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "MultiheadAttention", "Transformer",
    "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
    "TransformerDecoderLayer", "AdaptiveLogSoftmaxWithLoss",
] + _padding.__all__
__all__ += [n for n in _activation.__all__ + _loss.__all__ + _upsampling.__all__ +
            _normalization.__all__ + _pooling.__all__ + _pixel.__all__ +
            [n for n in _lazy.__all__ if n != "LazyModuleMixin"] if n not in __all__]
