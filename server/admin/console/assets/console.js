// zkbridge console: live charts from the node's metrics stream (Server-Sent
// Events: the history once, then one sample a second), data view tabs, and
// the few behaviours htmx does not cover. No inline scripts (the pages'
// Content-Security-Policy forbids them).
(function () {
  "use strict";

  function charts() {
    var box = document.getElementById("charts");
    if (!box || typeof uPlot === "undefined") return;
    var series = box.dataset.series.split(",");
    var palette = ["#1f6feb", "#2e7d32", "#8e24aa", "#ef6c00", "#c62828", "#00838f", "#6d4c41", "#9e9e9e", "#455a64"];
    var t = [], ops = series.map(function () { return []; }), p50 = [], p99 = [], fp99 = [], out = [], lag = [];
    var max = 900;

    function make(id, names, data) {
      var el = document.getElementById(id);
      var opts = {
        width: Math.max(el.clientWidth, 300), height: 200,
        series: [{}].concat(names.map(function (n, i) { return { label: n, stroke: palette[i % palette.length], width: 1.5 }; })),
        axes: [{}, { size: 50 }],
        legend: { live: false }
      };
      return { el: el, plot: new uPlot(opts, [t].concat(data), el), data: data };
    }
    var cs = [
      make("chart-ops", series, ops),
      make("chart-latency", ["p50", "p99", "fsync p99"], [p50, p99, fp99]),
      make("chart-outstanding", ["outstanding"], [out]),
      make("chart-lag", ["apply lag"], [lag])
    ];
    function push(s) {
      t.push(s.t);
      for (var i = 0; i < ops.length; i++) ops[i].push(s.ops ? s.ops[i] || 0 : 0);
      p50.push(s.p50); p99.push(s.p99); fp99.push(s.fp99); out.push(s.out); lag.push(s.lag);
      if (t.length > max) {
        t.shift(); ops.forEach(function (a) { a.shift(); });
        [p50, p99, fp99, out, lag].forEach(function (a) { a.shift(); });
      }
    }
    function redraw() {
      cs.forEach(function (c) {
        c.plot.setData([t].concat(c.data));
        c.el.dataset.samples = String(t.length);
      });
    }
    var es = new EventSource("/ui/events/metrics");
    es.addEventListener("history", function (e) {
      JSON.parse(e.data).samples.forEach(push);
      redraw();
    });
    es.addEventListener("sample", function (e) {
      push(JSON.parse(e.data));
      redraw();
    });
    window.addEventListener("resize", function () {
      cs.forEach(function (c) { c.plot.setSize({ width: Math.max(c.el.clientWidth, 300), height: 200 }); });
    });
  }

  function tabs() {
    document.addEventListener("click", function (e) {
      var b = e.target.closest("[data-tab]");
      if (b) {
        document.querySelectorAll("[data-tab]").forEach(function (x) { x.classList.toggle("on", x === b); });
        document.querySelectorAll("[data-pane]").forEach(function (p) { p.hidden = p.dataset.pane !== b.dataset.tab; });
      }
      var c = e.target.closest("[data-clear]");
      if (c) document.querySelector(c.dataset.clear).innerHTML = "";
    });
  }

  // After a confirmed change, show its result a moment, then the new state.
  function reloads() {
    document.body.addEventListener("htmx:afterSwap", function () {
      var ok = document.querySelector("[data-reload]");
      if (ok) setTimeout(function () { window.location.href = ok.dataset.reload; }, 600);
    });
  }

  // Mark forms htmx has taken over (data-ready): until then a click would
  // submit natively (tests wait for it; the forms post, so a native submit
  // is refused rather than leaking its token into a URL).
  function ready() {
    document.body.addEventListener("htmx:load", function (e) {
      var root = e.detail.elt;
      if (!root.querySelectorAll) return;
      if (root.matches("form[hx-post]")) root.dataset.ready = "1";
      root.querySelectorAll("form[hx-post]").forEach(function (f) { f.dataset.ready = "1"; });
    });
    // Forms htmx processed before this listener was added.
    document.querySelectorAll("form[hx-post]").forEach(function (f) {
      if (f["htmx-internal-data"]) f.dataset.ready = "1";
    });
  }

  document.addEventListener("DOMContentLoaded", function () { ready(); charts(); tabs(); reloads(); });
})();
