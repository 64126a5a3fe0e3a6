"""makemore-style character models on names, written as nn.Modules: Bigram, MLP, RNN,
GRU, BoW and a small Transformer, trained with AdamW from an infinite DataLoader
(RandomSampler with replacement), evaluated under @torch.no_grad() and sampled with
top-k."""

import math

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, RandomSampler

from _fixtures import Bridge, words


class Config:
    def __init__(self, **kw):
        self.block_size, self.vocab_size = None, None
        self.n_layer, self.n_head, self.n_embd, self.n_embd2 = 2, 2, 16, 16
        self.__dict__.update(kw)


# -- Transformer -------------------------------------------------------------------------------
class NewGELU(nn.Module):
    """GELU with the tanh approximation, written out."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        T = config.block_size
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))
        self.n_head, self.n_embd = config.n_head, config.n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(config.n_embd, 4 * config.n_embd),
                                      c_proj=nn.Linear(4 * config.n_embd, config.n_embd),
                                      act=NewGELU()))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(m.act(m.c_fc(x)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlpf(self.ln_2(x))
        return x


class Transformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.block_size = config.block_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd)))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.block_size
        pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


# -- Bag of Words ------------------------------------------------------------------------------
class CausalBoW(nn.Module):
    """Averages the preceding positions' vectors (a causal mask, uniform weights)."""

    def __init__(self, config):
        super().__init__()
        T = config.block_size
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, T, T))

    def forward(self, x):
        B, T, C = x.size()
        att = torch.zeros((B, T, T), device=x.device)
        att = att.masked_fill(self.bias[:, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return att @ x


class BoWBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.cbow = CausalBoW(config)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(config.n_embd, config.n_embd2),
                                      c_proj=nn.Linear(config.n_embd2, config.n_embd)))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(F.tanh(m.c_fc(x)))

    def forward(self, x):
        x = x + self.cbow(x)
        x = x + self.mlpf(x)
        return x


