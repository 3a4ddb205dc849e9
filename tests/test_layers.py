"""The layer map (DESIGN.md section 2, docs/internals.md): imports point down. Read from the source
by tools/import_graph.py; no device needed. Each assertion pins what has been cleaned so far, so
that it cannot come back."""
import importlib.util
import os

import pytest

pytestmark = pytest.mark.host      # read from the source: no device under test

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "import_graph.py")

# modules whose imports (module-level, and function-level where named below) point down only
CLEAN = ["clgrad.tensor", "clgrad.autograd", "clgrad.autograd.node", "clgrad.autograd.views",
         "clgrad.autograd.function", "clgrad.autograd.op", "clgrad.autograd.engine",
         "clgrad.autograd.grad_mode", "clgrad.ops.creation_forms", "clgrad.ops.function_forms"]
# the biggest import cycle (module-level imports, package __init__ edges included): none is left
# (nn.functional's computations moved into ops, `_ntuple` into ops/window_args.py, PackedSequence
# out of the nn.utils package)
MAX_CYCLE = 0


def _graph():
    spec = importlib.util.spec_from_file_location("import_graph", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.analyse(ROOT)


def test_every_module_has_a_layer():
    g = _graph()
    for m in g.modules:
        g.layer_of(m)           # KeyError names a module the layer map does not place


def test_cleaned_modules_import_only_down():
    g = _graph()
    up = [f"{i.src}:{i.line} -> {i.dst}" for i in g.upward("module") if i.src in CLEAN]
    assert not up, "module-level imports that point up the layer map:\n" + "\n".join(up)


def test_the_kernels_layer_imports_only_down():
    """clgrad/kernels/: the raw launches import the runtime, tensors and each other, never ops,
    autograd or nn, at module level or inside a function."""
    g = _graph()
    up = [f"{i.src}:{i.line} -> {i.dst}" for kind in ("module", "function")
          for i in g.upward(kind) if i.src.startswith("clgrad.kernels")]
    assert not up, "the kernels layer imports up:\n" + "\n".join(up)


def test_tensor_and_the_torch_forms_hide_no_upward_import():
    g = _graph()
    up = [f"{i.src}:{i.line} -> {i.dst}" for i in g.upward("function")
          if i.src in ("clgrad.tensor", "clgrad.ops.creation_forms",
                       "clgrad.ops.function_forms") and
          g.rank(i.dst) > g.rank("clgrad.autograd.node")]
    assert not up, "function-level imports that point up the layer map:\n" + "\n".join(up)


def test_autograd_core_does_not_import_the_extras():
    g = _graph()
    core = [m for m in g.modules if g.layer_of(m) == "autograd core"]
    bad = [f"{i.src}:{i.line} -> {i.dst}" for i in g.edges("module", implicit=False)
           if i.src in core and g.rank(i.dst) > g.rank(i.src)]
    assert not bad, "\n".join(bad)


def test_no_module_level_import_points_up():
    g = _graph()
    up = [f"{i.src}:{i.line} -> {i.dst}" for i in g.upward("module")]
    assert not up, "module-level imports that point up the layer map:\n" + "\n".join(up)


def test_ops_and_the_face_never_import_nn():
    """nn sits on ops: nn.functional's computations are ops modules (clgrad/ops/activation.py,
    loss.py, ...), which the face (Tensor.prelu, clgrad.dropout, clgrad.lstm_cell) calls
    directly; nothing below nn imports it, at module level or inside a function."""
    g = _graph()
    bad = [f"{i.src}:{i.line} -> {i.dst}" for i in g.edges("any", implicit=False)
           if i.dst.startswith("clgrad.nn") and g.rank(i.src) <= g.rank("clgrad._face")]
    assert not bad, "\n".join(bad)


def test_import_cycle_does_not_grow():
    """Below the namespace: the packages written over `import clgrad` (clgrad.distributions)
    close a cycle through it, which its import order (them last) keeps from failing."""
    sccs = _graph().sccs(skip=("clgrad",))
    biggest = len(sccs[0]) if sccs else 0
    assert biggest <= MAX_CYCLE, f"the biggest import cycle has {biggest} modules: {sccs[0]}"
