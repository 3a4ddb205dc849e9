"""List torch's public names that clgrad lacks: functions of torch, Tensor's methods and
properties, torch.nn's modules, torch.nn.functional, torch.linalg, torch.cuda, torch.special,
torch.fft, torch.optim, and the functions and classes of torch.random, torch.accelerator,
torch.utils.checkpoint, torch.utils.hooks, torch.utils._pytree, torch.nn.utils.prune and
torch.nn.utils.stateless, and the exported names of torch.distributions (its classes and
kl_divergence), torch.distributions.constraints and torch.distributions.transforms, and the
exported names of torch.profiler, torch.onnx, torch.multiprocessing, torch.sparse and
torch.distributed.optim.

Needs torch installed beside clgrad (`pip install torch`); it only reads torch's namespaces.

    python tools/coverage.py                 # counts and the missing names, per namespace
    python tools/coverage.py --only tensor   # one namespace
    python tools/coverage.py --json out.json
"""
import argparse
import inspect
import json
import sys


def _public(obj, want=None):
    names = set()
    for n in dir(obj):
        if n.startswith("_"):
            continue
        try:
            v = getattr(obj, n)
        except Exception:
            continue
        if want is None or want(n, v):
            names.add(n)
    return names


def namespaces(torch, clgrad):
    """{namespace: (torch's names, clgrad's object or None)}."""
    import torch.nn.functional  # noqa: F401

    def is_function(n, v):
        return callable(v) and not inspect.isclass(v) and n[0].islower() and \
            not inspect.ismodule(v)

    def is_module_class(n, v):
        return inspect.isclass(v) and issubclass(v, torch.nn.Module) and n[0].isupper()

    out = {
        "torch": (_public(torch, is_function), clgrad),
        "tensor": (_public(torch.Tensor), clgrad.Tensor),
        "nn": (_public(torch.nn, is_module_class), clgrad.nn),
        "nn.functional": (_public(torch.nn.functional, is_function),
                          getattr(clgrad.nn, "functional", None)),
        "linalg": (_public(torch.linalg, is_function), getattr(clgrad, "linalg", None)),
        "cuda": (_public(torch.cuda, is_function), getattr(clgrad, "cuda", None)),
        "special": (_public(torch.special, is_function), getattr(clgrad, "special", None)),
        "fft": (_public(torch.fft, is_function), getattr(clgrad, "fft", None)),
        "optim": (_public(torch.optim, lambda n, v: inspect.isclass(v) and n[0].isupper()),
                  getattr(clgrad, "optim", None)),
    }
    # the smaller namespaces of issue 23: their public functions and classes (not the names
    # they import, such as typing's)
    import importlib

    def own(mod):
        def want(n, v):
            return (inspect.isclass(v) or inspect.isfunction(v)) and \
                getattr(v, "__module__", None) == mod.__name__
        return want

    for ns in ("random", "accelerator", "utils.checkpoint", "utils.hooks", "utils._pytree",
               "nn.utils.prune", "nn.utils.stateless"):
        try:
            theirs = importlib.import_module("torch." + ns)
        except ImportError:
            continue
        try:
            ours = importlib.import_module("clgrad." + ns)
        except ImportError:
            ours = None
        out[ns] = (_public(theirs, own(theirs)), ours)
    # torch.distributions: the names its modules export (classes, kl_divergence, constraint
    # objects, transforms)
    for ns in ("distributions", "distributions.constraints", "distributions.transforms"):
        theirs = importlib.import_module("torch." + ns)
        try:
            ours = importlib.import_module("clgrad." + ns)
        except ImportError:
            ours = None
        out[ns] = (set(theirs.__all__), ours)
    # torch.profiler, torch.onnx, torch.multiprocessing, torch.sparse and
    # torch.distributed.optim: the names they export
    for ns in ("profiler", "onnx", "multiprocessing", "sparse", "distributed.optim"):
        theirs = importlib.import_module("torch." + ns)
        try:
            ours = importlib.import_module("clgrad." + ns)
        except ImportError:
            ours = None
        out[ns] = (set(theirs.__all__), ours)
    return out


def missing(torch_names, ours):
    if ours is None:
        return sorted(torch_names)
    return sorted(n for n in torch_names if not hasattr(ours, n))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", help="one namespace: torch, tensor, nn, nn.functional, linalg, "
                                  "cuda, special, optim, random, utils.checkpoint, ...")
    p.add_argument("--json", help="also write {namespace: [missing names]} to this file")
    args = p.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("tools/coverage.py needs torch installed (pip install torch)", file=sys.stderr)
        return 2
    import clgrad
    report = {}
    for ns, (names, ours) in namespaces(torch, clgrad).items():
        if args.only and ns != args.only:
            continue
        miss = missing(names, ours)
        report[ns] = miss
        have = len(names) - len(miss)
        print(f"{ns}: clgrad has {have} of torch's {len(names)} ({100 * have / max(len(names), 1):.0f}%);"
              f" missing {len(miss)}:")
        for i in range(0, len(miss), 8):
            print("    " + " ".join(miss[i:i + 8]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
