"""PyTorch's "Sequence Models and LSTM Networks" tutorial: an LSTM part-of-speech tagger
(word embeddings -> nn.LSTM -> a linear layer -> log_softmax, the NLL loss, SGD), here over
tagged sentences built from the test text (a word's tag: its length class), and a
bidirectional two-layer variant fed a padded, packed batch (pack_padded_sequence /
pad_packed_sequence)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from _fixtures import TEXT, Bridge


def tagged_sentences(n=12):
    lines = [line.split() for line in TEXT.splitlines() if line.split()]
    sents = [[w.strip(".,:;").lower() for w in line][:9] for line in lines[:n]]
    return [(s, ["DET" if len(w) <= 3 else "NN" if len(w) <= 5 else "V" for w in s])
            for s in sents]


class LSTMTagger(nn.Module):
    def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size, **lstm_kwargs):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim, **lstm_kwargs)
        d = 2 if lstm_kwargs.get("bidirectional") else 1
        self.hidden2tag = nn.Linear(hidden_dim * d, tagset_size)

    def forward(self, sentence):
        embeds = self.word_embeddings(sentence)
        lstm_out, _ = self.lstm(embeds.view(len(sentence), 1, -1))
        tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
        return F.log_softmax(tag_space, dim=1)

    def forward_packed(self, padded, lengths):
        packed = pack_padded_sequence(self.word_embeddings(padded), lengths, batch_first=True,
                                      enforce_sorted=False)
        out, (h, c) = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True)
        return F.log_softmax(self.hidden2tag(out), dim=-1), h


def prepare_sequence(seq, to_ix):
    return torch.tensor([to_ix[w] for w in seq], dtype=torch.long)


def main(steps=20, seed=1, bridge=None):
    bridge = bridge or Bridge()
    torch.manual_seed(seed)
    data = tagged_sentences()
    word_to_ix, tag_to_ix = {}, {"DET": 0, "NN": 1, "V": 2}
    for sent, _ in data:
        for word in sent:
            word_to_ix.setdefault(word, len(word_to_ix))
    model = LSTMTagger(6, 6, len(word_to_ix), len(tag_to_ix))
    bridge.module("model", model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(steps):
        sentence, tags = data[step % len(data)]
        model.zero_grad()
        tag_scores = model(prepare_sequence(sentence, word_to_ix))
        loss = F.nll_loss(tag_scores, prepare_sequence(tags, tag_to_ix))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        scores = model(prepare_sequence(data[0][0], word_to_ix))
        predicted = scores.argmax(dim=1).tolist()

    # the batched variant: a padded batch of 4 sentences, packed
    model2 = LSTMTagger(6, 5, len(word_to_ix), len(tag_to_ix), num_layers=2,
                        bidirectional=True, batch_first=True)
    bridge.module("model2", model2)
    optimizer2 = torch.optim.Adam(model2.parameters(), lr=0.01)
    batch = data[:4]
    lengths = [len(s) for s, _ in batch]
    width = max(lengths)
    words = torch.tensor([[word_to_ix[w] for w in s] + [0] * (width - len(s)) for s, _ in batch])
    targets = torch.tensor([[tag_to_ix[t] for t in ts] + [-100] * (width - len(ts))
                            for _, ts in batch])
    losses2 = []
    for _ in range(steps):
        optimizer2.zero_grad()
        scores, h = model2.forward_packed(words, lengths)
        loss = F.cross_entropy(scores.reshape(-1, 3), targets.reshape(-1), ignore_index=-100)
        loss = loss + 0.01 * (h * h).sum()
        loss.backward()
        optimizer2.step()
        losses2.append(loss.item())
    return {"losses": losses, "predicted": predicted, "packed_losses": losses2}


if __name__ == "__main__":
    print(main())
