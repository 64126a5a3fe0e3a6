"""The page end to end in headless Chromium (Debian's `chromium`, driven by Playwright).

Never downloads a browser: Playwright only brings its driver, the browser is the
system one (TORCHIC_CHROMIUM, else /usr/bin/chromium or `chromium` on PATH).
Locally a missing browser or Playwright skips; with TORCHIC_REQUIRE_ALL_BACKENDS=1
(CI) it fails.
"""

import json
import os
import shutil

import pytest
from serve_helpers import missing_modules, require

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]
TIMEOUT_MS = 60_000


def find_chromium():
    """TORCHIC_CHROMIUM if set (and only it), else Debian's /usr/bin/chromium or PATH's."""
    explicit = os.environ.get("TORCHIC_CHROMIUM")
    candidates = [explicit] if explicit else [
        "/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    missing = missing_modules("playwright")
    require(not missing, "Playwright for Python is not installed (pip install playwright; "
                         "no browser download is needed)")
    chromium = find_chromium()
    require(chromium is not None, "Chromium not found: apt-get install chromium (or set "
                                  "TORCHIC_CHROMIUM to its path)" +
            (f"; TORCHIC_CHROMIUM={os.environ['TORCHIC_CHROMIUM']!r} is not an executable"
             if os.environ.get("TORCHIC_CHROMIUM") else ""))
    from playwright.sync_api import sync_playwright
    profile = tmp_path_factory.mktemp("chromium-profile")     # a fresh --user-data-dir
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(profile), executable_path=chromium, headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 900}, accept_downloads=True)
        ctx.set_default_timeout(TIMEOUT_MS)
        try:
            yield ctx
        finally:
            ctx.close()


@pytest.fixture
def page(browser, server):
    pg = browser.new_page()
    problems = []
    pg.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
    pg.on("console", lambda m: problems.append(f"console.error: {m.text}")
          if m.type == "error" and "status of 4" not in m.text else None)
    pg.goto(server.url + "/")
    pg.wait_for_selector("body[data-ready=true]")
    yield pg
    pg.close()
    assert not problems, problems


def card(page, name):
    return page.locator(f'.suite[data-suite="{name}"]')


def only(page, suite, param, value):
    """Double-click a choice: select only that value."""
    choice = f'.param[data-param="{param}"] .choice[data-value="{value}"]'
    card(page, suite).locator(choice).dblclick()


def run_and_wait(page, suite, button="button.run", status="done"):
    c = card(page, suite)
    # wait for this click's run, not for the end of the card's previous one
    old = c.locator(".result[data-run]").evaluate_all("els => els.map(e => e.dataset.run)")
    c.locator(button).click()
    fresh = "".join(f':not([data-run="{run_id}"])' for run_id in old)
    c.locator(f".result[data-run]{fresh} .run-status.status-{status}").wait_for()
    return c


def column(c, name):
    headers = c.locator("table.results thead th").all_inner_texts()
    i = headers.index(name)
    return [r.locator("td").nth(i).inner_text() for r in c.locator("table.results tbody tr").all()]


def table(c):
    """The results table as dicts, in one round trip (column() is one per cell)."""
    return c.locator("table.results").evaluate(
        """t => { const keys = [...t.tHead.rows[0].cells].map(th => th.textContent);
                 return [...t.tBodies[0].rows].map(r => Object.fromEntries(
                   [...r.cells].map((td, i) => [keys[i], td.textContent]))); }""")


