"""Every operation, defined once as a Function (forward, backward, forward-mode rule); the face
(clgrad._face) binds them onto Tensor and the clgrad namespace.

Each module listed in MODULES may define FUNCTIONS ({name: function}, exported as clgrad.<name>)
and METHODS ({name: function}, bound as Tensor.<name>); the face registers them in this order."""
from . import elementwise, pointwise, views, reduce, creation, join, inplace, index  # noqa: F401
from . import subscript, scatter_gather  # noqa: F401
from . import linalg, softmax, scan, shape, conv, sort, einsum, special, arrange  # noqa: F401
from . import stats, methods, storage, linalg_lu, linalg_decomp, scatter_reduce  # noqa: F401
from . import creation_forms, function_forms  # noqa: F401
from . import numeric, complexes  # noqa: F401
from . import fft, spectral  # noqa: F401

MODULES = [pointwise, subscript, scatter_gather, join, linalg, softmax, scan, shape, conv, sort,
           einsum, special, arrange, stats, methods, storage, linalg_lu, linalg_decomp,
           scatter_reduce, creation_forms, function_forms, numeric, complexes, spectral]
