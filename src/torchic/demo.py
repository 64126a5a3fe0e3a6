"""makemore: a Bengio et al. (2003) style character-level MLP that invents names.

    python -m torchic demo                       # about a minute on 2 cores, then samples
    python examples/makemore.py --data names.txt --steps 200000

Each name is read one character at a time; the model sees the previous
``context`` characters (3), looks each one up in an embedding table (10
numbers per character), feeds the concatenation through a tanh hidden layer
(200 units) and predicts the next character with a softmax over the
vocabulary ('.' marks the start and the end of a name). Training is plain
minibatch SGD (32 examples per step, learning rate 0.1, then 0.01 for the
second half), as in Andrej Karpathy's makemore lectures.

The default data is the US census first-name lists shipped inside the PyPI
package ``names`` (a dependency of torchic; nothing is downloaded).

Everything is importable: ``load_words``, ``build_vocab``, ``build_dataset``,
``split_words``, ``CharMLP``, ``train``, ``evaluate``, ``sample``,
``save_model`` / ``load_model`` and ``main(argv)``.
"""

import argparse
import importlib.resources
import os
import sys
import time
from collections.abc import Sequence

import numpy as np

import torchic
import torchic.nn as nn
import torchic.nn.functional as F
from torchic import checkpoint, dispatcher, optim

try:
    from tqdm.auto import tqdm      # optional (pip install 'torchic[progress]')
except ImportError:
    tqdm = None

# The demo's step count: about one minute of training on the 2-core dev machine with the
# workers backend, which runs ~800-850 steps/s when the machine is otherwise idle; simd,
# the default when it is built, is faster (docs/RESULTS-makemore.md).
DEMO_STEPS = 50_000
CLASSIC_STEPS = 200_000
DEMO_OUT = "torchic-demo"     # where `python -m torchic demo` saves its model (under the cwd)


# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------
def census_names() -> list[str]:
    """First names from the `names` package's census files, lowercased and de-duplicated."""
    words, seen = [], set()
    pkg = importlib.resources.files("names")
    for fname in ("dist.female.first", "dist.male.first"):
        text = pkg.joinpath(fname).read_text(encoding="utf-8")
        for line in text.splitlines():
            parts = line.split()
            if not parts:
                continue
            w = parts[0].lower()
            if w not in seen:
                seen.add(w)
                words.append(w)
    return words


def load_words(path: str | None = None) -> list[str]:
    """One item per line from `path` (blank lines skipped); the census names by default."""
    if path is None:
        return census_names()
    with open(path, encoding="utf-8") as f:
        words = [line.strip() for line in f]
    words = [w for w in words if w]
    if not words:
        raise ValueError(f"{path}: no items (expected one item per line)")
    return words


def build_vocab(words: Sequence[str]) -> tuple[dict[str, int], list[str]]:
    """(stoi, itos): characters numbered from 1 in sorted order; 0 is the '.' boundary."""
    chars = sorted(set("".join(words)) - {"."})
    itos = ["."] + chars
    return {c: i for i, c in enumerate(itos)}, itos