def test_page_runs_suites_and_streams_results(page, server, tmp_path):
    # both kinds of suite are listed, with their parameter buttons
    assert card(page, "ops.unary").get_attribute("data-kind") == "test"
    assert card(page, "matmul").get_attribute("data-kind") == "bench"
    assert card(page, "ops.unary").locator('.choice[data-value="workers"]').count() == 1
    assert "broken on purpose" in page.locator("#load-errors").inner_text()

    # a toy suite with known values: three rows, in order
    c = run_and_wait(page, "toy.echo")
    assert column(c, "value") == ["10", "20", "30"]
    assert column(c, "status") == ["pass"] * 3
    assert c.locator(".summary").inner_text().startswith("3 pass")
    assert c.locator("details.log summary").inner_text() == "Log (3 lines)"
    c.locator("details.log summary").click()
    assert "echo n=2 tag=a" in c.locator(".log-lines").inner_text()

    # a built-in parity suite: workers backend, strided views only
    only(page, "ops.unary", "backend", "workers")
    only(page, "ops.unary", "layout", "strided")
    assert card(page, "ops.unary").locator(".combos").inner_text() == "1 combination"
    c = run_and_wait(page, "ops.unary")
    from torchic.testing import family
    assert len(column(c, "case")) == 2 * len(family("unary"))   # two shapes per unary op
    assert set(column(c, "status")) == {"pass"}
    assert all(float(v) < 1e-4 for v in column(c, "max_err"))
    assert c.locator("progress").get_attribute("value") == "1"

    # a built-in benchmark: rows and plot points arrive together
    only(page, "matmul", "impl", "workers")
    card(page, "matmul").locator('.param[data-param="impl"] .choice[data-value="numpy"]').click()
    only(page, "matmul", "threads", "1")
    only(page, "matmul", "size", "64")
    card(page, "matmul").locator('.param[data-param="size"] .choice[data-value="128"]').click()
    c = run_and_wait(page, "matmul")
    # float32 at both sizes, then the float64 twin (its sizes: 64 in quick runs, 1024, 2048)
    assert column(c, "case") == ["matmul", "matmul", "matmul_f64"] * 2
    assert column(c, "impl") == ["workers"] * 3 + ["numpy"] * 3
    assert column(c, "size") == ["64", "128", "64"] * 2
    assert all(float(v) > 0 for v in column(c, "value"))
    assert c.locator("circle.plot-point").count() == 6
    assert c.locator("g.plot-series").count() == 2      # one per impl

    shot = tmp_path / "serve-page.png"
    page.screenshot(path=str(shot), full_page=True)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    print(f"screenshot: {shot}")


def test_plot_fills_in_as_rows_arrive(page):
    c = run_and_wait(page, "toy.plot", button="button.run-all")
    assert len(column(c, "n")) == 8
    assert c.locator("circle.plot-point").count() == 8
    assert c.locator("g.plot-series").count() == 2
    assert c.locator("polyline").count() == 2
    ys = [float(v) for v in c.locator('g.plot-series[data-series="a"] circle').evaluate_all(
        "els => els.map(e => e.dataset.y)")]
    assert ys == [2.0, 8.0, 32.0, 128.0]


def run_ids(server):
    return [r["id"] for r in server.get("/api/runs")[1]["runs"]]


def open_link(page, server, query, outcome="applied"):
    """Open a deep link; wait until the page has applied it (or said why not)."""
    page.goto(server.url + "/" + query)
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector(f"body[data-link={outcome}]")
    # a run started on load would have been requested by now: ask the server after the page
    assert page.evaluate("fetch('/api/runs').then(r => r.status)") == 200


def test_deep_link_preselects_and_waits_for_a_click(page, server):
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    before = run_ids(server)
    open_link(page, server, "?run=toy.echo&n=2,3&tag=b")
    c = card(page, "toy.echo")
    pressed = c.locator('.choice[aria-pressed="true"]').evaluate_all(
        "els => els.map(e => e.closest('.param').dataset.param + '=' + e.dataset.value)")
    assert pressed == ["n=2", "n=3", "tag=b"]
    assert c.locator(".combos").inner_text().startswith("2 combinations")
    assert "click Run" in c.locator(".combos").inner_text()
    # nothing was started: no request, no run on the server, no result in the card
    assert posts == [] and run_ids(server) == before
    assert c.locator(".result[data-run]").count() == 0
    assert c.locator(".card-error").is_hidden()
    # the click runs exactly the linked choices
    c.locator("button.run").click()
    c.locator(".run-status.status-failed").wait_for()      # tag=b has a failing case
    assert column(c, "n") == ["2", "2", "3", "3"]
    assert column(c, "status") == ["pass", "fail", "pass", "fail"]
    assert len(run_ids(server)) == len(before) + 1

    # the same in the fragment form
    open_link(page, server, "#run=toy.slow&steps=40&tag=right")
    assert card(page, "toy.slow").locator('.choice[aria-pressed="true"]').evaluate_all(
        "els => els.map(e => e.dataset.value)") == ["right", "40"]
    assert len(run_ids(server)) == len(before) + 1


