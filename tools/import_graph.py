"""clgrad's module import graph, read from the source (no import is executed), checked against the
layer map of docs/internals.md and DESIGN.md section 2.

    python tools/import_graph.py                  # summary: cycle, upward imports, counts
    python tools/import_graph.py --cycle          # also list the modules of the biggest cycle
    python tools/import_graph.py --function-level # also list the upward function-level imports
    python tools/import_graph.py --json           # everything, machine-readable

Imports are split by where they run:

- module-level: at import time (module body, class bodies, `if`/`try` blocks at the top);
- function-level: inside a `def` or `lambda`, run on first call (how a cycle is usually hidden).

An import of `a.b.c` also runs the `__init__` of the packages above it (`a.b`); those implicit
edges are part of the graph the cycles are found in (they are how `import clgrad.ops.views` comes
to execute `clgrad/autograd/__init__.py`), except the root package `clgrad`, which is the namespace
assembled last and is imported by everything. The strongly connected components of the
module-level graph are the import cycles.

Layers, bottom to top (a module-level import must not point up this list):

    0 runtime < 1 tensor < 2 kernels < 3 autograd core < 4 ops < 5 face
      < 6 extras, nn, optim, utils < 7 distributed < 8 the clgrad namespace itself

The analysis is a function (`analyse(root)`) so that tests/test_layers.py can assert on it:

>>> import os, sys
>>> sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
>>> import import_graph
>>> g = import_graph.analyse()
>>> g.layer_of("clgrad.ops.pointwise"), g.layer_of("clgrad.nn.functional")
('ops', 'extras')
"""
import argparse
import ast
import json
import os
import sys
from collections import Counter, defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "clgrad"

# kernels above tensor: a raw launch takes tensors and allocates its outputs as tensors, while
# the tensor layer is data with no math
LAYERS = ["runtime", "tensor", "kernels", "autograd core", "ops", "face", "extras",
          "distributed", "namespace"]

# longest matching prefix wins; a prefix matches the module itself and everything below it
LAYER_OF_PREFIX = {
    "clgrad.runtime": "runtime",
    "clgrad._version": "runtime",
    "clgrad._grad_state": "runtime",      # the grad-mode flags, below every layer
    "clgrad.cl": "runtime",               # torch.cuda's vocabulary over the runtime's devices
    "clgrad.cuda": "face",                # torch.cuda's namespace: the runtime's devices, ops' generator
    "clgrad.backends": "runtime",
    "clgrad.kernels": "kernels",
    "clgrad.tensor": "tensor",
    "clgrad.dtypes": "tensor",
    "clgrad._format": "tensor",
    "clgrad.autograd": "autograd core",   # the package and its core modules
    "clgrad.autograd.anomaly_mode": "extras",
    "clgrad.autograd.forward_ad": "extras",
    "clgrad.autograd.functional": "extras",
    "clgrad.autograd.gradcheck": "extras",
    "clgrad.autograd.graph": "extras",
    "clgrad.autograd.profiler": "extras",
    "clgrad.ops": "ops",
    "clgrad._face": "face",
    "clgrad._legacy": "face",
    "clgrad._nn_top_level": "face",
    "clgrad._settings": "face",
    "clgrad.linalg": "face",              # torch.linalg's namespace over ops
    "clgrad.special": "face",             # torch.special's namespace over ops
    "clgrad.fft": "face",                 # torch.fft's namespace over ops
    "clgrad.amp": "extras",
    "clgrad.nn": "extras",
    "clgrad.optim": "extras",
    "clgrad.utils": "extras",
    "clgrad.func": "extras",
    "clgrad.serialization": "extras",
    "clgrad.testing": "extras",
    "clgrad._host": "extras",             # host tensors, for DataLoader workers and forked processes
    "clgrad._torch_zip": "extras",        # torch.save's zip format, for serialization
    "clgrad.multiprocessing": "extras",
    "clgrad.distributed": "distributed",
    # written over the namespace (`import clgrad`), as torch.distributions is over torch's; the
    # namespace imports it last
    "clgrad.distributions": "namespace",
    "clgrad": "namespace",
    "clgrad.__main__": "namespace",
}


