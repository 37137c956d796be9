(function () {
  "use strict";
  // Every dataset or model string reaches the page through textContent, never innerHTML.
  // The data (html.rs): #babel-index holds {meta, columns}, each column a JSON array
  // compressed with raw deflate and base64-encoded; #babel-details holds the detail
  // chunks, compressed alike, each cut out of the element (meta.chunk_text_starts) and
  // inflated when one of its items is opened.
  var started = performance.now();
  var indexData = JSON.parse(document.getElementById("babel-index").textContent);
  var meta = indexData.meta;
  var N = meta.items;
  // A side in a detail chunk: the array SIDE_FIELDS names (html.rs write_side).
  var SIDE_FIELDS = ["correct", "input", "target", "prediction", "response", "scores",
    "metrics", "warnings", "source", "locator", "rephrasing_model", "extra"];
  var F = {};
  SIDE_FIELDS.forEach(function (name, i) { F[name] = i; });
  var OUTCOMES = meta.outcomes;
  var ROW = 44;
  var MAX_SPACER = 15000000;
  var MARKS = [["·", "mark-none", "no record"], ["✓", "mark-true", "correct"],
    ["✗", "mark-false", "wrong"], ["?", "mark-null", "unknown"]];

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function show(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }
  function languageName(index) {
    var name = meta.languages[index];
    return name === null ? "(none)" : name;
  }

  // ---- decoding -------------------------------------------------------------------------
  function bytesOf(base64) {
    if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(base64);
    var binary = atob(base64);
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }
  // Inflates with the browser's own decoder: no network, nothing but this page.
  function inflate(base64) {
    var stream = new Blob([bytesOf(base64)]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    return new Response(stream).text().then(JSON.parse);
  }
  var detailsText = null;
  var chunks = {};
  // The number of the chunk holding item `index`: the last chunk starting at or before it
  // (a chunk ends at 64 items, or sooner when its records are long).
  function chunkNumber(index) {
    var starts = meta.chunk_starts, low = 0, high = starts.length - 1;
    while (low < high) {
      var middle = (low + high + 1) >> 1;
      if (starts[middle] <= index) low = middle; else high = middle - 1;
    }
    return low;
  }
  // Chunk `number`'s base64, cut out of #babel-details where the meta says it begins (up
  // to its closing quote): the element is not parsed whole.
  function chunkText(number) {
    if (detailsText === null) detailsText = $("babel-details").textContent;
    var start = meta.chunk_text_starts[number];
    var end = detailsText.indexOf('"', start);
    if (detailsText.charAt(start - 1) !== '"' || end < 0) throw new Error("the page's detail chunks are damaged");
    return detailsText.substring(start, end);
  }
  function chunkOf(number) {
    if (!chunks[number]) chunks[number] = Promise.resolve(number).then(chunkText).then(inflate);
    return chunks[number].then(function (chunk) { return chunk; });
  }
  // A long string is {"\u0000": n}, the chunk's string n; an object whose only key is
  // U+0000 is {"\u0000": [value]}.
  function resolve(value, strings) {
    if (Array.isArray(value)) return value.map(function (v) { return resolve(v, strings); });
    if (value === null || typeof value !== "object") return value;
    var keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === "\u0000") {
      var inner = value["\u0000"];
      if (typeof inner === "number") return strings[inner];
      var literal = {};
      literal["\u0000"] = resolve(inner[0], strings);
      return literal;
    }
    var out = {};
    keys.forEach(function (key) { out[key] = resolve(value[key], strings); });
    return out;
  }
  function sidesOf(index) {
    var number = chunkNumber(index);
    return chunkOf(number).then(function (chunk) {
      var item = chunk.i[index - meta.chunk_starts[number]];
      return [resolve(item[0], chunk.s), resolve(item[1], chunk.s)];
    });
  }

  var outcomeOf, benchmarkOf, languageOf, markB, markV, qid, script, filter, repeat, question, searchText;

  // What the browser test reads: timings and the state of the page.
  var report = window.babelReport = { items: N, filters: 0, lastFilterMs: 0, inputAt: 0, readyMs: 0, details: 0 };

  // ---- search --------------------------------------------------------------------------
  var texts = null;
  var textsBuilt = 0;
  function buildTexts(until) {
    if (!texts) texts = new Array(N);
    for (; textsBuilt < until; textsBuilt++) {
      var i = textsBuilt;
      texts[i] = (qid[i] + "\n" + question[i] + "\n" + searchText[i]).toLowerCase();
    }
  }
  function buildTextsInBackground() {
    if (textsBuilt >= N) return;
    buildTexts(Math.min(N, textsBuilt + 20000));
    setTimeout(buildTextsInBackground, 0);
  }

  var query = "";
  var searchHits = null;
  function updateSearch(next) {
    next = next.trim().toLowerCase();
    if (next === query) return;
    if (!next) { query = ""; searchHits = null; return; }
    buildTexts(N);
    // A query that extends the previous one can only match what that one matched.
    var narrowing = query && searchHits && next.indexOf(query) !== -1;
    var hits = new Uint8Array(N);
    for (var i = 0; i < N; i++) {
      if (narrowing && !searchHits[i]) continue;
      if (texts[i].indexOf(next) !== -1) hits[i] = 1;
    }
    query = next;
    searchHits = hits;
  }

  // ---- facets --------------------------------------------------------------------------
  function Facet(containerId, names, of) {
    this.container = $(containerId);
    this.names = names;
    this.of = of;
    this.selected = new Uint8Array(names.length);
    this.any = false;
    this.counts = new Uint32Array(names.length);
    this.buttons = [];
    var facet = this;
    names.forEach(function (name, index) {
      var button = el("button", "chip");
      button.type = "button";
      button.dataset.index = String(index);
      button.setAttribute("aria-pressed", "false");
      var label = el("span", "chip-label", name.label);
      if (name.outcome) {
        var dot = el("span", "dot o-" + name.outcome);
        button.appendChild(dot);
        button.dataset.outcome = name.outcome;
      }
      button.appendChild(label);
      var count = el("span", "count", "0");
      button.appendChild(count);
      button.addEventListener("click", function () { facet.toggle(index); });
      facet.buttons.push({ button: button, count: count });
      facet.container.appendChild(button);
    });
  }
  Facet.prototype.toggle = function (index) {
    this.selected[index] = this.selected[index] ? 0 : 1;
    this.any = this.selected.some(function (v) { return v === 1; });
    this.buttons[index].button.setAttribute("aria-pressed", this.selected[index] ? "true" : "false");
    schedule(true);
  };
  Facet.prototype.clear = function () {
    this.selected.fill(0);
    this.any = false;
    this.buttons.forEach(function (b) { b.button.setAttribute("aria-pressed", "false"); });
  };
  Facet.prototype.passes = function (i) { return !this.any || this.selected[this.of[i]] === 1; };
  Facet.prototype.paint = function () {
    for (var k = 0; k < this.buttons.length; k++) {
      var count = this.counts[k];
      this.buttons[k].count.textContent = String(count);
      this.buttons[k].button.classList.toggle("empty", count === 0 && !this.selected[k]);
    }
  };

  var outcomeFacet, languageFacet, benchmarkFacet;

  // ---- filtering -----------------------------------------------------------------------
  var visible = new Uint32Array(N);
  var visibleCount = 0;
  var selected = -1;

  function apply(resetScroll) {
    var t = performance.now();
    updateSearch($("search").value);
    outcomeFacet.counts.fill(0);
    languageFacet.counts.fill(0);
    benchmarkFacet.counts.fill(0);
    var n = 0;
    for (var i = 0; i < N; i++) {
      if (searchHits && !searchHits[i]) continue;
      var po = outcomeFacet.passes(i), pl = languageFacet.passes(i), pb = benchmarkFacet.passes(i);
      // Each facet counts what the other filters let through, so its numbers say what
      // selecting a value would show.
      if (pl && pb) outcomeFacet.counts[outcomeOf[i]]++;
      if (po && pb) languageFacet.counts[languageOf[i]]++;
      if (po && pl) benchmarkFacet.counts[benchmarkOf[i]]++;
      if (po && pl && pb) visible[n++] = i;
    }
    visibleCount = n;
    outcomeFacet.paint();
    languageFacet.paint();
    benchmarkFacet.paint();
    $("status").textContent = "Showing " + n.toLocaleString("en") + " of " + N.toLocaleString("en") + " items";
    if (resetScroll) list.scrollTop = 0;
    layout();
    if (selected !== -1 && positionOf(selected) === -1) select(-1);
    report.lastFilterMs = performance.now() - t;
    document.documentElement.dataset.filtered = String(++report.filters);
  }

  var pending = false;
  var pendingReset = false;
  function schedule(resetScroll) {
    pendingReset = pendingReset || resetScroll;
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () {
      pending = false;
      var reset = pendingReset;
      pendingReset = false;
      apply(reset);
    });
  }

  // ---- the virtualized list ------------------------------------------------------------
  var list = $("list");
  var spacer = $("spacer");
  function totalHeight() { return visibleCount * ROW; }
  function spacerHeight() { return Math.min(totalHeight(), MAX_SPACER); }
  // Virtual offset of the list's top edge; beyond MAX_SPACER the scrollbar is scaled.
  function virtualTop() {
    var total = totalHeight(), h = spacerHeight();
    if (total <= h) return list.scrollTop;
    var range = Math.max(1, h - list.clientHeight);
    return (list.scrollTop / range) * Math.max(0, total - list.clientHeight);
  }
  function layout() {
    spacer.style.height = spacerHeight() + "px";
    renderRows();
  }
  function renderRows() {
    var top = virtualTop();
    var first = Math.max(0, Math.floor(top / ROW) - 4);
    var last = Math.min(visibleCount, Math.ceil((top + list.clientHeight) / ROW) + 4);
    var fragment = document.createDocumentFragment();
    for (var p = first; p < last; p++) {
      var index = visible[p];
      var row = el("div", "row" + (index === selected ? " selected" : ""));
      row.setAttribute("role", "option");
      row.setAttribute("aria-selected", index === selected ? "true" : "false");
      row.dataset.item = String(index);
      row.style.top = (list.scrollTop + p * ROW - top) + "px";
      var outcome = OUTCOMES[outcomeOf[index]];
      var dot = el("span", "dot o-" + outcome.name);
      dot.title = outcome.label;
      row.appendChild(dot);
      row.appendChild(el("span", "cell bench", meta.benchmarks[benchmarkOf[index]]));
      row.appendChild(el("span", "cell lang", languageName(languageOf[index])));
      var q = el("span", "cell q");
      q.appendChild(el("span", "qid", qid[index]));
      q.appendChild(document.createTextNode(question[index]));
      row.appendChild(q);
      var marks = el("span", "cell marks");
      [markB[index], markV[index]].forEach(function (m, k) {
        var span = el("span", MARKS[m][1], MARKS[m][0]);
        span.title = (k === 0 ? "baseline: " : "variant: ") + MARKS[m][2];
        marks.appendChild(span);
        if (k === 0) marks.appendChild(document.createTextNode(" "));
      });
      row.appendChild(marks);
      fragment.appendChild(row);
    }
    spacer.replaceChildren(fragment);
    if (visibleCount === 0) {
      spacer.appendChild(el("div", "empty-list", "No item matches the search and filters."));
    }
  }
  var scrolling = false;
  list.addEventListener("scroll", function () {
    if (scrolling) return;
    scrolling = true;
    requestAnimationFrame(function () { scrolling = false; renderRows(); });
  });
  window.addEventListener("resize", function () { renderRows(); });
  list.addEventListener("click", function (event) {
    var row = event.target.closest(".row");
    if (row) select(Number(row.dataset.item));
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
  function scrollIntoView(position) {
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
  function move(step) {
    if (visibleCount === 0) return;
    var position = selected === -1 ? -1 : positionOf(selected);
    var next = position === -1 ? (step > 0 ? 0 : visibleCount - 1) : position + step;
    next = Math.max(0, Math.min(visibleCount - 1, next));
    select(visible[next]);
    scrollIntoView(next);
    renderRows();
  }
  list.addEventListener("keydown", function (event) {
    var page = Math.max(1, Math.floor(list.clientHeight / ROW) - 1);
    var steps = { ArrowDown: 1, j: 1, ArrowUp: -1, k: -1, PageDown: page, PageUp: -page };
    if (event.key in steps) { move(steps[event.key]); event.preventDefault(); }
    else if (event.key === "Home") { selected = -1; move(1); event.preventDefault(); }
    else if (event.key === "End") { selected = -1; move(-1); event.preventDefault(); }
  });

  // ---- the detail pane -----------------------------------------------------------------
  var detail = $("detail");
  function field(name, content) {
    var box = el("div", "field");
    box.appendChild(el("div", "field-name", name));
    box.appendChild(content);
    return box;
  }
  function valueNode(value) {
    if (value === null || value === undefined) return el("div", "null", "null (unknown)");
    return el("pre", null, show(value));
  }
  function choiceIndex(value) {
    if (typeof value === "number" && Number.isInteger(value)) return value;
    if (value && typeof value === "object" && Number.isInteger(value.index)) return value.index;
    return -1;
  }
  function sideNode(title, label, side) {
    if (!side) {
      var missing = el("section", "side missing");
      missing.appendChild(el("h2", null, title));
      missing.appendChild(el("p", null, "No record of this item on this side (run " + label.run_id + ", variant " + label.variant_id + ")."));
      return missing;
    }
    var box = el("section", "side");
    var head = el("h2");
    head.appendChild(el("span", null, title));
    var c = side[F.correct];
    var verdict = el("span", "verdict v-" + String(c), c === true ? "correct" : c === false ? "wrong" : "correctness unknown");
    head.appendChild(verdict);
    box.appendChild(head);
    var input = side[F.input];
    if (input && typeof input === "object" && !Array.isArray(input)) {
      var rest = {};
      var hasRest = false;
      Object.keys(input).forEach(function (key) {
        if (key === "question" && typeof input.question === "string") return;
        if (key === "choices" && Array.isArray(input.choices)) return;
        rest[key] = input[key];
        hasRest = true;
      });
      if (typeof input.question === "string") box.appendChild(field("question", el("div", "question", input.question)));
      if (Array.isArray(input.choices)) {
        var target = choiceIndex(side[F.target]), predicted = choiceIndex(side[F.prediction]);
        var ol = el("ol", "choices");
        ol.start = 0;
        input.choices.forEach(function (choice, k) {
          var li = el("li", null, show(choice));
          if (k === target) li.appendChild(el("span", "tag target", "target"));
          if (k === predicted) li.appendChild(el("span", "tag predicted", "prediction"));
          ol.appendChild(li);
        });
        box.appendChild(field("choices", ol));
      }
      if (hasRest) box.appendChild(field("input", valueNode(rest)));
    } else {
      box.appendChild(field("input", valueNode(input)));
    }
    box.appendChild(field("target", valueNode(side[F.target])));
    box.appendChild(field("prediction", valueNode(side[F.prediction])));
    box.appendChild(field("response", valueNode(side[F.response])));
    ["scores", "metrics", "extra"].forEach(function (name) {
      var value = side[F[name]];
      if (value && Object.keys(value).length) box.appendChild(field(name, valueNode(value)));
    });
    var warnings = side[F.warnings];
    if (warnings.length) {
      var ul = el("ul", "warnings");
      warnings.forEach(function (w) { ul.appendChild(el("li", null, w)); });
      box.appendChild(field("warnings", ul));
    }
    if (side[F.rephrasing_model] !== null) box.appendChild(field("rephrasing model", el("div", null, side[F.rephrasing_model])));
    var where = meta.sources[side[F.source]] + side[F.locator];
    box.appendChild(field("source", el("div", "source", where)));
    return box;
  }
  function select(index) {
    selected = index;
    if (index === -1) {
      detail.replaceChildren(el("p", "placeholder", "Select an item to see both sides."));
      renderRows();
      return;
    }
    var outcome = OUTCOMES[outcomeOf[index]];
    var head = el("div", "detail-head");
    head.appendChild(el("span", "pill o-" + outcome.name, outcome.label));
    head.appendChild(el("b", null, qid[index]));
    var identity = el("div", "identity",
      "benchmark " + meta.benchmarks[benchmarkOf[index]] + " · language " + languageName(languageOf[index]) +
      " · script " + (script[index] === null ? "(none)" : script[index]) + " · filter " + filter[index] + " · repeat " + repeat[index]);
    var grid = el("div", "sides-grid");
    grid.appendChild(el("p", "placeholder", "Loading both sides…"));
    detail.replaceChildren(head, identity, grid);
    detail.scrollTop = 0;
    renderRows();
    sidesOf(index).then(function (sides) {
      if (selected !== index) return;
      grid.replaceChildren(
        sideNode("Baseline · " + meta.baseline.variant_id, meta.baseline, sides[0]),
        sideNode("Variant · " + meta.variant.variant_id, meta.variant, sides[1]));
      document.documentElement.dataset.detail = String(++report.details);
    }, function (error) {
      grid.replaceChildren(el("p", "placeholder", "This item's details cannot be read: " + error));
    });
  }

  // ---- controls ------------------------------------------------------------------------
  var search = $("search");
  search.addEventListener("input", function () { report.inputAt = performance.now(); schedule(true); });
  search.addEventListener("keydown", function (event) {
    if (event.key === "Escape") { search.value = ""; schedule(true); }
    else if (event.key === "ArrowDown" || event.key === "Enter") { list.focus(); if (selected === -1) move(1); event.preventDefault(); }
  });
  $("clear").addEventListener("click", function () {
    search.value = "";
    outcomeFacet.clear();
    languageFacet.clear();
    benchmarkFacet.clear();
    schedule(true);
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "/" && document.activeElement !== search) { search.focus(); search.select(); event.preventDefault(); }
  });

  // ---- start ---------------------------------------------------------------------------
  var names = ["outcome", "benchmark", "language", "question_id", "script", "filter",
    "repeat_id", "baseline_mark", "variant_mark", "question", "search"];
  Promise.all(names.map(function (name) { return inflate(indexData.columns[name]); })).then(function (columns) {
    var c = {};
    names.forEach(function (name, k) { c[name] = columns[k]; });
    outcomeOf = Uint8Array.from(c.outcome);
    benchmarkOf = Uint32Array.from(c.benchmark);
    languageOf = Uint32Array.from(c.language);
    markB = Uint8Array.from(c.baseline_mark);
    markV = Uint8Array.from(c.variant_mark);
    qid = c.question_id;
    script = c.script;
    filter = c.filter;
    repeat = c.repeat_id;
    question = c.question;
    searchText = c.search;
    outcomeFacet = new Facet("facet-outcome", OUTCOMES.map(function (o) {
      return { label: o.label, outcome: o.name };
    }), outcomeOf);
    languageFacet = new Facet("facet-language", meta.languages.map(function (l, index) {
      return { label: languageName(index) };
    }), languageOf);
    benchmarkFacet = new Facet("facet-benchmark", meta.benchmarks.map(function (b) {
      return { label: b };
    }), benchmarkOf);
    apply(true);
    report.readyMs = performance.now();
    report.scriptMs = report.readyMs - started;
    document.documentElement.dataset.ready = "1";
    setTimeout(buildTextsInBackground, 50);
  }, function (error) {
    $("status").textContent = "This report's data cannot be read: " + error;
  });
})();
