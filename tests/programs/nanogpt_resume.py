"""nanoGPT's training loop in miniature (Karpathy's train.py / model.py idioms): a GPTConfig
dataclass, weight tying, `configure_optimizers` with decay / no-decay groups, warmup + cosine
learning rate, gradient clipping, and the checkpoint round trip: save {'model', 'optimizer',
'model_args', 'iter_num', 'best_val_loss', 'config'} halfway with torch.save, throw the
model away, rebuild it from torch.load, resume, then sample with temperature and top-k."""

import math
import os
import tempfile
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F

from _fixtures import Bridge, words


@dataclass
class GPTConfig:
    block_size: int = 16
    vocab_size: int = 32
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = False


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.n_head, self.n_embd = config.n_head, config.n_embd
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = nn.Sequential(nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias),
                                 nn.GELU(),
                                 nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight        # weight tying
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits[:, [-1], :], None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        params = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay = [p for n, p in params.items() if p.dim() >= 2]
        nodecay = [p for n, p in params.items() if p.dim() < 2]
        groups = [{'params': decay, 'weight_decay': weight_decay},
                  {'params': nodecay, 'weight_decay': 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, bridge, temperature=0.8, top_k=5):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.config.block_size else \
                idx[:, -self.config.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float('Inf')
            probs = F.softmax(logits, dim=-1)
            idx_next = bridge.batch("sample", torch.multinomial(probs, num_samples=1))
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def main(steps=20, seed=1337, bridge=None):
    bridge = bridge or Bridge()
    torch.manual_seed(seed)
    text = words(300)
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    model_args = dict(n_layer=2, n_head=2, n_embd=32, block_size=16, bias=False,
                      vocab_size=len(chars), dropout=0.0)
    config = {'learning_rate': 3e-3, 'warmup_iters': 4, 'lr_decay_iters': steps,
              'min_lr': 3e-4, 'grad_clip': 1.0, 'batch_size': 8}
    model = GPT(GPTConfig(**model_args))
    bridge.module("model", model)
    optimizer = model.configure_optimizers(0.1, config['learning_rate'], (0.9, 0.95))

    def get_lr(it):
        if it < config['warmup_iters']:
            return config['learning_rate'] * (it + 1) / (config['warmup_iters'] + 1)
        ratio = (it - config['warmup_iters']) / (config['lr_decay_iters'] - config['warmup_iters'])
        coeff = 0.5 * (1.0 + math.cos(math.pi * min(ratio, 1.0)))
        return config['min_lr'] + coeff * (config['learning_rate'] - config['min_lr'])

    def get_batch():
        ix = bridge.batch("ix", torch.randint(len(data) - 16, (config['batch_size'],)))
        x = torch.stack([data[i:i + 16] for i in ix])
        y = torch.stack([data[i + 1:i + 17] for i in ix])
        return x, y

    losses, best_val_loss = [], 1e9
    with tempfile.TemporaryDirectory() as out_dir:
        ckpt_path = os.path.join(out_dir, 'ckpt.pt')
        for iter_num in range(steps):
            if iter_num == steps // 2:           # checkpoint, forget everything, resume
                torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict(),
                            'model_args': model_args, 'iter_num': iter_num,
                            'best_val_loss': best_val_loss, 'config': config}, ckpt_path)
                del model, optimizer
                checkpoint = torch.load(ckpt_path, map_location='cpu')
                model = GPT(GPTConfig(**checkpoint['model_args']))
                state_dict = checkpoint['model']
                unwanted_prefix = '_orig_mod.'
                for k in list(state_dict.keys()):
                    if k.startswith(unwanted_prefix):
                        state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
                model.load_state_dict(state_dict)
                optimizer = model.configure_optimizers(0.1, config['learning_rate'],
                                                       (0.9, 0.95))
                optimizer.load_state_dict(checkpoint['optimizer'])
                assert checkpoint['iter_num'] == iter_num
                best_val_loss = checkpoint['best_val_loss']
            lr = get_lr(iter_num)
            for group in optimizer.param_groups:
                group['lr'] = lr
            X, Y = get_batch()
            _, loss = model(X, Y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config['grad_clip'])
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.item())
            best_val_loss = min(best_val_loss, loss.item())
    model.eval()
    out = model.generate(torch.zeros((1, 1), dtype=torch.long), 8, bridge)
    return {"losses": losses, "best": [best_val_loss], "sample": out[0].tolist()}
