"""clgrad.utils.data: datasets, samplers, collation and DataLoader (batching, drop_last, len,
seeded shuffling)."""
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import clgrad
from clgrad.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset,
                               RandomSampler, SequentialSampler, Subset, TensorDataset,
                               default_collate, default_convert, random_split)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": clgrad.tensor([float(i), float(i * i)]), "i": i, "name": f"s{i}"}


def test_tensor_dataset():
    x, y = clgrad.arange(12).reshape(6, 2).float(), clgrad.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    a, b = ds[4]
    assert a.tolist() == [8.0, 9.0] and b.item() == 4
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, clgrad.arange(5))
    with pytest.raises(NotImplementedError, match="should implement __getitem__"):
        Dataset()[0]


@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (4, False), (4, True), (6, True),
                                                  (7, False)])
def test_batching_and_len(device, batch_size, drop_last):
    n = 6
    x, y = clgrad.arange(2 * n).reshape(n, 2).float(), clgrad.arange(n)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, drop_last=drop_last)
    batches = list(loader)
    sizes = [len(b[1]) for b in batches]
    full, rest = divmod(n, batch_size)
    assert sizes == [batch_size] * full + ([rest] if rest and not drop_last else [])
    assert len(loader) == len(batches)
    flat = [v for _, yb in batches for v in yb.tolist()]
    assert flat == list(range(n))[:len(flat)]
    xb, yb = batches[0]
    first = min(batch_size, n)
    assert isinstance(batches[0], list) and xb.shape == (first, 2) and yb.dtype is clgrad.int64
    assert xb.tolist() == x[:first].tolist()


def test_shuffle_is_seeded_and_changes_each_epoch():
    ds = TensorDataset(clgrad.arange(20))

    def epoch(loader):
        return [v for (b,) in loader for v in b.tolist()]
    g = clgrad.Generator().manual_seed(7)
    loader = DataLoader(ds, batch_size=6, shuffle=True, generator=g)
    first, second = epoch(loader), epoch(loader)
    assert sorted(first) == list(range(20)) and sorted(second) == list(range(20))
    assert first != list(range(20)) and first != second
    g.manual_seed(7)
    assert epoch(loader) == first                     # the generator's seed fixes the order
    clgrad.manual_seed(3)                             # no generator: the default one
    a = epoch(DataLoader(ds, batch_size=5, shuffle=True))
    clgrad.manual_seed(3)
    assert epoch(DataLoader(ds, batch_size=5, shuffle=True)) == a


def test_collation_of_structured_samples():
    loader = DataLoader(Squares(5), batch_size=2)
    batch = next(iter(loader))
    assert batch["x"].tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert batch["i"].tolist() == [0, 1] and batch["i"].dtype is clgrad.int64
    assert batch["name"] == ["s0", "s1"]
    assert [len(b["i"]) for b in loader] == [2, 2, 1]
    Point = namedtuple("Point", "x y")
    out = default_collate([Point(1.5, np.array([1, 2])), Point(2.5, np.array([3, 4]))])
    assert isinstance(out, Point) and out.y.tolist() == [[1, 2], [3, 4]]
    assert out.x.dtype is (clgrad.float64 if clgrad.cl.devices()[0].has_fp64 else
                           clgrad.float32)
    pairs = default_collate([(1, "a"), (2, "b")])
    assert isinstance(pairs, list) and pairs[0].tolist() == [1, 2] and pairs[1] == ("a", "b")
    od = default_collate([OrderedDict(a=1), OrderedDict(a=2)])
    assert isinstance(od, OrderedDict) and od["a"].tolist() == [1, 2]
    assert default_collate([True, False]).dtype is clgrad.bool
    assert default_collate([np.float32(1.0), np.float32(2.0)]).dtype is clgrad.float32
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([object(), object()])
    assert default_convert({"a": np.ones(2)})["a"].tolist() == [1.0, 1.0]


def test_no_auto_batching_and_custom_collate():
    loader = DataLoader(Squares(3), batch_size=None)
    items = list(loader)
    assert len(loader) == 3 and items[2]["i"] == 2
    loader = DataLoader(Squares(4), batch_size=3, collate_fn=lambda b: [s["i"] for s in b])
    assert list(loader) == [[0, 1, 2], [3]]
    # a custom collate over a TensorDataset sees the samples (no batched shortcut)
    loader = DataLoader(TensorDataset(clgrad.arange(4)), batch_size=2, collate_fn=len)
    assert list(loader) == [2, 2]