class Import:
    __slots__ = ("src", "dst", "line", "level", "implicit")

    def __init__(self, src, dst, line, level, implicit=False):
        self.src, self.dst, self.line, self.level, self.implicit = src, dst, line, level, implicit

    def as_dict(self):
        return {"from": self.src, "to": self.dst, "line": self.line, "where": self.level,
                "implicit": self.implicit}


def module_files(root):
    """{module name: path} of every .py file of the package."""
    out = {}
    base = os.path.join(root, PACKAGE)
    for d, dirs, files in os.walk(base):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "__pycache__")))
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(d, f), root)[:-3].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join(rel)] = os.path.join(d, f)
    return out


def _imports_of(name, path, modules):
    """Yield Import for each import statement of one file that names a module of the package."""
    is_pkg = os.path.basename(path) == "__init__.py"
    here = name if is_pkg else name.rpartition(".")[0]
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)

    def target(mod):
        # the deepest module of the package that `mod` names
        while mod and mod not in modules:
            mod = mod.rpartition(".")[0]
        return mod or None

    def visit(node, level):
        for child in ast.iter_child_nodes(node):
            lvl = "function" if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                   ast.Lambda)) else level
            if isinstance(child, ast.Import):
                for a in child.names:
                    t = target(a.name) if a.name.split(".")[0] == PACKAGE else None
                    if t:
                        yield Import(name, t, child.lineno, lvl)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    parts = here.split(".")
                    parts = parts[:len(parts) - (child.level - 1)]
                    mod = ".".join(parts + ([child.module] if child.module else []))
                else:
                    mod = child.module or ""
                if mod.split(".")[0] != PACKAGE:
                    continue
                base = target(mod)
                for a in child.names:
                    sub = f"{mod}.{a.name}"
                    t = sub if sub in modules else base
                    if t:
                        yield Import(name, t, child.lineno, lvl)
            yield from visit(child, lvl)

    yield from visit(tree, "module")


class Graph:
    def __init__(self, modules, imports):
        self.modules = modules                  # {name: path}
        self.imports = imports                  # [Import], implicit parent edges included

    @staticmethod
    def layer_of(module):
        m = module
        while m:
            if m in LAYER_OF_PREFIX:
                return LAYER_OF_PREFIX[m]
            m = m.rpartition(".")[0]
        raise KeyError(f"{module} has no layer: add it to LAYER_OF_PREFIX")

    def rank(self, module):
        return LAYERS.index(self.layer_of(module))

    def edges(self, level="module", implicit=True):
        """Imports run at `level` ("module", "function" or "any"), one per (importer, imported
        module, line)."""
        out, seen = [], set()
        for i in self.imports:
            if (level != "any" and i.level != level) or (i.implicit and not implicit) \
                    or i.src == i.dst:
                continue
            key = (i.src, i.dst, i.line, i.level)
            if key not in seen:
                seen.add(key)
                out.append(i)
        return out

    def sccs(self, implicit=True, level="module", skip=()):
        """Strongly connected components of the import graph, biggest first (Tarjan). With
        level="any", function-level imports count too: the cycle they hide. Modules in `skip`
        are left out (the namespace `clgrad`: the cycles through it are of the modules written
        over it, which it imports last)."""
        succ = defaultdict(set)
        for i in self.edges(level, implicit):
            if i.src not in skip and i.dst not in skip:
                succ[i.src].add(i.dst)
        index, low, on, stack, out = {}, {}, set(), [], []
        counter = [0]
        sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

        def strong(v):
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w in sorted(succ[v]):
                if w not in index:
                    strong(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))

        for v in sorted(self.modules):
            if v not in index and v not in skip:
                strong(v)
        return sorted((c for c in out if len(c) > 1), key=lambda c: (-len(c), c))

    def upward(self, level="module"):
        """Explicit imports whose target sits in a higher layer than the importer."""
        return [i for i in self.edges(level, implicit=False) if self.rank(i.dst) > self.rank(i.src)]

    def function_level_per_package(self):
        c = Counter()
        for i in self.edges("function", implicit=False):
            pkg = i.src if os.path.basename(self.modules[i.src]) == "__init__.py" \
                else i.src.rpartition(".")[0]
            c[pkg] += 1
        return dict(sorted(c.items()))


