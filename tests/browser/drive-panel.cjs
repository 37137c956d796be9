// Drives a `babel panel` HTML page in headless Chromium and prints what it observed as one
// JSON document on stdout; the Rust test decides what is right.
//
// Usage: node drive-panel.cjs CONFIG.json
//   {"chromium": path, "userDataDir": path, "page": path, "screenshot": path|null,
//    "query": string, "flag": "consensus"|"negative"|"discordant",
//    "language": string|null, "open": question_id}
// The query is typed key by key, each keystroke timed until the page reports its next
// update (document.documentElement.dataset.updates); the flag chip is clicked; the
// language is chosen by its name ("(none)" for items without one); the `open`
// question_id is searched, the first row opened, and the detail pane read.
"use strict";
const fs = require("fs");
const { chromium } = require("playwright-core");

const config = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const READY_TIMEOUT = 120000;
const STEP_TIMEOUT = 30000;

const consoleErrors = [];
const dialogs = [];
const requests = [];
let currentStep = "launch";
let page = null;

// Runs one step; a failure names the step and what the page said about itself.
async function step(name, fn) {
  currentStep = name;
  try {
    return await fn();
  } catch (error) {
    let pageError = null;
    try {
      if (page) pageError = await page.evaluate(() => document.documentElement.dataset.error || null);
    } catch (_) { /* the page may be gone */ }
    const message = "step '" + name + "' failed: " + (error && error.message ? error.message.split("\n")[0] : String(error)) +
      (pageError ? "\n  the page reports: " + pageError : "") +
      (consoleErrors.length ? "\n  console errors: " + JSON.stringify(consoleErrors) : "");
    throw new Error(message);
  }
}

function updates() {
  return page.evaluate(() => Number(document.documentElement.dataset.updates || 0));
}

async function nextUpdate(before, what) {
  try {
    await page.waitForFunction((n) => Number(document.documentElement.dataset.updates || 0) > n, before, { timeout: STEP_TIMEOUT });
  } catch (error) {
    throw new Error("the page did not update after " + what + " within " + STEP_TIMEOUT / 1000 + " s");
  }
}

// The status line, the filtered count and the question_ids of the rows in view.
function observe() {
  return page.evaluate(() => {
    const list = document.getElementById("list").getBoundingClientRect();
    const rows = [...document.querySelectorAll("#spacer .row")].filter((row) => {
      if (row.style.display === "none") return false;
      const box = row.getBoundingClientRect();
      return box.bottom > list.top + 1 && box.top < list.bottom - 1;
    }).sort((a, b) => Number(a.dataset.pos) - Number(b.dataset.pos))
      .map((row) => row.querySelector(".qid").textContent);
    return {
      status: document.getElementById("status").textContent,
      filtered: Number(document.documentElement.dataset.filtered),
      rows,
    };
  });
}

async function clickAndWait(selector, what) {
  const before = await updates();
  await page.click(selector, { timeout: STEP_TIMEOUT });
  await nextUpdate(before, what);
}

async function typeQuery(query) {
  await page.focus("#search");
  const keystrokes = [];
  for (const key of query) {
    const before = await updates();
    const start = process.hrtime.bigint();
    await page.keyboard.type(key);
    await nextUpdate(before, "typing '" + key + "'");
    const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
    const inPage = await page.evaluate(() => ({ filterMs: window.babelPanel.lastFilterMs }));
    keystrokes.push({ key, wall_ms: round(wallMs), filter_ms: round(inPage.filterMs) });
  }
  return keystrokes;
}

function round(x) { return Math.round(x * 100) / 100; }
function stats(values) {
  if (!values.length) return { max: null, mean: null };
  return { max: round(Math.max(...values)), mean: round(values.reduce((a, b) => a + b, 0) / values.length) };
}

