"""DataLoader workers whose Dataset makes tensors: they are host tensors in the worker (no
OpenCL there) and device tensors once the main process has the batch."""
import numpy as np
import pytest

import clgrad


# A torch program as people write it, verbatim but for the import.
PROGRAM = '''
import numpy as np
import torch
from torch.utils.data import Dataset, DataLoader, get_worker_info


class CharDataset(Dataset):
    def __init__(self, text, block_size):
        chars = sorted(set(text))
        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.data = torch.tensor([self.stoi[c] for c in text], dtype=torch.long)
        self.block_size = block_size
        self.features = np.arange(len(text) * 2, dtype=np.float32).reshape(len(text), 2)

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, idx):
        chunk = self.data[idx:idx + self.block_size + 1]
        x = chunk[:-1]
        y = chunk[1:].clone()
        f = torch.from_numpy(self.features[idx]).float()
        f = (f - 1.0) / 2.0
        label = torch.tensor(idx % 3)
        mask = torch.zeros(self.block_size, dtype=torch.bool)
        mask[0] = True
        return x, y, f, label, mask


seen_workers = []


def worker_init_fn(worker_id):
    info = get_worker_info()
    assert info.id == worker_id and info.num_workers == 2
    np.random.seed(info.seed % 2 ** 32)


text = "hello world, hello clgrad " * 3
ds = CharDataset(text, block_size=8)
loader = DataLoader(ds, batch_size=5, shuffle=True, num_workers=2,
                    worker_init_fn=worker_init_fn, persistent_workers=True,
                    generator=torch.Generator().manual_seed(0))
batches = []
for epoch in range(2):
    for x, y, f, label, mask in loader:
        assert x.device == torch.get_default_device() or str(x.device) == str(y.device)
        batches.append((x, y, f, label, mask))
serial = list(DataLoader(ds, batch_size=5, shuffle=True, num_workers=0,
                         generator=torch.Generator().manual_seed(0)))
'''


