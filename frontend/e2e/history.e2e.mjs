// The channel page's history charts in headless Chromium, for a console already running at
// SLUICE_URL (user alice) whose history store holds samples of channel CHANNEL: the charts
// have value ticks with units and time ticks, the window selector changes the step, and a
// reload draws them again (they come from the server). Screenshots into SHOTS.
import { openBrowser, logIn } from "./browser.mjs";

const base = process.env.SLUICE_URL;
const channel = process.env.CHANNEL ?? "orders-big";
const out = process.env.SHOTS ?? "../test-artifacts";
const fail = (message) => {
  console.log(`[e2e] FAIL: ${message}`);
  process.exitCode = 1;
};
const { browser, page } = await openBrowser();
try {
  await logIn(page, base, process.env.SLUICE_USER ?? "alice", process.env.SLUICE_PASSWORD ?? "s3cret-pass-123");

  async function checkCharts(label) {
    const events = page.getByTestId("history-events");
    await events.locator("path.series").first().waitFor();
    for (const id of ["history-events", "history-lag", "history-dead-letters", "history-batch"]) {
      const chart = page.getByTestId(id);
      const ticks = await chart.locator(".y-axis text").allTextContents();
      const times = await chart.locator(".x-axis text").allTextContents();
      const drawn = await chart
        .locator("path.series")
        .evaluateAll((nodes) => nodes.map((n) => n.getAttribute("d")?.length ?? 0));
      console.log(
        `[e2e] ${label} ${id}: y ${ticks.join(" | ")}; x ${times.join(" | ")}; path lengths ${drawn.join(",")}`,
      );
      if (ticks.length < 2) fail(`${id}: no value axis`);
      if (times.length < 3) fail(`${id}: no time axis`);
      if (!drawn.some((n) => n > 100)) fail(`${id}: no line drawn`);
    }
  }

  await page.goto(`${base}/#/channels/${encodeURIComponent(channel)}`);
  await page.getByRole("heading", { name: "History", exact: true }).waitFor();
  await checkCharts("1h");
  const units = await page.getByTestId("history-events").locator(".y-axis text").allTextContents();
  if (!units.every((t) => t.endsWith("events/s"))) fail(`events axis without its unit: ${units}`);
  await page.getByTestId("history-events").scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${out}/history-1h.png`, fullPage: true });

  // The value and time under the pointer.
  const chartBox = await page.getByTestId("history-events").locator("svg").boundingBox();
  await page.mouse.move(chartBox.x + chartBox.width * 0.6, chartBox.y + chartBox.height * 0.5);
  const readout = await page.getByTestId("history-events-readout").innerText();
  console.log(`[e2e] under the pointer: ${readout}`);
  if (!/^\d\d:\d\d:\d\d · in [\d.]+k? events\/s · out [\d.]+k? events\/s$/.test(readout))
    fail(`no hover values: ${readout}`);
  if ((await page.getByTestId("chart-hover").count()) !== 1) fail("no marker under the pointer");
  await page.getByTestId("history-events").screenshot({ path: `${out}/history-hover.png` });

  // A window shorter than the hour: 15 minutes, a point every 10 s.
  await page.getByRole("button", { name: "15m", exact: true }).click();
  await page.getByText("one point every 10 s").waitFor();
  await page
    .getByRole("group", { name: "Window" })
    .locator('button[aria-pressed="true"]', { hasText: "15m" })
    .waitFor();
  await checkCharts("15m");
  await page.getByTestId("history-events").screenshot({ path: `${out}/history-15m.png` });

  await page.getByRole("button", { name: "7d", exact: true }).click();
  await page.getByText("one point every 5 min").waitFor();
  await checkCharts("7d");
  await page.screenshot({ path: `${out}/history-7d.png`, fullPage: true });

  await page.getByRole("button", { name: "24h", exact: true }).click();
  await page.getByText("one point every 10 s").waitFor();
  await page.reload();
  await page.getByRole("heading", { name: "History", exact: true }).waitFor();
  await checkCharts("after reload");
  if ((await page.getByRole("button", { name: "24h", exact: true }).getAttribute("aria-pressed")) !== "true")
    fail("the chosen window did not survive the reload");
  await page.getByTestId("history-events").screenshot({ path: `${out}/history-chart-events.png` });
} finally {
  await browser.close();
}
