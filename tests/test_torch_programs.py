"""Short programs written the way torch programs are written, run verbatim with
`import clgrad as torch`: the only edit a torch program needs is its import lines. Each
program is in the style of a well-known public script (a tutorial regression, makemore's
bigram counts, a char-LSTM, nanoGPT's attention block, the MNIST example's loop, the
time-sequence LSTMCell example with LBFGS, a transformer LM with a positional encoding,
a test file that uses torch as its oracle) and ends with checks of its own results against
numpy or against what the program itself must satisfy (the loss falls, a reloaded model
gives the same outputs).

The programs run with the device vocabulary a torch program uses ('cuda' if available,
else 'cpu'), so on the test device they exercise `device=`, `.to(device)`, `.cpu()`,
`.item()`, `.tolist()`, `.numpy()`."""
import sys
import textwrap
import types

import pytest

LINEAR_REGRESSION = """
import clgrad as torch
import clgrad.nn as nn
import numpy as np

device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
torch.manual_seed(0)
x_train = torch.linspace(-1, 1, 64).unsqueeze(1)
y_train = 3.0 * x_train - 0.5 + 0.1 * torch.randn(x_train.size())
model = nn.Linear(1, 1).to(device)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
for epoch in range(200):
    inputs, targets = x_train.to(device), y_train.to(device)
    outputs = model(inputs)
    loss = criterion(outputs, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if (epoch + 1) % 50 == 0:
        print('Epoch [{}/{}], Loss: {:.4f}'.format(epoch + 1, 200, loss.item()))

# the closed form, in numpy
X = np.c_[x_train.numpy(), np.ones(64)]
w, b = np.linalg.lstsq(X, y_train.numpy()[:, 0], rcond=None)[0]
assert abs(model.weight.item() - w) < 1e-3 and abs(model.bias.item() - b) < 1e-3
predicted = model(x_train.to(device)).detach().cpu().numpy()
assert predicted.shape == (64, 1)
"""

BIGRAM_COUNTS = """
import clgrad as torch
import numpy as np

words = ['emma', 'olivia', 'ava', 'isabella', 'sophia', 'mia', 'amelia', 'harper', 'evelyn']
chars = sorted(list(set(''.join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
itos = {i: s for s, i in stoi.items()}
n = len(stoi)

N = torch.zeros((n, n), dtype=torch.int32)
for w in words:
    chs = ['.'] + list(w) + ['.']
    for ch1, ch2 in zip(chs, chs[1:]):
        ix1 = stoi[ch1]
        ix2 = stoi[ch2]
        N[ix1, ix2] += 1

P = (N + 1).float()
P /= P.sum(1, keepdims=True)

g = torch.Generator().manual_seed(2147483647)
names = []
for i in range(5):
    out = []
    ix = 0
    while True:
        p = P[ix]
        ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
        out.append(itos[ix])
        if ix == 0 or len(out) > 50:
            break
    names.append(''.join(out))

log_likelihood = 0.0
count = 0
for w in words:
    chs = ['.'] + list(w) + ['.']
    for ch1, ch2 in zip(chs, chs[1:]):
        prob = P[stoi[ch1], stoi[ch2]]
        log_likelihood += torch.log(prob)
        count += 1
nll = -log_likelihood / count
print(f'{nll=}', names)

# numpy: the same counts and the same average negative log likelihood
C = np.zeros((n, n))
pairs = [(stoi[a], stoi[b]) for w in words for a, b in zip('.' + w, w + '.')]
for a, b in pairs:
    C[a, b] += 1
assert (N.numpy() == C).all()
Pn = (C + 1) / (C + 1).sum(1, keepdims=True)
ref = -np.mean([np.log(Pn[a, b]) for a, b in pairs])
assert abs(nll.item() - ref) < 1e-5, (nll.item(), ref)
assert all(name.endswith('.') or len(name) > 50 for name in names)
assert all(set(name) <= set(stoi) for name in names)
"""

