"""A character-level GPT of nanoGPT's "shakespeare_char" shape, written once in PyTorch's
spelling and run by torchic and by PyTorch (issue 17).

`gpt_class(lib)` defines the model with `lib` = torchic or torch (the same source: nn.Embedding,
nn.LayerNorm, nn.Linear, nn.Dropout, causal self-attention through a tril buffer + masked_fill +
softmax, a GELU MLP, lm_head tied to the token embedding), trained as nanoGPT's train.py does
(AdamW, the learning rate warmed up then decayed along a cosine, gradients clipped at norm
1: `training_step`). The weights come from NumPy
(nanoGPT's init, one seeded stream per parameter name, so neither library's generator or
parameter order decides them) and the batches from a NumPy generator, so both libraries
start from identical weights and see identical batches. Dropout masks are each library's
own: PyTorch's CPU mask depends on the CPU (MKL's MCG31 stream on Intel, mt19937 doubles
elsewhere) and CUDA's on Philox, so no fixed rule reproduces them; the loss-match runs
(`matched_losses`: tests/bench/test_gpt_vs_torch.py, scripts/gpu_bench.py) feed both the same
masks.

The text is the `names` package's census names (a dependency: nothing is downloaded).
"""

import functools
import importlib.resources
import itertools
import math
import zlib

import numpy as np

# nanoGPT's config/train_shakespeare_char.py (bias kept: nanoGPT's GPTConfig default) and
# train.py's schedule: the learning rate warms up linearly over warmup_iters, then decays
# along a cosine to min_lr at lr_decay_iters; gradients are clipped to norm grad_clip
FULL = {"n_layer": 6, "n_head": 6, "n_embd": 384, "block": 256, "batch": 64, "dropout": 0.2,
        "lr": 1e-3, "betas": (0.9, 0.99), "weight_decay": 0.1, "eps": 1e-8,
        "warmup_iters": 100, "lr_decay_iters": 5000, "min_lr": 1e-4, "grad_clip": 1.0}
SMALL = dict(FULL, n_layer=2, n_head=2, n_embd=64, block=32, batch=8)
# issue 45's two CPU models (no dropout; the step-time rows take a fixed learning rate and
# no clipping: training_step(schedule=False)): nanoGPT's CPU recipe and a makemore-style one
CPU_MODELS = {
    "nanogpt": dict(FULL, dropout=0.0, n_layer=4, n_head=4, n_embd=128, block=64, batch=12),
    "makemore": dict(FULL, dropout=0.0, n_layer=4, n_head=4, n_embd=64, block=16, batch=32),
}


def label(cfg):
    return (f"L{cfg['n_layer']} H{cfg['n_head']} C{cfg['n_embd']} T{cfg['block']} "
            f"b{cfg['batch']}")


@functools.lru_cache(None)
def names_text(seed=0):
    """First and last names of the census files in the `names` package, shuffled once
    (seeded) and one per line: about 800K characters over 27 symbols."""
    pkg = importlib.resources.files("names")
    words = []
    for fname in ("dist.female.first", "dist.male.first", "dist.all.last"):
        for line in pkg.joinpath(fname).read_text(encoding="utf-8").splitlines():
            if line.split():
                words.append(line.split()[0].lower())
    words = sorted(set(words))
    np.random.default_rng(seed).shuffle(words)
    return "\n".join(words) + "\n"


def encode(text):
    """(int32 token array, vocabulary size) of a text, characters sorted as nanoGPT does."""
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    return np.array([stoi[c] for c in text], np.int32), len(chars)


class Batches:
    """nanoGPT's get_batch on NumPy: random windows of the train (first 90%) or val split."""

    def __init__(self, data, block, batch, seed=1337):
        n = int(0.9 * len(data))
        self.splits = {"train": data[:n], "val": data[n:]}
        self.block, self.batch = block, batch
        self.rng = np.random.default_rng(seed)
        self.offsets = np.arange(block)

    def get(self, split="train"):
        data = self.splits[split]
        ix = self.rng.integers(0, len(data) - self.block, self.batch)
        win = ix[:, None] + self.offsets
        return data[win], data[win + 1]


