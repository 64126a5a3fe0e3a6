"""tests/torch_opinfo: torchic against PyTorch's OpInfo database (op_db).

The harness (opinfo_harness.py) and the skip table (skips.py) are plain modules of this
folder, imported by the tests here and by scripts/gen_coverage_opinfo.py. op_db is loaded
once per process (the harness caches it, and the torch side of every sample with it).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