CHAR_LSTM = """
import clgrad as torch
import clgrad.nn as nn
import clgrad.nn.functional as F

device = 'cuda' if torch.cuda.is_available() else 'cpu'
text = 'hello world, hello clgrad. ' * 8
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)

class CharLSTM(nn.Module):
    def __init__(self, vocab_size, hidden_size=32, num_layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, 16)
        self.lstm = nn.LSTM(16, hidden_size, num_layers, batch_first=True, dropout=0.1)
        self.fc = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, hidden=None):
        out, hidden = self.lstm(self.embed(x), hidden)
        return self.fc(out), hidden

torch.manual_seed(1)
model = CharLSTM(len(chars)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
seq_len, batch_size = 16, 8
losses = []
for step in range(40):
    ix = torch.randint(len(data) - seq_len - 1, (batch_size,))
    x = torch.stack([data[i:i + seq_len] for i in ix]).to(device)
    y = torch.stack([data[i + 1:i + seq_len + 1] for i in ix]).to(device)
    logits, _ = model(x)
    loss = F.cross_entropy(logits.view(-1, len(chars)), y.view(-1))
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    losses.append(loss.item())

model.eval()
with torch.no_grad():
    idx = torch.tensor([[stoi['h']]], device=device)
    hidden = None
    out = ['h']
    for _ in range(20):
        logits, hidden = model(idx, hidden)
        probs = F.softmax(logits[:, -1, :], dim=-1)
        idx = torch.multinomial(probs, num_samples=1)
        out.append(chars[idx.item()])
sample = ''.join(out)
torch.save(model.state_dict(), 'char_lstm.pt')
model2 = CharLSTM(len(chars)).to(device)
model2.load_state_dict(torch.load('char_lstm.pt'))
model2.eval()
with torch.no_grad():
    a, _ = model(x)
    b, _ = model2(x)
assert torch.equal(a, b)
assert sum(losses[-5:]) / 5 < 0.5 * sum(losses[:5]) / 5, losses
assert len(sample) == 21 and set(sample) <= set(chars)
"""

NANOGPT_BLOCK = """
import math
import clgrad as torch
import clgrad.nn as nn
from clgrad.nn import functional as F

class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.n_embd = n_embd
        self.flash = hasattr(torch.nn.functional, 'scaled_dot_product_attention')
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                                    .view(1, 1, block_size, block_size))

    def forward(self, x, flash=True):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash and flash:
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                                                 dropout_p=0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)

class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate='tanh'),
                                 nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))

class GPT(nn.Module):
    def __init__(self, vocab_size=17, block_size=16, n_embd=32, n_head=4, n_layer=2):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight      # weight tying
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float('Inf')
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx

torch.manual_seed(1337)
device = 'cuda' if torch.cuda.is_available() else 'cpu'
model = GPT().to(device)
decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
optimizer = torch.optim.AdamW([{'params': decay, 'weight_decay': 0.1},
                               {'params': no_decay, 'weight_decay': 0.0}],
                              lr=3e-3, betas=(0.9, 0.95))
# a sequence the model can learn: counting modulo 17
data = torch.arange(400) % 17
losses = []
for it in range(30):
    ix = torch.randint(len(data) - 16, (8,))
    x = torch.stack([data[i:i + 16] for i in ix]).to(device)
    y = torch.stack([data[i + 1:i + 17] for i in ix]).to(device)
    logits, loss = model(x, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

# the fused attention and the masked-softmax path agree
h = torch.randn(2, 16, 32, device=device)
attn = model.h[0].attn
assert torch.allclose(attn(h, flash=True), attn(h, flash=False), atol=1e-5)
out = model.generate(torch.zeros((1, 1), dtype=torch.long, device=device), 20, top_k=5)
assert out.shape == (1, 21) and out.dtype == torch.long
assert 0 <= out.min().item() and out.max().item() < 17
assert losses[-1] < 0.6 * losses[0], losses
"""

