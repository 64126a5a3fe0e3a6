"""PyTorch's examples/mnist, small: the same Net (Conv2d -> ReLU -> MaxPool2d, twice, then
Dropout -> Flatten -> Linear -> ReLU -> Dropout -> Linear -> log_softmax and F.nll_loss),
trained with Adadelta and a StepLR schedule stepped once an epoch, then tested under
model.eval() and torch.no_grad() (summed NLL loss, the count of right guesses), here on
synthetic 1x16x16 images of four classes (horizontal stripes, vertical stripes, a central
blob, a diagonal) plus Gaussian noise, served by a TensorDataset and a DataLoader in
batches of 16. The dropout layers keep the example's places with p=0 by default so that the
two runs draw the same masks (the program takes p as an argument)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

from _fixtures import Bridge

SIZE = 16
NUM_CLASSES = 4


class Net(nn.Module):
    def __init__(self, p1=0.0, p2=0.0):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, 1), nn.ReLU(), nn.MaxPool2d(2),      # 16 -> 14 -> 7
            nn.Conv2d(8, 16, 3, 1), nn.ReLU(), nn.MaxPool2d(2),     # 7 -> 5 -> 2
        )
        self.dropout1 = nn.Dropout(p1)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(16 * 2 * 2, 32)
        self.dropout2 = nn.Dropout(p2)
        self.fc2 = nn.Linear(32, NUM_CLASSES)

    def forward(self, x):
        x = self.dropout1(self.features(x))
        x = F.relu(self.fc1(self.flatten(x)))
        x = self.fc2(self.dropout2(x))
        return F.log_softmax(x, dim=1)


def patterns():
    """The four clean class images, (4, 1, SIZE, SIZE) in [0, 1]."""
    r = torch.arange(SIZE, dtype=torch.float32).view(SIZE, 1).expand(SIZE, SIZE)
    c = torch.arange(SIZE, dtype=torch.float32).view(1, SIZE).expand(SIZE, SIZE)
    horizontal = ((r.long() // 2) % 2).float()
    vertical = ((c.long() // 2) % 2).float()
    centre = (SIZE - 1) / 2
    blob = torch.exp(-((r - centre) ** 2 + (c - centre) ** 2) / 12.0)
    diagonal = ((r - c).abs() <= 1.5).float()
    return torch.stack([horizontal, vertical, blob, diagonal]).unsqueeze(1)


def make_dataset(n, bridge, name):
    labels = torch.arange(n) % NUM_CLASSES
    noise = bridge.batch(name, torch.randn(n, 1, SIZE, SIZE) * 0.5)
    images = patterns()[labels] + noise
    images = (images - 0.1307) / 0.3081          # the example's Normalize((0.1307,), (0.3081,))
    return TensorDataset(images, labels)


def train(model, train_loader, optimizer, losses):
    model.train()
    for data, target in train_loader:
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())


def test(model, test_loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    return test_loss / len(test_loader.dataset), correct


def main(steps=20, seed=1, bridge=None, batch_size=16, p1=0.0, p2=0.0):
    bridge = bridge or Bridge()
    torch.manual_seed(seed)
    train_set = make_dataset(5 * batch_size, bridge, "train_images")
    test_set = make_dataset(2 * batch_size, bridge, "test_images")
    train_loader = DataLoader(train_set, batch_size=batch_size)
    test_loader = DataLoader(test_set, batch_size=batch_size)
    model = Net(p1, p2)
    bridge.module("model", model)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    losses, test_losses, correct, lrs = [], [], [], []
    while len(losses) < steps:
        train(model, train_loader, optimizer, losses)
        loss, right = test(model, test_loader)
        test_losses.append(loss)
        correct.append(right)
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    return {"losses": losses[:steps], "test_losses": test_losses, "correct": correct,
            "lrs": lrs}


if __name__ == "__main__":
    print(main())
