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
        assert op.split in ops.SPLITS, op
        # (at most 4 inputs: a simd record holds at most 5 views, kernels/src/record.rs)
        assert isinstance(op.arity, int) and 0 <= op.arity <= 4, op
        assert all(0 <= k < op.arity for k in op.writes), op    # inputs written in place
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


def test_rows_say_how_an_op_is_cut_fused_and_recorded():
    """Each row's cut (webgpu windows), fuse kind and simd record slots are checked when
    ops.py loads (check_row): a row whose cut disagrees with its workers split, a reduction
    without its combine op, or a param without a record slot is refused."""
    for op in ops.OPS:
        ops.check_row(op)
    causal, total = ops.BY_NAME["causal_softmax"], ops.BY_NAME["sum"]
    for bad in (causal._replace(cut="diagonal"), causal._replace(split=ops.WHOLE),
                causal._replace(record=()), causal._replace(record=(("diagonal", "i9"),)),
                ops.BY_NAME["dropout"]._replace(record=(("threshold", "i0"), ("scale", "i0"))),
                total._replace(combine=""), total._replace(combine="div"),
                causal._replace(fuse="sometimes"), ops.BY_NAME["add"]._replace(combine="add")):
        with pytest.raises(TypeError, match="bad op row"):
            ops.check_row(bad)
    # the passes' views of the rows
    assert ops.CUT["causal_softmax"] == ops.CUT_LEADING_ROWS
    assert set(ops.STAGES) >= set(ops.UNARY + ops.BINARY + ops.COMPARE)
    assert ops.FUSE["matmul"] == ops.PRODUCER and ops.FUSE["sum"] == ops.NEVER


def test_the_simd_library_fuses_exactly_the_ops_the_rows_call_stages():
    """kernels/src/fuse.rs keeps its own test of which ops tile as stages (by contract
    kind); the library says per op (tk_op_fuses), and loading refuses one that disagrees
    with ops.py's rows."""
    from torchic.backends import simd
    from torchic.backends.simd import native
    lib = native.load()
    if lib is None:
        pytest.skip(f"simd library unavailable: {native.load_error()}")
    names = lib.op_names()
    assert {n for code, n in enumerate(names) if lib.op_fuses(code) == 1} == set(ops.STAGES)
    assert simd._check_table(lib) == ""

    class Disagrees:            # the library, but fusing `sum` as a stage
        path = lib.path

        def op_names(self):
            return names

        def op_fuses(self, code):
            return 1 if names[code] == "sum" else lib.op_fuses(code)

        def op_writes(self, code):
            return lib.op_writes(code)
    assert "fuse ['sum'] otherwise than ops.py's rows" in simd._check_table(Disagrees())

    class WritesOtherwise(Disagrees):   # fusing as the rows say, but adam_update writes g
        def op_fuses(self, code):
            return lib.op_fuses(code)

        def op_writes(self, code):
            return 0b111 if names[code] == "adam_update" else lib.op_writes(code)
    assert "inputs of ['adam_update'] in place otherwise" in simd._check_table(WritesOtherwise())


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


# -- the per-op test table (torchic.testing.CASES) covers every primitive ---------------------
def test_every_primitive_op_has_a_test_case():
    from torchic import testing
    assert not testing.untested_ops(), \
        f"primitive ops without a case in torchic/testing/cases.py: {testing.untested_ops()}"
    # every elementwise primitive has its own one-kernel case (the simd suites test those)
    kernels = testing.kernel_cases("unary", "binary", "compare")
    assert set(kernels) == set(ops.UNARY + ops.BINARY + ops.COMPARE)
    for name, case in kernels.items():
        assert testing.CASES[name] is case and case.ops == (name,), case


def test_case_rows_are_well_formed():
    from torchic import testing
    for case in testing.CASES.values():
        assert case.family in ("unary", "binary", "compare", "reduce", "view", "int", "other"), case
        assert set(case.ops) <= set(ops.ALL_OPS), case
        assert all(d in testing.DOMAINS for d in case.domain), case
        assert len(case.domain) <= len(case.shapes), case
        assert set(case.layouts) <= set(testing.LAYOUTS), case
        if case.kernel:
            assert case.kernel in case.ops, case
        if case.big:    # (the large-tensor test's shapes: one per input)
            assert len(case.big) == len(case.shapes), case


@pytest.mark.parametrize("name", sorted(__import__("torchic.testing").testing.CASES))
def test_case_issues_the_primitives_it_claims(name):
    """A case's `ops` are true: running it (forward, and backward when it checks gradients)
    issues each of them, recorded on the workers backend."""
    import torchic
    from torchic import testing
    case = testing.CASES[name]
    torchic.init("workers")
    seen = set(testing.issued_ops(case.check))
    missing = [op for op in case.ops if op not in seen]
    assert not missing, f"{name} claims {missing} but issued only {sorted(seen)}"


def test_rows_dtypes_are_signatures_raw_checks():
    """Each row's dtypes spec expands to concrete signatures over dispatcher.DTYPES's codes
    (type classes as variables: docs/DTYPES.md's compute rules); out_dtype answers from them
    and refuses anything else with a TypeError naming the op and the dtypes."""
    assert set(ops.CODES) == set(dispatcher.DTYPES)
    for op in ops.OPS:
        sigs = ops.SIGNATURES[op.name]
        assert sigs, op
        for ins, out in sigs:
            assert len(ins) == op.arity and set(ins) | {out} <= set(ops.CODES), op
    assert ops.out_dtype("add", ("i64", "i64")) == "i64"
    assert ops.out_dtype("lt", ("f64", "f64")) == "b8"
    assert ops.out_dtype("exp", ("f64",)) == "f64"
    assert ops.out_dtype("copy", ("f32",), "bf16") == "bf16"     # every pair casts
    assert len(ops.SIGNATURES["copy"]) == len(ops.CODES) ** 2
    assert ops.out_dtype("gather_rows", ("f16", "i64")) == "f16"
    assert ops.out_dtype("argmax", ("f32",), "i64") == "i64"
    for op, ins, out in [("add", ("f32", "i64"), None), ("exp", ("i64",), None),
                         ("div", ("i32", "i32"), None), ("where", ("f32", "f32", "f32"), None),
                         ("matmul", ("f16", "f16"), None), ("fill", (), None),
                         ("argmax", ("f32",), "f32")]:
        with pytest.raises(TypeError, match=f"op '{op}' does not take dtypes"):
            ops.out_dtype(op, ins, out)
    # only copy, fill, where and gather_rows see a half or narrow dtype (raw computes the
    # others in ops.COMPUTE_AS); bool only there, in comparisons and where's condition
    for op in ops.OPS:
        codes = {c for ins, out in ops.SIGNATURES[op.name] for c in ins + (out,)}
        if op.name not in ("copy", "fill", "where", "gather_rows"):
            assert not codes & (set(ops.COMPUTE_AS) - {"b8"}), op
            assert "b8" not in codes or op.family == "compare", op
    assert ops.INT_BINARY == ("add", "sub", "mul", "maximum", "minimum")
    with pytest.raises(TypeError, match="bad dtypes spec"):
        ops.signatures("Q -> Q")
