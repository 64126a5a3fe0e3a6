"""pytorch/examples' time_sequence_prediction in miniature: generate_sine_wave.py's shifted
sine waves (float64), a two-layer nn.LSTMCell predictor unrolled by hand over the sequence
(and `future` steps fed its own output), `seq.double()`, MSELoss, and L-BFGS (lr=0.8) whose
closure prints each loss; after each step the test loss of the free-running prediction.
Smaller than the original (6 waves of 30 points, 12 hidden units, 2 steps of 8 iterations) to run in
seconds."""

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

from _fixtures import Bridge

HIDDEN = 12


def sine_waves(T=20, L=30, N=6, seed=2):
    """generate_sine_wave.py: N sine waves of L points, each shifted by a random offset."""
    rs = np.random.RandomState(seed)
    x = np.empty((N, L), 'int64')
    x[:] = np.array(range(L)) + rs.randint(-4 * T, 4 * T, N).reshape(N, 1)
    return np.sin(x / 1.0 / T).astype('float64')


class Sequence(nn.Module):
    def __init__(self):
        super(Sequence, self).__init__()
        self.lstm1 = nn.LSTMCell(1, HIDDEN)
        self.lstm2 = nn.LSTMCell(HIDDEN, HIDDEN)
        self.linear = nn.Linear(HIDDEN, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        c_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


def main(steps=2, seed=0, bridge=None, max_iter=8, future=10, verbose=False):
    bridge = bridge or Bridge()
    steps = min(steps, 2)           # (each L-BFGS step runs up to max_iter closures)
    np.random.seed(seed)
    torch.manual_seed(seed)
    data = sine_waves()
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    # build the model
    seq = Sequence()
    seq.double()
    bridge.module("seq", seq)
    criterion = nn.MSELoss()
    # use LBFGS as optimizer since we can load the whole data to train
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=max_iter)
    losses, test_losses = [], []
    for i in range(steps):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            losses.append(loss.item())
            if verbose:
                print('loss:', loss.item())
            loss.backward()
            return loss
        optimizer.step(closure)
        # begin to predict, no need to track gradient here
        with torch.no_grad():
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            test_losses.append(loss.item())
            y = pred.detach().numpy()
    return {"losses": losses, "test_losses": test_losses, "float64": pred.dtype == torch.float64,
            "prediction_tail": [float(v) for v in y[:, -5:].ravel()]}


if __name__ == "__main__":
    print(main(verbose=True))
