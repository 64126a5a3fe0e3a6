"""tests/torch_moduleinfo: torchic.nn against PyTorch's ModuleInfo database (module_db).

The harness (moduleinfo_harness.py, which reuses tests/torch_opinfo's conversion and
comparison) and the skip table (module_skips.py) are plain modules of this folder, imported
by the tests here and by scripts/gen_coverage_moduleinfo.py.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "torch_opinfo"))
