// A small SVG line plot: y against x per series, one panel per value of opts.panel's key.
// No dependencies.
//
//   const p = new LinePlot(container, {xlabel: "n", ylabel: "GFLOPS", xlog: true});
//   p.update([{series: "workers t=1", panel: "add", x: 128, y: 40.2}, ...]);  // redraws all
//
// So that the plot cannot mislead: every series of the plot has its own colour (a fixed
// palette, then golden-angle hues), the same in every panel; the legend (HTML, under the
// panels) lists every series; each panel has its own y axis, logarithmic when its values
// span more than LOG_RATIO (as the bench's PNGs, bench/plots.py). Points carry a <title>
// (hover shows the value) and data attributes, so tests can count them.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  // colour-blind-safe: Okabe & Ito's palette (its yellow left out: too pale on white), then
  // Paul Tol's "muted" scheme; no two entries are near-identical for any colour vision
  const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
                   "#332288", "#117733", "#882255", "#999933", "#AA4499"];
  // every series also has its own marker and dash, so colour is never the only cue and a line
  // under another still shows its points
  const MARKERS = ["circle", "square", "triangle", "diamond", "triangle-down", "cross", "plus"];
  const DASHES = ["", "6 3", "2 3", "8 3 2 3"];
  const MARKER_D = {
    square: "M-3.2,-3.2h6.4v6.4h-6.4z",
    triangle: "M0,-4.4L3.9,2.6H-3.9z",
    diamond: "M0,-4.5L4.5,0L0,4.5L-4.5,0z",
    "triangle-down": "M0,4.4L3.9,-2.6H-3.9z",
    cross: "M-3.5,-3.5L3.5,3.5M-3.5,3.5L3.5,-3.5",
    plus: "M-4,0H4M0,-4V4",
  };
  const GOLDEN_ANGLE = 137.508;
  const LOG_RATIO = 20;        // max / min above which a panel's y axis is logarithmic

  // the i-th colour of a plot: the palette, then hues a golden angle apart (never equal)
  function colorAt(i) {
    if (i < PALETTE.length) return PALETTE[i];
    const k = i - PALETTE.length;
    const light = [42, 58, 30][Math.floor(k / 8) % 3];
    return `hsl(${((k * GOLDEN_ANGLE) % 360).toFixed(1)}, 70%, ${light}%)`;
  }

  // a series marker centred on (x, y): filled shapes, or stroked crosses
  function drawMarker(parent, marker, x, y, c) {
    if (marker === "circle") {
      return el("circle", {cx: x, cy: y, r: 3.5, fill: c, class: "plot-marker"}, parent);
    }
    const open = marker === "cross" || marker === "plus";
    return el("path", {d: MARKER_D[marker], transform: `translate(${x},${y})`,
                       fill: open ? "none" : c, stroke: c, "stroke-width": open ? 2 : 0.5,
                       class: "plot-marker", "pointer-events": "none"}, parent);
  }

  function el(name, attrs, parent) {
    const e = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (parent) parent.appendChild(e);
    return e;
  }

  function niceStep(span, count) {
    const raw = span / Math.max(count, 1);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const norm = raw / mag;
    return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  }

  function fmtTick(v) {
    const a = Math.abs(v);
    if (a >= 1 << 20 && Number.isInteger(v / (1 << 20))) return v / (1 << 20) + "M";
    if (a >= 1024 && Number.isInteger(v / 1024) && Math.log2(v) % 1 === 0) return v / 1024 + "K";
    if (a >= 1e4) return v.toExponential(0);
    if (a >= 1 || a === 0) return String(+v.toFixed(2));
    return String(+v.toPrecision(2));
  }

  // y ticks of a log axis: the decades, with 2 and 5 between them when there are few
  function logTicks(lo, hi) {
    const out = [];
    const few = Math.log10(hi / lo) <= 2.5;
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      for (const m of few ? [1, 2, 5] : [1]) {
        const v = m * Math.pow(10, e);
        if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v);
      }
    }
    return out;
  }

  class LinePlot {
    constructor(container, opts) {
      this.container = container;
      this.opts = Object.assign({xlog: false, xlabel: "", ylabel: ""}, opts || {});
      this.colors = new Map();
      this.used = new Set();
      this.panels = document.createElement("div");
      this.panels.className = "plot-panels";
      this.legend = document.createElement("ul");
      this.legend.className = "plot-legend";
      container.append(this.panels, this.legend);
    }

    color(series) {
      if (!this.colors.has(series)) {
        let i = this.colors.size, c = colorAt(i);
        while (this.used.has(c)) c = colorAt(++i);
        this.colors.set(series, c);
        this.used.add(c);
      }
      return this.colors.get(series);
    }

    update(points) {
      const o = this.opts;
      const pts = points.filter(p => Number.isFinite(p.x) && Number.isFinite(p.y) &&
                                     (!o.xlog || p.x > 0));
      this.panels.replaceChildren();
      this.legend.replaceChildren();
      if (!pts.length) {
        const empty = document.createElement("p");
        empty.className = "plot-empty";
        empty.textContent = "the plot fills in as results arrive";
        this.panels.append(empty);
        return;
      }
      const byPanel = new Map();
      for (const p of pts) {
        const key = p.panel === undefined || p.panel === null ? "" : String(p.panel);
        if (!byPanel.has(key)) byPanel.set(key, []);
        byPanel.get(key).push(p);
        this.color(p.series);          // colours in first-seen order, across panels
      }
      const single = byPanel.size === 1;
      for (const [name, pp] of byPanel) this.drawPanel(name, pp, single);
      for (const [series, c] of this.colors) {
        if (!pts.some(p => p.series === series)) continue;
        const li = document.createElement("li");
        li.dataset.series = series;
        li.dataset.color = c;
        const i = [...this.colors.keys()].indexOf(series);
        li.dataset.marker = MARKERS[i % MARKERS.length];
        const swatch = document.createElementNS(SVG, "svg");
        swatch.setAttribute("class", "swatch");
        swatch.setAttribute("viewBox", "-12 -6 24 12");
        swatch.setAttribute("width", "24");
        swatch.setAttribute("height", "12");
        el("line", {x1: -11, x2: 11, y1: 0, y2: 0, stroke: c, "stroke-width": 2,
                    "stroke-dasharray": DASHES[i % DASHES.length]}, swatch);
        drawMarker(swatch, MARKERS[i % MARKERS.length], 0, 0, c);
        li.append(swatch, series);
        this.legend.append(li);
      }
    }

    drawPanel(name, pts, single) {
      const o = this.opts;
      const width = single ? 640 : 380, height = single ? 300 : 250;
      const m = {l: 56, r: 14, t: name ? 24 : 12, b: 42};
      const W = width - m.l - m.r, H = height - m.t - m.b;
      const svg = el("svg", {class: "plot-svg", role: "img", "data-panel": name,
                             viewBox: `0 0 ${width} ${height}`,
                             "aria-label": `${name ? name + ": " : ""}${o.ylabel} against ${o.xlabel}`});
      svg.style.maxWidth = width + "px";
      this.panels.append(svg);
      if (name) {
        el("text", {x: m.l + W / 2, y: 15, "text-anchor": "middle", class: "plot-title"},
           svg).textContent = name;
      }
      const fx = o.xlog ? Math.log2 : (v => v);
      let x0 = Math.min(...pts.map(p => fx(p.x))), x1 = Math.max(...pts.map(p => fx(p.x)));
      if (x0 === x1) { x0 -= 1; x1 += 1; }
      const ymin = Math.min(...pts.map(p => p.y)), ymax = Math.max(...pts.map(p => p.y));
      const ylog = ymin > 0 && ymax / ymin > LOG_RATIO;
      let fy, y0, y1, yticks;
      if (ylog) {
        fy = Math.log10;
        const lo = Math.pow(10, Math.floor(Math.log10(ymin))), hi = Math.pow(10, Math.ceil(Math.log10(ymax)));
        y0 = fy(lo); y1 = fy(hi);
        yticks = logTicks(lo, hi);
      } else {
        fy = v => v;
        y0 = Math.min(0, ymin);
        y1 = ymax === y0 ? y0 + 1 : ymax;
        const step = niceStep(y1 - y0, 5);
        y1 = Math.ceil(y1 / step) * step;
        yticks = [];
        for (let v = y0; v <= y1 + step / 2; v += step) yticks.push(v);
      }
      svg.dataset.ylog = String(ylog);
      const sx = v => m.l + (fx(v) - x0) / (x1 - x0) * W;
      const sy = v => m.t + H - (fy(v) - y0) / (y1 - y0) * H;

      // grid and y ticks
      const axes = el("g", {class: "plot-axes"}, svg);
      for (const v of yticks) {
        el("line", {x1: m.l, x2: m.l + W, y1: sy(v), y2: sy(v), class: "plot-grid"}, axes);
        el("text", {x: m.l - 6, y: sy(v) + 4, "text-anchor": "end", class: "plot-ytick"},
           axes).textContent = fmtTick(v);
      }
      // x ticks: the distinct x values (sizes are few), thinned if crowded
      const xs = [...new Set(pts.map(p => p.x))].sort((a, b) => a - b);
      const every = Math.ceil(xs.length / Math.max(1, Math.floor(W / 48)));
      xs.forEach((v, i) => {
        if (i % every) return;
        el("line", {x1: sx(v), x2: sx(v), y1: m.t + H, y2: m.t + H + 4, class: "plot-tick"}, axes);
        el("text", {x: sx(v), y: m.t + H + 16, "text-anchor": "middle"}, axes).textContent = fmtTick(v);
      });
      el("line", {x1: m.l, x2: m.l + W, y1: m.t + H, y2: m.t + H, class: "plot-axis"}, axes);
      el("line", {x1: m.l, x2: m.l, y1: m.t, y2: m.t + H, class: "plot-axis"}, axes);
      el("text", {x: m.l + W / 2, y: height - 6, "text-anchor": "middle", class: "plot-label"},
         axes).textContent = o.xlabel + (o.xlog ? " (log scale)" : "");
      el("text", {x: 14, y: m.t + H / 2, "text-anchor": "middle", class: "plot-label",
                  transform: `rotate(-90 14 ${m.t + H / 2})`}, axes).textContent =
        o.ylabel + (ylog ? " (log scale)" : "");

      // series: lines through points sorted by x, then the points
      const bySeries = new Map();
      for (const p of pts) {
        if (!bySeries.has(p.series)) bySeries.set(p.series, []);
        bySeries.get(p.series).push(p);
      }
      for (const [series, sp] of bySeries) {
        const c = this.color(series);
        const i = [...this.colors.keys()].indexOf(series);
        const marker = MARKERS[i % MARKERS.length];
        sp.sort((a, b) => a.x - b.x);
        const g = el("g", {class: "plot-series", "data-series": series, "data-color": c,
                           "data-marker": marker}, svg);
        if (sp.length > 1) {
          el("polyline", {points: sp.map(p => `${sx(p.x)},${sy(p.y)}`).join(" "), fill: "none",
                          stroke: c, "stroke-width": 2,
                          "stroke-dasharray": DASHES[i % DASHES.length]}, g);
        }
        for (const p of sp) {
          // the point (hover target, data, tests) is a circle; other markers draw over it
          const round = marker === "circle";
          const dot = el("circle", {cx: sx(p.x), cy: sy(p.y), r: round ? 3.5 : 5,
                                    fill: round ? c : "transparent", class: "plot-point",
                                    "data-x": p.x, "data-y": p.y}, g);
          if (!round) drawMarker(g, marker, sx(p.x), sy(p.y), c);
          el("title", {}, dot).textContent =
            `${name ? name + " · " : ""}${series}: ${fmtTick(p.x)} → ${+p.y.toPrecision(4)} ${o.ylabel}`;
        }
      }
    }
  }

  window.LinePlot = LinePlot;
})();