def build_dataset(words: Sequence[str], stoi: dict[str, int], context: int = 3
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(X, Y) int32 NumPy arrays: X[i] holds `context` previous characters, Y[i] the next."""
    xs, ys = [], []
    for w in words:
        ctx = [0] * context
        for ch in w + ".":
            ix = stoi[ch] if ch != "." else 0
            xs.append(ctx)
            ys.append(ix)
            ctx = ctx[1:] + [ix]
    X = np.array(xs, dtype=np.int32).reshape(-1, context)
    Y = np.array(ys, dtype=np.int32)
    return X, Y


def split_words(words: Sequence[str], seed: int = 42, fractions: Sequence[float] = (0.8, 0.1)
                ) -> tuple[list[str], list[str], list[str]]:
    """Shuffle (seeded) and cut into train / validation / test lists (80 / 10 / 10)."""
    order = np.random.default_rng(seed).permutation(len(words))
    shuffled = [words[i] for i in order]
    n1 = int(fractions[0] * len(words))
    n2 = int((fractions[0] + fractions[1]) * len(words))
    return shuffled[:n1], shuffled[n1:n2], shuffled[n2:]


# ---------------------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------------------
class CharMLP(nn.Module):
    """Embedding -> concatenate the context -> Linear + tanh -> Linear to logits."""

    def __init__(self, vocab_size: int, context: int = 3, emb: int = 10, hidden: int = 200
                 ) -> None:
        super().__init__()
        self.context = context
        self.emb = nn.Embedding(vocab_size, emb)
        self.hidden = nn.Linear(context * emb, hidden)
        self.out = nn.Linear(hidden, vocab_size)

    def forward(self, idx: torchic.Tensor) -> torchic.Tensor:
        e = self.emb(idx)                                  # (B, context, emb)
        h = torchic.tanh(self.hidden(e.view(e.shape[0], -1)))
        return self.out(h)                                 # (B, vocab) logits


def evaluate(model: nn.Module, X: np.ndarray, Y: np.ndarray, chunk: int = 16384) -> float:
    """Mean cross-entropy of the model over all rows of (X, Y) (no graph, in chunks)."""
    if len(X) == 0:
        return float("nan")
    total = 0.0
    with torchic.no_grad():
        for lo in range(0, len(X), chunk):
            xb = torchic.tensor(X[lo:lo + chunk])
            yb = torchic.tensor(Y[lo:lo + chunk])
            total += F.cross_entropy(model(xb), yb, reduction="sum").item()
    return total / len(X)


def train(model, X, Y, steps, batch=32, lr=0.1, lr_final=0.01, decay_at=None, seed=0,
          progress=True, read_every=50):
    """Minibatch SGD; returns the per-step training losses (NumPy float32 array).

    The learning rate is `lr` for the first `decay_at` steps (default: half) and
    `lr_final` after. Minibatch indices come from a NumPy generator seeded with
    `seed`; each batch is gathered on the host (``X[ix]`` in NumPy, where the data
    lives, like a DataLoader) and uploaded. Losses are read back every
    `read_every` steps rather than every step, so the calling thread can queue the
    next steps while the backend computes.
    """
    if steps < 1:
        return np.zeros(0, np.float32)
    decay_at = max(1, steps // 2) if decay_at is None else max(1, decay_at)
    opt = optim.SGD(model.parameters(), lr=lr)
    sched = optim.lr_scheduler.MultiStepLR(opt, milestones=[decay_at],
                                           gamma=lr_final / lr if lr else 1.0)
    rng = np.random.default_rng(seed)
    losses = np.empty(steps, np.float32)
    pending = []
    bar = _progress_bar(steps, progress)
    model.train()
    for step in range(steps):
        ix = rng.integers(0, len(X), batch)
        xb = torchic.tensor(X[ix])
        yb = torchic.tensor(Y[ix])
        loss = F.cross_entropy(model(xb), yb)
        lr_now = opt.param_groups[0]["lr"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        pending.append(loss.detach())   # keep the value, not the graph
        if len(pending) == read_every or step == steps - 1:
            start = step + 1 - len(pending)
            losses[start:step + 1] = [t.item() for t in pending]
            pending.clear()
            if bar is not None:
                bar.set_postfix_str(f"loss {losses[max(0, step - 499):step + 1].mean():.4f}, "
                                    f"lr {lr_now:g}", refresh=False)
                bar.update(step + 1 - bar.n)
    if bar is not None:
        bar.close()
    return losses


def _progress_bar(total, enabled):
    """A tqdm.auto bar (a widget in a notebook), or plain lines when tqdm is not installed."""
    if not enabled:
        return None
    if tqdm is None:
        return _PlainProgress(total)
    return tqdm(total=total, unit="step", unit_scale=True, smoothing=0.1, dynamic_ncols=True)


class _PlainProgress:
    """What train() shows without tqdm: a line on stderr at every tenth of the run, with an
    ETA (the mean time per step so far times the steps left)."""

    def __init__(self, total):
        self.total, self.n, self.postfix = total, 0, ""
        self.every = max(1, total // 10)
        self.next = self.every
        self.start = time.perf_counter()

    def set_postfix_str(self, text, refresh=False):
        self.postfix = text

    def update(self, k):
        self.n += k
        if self.n < self.next and self.n < self.total:
            return
        while self.next <= self.n:
            self.next += self.every
        elapsed = time.perf_counter() - self.start
        eta = elapsed / self.n * (self.total - self.n)
        print(f"step {self.n:,}/{self.total:,} ({self.n / self.total:.0%}) {self.postfix} | "
              f"{elapsed:.0f} s, ETA {eta:.0f} s", file=sys.stderr, flush=True)

    def close(self):
        pass


def sample(model: CharMLP, itos: Sequence[str], n: int = 20,
           generator: torchic.Generator | None = None, max_len: int = 64) -> list[str]:
    """`n` new names drawn from the model (all rows sampled together, one read per char)."""
    context = model.context
    ctx = np.zeros((n, context), np.int32)
    out = [[] for _ in range(n)]
    alive = np.ones(n, bool)
    with torchic.no_grad():
        for _ in range(max_len):
            probs = F.softmax(model(torchic.tensor(ctx)), dim=1)
            ix = np.asarray(torchic.multinomial(probs, num_samples=1, replacement=True,
                                                generator=generator).tolist()).reshape(n)
            for r in np.flatnonzero(alive):
                if ix[r] == 0:
                    alive[r] = False
                else:
                    out[r].append(itos[ix[r]])
            if not alive.any():
                break
            ctx = np.concatenate([ctx[:, 1:], ix[:, None].astype(np.int32)], axis=1)
    return ["".join(chars) for chars in out]


# ---------------------------------------------------------------------------------------
# checkpoints
# ---------------------------------------------------------------------------------------
def save_model(model: CharMLP, itos: Sequence[str], path: str,
               extra_metadata: dict[str, str] | None = None) -> None:
    """Weights + vocabulary (unicode code points, int32) in one safetensors file."""
    vocab = torchic.tensor(np.array([ord(c) for c in itos], dtype=np.int32))
    meta = {"model": "torchic.demo.CharMLP", "context": str(model.context)}
    meta.update(extra_metadata or {})
    checkpoint.save({"model": model.state_dict(), "vocab": vocab}, path, metadata=meta)


def load_model(path: str) -> tuple[CharMLP, list[str]]:
    """(model, itos) from a checkpoint written by save_model."""
    state = checkpoint.load(path)
    if "model" not in state or "vocab" not in state:
        raise ValueError(f"{path}: not a makemore checkpoint (needs 'model.*' and 'vocab')")
    weights = state["model"]
    itos = [chr(c) for c in state["vocab"].tolist()]
    try:
        vocab_size, emb = weights["emb.weight"].shape
        hidden, fan_in = weights["hidden.weight"].shape
    except KeyError as exc:
        raise ValueError(f"{path}: not a makemore checkpoint (missing {exc})") from None
    if vocab_size != len(itos) or fan_in % emb:
        raise ValueError(f"{path}: inconsistent makemore checkpoint shapes")
    model = CharMLP(vocab_size, fan_in // emb, emb, hidden)
    model.load_state_dict(weights)
    return model, itos


def plot_losses(losses, path, title="makemore training loss"):
    """Save a loss-curve PNG (log10 loss per step, and its mean per 1% of the run).

    Returns False (after saying why) when matplotlib is not installed.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the loss-curve plot "
              "(pip install matplotlib)")
        return False
    y = np.log10(np.maximum(losses.astype(np.float64), 1e-12))
    bucket = max(1, len(y) // 100)
    n = len(y) // bucket * bucket
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.plot(np.arange(len(y)), y, color="0.8", linewidth=0.5, label="per step")
    if n:
        ax.plot(np.arange(n).reshape(-1, bucket).mean(1), y[:n].reshape(-1, bucket).mean(1),
                color="C0", linewidth=2, label=f"mean of {bucket} steps")
    ax.set_xlabel("step")
    ax.set_ylabel("log10(training loss)")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------
def build_parser(prog: str | None = None, steps: int = DEMO_STEPS, out: str | None = DEMO_OUT,
                 ddp: bool = False) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog or "python -m torchic demo", description="Train a character-level MLP (makemore) and sample names.")
    p.add_argument("--data", metavar="FILE",
                   help="training items, one per line (default: the US census first names "
                        "shipped in the `names` package)")
    p.add_argument("--backend", default=None,
                   help="workers | simd | webgpu (default: $TORCHIC_BACKEND, else the "
                        "fastest built: simd, else workers)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    p.add_argument("--steps", type=int, default=steps, help=f"SGD steps (default {steps})")
    p.add_argument("--seed", type=int, default=42,
                   help="seed for the split, the weights, the batches and the samples")
    p.add_argument("--batch", type=int, default=32, help="minibatch size (default 32)")
    p.add_argument("--context", type=int, default=3, help="characters of context (default 3)")
    p.add_argument("--emb", type=int, default=10, help="embedding size (default 10)")
    p.add_argument("--hidden", type=int, default=200, help="hidden units (default 200)")
    p.add_argument("--lr", type=float, default=0.1, help="learning rate (default 0.1)")
    p.add_argument("--lr-final", type=float, default=0.01,
                   help="learning rate after --decay-at (default 0.01)")
    p.add_argument("--decay-at", type=int, default=None,
                   help="step at which the learning rate drops (default: half of --steps)")
    p.add_argument("--samples", type=int, default=20, help="names to sample (default 20)")
    p.add_argument("--out", metavar="DIR", default=out,
                   help="directory for the checkpoint and the loss-curve PNG" +
                        (f" (default {out})" if out else " (default: none are written)"))
    p.add_argument("--no-plot", action="store_true", help="do not write the loss-curve PNG")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--sample-only", metavar="CKPT",
                   help="load a checkpoint written by an earlier run and only sample")
    if ddp:   # examples/makemore.py: handled there, listed here so that --help shows it
        p.add_argument("--ddp", action="store_true",
                       help="data-parallel training over the processes mpiexec starts "
                            "(mpiexec -n 2 python examples/makemore.py --ddp; needs the "
                            "distributed extra)")
    return p


