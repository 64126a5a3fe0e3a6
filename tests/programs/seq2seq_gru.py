"""PyTorch's "NLP From Scratch: Translation with a Sequence to Sequence Network and Attention"
tutorial, small: EncoderRNN (nn.Embedding -> Dropout -> nn.GRU, batch_first) and
AttnDecoderRNN (BahdanauAttention: Va(tanh(Wa(query) + Ua(keys))), softmax, torch.bmm for the
context; the embedded token and the context concatenated into an nn.GRU; log_softmax), or the
tutorial's plain DecoderRNN, trained with teacher forcing, nn.NLLLoss and two Adam optimizers,
then decoding greedily (topk(1)) under torch.no_grad(). The task: reverse a short sequence of
tokens (SOS 0, EOS 1, the rest words), padded with 0 to MAX_LENGTH as the tutorial pads its
pairs. Dropout keeps the tutorial's places with p=0 so that the two runs draw the same masks."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from _fixtures import Bridge

SOS_token, EOS_token = 0, 1
MAX_LENGTH = 7
VOCAB = 10


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_p=0.0):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class DecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden = self.forward_step(decoder_input, decoder_hidden)
            decoder_outputs.append(decoder_output)
            if target_tensor is not None:
                decoder_input = target_tensor[:, i].unsqueeze(1)       # teacher forcing
            else:
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()
        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        return decoder_outputs, decoder_hidden, None

    def forward_step(self, input, hidden):
        output = F.relu(self.embedding(input))
        output, hidden = self.gru(output, hidden)
        return self.out(output), hidden


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)
        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.0):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs, attentions = [], []
        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs)
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)
            if target_tensor is not None:
                decoder_input = target_tensor[:, i].unsqueeze(1)       # teacher forcing
            else:
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()
        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)
        return decoder_outputs, decoder_hidden, attentions

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input))
        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)
        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)
        return output, hidden, attn_weights


def make_pairs(n, bridge, name):
    """(inputs, targets), each (n, MAX_LENGTH): words, EOS, then 0-padding; targets reversed."""
    lengths = bridge.batch(name + "_lengths", torch.randint(2, MAX_LENGTH - 1, (n,)))
    words = bridge.batch(name + "_words", torch.randint(2, VOCAB, (n, MAX_LENGTH)))
    inputs = torch.zeros(n, MAX_LENGTH, dtype=torch.long)
    targets = torch.zeros(n, MAX_LENGTH, dtype=torch.long)
    for i, length in enumerate(lengths.tolist()):
        seq = words[i, :length]
        inputs[i, :length] = seq
        inputs[i, length] = EOS_token
        targets[i, :length] = seq.flip(0)
        targets[i, length] = EOS_token
    return inputs, targets


def train_epoch(input_tensor, target_tensor, encoder, decoder, encoder_optimizer,
                decoder_optimizer, criterion):
    encoder_optimizer.zero_grad()
    decoder_optimizer.zero_grad()
    encoder_outputs, encoder_hidden = encoder(input_tensor)
    decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)
    loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
    loss.backward()
    encoder_optimizer.step()
    decoder_optimizer.step()
    return loss.item()


def main(steps=20, seed=1, bridge=None, decoder="attention", hidden_size=16, batch_size=8):
    bridge = bridge or Bridge()
    torch.manual_seed(seed)
    inputs, targets = make_pairs(4 * batch_size, bridge, "pairs")
    encoder = EncoderRNN(VOCAB, hidden_size)
    if decoder == "attention":
        net = AttnDecoderRNN(hidden_size, VOCAB)
    else:
        net = DecoderRNN(hidden_size, VOCAB)
    bridge.module("encoder", encoder)
    bridge.module("decoder", net)
    encoder_optimizer = torch.optim.Adam(encoder.parameters(), lr=0.01)
    decoder_optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    criterion = nn.NLLLoss()
    encoder.train()
    net.train()
    losses = []
    for step in range(steps):
        k = step % (len(inputs) // batch_size)
        batch = slice(k * batch_size, (k + 1) * batch_size)
        losses.append(train_epoch(inputs[batch], targets[batch], encoder, net,
                                  encoder_optimizer, decoder_optimizer, criterion))
    encoder.eval()
    net.eval()
    with torch.no_grad():
        encoder_outputs, encoder_hidden = encoder(inputs[:batch_size])
        decoder_outputs, _, attentions = net(encoder_outputs, encoder_hidden)
        _, topi = decoder_outputs.topk(1)
        decoded = topi.squeeze(-1).tolist()
        eval_loss = criterion(decoder_outputs.view(-1, VOCAB), targets[:batch_size].view(-1))
    out = {"losses": losses, "eval_loss": eval_loss.item(), "decoded": decoded}
    if attentions is not None:
        out["attention"] = attentions[0].flatten().tolist()
    return out


if __name__ == "__main__":
    print(main())
