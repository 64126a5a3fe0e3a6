"""The suite registry and the run context, in process (no server, no subprocess)."""

import json

import pytest

from torchic.serve import context, registry


@pytest.fixture
def clean_registry():
    saved = registry.suites()
    registry.clear()
    yield
    registry.clear()
    registry._SUITES.update(saved)


def describe(name):
    return registry.suites()[name].describe()


def test_define_and_describe(clean_registry):
    def fn(run, size, mode):
        pass

    registry.define_bench("demo", fn, {"size": [1, 2, 4], "mode": lambda: ["a", "b"]},
                          defaults={"size": [2]}, disabled={"mode": lambda: {"b": "no b here"}},
                          plot={"x": "size", "y": "value"})
    d = describe("demo")
    assert d["kind"] == "bench" and d["plot"]["x"] == "size"
    size, mode = d["params"]
    assert size["choices"] == [1, 2, 4] and size["default"] == [2]
    assert mode["choices"] == ["a", "b"] and mode["disabled"] == {"b": "no b here"}
    assert mode["default"] == ["a"]          # a disabled choice is not selected by default
    assert mode["run_all"] == ["a"] and size["run_all"] == [1, 2, 4]
    registry.define_bench("narrow", fn, {"size": [1, 2, 4], "mode": ["a", "b"]},
                          run_all={"size": [1, 2]})
    assert describe("narrow")["params"][0]["run_all"] == [1, 2]
    json.dumps(d)


def test_skip_rules_plan_what_runs(clean_registry):
    rules = [{"when": {"a": [2], "b": ["y"]}, "why": "no y at a=2"},
             {"when": {"a": [3]}, "unless_first": "b", "why": "a=3 runs once"}]
    registry.define_bench("grid", lambda run, a, b: None, {"a": [1, 2, 3], "b": ["x", "y"]},
                          skip=lambda: rules)
    assert describe("grid")["skip"] == rules
    runs, skipped = registry.plan(rules, {"a": [1, 2, 3], "b": ["x", "y"]})
    assert runs == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"},
                    {"a": 3, "b": "x"}]
    assert skipped == [({"a": 2, "b": "y"}, "no y at a=2"), ({"a": 3, "b": "y"}, "a=3 runs once")]
    # "unless_first" counts from the selection: with only y chosen, a=3 runs with y
    runs, skipped = registry.plan(rules, {"a": [3], "b": ["y"]})
    assert runs == [{"a": 3, "b": "y"}] and skipped == []
    assert registry.plan(None, {"a": [1]}) == ([{"a": 1}], [])
    with pytest.raises(registry.SuiteError, match="skip rule"):
        registry.define_bench("bad", lambda run: None, {}, skip=[{"when": {"a": 2}, "why": "x"}])


def test_bench_suites_skip_instead_of_running_nothing():
    """Every combination the bench suites' functions are called for exists (no silent
    no-op combination): the (case, size) pairs that do not exist are skip rules."""
    registry.discover()
    d = registry.suites()["reduce"].describe()
    params = {p["name"]: p["choices"] for p in d["params"]}
    params.update(impl=["workers"], threads=[1], budget=["quick"])
    runs, skipped = registry.plan(d["skip"], params)
    from torchic.bench import suites as bench_suites
    cases = bench_suites.SUITES["reduce"]({"quick": True, "gpu": False}) + \
        bench_suites.SUITES["reduce"]({"quick": False, "gpu": False})
    pairs = {(c.name, c.label) for c in cases}
    assert {(r["case"], r["size"]) for r in runs} == pairs
    assert all("not measured at this size" in why for _, why in skipped)


@pytest.mark.parametrize("name,params,match", [
    ("has space", {}, "without spaces"),
    ("ok", {"n": []}, "no choices"),
    ("ok", {"n": [[1]]}, "not a JSON scalar"),
    ("ok", {"n": [1, "1"]}, "duplicate"),
    ("ok", {"not-ident": [1]}, "identifier"),
])
def test_bad_definitions_are_rejected(clean_registry, name, params, match):
    with pytest.raises(registry.SuiteError, match=match):
        registry.define_test(name, lambda run, **kw: None, params)


def test_unknown_option_and_duplicates(clean_registry):
    with pytest.raises(registry.SuiteError, match="unknown option"):
        registry.define_test("x", lambda run: None, {}, colour="red")
    registry._current_module[0] = "mod_a"
    registry.define_test("dup", lambda run: None, {})
    registry._current_module[0] = "mod_b"
    try:
        with pytest.raises(registry.SuiteError, match="defined twice"):
            registry.define_test("dup", lambda run: None, {})
    finally:
        registry._current_module[0] = None


def test_normalize_params(clean_registry):
    registry.define_test("p", lambda run, **kw: None,
                         {"n": [16, 32, 64], "flag": [True, False], "name": ["x", "y"]},
                         defaults={"n": [32]})
    d = describe("p")
    out = registry.normalize_params(d, {"n": ["64", 16, 16], "flag": "false"})
    assert out == {"n": [16, 64], "flag": [False], "name": ["x", "y"]}   # suite order, deduped
    assert registry.normalize_params(d, None)["n"] == [32]
    with pytest.raises(registry.ParamError, match="bad value 7"):
        registry.normalize_params(d, {"n": [7]})
    with pytest.raises(registry.ParamError, match="no parameter 'm'"):
        registry.normalize_params(d, {"m": [1]})
    combos = registry.combinations(out)
    assert combos == [{"n": 16, "flag": False, "name": "x"}, {"n": 16, "flag": False, "name": "y"},
                      {"n": 64, "flag": False, "name": "x"}, {"n": 64, "flag": False, "name": "y"}]


def test_run_context_rows_tests_and_json_safety():
    events = []
    run = context.RunContext(events.append, {"backend": "workers"}, 0, 1, {}, context.Sessions())
    run.test("ok", lambda: {"max_err": 1e-7})
    run.test("bad", lambda: (_ for _ in ()).throw(AssertionError("off by one")))
    run.test("err", lambda: 1 / 0)
    run.row(value=float("nan"), other=float("inf"))
    got = [e["row"] for e in events if e["type"] == "row"]
    assert [(r["backend"], r["case"], r["status"]) for r in got[:3]] == [
        ("workers", "ok", "pass"), ("workers", "bad", "fail"), ("workers", "err", "error")]
    assert got[1]["message"] == "off by one" and "ZeroDivisionError" in got[2]["message"]
    assert got[3]["value"] == "nan" and got[3]["other"] == "inf"
    json.dumps(events, allow_nan=False)
    assert run.counts == {"pass": 1, "fail": 1, "error": 1}


def test_sessions_are_reused_while_the_key_stays():
    import contextlib
    log = []

    @contextlib.contextmanager
    def cm(name):
        log.append(("enter", name))
        yield name
        log.append(("exit", name))

    s = context.Sessions()
    assert s.enter("a", lambda: cm("a")) == "a"
    s.enter("a", lambda: cm("a"))
    s.enter("b", lambda: cm("b"))
    s.close()
    assert log == [("enter", "a"), ("exit", "a"), ("enter", "b"), ("exit", "b")]


def test_builtin_suite_files_import_and_describe(clean_registry, monkeypatch):
    import sys
    for name in [m for m in sys.modules if m.startswith(registry.BUILTIN_PACKAGE + ".")]:
        monkeypatch.delitem(sys.modules, name)
    found, errors = registry.discover()
    assert errors == []
    for suite in found.values():
        json.dumps(suite.describe())
    assert {"ops.unary", "autograd", "matmul"} <= set(found)
