"""Run by tests/test_distributed.py on 2 ranks (python -m clgrad.distributed.run); every rank
checks its results and exits non-zero on the first wrong one."""
import numpy as np

import clgrad as torch
import clgrad.distributed as dist
from clgrad.utils.data.distributed import DistributedSampler

dist.init_process_group("mpi")
r, w = dist.get_rank(), dist.get_world_size()
assert w == 2 and dist.is_initialized() and dist.get_backend() == "mpi"
Op = dist.ReduceOp


def close(t, ref):
    np.testing.assert_allclose(t.float().numpy(), np.asarray(ref, np.float32), rtol=1e-6)


# collectives
for op, ref in ((Op.SUM, 3.0), (Op.AVG, 1.5), (Op.PRODUCT, 2.0), (Op.MIN, 1.0), (Op.MAX, 2.0)):
    t = torch.full((3,), float(r + 1))
    dist.all_reduce(t, op=op)
    close(t, [ref] * 3)
h = torch.full((2,), float(r + 1), dtype=torch.bfloat16)
dist.all_reduce(h)
assert h.dtype is torch.bfloat16
close(h, [3.0, 3.0])
t = torch.tensor([float(r)])
work = dist.all_reduce(t, async_op=True)
work.wait()
assert work.is_completed()
close(t, [1.0])
b = torch.full((2,), float(r))
dist.broadcast(b, src=1)
close(b, [1.0, 1.0])
x = torch.full((2,), float(r + 1))
dist.reduce(x, dst=0)
close(x, [3.0, 3.0] if r == 0 else [2.0, 2.0])
outs = [torch.zeros(2) for _ in range(w)]
dist.all_gather(outs, torch.full((2,), float(r)))
close(outs[0], [0, 0]); close(outs[1], [1, 1])
big = torch.zeros(w, 3)
dist.all_gather_into_tensor(big, torch.full((3,), float(r + 5)))
close(big, [[5, 5, 5], [6, 6, 6]])
g = [torch.zeros(1), torch.zeros(1)] if r == 0 else None
dist.gather(torch.tensor([float(r + 7)]), g, dst=0)
if r == 0:
    close(g[0], [7]); close(g[1], [8])
s = torch.zeros(2)
dist.scatter(s, [torch.full((2,), 10.0), torch.full((2,), 11.0)] if r == 1 else None, src=1)
close(s, [10 + r] * 2)
out = torch.zeros(2)
dist.reduce_scatter(out, [torch.full((2,), 1.0 + r), torch.full((2,), 10.0 + r)])
close(out, [3.0] * 2 if r == 0 else [21.0] * 2)
out = torch.zeros(1, 2)
dist.reduce_scatter_tensor(out, torch.arange(4.0).reshape(2, 2) + r)
close(out, [[1.0, 3.0]] if r == 0 else [[5.0, 7.0]])
if r == 0:
    dist.send(torch.tensor([42.0, 43.0]), dst=1)
    req = dist.irecv(v := torch.zeros(1), src=1)
    req.wait()
    close(v, [99.0])
else:
    got = torch.zeros(2)
    assert dist.recv(got, src=0) == 0
    close(got, [42.0, 43.0])
    dist.isend(torch.tensor([99.0]), dst=0).wait()
sub = dist.new_group([0, 1])
t = torch.ones(1)
dist.all_reduce(t, group=sub)
close(t, [2.0])
dist.barrier()

# DistributedDataParallel equals one process on the whole batch, step after step
torch.manual_seed(r)                     # different initial weights: DDP broadcasts rank 0's
model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.BatchNorm1d(16), torch.nn.Tanh(),
                            torch.nn.Linear(16, 1))
ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0002)
assert len(ddp._buckets) > 1, "several buckets, so that overlap is exercised"
torch.manual_seed(1234)
ref = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.BatchNorm1d(16), torch.nn.Tanh(),
                          torch.nn.Linear(16, 1))