// What the detail pane shows: its whole text, and its parts by role.
function readDetail() {
  return page.evaluate(() => {
    const detail = document.getElementById("detail");
    const text = (selector) => { const e = detail.querySelector(selector); return e ? e.textContent : null; };
    return {
      text: detail.textContent,
      question_id: text(".d-qid"),
      identity: text(".identity"),
      question: text(".d-question"),
      tally: text(".tally"),
      flags: [...detail.querySelectorAll(".detail-head .pill")].map((p) => p.textContent),
      sides: [...detail.querySelectorAll(".side-list .side")].map((side) => {
        const pred = side.querySelector("pre.prediction");
        const resp = side.querySelector("pre.response");
        return {
          side: Number(side.dataset.side),
          name: side.querySelector(".side-name").textContent,
          cell: side.querySelector(".verdict").textContent,
          no_record: side.querySelector(".no-record") !== null,
          prediction: pred ? pred.textContent : null,
          response: resp ? resp.textContent : null,
        };
      }),
    };
  });
}

async function openFirstRow(what) {
  const target = await page.evaluate(() => {
    const row = document.querySelector('#spacer .row[data-pos="0"]');
    return row && row.style.display !== "none" ? { item: Number(row.dataset.item), qid: row.querySelector(".qid").textContent } : null;
  });
  if (!target) throw new Error("no row to open after " + what);
  const before = await page.evaluate(() => Number(document.documentElement.dataset.openedCount || 0));
  await page.click('#spacer .row[data-pos="0"] .qid', { timeout: STEP_TIMEOUT });
  try {
    await page.waitForFunction(([item, n]) => Number(document.documentElement.dataset.openedCount || 0) > n &&
      document.documentElement.dataset.opened === String(item), [target.item, before], { timeout: STEP_TIMEOUT });
  } catch (error) {
    throw new Error("item " + target.item + " (" + target.qid + ") was not opened within " + STEP_TIMEOUT / 1000 + " s");
  }
  return target;
}