def test_errors_are_shown_and_the_server_stays_up(page, server):
    before = run_ids(server)
    # unknown suite (deep link): said in the banner, nothing sent
    open_link(page, server, "?run=no.such.suite", outcome="error")
    banner = page.locator("#banner")
    banner.wait_for()
    assert "unknown suite 'no.such.suite'" in banner.inner_text()

    # bad parameter value or name: said in the suite's card; the good ones still apply
    open_link(page, server, "?run=toy.echo&n=99,2&size=1")
    err = card(page, "toy.echo").locator(".card-error")
    err.wait_for()
    assert "bad value '99' for parameter 'n'" in err.inner_text()
    assert "has no parameter 'size'" in err.inner_text()
    assert card(page, "toy.echo").locator('.param[data-param="n"] .choice[aria-pressed="true"]'
                                          ).all_inner_texts() == ["2"]
    assert run_ids(server) == before

    # a suite that raises: its error is listed, the other combinations still ran
    c = run_and_wait(page, "toy.boom", button="button.run-all", status="failed")
    assert "RuntimeError: boom at x=2" in c.locator(".run-errors").inner_text()
    assert column(c, "status") == ["pass", "error", "pass"]

    # a worker that dies
    c = run_and_wait(page, "toy.crash", status="failed")
    assert "worker process died" in c.locator(".run-errors").inner_text()

    # ... and the server still answers and runs
    assert page.request.get(server.url + "/api/suites").status == 200
    for n in ("1", "3"):    # back from the link's n=2 to all three
        card(page, "toy.echo").locator(f'.param[data-param="n"] .choice[data-value="{n}"]').click()
    c = run_and_wait(page, "toy.echo")
    assert column(c, "value") == ["10", "20", "30"]


def test_stop_button_cancels(page):
    only(page, "toy.slow", "steps", "400")
    only(page, "toy.slow", "tag", "third")
    c = card(page, "toy.slow")
    c.locator("button.run").click()
    c.locator("table.results tbody tr").first.wait_for()
    c.locator("button.stop").click()
    c.locator(".run-status.status-cancelled").wait_for()
    assert c.locator("button.stop").is_disabled()


def test_two_tabs_do_not_mix_results(browser, server, page):
    other = browser.new_page()
    other.goto(server.url + "/")
    other.wait_for_selector("body[data-ready=true]")
    for pg, tag in ((page, "left"), (other, "right")):
        only(pg, "toy.slow", "tag", tag)
        only(pg, "toy.slow", "steps", "40")
    card(page, "toy.slow").locator("button.run").click()
    card(other, "toy.slow").locator("button.run").click()
    for pg, tag in ((page, "left"), (other, "right")):
        c = card(pg, "toy.slow")
        c.locator(".run-status.status-done").wait_for()
        assert column(c, "tag") == [tag] * 40
    other.close()


def test_download_json(page):
    run_and_wait(page, "toy.echo")
    with page.expect_download() as info:
        page.locator("#download").click()
    data = json.loads(open(info.value.path()).read())
    assert data["tool"] == "python -m torchic serve"
    assert data["machine"]["versions"]["torchic"]
    (run,) = data["runs"]
    assert run["suite"] == "toy.echo" and run["status"] == "done"
    assert [r["value"] for r in run["rows"]] == [10, 20, 30]


def test_hidden_banner_and_card_errors_take_no_space(page, server):
    # [hidden] must win over .banner's display: flex, or the empty banner pushes the page down
    banner = page.locator("#banner")
    assert banner.get_attribute("hidden") is not None
    assert banner.evaluate("e => getComputedStyle(e).display") == "none"
    assert banner.bounding_box() is None
    assert card(page, "toy.echo").locator(".card-error").bounding_box() is None
    open_link(page, server, "?run=no.such.suite", outcome="error")
    assert banner.bounding_box()["height"] > 0
    banner.locator(".banner-close").click()
    assert banner.bounding_box() is None


def plot_series(c):
    """[(series, colour)] of every drawn series (one entry per panel it appears in)."""
    return [tuple(x) for x in c.locator("g.plot-series").evaluate_all(
        "els => els.map(e => [e.dataset.series, e.dataset.color])")]


def legend(c):
    return c.locator("ul.plot-legend li").evaluate_all(
        "els => els.map(e => [e.dataset.series, e.dataset.color, e.textContent])")


def assert_honest_plot(c):
    """One colour per series and no colour for two series; the legend lists them all;
    a panel's y axis is logarithmic exactly when its values span more than 20x."""
    drawn = plot_series(c)
    colours = dict(drawn)
    assert len(set(drawn)) == len(colours), "a series changes colour between panels"
    assert len(set(colours.values())) == len(colours), f"a colour is reused: {colours}"
    assert [(s, col) for s, col, _ in legend(c)] == list(colours.items())
    assert [text for _, _, text in legend(c)] == list(colours)      # full names, none cut
    for panel in c.locator("svg.plot-svg").all():
        ys = [float(v) for v in panel.locator("circle.plot-point").evaluate_all(
            "els => els.map(e => e.dataset.y)")]
        assert panel.get_attribute("data-ylog") == str(max(ys) / min(ys) > 20).lower()
    return colours