MNIST_STYLE_LOOP = """
import clgrad as torch
import clgrad.nn as nn
import clgrad.nn.functional as F
import clgrad.optim as optim
from clgrad.optim.lr_scheduler import StepLR
from clgrad.utils.data import DataLoader, TensorDataset

class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 2)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)

def train(model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()

def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    return test_loss / len(test_loader.dataset), correct / len(test_loader.dataset)

use_cuda = torch.cuda.is_available()
torch.manual_seed(1)
device = torch.device("cuda" if use_cuda else "cpu")
# two classes of 12x12 images: a bright left half or a bright right half, with noise
g = torch.Generator().manual_seed(0)
labels = torch.randint(0, 2, (256,), generator=g)
images = 0.3 * torch.randn(256, 1, 12, 12, generator=g)
images[labels == 0, :, :, :6] += 1.0
images[labels == 1, :, :, 6:] += 1.0
train_loader = DataLoader(TensorDataset(images[:192], labels[:192]), batch_size=32,
                          shuffle=True)
test_loader = DataLoader(TensorDataset(images[192:], labels[192:]), batch_size=64)
model = Net().to(device)
optimizer = optim.Adadelta(model.parameters(), lr=1.0)
scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
for epoch in range(1, 4):
    train(model, device, train_loader, optimizer, epoch)
    scheduler.step()
test_loss, accuracy = test(model, device, test_loader)
torch.save(model, "mnist_cnn_whole.pt")
loaded = torch.load("mnist_cnn_whole.pt", weights_only=False)
assert type(loaded).__name__ == "Net"
assert test(loaded, device, test_loader) == (test_loss, accuracy)
assert accuracy >= 0.9, accuracy
assert abs(optimizer.param_groups[0]['lr'] - 1.0 * 0.7 ** 3) < 1e-12
"""

TIME_SEQUENCE_LBFGS = """
import numpy as np
import clgrad as torch
import clgrad.nn as nn
import clgrad.optim as optim

class Sequence(nn.Module):
    def __init__(self):
        super(Sequence, self).__init__()
        self.lstm1 = nn.LSTMCell(1, 16)
        self.lstm2 = nn.LSTMCell(16, 16)
        self.linear = nn.Linear(16, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 16, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 16, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 16, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 16, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs

np.random.seed(2)
T, L, N = 20, 24, 12
x = np.empty((N, L), 'int64')
x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
data = np.sin(x / 1.0 / T).astype('float64')
torch.manual_seed(0)
input = torch.from_numpy(data[3:, :-1])
target = torch.from_numpy(data[3:, 1:])
test_input = torch.from_numpy(data[:3, :-1])
test_target = torch.from_numpy(data[:3, 1:])
seq = Sequence()
seq.double()
criterion = nn.MSELoss()
optimizer = optim.LBFGS(seq.parameters(), lr=0.8)
first = None
for i in range(2):
    def closure():
        optimizer.zero_grad()
        out = seq(input)
        loss = criterion(out, target)
        loss.backward()
        return loss
    loss = optimizer.step(closure)
    first = loss.item() if first is None else first
with torch.no_grad():
    future = 5
    pred = seq(test_input, future=future)
    loss = criterion(pred[:, :-future], test_target)
y = pred.detach().numpy()
assert y.shape == (3, L - 1 + future) and y.dtype == np.float64
assert loss.item() < first, (loss.item(), first)
"""

TRANSFORMER_LM = """
import math
import clgrad as torch
from clgrad import nn, Tensor
from clgrad.nn import TransformerEncoder, TransformerEncoderLayer

class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)

class TransformerModel(nn.Module):
    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout=0.2):
        super().__init__()
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = TransformerEncoder(encoder_layers, nlayers,
                                                      enable_nested_tensor=False)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src, src_mask=None):
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(src.device)
        output = self.transformer_encoder(src, src_mask)
        return self.linear(output)

def batchify(data, bsz):
    seq_len = data.size(0) // bsz
    data = data[:seq_len * bsz]
    return data.view(bsz, seq_len).t().contiguous()

def get_batch(source, i, bptt=12):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].reshape(-1)
    return data, target

torch.manual_seed(0)
ntokens = 11
train_data = batchify(torch.arange(600) % ntokens, 8)
model = TransformerModel(ntokens, 32, 2, 64, 2, dropout=0.1)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)
losses = []
for epoch in range(2):
    model.train()
    for batch, i in enumerate(range(0, train_data.size(0) - 1, 12)):
        data, targets = get_batch(train_data, i)
        output = model(data)
        loss = criterion(output.view(-1, ntokens), targets)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        losses.append(loss.item())
    scheduler.step()
model.eval()
with torch.no_grad():
    data, targets = get_batch(train_data, 0)
    ppl = math.exp(criterion(model(data).view(-1, ntokens), targets).item())
assert ppl < math.exp(losses[0]), (ppl, losses[0])
assert len(losses) == 2 * math.ceil((train_data.size(0) - 1) / 12)
"""