class BoW(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.block_size, self.vocab_size = config.block_size, config.vocab_size
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.context_block = BoWBlock(config)
        self.lm_head = nn.Linear(config.n_embd, self.vocab_size)

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        logits = self.lm_head(self.context_block(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


# -- RNN / GRU ---------------------------------------------------------------------------------
class RNNCell(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.xh_to_h = nn.Linear(config.n_embd + config.n_embd2, config.n_embd2)

    def forward(self, xt, hprev):
        return F.tanh(self.xh_to_h(torch.cat([xt, hprev], dim=1)))


class GRUCell(nn.Module):
    def __init__(self, config):
        super().__init__()
        n = config.n_embd + config.n_embd2
        self.xh_to_z = nn.Linear(n, config.n_embd2)
        self.xh_to_r = nn.Linear(n, config.n_embd2)
        self.xh_to_hbar = nn.Linear(n, config.n_embd2)

    def forward(self, xt, hprev):
        xh = torch.cat([xt, hprev], dim=1)
        r = F.sigmoid(self.xh_to_r(xh))
        xhr = torch.cat([xt, r * hprev], dim=1)
        hbar = F.tanh(self.xh_to_hbar(xhr))
        z = F.sigmoid(self.xh_to_z(xh))
        return (1 - z) * hprev + z * hbar


class RNN(nn.Module):
    def __init__(self, config, cell_type):
        super().__init__()
        self.block_size, self.vocab_size = config.block_size, config.vocab_size
        self.start = nn.Parameter(torch.zeros(1, config.n_embd2))
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.cell = RNNCell(config) if cell_type == "rnn" else GRUCell(config)
        self.lm_head = nn.Linear(config.n_embd2, self.vocab_size)

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        b, t = idx.size()
        emb = self.wte(idx)
        hprev = self.start.expand((b, -1))
        hiddens = []
        for i in range(t):
            hprev = self.cell(emb[:, i, :], hprev)
            hiddens.append(hprev)
        logits = self.lm_head(torch.stack(hiddens, 1))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


# -- MLP / Bigram ------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.block_size, self.vocab_size = config.block_size, config.vocab_size
        self.wte = nn.Embedding(config.vocab_size + 1, config.n_embd)   # + the blank token
        self.mlp = nn.Sequential(nn.Linear(self.block_size * config.n_embd, config.n_embd2),
                                 nn.Tanh(), nn.Linear(config.n_embd2, self.vocab_size))

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        embs = []
        for k in range(self.block_size):
            embs.append(self.wte(idx))
            idx = torch.roll(idx, 1, 1)
            idx[:, 0] = self.vocab_size
        logits = self.mlp(torch.cat(embs, -1))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


class Bigram(nn.Module):
    def __init__(self, config):
        super().__init__()
        n = config.vocab_size
        self.logits = nn.Parameter(torch.zeros((n, n)))

    def get_block_size(self):
        return 1

    def forward(self, idx, targets=None):
        logits = self.logits[idx]
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


# -- data --------------------------------------------------------------------------------------
class CharDataset(Dataset):
    def __init__(self, words, chars, max_word_length):
        self.words, self.chars, self.max_word_length = words, chars, max_word_length
        self.stoi = {ch: i + 1 for i, ch in enumerate(chars)}
        self.itos = {i: s for s, i in self.stoi.items()}

    def __len__(self):
        return len(self.words)

    def get_vocab_size(self):
        return len(self.chars) + 1

    def get_output_length(self):
        return self.max_word_length + 1

    def encode(self, word):
        return torch.tensor([self.stoi[w] for w in word], dtype=torch.long)

    def decode(self, ix):
        return "".join(self.itos[i] for i in ix)

    def __getitem__(self, idx):
        ix = self.encode(self.words[idx])
        x = torch.zeros(self.max_word_length + 1, dtype=torch.long)
        y = torch.zeros(self.max_word_length + 1, dtype=torch.long)
        x[1:1 + len(ix)] = ix
        y[:len(ix)] = ix
        y[len(ix) + 1:] = -1     # no loss at the padding after the end token
        return x, y


class InfiniteDataLoader:
    """Batches forever: a RandomSampler with replacement and a huge num_samples."""

    def __init__(self, dataset, **kwargs):
        sampler = RandomSampler(dataset, replacement=True, num_samples=int(1e10))
        self.train_loader = DataLoader(dataset, sampler=sampler, **kwargs)
        self.data_iter = iter(self.train_loader)

    def next(self):
        try:
            batch = next(self.data_iter)
        except StopIteration:
            self.data_iter = iter(self.train_loader)
            batch = next(self.data_iter)
        return batch


@torch.no_grad()
def generate(model, idx, max_new_tokens, bridge, temperature=1.0, do_sample=False, top_k=None):
    block_size = model.get_block_size()
    for _ in range(max_new_tokens):
        idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
        logits, _ = model(idx_cond)
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, top_k)
            logits[logits < v[:, [-1]]] = -float("Inf")
        probs = F.softmax(logits, dim=-1)
        if do_sample:
            idx_next = bridge.batch("sample", torch.multinomial(probs, num_samples=1))
        else:
            _, idx_next = torch.topk(probs, k=1, dim=-1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


@torch.no_grad()
def evaluate(model, dataset, bridge, batch_size=10):
    model.eval()
    loader = DataLoader(dataset, shuffle=True, batch_size=batch_size, num_workers=0)
    losses = []
    for X, Y in loader:
        X, Y = bridge.batch("eval", X, Y)
        logits, loss = model(X, Y)
        losses.append(loss.item())
    mean_loss = torch.tensor(losses).mean().item()
    model.train()
    return mean_loss


MODELS = ("bigram", "mlp", "rnn", "gru", "bow", "transformer")


def main(steps=20, seed=3407, bridge=None, model_type="transformer", batch_size=8):
    bridge = bridge or Bridge()
    torch.manual_seed(seed)
    names = words()
    chars = sorted(set("".join(names)))
    max_len = max(len(w) for w in names)
    train_dataset = CharDataset(names[:180], chars, max_len)
    test_dataset = CharDataset(names[180:], chars, max_len)
    config = Config(vocab_size=train_dataset.get_vocab_size(),
                    block_size=train_dataset.get_output_length())
    model = {"bigram": lambda: Bigram(config), "mlp": lambda: MLP(config),
             "rnn": lambda: RNN(config, "rnn"), "gru": lambda: RNN(config, "gru"),
             "bow": lambda: BoW(config), "transformer": lambda: Transformer(config)}[model_type]()
    bridge.module("model", model)
    n_params = sum(p.numel() for p in model.parameters())

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01,
                                  betas=(0.9, 0.99), eps=1e-8)
    batch_loader = InfiniteDataLoader(train_dataset, batch_size=batch_size, num_workers=0)
    losses = []
    for step in range(steps):
        batch = batch_loader.next()
        X, Y = bridge.batch("batch", *batch)
        logits, loss = model(X, Y)
        model.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    test_loss = evaluate(model, test_dataset, bridge)
    X_init = torch.zeros(2, 1, dtype=torch.long)
    greedy = generate(model, X_init, 6, bridge, do_sample=False)
    sampled = generate(model, X_init, 6, bridge, top_k=5, do_sample=True)
    decoded = []
    for row in sampled[:, 1:].tolist():
        crop = row.index(0) if 0 in row else len(row)
        decoded.append(train_dataset.decode(row[:crop]))
    return {"losses": losses, "test": [test_loss], "n_params": [n_params],
            "greedy": greedy.tolist(), "samples": decoded}


if __name__ == "__main__":
    for m in MODELS:
        print(m, main(model_type=m))
