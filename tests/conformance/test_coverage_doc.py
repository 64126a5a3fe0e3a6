"""docs/COVERAGE.md (the op x backend matrix) is generated; it must match the registry."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_coverage_doc_is_current():
    proc = subprocess.run([sys.executable, os.path.join("scripts", "gen_coverage.py"), "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout[-6000:] + "\n" + proc.stderr[-3000:] +
                                  "\nregenerate with: python scripts/gen_coverage.py")
