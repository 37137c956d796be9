// Drives an HTML report in headless Chromium for tests/it/report_browser.rs and prints what
// it observed as one JSON document on stdout; the Rust test decides what is right.
//
// Usage: node drive-report.cjs CONFIG.json
//   {"chromium": path, "userDataDir": path, "small": {"report", "screenshot", "scenarios"},
//    "big": {"report", "query", "outcome", "open"}}
// A scenario is {"name", "query", "outcome": [names], "language": [labels],
// "benchmark": [labels]}; chips are clicked by label, the query is typed key by key.
"use strict";
const fs = require("fs");
const { chromium } = require("playwright-core");

const config = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

async function observe(page) {
  return page.evaluate(() => {
    const chips = {};
    for (const facet of ["outcome", "language", "benchmark"]) {
      chips[facet] = [...document.querySelectorAll("#facet-" + facet + " .chip")].map((chip) => ({
        label: chip.querySelector(".chip-label").textContent,
        count: Number(chip.querySelector(".count").textContent),
        pressed: chip.getAttribute("aria-pressed") === "true",
      }));
    }
    const list = document.getElementById("list").getBoundingClientRect();
    const rows = [...document.querySelectorAll("#spacer .row")].filter((row) => {
      const box = row.getBoundingClientRect();
      return box.bottom > list.top && box.top < list.bottom;
    }).map((row) => row.querySelector(".qid").textContent);
    return {
      status: document.getElementById("status").textContent,
      rows,
      chips,
      images: document.images.length,
    };
  });
}

async function settled(page, before) {
  await page.waitForFunction((n) => Number(document.documentElement.dataset.filtered) > n, before);
}

function filters(page) {
  return page.evaluate(() => Number(document.documentElement.dataset.filtered));
}

async function clickChip(page, facet, label) {
  const before = await filters(page);
  const chip = page.locator("#facet-" + facet + " .chip").filter({
    has: page.locator(".chip-label", { hasText: new RegExp("^" + label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "$") }),
  });
  await chip.click();
  await settled(page, before);
}

async function typeQuery(page, query) {
  await page.focus("#search");
  for (const key of query) {
    const before = await filters(page);
    await page.keyboard.type(key);
    await settled(page, before);
  }
}

async function small(context, spec, requests) {
  const page = await context.newPage();
  const dialogs = [];
  const errors = [];
  page.on("dialog", (dialog) => { dialogs.push(dialog.message()); dialog.dismiss(); });
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("console", (message) => { if (message.type() === "error") errors.push(message.text()); });
  await page.goto("file://" + spec.report);
  await page.waitForFunction(() => document.documentElement.dataset.ready === "1");
  const scriptsAtStart = await page.evaluate(() => document.scripts.length);
  const results = [];
  for (const scenario of spec.scenarios) {
    for (const name of scenario.outcome) await clickChip(page, "outcome", name);
    for (const name of scenario.language) await clickChip(page, "language", name);
    for (const name of scenario.benchmark) await clickChip(page, "benchmark", name);
    if (scenario.query) await typeQuery(page, scenario.query);
    results.push({ name: scenario.name, observed: await observe(page) });
    const before = await filters(page);
    await page.click("#clear");
    await settled(page, before);
  }
  // Keyboard: "/" focuses the search, ArrowDown enters the list and selects the first row.
  await page.click("body", { position: { x: 5, y: 5 } });
  await page.keyboard.press("/");
  const searchFocused = await page.evaluate(() => document.activeElement.id === "search");
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("ArrowDown");
  const keyboardSelection = await page.evaluate(() => {
    const row = document.querySelector("#spacer .row.selected .qid");
    return row ? row.textContent : null;
  });
  // Open the item whose response tries to break out, and look at what the page shows.
  await typeQuery(page, "lyon");
  await page.click("#spacer .row");
  // The details inflate asynchronously; the page counts each detail it has drawn.
  await page.waitForFunction(() => Number(document.documentElement.dataset.detail) > 0);
  const detail = await page.evaluate((scriptsAtStart) => ({
    text: document.getElementById("detail").textContent,
    images: document.images.length,
    addedScripts: document.scripts.length - scriptsAtStart,
  }), scriptsAtStart);
  await page.screenshot({ path: spec.screenshot, fullPage: true });
  await page.close();
  return { results, searchFocused, keyboardSelection, detail, dialogs, errors, requests: requests.slice() };
}

async function big(context, spec) {
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  const wallStart = Date.now();
  await page.goto("file://" + spec.report, { timeout: 120000 });
  await page.waitForFunction(() => document.documentElement.dataset.ready === "1", null, { timeout: 120000 });
  const wallOpenMs = Date.now() - wallStart;
  const readyMs = await page.evaluate(() => window.babelReport.readyMs);
  const keystrokes = [];
  await page.focus("#search");
  for (const key of spec.query) {
    const before = await filters(page);
    const start = Date.now();
    await page.keyboard.type(key);
    await settled(page, before);
    keystrokes.push({
      key,
      wallMs: Date.now() - start,
      filterMs: await page.evaluate(() => window.babelReport.lastFilterMs),
    });
  }
  const searched = await observe(page);
  const start = Date.now();
  await clickChip(page, "outcome", spec.outcome);
  const outcomeClick = {
    wallMs: Date.now() - start,
    filterMs: await page.evaluate(() => window.babelReport.lastFilterMs),
  };
  const combined = await observe(page);
  // Scroll to the very end of the unfiltered list: the last rows render on demand.
  let before = await filters(page);
  await page.click("#clear");
  await settled(page, before);
  await page.evaluate(() => { const l = document.getElementById("list"); l.scrollTop = l.scrollHeight; });
  await page.waitForTimeout(200);
  const end = await observe(page);
  const domRows = await page.evaluate(() => document.querySelectorAll("#spacer .row").length);
  // Open each item a search finds alone, and read what its detail shows.
  const opened = [];
  for (const query of spec.open) {
    before = await filters(page);
    await page.click("#clear");
    await settled(page, before);
    await typeQuery(page, query);
    const details = await page.evaluate(() => Number(document.documentElement.dataset.detail || 0));
    await page.click("#spacer .row");
    await page.waitForFunction((n) => Number(document.documentElement.dataset.detail) > n, details);
    opened.push(await page.evaluate(() => document.getElementById("detail").textContent));
  }
  await page.close();
  return { wallOpenMs, readyMs, keystrokes, outcomeClick, searched, combined, endRows: end.rows, domRows, opened, errors };
}

(async () => {
  const requests = [];
  const context = await chromium.launchPersistentContext(config.userDataDir, {
    executablePath: config.chromium,
    headless: true,
    args: ARGS,
    viewport: { width: 1400, height: 1100 },
  });
  // Any request that is not the report file itself is a network attempt: record it, and
  // refuse it so nothing leaves the machine.
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith("file://")) return route.continue();
    requests.push(url);
    return route.abort();
  });
  context.on("request", (request) => {
    const url = request.url();
    if (!url.startsWith("file://") && !requests.includes(url)) requests.push(url);
  });
  const output = {};
  try {
    output.small = await small(context, config.small, requests);
    if (config.big) output.big = await big(context, config.big);
    output.requests = requests;
  } finally {
    await context.close();
  }
  process.stdout.write(JSON.stringify(output));
})().catch((error) => {
  console.error(error && error.stack ? error.stack : String(error));
  process.exit(1);
});
