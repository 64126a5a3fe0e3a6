"""torchic.testing: how torchic checks itself, in three parts (used by the test suite and
the serve page's suites):

- ``checks``: ``check(tc_fn, np_fn, shapes)``, one torchic op against NumPy float64 in each
  layout, values and gradients (finite differences), and ``check_ints`` for int32 ops;
- ``references``: the NumPy float64 references (``np_softmax``, ``np_layer_norm_dx``,
  ``threefry2x32`` ...);
- ``cases``: the per-op test table ``CASES`` that every suite reads.
"""

from .checks import (LAYOUTS, ParityFailure, make_input, numeric_grad, compare, check,
                     issued_ops, check_ints)
from .references import (np_softmax, np_log_softmax, np_cross_entropy, np_matmul_by_definition,
                         np_logsumexp_rows, np_erf, np_gelu, np_gelu_tanh, np_cross_entropy_nd,
                         np_gelu_grad, np_gelu_tanh_grad, np_layer_norm, np_causal_attention,
                         np_layer_norm_dx, np_layer_norm_dw, np_softmax_dx, THREEFRY_ROTATIONS,
                         threefry2x32, np_dropout_mask, np_adam, np_cross_entropy_rows)
from .cases import (INF, NAN, Domain, DOMAINS, SPECIAL, SPECIAL_PAIRS, TINY, SPECIAL_TINY, EXP_SUBNORMAL,
                    SPECIAL_ROWS, SPECIAL_TARGETS, Special, Case, CASES, case, family, BIG,
                    unary, binary, comparison, integer, reduction, MATMUL_SHAPES, view,
                    ADAM_SPECIAL, BROADCAST_SHAPES, UNARY_SHAPES, kernel_cases, untested_ops)

__all__ = [
    'INF', 'NAN', 'LAYOUTS', 'ParityFailure', 'make_input', 'numeric_grad', 'compare', 'check', 'issued_ops',
    'check_ints', 'np_softmax', 'np_log_softmax', 'np_cross_entropy', 'np_matmul_by_definition',
    'np_logsumexp_rows', 'np_erf', 'np_gelu', 'np_gelu_tanh', 'np_cross_entropy_nd',
    'np_gelu_grad', 'np_gelu_tanh_grad', 'np_layer_norm', 'np_causal_attention',
    'np_layer_norm_dx', 'np_layer_norm_dw', 'np_softmax_dx', 'THREEFRY_ROTATIONS',
    'threefry2x32', 'np_dropout_mask', 'np_adam', 'np_cross_entropy_rows', 'Domain', 'DOMAINS',
    'SPECIAL', 'SPECIAL_PAIRS', 'TINY', 'SPECIAL_TINY', 'EXP_SUBNORMAL', 'SPECIAL_ROWS',
    'SPECIAL_TARGETS', 'Special', 'Case', 'CASES', 'case', 'family', 'BIG', 'unary', 'binary',
    'comparison', 'integer', 'reduction', 'MATMUL_SHAPES', 'view', 'ADAM_SPECIAL',
    'BROADCAST_SHAPES', 'UNARY_SHAPES', 'kernel_cases', 'untested_ops'
]
