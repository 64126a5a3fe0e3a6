// The torchic test & benchmark page: suites as cards of parameter buttons; runs stream
// their events over Server-Sent Events into a table, a plot, a log panel and a progress bar.
//
// Each tab listens only to the runs it started (one EventSource per run, by run id), so
// two tabs never mix results. Deep link: /?run=SUITE&param=v1,v2 preselects those choices
// and waits for a click on Run (any web page can open such a URL: loading never starts work).
"use strict";

(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const state = {catalog: null, runs: [], views: new Map() /* suite -> RunView */};
  const summary = {views: [], pending: false};    // the runs of the latest "Run all tests"
  const FAILING = ["fail", "error", "mismatch"];

  // ---------------------------------------------------------------- helpers
  function h(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) {
      if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }

  function fmt(v) {
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return String(v);
      if (Number.isInteger(v)) return Math.abs(v) >= 1e5 ? v.toLocaleString("en") : String(v);
      const a = Math.abs(v);
      if (a === 0) return "0";
      if (a >= 1000) return Math.round(v).toLocaleString("en");
      if (a >= 0.01) return String(+v.toPrecision(4));
      return v.toExponential(2);
    }
    if (v === null || v === undefined) return "";
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }

  // A description's `code` spans as <code> elements (the rest as text)
  function richText(text) {
    return String(text).split(/`([^`]*)`/).map((part, i) => (i % 2 ? h("code", {}, part) : part));
  }

  function fmtSeconds(s) {
    if (typeof s !== "number") return "";
    return s >= 1 ? `${+s.toFixed(2)} s` : `${+(s * 1e3).toPrecision(3)} ms`;
  }

  async function api(method, path, body) {
    const opts = {method, headers: {}};
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, opts);
    } catch (err) {
      throw new Error(`the server did not answer (${err.message}); is it still running?`);
    }
    let data = null;
    try { data = await res.json(); } catch (_) { /* not JSON */ }
    if (!res.ok) {
      const msg = (data && data.error) || `${res.status} ${res.statusText}`;
      const e = new Error(msg);
      e.status = res.status;
      throw e;
    }
    return data;
  }

  function banner(message, kind) {
    const b = $("#banner");
    if (!message) { b.hidden = true; b.textContent = ""; return; }
    b.className = "banner " + (kind || "error");
    b.replaceChildren(h("span", {class: "banner-text"}, message),
                      h("button", {class: "banner-close", title: "dismiss",
                                   onclick: () => banner(null)}, "×"));
    b.hidden = false;
  }

  // ---------------------------------------------------------------- suite cards
  function paramRow(suite, p) {
    const buttons = p.choices.map(c => {
      const key = String(c);
      const why = p.disabled[key];
      return h("button", {
        class: "choice", type: "button", "data-value": key,
        "aria-pressed": String(p.default.some(d => String(d) === key)),
        disabled: why ? true : null,
        title: why ? `unavailable: ${why}` : "click: toggle · double-click: only this one",
        onclick: ev => { toggle(ev.currentTarget); updateCount(ev.currentTarget.closest(".suite")); },
        ondblclick: ev => { solo(ev.currentTarget); updateCount(ev.currentTarget.closest(".suite")); },
      }, p.labels[key] || key);
    });
    return h("div", {class: "param", "data-param": p.name},
             h("span", {class: "param-name"}, p.name), h("span", {class: "choices"}, buttons));
  }

  function toggle(btn) {
    btn.setAttribute("aria-pressed", String(btn.getAttribute("aria-pressed") !== "true"));
  }

  function solo(btn) {
    for (const b of btn.parentElement.querySelectorAll(".choice")) {
      b.setAttribute("aria-pressed", String(b === btn));
    }
  }

  function selected(card, all) {
    const params = {};
    for (const row of card.querySelectorAll(".param")) {
      const suite = findSuite(card.dataset.suite);
      const p = suite.params.find(q => q.name === row.dataset.param);
      params[p.name] = all ? [...p.run_all] : p.choices.filter(c => {
        const b = row.querySelector(`.choice[data-value="${CSS.escape(String(c))}"]`);
        return b.getAttribute("aria-pressed") === "true";
      });
    }
    return params;
  }

  // The suite's skip rules, as registry.skip_reason applies them: the first rule whose
  // every "when" parameter has one of its values (and, with unless_first, whose value of
  // that parameter is not the first selected) says why a combination does not run.
  function skipReason(rules, combo, sel) {
    for (const rule of rules || []) {
      const hit = Object.entries(rule.when).every(([k, vs]) =>
        k in combo && vs.some(v => String(v) === String(combo[k])));
      if (!hit) continue;
      const first = rule.unless_first;
      if (first && sel[first] && sel[first].length && String(combo[first]) === String(sel[first][0])) continue;
      return rule.why;
    }
    return null;
  }

  // {runs, skipped: Map why -> count} of a selection {name: [choices]}
  function plan(suite, sel) {
    let combos = [{}];
    for (const [k, vs] of Object.entries(sel)) {
      combos = combos.flatMap(c => vs.map(v => Object.assign({}, c, {[k]: v})));
    }
    const skipped = new Map();
    let runs = 0;
    for (const c of combos) {
      const why = skipReason(suite.skip, c, sel);
      if (why === null) runs++;
      else skipped.set(why, (skipped.get(why) || 0) + 1);
    }
    return {runs, skipped};
  }

  // "3 skipped: why (2); other why (1)"
  function skippedText(skipped, noun) {
    const n = [...skipped.values()].reduce((a, b) => a + b, 0);
    return `${n} ${noun || ""}${noun ? " " : ""}skipped: ` +
      [...skipped].map(([why, k]) => `${why} (${k})`).join("; ");
  }

  function updateCount(card) {
    const {runs, skipped} = plan(findSuite(card.dataset.suite), selected(card, false));
    const el = $(".combos", card);
    el.dataset.runs = String(runs);
    el.textContent = `${runs} combination${runs === 1 ? "" : "s"}` +
      (skipped.size ? ` · ${skippedText(skipped)}` : "");
  }

  function findSuite(name) {
    return state.catalog && state.catalog.suites.find(s => s.name === name);
  }

  function titleSays(title, name) {
    const norm = t => t.toLowerCase().replace(/[^a-z0-9]/g, "");
    return norm(title).includes(norm(name.split(".").pop()));
  }

  function card(suite, shared) {
    const c = h("article", {class: "suite", "data-suite": suite.name, "data-kind": suite.kind,
                            id: "suite-" + suite.name},
      h("header", {class: "suite-head"},
        // the suite's name as a subtitle only where the title does not already say it
        h("h3", {title: suite.name}, suite.title,
          titleSays(suite.title, suite.name) ? null : [" ", h("code", {}, suite.name)]),
        suite.description && !shared.has(suite.description)
          ? h("p", {class: "desc"}, richText(suite.description)) : null),
      h("div", {class: "params"}, suite.params.map(p => paramRow(suite, p))),
      h("div", {class: "controls"},
        h("button", {class: "run primary", type: "button",
                     title: "run every combination of the values selected above",
                     onclick: () => startRun(suite.name, selected(c, false))}, "Run"),
        h("button", {class: "run-all", type: "button",
                     title: "run every value of every parameter, whatever is selected",
                     onclick: () => startRun(suite.name, selected(c, true))}, "Run all"),
        h("button", {class: "stop", type: "button", disabled: true,
                     onclick: () => stopRun(suite.name)}, "Stop"),
        h("span", {class: "combos"})),
      h("div", {class: "card-error", role: "alert", hidden: true}));
    const old = state.views.get(suite.name);
    c.append(old ? old.root : h("div", {class: "result", hidden: true}));
    if (old) old.attach(c);
    updateCount(c);
    return c;
  }

  function cardError(name, message) {
    const c = document.querySelector(`.suite[data-suite="${CSS.escape(name)}"]`);
    if (!c) { banner(message); return; }
    const e = $(".card-error", c);
    if (!message) { e.hidden = true; e.textContent = ""; return; }
    e.textContent = message;
    e.hidden = false;
  }

  function render(catalog) {
    state.catalog = catalog;
    const m = catalog.machine || {};
    const cpu = m.cpu || {}, v = m.versions || {};
    const backends = Object.entries(catalog.backends || {}).map(([name, b]) =>
      h("span", {class: "backend " + (b.available ? "ok" : "off"),
                 title: b.available ? `available: ${(b.platform || {}).kernels || "?"}` : b.reason}, name));
    $("#machine").replaceChildren(
      h("span", {}, `${cpu.model || "?"} · ${cpu.usable_cores || "?"} cores · `),
      h("span", {}, `python ${v.python || "?"} · numpy ${v.numpy || "?"} · torchic ${v.torchic || "?"}` +
                    (v.torchic_git ? ` (${v.torchic_git})` : "") + " · backends: "),
      ...backends);
    const errs = catalog.errors || [];
    $("#load-errors").replaceChildren(...errs.map(e => h("details", {class: "load-error"},
      h("summary", {}, `suite file ${e.source || e.module} failed to load: ${e.error}`),
      h("pre", {}, e.traceback || ""))));
    for (const kind of ["test", "bench"]) {
      const list = catalog.suites.filter(s => s.kind === kind);
      const section = $(kind === "test" ? "#tests" : "#benches");
      // a description several cards share is said once, above them
      const by = new Map();
      for (const s of list) if (s.description) by.set(s.description, [...(by.get(s.description) || []), s]);
      const shared = new Map([...by].filter(([, ss]) => ss.length > 1));
      const desc = $(".section-desc", section);
      desc.replaceChildren(...[...shared].map(([text, ss]) => h("span", {class: "shared-desc"},
        ss.length === list.length ? "" : ss.map(s => s.title).join(", ") + ": ", richText(text), h("br"))));
      desc.hidden = !shared.size;
      $(".suites", section).replaceChildren(...(list.length ? list.map(s => card(s, shared))
                                                           : [h("p", {class: "empty"}, "no suites")]));
    }
  }

  // ---------------------------------------------------------------- runs
  class RunView {
    constructor(suite, run) {
      this.suite = suite;
      this.run = run;
      this.rows = [];
      this.logs = [];
      this.errors = [];
      this.status = run.status;
      this.counts = {};
      this.total = run.total;
      this.startedAt = Date.now();
      this.source = null;
      this.root = h("div", {class: "result", "data-run": run.id});
      this.build();
    }

    build() {
      const s = this.suite;
      this.badge = h("span", {class: "badge status-queued run-status"}, "queued");
      this.summary = h("span", {class: "summary"});
      this.bar = h("progress", {max: 1, value: 0});
      this.ptext = h("span", {class: "progress-text"});
      this.thead = h("thead");
      this.tbody = h("tbody");
      this.logPre = h("pre", {class: "log-lines"});
      this.logCount = h("span", {class: "count"}, "0");
      this.errList = h("div", {class: "run-errors"});
      this.skipNote = h("p", {class: "skip-note", hidden: true});
      this.columns = s.columns ? [...s.columns] : [];
      this.plotBox = s.plot ? h("div", {class: "plot"}) : null;
      this.root.replaceChildren(...[
        h("div", {class: "status-line"}, this.badge, h("code", {class: "run-id"}, this.run.id),
          this.bar, this.ptext, this.summary),
        this.skipNote,
        this.errList,
        this.plotBox,
        h("div", {class: "table-wrap"}, h("table", {class: "results"}, this.thead, this.tbody)),
        h("details", {class: "log"}, h("summary", {}, "Log (", this.logCount, " lines)"),
          this.logPre)].filter(Boolean));
      if (s.plot) {
        this.plot = new window.LinePlot(this.plotBox, {
          xlog: !!s.plot.xlog, xlabel: s.plot.xlabel || s.plot.x, ylabel: s.plot.ylabel || s.plot.y});
        this.plot.update([]);
      }
      this.renderHead();
    }

    attach(cardEl) { this.card = cardEl; this.syncButtons(); }

    renderHead() {
      this.thead.replaceChildren(h("tr", {}, this.columns.map(c => h("th", {}, c))));
    }

    listen() {
      this.source = new EventSource(`/api/runs/${this.run.id}/events`);
      this.source.onmessage = ev => {
        let e;
        try { e = JSON.parse(ev.data); } catch (_) { return; }
        this.handle(e);
      };
      this.source.onopen = () => { this.retries = 0; };
      this.source.onerror = () => {
        // EventSource reconnects by itself and the server replays after Last-Event-ID;
        // give up (and say so) when the server stays away
        if (!this.source) return;
        this.retries = (this.retries || 0) + 1;
        if (this.ended || this.source.readyState === EventSource.CLOSED || this.retries > 5) {
          this.source.close();
          this.source = null;
          if (!this.ended) {
            this.ended = true;
            this.setStatus("disconnected", "lost the connection to the server; is it still running?");
          }
        }
      };
    }

    handle(e) {
      switch (e.type) {
        case "queued":
          this.setStatus("queued", e.position > 0 ? `waiting for ${e.position} run(s)` : "");
          break;
        case "running": this.setStatus("running"); break;
        case "start": this.started(e); break;
        case "progress": this.progress(e.done, e.total, e.label); break;
        case "row": this.addRow(e.row); break;
        case "log": this.addLog(e.text, e.stream); break;
        case "error": this.addError(e); break;
        case "end": this.end(e); break;
        default: break;
      }
    }

    setStatus(status, note) {
      this.status = status;
      this.badge.className = `badge run-status status-${status}`;
      this.badge.textContent = status;
      if (note !== undefined) this.ptext.textContent = note;
      this.syncButtons();
      if (summary.views.includes(this)) summaryChanged();
    }

    syncButtons() {
      if (!this.card) return;
      const active = !this.ended;
      $(".stop", this.card).disabled = !active;
      this.card.classList.toggle("busy", active);
    }

    started(e) {
      this.total = e.total;
      this.progress(0, e.total);
      const skipped = new Map();
      for (const s of e.skipped || []) skipped.set(s.why, (skipped.get(s.why) || 0) + 1);
      this.skipNote.textContent = skipped.size ? skippedText(skipped, "combinations") : "";
      this.skipNote.hidden = !skipped.size;
    }

    progress(done, total, label) {
      if (!total) return;
      this.bar.max = total;
      this.bar.value = done;
      this.ptext.textContent = `${Math.floor(done)}/${total}` + (label ? ` · ${label}` : "");
    }

    addRow(row) {
      this.rows.push(row);
      if (!this.suite.columns) {
        let grew = false;
        for (const k of Object.keys(row)) {
          if (!this.columns.includes(k)) { this.columns.push(k); grew = true; }
        }
        if (grew) {
          this.renderHead();
          for (let i = 0; i < this.tbody.children.length; i++) {
            this.tbody.children[i].replaceWith(this.rowEl(this.rows[i], i));
          }
        }
      }
      this.tbody.append(this.rowEl(row, this.rows.length - 1));
      if (row.status) this.counts[row.status] = (this.counts[row.status] || 0) + 1;
      this.summary.textContent = Object.entries(this.counts).map(([k, v]) => `${v} ${k}`).join(" · ");
      if (this.plot) this.schedulePlot();
      if (summary.views.includes(this)) summaryChanged();
    }

    // a failing row has an id, the target of the summary's links
    rowId(i) { return `row-${this.run.id}-${i}`; }

    rowEl(row, i) {
      const status = row.status ? String(row.status) : "";
      return h("tr", {class: status ? `row-${status}` : null,
                      id: FAILING.includes(status) ? this.rowId(i) : null},
               this.columns.map(c => h("td", {class: `col-${c}` + (c === "status" ? ` status-${status}` : ""),
                                              title: c === "message" ? fmt(row[c]) : null},
                                       fmt(row[c]))));
    }

    schedulePlot() {
      if (this.plotPending) return;
      this.plotPending = true;
      requestAnimationFrame(() => { this.plotPending = false; this.drawPlot(); });
    }

    drawPlot() {
      const p = this.suite.plot;
      const series = (p.series || []).filter(k => k !== p.panel);
      this.plot.update(this.rows.filter(r => !r.status || ["ok", "pass"].includes(r.status))
        .map(r => ({series: series.filter(k => r[k] !== "-" && r[k] !== undefined && r[k] !== null)
                                  .map(k => (k === "threads" ? `t=${r[k]}` : r[k])).join(" · ") || "value",
                    panel: p.panel ? r[p.panel] : null,
                    x: Number(r[p.x]), y: Number(r[p.y])})));
    }

    addLog(text, stream) {
      this.logs.push({text, stream: stream || "run"});
      const line = (stream === "stderr" ? "│ " : "") + text + "\n";
      this.logPre.append(line);
      this.logCount.textContent = String(this.logs.length);
      if (this.logPre.parentElement.open) this.logPre.scrollTop = this.logPre.scrollHeight;
    }

    addError(e) {
      this.errors.push(e);
      const where = e.combination ? " (" + Object.entries(e.combination).map(([k, v]) => `${k}=${v}`).join(" ") + ")" : "";
      this.errList.append(h("details", {class: "run-error"},
        h("summary", {}, (e.message || "error") + where),
        e.traceback ? h("pre", {}, e.traceback) : null));
    }

    end(e) {
      this.ended = true;
      this.elapsed = e.elapsed_s;
      if (this.source) { this.source.close(); this.source = null; }
      if (e.counts) this.counts = Object.assign({}, e.counts);
      this.summary.textContent = Object.entries(this.counts).map(([k, v]) => `${v} ${k}`).join(" · ") +
        (e.elapsed_s !== undefined ? ` · ${fmtSeconds(e.elapsed_s)}` : "");
      this.setStatus(e.status || "done");
      if (this.total) this.progress(e.status === "done" || e.status === "failed" ? this.total : this.bar.value, this.total);
      if (this.plot) this.drawPlot();
      if (summary.views.includes(this)) summaryChanged();
      document.dispatchEvent(new CustomEvent("torchic:run-end", {detail: {id: this.run.id, status: e.status}}));
    }

    toJSON() {
      return {id: this.run.id, suite: this.suite.name, kind: this.suite.kind,
              params: this.run.params, status: this.status, total: this.total,
              elapsed_s: this.elapsed, counts: this.counts, rows: this.rows,
              errors: this.errors, logs: this.logs.map(l => l.text)};
    }
  }

  async function startRun(name, params) {
    cardError(name, null);
    let run;
    try {
      run = await api("POST", "/api/runs", {suite: name, params});
    } catch (err) {
      cardError(name, `Cannot run ${name}: ${err.message}`);
      return null;
    }
    if (!findSuite(name)) await load(true);   // a suite file dropped in after the page loaded
    const suite = findSuite(name) || {name, kind: run.kind, params: [], columns: null, plot: null};
    const view = new RunView(suite, run);
    const prev = state.views.get(name);
    state.views.set(name, view);
    state.runs.push(view);
    const c = document.querySelector(`.suite[data-suite="${CSS.escape(name)}"]`);
    if (prev && prev.root.isConnected) prev.root.replaceWith(view.root);
    else if (c) $(".result", c).replaceWith(view.root);
    else $("main").append(view.root);
    view.attach(c);
    view.listen();
    return run.id;
  }

  async function stopRun(name) {
    const view = state.views.get(name);
    if (!view || view.ended) return;
    try {
      await api("POST", `/api/runs/${view.run.id}/cancel`, {});
    } catch (err) {
      cardError(name, `Cannot stop the run: ${err.message}`);
    }
  }

  async function runAllTests() {
    summary.views = [];
    $("#summary").hidden = false;
    summaryChanged();
    for (const s of state.catalog.suites.filter(x => x.kind === "test")) {
      const c = document.querySelector(`.suite[data-suite="${CSS.escape(s.name)}"]`);
      if (await startRun(s.name, selected(c, true))) summary.views.push(state.views.get(s.name));
      summaryChanged();
    }
  }

  // ---------------------------------------------------------------- the Run-all-tests summary
  // One row per test suite (an op family), one column per backend: the pass / fail / skip
  // counts of the rows of the latest "Run all tests"; a fail count links to its failing
  // rows (the first is scrolled to, all of them are outlined).
  function summaryChanged() {
    if (summary.pending) return;
    summary.pending = true;
    requestAnimationFrame(() => { summary.pending = false; renderSummary(); });
  }

  const NO_BACKEND = "(no backend)";

  function cellsOf(view) {
    const cells = new Map();     // backend -> {pass, fail, skip, failing: [row index]}
    view.rows.forEach((r, i) => {
      const b = r.backend === undefined ? NO_BACKEND : String(r.backend);
      if (!cells.has(b)) cells.set(b, {pass: 0, fail: 0, skip: 0, failing: []});
      const c = cells.get(b);
      if (r.status === "pass" || r.status === "ok") c.pass++;
      else if (r.status === "skip") c.skip++;
      else if (FAILING.includes(r.status)) { c.fail++; c.failing.push(i); }
    });
    return cells;
  }

  function showFailing(view, indices) {
    for (const tr of document.querySelectorAll("tr.flash")) tr.classList.remove("flash");
    const trs = indices.map(i => document.getElementById(view.rowId(i))).filter(Boolean);
    for (const tr of trs) tr.classList.add("flash");
    if (trs.length) trs[0].scrollIntoView({block: "center"});
  }

  function renderSummary() {
    const box = $("#summary");
    const known = Object.keys((state.catalog && state.catalog.backends) || {});
    const per = summary.views.map(v => [v, cellsOf(v)]);
    const cols = [...new Set(per.flatMap(([, cells]) => [...cells.keys()]))].sort((a, b) =>
      (known.includes(a) ? known.indexOf(a) : known.length) - (known.includes(b) ? known.indexOf(b) : known.length));
    const total = {pass: 0, fail: 0, skip: 0};
    const body = per.map(([v, cells]) => h("tr", {"data-suite": v.suite.name},
      h("th", {}, h("a", {href: `#suite-${v.suite.name}`}, v.suite.title || v.suite.name)),
      cols.map(b => {
        const c = cells.get(b);
        if (!c) return h("td", {"data-backend": b}, h("span", {class: "n-none"}, "–"));
        for (const k of ["pass", "fail", "skip"]) total[k] += c[k];
        return h("td", {"data-backend": b, class: c.fail ? "cell-fail" : null},
          h("span", {class: "n-pass"}, `${c.pass} pass`),
          c.fail ? [" · ", h("a", {class: "n-fail", href: `#${v.rowId(c.failing[0])}`,
                                   title: "show the failing rows",
                                   onclick: ev => { ev.preventDefault(); showFailing(v, c.failing); }},
                           `${c.fail} fail`)] : null,
          c.skip ? [" · ", h("span", {class: "n-skip"}, `${c.skip} skip`)] : null);
      }),
      h("td", {}, h("span", {class: `badge status-${v.status}`}, v.status))));
    const done = summary.views.filter(v => v.ended).length;
    box.replaceChildren(
      h("h2", {}, "Run all tests ", h("small", {class: "matrix-total"},
        `${total.pass} pass · ${total.fail} fail · ${total.skip} skip · ` +
        `${done}/${summary.views.length} suites finished`)),
      h("table", {class: "matrix"},
        h("thead", {}, h("tr", {}, h("th", {}, "op family"), cols.map(b => h("th", {}, b)),
                         h("th", {}, "run"))),
        h("tbody", {}, body)));
  }

  function download() {
    const data = {tool: "python -m torchic serve", created: new Date().toISOString(),
                  page: location.href, machine: state.catalog && state.catalog.machine,
                  backends: state.catalog && state.catalog.backends,
                  runs: state.runs.map(v => v.toJSON())};
    const blob = new Blob([JSON.stringify(data, null, 2)], {type: "application/json"});
    const a = h("a", {href: URL.createObjectURL(blob),
                      download: `torchic-results-${data.created.replace(/[:.]/g, "-")}.json`});
    document.body.append(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }

  async function load(reload) {
    try {
      const catalog = reload ? await api("POST", "/api/suites/reload", {})
                             : await api("GET", "/api/suites");
      render(catalog);
      document.body.dataset.ready = "true";
      return catalog;
    } catch (err) {
      banner(`Cannot list the suites: ${err.message}`);
      document.body.dataset.ready = "error";
      return null;
    }
  }

  // A link value names a choice as the server would accept it: "True" for true, "1.0" for 1
  function sameChoice(choice, text) {
    if (choice === text) return true;
    if (["true", "false"].includes(choice)) return choice === text.toLowerCase();
    return text.trim() !== "" && !Number.isNaN(Number(text)) && Number(choice) === Number(text);
  }

  // The deep link only fills in the card (selected choices, scrolled to, Run focused);
  // what cannot be applied is said in the card. Nothing is sent to the server.
  function deepLink() {
    const q = new URLSearchParams(location.search || location.hash.replace(/^#/, ""));
    const name = q.get("run");
    if (!name) return;
    const c = findSuite(name) &&
      document.querySelector(`.suite[data-suite="${CSS.escape(name)}"]`);
    if (!c) {
      const known = state.catalog.suites.map(s => s.name).join(", ") || "none";
      banner(`The link asks for unknown suite '${name}'; known suites: ${known}`);
      document.body.dataset.link = "error";
      return;
    }
    const problems = [];
    for (const [k, v] of q) {
      if (k === "run") continue;
      const row = c.querySelector(`.param[data-param="${CSS.escape(k)}"]`);
      if (!row) { problems.push(`suite '${name}' has no parameter '${k}'`); continue; }
      const buttons = [...row.querySelectorAll(".choice")];
      const wanted = v.split(",").filter(x => x !== "");
      const picked = buttons.filter(b => !b.disabled &&
                                         wanted.some(w => sameChoice(b.dataset.value, w)));
      for (const w of wanted) {
        const b = buttons.find(x => sameChoice(x.dataset.value, w));
        if (!b) problems.push(`bad value '${w}' for parameter '${k}'`);
        else if (b.disabled) problems.push(`'${w}' of '${k}' is ${b.title}`);
      }
      if (!picked.length) continue;      // nothing usable: the card's defaults stay
      for (const b of buttons) b.setAttribute("aria-pressed", String(picked.includes(b)));
    }
    updateCount(c);
    c.classList.add("linked");
    $(".combos", c).textContent += " · preselected by the link: click Run to start";
    if (problems.length) {
      cardError(name, `The link's choices were not all applied: ${problems.join("; ")}`);
    }
    c.scrollIntoView({block: "start"});
    $("button.run", c).focus();
    document.body.dataset.link = "applied";
  }

  document.addEventListener("DOMContentLoaded", async () => {
    $("#run-all-tests").addEventListener("click", runAllTests);
    $("#reload").addEventListener("click", () => load(true));
    $("#download").addEventListener("click", download);
    if (await load(false)) deepLink();
  });

  window.torchicServe = {state, startRun, stopRun, download, load};
})();