async function run(context) {
  page = await context.newPage();
  page.on("dialog", (dialog) => { dialogs.push(dialog.message()); dialog.dismiss().catch(() => {}); });
  page.on("pageerror", (error) => consoleErrors.push(String(error)));
  page.on("console", (message) => { if (message.type() === "error") consoleErrors.push(message.text()); });
  const out = { page_bytes: fs.statSync(config.page).size };

  await step("open the page", async () => {
    const start = Date.now();
    await page.goto("file://" + config.page, { timeout: READY_TIMEOUT });
    try {
      await page.waitForFunction(() => document.documentElement.dataset.ready === "1" || document.documentElement.dataset.error,
        null, { timeout: READY_TIMEOUT });
    } catch (error) {
      throw new Error("dataset.ready was not set within " + READY_TIMEOUT / 1000 + " s");
    }
    out.wall_open_ms = Date.now() - start;
    const timing = await page.evaluate(() => ({
      ready: document.documentElement.dataset.ready === "1",
      error: document.documentElement.dataset.error || null,
      readyMs: window.babelPanel.readyMs,
      scriptMs: window.babelPanel.scriptMs,
      heap: performance.memory ? performance.memory.usedJSHeapSize : null,
      marks: window.babelPanel.marks || null,
      navigation: (() => {
        const n = performance.getEntriesByType("navigation")[0];
        return n ? { response_end_ms: round(n.responseEnd), dom_interactive_ms: round(n.domInteractive) } : null;
        function round(x) { return Math.round(x * 10) / 10; }
      })(),
    }));
    if (!timing.ready) throw new Error("the page failed to start: " + timing.error);
    out.first_render_ms = round(timing.readyMs);
    out.script_ms = round(timing.scriptMs);
    out.js_heap_mb = timing.heap === null ? null : round(timing.heap / 1e6);
    out.marks = timing.marks;
    out.navigation = timing.navigation;
    out.scripts_at_start = await page.evaluate(() => document.scripts.length);
    out.initial = await observe();
    out.counts = await page.evaluate(() => document.getElementById("counts").textContent);
  });

  await step("type the query", async () => {
    const keystrokes = await typeQuery(config.query || "");
    out.keystrokes = keystrokes;
    const wall = stats(keystrokes.map((k) => k.wall_ms));
    const filter = stats(keystrokes.map((k) => k.filter_ms));
    out.keystroke_max_ms = wall.max;
    out.keystroke_mean_ms = wall.mean;
    out.filter_max_ms = filter.max;
    out.filter_mean_ms = filter.mean;
    out.searched = await observe();
  });

  await step("clear the search with Escape", async () => {
    const before = await updates();
    await page.focus("#search");
    await page.keyboard.press("Escape");
    await nextUpdate(before, "Escape in the search box");
    out.escape_cleared = await observe();
    out.escape_cleared.search = await page.inputValue("#search");
  });

  await step("click the flag chip '" + config.flag + "'", async () => {
    const selector = '#flag-chips .chip[data-flag="' + config.flag + '"]';
    if (!(await page.$(selector))) throw new Error("no chip " + selector);
    const start = Date.now();
    await clickAndWait(selector, "clicking the flag chip");
    out.flag = await observe();
    out.flag.name = config.flag;
    out.flag.wall_ms = Date.now() - start;
    out.flag.filter_ms = round(await page.evaluate(() => window.babelPanel.lastFilterMs));
    out.flag.chips = await page.evaluate(() => [...document.querySelectorAll("#flag-chips .chip")].map((c) => ({
      flag: c.dataset.flag, label: c.querySelector(".chip-label").textContent,
      count: Number(c.querySelector(".count").textContent.replace(/,/g, "")), pressed: c.getAttribute("aria-pressed") === "true",
    })));
    await clickAndWait("#clear", "clicking Clear");
  });

  out.language = null;
  if (config.language !== null && config.language !== undefined) {
    await step("choose the language '" + config.language + "'", async () => {
      const options = await page.evaluate(() => [...document.querySelectorAll("#language option")].map((o) => ({ value: o.value, label: o.dataset.label || null })));
      const option = options.find((o) => o.label === config.language);
      if (!option) throw new Error("no language option named " + JSON.stringify(config.language) + "; the page offers " + JSON.stringify(options.map((o) => o.label).filter((l) => l !== null)));
      const before = await updates();
      await page.selectOption("#language", option.value);
      await nextUpdate(before, "choosing the language");
      out.language = await observe();
      out.language.name = config.language;
      await clickAndWait("#clear", "clicking Clear");
    });
  }

  await step("open '" + config.open + "'", async () => {
    const before = await updates();
    await page.fill("#search", config.open);
    await nextUpdate(before, "searching for the item to open");
    const searched = await observe();
    const target = await openFirstRow("searching " + JSON.stringify(config.open));
    out.open = { searched, item: target.item, question_id: target.qid, detail: await readDetail() };
    out.open.images = await page.evaluate(() => document.images.length);
    out.open.added_scripts = await page.evaluate((n) => document.scripts.length - n, out.scripts_at_start);
  });

  await step("keyboard", async () => {
    const k = {};
    await page.mouse.click(3, 3);
    await page.keyboard.press("/");
    k.slash_focuses_search = await page.evaluate(() => document.activeElement && document.activeElement.id === "search");
    let before = await updates();
    await page.keyboard.press("Escape");
    await nextUpdate(before, "Escape");
    k.escape = await page.evaluate(() => ({ search: document.getElementById("search").value, filtered: Number(document.documentElement.dataset.filtered) }));
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("j");
    await page.keyboard.press("j");
    await page.keyboard.press("k");
    k.selected = await page.evaluate(() => {
      const row = document.querySelector("#spacer .row.selected");
      return row ? { item: Number(row.dataset.item), qid: row.querySelector(".qid").textContent, pos: Number(row.dataset.pos) } : null;
    });
    before = await page.evaluate(() => Number(document.documentElement.dataset.openedCount || 0));
    await page.keyboard.press("Enter");
    await page.waitForFunction((n) => Number(document.documentElement.dataset.openedCount || 0) > n, before, { timeout: STEP_TIMEOUT });
    k.enter_opened = await page.evaluate(() => Number(document.documentElement.dataset.opened));
    out.keyboard = k;
  });

  await step("heatmap readout", async () => {
    const cell = await page.evaluate(() => {
      document.getElementById("heatmap").scrollIntoView({ block: "center" });
      return window.babelPanel.heatCell ? window.babelPanel.heatCell(0, 1) : null;
    });
    if (!cell) { out.heatmap = null; return; }
    await page.mouse.click(cell.x, cell.y);
    out.heatmap = await page.evaluate(() => document.getElementById("pair-readout").textContent);
  });

  await step("scroll", async () => {
    // 120 frames of scrolling, 5 rows a frame, then one jump to the end: the time each
    // frame took, and the longest redraw of the rows in view.
    out.scroll = await page.evaluate(() => new Promise((resolve) => {
      const list = document.getElementById("list");
      document.getElementById("items").scrollIntoView();
      list.scrollTop = 0;
      window.babelPanel.renderMaxMs = 0;
      const frames = [];
      let last = performance.now(), n = 0;
      function tick(now) {
        frames.push(now - last);
        last = now;
        if (n++ < 120) {
          list.scrollTop += 5 * 42;
          requestAnimationFrame(tick);
        } else {
          frames.shift();
          const r = (x) => Math.round(x * 100) / 100;
          resolve({ frames: frames.length, frame_max_ms: r(Math.max(...frames)), frame_mean_ms: r(frames.reduce((a, b) => a + b, 0) / frames.length),
            render_max_ms: r(window.babelPanel.renderMaxMs) });
        }
      }
      requestAnimationFrame(tick);
    }));
  });

  await step("scroll to the end", async () => {
    await page.evaluate(() => { const l = document.getElementById("list"); l.scrollTop = l.scrollHeight; });
    await page.waitForTimeout(150);
    const end = await observe();
    out.end_rows = end.rows.slice(-3);
    out.dom_rows = await page.evaluate(() => document.querySelectorAll("#spacer .row").length);
    out.images = await page.evaluate(() => document.images.length);
  });

  if (config.screenshot) {
    await step("screenshot", async () => {
      await page.evaluate(() => { document.getElementById("list").scrollTop = 0; });
      await page.screenshot({ path: config.screenshot, fullPage: true, timeout: 60000 });
    });
  }
  await page.close();
  page = null;
  return out;
}

(async () => {
  const context = await chromium.launchPersistentContext(config.userDataDir, {
    executablePath: config.chromium,
    headless: true,
    args: ARGS,
    viewport: { width: 1400, height: 1100 },
  });
  // Any request that is not the page file itself is a network attempt: record it, and
  // refuse it so nothing leaves the machine.
  const pageUrl = "file://" + config.page;
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url === pageUrl || url === encodeURI(pageUrl)) return route.continue();
    if (!requests.includes(url)) requests.push(url);
    return route.abort();
  });
  context.on("request", (request) => {
    const url = request.url();
    if (url !== pageUrl && url !== encodeURI(pageUrl) && !requests.includes(url)) requests.push(url);
  });
  let output;
  try {
    output = await run(context);
  } finally {
    await context.close();
  }
  output.requests = requests;
  output.console_errors = consoleErrors;
  output.dialogs = dialogs;
  process.stdout.write(JSON.stringify(output));
})().catch((error) => {
  console.error("drive-panel: " + (error && error.message ? error.message : String(error)));
  if (error && error.stack && !/^Error: step '/.test(error.stack)) console.error(error.stack);
  process.exit(1);
});