def analyse(root=ROOT):
    modules = module_files(root)
    imports = []
    for name, path in modules.items():
        imports.extend(_imports_of(name, path, modules))
    # importing a.b.c runs a.b's __init__ first (the root package excepted: see the docstring)
    seen = set()
    for i in list(imports):
        if i.level != "module":
            continue
        parent = i.dst.rpartition(".")[0]
        while parent and parent != PACKAGE:
            key = (i.src, parent)
            if parent in modules and key not in seen and not i.src.startswith(parent + ".") \
                    and i.src != parent:
                seen.add(key)
                imports.append(Import(i.src, parent, i.line, "module", implicit=True))
            parent = parent.rpartition(".")[0]
    return Graph(modules, imports)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:4]))
    p.add_argument("--root", default=ROOT, help="repository root (default: this checkout)")
    p.add_argument("--cycle", action="store_true", help="list the modules of the biggest cycle")
    p.add_argument("--function-level", action="store_true",
                   help="list the function-level imports that point up the layer map")
    p.add_argument("--json", action="store_true", help="print everything as JSON")
    args = p.parse_args(argv)
    g = analyse(args.root)
    sccs = g.sccs()
    sccs_explicit = g.sccs(implicit=False)
    sccs_hidden = g.sccs(level="any")
    up = g.upward("module")
    up_fn = g.upward("function")
    per_pkg = g.function_level_per_package()
    if args.json:
        json.dump({"modules": len(g.modules),
                   "module_level_imports": len(g.edges("module", implicit=False)),
                   "function_level_imports": len(g.edges("function", implicit=False)),
                   "cycles": sccs, "cycles_explicit_only": sccs_explicit,
                   "cycles_with_function_level": sccs_hidden,
                   "upward_module_level": [i.as_dict() for i in up],
                   "upward_function_level": [i.as_dict() for i in up_fn],
                   "function_level_per_package": per_pkg}, sys.stdout, indent=1)
        print()
        return 0
    print(f"{len(g.modules)} modules, {len(g.edges('module', implicit=False))} module-level "
          f"imports, {len(g.edges('function', implicit=False))} function-level imports")
    big = sccs[0] if sccs else []
    big_x = sccs_explicit[0] if sccs_explicit else []
    print(f"biggest import cycle: {len(big)} modules (with package __init__ edges); "
          f"{len(big_x)} counting explicit imports only; {len(sccs)} cycles in all")
    if args.cycle:
        for m in big:
            print(f"    {m}")
    big_h = sccs_hidden[0] if sccs_hidden else []
    print(f"biggest cycle once function-level imports count too: {len(big_h)} modules")
    if args.cycle:
        for m in big_h:
            print(f"    {m}")
    print(f"module-level imports pointing up the layer map: {len(up)}")
    for i in sorted(up, key=lambda i: (i.src, i.line)):
        print(f"    {i.src}:{i.line} ({g.layer_of(i.src)}) -> {i.dst} ({g.layer_of(i.dst)})")
    print(f"function-level imports pointing up the layer map: {len(up_fn)}")
    if args.function_level:
        for i in sorted(up_fn, key=lambda i: (i.src, i.line)):
            print(f"    {i.src}:{i.line} ({g.layer_of(i.src)}) -> {i.dst} ({g.layer_of(i.dst)})")
    print("function-level imports per package:")
    for pkg, n in sorted(per_pkg.items(), key=lambda kv: -kv[1]):
        print(f"    {n:4d}  {pkg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
