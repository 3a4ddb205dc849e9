"""clgrad._inductor.config: torch._inductor.config's commonly set flags, with torch's defaults.
They are accepted and stored and have NO effect (clgrad has no compiler); setting or reading a
name torch does not have raises AttributeError, as torch's.

>>> import clgrad
>>> clgrad._inductor.config.coordinate_descent_tuning = True
>>> clgrad._inductor.config.coordinate_descent_tuning, clgrad._inductor.config.triton.cudagraphs
(True, False)
"""
import sys
import types

coordinate_descent_tuning = False
coordinate_descent_check_all_directions = False
max_autotune = False
max_autotune_gemm = False
max_autotune_pointwise = False
epilogue_fusion = True
fx_graph_cache = True
fx_graph_remote_cache = None
autotune_local_cache = True
freezing = False
force_fuse_int_mm_with_mul = False
use_mixed_mm = True
debug = False
benchmark_kernel = False
compile_threads = 1
shape_padding = True
permute_fusion = False
aggressive_fusion = False
conv_1x1_as_mm = False
split_reductions = True
cpp_wrapper = False
fallback_random = False
implicit_fallbacks = True
layout_optimization = True


class _Section(types.SimpleNamespace):
    """A group of flags (config.triton): unknown names raise AttributeError as torch's."""

    def __setattr__(self, name, value):
        if name not in self.__dict__:
            raise AttributeError(f"torch._inductor.config.triton.{name} does not exist")
        self.__dict__[name] = value

    def __getattr__(self, name):
        raise AttributeError(f"torch._inductor.config.triton.{name} does not exist")


triton = _Section(cudagraphs=False, cudagraph_trees=True, unique_kernel_names=True,
                  descriptive_names="original_aten", autotune_pointwise=True,
                  persistent_reductions=True)


class _ConfigModule(types.ModuleType):
    def __setattr__(self, name, value):
        if name not in self.__dict__:
            raise AttributeError(f"torch._inductor.config.{name} does not exist")
        super().__setattr__(name, value)

    def __getattr__(self, name):
        raise AttributeError(f"torch._inductor.config.{name} does not exist")


sys.modules[__name__].__class__ = _ConfigModule
