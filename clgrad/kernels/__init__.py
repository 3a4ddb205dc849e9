"""The kernels layer: one module per template of cl_kernels/, holding that family's
`KernelFamily` (clgrad.runtime.family) and its raw launches (`*_raw`): functions that take tensors
and plain values and enqueue kernels, with no autograd. The ops layer builds its Functions on
them; this layer imports only the runtime, the tensor layer and dtypes.

A new kernel family: `cl_kernels/<name>.mako` and `clgrad/kernels/<name>.py` beside it.
"""
