"""clgrad.utils._pytree: the commonly imported part of torch.utils._pytree. A pytree is a nest
of lists, tuples, namedtuples, dicts (OrderedDict, defaultdict) and deques, and of the types
given to register_pytree_node; everything else (None included, as in torch 2.13) is a leaf.

>>> from clgrad.utils._pytree import tree_flatten, tree_unflatten, tree_map
>>> leaves, spec = tree_flatten({"b": [1, (2, None)], "a": 3})
>>> leaves
[1, 2, None, 3]
>>> tree_unflatten([10, 20, 30, 40], spec)
{'b': [10, (20, 30)], 'a': 40}
>>> tree_map(lambda v: v * 2, (1, [2]))
(2, [4])
"""
import collections
import dataclasses

__all__ = ["TreeSpec", "LeafSpec", "SUPPORTED_NODES", "register_pytree_node", "tree_flatten",
           "tree_unflatten", "tree_leaves", "tree_structure", "tree_map", "tree_map_",
           "tree_map_only", "tree_iter", "tree_all", "tree_any", "tree_is_leaf", "tree_all_only",
           "tree_any_only", "is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance"]


@dataclasses.dataclass(frozen=True)
class NodeDef:
    type: type
    flatten_fn: object
    unflatten_fn: object


SUPPORTED_NODES = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                         to_dumpable_context=None, from_dumpable_context=None,
                         flatten_with_keys_fn=None):
    """Make `cls` a pytree node: flatten_fn(obj) -> (children, context),
    unflatten_fn(children, context) -> obj. ValueError if it is registered already, as torch's.

    >>> from clgrad.utils._pytree import register_pytree_node, tree_leaves
    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda c, _: Pair(*c))
    >>> tree_leaves([Pair(1, 2), 3])
    [1, 2, 3]
    """
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn)


_register_pytree_node = register_pytree_node


def _is_namedtuple(obj_type):
    return issubclass(obj_type, tuple) and hasattr(obj_type, "_fields")


def is_namedtuple_class(cls):
    """Whether cls is a namedtuple class.

    >>> import collections
    >>> from clgrad.utils._pytree import is_namedtuple_class
    >>> is_namedtuple_class(collections.namedtuple("P", "x")), is_namedtuple_class(tuple)
    (True, False)
    """
    return isinstance(cls, type) and _is_namedtuple(cls)


def is_namedtuple_instance(obj):
    """Whether obj is a namedtuple."""
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj):
    """Whether obj is a namedtuple class or instance."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


register_pytree_node(tuple, lambda t: (list(t), None), lambda c, _: tuple(c))
register_pytree_node(list, lambda t: (list(t), None), lambda c, _: list(c))
register_pytree_node(dict, lambda d: (list(d.values()), list(d.keys())),
                     lambda c, keys: dict(zip(keys, c)))
register_pytree_node(collections.OrderedDict, lambda d: (list(d.values()), list(d.keys())),
                     lambda c, keys: collections.OrderedDict(zip(keys, c)))
register_pytree_node(collections.defaultdict,
                     lambda d: (list(d.values()), [d.default_factory, list(d.keys())]),
                     lambda c, ctx: collections.defaultdict(ctx[0], zip(ctx[1], c)))
register_pytree_node(collections.deque, lambda d: (list(d), d.maxlen),
                     lambda c, maxlen: collections.deque(c, maxlen=maxlen))
_NAMEDTUPLE = NodeDef(collections.namedtuple, lambda t: (list(t), type(t)),
                      lambda c, cls: cls(*c))


def _node_type(tree):
    t = type(tree)
    if _is_namedtuple(t) and t not in SUPPORTED_NODES:
        return collections.namedtuple
    return t


def _node_def(node_type):
    return _NAMEDTUPLE if node_type is collections.namedtuple else SUPPORTED_NODES.get(node_type)


def tree_is_leaf(tree, is_leaf=None):
    """Whether `tree` is a leaf (not a registered container, or is_leaf(tree) says so).

    >>> from clgrad.utils._pytree import tree_is_leaf
    >>> tree_is_leaf(1), tree_is_leaf([1]), tree_is_leaf(None)
    (True, False, True)
    """
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_def(_node_type(tree)) is None


class TreeSpec:
    """The structure of a pytree: its node type, the context its flatten gave (dict keys, the
    namedtuple class) and the specs of its children; a leaf's spec prints as `*`."""

    def __init__(self, type, context, children_specs):
        self.type = type
        self.context = context
        self.children_specs = list(children_specs)
        self.num_children = len(self.children_specs)

    # counted when asked (a flatten makes many specs and seldom asks)
    @property
    def num_leaves(self):
        return 1 if self.type is None else sum(c.num_leaves for c in self.children_specs)

    @property
    def num_nodes(self):
        return 1 + sum(c.num_nodes for c in self.children_specs)

    def is_leaf(self):
        return self.type is None

    def __eq__(self, other):
        return isinstance(other, TreeSpec) and (self.type, self.context, self.children_specs) \
            == (other.type, other.context, other.children_specs)

    def __hash__(self):
        return hash((self.type, len(self.children_specs)))

    def __repr__(self, indent=0):
        if self.type is None:
            return "*"
        name = "namedtuple" if self.type is collections.namedtuple else self.type.__name__
        inner = []
        for i, c in enumerate(self.children_specs):
            r = c.__repr__(indent + 2)
            inner.append(r if i == 0 else "\n" + " " * (indent + 2) + r)
        return f"TreeSpec({name}, {self.context!r}, [{','.join(inner)}])"

    def flatten_up_to(self, tree):
        return tree_leaves(tree)

    def unflatten(self, leaves):
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but "
                             f"the spec refers to a pytree that holds {self.num_leaves} items "
                             f"({self!r}).")
        return _build(self, iter(leaves))


