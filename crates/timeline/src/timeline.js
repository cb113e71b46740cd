// tenure timeline: re-lays out the SVG for the visible window [t0, t1] of true time and
// draws the messages (arrows, or per-lane counts where they are too dense to draw).
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("tl-data").textContent);
  var svg = document.getElementById("tl");
  var chart = document.getElementById("chart");
  var NS = "http://www.w3.org/2000/svg";
  var LW = D.label_w, END = Math.max(1, D.end_ns), AXIS_H = D.axis_h;
  var MAX_ARROWS = 4000, BUCKET_PX = 6, PER_PX = 1.5;
  var t0 = 0, t1 = END, PW = 1000, H = +svg.getAttribute("height");
  var spans = svg.querySelectorAll(".ts"), labels = svg.querySelectorAll(".tl"),
      points = svg.querySelectorAll(".tp");
  var msgs = D.msgs, msgG = document.getElementById("msgs"), axisG = document.getElementById("axis");
  var pan = document.getElementById("pan"), viewText = document.getElementById("view");

  function X(ns) { return LW + (ns - t0) / (t1 - t0) * PW; }
  function clampX(x) { return Math.max(LW - 50, Math.min(LW + PW + 50, x)); }
  function fmt(ns) {
    var us = Math.round(ns / 1000), s = Math.floor(us / 1e6), r = us % 1e6;
    var ms = Math.floor(r / 1000), u = r % 1000;
    return s + "." + ("00" + ms).slice(-3) + "_" + ("00" + u).slice(-3) + "s";
  }
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function title(e, text) { el("title", {}, e).textContent = text; }
  function laneY(n) { return D.lanes[n][2]; }

  function ticks() {
    axisG.textContent = "";
    var span = t1 - t0, raw = span / Math.max(2, PW / 110), step = 1;
    outer: for (var e = 0; e < 19; e++) {
      var b = Math.pow(10, e);
      for (var m of [1, 2, 5]) { if (b * m >= raw) { step = b * m; break outer; } }
    }
    var dec = step >= 1e9 ? 0 : step >= 1e8 ? 1 : step >= 1e7 ? 2 : step >= 1e6 ? 3 : step >= 1e5 ? 4 : step >= 1e4 ? 5 : 6;
    for (var t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      var x = X(t);
      el("line", { "class": "tick", x1: x, x2: x, y1: AXIS_H - 6, y2: H }, axisG);
      el("text", { "class": "ticklabel", x: x, y: AXIS_H - 9, "text-anchor": x < LW + 14 ? "start" : "middle" }, axisG).textContent = (t / 1e9).toFixed(dec) + "s";
    }
  }

  function drawMessages() {
    msgG.textContent = "";
    var a = t0 / 1000, b = t1 / 1000, visible = [];
    for (var i = 0; i < msgs.length; i++) {
      var m = msgs[i];
      if (m[0] <= b && Math.max(m[0], m[2]) >= a) visible.push(m);
    }
    var nb = Math.ceil(PW / BUCKET_PX) + 1, count = new Array(nb).fill(0);
    function bucket(m) { return Math.max(0, Math.min(nb - 1, Math.floor((X(m[0] * 1000) - LW) / BUCKET_PX))); }
    visible.forEach(function (m) { count[bucket(m)]++; });
    var limit = BUCKET_PX * PER_PX, arrows = 0;
    visible.forEach(function (m) { if (count[bucket(m)] <= limit) arrows++; });
    var allDense = arrows > MAX_ARROWS;
    var dense = {}; // "bucket,lane" -> [sent, dropped]
    visible.forEach(function (m) {
      var k = bucket(m);
      if (allDense || count[k] > limit) {
        var key = k + "," + m[3];
        var d = dense[key] || (dense[key] = [0, 0]);
        d[0]++; if ((m[5] >= 1 && m[5] <= 3) || m[5] === 5) d[1]++;
        return;
      }
      var xs = X(m[0] * 1000), ys = laneY(m[3]), yt = laneY(m[4]);
      var text = D.texts[m[6]], who = "n" + m[3] + " → n" + m[4] + ": " + text + "\nsent " + fmt(m[0] * 1000);
      var g;
      if (m[5] === 5 && m[1] < 0) { // held on a blocked link, lost when the connection reset
        g = el("g", {}, msgG);
        el("line", { "class": "m drop", x1: clampX(xs), y1: ys, x2: clampX(xs + 14), y2: ys + (yt - ys) * 0.3 }, g);
        title(g, who + "\nheld on a blocked link, lost when the connection reset");
        return;
      }
      if (m[5] === 1 || m[5] === 2) { // dropped at send: a stub toward the receiver, crossed out
        var xe = xs + 14, ye = ys + (yt - ys) * 0.3;
        g = el("g", {}, msgG);
        el("line", { "class": "m drop", x1: xs, y1: ys, x2: xe, y2: ye }, g);
        el("path", { "class": "x", d: "M" + (xe - 4) + "," + (ye - 4) + "L" + (xe + 4) + "," + (ye + 4) + "M" + (xe - 4) + "," + (ye + 4) + "L" + (xe + 4) + "," + (ye - 4) }, g);
        title(g, who + "\ndropped: " + (m[5] === 1 ? "partition" : "lost on the link"));
        return;
      }
      var xe2 = X(m[2] * 1000);
      g = el("g", {}, msgG);
      var late = m[5] === 0 && m[1] >= 0 && m[2] - m[1] > 1000; // handled well after arrival (paused)
      if (m[5] === 3 || m[5] === 5) {
        el("line", { "class": "m drop", x1: clampX(xs), y1: ys, x2: clampX(xe2), y2: yt }, g);
        el("path", { "class": "x", d: "M" + (xe2 - 4) + "," + (yt - 4) + "L" + (xe2 + 4) + "," + (yt + 4) + "M" + (xe2 - 4) + "," + (yt + 4) + "L" + (xe2 + 4) + "," + (yt - 4) }, g);
        title(g, who + (m[5] === 5 ? "\nlost: its connection was reset before it was handled"
          : "\nlost: arrived at " + fmt(m[2] * 1000) + " while n" + m[4] + " was down"));
      } else {
        el("line", { "class": "m" + (late ? " late" : ""), x1: clampX(xs), y1: ys, x2: clampX(xe2), y2: yt, "marker-end": "url(#arrow)" }, g);
        title(g, who + (m[5] === 4 ? "\nstill in flight at the end (arrives " + fmt(m[2] * 1000) + ")"
          : (late ? "\narrived " + fmt(m[1] * 1000) + ", handled " + fmt(m[2] * 1000) + " (receiver paused)"
            : "\ndelivered " + fmt(m[2] * 1000))));
      }
    });
    Object.keys(dense).sort().forEach(function (key) {
      var p = key.split(","), k = +p[0], lane = +p[1], d = dense[key];
      var l = D.lanes[lane], hmax = l[1] - 6, hh = Math.min(hmax, 3 + 3 * Math.log2(d[0]));
      var x = LW + k * BUCKET_PX, y = l[0] + l[1] - 3 - hh;
      var t = el("rect", { "class": "dens", x: x, y: y, width: BUCKET_PX - 1, height: hh }, msgG);
      var ns0 = t0 + (k * BUCKET_PX) / PW * (t1 - t0), ns1 = t0 + ((k + 1) * BUCKET_PX) / PW * (t1 - t0);
      title(t, d[0] + " messages sent by n" + lane + " in " + fmt(ns0) + " – " + fmt(ns1) + (d[1] ? " (" + d[1] + " dropped or lost)" : "") + "; zoom in to see them");
      if (d[1]) el("rect", { "class": "dens dropped", x: x, y: y + hh - Math.max(1.5, hh * d[1] / d[0]), width: BUCKET_PX - 1, height: Math.max(1.5, hh * d[1] / d[0]) }, msgG);
    });
  }

  function layout() {
    var w = Math.max(600, chart.clientWidth || 1400);
    PW = w - LW - 10;
    svg.setAttribute("width", w);
    document.getElementById("cliprect").setAttribute("width", PW);
    spans.forEach(function (e) {
      var x0 = clampX(X(+e.dataset.startNs)), x1 = clampX(X(+e.dataset.endNs));
      e.setAttribute("x", x0); e.setAttribute("width", Math.max(1, x1 - x0));
    });
    labels.forEach(function (e) {
      var x0 = Math.max(X(+e.dataset.startNs), LW), x1 = X(+e.dataset.endNs);
      e.setAttribute("x", x0 + 3);
      var fits = x1 - x0 > 6.2 * e.textContent.length + 6;
      e.style.display = fits ? "" : "none";
    });
    points.forEach(function (e) {
      e.setAttribute("transform", "translate(" + clampX(X(+e.dataset.tNs)) + "," + e.dataset.y + ")");
    });
    ticks();
    drawMessages();
    var span = t1 - t0;
    pan.value = span >= END ? 0 : Math.round(t0 / (END - span) * 1000);
    pan.disabled = span >= END;
    viewText.textContent = fmt(t0) + " – " + fmt(t1);
  }

  var pending = false;
  function setView(a, b) {
    var span = Math.max(1000, Math.min(END, b - a)); // at least 1us, at most the run
    a = Math.max(0, Math.min(END - span, a));
    t0 = a; t1 = a + span;
    if (!pending) { pending = true; requestAnimationFrame(function () { pending = false; layout(); }); }
  }
  function zoom(f, at) {
    if (at === undefined) at = (t0 + t1) / 2;
    setView(at - (at - t0) * f, at + (t1 - at) * f);
  }
  function scroll(f) { var s = t1 - t0; setView(t0 + s * f, t1 + s * f); }
  // The violation's story: from when the involved nodes were last calm to a little
  // after it (the page opens there; "whole run" is one click away).
  function toViolation() {
    if (!D.violations[0]) return;
    setView(D.view[0], D.view[1]);
  }

  document.querySelectorAll(".controls button").forEach(function (b) {
    b.addEventListener("click", function () {
      var a = b.dataset.act;
      if (a === "in") zoom(0.5); else if (a === "out") zoom(2); else if (a === "fit") setView(0, END);
      else if (a === "left") scroll(-0.4); else if (a === "right") scroll(0.4); else if (a === "viol") toViolation();
    });
  });
  pan.addEventListener("input", function () {
    var s = t1 - t0; setView(+pan.value / 1000 * (END - s), 0 + +pan.value / 1000 * (END - s) + s);
  });
  svg.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var r = svg.getBoundingClientRect(), x = ev.clientX - r.left;
    if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) { scroll((ev.deltaX || ev.deltaY) > 0 ? 0.15 : -0.15); return; }
    var at = x > LW ? t0 + (x - LW) / PW * (t1 - t0) : undefined;
    zoom(ev.deltaY > 0 ? 1.25 : 0.8, at);
  }, { passive: false });
  var drag = null;
  svg.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, t0: t0, t1: t1 }; chart.classList.add("dragging"); });
  window.addEventListener("mousemove", function (ev) {
    if (!drag) return;
    var dt = (ev.clientX - drag.x) / PW * (drag.t1 - drag.t0);
    setView(drag.t0 - dt, drag.t1 - dt);
  });
  window.addEventListener("mouseup", function () { drag = null; chart.classList.remove("dragging"); });
  window.addEventListener("resize", function () { setView(t0, t1); });
  // `page.html#view=1.5-3.2` opens on that window of true time (seconds).
  // Otherwise a run with a violation opens on it (D.view), a passing run whole.
  var hv = /view=([0-9.]+)-([0-9.]+)/.exec(location.hash);
  if (hv) { t0 = Math.max(0, +hv[1] * 1e9); t1 = Math.min(END, Math.max(t0 + 1000, +hv[2] * 1e9)); }
  else if (D.view) { t0 = Math.max(0, D.view[0]); t1 = Math.min(END, Math.max(t0 + 1000, D.view[1])); }
  layout();
})();
