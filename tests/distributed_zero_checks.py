"""Run by tests/test_distributed_optim.py on 2 ranks (python -m clgrad.distributed.run): torch's
ZeroRedundancyOptimizer recipe (DDP + ZeRO(Adam)) against plain Adam on one process over the
same global batches; every rank exits non-zero on the first wrong result."""
import numpy as np

import clgrad as torch
import clgrad.distributed as dist
from clgrad.distributed.optim import ZeroRedundancyOptimizer
from clgrad.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
r, w = dist.get_rank(), dist.get_world_size()


def make():
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def same(a, b, msg, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(a.detach().float().numpy(), b.detach().float().numpy(), rtol=rtol,
                               atol=atol, err_msg=msg)


torch.manual_seed(r)                     # different weights per rank: DDP broadcasts rank 0's
model = make()
ddp = DDP(model)
ref = make()
ref.load_state_dict(model.state_dict())
zero = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=0.02,
                               betas=(0.8, 0.9))
ref_opt = torch.optim.Adam(ref.parameters(), lr=0.02, betas=(0.8, 0.9))

# torch's greedy partition: numels 32 (w1), 24 (w2), 8 (b1), 3 (b2) -> {w1, b2}, {w2, b1}
w1, b1, w2, b2 = model.parameters()
mine = zero.optim.param_groups[0]["params"]
assert [id(p) for p in mine] == ([id(w1), id(b2)] if r == 0 else [id(w2), id(b1)]), mine
assert zero.param_groups[0]["betas"] == (0.8, 0.9) and len(zero.param_groups[0]["params"]) == 4

torch.manual_seed(100)
X, Y = torch.randn(6, 8, 4), torch.randn(6, 8, 3)
for step in range(4):
    zero.zero_grad(); ref_opt.zero_grad()
    ((ddp(X[step, 4 * r:4 * r + 4]) - Y[step, 4 * r:4 * r + 4]) ** 2).mean().backward()
    ((ref(X[step]) - Y[step]) ** 2).mean().backward()
    zero.step(); ref_opt.step()
    for k, (p, q) in enumerate(zip(model.parameters(), ref.parameters())):
        same(p, q, f"step {step} parameter {k}")
# each rank keeps Adam's state for its own shard only
assert {id(p) for p in zero.optim.state} == {id(p) for p in mine}

# consolidation on one rank, then the other; as torch's, only the last target holds the state
def refused():
    try:
        zero.state_dict()
    except RuntimeError as e:
        return f"consolidate_state_dict(to={r})" in str(e)
    return False


zero.consolidate_state_dict(to=1)
if r == 1:
    sd = zero.state_dict()
else:
    assert refused()
zero.consolidate_state_dict()            # to=0
if r == 0:
    sd = zero.state_dict()
else:
    assert refused()
ref_sd = ref_opt.state_dict()
assert sorted(sd["state"]) == [0, 1, 2, 3], sd["state"].keys()
assert sd["param_groups"][0]["params"] == [0, 1, 2, 3]
assert sd["param_groups"][0]["lr"] == 0.02
for i in range(4):
    assert sd["state"][i]["step"] == ref_sd["state"][i]["step"] == 4
    for key in ("exp_avg", "exp_avg_sq"):
        same(sd["state"][i][key], ref_sd["state"][i][key], f"state {i} {key}")

# a fresh ZeRO loads the whole state and continues exactly as the first
model2 = make()
model2.load_state_dict(model.state_dict())
zero2 = ZeroRedundancyOptimizer(model2.parameters(), optimizer_class=torch.optim.Adam, lr=0.5)
zero2.load_state_dict(sd)
assert zero2.param_groups[0]["lr"] == 0.02 and zero2.optim.param_groups[0]["lr"] == 0.02
for p, q in zip(model.parameters(), model2.parameters()):
    p.grad = torch.full(p.shape, 0.1)
    q.grad = torch.full(p.shape, 0.1)
zero.step(); zero2.step()
for k, (p, q) in enumerate(zip(model.parameters(), model2.parameters())):
    same(p, q, f"after load_state_dict, parameter {k}", rtol=0, atol=0)

# the options of the exposed groups reach the local optimizer (schedulers set them there)
sched = torch.optim.lr_scheduler.StepLR(zero, step_size=1, gamma=0.0)
sched.step()
assert zero.param_groups[0]["lr"] == 0.0
before = [p.detach().clone() for p in model.parameters()]
zero.step()
for p, q in zip(model.parameters(), before):
    same(p, q, "lr 0 leaves the parameters", rtol=0, atol=0)

# add_param_group: the new group is partitioned too, and stepped by its owner for everyone
extra = torch.nn.Parameter(torch.full((5,), float(r)))   # made the same by the step's broadcast
zero.add_param_group({"params": [extra], "lr": 1.0})
assert len(zero.param_groups) == 2
extra.grad = torch.ones(5)
zero.step()
got = [torch.zeros(5) for _ in range(w)]
dist.all_gather(got, extra.detach())
same(got[0], got[1], "the new group's parameter agrees on every rank", rtol=0, atol=0)
assert len(zero.optim.param_groups) in (1, 2) and \
    sum(len(g["params"]) for g in zero.optim.param_groups) in (2, 3)

dist.destroy_process_group()
print(f"RANK {r} OK")
