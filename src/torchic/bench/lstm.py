"""A character-level LSTM language model (issue 42), written once in PyTorch's spelling and
trained by torchic and by PyTorch: nn.Embedding -> 2-layer nn.LSTM (hidden 256) -> nn.Linear
head over a vocabulary of 65 (tiny-shakespeare's), cross entropy, Adam; sequence 64, batch 32.

Both libraries start from the same weights (drawn once in NumPy, loaded through
load_state_dict: PyTorch's LSTM names) and see the same batches (a NumPy generator over a
fixed random token stream), so the first step's loss must agree with the float64 NumPy
forward here (`first_loss`).
"""

import functools

import numpy as np

CFG = {"vocab": 65, "emb": 64, "hidden": 256, "layers": 2, "seq": 64, "batch": 32,
       "lr": 2e-3, "tokens": 1 << 16}
QUICK = dict(CFG, hidden=32, seq=8, batch=4)


def label(cfg):
    return f"L{cfg['layers']} H{cfg['hidden']} T{cfg['seq']} b{cfg['batch']}"


@functools.lru_cache(None)
def model_class(lib):
    """The LM module class for `lib` (torchic or torch)."""
    nn = lib.nn

    class LSTMLanguageModel(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.emb = nn.Embedding(cfg["vocab"], cfg["emb"])
            self.lstm = nn.LSTM(cfg["emb"], cfg["hidden"], cfg["layers"])
            self.head = nn.Linear(cfg["hidden"], cfg["vocab"])

        def forward(self, x):                     # x (T, N) token ids
            out, _ = self.lstm(self.emb(x))
            return self.head(out)

    return LSTMLanguageModel


def _shapes(cfg):
    V, E, H = cfg["vocab"], cfg["emb"], cfg["hidden"]
    shapes = {"emb.weight": (V, E)}
    for k in range(cfg["layers"]):
        ins = E if k == 0 else H
        shapes.update({f"lstm.weight_ih_l{k}": (4 * H, ins), f"lstm.weight_hh_l{k}": (4 * H, H),
                       f"lstm.bias_ih_l{k}": (4 * H,), f"lstm.bias_hh_l{k}": (4 * H,)})
    shapes.update({"head.weight": (V, H), "head.bias": (V,)})
    return shapes


@functools.lru_cache(None)
def _data(vocab, emb, hidden, layers, tokens):
    cfg = {"vocab": vocab, "emb": emb, "hidden": hidden, "layers": layers}
    rng = np.random.default_rng(4242)
    weights = {}
    for name, shape in _shapes(cfg).items():
        if name == "emb.weight":
            w = rng.standard_normal(shape)
        else:
            bound = 1 / np.sqrt(hidden)
            w = rng.uniform(-bound, bound, shape)
        weights[name] = w.astype(np.float32)
    stream = rng.integers(0, vocab, tokens).astype(np.int64)
    return weights, stream


def data(cfg):
    """(initial weights by state_dict name, the token stream), seeded."""
    return _data(cfg["vocab"], cfg["emb"], cfg["hidden"], cfg["layers"], cfg["tokens"])


class Batches:
    """Random (T, N) windows of the token stream and their next tokens (a seeded generator)."""

    def __init__(self, stream, seq, batch, seed=7):
        self.stream, self.seq, self.batch = stream, seq, batch
        self.rng = np.random.default_rng(seed)

    def get(self):
        ix = self.rng.integers(0, len(self.stream) - self.seq - 1, self.batch)
        win = ix[None, :] + np.arange(self.seq)[:, None]          # (T, N)
        return self.stream[win], self.stream[win + 1]


def training_step(lib, cfg, device=None, compile=None):
    """A zero-argument callable: one Adam step of the LM on the next batch, returning the
    loss as a float (read back, so the step's work is done when it returns). `compile`
    wraps the step's forward, backward and update (torchic.compile, torch.compile)."""
    weights, stream = data(cfg)
    model = model_class(lib)(cfg)
    model.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
    if device is not None:
        model = model.to(device)
    opt = lib.optim.Adam(model.parameters(), lr=cfg["lr"])
    batches = Batches(stream, cfg["seq"], cfg["batch"])
    F = lib.nn.functional

    def train(x, y):
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
    if compile is not None:
        train = compile(train)

    def step():
        x, y = batches.get()
        x, y = lib.tensor(x), lib.tensor(y)
        if device is not None:
            x, y = x.to(device), y.to(device)
        with lib.enable_grad():
            return train(x, y).item()
    return step


def first_loss(cfg):
    """The float64 loss of the first batch, the forward written in NumPy."""
    weights, stream = data(cfg)
    W = {k: v.astype(np.float64) for k, v in weights.items()}
    x, y = Batches(stream, cfg["seq"], cfg["batch"]).get()
    h_in = W["emb.weight"][x]                                       # (T, N, E)
    H = cfg["hidden"]

    def sigmoid(a):
        return 1 / (1 + np.exp(-a))

    for k in range(cfg["layers"]):
        xp = h_in @ W[f"lstm.weight_ih_l{k}"].T + W[f"lstm.bias_ih_l{k}"] + \
            W[f"lstm.bias_hh_l{k}"]
        h = np.zeros((x.shape[1], H))
        c = np.zeros_like(h)
        outs = []
        for t in range(x.shape[0]):
            g = xp[t] + h @ W[f"lstm.weight_hh_l{k}"].T
            i, f, gg, o = sigmoid(g[:, :H]), sigmoid(g[:, H:2 * H]), np.tanh(g[:, 2 * H:3 * H]), \
                sigmoid(g[:, 3 * H:])
            c = f * c + i * gg
            h = o * np.tanh(c)
            outs.append(h)
        h_in = np.stack(outs)
    logits = (h_in @ W["head.weight"].T + W["head.bias"]).reshape(-1, cfg["vocab"])
    m = logits.max(axis=1)
    lse = np.log(np.exp(logits - m[:, None]).sum(axis=1)) + m
    return float((lse - logits[np.arange(len(logits)), y.reshape(-1)]).mean())