ref.load_state_dict(model.state_dict())
ref.eval(); model.eval()                 # batch statistics would differ per shard
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
X, Y = torch.randn(8, 4), torch.randn(8, 1)
for step in range(3):
    opt.zero_grad(); ref_opt.zero_grad()
    ((ddp(X[r * 4:(r + 1) * 4]) - Y[r * 4:(r + 1) * 4]) ** 2).mean().backward()
    ((ref(X) - Y) ** 2).mean().backward()
    opt.step(); ref_opt.step()
    for k, (p, q) in enumerate(zip(model.parameters(), ref.parameters())):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=f"step {step} parameter {k}")
assert list(ddp.state_dict())[0].startswith("module.")

# no_sync: local accumulation, then one averaged reduction
opt.zero_grad()
with ddp.no_sync():
    ddp(X[r * 4:(r + 1) * 4]).sum().backward()
local = model[0].weight.grad.numpy().copy()
ddp(X[r * 4:(r + 1) * 4]).sum().backward()
mine = model[0].weight.grad.numpy()
both = local * 2                         # this rank: twice its local gradient before averaging
other = torch.tensor(both); dist.all_reduce(other, op=Op.AVG)
np.testing.assert_allclose(mine, other.numpy(), rtol=1e-5, atol=1e-6)


# unused parameters
class Branchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(2, 1)
        self.b = torch.nn.Linear(2, 1)

    def forward(self, x):
        return self.a(x)


strict = torch.nn.parallel.DistributedDataParallel(Branchy())
strict(torch.ones(1, 2)).sum().backward()
try:
    strict(torch.ones(1, 2))
    raise AssertionError("an unused parameter went unnoticed")
except RuntimeError as e:
    assert "find_unused_parameters=True" in str(e)
loose = torch.nn.parallel.DistributedDataParallel(Branchy(), find_unused_parameters=True)
for _ in range(2):
    loose(torch.full((1, 2), float(r))).sum().backward()
np.testing.assert_allclose(loose.module.a.weight.grad.numpy(), [[1.0, 1.0]])   # mean of 0 and 1, twice

# the sampler partitions as torch's
parts = [list(DistributedSampler(range(10), shuffle=True, seed=3)) for _ in range(1)][0]
allp = [torch.zeros(len(parts), dtype=torch.int64) for _ in range(w)]
dist.all_gather(allp, torch.tensor(parts))
assert sorted(sum((p.tolist() for p in allp), [])) == list(range(10))
# SyncBatchNorm: each rank's slice of one batch norm over both ranks' batches
full = np.random.default_rng(5).normal(2.0, 3.0, size=(6, 3, 4))
gout = np.random.default_rng(6).normal(size=(6, 3, 4))
ref = torch.nn.BatchNorm1d(3).double()
ref.weight.data.copy_(torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64))
xf = torch.tensor(full, requires_grad=True)
y_ref = ref(xf)
y_ref.backward(torch.tensor(gout))
sbn = torch.nn.SyncBatchNorm(3).double()
sbn.weight.data.copy_(torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64))
part = slice(3 * r, 3 * r + 3)
xs = torch.tensor(full[part], requires_grad=True)
y = sbn(xs)
y.backward(torch.tensor(gout[part]))
np.testing.assert_allclose(y.detach().numpy(), y_ref.detach().numpy()[part], rtol=1e-10,
                           atol=1e-12)
np.testing.assert_allclose(xs.grad.numpy(), xf.grad.numpy()[part], rtol=1e-9, atol=1e-12)
np.testing.assert_allclose(sbn.running_mean.numpy(), ref.running_mean.numpy(), rtol=1e-10)
np.testing.assert_allclose(sbn.running_var.numpy(), ref.running_var.numpy(), rtol=1e-10)
gw = sbn.weight.grad.clone()
dist.all_reduce(gw)          # the parameters' gradients are per rank; their sum is the whole's
np.testing.assert_allclose(gw.numpy(), ref.weight.grad.numpy(), rtol=1e-9, atol=1e-12)

dist.destroy_process_group()
print(f"RANK {r} OK")
