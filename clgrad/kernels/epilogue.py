"""Launches a recording folds into the launch before them: a relu, or a relu's gradient, into the
product (GEMM or convolution) whose result only it reads, a copy into the elementwise op whose
result it copies (an in-place op under autograd runs out of place, then copies its result back),
and a copy into the copy that wrote its source. The passes run when a capture ends, before
`fused.fuse` joins runs of elementwise launches.

**Copies of copies** (`fold_copy_chains`, first). A reshape that cannot be a view copies into a
fresh contiguous tensor, which another copy then moves on: the gradient of attention's head
split, (B, H, T, D) -> (B, T, H, D), is reshaped to (B, T, C) (a copy), then `cat` copies it into
its third of (B, T, 3C). Where the second copy reads the whole block the first wrote, in order,
that block is never read again (its tensor is freed before anything touches its buffer), the
first copy's source is untouched in between and there is no host work between them, one copy
goes from the first's source to the second's destination, over a walk both strided maps split
into (none where their dims do not divide each other). The same values land in the same places.

**Copies** (`fold_copies`, first). Autograd runs `x.add_(y)` or `x.relu_()` out of place into a
fresh tensor, which a copy then writes back into x. Where that tensor's only other use is the
elementwise table op (contiguous kernel) that wrote it, over the whole copy, and it is freed
after the copy before anything touches its buffer again, the op writes x's elements itself and
the copy goes: an operand in x's buffer must be x itself, element by element (element i is
then read before it is written, by the work-item that writes it), not a broadcast element or
another view. The op's values are unchanged, so are the stored ones.

**Relu epilogues** (`relu_epilogues`). For each launch of a kernel a family lists in its
EPILOGUE_KERNELS (gemm.py, conv.py), the relu after it, or the relu's gradient
(`threshold_backward(product, m)`, m the relu's output: backward through a ReLU of a network
whose next layer's input gradient is the product), folds in when

- the launch writes its output as one contiguous block (the family's `written_block`);
- the next work that touches that buffer is the elementwise table's contiguous relu
  (`relu_c_t`) or relu gradient (`threshold_backward_c_tt`, m walked) over exactly that block,
  in float32 or float64;
- nothing reads the block after the relu: the relu works in place, or the block's tensor is
  freed before anything touches its buffer again (a later tensor in the same buffer is written
  before it is read), with no host work in between;
- the product can run at one of the two places: at its own, if nothing touches the relu's
  output between the two launches and nothing writes m there (the first layer's weight
  gradient reading m is a read); or at the relu's, if nothing writes the product's operands
  between the two launches (the pool may hand the relu's output a packed panel the product
  read and that was freed since), with no host work in between;
- the product does not read the relu's output, and m is neither the product's output nor the
  relu's.

The product is then launched from its family's EPI_RELU or EPI_MASK build of the same kernel
(the latter with m as two extra arguments), with the relu's output as its own. The stored values
are the relu's bit for bit: the template applies the table's comparison to the very float the
product stored. Half types are left alone (a value rounded after the relu could be a +0.0 where
the relu keeps a -0.0).

>>> import clgrad
>>> from clgrad.runtime.recording import Recording
>>> lin, x = clgrad.nn.Linear(16, 16), clgrad.randn(4, 16)
>>> with clgrad.no_grad(), Recording() as rec:
...     y = lin(x).relu()
>>> [k.function_name for _, k, *_ in rec.kernels][-1].startswith("gemm")   # no relu launch
True
>>> bool((y == lin(x).relu()).all())
True
"""
import bisect

import pyopencl as cl

from .. import dtypes
from ..tensor import is_contiguous_layout
from . import conv, gemm
from ._layout import MAX_DIMS, collapse
from .copy import COPY, copy_launch
from .elementwise import ENTRIES

FLOATS = (dtypes.float32, dtypes.float64)
_COPY_KINDS = ("copy_c_", "copy_r_", "copy_s_")      # the copy kernels fold_copy_chains joins
# the kernels the passes look up: (family, which of its kernels, the products' written_block)
_KNOWN = ((gemm.GEMM, gemm.EPILOGUE_KERNELS.__contains__, gemm.written_block),
          (conv.CONV, conv.EPILOGUE_KERNELS.__contains__, conv.written_block),
          (COPY, lambda name: name.startswith(_COPY_KINDS), None))
