"""The first model of the "let's build GPT" lecture (its bigram.py): a character-level bigram
language model that is one nn.Embedding(vocab, vocab) table, get_batch stacking random windows
of the data with torch.stack, AdamW, estimate_loss under @torch.no_grad() with eval()/train(),
and generate with torch.multinomial. The lecture's hyperparameters (batch 32, block 8,
learning rate 1e-2) with fewer evaluation batches.

`trainer()` builds everything and returns one training iteration as `step()` (get_batch,
forward, zero_grad, backward, AdamW step: the whole loop body); `main()` is the script's loop
around it. `python -m torchic bench train` times `step()` under torch and under torchic
(the bigram_script row)."""

from types import SimpleNamespace

import torch
import torch.nn as nn
from torch.nn import functional as F

from _fixtures import TEXT, Bridge

batch_size, block_size, eval_iters = 32, 8, 4
learning_rate = 1e-2
device = "cuda" if torch.cuda.is_available() else "cpu"


class BigramLanguageModel(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        # each token reads the logits of the next token straight from a lookup table
        self.token_embedding_table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx, targets=None):
        logits = self.token_embedding_table(idx)   # (B, T, C)
        if targets is None:
            return logits, None
        B, T, C = logits.shape
        logits = logits.view(B * T, C)
        targets = targets.view(B * T)
        return logits, F.cross_entropy(logits, targets)

    def generate(self, idx, max_new_tokens, bridge):
        for _ in range(max_new_tokens):
            logits, loss = self(idx)
            probs = F.softmax(logits[:, -1, :], dim=-1)
            idx_next = bridge.batch("sample", torch.multinomial(probs, num_samples=1))
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def trainer(seed=1337, bridge=None):
    bridge = bridge or Bridge()
    torch.manual_seed(seed)
    chars = sorted(list(set(TEXT)))
    vocab_size = len(chars)
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
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

    model = BigramLanguageModel(vocab_size)
    m = model.to(device)
    bridge.module("model", model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)

    def step():
        xb, yb = get_batch("train")
        logits, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    decode = lambda l: "".join([itos[i] for i in l])   # noqa: E731
    return SimpleNamespace(step=step, estimate_loss=estimate_loss, model=m, decode=decode)


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
    text = run.decode(run.model.generate(context, max_new_tokens=20, bridge=bridge)[0].tolist())
    return {"losses": losses, "evals": evals, "text": [text]}


if __name__ == "__main__":
    print(main())