def test_plot_has_a_colour_per_series_a_full_legend_and_a_panel_per_op(page):
    # 14 series (more than the fixed palette) in two panels, one narrow and one wide
    c = run_and_wait(page, "toy.panels", button="button.run-all")
    panels = c.locator("svg.plot-svg")
    assert panels.evaluate_all("els => els.map(e => e.dataset.panel)") == ["narrow", "wide"]
    colours = assert_honest_plot(c)
    assert list(colours) == [f"s{k}" for k in range(14)]
    wide = c.locator('svg.plot-svg[data-panel="wide"]')
    assert wide.get_attribute("data-ylog") == "true"
    assert c.locator('svg.plot-svg[data-panel="narrow"]').get_attribute("data-ylog") == "false"
    ticks = wide.locator("text.plot-ytick").all_text_contents()
    assert {"0.01", "1", "100"} <= set(ticks), ticks      # decades on the log axis
    for panel in ("narrow", "wide"):
        assert c.locator(f'svg[data-panel="{panel}"] circle.plot-point').count() == 28

    # the built-in elementwise benchmark: one panel per op, series impl · threads
    only(page, "elementwise", "impl", "workers")
    card(page, "elementwise").locator('.param[data-param="impl"] .choice[data-value="numpy"]').click()
    only(page, "elementwise", "threads", "1")
    only(page, "elementwise", "case", "add")
    card(page, "elementwise").locator('.param[data-param="case"] .choice[data-value="exp"]').click()
    only(page, "elementwise", "size", "1K")
    card(page, "elementwise").locator('.param[data-param="size"] .choice[data-value="64K"]').click()
    c = run_and_wait(page, "elementwise")
    assert c.locator("svg.plot-svg").evaluate_all("els => els.map(e => e.dataset.panel)") == \
        ["add", "exp"]
    assert list(assert_honest_plot(c)) == ["workers · t=1", "numpy · t=1"]


def test_combination_count_is_what_runs_and_says_what_is_skipped(page):
    # toy.skips: 3 x 2 selected, (2, y) and (3, y) skipped by its rules
    c = card(page, "toy.skips")
    combos = c.locator(".combos")
    assert combos.inner_text() == ("4 combinations · 2 skipped: no y at a=2 (1); "
                                   "a=3 runs once (1)")
    run_and_wait(page, "toy.skips")
    assert column(c, "a") == ["1", "1", "2", "3"] and column(c, "b") == ["x", "y", "x", "x"]
    assert c.locator(".skip-note").inner_text() == ("2 combinations skipped: no y at a=2 (1); "
                                                    "a=3 runs once (1)")
    # with only b=y chosen, y is the first b: a=3 runs
    only(page, "toy.skips", "b", "y")
    assert combos.inner_text() == "2 combinations · 1 skipped: no y at a=2 (1)"
    run_and_wait(page, "toy.skips")
    assert column(c, "a") == ["1", "3"]
    assert c.locator(".progress-text").inner_text() == "2/2"

    # a built-in benchmark whose cases have their own sizes: reduce's sum and softmax
    only(page, "reduce", "impl", "workers")
    only(page, "reduce", "threads", "1")
    only(page, "reduce", "case", "sum")
    card(page, "reduce").locator('.param[data-param="case"] .choice[data-value="softmax"]').click()
    only(page, "reduce", "size", "4K")
    card(page, "reduce").locator('.param[data-param="size"] .choice[data-value="64x256"]').click()
    c = card(page, "reduce")
    assert c.locator(".combos").inner_text() == (
        "2 combinations · 2 skipped: sum is not measured at this size (1); "
        "softmax is not measured at this size (1)")
    run_and_wait(page, "reduce")
    assert column(c, "case") == ["sum", "softmax"] and column(c, "size") == ["4K", "64x256"]
    assert len(column(c, "case")) == int(c.locator(".combos").get_attribute("data-runs"))


def test_shared_descriptions_are_said_once_and_code_is_rendered(page):
    benches = page.locator("#benches")
    text = benches.inner_text()
    assert text.count("medians after warm-up") == 1, text
    assert "`" not in text
    shared = benches.locator(".section-desc")
    assert shared.locator("code").all_inner_texts() == ["python -m torchic bench", "code"]
    assert "Matmul GFLOPS" in shared.inner_text() and "Toy skips, Toy plain" in shared.inner_text()
    assert card(page, "matmul").locator(".desc").count() == 0
    assert "`" not in page.locator("#tests").inner_text()