_homes = {}       # id(cl.Kernel) -> (the kernel, (family, variant, name, options, written) or None)


def _home(kernel):
    """Where a product kernel or a copy_c kernel comes from: (family, variant, name, build
    options, the product's written_block or None); None for any other kernel. Memoised per
    kernel."""
    h = _homes.get(id(kernel))
    if h is None or h[0] is not kernel:
        found = None
        name = kernel.function_name
        for family, takes, written in _KNOWN:
            if not takes(name):
                continue
            for (_, variant, kname, options), k in list(family._kernels.items()):
                if k is kernel:
                    found = (family, variant, kname, options, written)
                    break
        h = _homes[id(kernel)] = (kernel, found)
    return h[1]


def buffer_uses(ops):
    """id(buffer) -> the positions of the ops that touch it, in order; the positions of host
    work. (Also what fused.fuse asks to know which results are read after a run.)"""
    touches, hosts = {}, []
    for i, (kind, payload) in enumerate(ops):
        if kind in ("host", "step"):    # a step's replay may run it as host work instead
            hosts.append(i)
        for b in _touched(kind, payload):
            touches.setdefault(id(b), []).append(i)
    return touches, hosts


def _dead_after(buf, j, touches, frees, hosts, since):
    """Whether what the ops up to j left in `buf` is never read: a tensor holding it is freed
    after j and before the next op that touches it, with no host work from `since` to then."""
    nxt = next((k for k in touches.get(id(buf), ()) if k > j), None)
    freed = [p for p in frees.get(id(buf), ()) if p > j and (nxt is None or p <= nxt)]
    return bool(freed) and not any(since < h < freed[0] for h in hosts)


def fold_copies(ops, frees, spec):
    """(ops with each foldable copy folded into the elementwise op before it, see above; frees
    renumbered for them); frees and spec as relu_epilogues takes them."""
    touches, hosts = buffer_uses(ops)
    ops = list(ops)
    dropped = set()
    for j, (kind, payload) in enumerate(ops):
        if kind != "launch":
            continue
        home = _home(payload[1])
        if home is None or home[0] is not COPY or home[2] != "copy_c_" + home[1].short:
            continue
        out, oo, t, to, n = payload[4]
        before = [k for k in touches[id(t)] if k < j and k not in dropped]
        if not before or ops[before[-1]][0] != "launch" or out is t:
            continue
        i = before[-1]
        dev, kernel, gsize, lsize, args = ops[i][1]
        s = spec(kernel)
        if s is None or s[1] is not home[1] or args[0] is not t or args[1] != to or \
                args[-1] != n or any(args[p] is t for p in s[4][1:]) or \
                any(args[p] is out and (args[p + 1], args[p + 2]) != (oo, 1) for p in s[4][1:]) or \
                any(i < k < j for k in touches.get(id(out), ())) or \
                not _dead_after(t, j, touches, frees, hosts, i):
            continue
        ops[i] = ("launch", (dev, kernel, gsize, lsize, (out, oo) + tuple(args[2:])))
        dropped.add(j)
        touches[id(out)] = sorted(set(touches[id(out)]) - {j} | {i})
        touches[id(t)] = [k for k in touches[id(t)] if k not in (i, j)]
    return _without(ops, frees, dropped)


def _copy_walk(home, args):
    """(destination buffer, its offset, source buffer, its offset, walk shape, destination
    strides, source strides) of a copy launch without a cast (copy_c, copy_r, copy_s); None for
    any other launch."""
    if home is None or home[0] is not COPY:
        return None
    name, dt = home[2], home[1]
    if name[:7] not in _COPY_KINDS or name[7:] != dt.short:
        return None
    if name.startswith("copy_c_"):
        out, oo, x, xo, n = args
        return out, oo, x, xo, [n], [1], [1]
    nd, shp = args[-2], args[-1]
    unpack = lambda v: [int(v[f"s{k}"]) for k in range(MAX_DIMS - nd, MAX_DIMS)]
    return args[0], args[1], args[3], args[4], unpack(shp), unpack(args[2]), unpack(args[5])