def _build(spec, leaves):
    # a module function, not a closure that calls itself: that closure would be a reference
    # cycle holding the leaves (a compiled call's outputs) until the next collection
    if spec.type is None:
        return next(leaves)
    children = [_build(c, leaves) for c in spec.children_specs]
    return _node_def(spec.type).unflatten_fn(children, spec.context)


class LeafSpec(TreeSpec):
    def __init__(self):
        super().__init__(None, None, [])


_LEAF = LeafSpec()          # every leaf's spec (specs are not changed once made)


def tree_flatten(tree, is_leaf=None):
    """(leaves, TreeSpec) of a pytree, the leaves in order (dicts in insertion order).

    >>> from clgrad.utils._pytree import tree_flatten
    >>> tree_flatten([1, (2, 3)])[0]
    [1, 2, 3]
    """
    leaves = []
    nodes = SUPPORTED_NODES

    def walk(node):
        # the registered containers by exact type first: most nodes are leaves or plain
        # tuples, lists and dicts, and a compiled call flattens its arguments at every call
        t = type(node)
        d = nodes.get(t)
        if d is None and _is_namedtuple(t):
            t, d = collections.namedtuple, _NAMEDTUPLE
        if d is None or (is_leaf is not None and is_leaf(node)):
            leaves.append(node)
            return _LEAF
        children, context = d.flatten_fn(node)
        return TreeSpec(t, context, [walk(c) for c in children])
    return leaves, walk(tree)


def tree_unflatten(leaves, treespec):
    """The pytree of `treespec`'s structure holding `leaves`.

    >>> from clgrad.utils._pytree import tree_flatten, tree_unflatten
    >>> tree_unflatten([7, 8], tree_flatten((1, [2]))[1])
    (7, [8])
    """
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance "
                        f"of TreeSpec but got item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_iter(tree, is_leaf=None):
    """The leaves, one by one.

    >>> from clgrad.utils._pytree import tree_iter
    >>> list(tree_iter({"a": [1, 2]}))
    [1, 2]
    """
    yield from tree_flatten(tree, is_leaf)[0]


def tree_leaves(tree, is_leaf=None):
    """The leaves of a pytree, in order.

    >>> from clgrad.utils._pytree import tree_leaves
    >>> tree_leaves([1, {"x": None, "y": (2,)}])
    [1, None, 2]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    """The TreeSpec of a pytree.

    >>> from clgrad.utils._pytree import tree_structure
    >>> tree_structure((1, 2))
    TreeSpec(tuple, None, [*,
      *])
    """
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """A pytree of the same structure with func applied to the leaves (to corresponding leaves
    of `tree` and each of `rests`, which must have tree's structure or extend it).

    >>> from clgrad.utils._pytree import tree_map
    >>> tree_map(lambda a, b: a + b, [1, 2], [10, 20])
    [11, 22]
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    for o in others:
        if len(o) != len(leaves):
            raise ValueError("tree_map: the trees do not have the same structure")
    return spec.unflatten(func(*xs) for xs in zip(leaves, *others))


def tree_map_(func, tree, *rests, is_leaf=None):
    """Apply func to the leaves for its side effects; returns `tree`.

    >>> from clgrad.utils._pytree import tree_map_
    >>> seen = []; _ = tree_map_(seen.append, (1, [2])); seen
    [1, 2]
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    for xs in zip(leaves, *others):
        func(*xs)
    return tree


def _type_check(type_or_types):
    return lambda x: isinstance(x, type_or_types)


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    """tree_map applied only to the leaves of the given type(s); the others stay.

    >>> from clgrad.utils._pytree import tree_map_only
    >>> tree_map_only(int, lambda v: -v, [1, "a", 2.5])
    [-1, 'a', 2.5]
    """
    check = _type_check(type_or_types)
    return tree_map(lambda x: func(x) if check(x) else x, tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    """Whether pred holds for every leaf.

    >>> from clgrad.utils._pytree import tree_all
    >>> tree_all(lambda v: v > 0, [1, (2,)])
    True
    """
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred, tree, is_leaf=None):
    """Whether pred holds for some leaf.

    >>> from clgrad.utils._pytree import tree_any
    >>> tree_any(lambda v: v is None, [1, (None,)])
    True
    """
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types, pred, tree, is_leaf=None):
    """Whether pred holds for every leaf of the given type(s).

    >>> from clgrad.utils._pytree import tree_all_only
    >>> tree_all_only(int, lambda v: v > 0, [1, "a", (2,)])
    True
    """
    check = _type_check(type_or_types)
    return all(pred(x) for x in tree_iter(tree, is_leaf) if check(x))


def tree_any_only(type_or_types, pred, tree, is_leaf=None):
    """Whether pred holds for some leaf of the given type(s).

    >>> from clgrad.utils._pytree import tree_any_only
    >>> tree_any_only(str, lambda v: v == "a", [1, "a"])
    True
    """
    check = _type_check(type_or_types)
    return any(pred(x) for x in tree_iter(tree, is_leaf) if check(x))

