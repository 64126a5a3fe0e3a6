"""makemore: train a character-level MLP on a list of names and sample new ones.

    python examples/makemore.py                                   # census names, 200k steps
    python examples/makemore.py --data names.txt --steps 200000   # the classic setting
    python examples/makemore.py --sample-only makemore.safetensors

A thin command line over torchic.demo (the model, training loop, sampling and
checkpoints live there so that `python -m torchic demo` runs the same code).
Writes makemore.safetensors and makemore-loss.png to --out (default: here).
Run with --help for every option.
"""

import sys

from torchic.demo import CLASSIC_STEPS, main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], prog="makemore.py", steps=CLASSIC_STEPS, out="."))