def _common_walk(shape1, st1, shape2, st2):
    """(shape, strides1, strides2): one walk over which two strided maps of the same C-order
    positions (shape1 / st1, shape2 / st2, one numel) give the same addresses; the dims of each
    split where the other's end. None when a dim of one does not divide the other's.

    >>> _common_walk([4, 6], [6, 1], [2, 12], [100, 1])
    ([2, 2, 6], [12, 6, 1], [100, 6, 1])
    """
    a = [(n, s) for n, s in zip(shape1, st1) if n != 1]
    b = [(n, s) for n, s in zip(shape2, st2) if n != 1]
    shape, s1, s2 = [], [], []
    while a and b:
        (na, sa), (nb, sb) = a[-1], b[-1]
        m = min(na, nb)
        if max(na, nb) % m:
            return None
        shape.append(m)
        s1.append(sa)
        s2.append(sb)
        for side, (n, st) in ((a, (na, sa)), (b, (nb, sb))):
            if n == m:
                side.pop()
            else:
                side[-1] = (n // m, st * m)
    if a or b:
        return None
    return shape[::-1], s1[::-1], s2[::-1]


def fold_copy_chains(ops, frees):
    """(ops with each copy of a copy's result made one copy, see above; frees renumbered for
    them); frees as relu_epilogues takes them."""
    touches, hosts = buffer_uses(ops)
    ops = list(ops)
    dropped = set()
    for j, (kind, payload) in enumerate(ops):
        if kind != "launch":
            continue
        home = _home(payload[1])
        second = _copy_walk(home, payload[4])
        if second is None:
            continue
        dst, do, t, to, shape2, dst_st, t_st2 = second
        before = [k for k in touches[id(t)] if k < j and k not in dropped]
        if dst is t or not is_contiguous_layout(shape2, t_st2) or not before or \
                ops[before[-1]][0] != "launch":
            continue
        i = before[-1]
        dev, kernel, _, _, args = ops[i][1]
        first_home = _home(kernel)
        first = _copy_walk(first_home, args) if first_home and first_home[1] is home[1] else None
        if first is None:
            continue
        t1, to1, src, so, shape1, t_st1, src_st = first
        if t1 is not t or to1 != to or src is t or src is dst or \
                not is_contiguous_layout(shape1, t_st1) or \
                any(i < k < j for k in touches.get(id(src), ())) or \
                any(i < h < j for h in hosts) or \
                not _dead_after(t, j, touches, frees, hosts, i):
            continue
        walk = _common_walk(shape1, src_st, shape2, dst_st)
        if walk is None:
            continue
        shape, (s_st, d_st) = collapse(walk[0], [walk[1], walk[2]])
        if len(shape) > MAX_DIMS:
            continue
        ops[j] = ("launch", (dev,) + copy_launch(dev, home[1], dst, do, src, so, shape, d_st,
                                                 s_st))
        dropped.add(i)
        touches[id(t)] = [k for k in touches[id(t)] if k not in (i, j)]
        touches[id(src)] = sorted(set(touches[id(src)]) - {i} | {j})
    return _without(ops, frees, dropped)


def _without(ops, frees, dropped):
    """(ops without the positions in `dropped`, frees with its positions renumbered so)."""
    if not dropped:
        return ops, frees
    gone = sorted(dropped)
    shift = lambda p: p - bisect.bisect_left(gone, p)      # dropped ops before position p
    return ([op for k, op in enumerate(ops) if k not in dropped],
            {b: [shift(p) for p in ps] for b, ps in frees.items()})


def _folding_kernel(family, dev, variant, name, options, fold):
    """Kernel `name` of the family's build with `fold` ("RELU", "MASK") in its epilogue, beside
    the one built with `options` (its program named after that one's, plus the fold's name)."""
    opts = f"{options} -DEPI_{fold}".strip()
    base = family.program(variant, options).variant
    family.program(variant, opts,
                   tag=(base.split("_", 1)[1] + "_" if "_" in base else "") + fold.lower())
    return family.kernel(dev, variant, name, opts)


def _touched(kind, payload):
    """The buffers a recorded operation uses."""
    if kind == "launch":
        return [a for a in payload[4] if isinstance(a, cl.MemoryObjectHolder)]
    if kind in ("copy", "fill", "check", "item"):
        return [a for a in payload[1:3] if isinstance(a, cl.MemoryObjectHolder)]
    if kind == "step":                  # recording.refreshed: the operations it holds
        return [b for k, p in payload[2] for b in _touched(k, p)]
    return []


# the families' kernels that copy an operand into a layout of their own (a convolution's padded
# input, a GEMM's packed panels): they write their first argument alone
_PACKS = frozenset(conv.PACK_KERNELS + gemm.PACK_KERNELS)


def _reads_only(op, buf, spec):
    """Whether op only reads `buf`: a launch of a kernel that writes its first argument alone
    (a product, a copy, a pack, an elementwise table kernel), with buf not that one (the weight
    gradient's product reads a relu's output before the relu's gradient does)."""
    if op[0] != "launch":
        return False
    kernel, args = op[1][1], op[1][4]
    return args[0] is not buf and (kernel.function_name in _PACKS or _home(kernel) is not None
                                   or spec(kernel) is not None)


def relu_epilogues(ops, frees, spec):
    """ops: a recording's (kind, payload) list; frees: id(buffer) -> the positions in ops at
    which a tensor holding that buffer was freed (the number of ops recorded by then); spec:
    fused._spec. Returns (ops with each foldable relu or relu gradient folded into its product,
    see above; frees renumbered for them)."""
    folds = {ENTRIES["relu"]: ("t", "RELU"), ENTRIES["threshold_backward"]: ("tt", "MASK")}
    touches, hosts = buffer_uses(ops)
    ops = list(ops)
    dropped = set()
    for i, (kind, payload) in enumerate(ops):
        if kind != "launch" or i in dropped:
            continue
        dev, kernel, gsize, lsize, args = payload
        home = _home(kernel)
        if home is None or home[4] is None or home[1] not in FLOATS or "-DEPI_" in home[3]:
            continue
        family, variant, name, options, written = home
        block = written(args, gsize)
        if block is None:
            continue
        out = args[0]
        later = [k for k in touches[id(out)] if k > i and k not in dropped]
        if not later or ops[later[0]][0] != "launch":
            continue
        j = later[0]
        _, rk, _, _, rargs = ops[j][1]
        s = spec(rk)
        fold = s and folds.get(s[0])
        if fold is None or s[2] != fold[0] or s[1] is not variant or rargs[2] is not out or \
                (rargs[3], rargs[-1]) != block or rargs[4] != 1:
            continue
        res = rargs[0]
        m, mo = (rargs[5], rargs[6]) if fold[1] == "MASK" else (None, 0)
        if m is not None and (rargs[7] != 1 or m is out or m is res):
            continue                # the relu's output m must be walked, and no output

        def unchanged(b):           # nothing writes buffer b between the two launches
            return all(_reads_only(ops[k], b, spec) for k in touches.get(id(b), ()) if i < k < j)
        # The folded product runs where the product ran (its result's buffer, and the mask it
        # now reads early, untouched until the relu's launch) or else where the relu ran (the
        # product's operands unchanged until then: a packed panel freed in between may be what
        # the pool hands the relu's result)
        inputs = [a for a in args[1:] if isinstance(a, cl.MemoryObjectHolder)]
        no_host = not any(i < h < j for h in hosts)     # (host work could write anything)
        if (res is out or not any(i < k < j for k in touches.get(id(res), ()))) and \
                (m is None or (no_host and unchanged(m))):
            at = i
        elif no_host and all(unchanged(b) for b in inputs):
            at = j
        else:
            continue
        if not (res is out and rargs[1] == block[0]):     # not in place
            if any(a is res for a in args) or not _dead_after(out, j, touches, frees, hosts, i):
                continue
        extra = (m, mo - rargs[1]) if m is not None else ()    # EPI_D: element -> its mask
        k = _folding_kernel(family, dev, variant, name, options, fold[1])
        ops[at] = ("launch", (dev, k, gsize, lsize, (res, rargs[1]) + tuple(args[2:]) + extra))
        dropped.add(j if at == i else i)
        for b in [res, m] if at == i else inputs:
            if b is not None:
                uses = touches.setdefault(id(b), [])
                uses[:] = sorted(set(uses) - {i} | {at})
    return _without(ops, frees, dropped)