@functools.lru_cache(None)
def gpt_class(lib):
    """The GPT module class for `lib` (torchic or torch): nanoGPT's model.py, attention
    written out (no scaled_dot_product_attention)."""
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            C, T = cfg["n_embd"], cfg["block"]
            self.c_attn = nn.Linear(C, 3 * C)
            self.c_proj = nn.Linear(C, C)
            self.attn_dropout = nn.Dropout(cfg["dropout"])
            self.resid_dropout = nn.Dropout(cfg["dropout"])
            self.n_head, self.n_embd = cfg["n_head"], C
            self.register_buffer("bias", lib.tril(lib.ones(T, T)).view(1, 1, T, T))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            q, k, v = [t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                       for t in (q, k, v)]
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = self.attn_dropout(F.softmax(att, dim=-1))
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            C = cfg["n_embd"]
            self.c_fc = nn.Linear(C, 4 * C)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * C, C)
            self.dropout = nn.Dropout(cfg["dropout"])

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.ln_1 = nn.LayerNorm(cfg["n_embd"])
            self.attn = CausalSelfAttention(cfg)
            self.ln_2 = nn.LayerNorm(cfg["n_embd"])
            self.mlp = MLP(cfg)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, cfg, vocab):
            super().__init__()
            C = cfg["n_embd"]
            self.wte = nn.Embedding(vocab, C)
            self.wpe = nn.Embedding(cfg["block"], C)
            self.drop = nn.Dropout(cfg["dropout"])
            self.h = nn.ModuleList([Block(cfg) for _ in range(cfg["n_layer"])])
            self.ln_f = nn.LayerNorm(C)
            self.lm_head = nn.Linear(C, vocab, bias=False)
            self.wte.weight = self.lm_head.weight     # weight tying, as nanoGPT does

        def forward(self, idx, targets=None):
            b, t = idx.size()
            pos = lib.arange(0, t, dtype=lib.long, device=idx.device)
            x = self.drop(self.wte(idx) + self.wpe(pos))
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            if targets is None:
                return logits, None
            return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPT


def initial_weights(name, shape, n_layer, seed=0):
    """nanoGPT's init of one parameter, from its own NumPy stream (seed, name)."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    if name.endswith("bias"):
        return np.zeros(shape, np.float32)
    if name.split(".")[-2].startswith("ln_"):      # LayerNorm weights
        return np.ones(shape, np.float32)
    std = 0.02 / math.sqrt(2 * n_layer) if name.endswith("c_proj.weight") else 0.02
    return (rng.standard_normal(shape) * std).astype(np.float32)


def build(lib, cfg, vocab, device=None, seed=0):
    """The GPT on `lib` with the NumPy initial weights (same for every library)."""
    model = gpt_class(lib)(cfg, vocab)
    if device is not None:
        model = model.to(device)
    with lib.no_grad():
        for name, p in model.named_parameters():
            p.copy_(lib.tensor(initial_weights(name, tuple(p.shape), cfg["n_layer"], seed)))
    return model


def optimizer(lib, model, cfg):
    """nanoGPT's configure_optimizers: AdamW, weight decay on the >= 2-D parameters only."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg["weight_decay"]},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return lib.optim.AdamW(groups, lr=cfg["lr"], betas=cfg["betas"], eps=cfg["eps"])


def learning_rate(cfg, it):
    """nanoGPT's get_lr: the learning rate of iteration `it` (counted from 0)."""
    warmup, decay, top, low = cfg["warmup_iters"], cfg["lr_decay_iters"], cfg["lr"], cfg["min_lr"]
    if it < warmup:
        return top * (it + 1) / (warmup + 1)
    if it > decay:
        return low
    ratio = (it - warmup) / (decay - warmup)
    return low + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (top - low)