def test_a_torch_dataset_that_makes_tensors_runs_with_workers():
    env = {}
    exec(compile(PROGRAM.replace("import torch\n", "import clgrad as torch\n").replace(
        "from torch.utils", "from clgrad.utils"), "program", "exec"), env)
    batches, serial, ds = env["batches"], env["serial"], env["ds"]
    assert len(batches) == 2 * len(serial) == 2 * -(-len(ds) // 5)
    data = ds.data.tolist()
    for epoch in (batches[:len(serial)], batches[len(serial):]):
        seen = []
        for x, y, f, label, mask in epoch:
            assert (x.dtype, y.dtype, f.dtype, label.dtype, mask.dtype) == (
                clgrad.int64, clgrad.int64, clgrad.float32, clgrad.int64, clgrad.bool)
            assert x.device == f.device == clgrad.get_default_device()
            for xr, yr, fr, lr, mr in zip(x.tolist(), y.tolist(), f.tolist(), label.tolist(),
                                          mask.tolist()):
                idx = int(fr[0] * 2 + 1) // 2              # f = (features[idx] - 1) / 2
                assert fr == [(2 * idx - 1) / 2, (2 * idx) / 2]
                assert xr == data[idx:idx + 8] and yr == data[idx + 1:idx + 9]
                assert lr == idx % 3 and mr == [True] + [False] * 7
                seen.append(idx)
        assert sorted(seen) == list(range(len(ds)))          # every sample once per epoch
        # device work on the batch in the main process
        assert (x[:, 1:] == y[:, :-1]).all().item()
    assert [b[0].tolist() for b in batches[:2]] != [b[0].tolist() for b in batches[-2:]] or \
        len(serial) < 2                                      # a new shuffle each epoch


class _Ops(clgrad.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        t = clgrad.arange(6, dtype=clgrad.float32).reshape(2, 3) + i
        return {"t": t.t(), "sum": t.sum(), "mean": t.mean(0), "cast": t.to(clgrad.int32),
                "ones": clgrad.ones(2, 2, dtype=clgrad.float16) * 3, "cmp": t > 2,
                "full": clgrad.full((2,), 7), "cat": clgrad.cat([t, -t]), "neg": -t.flip(1),
                "rand": clgrad.rand(3), "info": clgrad.utils.data.get_worker_info().id}


def test_host_ops_in_workers_match_the_device():
    (b,) = list(clgrad.utils.data.DataLoader(_Ops(), batch_size=4, num_workers=1))
    ref = np.arange(6, dtype=np.float32).reshape(2, 3)[None] + np.arange(4)[:, None, None]
    np.testing.assert_array_equal(b["t"].numpy(), ref.transpose(0, 2, 1))
    np.testing.assert_allclose(b["sum"].numpy(), ref.sum((1, 2)))
    np.testing.assert_allclose(b["mean"].numpy(), ref.mean(1))
    assert b["cast"].dtype is clgrad.int32 and b["cast"].tolist() == ref.astype(int).tolist()
    assert b["ones"].dtype is clgrad.float16 and b["ones"].sum().item() == 4 * 4 * 3
    assert b["cmp"].dtype is clgrad.bool and b["cmp"].numpy().tolist() == (ref > 2).tolist()
    assert b["full"].dtype is clgrad.int64 and b["full"].tolist() == [[7, 7]] * 4
    np.testing.assert_array_equal(b["cat"].numpy(), np.concatenate([ref, -ref], 1))
    np.testing.assert_array_equal(b["neg"].numpy(), -ref[:, :, ::-1])
    r = b["rand"].numpy()
    assert r.shape == (4, 3) and ((0 <= r) & (r < 1)).all() and len(set(r[:, 0])) == 4
    assert b["info"].tolist() == [0] * 4


class _MoreOps(clgrad.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        F = clgrad.nn.functional
        x = clgrad.arange(12, dtype=clgrad.float32).reshape(3, 4) - 5 + i
        idx = clgrad.tensor([2, 0])
        return {"floor": (x / 3).floor(), "round": (x / 3).round(), "clamp": x.clamp(-1, 2),
                "max": x.max(), "maxdim": x.max(1)[0], "argmaxdim": x.max(1)[1],
                "min": x.min(), "idx": x[idx], "isel": x.index_select(1, idx),
                "where": clgrad.where(x > 0, x, 0.0), "mf": x.masked_fill(x < 0, -1),
                "rep": x[:1].repeat(2, 1), "pad": F.pad(x, (1, 2)), "sin": x.sin(),
                "tanh": x.tanh(), "sig": x.sigmoid(), "mod": x % 3, "std": x.std(),
                "norm": x.norm(), "bidx": x[x > 3][:2], "cumsum": x.cumsum(0),
                "prod": x[0, 1:3].prod(), "chunk": x.chunk(2, 1)[1], "roll": x.roll(1, 0),
                "recip": (x + 10).reciprocal(),
                "gather": x.gather(1, clgrad.tensor([[0], [1], [2]])),
                "new_zeros": x.new_zeros(2), "new_full": x.new_full((2,), 7.0),
                "long_tensor": clgrad.LongTensor([i, 2]), "as_tensor": clgrad.as_tensor([i])}


def test_host_ops_give_what_the_device_gives():
    """The same Dataset with and without workers: the host forms of the ops match the device."""
    loader = clgrad.utils.data.DataLoader
    ref = next(iter(loader(_MoreOps(), batch_size=4)))
    got = next(iter(loader(_MoreOps(), batch_size=4, num_workers=1)))
    assert got.keys() == ref.keys()
    for k in ref:
        assert got[k].dtype is ref[k].dtype and got[k].shape == ref[k].shape, k
        np.testing.assert_allclose(got[k].float().numpy(), ref[k].float().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=k)


class _NeedsDevice(clgrad.utils.data.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return clgrad.tensor([0.1, 0.2]).erfinv()


def test_device_work_in_a_worker_names_the_op():
    with pytest.raises(RuntimeError, match="Erfinv needs an OpenCL device"):
        list(clgrad.utils.data.DataLoader(_NeedsDevice(), batch_size=2, num_workers=1))
    assert clgrad.utils.data.DataLoader(_NeedsDevice(), batch_size=2).__iter__().__next__() \
        .shape == (2, 2)


class _Windows(clgrad.utils.data.Dataset):
    def __init__(self):
        self.data = clgrad.arange(50) % 7

    def __len__(self):
        return 10

    def __getitem__(self, i):
        return self.data[i:i + 4], clgrad.tensor([i / 2.0])


def test_spawned_workers_get_the_datasets_tensors_on_the_host():
    """With multiprocessing_context="spawn" the dataset is pickled: its tensors (host copies)
    arrive as host tensors in the worker, which never starts OpenCL."""
    loader = clgrad.utils.data.DataLoader(_Windows(), batch_size=5, num_workers=2,
                                          multiprocessing_context="spawn")
    (x0, t0), (x1, t1) = list(loader)
    data = (np.arange(50) % 7).tolist()
    assert x1.tolist() == [data[i:i + 4] for i in range(5, 10)]
    assert t1.tolist() == [[i / 2.0] for i in range(5, 10)] and t0.dtype is clgrad.float32
    assert x0.device == clgrad.get_default_device()
