"""torchic.optim: optimizers and learning-rate schedulers (PyTorch spellings).

    opt = torchic.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torchic.optim.lr_scheduler.StepLR(opt, step_size=1000, gamma=0.1)
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()

Updates run under no_grad with in-place tensor ops (``p.add_``, ``buf.mul_``)
on whatever backend is current; the step counters and bias corrections are
plain Python numbers, so a step never reads a tensor back to the host.
"""

from . import lr_scheduler, swa_utils
from .adam import Adam, AdamW
from .adaptive import ASGD, Adadelta, Adagrad, Adamax, NAdam, RAdam, RMSprop, Rprop
from .lbfgs import LBFGS, Adafactor
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Adagrad",
           "Adadelta", "RMSprop", "Rprop", "ASGD", "LBFGS", "Adafactor", "lr_scheduler",
           "swa_utils"]
