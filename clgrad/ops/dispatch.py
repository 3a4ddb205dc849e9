"""`F`: the nn.functional namespace as the ops layer sees it, set by clgrad/nn/functional.py when
it is imported (nn sits above ops, so it is handed down rather than imported, as the face fills
the autograd core's `ops`).

An op composed of nn.functional's functions calls an inner one through `F` where torch's
dispatcher would apply autocast to that inner call and clgrad's autocast wraps it (a function
that clgrad.amp.autocast_mode's lists name: linear, softmax, softplus, conv1d, group_norm, ...):
the region's wrapper of nn.functional.<name> then applies, so nn.MultiheadAttention's
projections and an RNN step's GEMMs run in the region's dtype and linear_cross_entropy's loss in
float32, as torch's. Other inner calls stay direct. Nothing calls through `F` at import time.

>>> import clgrad
>>> from clgrad.ops import dispatch
>>> dispatch.F is clgrad.nn.functional
True
"""
F = None
