"""PyTorch's examples/word_language_model, small: RNNModel (nn.LSTM / nn.GRU with the
hidden state carried and detached between batches) or TransformerModel
(nn.TransformerEncoder with a causal mask from nn.Transformer.generate_square_subsequent_mask
and sinusoidal positions), trained on the words of the test text with truncated BPTT,
gradient clipping and SGD, evaluated under torch.no_grad()."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from _fixtures import TEXT, Bridge


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.0):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        if self.rnn_type == "LSTM":
            return (torch.zeros(self.nlayers, bsz, self.nhid),
                    torch.zeros(self.nlayers, bsz, self.nhid))
        return torch.zeros(self.nlayers, bsz, self.nhid)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.0, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.stack([torch.sin(position * div_term), torch.cos(position * div_term)], -1)
        self.register_buffer("pe", pe.reshape(max_len, d_model).unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0), :])


class TransformerModel(nn.Module):
    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.0):
        super().__init__()
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        layers = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layers, nlayers,
                                                         enable_nested_tensor=False)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)
        initrange = 0.1
        nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src):
        mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        src = self.pos_encoder(self.input_emb(src) * math.sqrt(self.ninp))
        output = self.decoder(self.transformer_encoder(src, mask))
        return F.log_softmax(output, dim=-1)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data[:nbatch * bsz].view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def main(steps=20, seed=1111, bridge=None, model="LSTM", bptt=8, batch_size=4):
    bridge = bridge or Bridge()
    torch.manual_seed(seed)
    words = TEXT.lower().replace(".", " <eos>").split()
    vocab = {w: i for i, w in enumerate(sorted(set(words)))}
    data = batchify(torch.tensor([vocab[w] for w in words], dtype=torch.long), batch_size)
    ntokens = len(vocab)
    if model == "Transformer":
        net = TransformerModel(ntokens, 16, 2, 32, 2)
    else:
        net = RNNModel(model, ntokens, 16, 16, 2)
    bridge.module("model", net)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.5)
    net.train()
    hidden = None if model == "Transformer" else net.init_hidden(batch_size)
    losses, norms, i = [], [], 0
    for _ in range(steps):
        if i >= data.size(0) - 2:
            i = 0
        x, targets = get_batch(data, i, bptt)
        i += bptt
        optimizer.zero_grad()
        if model == "Transformer":
            output = net(x).view(-1, ntokens)
        else:
            hidden = repackage_hidden(hidden)
            output, hidden = net(x, hidden)
        loss = F.nll_loss(output, targets)
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(net.parameters(), 0.25)))
        optimizer.step()
        losses.append(loss.item())
    net.eval()
    with torch.no_grad():
        x, targets = get_batch(data, 0, bptt)
        if model == "Transformer":
            output = net(x).view(-1, ntokens)
        else:
            output, _ = net(x, net.init_hidden(batch_size))
        val = F.nll_loss(output, targets).item()
    return {"losses": losses, "grad_norms": norms, "val_loss": val}


if __name__ == "__main__":
    print(main())
