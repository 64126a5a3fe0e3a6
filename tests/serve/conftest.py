"""The `server` fixture: one real `python -m torchic serve` shared by tests/serve.

See serve_helpers.py for how it is started and what the toy suites do.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from serve_helpers import start_server, stop_server  # noqa: E402


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    srv = start_server(tmp_path_factory.mktemp("serve"))
    yield srv
    code = stop_server(srv)
    assert code == 0, f"server exit code {code}:\n{srv.stderr()[-3000:]}"