def test_run_all_tests_summary_matrix_links_to_failing_rows(page, server):
    test_suites = [s for s in server.get("/api/suites")[1]["suites"] if s["kind"] == "test"]
    page.locator("#run-all-tests").click()
    summary = page.locator("#summary")
    summary.wait_for()
    page.wait_for_function(
        "n => { const rows = document.querySelectorAll('#summary tbody tr');"
        "  return rows.length === n && [...rows].every(r => "
        "    ['done', 'failed', 'error'].includes(r.querySelector('.badge').textContent)); }",
        arg=len(test_suites), timeout=600_000)
    # the summary is the page's first section: above every suite card
    assert page.evaluate("document.querySelector('main').firstElementChild.id") == "summary"
    assert summary.locator("tbody tr").evaluate_all("els => els.map(e => e.dataset.suite)") == \
        [s["name"] for s in test_suites]
    # every cell counts its suite's rows of that backend, as the card's table shows them
    cells = summary.locator("tbody td[data-backend]").evaluate_all(
        "els => els.map(e => [e.closest('tr').dataset.suite, e.dataset.backend, e.textContent])")
    tables = {}
    for suite, backend, text in cells:
        if suite not in tables:
            tables[suite] = table(card(page, suite))
        statuses = [r["status"] for r in tables[suite]
                    if r.get("backend", "(no backend)") == backend]
        fails = sum(s in ("fail", "error", "mismatch") for s in statuses)
        parts = [f"{statuses.count('pass')} pass"] if statuses else ["–"]
        parts += [f"{fails} fail"] if fails else []
        parts += [f"{statuses.count('skip')} skip"] if "skip" in statuses else []
        assert text == " · ".join(parts), (suite, backend, text, statuses)
    assert summary.locator('tr[data-suite="ops.unary"] td[data-backend="workers"]'
                           ).inner_text().endswith("pass")
    # toy.echo fails on purpose (tag=b): its fail count links to those rows
    link = summary.locator('tr[data-suite="toy.echo"] a.n-fail')
    assert link.inner_text() == "3 fail"
    link.click()
    flashed = page.locator("tr.flash")
    assert flashed.count() == 3
    assert flashed.evaluate_all("els => els.map(e => e.closest('.suite').dataset.suite)") == \
        ["toy.echo"] * 3
    assert flashed.evaluate_all("els => els.map(e => e.querySelector('.col-status').textContent)"
                                ) == ["fail"] * 3
    assert link.get_attribute("href") == "#" + flashed.first.get_attribute("id")
    assert flashed.first.is_visible()
    box, view = flashed.first.bounding_box(), page.viewport_size
    assert 0 <= box["y"] <= view["height"], box          # scrolled to


# -- issue 44: a newcomer reads the page -------------------------------------------------------
OKABE_ITO_AND_TOL = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
                     "#332288", "#117733", "#882255", "#999933", "#AA4499"}


def test_run_buttons_say_what_they_do_and_titles_are_not_repeated(page):
    for c in page.locator(".suite").all():
        assert "selected" in c.locator("button.run").get_attribute("title")
        assert "every value" in c.locator("button.run-all").get_attribute("title")
        head = c.locator("h3")
        title = head.inner_text().lower().replace(" ", "")
        for code in head.locator("code").all_inner_texts():   # a subtitle that adds something
            assert code.split(".")[-1].lower() not in title.replace(code.lower(), ""), title


def test_plot_series_have_safe_colours_and_their_own_markers(page):
    c = run_and_wait(page, "toy.plot", button="button.run-all")
    series = c.locator("g.plot-series").evaluate_all(
        "els => els.map(e => [e.dataset.series, e.dataset.color, e.dataset.marker])")
    assert len(series) == 2
    assert {s[1] for s in series} <= OKABE_ITO_AND_TOL, series
    assert len({s[2] for s in series}) == 2, series             # a marker each
    assert c.locator("g.plot-series .plot-marker").count() >= 4  # the square series' points
    assert c.locator("polyline[stroke-dasharray]").count() == 2
    markers = c.locator("ul.plot-legend li").evaluate_all("els => els.map(e => e.dataset.marker)")
    assert sorted(markers) == sorted(s[2] for s in series)
