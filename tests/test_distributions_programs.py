"""torch programs that use torch.distributions, run verbatim with `import clgrad as torch`: a
REINFORCE policy gradient on a two-armed bandit-like task, and a small VAE (Normal rsample and
kl_divergence); each must run and lower its loss."""
import clgrad as torch
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.distributions import Categorical, Normal, kl_divergence


def test_reinforce_policy_gradient(device):
    torch.manual_seed(0)
    # contextual bandit: in state s (one-hot of 4), action s % 3 pays 1, others 0
    policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
    opt = torch.optim.Adam(policy.parameters(), lr=0.05)
    eye = torch.eye(4)
    rewards = []
    for step in range(60):
        states = torch.randint(0, 4, (32,))
        logits = policy(eye[states])
        dist = Categorical(logits=logits)
        actions = dist.sample()
        reward = (actions == states % 3).float()
        baseline = reward.mean()
        loss = -(dist.log_prob(actions) * (reward - baseline)).mean() - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        rewards.append(reward.mean().item())
    assert sum(rewards[:3]) / 3 < 0.5              # a uniform policy earns 1/3
    assert sum(rewards[-10:]) / 10 > 0.9


class VAE(nn.Module):
    def __init__(self, d=8, z=2):
        super().__init__()
        self.enc = nn.Linear(d, 2 * z)
        self.dec = nn.Linear(z, d)

    def forward(self, x):
        mu, log_std = self.enc(x).chunk(2, dim=-1)
        q = Normal(mu, log_std.exp())
        z = q.rsample()
        prior = Normal(torch.zeros_like(mu), torch.ones_like(mu))
        kl = kl_divergence(q, prior).sum(-1)
        recon = F.mse_loss(self.dec(z), x, reduction="none").sum(-1)
        return (recon + kl).mean()


def test_vae_elbo_decreases(device):
    torch.manual_seed(1)
    basis = torch.randn(2, 8)
    data = torch.randn(256, 2) @ basis        # data on a 2-d subspace
    model = VAE()
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    losses = []
    for epoch in range(80):
        loss = model(data)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert all(p.grad is not None for p in model.enc.parameters())
