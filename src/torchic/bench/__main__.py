"""`python -m torchic.bench` (the same as `python -m torchic bench`)."""

import sys

from . import main

sys.exit(main())
