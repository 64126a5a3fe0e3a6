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

  function updateCount(card) {
    let n = 1;
    for (const vs of Object.values(selected(card, false))) n *= vs.length;
    $(".combos", card).textContent = `${n} combination${n === 1 ? "" : "s"}`;
  }

  function findSuite(name) {
    return state.catalog && state.catalog.suites.find(s => s.name === name);
  }

  function card(suite) {
    const c = h("article", {class: "suite", "data-suite": suite.name, "data-kind": suite.kind,
                            id: "suite-" + suite.name},
      h("header", {class: "suite-head"},
        h("h3", {}, suite.title, " ", h("code", {}, suite.name)),
        suite.description ? h("p", {class: "desc"}, suite.description) : null),
      h("div", {class: "params"}, suite.params.map(p => paramRow(suite, p))),
      h("div", {class: "controls"},
        h("button", {class: "run primary", type: "button",
                     onclick: () => startRun(suite.name, selected(c, false))}, "Run"),
        h("button", {class: "run-all", type: "button",
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
      const box = $(kind === "test" ? "#tests .suites" : "#benches .suites");
      box.replaceChildren(...(list.length ? list.map(card)
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
      this.columns = s.columns ? [...s.columns] : [];
      this.plotBox = s.plot ? h("div", {class: "plot"}) : null;
      this.root.replaceChildren(...[
        h("div", {class: "status-line"}, this.badge, h("code", {class: "run-id"}, this.run.id),
          this.bar, this.ptext, this.summary),
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
        case "start": this.total = e.total; this.progress(0, e.total); break;
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
    }

    syncButtons() {
      if (!this.card) return;
      const active = !this.ended;
      $(".stop", this.card).disabled = !active;
      this.card.classList.toggle("busy", active);
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
            this.tbody.children[i].replaceWith(this.rowEl(this.rows[i]));
          }
        }
      }
      this.tbody.append(this.rowEl(row));
      if (row.status) this.counts[row.status] = (this.counts[row.status] || 0) + 1;
      this.summary.textContent = Object.entries(this.counts).map(([k, v]) => `${v} ${k}`).join(" · ");
      if (this.plot) this.schedulePlot();
    }

    rowEl(row) {
      const status = row.status ? String(row.status) : "";
      return h("tr", {class: status ? `row-${status}` : null},
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
      const series = p.series || [];
      this.plot.update(this.rows.filter(r => !r.status || ["ok", "pass"].includes(r.status))
        .map(r => ({series: series.map(k => (k === "threads" && r[k] !== "-" ? `t=${r[k]}` : r[k]))
                                     .join(" · ") || "value",
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
    for (const s of state.catalog.suites.filter(x => x.kind === "test")) {
      const c = document.querySelector(`.suite[data-suite="${CSS.escape(s.name)}"]`);
      await startRun(s.name, selected(c, true));
    }
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
