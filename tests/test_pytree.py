"""clgrad.utils._pytree (torch's outputs written down as facts) and clgrad.utils.hooks."""
import collections

import pytest

import clgrad
from clgrad.utils import _pytree as pt
from clgrad.utils.hooks import RemovableHandle, unserializable_hook

P = collections.namedtuple("P", "x y")


def test_flatten_unflatten_round_trip():
    trees = [{"b": [1, (2, None)], "a": 3}, P(1, [2, {"k": 3}]), (), [], None, 5,
             collections.OrderedDict(a=1, b=(2,)), collections.deque([1, 2], maxlen=3),
             collections.defaultdict(list, {"z": [1]})]
    for tree in trees:
        leaves, spec = pt.tree_flatten(tree)
        back = pt.tree_unflatten(leaves, spec)
        assert back == tree and type(back) is type(tree)
        assert spec.num_leaves == len(leaves) == len(pt.tree_leaves(tree))
    assert pt.tree_leaves({"b": [1, (2, None)], "a": 3}) == [1, 2, None, 3]
    assert pt.tree_leaves(None) == [None] and pt.tree_leaves([]) == []
    spec = pt.tree_structure({"b": [1, (2, None)], "a": 3})
    assert spec.type is dict and spec.context == ["b", "a"] and spec.num_nodes == 7
    assert repr(pt.tree_structure(P(1, [2]))) == \
        "TreeSpec(namedtuple, <class 'test_pytree.P'>, [*,\n  TreeSpec(list, None, [*])])"
    assert repr(pt.tree_structure(5)) == "*" and pt.tree_structure(5).is_leaf()
    assert pt.tree_structure([1, 2]) == pt.tree_structure([3, 4]) != pt.tree_structure((3, 4))


def test_map_and_predicates():
    assert pt.tree_map(lambda a, b: a * b, P(2, [3]), P(10, [100])) == P(20, [300])
    assert pt.tree_map(lambda v: v, {"a": 1}, is_leaf=lambda v: isinstance(v, dict)) == {"a": 1}
    assert pt.tree_map_only(int, str, [1, 2.0, (3,)]) == ["1", 2.0, ("3",)]
    assert pt.tree_all(lambda v: v > 0, [1, [2]]) and not pt.tree_any(lambda v: v > 5, (1,))
    x = clgrad.ones(2)
    assert pt.tree_map(lambda t: t * 2, {"t": x})["t"].tolist() == [2.0, 2.0]


def test_errors_and_registration():
    _, spec = pt.tree_flatten(P(1, [2]))
    with pytest.raises(ValueError, match="has length 1 but the spec refers to a pytree that "
                                         "holds 2 items"):
        pt.tree_unflatten([1], spec)
    with pytest.raises(TypeError):
        pt.tree_unflatten([1], "spec")
    with pytest.raises(ValueError, match="already registered"):
        pt.register_pytree_node(list, None, None)

    class Box:
        def __init__(self, v):
            self.v = v
    pt.register_pytree_node(Box, lambda b: ([b.v], None), lambda c, _: Box(c[0]))
    try:
        leaves, spec = pt.tree_flatten([Box(1), Box((2, 3))])
        assert leaves == [1, 2, 3]
        assert pt.tree_unflatten([4, 5, 6], spec)[1].v == (5, 6)
    finally:
        del pt.SUPPORTED_NODES[Box]


def test_hooks_module():
    table, extra = {}, {}
    h = RemovableHandle(table, extra_dict=extra)
    table[h.id] = extra[h.id] = 1
    with h:
        pass
    assert table == {} and extra == {}
    m = clgrad.nn.Linear(1, 1)
    assert isinstance(m.register_forward_hook(lambda *a: None), RemovableHandle)
    assert unserializable_hook(lambda: 0).__torch_unserializable__ is True
