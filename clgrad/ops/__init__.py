"""Every operation, defined once as a Function (forward, backward, forward-mode rule); the face
(clgrad._face) binds them onto Tensor and the clgrad namespace."""
from . import elementwise, pointwise, views, reduce, creation, join, inplace, index  # noqa: F401
