"""The op-parity helpers live in torchic.testing (shared with the serve page's suites)."""

import functools

from torchic.testing import LAYOUTS, check, make_input, numeric_grad  # noqa: F401

# check_op(...) returns the op's output so tests can look at it further
check_op = functools.partial(check, return_output=True)
