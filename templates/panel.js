(function () {
  "use strict";
  // babel panel: the paired analysis of many sides at once, drawn offline from the data
  // blocks of this page (no network, no library). Every string from data reaches the page
  // through textContent (or a canvas, or an attribute), never as markup.
  //
  // #panel-meta     JSON: every figure (sides, matched, pairs, slices, robustness, flags)
  // #panel-index    base64 of raw deflate of a JSON object of columns, one entry per item
  // #panel-cells    base64 of raw deflate of the item × side cells, 2 bits each, item-major
  // #panel-details  JSON array of base64 raw-deflate chunks, `meta.chunk` items each,
  //                 inflated only when one of their items is opened: {"strings": [...],
  //                 "items": [[null | [prediction, response] as indices into strings,
  //                 one per side], one per item]}
  var root = document.documentElement;
  var state = window.babelPanel = {
    scriptStartMs: performance.now(), readyMs: 0, lastFilterMs: 0, updates: 0, opened: -1,
    filtered: 0, error: null, marks: {},
  };
  function mark(name) { state.marks[name] = Math.round(performance.now() * 10) / 10; }

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fail(where, error) {
    var message = where + ": " + (error && error.message ? error.message : String(error));
    state.error = message;
    root.dataset.error = message;
    var status = $("status");
    if (status) status.textContent = "This panel's data cannot be read (" + message + ")";
    if (window.console) console.error(message);
  }

  var meta;
  try {
    meta = JSON.parse($("panel-meta").textContent);
  } catch (error) {
    fail("panel-meta", error);
    return;
  }
  // The items are inflated while the summary is drawn.
  var loading;
  try {
    loading = Promise.all([inflateJSON($("panel-index").textContent), inflateBytes($("panel-cells").textContent)]);
  } catch (error) {
    loading = Promise.reject(error);
  }
  var sides = meta.sides || [];
  var S = sides.length;
  var N = meta.items;
  var CHUNK = meta.chunk || 256;
  var LEVEL = levelText(meta.confidence_level);

  // ---- formatting ------------------------------------------------------------------------
  // 1234567 → "1,234,567" (toLocaleString is slow enough to matter on every keystroke).
  function int(n) {
    if (n === null || n === undefined) return "–";
    var text = String(Math.abs(n)), out = "";
    if (text.length <= 3 || text.indexOf("e") !== -1 || text.indexOf(".") !== -1) return String(n);
    for (var k = text.length; k > 0; k -= 3) out = text.slice(Math.max(0, k - 3), k) + (out ? "," + out : "");
    return (n < 0 ? "-" : "") + out;
  }
  function pct(x) { return x === null || x === undefined ? "–" : (x * 100).toFixed(1) + "%"; }
  function pct1(x) { return x === null || x === undefined ? "–" : (x * 100).toFixed(1); }
  function pp(x) {
    if (x === null || x === undefined) return "–";
    var v = x * 100;
    var text = v.toFixed(1);
    if (text === "-0.0" || text === "0.0") return "+0.0 pp";
    return (v > 0 ? "+" : "") + text + " pp";
  }
  function pval(p) {
    if (p === null || p === undefined) return "–";
    if (p === 0) return "< 1e-300";
    if (p < 0.001) return p.toExponential(1);
    return p.toFixed(3);
  }
  function num(x, digits) { return x === null || x === undefined ? "–" : x.toFixed(digits); }
  function levelText(level) {
    if (typeof level !== "number") return "95%";
    return String(Number((level * 100).toFixed(4))) + "%";
  }
  function sideLabel(s) { return sides[s].run_id + ":" + sides[s].variant_id; }
  function languageName(value) { return value === null || value === undefined ? "(none)" : value; }

  // ---- ranking and order -----------------------------------------------------------------
  // Rank by accuracy (highest first), sides without a known item last; equal accuracies
  // share a rank (1, 2, 2, 4).
  var byAccuracy = [];
  for (var s0 = 0; s0 < S; s0++) byAccuracy.push(s0);
  byAccuracy.sort(function (a, b) {
    var x = sides[a].accuracy, y = sides[b].accuracy;
    if (x === null && y === null) return a - b;
    if (x === null) return 1;
    if (y === null) return -1;
    return y - x || a - b;
  });
  var rankOf = new Int32Array(S);
  byAccuracy.forEach(function (s, k) {
    var prev = k > 0 ? byAccuracy[k - 1] : -1;
    rankOf[s] = prev !== -1 && sides[prev].accuracy === sides[s].accuracy ? rankOf[prev] : k + 1;
  });
  var given = byAccuracy.map(function (_, k) { return k; });
  var order = byAccuracy.slice();      // the column order of the heatmap, tables, grid, detail
  var orderName = "rank";
  function sideTitle(s) { return "#" + rankOf[s] + " " + sideLabel(s); }

  // Pair lookup: pairAt[a * S + b] (either way round) is the index in meta.pairs.
  var pairAt = new Int32Array(S * S).fill(-1);
  (meta.pairs || []).forEach(function (p, k) { pairAt[p.a * S + p.b] = k; pairAt[p.b * S + p.a] = k; });

  // ---- header and cards ------------------------------------------------------------------
  function renderHeader() {
    var m = meta.matched || {};
    var counts = $("counts");
    var parts = [
      [int(S), S === 1 ? " side · " : " sides · "],
      [int(N), N === 1 ? " item · " : " items · "],
      [int(m.items), " matched (known on every side)"],
    ];
    parts.forEach(function (p) { counts.appendChild(el("b", null, p[0])); counts.appendChild(document.createTextNode(p[1])); });
    if (m.cochran_q !== null && m.cochran_q !== undefined) {
      counts.appendChild(document.createTextNode(" · Cochran's Q "));
      counts.appendChild(el("b", null, num(m.cochran_q, 2)));
      counts.appendChild(document.createTextNode(" (df " + m.df + "), p "));
      counts.appendChild(el("b", null, pval(m.p_value)));
    } else {
      counts.appendChild(document.createTextNode(" · Cochran's Q –"));
    }
    var best = byAccuracy[0];
    var flags = meta.flags || {};
    var cards = [
      ["Sides", int(S), int(new Set(sides.map(function (s) { return s.model; })).size) + " models · " + int(new Set(sides.map(function (s) { return s.run_id; })).size) + " runs"],
      ["Items", int(N), int(m.items) + " known on every side"],
      ["Cochran's Q", m.cochran_q === null || m.cochran_q === undefined ? "–" : num(m.cochran_q, 2), "df " + (m.df === undefined ? "–" : m.df) + " · p " + pval(m.p_value) + " (matched items)"],
      ["Best side", S && sides[best].accuracy !== null ? pct(sides[best].accuracy) : "–", S ? sideLabel(best) + " · " + sides[best].model : ""],
      ["Significant pairs", int((meta.pairs || []).filter(function (p) { return p.mcnemar_p_holm !== null && p.mcnemar_p_holm < 0.05; }).length), "of " + int((meta.pairs || []).length) + " with Holm p < 0.05"],
      ["Flagged items", int(flags.consensus_wrong || 0) + " / " + int(flags.negative_discrimination || 0), "consensus wrong / negative discrimination"],
    ];
    var box = $("cards");
    cards.forEach(function (c) {
      var card = el("div", "card");
      card.appendChild(el("div", "card-label", c[0]));
      card.appendChild(el("div", "card-value", c[1]));
      card.appendChild(el("div", "card-detail", c[2]));
      box.appendChild(card);
    });
  }

  // ---- leaderboard -----------------------------------------------------------------------
  function renderLeaderboard() {
    var lo = 1, hi = 0;
    sides.forEach(function (s) {
      if (s.ci_low !== null && s.ci_low !== undefined) lo = Math.min(lo, s.ci_low);
      if (s.ci_high !== null && s.ci_high !== undefined) hi = Math.max(hi, s.ci_high);
    });
    if (hi <= lo) { lo = 0; hi = 1; }
    var pad = Math.max(0.01, (hi - lo) * 0.05);
    lo = Math.max(0, lo - pad); hi = Math.min(1, hi + pad);
    function at(x) { return ((x - lo) / (hi - lo) * 100).toFixed(2) + "%"; }
    var table = $("leaderboard-table");
    var head = el("tr");
    head.appendChild(el("th", null, "rank"));
    head.appendChild(el("th", "name", "side"));
    head.appendChild(el("th", "name", "model"));
    head.appendChild(el("th", null, "accuracy"));
    var axis = el("th", "name");
    var axisBox = el("div", "ci-axis");
    axisBox.appendChild(el("span", null, pct(lo)));
    axisBox.appendChild(el("span", null, LEVEL + " Wilson"));
    axisBox.appendChild(el("span", null, pct(hi)));
    axis.appendChild(axisBox);
    head.appendChild(axis);
    head.appendChild(el("th", null, "interval"));
    head.appendChild(el("th", null, "correct"));
    head.appendChild(el("th", null, "known"));
    head.appendChild(el("th", null, "unknown"));
    head.appendChild(el("th", null, "records"));
    head.appendChild(el("th", null, "run-local"));
    var thead = el("thead");
    thead.appendChild(head);
    var tbody = el("tbody");
    byAccuracy.forEach(function (s) {
      var side = sides[s];
      var tr = el("tr");
      tr.dataset.side = String(s);
      tr.appendChild(el("td", "rank", side.accuracy === null ? "–" : rankOf[s]));
      var name = el("td", "name", sideLabel(s));
      name.title = sideLabel(s);
      tr.appendChild(name);
      var model = el("td", "name model", side.model);
      model.title = side.model;
      tr.appendChild(model);
      tr.appendChild(el("td", null, pct(side.accuracy)));
      var barCell = el("td", "name");
      var bar = el("span", "ci");
      if (side.accuracy !== null && side.accuracy !== undefined) {
        var band = el("span", "ci-band");
        band.style.left = at(side.ci_low);
        band.style.width = ((side.ci_high - side.ci_low) / (hi - lo) * 100).toFixed(2) + "%";
        var point = el("span", "ci-point");
        point.style.left = at(side.accuracy);
        bar.appendChild(band);
        bar.appendChild(point);
        bar.title = pct(side.accuracy) + " (" + LEVEL + " Wilson " + pct(side.ci_low) + " – " + pct(side.ci_high) + ")";
      }
      barCell.appendChild(bar);
      tr.appendChild(barCell);
      tr.appendChild(el("td", null, side.accuracy === null ? "–" : pct(side.ci_low) + " – " + pct(side.ci_high)));
      tr.appendChild(el("td", null, int(side.correct)));
      tr.appendChild(el("td", null, int(side.known)));
      var unknown = el("td", null, int(N - side.known));
      unknown.title = "items of the panel whose correctness this side does not know (no record, or null correctness)";
      tr.appendChild(unknown);
      tr.appendChild(el("td", null, int(side.records)));
      var local = el("td", null, int(side.run_local));
      if (side.run_local) local.title = "records with a run-local identity: never joined, left out of the panel";
      tr.appendChild(local);
      tbody.appendChild(tr);
    });
    table.replaceChildren(thead, tbody);
    $("leaderboard-note").textContent = "Sides ranked by accuracy over the items whose correctness each knows (unknown is never counted as wrong); equal accuracies share a rank, sides that know no item come last. Bars: the " + LEVEL + " Wilson score interval, on the scale in the header.";
  }

  // ---- pairwise heatmap ------------------------------------------------------------------
  var heat = {
    canvas: $("heatmap"), measure: "split", cell: 8, left: 40, top: 24,
    hover: null, pinned: null, dmax: 0.01, kmin: 0, kmax: 1,
  };
  // 256-step palettes, so that drawing S² cells builds no colour strings.
  var palettes = {};
  function palette(name, c0, c1) {
    if (!palettes[name]) {
      var out = new Array(256);
      for (var k = 0; k < 256; k++) out[k] = mix(c0, c1, k / 255);
      palettes[name] = out;
    }
    return palettes[name];
  }
  function shade(name, c0, c1, t) { return palette(name, c0, c1)[Math.round(Math.max(0, Math.min(1, t)) * 255)]; }
  function mix(c0, c1, t) {
    return "rgb(" + Math.round(c0[0] + (c1[0] - c0[0]) * t) + "," + Math.round(c0[1] + (c1[1] - c0[1]) * t) + "," + Math.round(c0[2] + (c1[2] - c0[2]) * t) + ")";
  }
  var WHITE = [246, 247, 249], BLUE = [9, 105, 218], RED = [207, 34, 46], PURPLE = [102, 57, 186], AMBER = [154, 103, 0];
  function deltaColour(v) {
    var t = Math.max(-1, Math.min(1, v / heat.dmax));
    return t >= 0 ? shade("blue", WHITE, BLUE, t) : shade("red", WHITE, RED, -t);
  }
  function kappaColour(v) {
    var t = heat.kmax > heat.kmin ? (v - heat.kmin) / (heat.kmax - heat.kmin) : 1;
    return shade("purple", WHITE, PURPLE, t);
  }
  function holmColour(p) {
    var t = p <= 0 ? 1 : Math.min(1, -Math.log10(p) / 6);
    return shade("amber", WHITE, AMBER, t);
  }
  // The measure a cell (row side i, column side j) shows, and its value.
  function cellMeasure(r, c) {
    if (heat.measure === "split") return r < c ? "delta" : "kappa";
    return heat.measure;
  }
  function cellValue(i, j, what) {
    var k = pairAt[i * S + j];
    if (k < 0) return null;
    var p = meta.pairs[k];
    if (what === "delta") {
      if (p.delta === null || p.delta === undefined) return null;
      return j === p.b ? p.delta : -p.delta;   // column − row
    }
    if (what === "kappa") return p.kappa === undefined ? null : p.kappa;
    return p.mcnemar_p_holm === undefined ? null : p.mcnemar_p_holm;
  }
  function heatScales() {
    heat.dmax = 0.01; heat.kmin = 1; heat.kmax = 0;
    (meta.pairs || []).forEach(function (p) {
      if (p.delta !== null && p.delta !== undefined) heat.dmax = Math.max(heat.dmax, Math.abs(p.delta));
      if (p.kappa !== null && p.kappa !== undefined) { heat.kmin = Math.min(heat.kmin, p.kappa); heat.kmax = Math.max(heat.kmax, p.kappa); }
    });
    if (heat.kmin > heat.kmax) { heat.kmin = 0; heat.kmax = 1; }
    if (heat.kmin === heat.kmax) heat.kmin = Math.min(0, heat.kmax - 0.01);
  }
  function heatLayout() {
    var canvas = heat.canvas;
    var ctx = canvas.getContext("2d");
    heat.cell = Math.max(5, Math.min(48, Math.floor(600 / Math.max(1, S))));
    ctx.font = "11px " + getComputedStyle(document.body).fontFamily;
    heat.labels = S <= 40;
    var widest = 0;
    for (var s = 0; s < S; s++) {
      var text = heat.labels ? shortLabel(s) : "#" + rankOf[s];
      widest = Math.max(widest, ctx.measureText(text).width);
    }
    heat.left = Math.ceil(widest) + 10;
    heat.top = 22;
    var w = heat.left + S * heat.cell + 2, h = heat.top + S * heat.cell + 2;
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
    canvas.style.width = w + "px";
    canvas.style.height = h + "px";
    heat.dpr = dpr;
  }
  function shortLabel(s) {
    var text = "#" + rankOf[s] + " " + sideLabel(s);
    return text.length > 30 ? text.slice(0, 29) + "…" : text;
  }
  function drawHeat() {
    var canvas = heat.canvas, ctx = canvas.getContext("2d"), cell = heat.cell;
    ctx.setTransform(heat.dpr, 0, 0, heat.dpr, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.font = "11px " + getComputedStyle(document.body).fontFamily;
    ctx.textBaseline = "middle";
    // Labels: rows on the left, column ranks (or positions) on top every few columns.
    ctx.fillStyle = "#656d76";
    ctx.textAlign = "right";
    var step = cell >= 14 ? 1 : Math.ceil(14 / cell);
    for (var r = 0; r < S; r++) {
      if (!heat.labels && r % step !== 0 && r !== S - 1) continue;
      var s = order[r];
      ctx.fillText(heat.labels ? shortLabel(s) : "#" + rankOf[s], heat.left - 6, heat.top + r * cell + cell / 2);
    }
    ctx.textAlign = "center";
    var cstep = Math.max(1, Math.ceil(26 / cell));
    for (var c = 0; c < S; c++) {
      if (c % cstep !== 0) continue;
      ctx.fillText("#" + rankOf[order[c]], heat.left + c * cell + cell / 2, heat.top - 9);
    }
    var dots = [];
    for (r = 0; r < S; r++) {
      for (c = 0; c < S; c++) {
        var x = heat.left + c * cell, y = heat.top + r * cell;
        var i = order[r], j = order[c];
        if (i === j) { ctx.fillStyle = "#8c959f"; ctx.fillRect(x, y, cell - (cell > 6 ? 1 : 0), cell - (cell > 6 ? 1 : 0)); continue; }
        var what = cellMeasure(r, c);
        var v = cellValue(i, j, what);
        ctx.fillStyle = v === null ? "#e6e9ed" : what === "delta" ? deltaColour(v) : what === "kappa" ? kappaColour(v) : holmColour(v);
        ctx.fillRect(x, y, cell - (cell > 6 ? 1 : 0), cell - (cell > 6 ? 1 : 0));
        var holmP = cellValue(i, j, "holm");
        if (holmP !== null && holmP < 0.05) dots.push(x, y);
      }
    }
    // Holm-adjusted p < 0.05: a dot in the cell.
    ctx.fillStyle = cell >= 10 ? "#1f2328" : "rgba(31, 35, 40, 0.6)";
    var radius = Math.max(1, Math.min(4, cell / 6));
    ctx.beginPath();
    for (var k = 0; k < dots.length; k += 2) {
      ctx.moveTo(dots[k] + cell / 2 + radius, dots[k + 1] + cell / 2);
      ctx.arc(dots[k] + cell / 2, dots[k + 1] + cell / 2, radius, 0, 2 * Math.PI);
    }
    ctx.fill();
    // The hovered and the pinned cell.
    [[heat.pinned, "#0969da"], [heat.hover, "#1f2328"]].forEach(function (mark) {
      if (!mark[0]) return;
      ctx.strokeStyle = mark[1];
      ctx.lineWidth = 2;
      ctx.strokeRect(heat.left + mark[0][1] * cell - 1, heat.top + mark[0][0] * cell - 1, cell + 1, cell + 1);
    });
  }
  function heatLegend() {
    var legend = $("heat-legend");
    legend.replaceChildren();
    function swatch(from, to, low, high, name) {
      var box = el("span");
      box.appendChild(el("span", null, name + " "));
      box.appendChild(el("span", null, low));
      var bar = el("span", "swatch");
      bar.style.background = "linear-gradient(to right, " + from + ", " + to + ")";
      box.appendChild(bar);
      box.appendChild(el("span", null, high));
      legend.appendChild(box);
    }
    var m = heat.measure;
    if (m === "split" || m === "delta") swatch(mix(WHITE, RED, 1) + ", " + mix(WHITE, WHITE, 0), mix(WHITE, BLUE, 1), pp(-heat.dmax), pp(heat.dmax), m === "split" ? "Δ (above):" : "Δ:");
    if (m === "split" || m === "kappa") swatch(mix(WHITE, PURPLE, 0), mix(WHITE, PURPLE, 1), num(heat.kmin, 2), num(heat.kmax, 2), m === "split" ? "κ (below):" : "κ:");
    if (m === "holm") swatch(mix(WHITE, AMBER, 0), mix(WHITE, AMBER, 1), "1", "≤ 1e-6", "Holm p:");
    var sig = el("span");
    sig.appendChild(el("span", "sigdot"));
    sig.appendChild(document.createTextNode("Holm p < 0.05"));
    legend.appendChild(sig);
  }
  function heatCellAt(event) {
    var box = heat.canvas.getBoundingClientRect();
    var x = event.clientX - box.left - heat.left, y = event.clientY - box.top - heat.top;
    if (x < 0 || y < 0) return null;
    var c = Math.floor(x / heat.cell), r = Math.floor(y / heat.cell);
    if (r >= S || c >= S) return null;
    return [r, c];
  }
  function sameCell(a, b) { return a === b || (a && b && a[0] === b[0] && a[1] === b[1]); }
  function readout(cell) {
    var box = $("pair-readout");
    box.replaceChildren();
    if (!cell) {
      box.appendChild(el("p", "placeholder", S > 1 ? "Hover over a cell, or click one to pin it: the pair's counts, Δ with its interval, McNemar and Holm p, and κ." : "A panel of one side has no pair."));
      return;
    }
    var i = order[cell[0]], j = order[cell[1]];
    if (i === j) {
      box.appendChild(el("p", "pair-side", sideTitle(i) + " · " + sides[i].model));
      box.appendChild(el("p", null, "accuracy " + pct(sides[i].accuracy) + " on " + int(sides[i].known) + " known items"));
      return;
    }
    var k = pairAt[i * S + j];
    if (k < 0) { box.appendChild(el("p", "placeholder", "No figures for this pair.")); return; }
    var p = meta.pairs[k];
    [["a)", p.a], ["b)", p.b]].forEach(function (entry) {
      var line = el("p", "pair-side");
      line.appendChild(el("span", "tag", entry[0]));
      line.appendChild(el("b", null, sideTitle(entry[1])));
      line.appendChild(document.createTextNode(" · " + sides[entry[1]].model + " · " + pct(sides[entry[1]].accuracy)));
      box.appendChild(line);
    });
    box.appendChild(el("p", null, "Row " + sideLabel(i) + ", column " + sideLabel(j) + " · known pairs " + int(p.known_pairs)));
    var table = el("table");
    var h = el("tr");
    h.appendChild(el("th", "name", ""));
    h.appendChild(el("th", null, "b) correct"));
    h.appendChild(el("th", null, "b) wrong"));
    table.appendChild(h);
    [["a) correct", p.both_correct, p.a_only_correct], ["a) wrong", p.b_only_correct, p.both_wrong]].forEach(function (row) {
      var tr = el("tr");
      tr.appendChild(el("th", "name", row[0]));
      tr.appendChild(el("td", null, int(row[1])));
      tr.appendChild(el("td", null, int(row[2])));
      table.appendChild(tr);
    });
    box.appendChild(table);
    var dl = el("dl");
    function item(name, value, cls) {
      dl.appendChild(el("dt", null, name));
      dl.appendChild(el("dd", cls || null, value));
    }
    item("Δ (b − a)", pp(p.delta) + (p.delta_ci_low === null || p.delta_ci_low === undefined ? "" : "  [" + pp(p.delta_ci_low) + ", " + pp(p.delta_ci_high) + "] " + LEVEL + " CI"));
    item("McNemar p", pval(p.mcnemar_p));
    item("Holm p", pval(p.mcnemar_p_holm) + (p.mcnemar_p_holm !== null && p.mcnemar_p_holm < 0.05 ? "  (< 0.05)" : ""), p.mcnemar_p_holm !== null && p.mcnemar_p_holm < 0.05 ? "sig" : null);
    item("Cohen's κ", num(p.kappa, 3));
    box.appendChild(dl);
  }
  // For the browser test: the client coordinates of the centre of the cell at (row, column).
  state.heatCell = function (r, c) {
    var box = heat.canvas.getBoundingClientRect();
    return { x: box.left + heat.left + (c + 0.5) * heat.cell, y: box.top + heat.top + (r + 0.5) * heat.cell };
  };
  function heatInit() {
    var canvas = heat.canvas;
    $("pairs-note").textContent = "Each cell pairs the row side with the column side over the items known on both. Δ is the column's accuracy minus the row's (the readout names a) and b) as stored: Δ = b − a), with a " + LEVEL + " Newcombe interval; McNemar: exact two-sided test on the discordant items, Holm-adjusted over all " + int((meta.pairs || []).length) + " pairs; κ: Cohen's agreement beyond chance. Grey cells: no known pair.";
    heatScales();
    heatLayout();
    drawHeat();
    heatLegend();
    readout(null);
    if (S < 2) return;
    canvas.addEventListener("mousemove", function (event) {
      var cell = heatCellAt(event);
      if (sameCell(cell, heat.hover)) return;
      heat.hover = cell;
      drawHeat();
      readout(cell || heat.pinned);
    });
    canvas.addEventListener("mouseleave", function () {
      heat.hover = null;
      drawHeat();
      readout(heat.pinned);
    });
    canvas.addEventListener("click", function (event) {
      var cell = heatCellAt(event);
      heat.pinned = sameCell(cell, heat.pinned) ? null : cell;
      drawHeat();
      readout(heat.pinned || cell);
    });
    canvas.addEventListener("keydown", function (event) {
      var moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
      var m = moves[event.key];
      if (!m) return;
      var at = heat.pinned || [0, 1];
      if (heat.pinned) at = [Math.max(0, Math.min(S - 1, at[0] + m[0])), Math.max(0, Math.min(S - 1, at[1] + m[1]))];
      heat.pinned = at;
      drawHeat();
      readout(at);
      event.preventDefault();
    });
    $("heat-measure").addEventListener("change", function (event) {
      heat.measure = event.target.value;
      drawHeat();
      heatLegend();
    });
  }

  // ---- accuracy by slice × side ----------------------------------------------------------
  // Accuracy colours are relative to the table's own range (sliceRange), so that the
  // differences between slices show even when every accuracy is near 80%.
  var sliceRange = [0, 1];
  function accuracyStyle(td, a) {
    if (a === null || a === undefined) return;
    var t = (a - sliceRange[0]) / (sliceRange[1] - sliceRange[0]);
    var light = 95 - Math.max(0, Math.min(1, t)) * 55;
    td.style.background = "hsl(212, 72%, " + light.toFixed(1) + "%)";
    if (light < 62) td.style.color = "#fff";
  }
  function sliceCell(entry) {
    var td = el("td", "acc", entry ? pct1(entry.accuracy) : "–");
    if (entry) {
      td.title = int(entry.correct) + " correct of " + int(entry.known) + " known";
      accuracyStyle(td, entry.accuracy);
    }
    return td;
  }
  function sliceTable(container, title, slices, column) {
    container.replaceChildren();
    if (!slices || !slices.length) return;
    var lo = 1, hi = 0;
    slices.forEach(function (slice) {
      slice.sides.forEach(function (e) {
        if (e && e.accuracy !== null && e.accuracy !== undefined) { lo = Math.min(lo, e.accuracy); hi = Math.max(hi, e.accuracy); }
      });
    });
    if (hi < lo) { lo = 0; hi = 1; }
    if (hi - lo < 0.02) { var mid = (hi + lo) / 2; lo = Math.max(0, mid - 0.01); hi = Math.min(1, mid + 0.01); }
    sliceRange = [lo, hi];
    var heading = el("h3", null, title + " (" + slices.length + ")");
    var scale = el("span", "muted", " · colour from " + pct(lo) + " (light) to " + pct(hi) + " (dark)");
    heading.appendChild(scale);
    container.appendChild(heading);
    var wrap = el("div", "table-wrap slice-table");
    var table = el("table");
    var thead = el("thead"), tbody = el("tbody");
    var name = function (slice) { return column === "language" ? languageName(slice.value) : String(slice.value); };
    // Sides as columns while they fit; otherwise transposed (sides as rows).
    if (S <= 16) {
      var h = el("tr");
      h.appendChild(el("th", "name sticky", column));
      order.forEach(function (s) {
        var th = el("th", "side-col", sideTitle(s));
        th.title = sideTitle(s) + " · " + sides[s].model;
        h.appendChild(th);
      });
      h.appendChild(el("th", null, "Kendall τ-b"));
      thead.appendChild(h);
      slices.forEach(function (slice) {
        var tr = el("tr");
        tr.appendChild(el("td", "name sticky", name(slice)));
        order.forEach(function (s) { tr.appendChild(sliceCell(slice.sides[s])); });
        tr.appendChild(el("td", null, num(slice.kendall_tau, 3)));
        tbody.appendChild(tr);
      });
    } else {
      var head = el("tr");
      head.appendChild(el("th", "name sticky", "side"));
      slices.forEach(function (slice) {
        var th = el("th", "side-col", name(slice));
        th.title = name(slice);
        head.appendChild(th);
      });
      thead.appendChild(head);
      order.forEach(function (s) {
        var tr = el("tr");
        var label = el("td", "name sticky", sideTitle(s));
        label.title = sideTitle(s) + " · " + sides[s].model;
        tr.appendChild(label);
        slices.forEach(function (slice) { tr.appendChild(sliceCell(slice.sides[s])); });
        tbody.appendChild(tr);
      });
      var foot = el("tr", "foot");
      foot.appendChild(el("td", "name sticky", "Kendall τ-b"));
      slices.forEach(function (slice) { foot.appendChild(el("td", "acc", num(slice.kendall_tau, 3))); });
      tbody.appendChild(foot);
    }
    table.appendChild(thead);
    table.appendChild(tbody);
    wrap.appendChild(table);
    container.appendChild(wrap);
  }
  function renderSlices() {
    sliceTable($("slices-language"), "Languages", meta.by_language, "language");
    if (meta.by_benchmark && meta.by_benchmark.length > 1) sliceTable($("slices-benchmark"), "Benchmarks", meta.by_benchmark, "benchmark");
    else $("slices-benchmark").replaceChildren();
    if (!meta.by_language || !meta.by_language.length) $("slices-language").appendChild(el("p", "placeholder", "No language slices."));
  }

  // ---- robustness and flags --------------------------------------------------------------
  function renderRobustness() {
    var body = $("robustness-body");
    var rows = meta.robustness || [];
    if (!rows.length) {
      body.appendChild(el("p", "placeholder", "No run appears with two or more variants: nothing to compare across variants."));
    } else {
      var wrap = el("div", "table-wrap robust");
      var table = el("table");
      var h = el("tr");
      ["run", "variants", "items", "all correct", "all wrong", "mixed", "consistency"].forEach(function (name, k) {
        h.appendChild(el("th", k < 2 ? "name" : null, name));
      });
      var thead = el("thead");
      thead.appendChild(h);
      var tbody = el("tbody");
      rows.forEach(function (r) {
        var tr = el("tr");
        tr.appendChild(el("td", "name", r.run_id));
        var variants = el("td", "name", (r.variants || []).join(", "));
        variants.title = (r.variants || []).join(", ");
        tr.appendChild(variants);
        [r.items, r.all_correct, r.all_wrong, r.mixed].forEach(function (v) { tr.appendChild(el("td", null, int(v))); });
        tr.appendChild(el("td", null, pct(r.consistency)));
        tbody.appendChild(tr);
      });
      table.appendChild(thead);
      table.appendChild(tbody);
      wrap.appendChild(table);
      body.appendChild(wrap);
      body.appendChild(el("p", "method", "Per run with two or more variants: the items known on every one of its variants, and how many of them get the same verdict on all (consistency = (all correct + all wrong) / items)."));
    }
    var flags = meta.flags || {};
    var box = $("flags-body");
    [["consensus", "Consensus wrong", flags.consensus_wrong, "known on ≥ 3 sides and wrong on every one: a candidate answer-key error"],
      ["negative", "Negative discrimination", flags.negative_discrimination, "known on ≥ 5 sides, and stronger sides get it wrong more often"]].forEach(function (f) {
      var card = el("button", "flag-card");
      card.type = "button";
      card.dataset.flag = f[0];
      card.appendChild(el("div", "card-label", f[1]));
      card.appendChild(el("div", "card-value", int(f[2] || 0) + " items"));
      card.appendChild(el("div", "card-detail", f[3] + " · show them"));
      card.addEventListener("click", function () { showFlag(f[0]); });
      box.appendChild(card);
    });
  }

  // ---- decoding --------------------------------------------------------------------------
  function bytesOf(base64) {
    base64 = base64.trim();
    if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(base64);
    var binary = atob(base64);
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }
  // Inflates with the browser's own decoder: no network, nothing but this page (a stream
  // of the bytes in memory; a Blob would make a round trip through the browser process).
  function inflate(base64) {
    var bytes = bytesOf(base64);
    var source = new ReadableStream({ start: function (controller) { controller.enqueue(bytes); controller.close(); } });
    return new Response(source.pipeThrough(new DecompressionStream("deflate-raw")));
  }
  function inflateJSON(base64) { return inflate(base64).text().then(JSON.parse); }
  function inflateBytes(base64) {
    if (!base64.trim()) return Promise.resolve(new Uint8Array(0));   // no cell at all
    return inflate(base64).arrayBuffer().then(function (b) { return new Uint8Array(b); });
  }

  var chunkTexts = null;
  // A chunk stores each distinct string once; its items refer to them by index.
  function expandChunk(chunk) {
    var strings = chunk.strings;
    return chunk.items.map(function (row) {
      return row.map(function (pair) { return pair ? [strings[pair[0]], strings[pair[1]]] : null; });
    });
  }
  var chunkCache = new Map();
  function chunkOf(index) {
    var number = Math.floor(index / CHUNK);
    var cached = chunkCache.get(number);
    if (cached) {
      chunkCache.delete(number);
      chunkCache.set(number, cached);
      return cached;
    }
    if (!chunkTexts) chunkTexts = JSON.parse($("panel-details").textContent);
    if (number >= chunkTexts.length) return Promise.reject(new Error("no details chunk " + number));
    var promise = inflateJSON(chunkTexts[number]).then(expandChunk);
    chunkCache.set(number, promise);
    if (chunkCache.size > 24) chunkCache.delete(chunkCache.keys().next().value);
    promise.catch(function () { chunkCache.delete(number); });
    return promise;
  }

  // ---- the items -------------------------------------------------------------------------
  var qid, question, benchOf, langOf, filterOf, repeatOf, knownOf, correctOf, flagsOf, cells;
  var columns;
  var texts;
  var FLAG_BITS = { consensus: 1, negative: 2, discordant: 4 };
  var FLAG_LABELS = [["consensus", "consensus wrong", 1], ["negative", "negative discrimination", 2], ["discordant", "discordant", 4]];
  var CELL_COLOURS = ["#d0d7de", "#cf222e", "#1a7f37", "#d0d7de"];
  var CELL_NAMES = ["unknown", "wrong", "correct", "unknown"];
  function cellOf(item, side) {
    var k = item * S + side;
    return (cells[k >> 2] >> ((k & 3) << 1)) & 3;
  }

  // ---- search and filters ----------------------------------------------------------------
  var query = "";
  var hits = null;          // item indices matching the query, in item order
  var hitCount = 0;
  function updateSearch(raw) {
    var next = raw.trim().toLowerCase();
    if (next === query) return;
    if (!next) { query = ""; hits = null; hitCount = 0; return; }
    // A query that contains the previous one can only match what that one matched: the
    // hits are compacted in place.
    var n = 0, i;
    if (query && hits && next.indexOf(query) !== -1) {
      for (var k = 0; k < hitCount; k++) {
        i = hits[k];
        if (texts[i].indexOf(next) !== -1) hits[n++] = i;
      }
    } else {
      if (!hits) hits = new Uint32Array(N);
      for (i = 0; i < N; i++) if (texts[i].indexOf(next) !== -1) hits[n++] = i;
    }
    if (!hits) hits = new Uint32Array(N);
    hitCount = n;
    query = next;
  }

  var flagMask = 0;        // the flags selected: an item shows if it has any of them
  var languagePick = null; // null: all; else a language index, -1 for none
  var benchmarkPick = null;
  var visible, visibleCount = 0;
  var chipButtons = [];
  var languageOptions = [], benchmarkOptions = [];
  var langCounts, benchCounts;

  function apply(resetScroll) {
    var t = performance.now();
    updateSearch($("search").value);
    var fc = [0, 0, 0];
    langCounts.fill(0);
    benchCounts.fill(0);
    var n = 0, all = hits === null, count = all ? N : hitCount;
    var fm = flagMask, lp = languagePick, bp = benchmarkPick;
    for (var k = 0; k < count; k++) {
      var i = all ? k : hits[k];
      var f = flagsOf[i];
      var pf = fm === 0 || (f & fm) !== 0;
      var pl = lp === null || langOf[i] === lp;
      var pb = bp === null || benchOf[i] === bp;
      // Each control counts what the others let through: its numbers say what choosing a
      // value would show.
      if (pl && pb) { if (f & 1) fc[0]++; if (f & 2) fc[1]++; if (f & 4) fc[2]++; }
      if (pf && pb) langCounts[langOf[i] + 1]++;
      if (pf && pl) benchCounts[benchOf[i]]++;
      if (pf && pl && pb) visible[n++] = i;
    }
    visibleCount = n;
    chipButtons.forEach(function (b, k) {
      b.count.textContent = int(fc[k]);
      b.button.classList.toggle("empty", fc[k] === 0 && !(flagMask & b.bit));
    });
    languageOptions.forEach(function (o) { o.option.textContent = o.label + " (" + int(langCounts[o.value + 1]) + ")"; });
    benchmarkOptions.forEach(function (o) { o.option.textContent = o.label + " (" + int(benchCounts[o.value]) + ")"; });
    $("status").textContent = "Showing " + int(n) + " of " + int(N) + " items";
    // A new search or filter starts the keyboard selection over at the first row.
    if (resetScroll || (selected !== -1 && positionOf(selected) === -1)) selected = -1;
    if (resetScroll) list.scrollTop = 0;
    version++;
    layoutList();
    state.lastFilterMs = performance.now() - t;
    state.filtered = n;
    root.dataset.filtered = String(n);
    root.dataset.updates = String(++state.updates);
  }
  function showFlag(name) {
    flagMask = FLAG_BITS[name];
    chipButtons.forEach(function (b) { b.button.setAttribute("aria-pressed", flagMask & b.bit ? "true" : "false"); });
    if (visible) apply(true);
    $("items").scrollIntoView({ block: "start" });
  }

  // ---- the virtualized grid --------------------------------------------------------------
  // Rows are absolutely placed in a spacer as tall as every visible item; only the rows
  // in view (and a few more) exist, from a ring of reused elements: row position p is
  // drawn by pool[p % pool.length]. Each row draws its S cells on its own canvas.
  var list = $("list"), spacer = $("spacer"), gridPane = list.parentNode;
  var ROW = 30, CW = 8, CH = 12, OVERSCAN = 6, MAX_SPACER = 15000000;
  var pool = [];
  var version = 0;
  var selected = -1, opened = -1;
  var mode = "";
  function chooseLayout() {
    var width = list.clientWidth || gridPane.clientWidth || 800;
    var avail = width - 24 - 150 - 62 - 24;
    var next, cw;
    if (S * 9 <= avail * 0.6) {
      next = "inline";
      cw = Math.max(6, Math.min(16, Math.floor(avail * 0.6 / Math.max(1, S))));
      CH = Math.min(14, cw - 2);
      ROW = 30;
    } else {
      next = "stacked";
      cw = Math.max(2, Math.min(14, Math.floor((width - 24) / Math.max(1, S))));
      CH = 11;
      ROW = 42;
    }
    var changed = next !== mode || cw !== CW;
    mode = next;
    CW = cw;
    gridPane.classList.toggle("inline", mode === "inline");
    gridPane.classList.toggle("stacked", mode === "stacked");
    gridPane.style.setProperty("--cells-w", (S * CW) + "px");
    gridPane.style.setProperty("--row-h", ROW + "px");
    return changed;
  }
  function sizeCanvas(canvas, height) {
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, Math.round(S * CW * dpr));
    canvas.height = Math.round(height * dpr);
    canvas.style.width = (S * CW) + "px";
    canvas.style.height = height + "px";
    var ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
  }
  function drawHead() {
    var canvas = $("head-cells");
    var ctx = sizeCanvas(canvas, 14);
    ctx.clearRect(0, 0, S * CW, 14);
    ctx.font = "9px " + getComputedStyle(document.body).fontFamily;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.fillStyle = "#656d76";
    var steps = [1, 2, 5, 10, 20, 25, 50, 100, 200, 500];
    var need = String(S).length * 6 + 6;
    var step = steps[steps.length - 1];
    for (var k = 0; k < steps.length; k++) if (steps[k] * CW >= need) { step = steps[k]; break; }
    // Column labels: the rank (ordered by accuracy) or the position (as given).
    for (var c = 0; c < S; c++) {
      if (!(c === 0 || (c + 1) % step === 0)) continue;
      var label = String(orderName === "rank" ? rankOf[order[c]] : order[c] + 1);
      var x = c * CW + CW / 2, half = ctx.measureText(label).width / 2;
      ctx.fillText(label, Math.max(half, Math.min(S * CW - half, x)), 7);
    }
  }
  function makeRow() {
    var row = el("div", "row");
    row.setAttribute("role", "option");
    var q = el("span", "qid"), cv = el("canvas", "cells"), text = el("span", "q"), kc = el("span", "kc");
    row.appendChild(q);
    row.appendChild(cv);
    row.appendChild(text);
    row.appendChild(kc);
    spacer.appendChild(row);
    return { el: row, qid: q, canvas: cv, ctx: null, q: text, kc: kc, pos: -1, item: -1, version: -1, shown: true };
  }
  function ensurePool(size) {
    if (pool.length >= size) return;
    while (pool.length < size) pool.push(makeRow());
    pool.forEach(function (r) { r.pos = -1; r.version = -1; });
  }
  function totalHeight() { return visibleCount * ROW; }
  function spacerHeight() { return Math.min(totalHeight(), MAX_SPACER); }
  // Virtual offset of the list's top edge; beyond MAX_SPACER the scrollbar is scaled.
  function virtualTop() {
    var total = totalHeight(), h = spacerHeight();
    if (total <= h) return list.scrollTop;
    var range = Math.max(1, h - list.clientHeight);
    return (list.scrollTop / range) * Math.max(0, total - list.clientHeight);
  }
  var emptyNote = null;
  function layoutList() {
    spacer.style.height = spacerHeight() + "px";
    renderRows();
  }
  function drawRow(row, item) {
    if (!row.ctx || row.canvasW !== S * CW || row.canvasH !== CH) {
      row.ctx = sizeCanvas(row.canvas, CH);
      row.canvasW = S * CW;
      row.canvasH = CH;
    }
    var ctx = row.ctx;
    ctx.clearRect(0, 0, S * CW, CH);
    var gap = CW >= 4 ? 1 : 0, w = CW - gap, base = item * S, current = -1;
    for (var c = 0; c < S; c++) {
      var k = base + order[c];
      var code = (cells[k >> 2] >> ((k & 3) << 1)) & 3;
      if (code !== current) { ctx.fillStyle = CELL_COLOURS[code]; current = code; }
      ctx.fillRect(c * CW, 0, w, CH);
    }
  }
  function renderRows() {
    var started = performance.now();
    var viewRows = Math.ceil((list.clientHeight || 600) / ROW) + 1;
    var size = viewRows + 2 * OVERSCAN + 2;
    ensurePool(size);
    var P = pool.length;
    var top = virtualTop();
    var shift = list.scrollTop - top;   // 0 unless the scrollbar is scaled
    var first = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
    var last = Math.min(visibleCount, first + P, Math.ceil((top + list.clientHeight) / ROW) + OVERSCAN);
    var used = new Uint8Array(P);
    for (var p = first; p < last; p++) {
      var slot = p % P;
      used[slot] = 1;
      var row = pool[slot];
      var item = visible[p];
      if (!row.shown) { row.el.style.display = ""; row.shown = true; }
      row.el.style.top = (p * ROW + shift) + "px";
      if (row.item !== item || row.version !== version) {
        row.item = item;
        row.version = version;
        row.el.dataset.item = String(item);
        row.el.dataset.pos = String(p);
        row.qid.textContent = qid[item];
        row.qid.title = qid[item];
        row.q.textContent = question[item];
        row.kc.textContent = correctOf[item] + "/" + knownOf[item];
        row.kc.className = "kc" + (flagsOf[item] & 1 ? " f1" : "");
        row.kc.title = correctOf[item] + " correct of " + knownOf[item] + " known, " + (S - knownOf[item]) + " unknown";
        drawRow(row, item);
      }
      row.pos = p;
      var isSelected = item === selected;
      row.el.classList.toggle("selected", isSelected);
      row.el.classList.toggle("opened", item === opened);
      row.el.setAttribute("aria-selected", isSelected ? "true" : "false");
    }
    for (var s = 0; s < P; s++) {
      if (!used[s] && pool[s].shown) { pool[s].el.style.display = "none"; pool[s].shown = false; pool[s].item = -1; }
    }
    state.renderMs = performance.now() - started;
    state.renderMaxMs = Math.max(state.renderMaxMs || 0, state.renderMs);
    if (visibleCount === 0) {
      if (!emptyNote) { emptyNote = el("div", "empty-list", "No item matches the search and filters."); spacer.appendChild(emptyNote); }
    } else if (emptyNote) {
      emptyNote.remove();
      emptyNote = null;
    }
  }
  function relayout() {
    if (!visible) return;
    if (chooseLayout()) {
      pool.forEach(function (r) { r.version = -1; });
      drawHead();
    }
    layoutList();
  }
  var scrolling = false;
  list.addEventListener("scroll", function () {
    if (scrolling) return;
    scrolling = true;
    requestAnimationFrame(function () { scrolling = false; renderRows(); });
  });
  var resizing = false;
  window.addEventListener("resize", function () {
    if (resizing) return;
    resizing = true;
    requestAnimationFrame(function () { resizing = false; relayout(); });
  });

  // Position of an item among the visible ones (they are in item order), or -1.
  function positionOf(index) {
    var lo = 0, hi = visibleCount - 1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (visible[mid] === index) return mid;
      if (visible[mid] < index) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
  }
  function scrollToPosition(position) {
    var total = totalHeight();
    if (total > spacerHeight()) {
      var range = Math.max(1, spacerHeight() - list.clientHeight);
      list.scrollTop = (position * ROW / Math.max(1, total - list.clientHeight)) * range;
      return;
    }
    var y = position * ROW;
    if (y < list.scrollTop) list.scrollTop = y;
    else if (y + ROW > list.scrollTop + list.clientHeight) list.scrollTop = y + ROW - list.clientHeight;
  }
  function select(index) {
    selected = index;
    renderRows();
  }
  function move(step) {
    if (visibleCount === 0) return;
    var position = selected === -1 ? -1 : positionOf(selected);
    var next = position === -1 ? (step > 0 ? 0 : visibleCount - 1) : position + step;
    next = Math.max(0, Math.min(visibleCount - 1, next));
    selected = visible[next];
    scrollToPosition(next);
    renderRows();
  }
  // The item (and side, when over a cell) under a pointer event in the list.
  function hitOf(event) {
    var row = event.target.closest ? event.target.closest(".row") : null;
    if (!row || !row.dataset.item) return null;
    var side = -1;
    if (event.target.tagName === "CANVAS") {
      var box = event.target.getBoundingClientRect();
      var c = Math.floor((event.clientX - box.left) / CW);
      if (c >= 0 && c < S) side = order[c];
    }
    return { item: Number(row.dataset.item), side: side };
  }
  list.addEventListener("click", function (event) {
    var hit = hitOf(event);
    if (!hit) return;
    selected = hit.item;
    open(hit.item, hit.side);
  });
  var tip = $("tip");
  function showTip(event, text) {
    tip.textContent = text;
    tip.hidden = false;
    var x = Math.min(event.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    tip.style.left = Math.max(4, x) + "px";
    tip.style.top = (event.clientY + 16) + "px";
  }
  list.addEventListener("mousemove", function (event) {
    var hit = hitOf(event);
    if (!hit || hit.side === -1) { tip.hidden = true; return; }
    showTip(event, sideTitle(hit.side) + " · " + CELL_NAMES[cellOf(hit.item, hit.side)] + " · " + qid[hit.item]);
  });
  list.addEventListener("mouseleave", function () { tip.hidden = true; });
  $("head-cells").addEventListener("mousemove", function (event) {
    var box = event.target.getBoundingClientRect();
    var c = Math.floor((event.clientX - box.left) / CW);
    if (c < 0 || c >= S) { tip.hidden = true; return; }
    var s = order[c];
    showTip(event, sideTitle(s) + " · " + sides[s].model + " · accuracy " + pct(sides[s].accuracy));
  });
  $("head-cells").addEventListener("mouseleave", function () { tip.hidden = true; });

  // ---- the detail pane -------------------------------------------------------------------
  var detail = $("detail");
  var openToken = 0;
  function field(name, value) {
    var box = el("div", "field");
    box.appendChild(el("div", "field-name", name));
    var pre = el("pre", name, value);
    if (value === "") pre.classList.add("empty");
    box.appendChild(pre);
    return box;
  }
  function open(index, focusSide) {
    opened = index;
    var token = ++openToken;
    renderRows();
    var head = el("div", "detail-head");
    head.appendChild(el("b", "d-qid", qid[index]));
    var f = flagsOf[index];
    if (f & 1) head.appendChild(el("span", "pill f-consensus", "consensus wrong"));
    if (f & 2) head.appendChild(el("span", "pill f-negative", "negative discrimination"));
    if (f & 4) head.appendChild(el("span", "pill f-discordant", "discordant"));
    var lang = langOf[index];
    var identity = el("div", "identity",
      "benchmark " + columns.benchmarks[benchOf[index]] + " · language " + (lang < 0 ? "(none)" : columns.languages[lang]) +
      " · filter " + (columns.filters ? columns.filters[filterOf[index]] : filterOf[index]) + " · repeat " + repeatOf[index] + " · item " + (index + 1) + " of " + int(N));
    var q = el("div", "question d-question", question[index]);
    if (question[index] === "") q.classList.add("empty");
    var tally = el("p", "tally", "correct on " + correctOf[index] + " of " + knownOf[index] + " sides that know it · unknown on " + (S - knownOf[index]) + " of " + S);
    var body = el("div", "detail-sides");
    body.appendChild(el("p", "placeholder", "Loading every side's prediction and response…"));
    detail.replaceChildren(head, identity, q, tally, body);
    detail.scrollTop = 0;
    chunkOf(index).then(function (chunk) {
      if (token !== openToken) return;
      var entries = chunk[index % CHUNK];
      if (!Array.isArray(entries)) throw new Error("item " + index + " is missing from its details chunk");
      drawSides(body, index, entries, focusSide);
      state.opened = index;
      root.dataset.opened = String(index);
      root.dataset.openedCount = String((Number(root.dataset.openedCount) || 0) + 1);
    }).catch(function (error) {
      if (token !== openToken) return;
      body.replaceChildren(el("p", "placeholder", "This item's details cannot be read: " + (error && error.message ? error.message : error)));
      fail("details", error);
    });
  }
  function drawSides(body, index, entries, focusSide) {
    body.replaceChildren();
    // The answers the sides gave, most frequent first.
    var answers = new Map();
    var byCell = [0, 0, 0];
    for (var s = 0; s < S; s++) {
      var code = cellOf(index, s);
      byCell[code === 3 ? 0 : code]++;
      var e = entries[s];
      if (e) answers.set(e[0], (answers.get(e[0]) || 0) + 1);
    }
    if (answers.size) {
      body.appendChild(el("h3", null, "Predictions (" + answers.size + " distinct)"));
      var answerBox = el("div", "answers");
      Array.from(answers.entries()).sort(function (a, b) { return b[1] - a[1]; }).slice(0, 12).forEach(function (a) {
        var chip = el("span", "answer", (a[0] === "" ? "(empty)" : a[0]) + " ×" + a[1]);
        chip.title = a[0];
        answerBox.appendChild(chip);
      });
      body.appendChild(answerBox);
    }
    var sideList = el("div", "side-list");
    var filterBar = el("div", "side-filter");
    [["all", "all", S], ["2", "correct", byCell[2]], ["1", "wrong", byCell[1]], ["0", "unknown", byCell[0]]].forEach(function (f) {
      var chip = el("button", "chip");
      chip.type = "button";
      chip.appendChild(el("span", "chip-label", f[1]));
      chip.appendChild(el("span", "count", f[2]));
      chip.setAttribute("aria-pressed", f[0] === "all" ? "true" : "false");
      chip.addEventListener("click", function () {
        sideList.className = "side-list" + (f[0] === "all" ? "" : " only-" + f[0]);
        Array.prototype.forEach.call(filterBar.children, function (c) { c.setAttribute("aria-pressed", c === chip ? "true" : "false"); });
      });
      filterBar.appendChild(chip);
    });
    body.appendChild(filterBar);
    var focus = null;
    order.forEach(function (s) {
      var code = cellOf(index, s);
      var box = el("section", "side c" + (code === 3 ? 0 : code));
      box.dataset.side = String(s);
      var head = el("div", "side-head");
      head.appendChild(el("span", "verdict c" + code, CELL_NAMES[code]));
      head.appendChild(el("span", "side-name", sideTitle(s)));
      head.appendChild(el("span", "model", sides[s].model));
      box.appendChild(head);
      var e = entries[s];
      if (e === null || e === undefined) {
        box.appendChild(el("p", "no-record", "no record"));
      } else {
        box.appendChild(field("prediction", e[0] === null || e[0] === undefined ? "" : String(e[0])));
        box.appendChild(field("response", e[1] === null || e[1] === undefined ? "" : String(e[1])));
      }
      if (s === focusSide) focus = box;
      sideList.appendChild(box);
    });
    body.appendChild(sideList);
    if (focus) {
      focus.classList.add("flash");
      var top = focus.offsetTop - detail.offsetTop - 40;
      detail.scrollTop = Math.max(0, top);
    }
  }

  // ---- controls --------------------------------------------------------------------------
  var search = $("search");
  function clearAll() {
    search.value = "";
    flagMask = 0;
    chipButtons.forEach(function (b) { b.button.setAttribute("aria-pressed", "false"); });
    languagePick = null;
    benchmarkPick = null;
    $("language").value = "all";
    $("benchmark").value = "all";
    apply(true);
  }
  function buildControls() {
    var chips = $("flag-chips");
    FLAG_LABELS.forEach(function (f) {
      var button = el("button", "chip");
      button.type = "button";
      button.dataset.flag = f[0];
      button.setAttribute("aria-pressed", "false");
      button.appendChild(el("span", "chip-label", f[1]));
      var count = el("span", "count", "0");
      button.appendChild(count);
      button.addEventListener("click", function () {
        flagMask ^= f[2];
        button.setAttribute("aria-pressed", flagMask & f[2] ? "true" : "false");
        apply(true);
      });
      chipButtons.push({ button: button, count: count, bit: f[2] });
      chips.appendChild(button);
    });
    var langSelect = $("language");
    var all = el("option", null, "all");
    all.value = "all";
    langSelect.appendChild(all);
    var hasNone = false;
    for (var i = 0; i < N; i++) if (langOf[i] < 0) { hasNone = true; break; }
    columns.languages.forEach(function (name, k) {
      var option = el("option", null, name);
      option.value = String(k);
      option.dataset.label = name;
      langSelect.appendChild(option);
      languageOptions.push({ option: option, label: name, value: k });
    });
    if (hasNone) {
      var none = el("option", null, "(none)");
      none.value = "-1";
      none.dataset.label = "(none)";
      none.dataset.none = "1";
      langSelect.appendChild(none);
      languageOptions.push({ option: none, label: "(none)", value: -1 });
    }
    langSelect.addEventListener("change", function () {
      languagePick = langSelect.value === "all" ? null : Number(langSelect.value);
      apply(true);
    });
    var benchSelect = $("benchmark");
    var allB = el("option", null, "all");
    allB.value = "all";
    benchSelect.appendChild(allB);
    columns.benchmarks.forEach(function (name, k) {
      var option = el("option", null, name);
      option.value = String(k);
      option.dataset.label = name;
      benchSelect.appendChild(option);
      benchmarkOptions.push({ option: option, label: name, value: k });
    });
    benchSelect.addEventListener("change", function () {
      benchmarkPick = benchSelect.value === "all" ? null : Number(benchSelect.value);
      apply(true);
    });
    $("clear").addEventListener("click", clearAll);
    search.addEventListener("input", function () { apply(true); });
    search.addEventListener("keydown", function (event) {
      if (event.key === "Escape") {
        search.value = "";
        apply(true);
        event.preventDefault();
      } else if (event.key === "ArrowDown") {
        list.focus();
        if (selected === -1) move(1);
        event.preventDefault();
      } else if (event.key === "Enter") {
        list.focus();
        if (selected === -1) move(1);
        if (selected !== -1) open(selected, -1);
        event.preventDefault();
      }
    });
    list.addEventListener("keydown", function (event) {
      var page = Math.max(1, Math.floor(list.clientHeight / ROW) - 1);
      var steps = { ArrowDown: 1, j: 1, ArrowUp: -1, k: -1, PageDown: page, PageUp: -page };
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.key in steps) { move(steps[event.key]); event.preventDefault(); }
      else if (event.key === "Home") { selected = -1; move(1); event.preventDefault(); }
      else if (event.key === "End") { selected = -1; move(-1); event.preventDefault(); }
      else if (event.key === "Enter" || event.key === " ") {
        if (selected === -1) move(1);
        if (selected !== -1) open(selected, -1);
        event.preventDefault();
      }
    });
    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      var active = document.activeElement;
      var typing = active && (active.tagName === "INPUT" || active.tagName === "SELECT" || active.tagName === "TEXTAREA");
      if (event.key === "/" && active !== search) {
        search.focus();
        search.select();
        event.preventDefault();
      } else if (!typing && active !== list && (event.key === "j" || event.key === "k")) {
        list.focus();
        move(event.key === "j" ? 1 : -1);
        event.preventDefault();
      } else if (!typing && event.key === "Escape" && search.value) {
        search.value = "";
        apply(true);
      }
    });
  }
  $("order").addEventListener("change", function (event) {
    orderName = event.target.value;
    order = orderName === "rank" ? byAccuracy.slice() : given.slice();
    heat.hover = null;
    drawHeat();
    readout(heat.pinned);
    renderSlices();
    if (visible) {
      drawHead();
      version++;
      renderRows();
      if (opened !== -1) open(opened, -1);
    }
  });

  // ---- start -----------------------------------------------------------------------------
  try {
    renderHeader();
    renderLeaderboard();
    mark("leaderboard");
    heatInit();
    mark("heatmap");
    renderSlices();
    renderRobustness();
    mark("summary");
  } catch (error) {
    fail("summary", error);
  }
  loading.then(function (data) {
    mark("inflated");
    columns = data[0];
    cells = data[1];
    if (cells.length < Math.ceil(N * S / 4)) throw new Error("panel-cells holds " + cells.length + " bytes, " + Math.ceil(N * S / 4) + " expected");
    qid = columns.question_id;
    question = columns.question || [];
    benchOf = Int32Array.from(columns.benchmark);
    langOf = Int32Array.from(columns.language);
    filterOf = columns.filter ? Int32Array.from(columns.filter) : new Int32Array(N);
    repeatOf = columns.repeat_id || [];
    knownOf = Int32Array.from(columns.known);
    correctOf = Int32Array.from(columns.correct);
    flagsOf = Uint8Array.from(columns.flags);
    if (qid.length !== N) throw new Error("panel-index holds " + qid.length + " items, meta says " + N);
    // The searched text of each item, lower-cased once.
    texts = new Array(N);
    for (var i = 0; i < N; i++) {
      if (typeof question[i] !== "string") question[i] = question[i] === null || question[i] === undefined ? "" : String(question[i]);
      texts[i] = (qid[i] + "\n" + question[i]).toLowerCase();
    }
    mark("texts");
    visible = new Uint32Array(N);
    langCounts = new Uint32Array(columns.languages.length + 1);
    benchCounts = new Uint32Array(columns.benchmarks.length);
    buildControls();
    chooseLayout();
    drawHead();
    apply(true);
    state.readyMs = performance.now();
    state.scriptMs = state.readyMs - state.scriptStartMs;
    root.dataset.ready = "1";
  }).catch(function (error) {
    fail("panel-index/panel-cells", error);
  });
})();
