"""A small character-level GPT in the style of the "let's build GPT" lecture: Head,
MultiHeadAttention, FeedFoward, Block, token + position embeddings, get_batch with
torch.randint, estimate_loss under @torch.no_grad() with eval()/train(), AdamW, generate."""

from types import SimpleNamespace

import torch
import torch.nn as nn
from torch.nn import functional as F

from _fixtures import TEXT, Bridge

batch_size, block_size, eval_iters = 4, 8, 2
n_embd, n_head, n_layer, dropout = 16, 2, 2, 0.0
learning_rate = 1e-2
device = "cuda" if torch.cuda.is_available() else "cpu"


class Head(nn.Module):
    """One head of self-attention."""

    def __init__(self, head_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        k, q = self.key(x), self.query(x)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        wei = self.dropout(F.softmax(wei, dim=-1))
        return wei @ self.value(x)


class MultiHeadAttention(nn.Module):
    def __init__(self, num_heads, head_size):
        super().__init__()
        self.heads = nn.ModuleList([Head(head_size) for _ in range(num_heads)])
        self.proj = nn.Linear(head_size * num_heads, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        return self.dropout(self.proj(out))


class FeedFoward(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.ReLU(),
                                 nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout))

    def forward(self, x):
        return self.net(x)


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.sa = MultiHeadAttention(n_head, n_embd // n_head)
        self.ffwd = FeedFoward(n_embd)
        self.ln1 = nn.LayerNorm(n_embd)
        self.ln2 = nn.LayerNorm(n_embd)

    def forward(self, x):
        x = x + self.sa(self.ln1(x))
        return x + self.ffwd(self.ln2(x))


class GPTLanguageModel(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, n_embd)
        self.position_embedding_table = nn.Embedding(block_size, n_embd)
        self.blocks = nn.Sequential(*[Block(n_embd, n_head=n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        tok_emb = self.token_embedding_table(idx)
        pos_emb = self.position_embedding_table(torch.arange(T, device=device))
        x = self.blocks(tok_emb + pos_emb)
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits, None
        B, T, C = logits.shape
        logits = logits.view(B * T, C)
        targets = targets.view(B * T)
        return logits, F.cross_entropy(logits, targets)

    def generate(self, idx, max_new_tokens, bridge):
        for _ in range(max_new_tokens):
            logits, loss = self(idx[:, -block_size:])
            probs = F.softmax(logits[:, -1, :], dim=-1)
            idx_next = bridge.batch("sample", torch.multinomial(probs, num_samples=1))
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def trainer(seed=1337, bridge=None):
    """Everything the script sets up, and one training iteration as `step()` (get_batch,
    forward, zero_grad, backward, AdamW step: the whole loop body; `python -m torchic bench
    train` times it under torch and under torchic, the gpt_script row)."""
    bridge = bridge or Bridge()
    torch.manual_seed(seed)
    chars = sorted(list(set(TEXT)))
    vocab_size = len(chars)
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}
    encode = lambda s: [stoi[c] for c in s]            # noqa: E731
    decode = lambda l: "".join([itos[i] for i in l])   # noqa: E731
    data = torch.tensor(encode(TEXT), dtype=torch.long)
    n = int(0.9 * len(data))
    train_data, val_data = data[:n], data[n:]

    def get_batch(split):
        data = train_data if split == "train" else val_data
        ix = bridge.batch("ix", torch.randint(len(data) - block_size, (batch_size,)))
        x = torch.stack([data[i:i + block_size] for i in ix])
        y = torch.stack([data[i + 1:i + block_size + 1] for i in ix])
        return x.to(device), y.to(device)

    @torch.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for split in ["train", "val"]:
            losses = torch.zeros(eval_iters)
            for k in range(eval_iters):
                X, Y = get_batch(split)
                logits, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean()
        model.train()
        return out

    model = GPTLanguageModel(vocab_size)
    m = model.to(device)
    bridge.module("model", model)
    n_params = sum(p.numel() for p in m.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)

    def step():
        xb, yb = get_batch("train")
        logits, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    return SimpleNamespace(step=step, estimate_loss=estimate_loss, model=m, decode=decode,
                           n_params=n_params)


def main(steps=20, seed=1337, bridge=None, eval_interval=10):
    bridge = bridge or Bridge()
    run = trainer(seed, bridge)
    losses, evals = [], []
    for it in range(steps):
        if it % eval_interval == 0 or it == steps - 1:
            est = run.estimate_loss()
            evals += [est["train"].item(), est["val"].item()]
        losses.append(run.step().item())

    context = torch.zeros((1, 1), dtype=torch.long, device=device)
    text = run.decode(run.model.generate(context, max_new_tokens=10, bridge=bridge)[0].tolist())
    return {"losses": losses, "evals": evals, "n_params": [run.n_params], "text": [text]}


if __name__ == "__main__":
    print(main())
