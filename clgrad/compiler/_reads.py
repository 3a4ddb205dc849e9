"""Reads that are a compiled function's return value (`return loss.item()`): which of a capture's
Tensor.item() calls may be recorded (`returned_reads`, the Recording's item_reads), and where their
values sit in the return value (`item_places`), so that a replay reads them again and returns
them in their places.

After a Tensor.item() that the function's own frame calls, the rest of the function may only
build its return value from loads, stores to its own locals and more such reads: then the value
reaches the caller as it was read. Anything else (a store elsewhere, an operator, another call)
could do something with the value that a replay would not do again, and the capture breaks as
for any host read.

>>> import clgrad
>>> def step(x):
...     s = (x * 2).sum()
...     return s.item()
>>> f = clgrad.compile(step)
>>> [f(clgrad.ones(3) * k) for k in range(4)], f.stats["replays"]
([0.0, 6.0, 12.0, 18.0], 2)
"""
import builtins
import dis
import sys

from ..nn.modules.module import Module

# (PUSH_NULL is not skipped: it starts the call of a callable held in a local or an attribute)
_SKIP = {"CACHE", "PRECALL", "NOP", "EXTENDED_ARG", "RESUME"}
_LOADS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW",
          "LOAD_CONST", "LOAD_SMALL_INT", "LOAD_DEREF"}
_BUILDS = {"BUILD_TUPLE", "BUILD_LIST", "BUILD_MAP", "BUILD_CONST_KEY_MAP"}
# a read kept in a local of the function's own until it returns it (v = loss.item(); ...)
_STORES = {"STORE_FAST", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST"}
_RETURNS = {"RETURN_VALUE", "RETURN_CONST"}
_CONVERSIONS = ("float", "int", "bool")
# From Python 3.12 LOAD_ATTR's low bit says it loads a method to call (3.11: LOAD_METHOD)
_ATTR_METHOD_BIT = sys.version_info >= (3, 12)
_TAILS = {}                             # code -> its instructions


def _tail_returns(frame):
    """Whether what `frame` runs after its current call only builds the return value from loads,
    stores to its own locals and more reads (x.item(), float(x), int(x), bool(x))."""
    code = frame.f_code
    ins = _TAILS.get(code)
    if ins is None:
        ins = _TAILS[code] = list(dis.get_instructions(code))
    k = next((n for n, i in enumerate(ins) if i.offset > frame.f_lasti), len(ins))
    if k and ins[k - 1].opname == "PRECALL":
        # Python 3.11 calls a builtin type (float(x)) from a specialised PRECALL: its CALL, next,
        # is the same call
        k = next((n + 1 for n in range(k, len(ins)) if ins[n].opname == "CALL"), len(ins))
    conversions = 0
    while k < len(ins):
        i = ins[k]
        k += 1
        if i.opname in _SKIP:
            continue
        if i.opname == "JUMP_FORWARD":      # `return loss.item() if read else loss`
            k = next((n for n in range(k, len(ins)) if ins[n].offset == i.argval), len(ins))
            continue
        if i.opname in _RETURNS:
            return conversions == 0
        if i.opname in _LOADS or i.opname in _BUILDS or i.opname in _STORES:
            continue
        if i.opname in ("LOAD_ATTR", "LOAD_METHOD"):
            if i.argval != "item":
                if i.opname == "LOAD_METHOD" or _ATTR_METHOD_BIT and i.arg & 1:
                    return False            # another method's call
                continue                    # an attribute of a local (self.loss)
            while k < len(ins) and ins[k].opname in _SKIP:
                k += 1
            if k < len(ins) and ins[k].opname == "CALL" and ins[k].arg == 0:
                k += 1                      # x.item()
                continue
            return False
        # float(x): the global loaded to be called (its NULL bit), its call after x's loads.
        # Every call left in the tail is one of these or x.item() (other callables need a
        # method load or PUSH_NULL, refused above), so counting them pairs each with its own.
        if i.opname == "LOAD_GLOBAL" and i.arg & 1 and i.argval in _CONVERSIONS and \
                frame.f_globals.get(i.argval, getattr(builtins, i.argval)) is \
                getattr(builtins, i.argval):
            conversions += 1
            continue
        if i.opname == "CALL" and i.arg == 1 and conversions:
            conversions -= 1
            continue
        return False
    return False


def _code_of(fn):
    """The code object whose frame calls a compiled function's reads: a function's, a method's,
    a module's forward's; None for other callables."""
    if isinstance(fn, Module):
        fn = type(fn).forward
    fn = getattr(fn, "__func__", fn)
    return getattr(fn, "__code__", None)


def returned_reads(fn):
    """Recording.item_reads for a capture of fn: a Tensor.item() that fn's own frame calls and
    whose value goes straight into the return value (`return loss.item()`, `return float(loss),
    acc.item()`, a dict of such reads) is recorded as a read, made again at every replay."""
    code = _code_of(fn)
    if code is None:
        return None
    return lambda frame: frame is not None and frame.f_code is code and _tail_returns(frame)


def item_places(flat, reads):
    """[(position in the flattened return value, ItemRead)] for every read whose value object
    is there exactly once; None when a read's value is missing (the function made something
    else of it), shared with another read (equal small ints are one object) or with another
    value of the return structure (a constant True beside a read True)."""
    owner = {}
    for r in reads:
        if id(r.value) in owner:
            return None
        owner[id(r.value)] = r
    places = []
    for i, x in enumerate(flat):
        r = owner.get(id(x))
        if r is not None and x is r.value:
            places.append((i, r))
    if len(places) != len(reads) or len({id(r) for _, r in places}) != len(reads):
        return None
    return places