ORACLE_TEST_FILE = """
import numpy as np
import clgrad as torch

def test_softmax_matches_numpy():
    x = torch.randn(4, 5, dtype=torch.float64)
    e = np.exp(x.numpy() - x.numpy().max(1, keepdims=True))
    torch.testing.assert_close(torch.softmax(x, 1), torch.from_numpy(e / e.sum(1, keepdims=True)))

def test_sort_and_topk():
    x = torch.tensor([[3., 1., 2.], [0., 5., 4.]])
    values, indices = torch.sort(x, dim=1, descending=True)
    assert values.tolist() == [[3., 2., 1.], [5., 4., 0.]]
    assert indices.tolist() == [[0, 2, 1], [1, 2, 0]]
    torch.testing.assert_close(torch.topk(x, 2).values, values[:, :2])

def test_einsum_and_linalg():
    a = torch.randn(3, 4, dtype=torch.float64)
    b = torch.randn(4, 5, dtype=torch.float64)
    torch.testing.assert_close(torch.einsum('ij,jk->ik', a, b), a @ b)
    m = a @ a.T + 3 * torch.eye(3, dtype=torch.float64)
    torch.testing.assert_close(torch.linalg.inv(m) @ m, torch.eye(3, dtype=torch.float64))

def test_gradcheck():
    x = torch.randn(3, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: (t.sin() * t).sum(), (x,))

def test_assert_close_fails_on_mismatch():
    try:
        torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.1]))
    except AssertionError as e:
        assert 'Mismatched elements: 1 / 2' in str(e)
    else:
        raise RuntimeError('assert_close accepted different tensors')

for name, fn in list(globals().items()):
    if name.startswith('test_'):
        fn()
"""

LAZY_SAMPLER_AND_EXTRAS = """
import clgrad as torch
from clgrad.utils.data import DataLoader, RandomSampler, TensorDataset

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
ds = TensorDataset(torch.arange(100).float().unsqueeze(1), torch.arange(100))
sampler = RandomSampler(ds, replacement=True, num_samples=int(1e10))
loader = DataLoader(ds, batch_size=16, sampler=sampler)
seen = []
for step, (xb, yb) in enumerate(loader):
    assert xb.shape == (16, 1) and (xb[:, 0].long() == yb).all()
    seen.extend(yb.tolist())
    if step == 4:
        break
assert len(seen) == 80 and all(0 <= s < 100 for s in seen)
idx = torch.LongTensor([0, 2])
assert idx.dtype == torch.int64 and torch.FloatTensor(2, 3).shape == (2, 3)
x = torch.randn(4, 3).cpu()
assert x.device.type == 'cpu' and x.is_cpu and not x.is_cuda
assert x[idx].tolist() == [x[0].tolist(), x[2].tolist()]
"""

PROGRAMS = {
    "linear_regression": LINEAR_REGRESSION,
    "bigram_counts": BIGRAM_COUNTS,
    "char_lstm": CHAR_LSTM,
    "nanogpt_block": NANOGPT_BLOCK,
    "mnist_style_loop": MNIST_STYLE_LOOP,
    "time_sequence_lbfgs": TIME_SEQUENCE_LBFGS,
    "transformer_lm": TRANSFORMER_LM,
    "oracle_test_file": ORACLE_TEST_FILE,
    "lazy_sampler_and_extras": LAZY_SAMPLER_AND_EXTRAS,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_torch_program_runs_verbatim(name, device, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)                  # programs that save checkpoints save them here
    source = textwrap.dedent(PROGRAMS[name])
    assert "import torch" not in source.replace("import clgrad as torch", "")
    # the program runs as a module of its own, importable by name as a script's __main__ is, so
    # that pickling a class it defines (torch.save(model)) works as it does for a script
    module = types.ModuleType(f"program_{name}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source, f"<torch program {name}>", "exec"), module.__dict__)


def test_a_failing_program_fails(device):
    """The harness reports a program's failed check (the checks above can fail)."""
    with pytest.raises(AssertionError):
        exec(compile("import clgrad as torch\nassert torch.ones(2).sum().item() == 3\n",
                     "<failing program>", "exec"), {})
