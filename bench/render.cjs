// Opens an HTML report in headless Chromium and prints, as JSON, how long the first render
// took (the page's own clock, from navigation) and how long each key of a typed search
// took to filter and redraw. Used by bench/run.sh; not part of the test suite.
// Usage: NODE_PATH=target/ci/playwright/node_modules node bench/render.cjs REPORT.html QUERY
"use strict";
const { chromium } = require("playwright-core");

(async () => {
  const [report, query] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const wallStart = Date.now();
  await page.goto("file://" + report, { timeout: 300000 });
  await page.waitForFunction(() => document.documentElement.dataset.ready === "1", null, { timeout: 300000 });
  const wallMs = Date.now() - wallStart;
  const firstRenderMs = await page.evaluate(() => window.babelReport.readyMs);
  // Open the first item: its chunk inflates on demand.
  const detailStart = Date.now();
  await page.click("#spacer .row");
  await page.waitForFunction(() => Number(document.documentElement.dataset.detail) > 0, null, { timeout: 60000 });
  const detailMs = Date.now() - detailStart;
  await page.focus("#search");
  const keys = [];
  for (const key of query || "") {
    const before = await page.evaluate(() => Number(document.documentElement.dataset.filtered));
    const start = Date.now();
    await page.keyboard.type(key);
    await page.waitForFunction((n) => Number(document.documentElement.dataset.filtered) > n, before);
    keys.push(Date.now() - start);
  }
  const shown = await page.evaluate(() => document.getElementById("status").textContent);
  await browser.close();
  process.stdout.write(JSON.stringify({ firstRenderMs, wallMs, keyMs: keys, maxKeyMs: Math.max(0, ...keys), shown, detailMs }) + "\n");
})().catch((error) => { console.error(error); process.exit(1); });