def test_samplers():
    assert list(SequentialSampler(range(3))) == [0, 1, 2]
    g = clgrad.Generator().manual_seed(0)
    rs = RandomSampler(range(10), generator=g)
    assert sorted(rs) == list(range(10)) and len(rs) == 10
    draws = list(RandomSampler(range(3), replacement=True, num_samples=50, generator=g))
    assert len(draws) == 50 and set(draws) <= {0, 1, 2}
    longer = list(RandomSampler(range(4), num_samples=10, generator=g))
    assert len(longer) == 10 and sorted(longer[:8]) == sorted(list(range(4)) * 2)
    bs = BatchSampler(SequentialSampler(range(7)), 3, drop_last=True)
    assert list(bs) == [[0, 1, 2], [3, 4, 5]] and len(bs) == 2
    loader = DataLoader(TensorDataset(clgrad.arange(7)), batch_sampler=bs)
    assert [b.tolist() for (b,) in loader] == [[0, 1, 2], [3, 4, 5]] and len(loader) == 2
    loader = DataLoader(TensorDataset(clgrad.arange(4)), sampler=[3, 1], batch_size=2)
    assert [b.tolist() for (b,) in loader] == [[3, 1]]
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, 1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(range(3), num_samples=0)


def test_distributed_sampler_in_utils_data(monkeypatch):
    """torch has DistributedSampler in torch.utils.data as well as in its .distributed module
    (issue 22: clgrad had only the latter); num_replicas and rank come from the default
    process group when it is initialised."""
    import clgrad.distributed as dist
    import clgrad.utils.data as data
    from clgrad.utils.data.distributed import DistributedSampler
    assert data.DistributedSampler is DistributedSampler and "DistributedSampler" in data.__all__
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 3)
    monkeypatch.setattr(dist, "get_rank", lambda group=None: 2)
    s = data.DistributedSampler(range(7), shuffle=False)
    assert (s.num_replicas, s.rank, len(s), list(s)) == (3, 2, 3, [2, 5, 1])    # padded
    s = data.DistributedSampler(range(7), shuffle=False, drop_last=True)
    assert (len(s), list(s)) == (2, [2, 5])
    assert list(data.DistributedSampler(range(2), rank=0, shuffle=False)) == [0]
    assert list(data.DistributedSampler(range(2), num_replicas=5, rank=4, shuffle=False)) == [0]
    shuffled = data.DistributedSampler(range(7), seed=1)
    first = list(shuffled)
    assert len(first) == 3 and set(first) <= set(range(7)) and list(shuffled) == first
    loader = DataLoader(TensorDataset(clgrad.arange(7)), batch_size=2,
                        sampler=data.DistributedSampler(range(7), shuffle=False))
    assert [b.tolist() for (b,) in loader] == [[2, 5], [1]]
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        data.DistributedSampler(range(4))
    monkeypatch.setattr(dist, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
        data.DistributedSampler(range(4), num_replicas=2)


def test_random_sampler_with_replacement_draws_lazily():
    # a common idiom for an endless stream: nothing may be drawn up front
    import itertools
    g = clgrad.Generator().manual_seed(0)
    sampler = RandomSampler(range(5), replacement=True, num_samples=int(1e10), generator=g)
    assert len(sampler) == int(1e10)
    first = list(itertools.islice(iter(sampler), 100))
    assert len(first) == 100 and set(first) <= set(range(5)) and len(set(first)) > 1
    loader = DataLoader(TensorDataset(clgrad.arange(5)), batch_size=4, sampler=sampler)
    (batch,) = next(iter(loader))
    assert batch.shape == (4,)
    # chunked draws end exactly at num_samples
    assert len(list(RandomSampler(range(3), replacement=True, num_samples=70, generator=g))) == 70


def test_dataloader_argument_errors():
    ds = TensorDataset(clgrad.arange(4))
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0, 1], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_sampler=[[0, 1]], batch_size=2)
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    assert len(list(DataLoader(ds, batch_size=2, num_workers=2, pin_memory=True))) == 2


def test_iterable_dataset():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

        def __len__(self):
            return 7
    loader = DataLoader(Stream(), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]] and len(loader) == 3
    loader = DataLoader(Stream(), batch_size=3, drop_last=True)
    assert len(list(loader)) == 2 and len(loader) == 2
    assert [v for v in DataLoader(Stream(), batch_size=None)][:2] == [0, 1]
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(), shuffle=True)