def index_fn(lib, device=None):
    """NumPy int array -> lib's index tensor (torch: int64 on `device`)."""
    if lib.__name__.startswith("torchic"):
        return lib.tensor
    return lambda a: lib.from_numpy(a.astype(np.int64)).to(device or "cpu")


def train_fn(lib, model, opt, grad_clip):
    """train(xb, yb) -> loss tensor: forward, backward, the gradients clipped to norm
    grad_clip (0: not clipped) and the AdamW update; what torchic.compile / torch.compile
    wrap (the batch draw, the learning rate and the loss read stay outside)."""
    def train(xb, yb):
        _, loss = model(xb, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip:
            lib.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        return loss
    return train


def training_step(lib, cfg, data, vocab, device=None, seed=0, compile=None, batches=None,
                  schedule=True):
    """step() -> this step's training loss (a float): one nanoGPT iteration on `lib`, at
    the learning rate `learning_rate` gives, the gradients clipped at cfg's grad_clip.
    schedule=False is the fixed step the step-time runs time: cfg's lr at every step
    (torch.compile would compile its step again for each new rate) and no clipping (the
    step the GPT step-time targets were set on). `compile` wraps train_fn (torchic.compile,
    torch.compile). step.model, step.batches: the model and the batch source."""
    model = build(lib, cfg, vocab, device, seed)
    model.train()
    opt = optimizer(lib, model, cfg)
    train = train_fn(lib, model, opt, cfg["grad_clip"] if schedule else 0.0)
    if compile is not None:
        train = compile(train)
    batches = batches or Batches(data, cfg["block"], cfg["batch"])
    to_index = index_fn(lib, device)
    iteration = itertools.count()

    def step():
        if schedule:
            lr = learning_rate(cfg, next(iteration))
            for group in opt.param_groups:
                group["lr"] = lr
        xb, yb = batches.get("train")
        return train(to_index(xb), to_index(yb)).item()
    step.model, step.batches = model, batches
    return step


def share_dropout_masks(lib, model, p, seed=7):
    """Replace each nn.Dropout in `model` by x * mask / (1 - p), the masks from one NumPy
    stream (seed): two libraries given the same seed drop the same elements."""
    rng = np.random.default_rng(seed)
    scale = np.float32(1 / (1 - p))

    class SharedMaskDropout(lib.nn.Module):
        def forward(self, x):
            if not self.training:
                return x
            keep = (rng.random(tuple(x.shape), np.float32) >= p).astype(np.float32) * scale
            return x * lib.tensor(keep, device=x.device)

    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, lib.nn.Dropout):
                setattr(module, name, SharedMaskDropout())


def matched_losses(lib, cfg, data, vocab, steps, device=None, eval_iters=1, perturb=0.0):
    """(the first `steps` training losses, estimate_loss) of eager training on `lib` with
    dropout masks shared through share_dropout_masks: what the loss-match checks compare
    between torchic and PyTorch. `perturb` scales every initial weight by 1 + perturb * z
    (z standard normal, seeded): a control run showing how far float32 rounding-sized
    differences carry over the steps."""
    step = training_step(lib, cfg, data, vocab, device)
    if perturb:
        rng = np.random.default_rng(99)
        with lib.no_grad():
            for p in step.model.parameters():
                z = (1 + perturb * rng.standard_normal(tuple(p.shape))).astype(np.float32)
                p.mul_(lib.tensor(z, device=p.device))
    share_dropout_masks(lib, step.model, cfg["dropout"])
    losses = [step() for _ in range(steps)]
    return losses, estimate_loss(lib, step.model, step.batches, eval_iters, device)


def estimate_loss(lib, model, batches, iters, device=None):
    """nanoGPT's estimate_loss: mean loss of `iters` batches per split, eval mode, no grad."""
    to_index = index_fn(lib, device)
    out = {}
    model.eval()
    with lib.no_grad():
        for split in ("train", "val"):
            losses = [model(*(to_index(a) for a in batches.get(split)))[1].item()
                      for _ in range(iters)]
            out[split] = float(np.mean(losses))
    model.train()
    return out