def _positive(parser, args, *names):
    for name in names:
        v = getattr(args, name)
        if v is not None and v < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {v}")


def _input_error(parser, option, exc):
    """A bad option value the user gave: one line on stderr and exit status 2, no traceback."""
    parser.exit(2, f"{parser.prog}: error: {option}: {exc}\n")


def main(argv: Sequence[str] | None = None, *, prog: str | None = None, steps: int = DEMO_STEPS,
         out: str | None = DEMO_OUT, ddp: bool = False) -> int:
    """Command-line entry point (``python -m torchic demo`` and examples/makemore.py)."""
    parser = build_parser(prog, steps, out, ddp)
    args = parser.parse_args(argv)
    _positive(parser, args, "steps", "batch", "context", "emb", "hidden", "samples", "threads")
    try:
        torchic.init(backend=args.backend, threads=args.threads)
    except (ValueError, dispatcher.BackendUnavailableError) as exc:   # unknown / not built
        _input_error(parser, "--backend", exc)
    torchic.manual_seed(args.seed)
    gen = torchic.Generator().manual_seed(args.seed + 1)
    info = dispatcher.runtime().backend.describe()
    print(f"torchic {torchic.__version__} | backend {info['backend']} | "
          f"{info.get('threads', '?')} threads")

    if args.sample_only:
        try:
            model, itos = load_model(args.sample_only)
        except (OSError, ValueError) as exc:
            _input_error(parser, "--sample-only", exc)
        print(f"loaded {args.sample_only}: vocabulary {len(itos)}, context {model.context}, "
              f"{model.num_parameters():,} parameters")
        _print_samples(sample(model, itos, args.samples, generator=gen))
        return 0

    try:
        words = load_words(args.data)
    except (OSError, ValueError) as exc:   # missing, unreadable, not UTF-8, empty
        _input_error(parser, "--data", exc)
    source = args.data or "census first names (package `names`)"
    stoi, itos = build_vocab(words)
    tr, va, te = split_words(words, seed=args.seed)
    Xtr, Ytr = build_dataset(tr, stoi, args.context)
    Xva, Yva = build_dataset(va, stoi, args.context)
    Xte, Yte = build_dataset(te, stoi, args.context)
    print(f"data: {source}: {len(words):,} items, vocabulary {len(itos)}; examples "
          f"train {len(Xtr):,} / val {len(Xva):,} / test {len(Xte):,}")
    model = CharMLP(len(itos), args.context, args.emb, args.hidden)
    print(f"model: context {args.context}, embedding {args.emb}, hidden {args.hidden} "
          f"(tanh): {model.num_parameters():,} parameters; SGD lr {args.lr:g} -> "
          f"{args.lr_final:g}, batch {args.batch}, {args.steps:,} steps")

    t0 = time.perf_counter()
    losses = train(model, Xtr, Ytr, args.steps, args.batch, args.lr, args.lr_final,
                   args.decay_at, seed=args.seed, progress=not args.no_progress)
    wall = time.perf_counter() - t0
    print(f"trained {args.steps:,} steps in {wall:.1f} s ({args.steps / wall:,.0f} steps/s)")

    t1 = time.perf_counter()
    results = {"train": evaluate(model, Xtr, Ytr), "val": evaluate(model, Xva, Yva),
               "test": evaluate(model, Xte, Yte)}
    print("final loss: " + "  ".join(f"{k} {v:.4f}" for k, v in results.items()) +
          f"  (evaluated in {time.perf_counter() - t1:.1f} s)")

    _print_samples(sample(model, itos, args.samples, generator=gen))

    if args.out:
        os.makedirs(args.out, exist_ok=True)
        ckpt = os.path.join(args.out, "makemore.safetensors")
        save_model(model, itos, ckpt, {"steps": str(args.steps),
                                       **{f"{k}_loss": f"{v:.6f}" for k, v in results.items()}})
        print(f"checkpoint: {ckpt} (in {os.path.abspath(args.out)})")
        if not args.no_plot:
            png = os.path.join(args.out, "makemore-loss.png")
            if plot_losses(losses, png, f"makemore: {args.steps:,} steps, val loss "
                                        f"{results['val']:.4f}"):
                print(f"loss curve: {png}")
    _print_next_steps(parser.prog, ckpt if args.out else None)
    return 0


def _print_next_steps(prog, ckpt):
    """What a newcomer can do after the first run."""
    cmd = prog if prog.startswith("python") else f"python {prog}"
    print("\nnext:")
    steps = ([("sample again from the saved model", f"{cmd} --sample-only {ckpt}")] if ckpt
             else [])
    steps += [("train on your own list, one a line", f"{cmd} --data names.txt"),
              ("save the model and plot elsewhere", f"{cmd} --out DIR"),
              ("the interactive page", "python -m torchic serve")]
    for what, how in steps:
        print(f"  {what + ':':<36}{how}")


def _print_samples(names):
    print(f"{len(names)} samples:")
    for name in names:
        print("  " + name)


if __name__ == "__main__":
    sys.exit(main())