def test_subset_concat_random_split():
    ds = TensorDataset(clgrad.arange(10))
    sub = Subset(ds, [9, 0, 4])
    assert len(sub) == 3 and sub[0][0].item() == 9
    both = ds + sub
    assert isinstance(both, ConcatDataset) and len(both) == 13 and both[10][0].item() == 9
    assert both[-1][0].item() == 4
    parts = random_split(ds, [3, 7], generator=clgrad.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    parts = random_split(ds, [0.5, 0.3, 0.2], generator=clgrad.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [5, 3, 2]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(ds, [3, 3])
    loader = DataLoader(parts[0], batch_size=5)
    assert next(iter(loader))[0].shape == (5,)


def test_training_loop_over_a_loader():
    """A regression fit through DataLoader batches converges."""
    clgrad.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], dtype=np.float32))[:, None]
    loader = DataLoader(TensorDataset(clgrad.tensor(x), clgrad.tensor(y)), batch_size=16,
                        shuffle=True)
    model = clgrad.nn.Linear(3, 1)
    opt = clgrad.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(15):
        for xb, yb in loader:
            opt.zero_grad()
            clgrad.nn.functional.mse_loss(model(xb), yb).backward()
            opt.step()
    np.testing.assert_allclose(model.weight.detach().numpy()[0], [1.0, -2.0, 0.5], atol=1e-2)


class _Squares(Dataset):
    """Host samples (numpy, numbers, strings) and which worker loaded them."""

    def __len__(self):
        return 11

    def __getitem__(self, i):
        from clgrad.utils.data import get_worker_info
        info = get_worker_info()
        return {"x": np.full(3, i * i, np.float32), "i": i, "half": i / 2,
                "name": f"s{i}", "worker": -1 if info is None else info.id}


class _Shards(IterableDataset):
    def __iter__(self):
        from clgrad.utils.data import get_worker_info
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, 9, step))


def test_dataloader_workers_give_the_same_batches():
    single = list(DataLoader(_Squares(), batch_size=4))
    multi = list(DataLoader(_Squares(), batch_size=4, num_workers=2, prefetch_factor=1))
    assert len(single) == len(multi) == 3
    for a, b in zip(single, multi):
        assert a["x"].tolist() == b["x"].tolist() and a["i"].tolist() == b["i"].tolist()
        assert a["half"].dtype is b["half"].dtype and a["name"] == b["name"]
        assert b["x"].device == clgrad.get_default_device()
    assert {w for b in multi for w in b["worker"].tolist()} == {0, 1}
    assert all(w == -1 for b in single for w in b["worker"].tolist())
    # no batching: samples one by one, converted as default_convert does
    one = list(DataLoader(_Squares(), batch_size=None, num_workers=2))
    assert [s["i"] for s in one] == list(range(11)) and one[3]["x"].tolist() == [9.0] * 3


def test_dataloader_workers_options():
    seen = []
    loader = DataLoader(_Squares(), batch_size=5, num_workers=2, persistent_workers=True,
                        worker_init_fn=lambda wid: np.random.seed(wid),
                        collate_fn=lambda samples: clgrad.tensor([s["i"] for s in samples]))
    for _ in range(2):                                  # a custom collate runs in this process
        seen.append([b.tolist() for b in loader])
    assert seen[0] == seen[1] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10]]
    assert loader._pool is not None
    loader._pool.shutdown()
    batches = [b.tolist() for b in DataLoader(_Shards(), batch_size=2, num_workers=2)]
    assert batches == [[0, 2], [1, 3], [4, 6], [5, 7], [8]]        # workers in turn, as torch
    ds = TensorDataset(clgrad.arange(6))
    assert [b.tolist() for (b,) in DataLoader(ds, batch_size=4, num_workers=2)] == \
        [[0, 1, 2, 3], [4, 5]]
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers"):
        DataLoader(ds, persistent_workers=True)


class _Failing(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError("no sample 2")
        return i


class _OnDevice(Dataset):
    def __init__(self):
        self.data = clgrad.arange(4)

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return self.data[i]


def test_dataloader_worker_errors_reach_the_main_process():
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process"):
        list(DataLoader(_Failing(), batch_size=1, num_workers=2))
    # the dataset's device tensors are copied to the host for the workers (test_data_workers.py)
    assert [b.tolist() for b in DataLoader(_OnDevice(), batch_size=2, num_workers=1)] == \
        [b.tolist() for b in DataLoader(_OnDevice(), batch_size=2)] == [[0, 1], [2, 3]]
