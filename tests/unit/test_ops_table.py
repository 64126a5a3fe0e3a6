"""ops.py declares each primitive op once (one row); the families, the workers split
rule and every backend's kernel table are derived from / checked against the rows."""

import pytest

from torchic import dispatcher, ops


def test_every_op_has_one_row_with_a_family_and_a_split_rule():
    names = [op.name for op in ops.OPS]
    assert len(set(names)) == len(names)
    assert ops.ALL_OPS == tuple(names)
    for op in ops.OPS:
        assert op.family in ops.FAMILIES, op
        assert op.split in (ops.ROWS, ops.INDEX_ROWS, ops.WHOLE), op
        assert isinstance(op.arity, int) and 0 <= op.arity <= 3, op
        assert op.dtypes and op.contract, op
        assert ops.BY_NAME[op.name] is op
    # the family tuples other modules import partition ALL_OPS
    parts = ops.UNARY + ops.BINARY + ops.COMPARE + ops.REDUCE + ops.OTHER
    assert sorted(parts) == sorted(ops.ALL_OPS)
    assert set(ops.ROWWISE) <= set(ops.OTHER)
    assert ops.REDUCE == ("sum", "max", "min")
    # every op is in the printed contract table
    if ops.__doc__:
        for name in ops.ALL_OPS:
            assert f"\n{name} " in ops.__doc__


def test_workers_split_rule_comes_from_the_rows():
    from torchic.backends.cpu import numpy_kernels as nk
    assert set(nk.SPLIT) == set(ops.ALL_OPS) == set(nk.KERNELS)
    for op in ops.OPS:
        assert (nk.SPLIT[op.name] is None) == (op.split == ops.WHOLE), op
    assert nk.SPLIT["add"] is not None and nk.SPLIT["matmul"] is None


def test_every_backend_table_is_keyed_by_the_ops_names():
    for name in dispatcher.backend_names():
        table = dispatcher.kernel_table(name)
        assert table is not None and set(table) == set(ops.ALL_OPS), name


def test_check_backend_table_names_missing_and_unknown_ops():
    table = dict.fromkeys(ops.ALL_OPS)
    ops.check_backend_table("t", table)
    del table["exp"]
    table["sinh"] = None
    with pytest.raises(TypeError, match=r"missing \['exp'\], unknown \['sinh'\]"):
        ops.check_backend_table("t", table)
