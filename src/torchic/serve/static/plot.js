// A small SVG line plot: y against x per series, log-2 x axis optional. No dependencies.
//
//   const p = new LinePlot(container, {xlabel: "n", ylabel: "GFLOPS", xlog: true});
//   p.update([{series: "workers t=1", x: 128, y: 40.2}, ...]);   // redraws everything
//
// Points carry a <title> (hover shows the value) and data attributes, so tests can
// count them; the legend lists series in first-seen order with stable colours.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2",
                  "#be185d", "#4d7c0f", "#a16207", "#475569", "#7c3aed", "#0f766e"];

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

  class LinePlot {
    constructor(container, opts) {
      this.container = container;
      this.opts = Object.assign({xlog: false, xlabel: "", ylabel: "", width: 640, height: 300},
                                opts || {});
      this.colors = new Map();
      this.svg = el("svg", {class: "plot-svg", role: "img",
                            viewBox: `0 0 ${this.opts.width} ${this.opts.height}`,
                            "aria-label": `${this.opts.ylabel} against ${this.opts.xlabel}`});
      container.appendChild(this.svg);
    }

    color(series) {
      if (!this.colors.has(series)) this.colors.set(series, COLORS[this.colors.size % COLORS.length]);
      return this.colors.get(series);
    }

    update(points) {
      const o = this.opts, svg = this.svg;
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      const pts = points.filter(p => Number.isFinite(p.x) && Number.isFinite(p.y) &&
                                     (!o.xlog || p.x > 0));
      const legendW = 170;
      const m = {l: 56, r: legendW + 12, t: 12, b: 42};
      const W = o.width - m.l - m.r, H = o.height - m.t - m.b;
      if (!pts.length) {
        el("text", {x: o.width / 2, y: o.height / 2, "text-anchor": "middle", class: "plot-empty"},
           svg).textContent = "the plot fills in as results arrive";
        return;
      }
      const fx = o.xlog ? Math.log2 : (v => v);
      let x0 = Math.min(...pts.map(p => fx(p.x))), x1 = Math.max(...pts.map(p => fx(p.x)));
      if (x0 === x1) { x0 -= 1; x1 += 1; }
      let y1 = Math.max(...pts.map(p => p.y)), y0 = Math.min(0, ...pts.map(p => p.y));
      if (y1 === y0) y1 = y0 + 1;
      const ystep = niceStep(y1 - y0, 5);
      y1 = Math.ceil(y1 / ystep) * ystep;
      const sx = v => m.l + (fx(v) - x0) / (x1 - x0) * W;
      const sy = v => m.t + H - (v - y0) / (y1 - y0) * H;

      // grid and y ticks
      const axes = el("g", {class: "plot-axes"}, svg);
      for (let v = y0; v <= y1 + ystep / 2; v += ystep) {
        el("line", {x1: m.l, x2: m.l + W, y1: sy(v), y2: sy(v), class: "plot-grid"}, axes);
        el("text", {x: m.l - 6, y: sy(v) + 4, "text-anchor": "end"}, axes).textContent = fmtTick(v);
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
      el("text", {x: m.l + W / 2, y: o.height - 6, "text-anchor": "middle", class: "plot-label"},
         axes).textContent = o.xlabel + (o.xlog ? " (log scale)" : "");
      el("text", {x: 14, y: m.t + H / 2, "text-anchor": "middle", class: "plot-label",
                  transform: `rotate(-90 14 ${m.t + H / 2})`}, axes).textContent = o.ylabel;

      // series: lines through points sorted by x, then the points
      const bySeries = new Map();
      for (const p of pts) {
        if (!bySeries.has(p.series)) bySeries.set(p.series, []);
        bySeries.get(p.series).push(p);
      }
      let row = 0;
      for (const [series, sp] of bySeries) {
        const c = this.color(series);
        sp.sort((a, b) => a.x - b.x);
        const g = el("g", {class: "plot-series", "data-series": series}, svg);
        if (sp.length > 1) {
          el("polyline", {points: sp.map(p => `${sx(p.x)},${sy(p.y)}`).join(" "), fill: "none",
                          stroke: c, "stroke-width": 2}, g);
        }
        for (const p of sp) {
          const dot = el("circle", {cx: sx(p.x), cy: sy(p.y), r: 3.5, fill: c, class: "plot-point",
                                    "data-x": p.x, "data-y": p.y}, g);
          el("title", {}, dot).textContent = `${series}: ${fmtTick(p.x)} → ${+p.y.toPrecision(4)} ${o.ylabel}`;
        }
        const ly = m.t + 6 + row * 16;
        if (ly < o.height - 10) {
          el("rect", {x: o.width - legendW, y: ly - 8, width: 10, height: 10, fill: c}, svg);
          el("text", {x: o.width - legendW + 15, y: ly + 1, class: "plot-legend"}, svg).textContent =
            series.length > 26 ? series.slice(0, 25) + "…" : series;
        }
        row++;
      }
    }
  }

  window.LinePlot = LinePlot;
})();
