// What the console says and shows, in headless Chromium (issue 30's words and layout), for a
// console already running at SLUICE_URL with channels RUNNING_NAME (running) and STOPPED_NAME
// (stopped, generator → preview), both long hyphenated names:
// * an unknown channel's page asks for the channel once (one 404) and for nothing of it after;
// * the API docs lead back to the console;
// * at 1,024 and 1,440 px the list's names stay on one line (never broken at a hyphen), the
//   builder's canvas keeps room (the palette folds at 1,024) and the channel page fits;
// * typing a wrong value in a stage's form shows the server's error and logs no console error;
// * bulk start of one running and one stopped channel says "1 started, 1 already running.",
//   and bulk delete's question names both channels;
// * a paused channel offers Resume, not Start, and says why in Start's tooltip.
// Screenshots into SHOTS. Prints FAIL lines (the caller fails on them).
import { logIn, openBrowser } from "./browser.mjs";

const base = (process.env.SLUICE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const out = process.env.SHOTS ?? "../test-artifacts/e2e";
const running = process.env.RUNNING_NAME;
const stopped = process.env.STOPPED_NAME;
const fail = (message) => {
  console.log(`[e2e] FAIL: ${message}`);
  process.exitCode = 1;
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const { browser, page } = await openBrowser();
const consoleErrors = [];
page.on("console", (message) => {
  if (message.type() === "error") consoleErrors.push(message.text());
});
const apiCalls = [];
page.on("response", (response) => {
  const url = response.url();
  if (url.includes("/api/v1/")) apiCalls.push({ url, status: response.status() });
});
let question = "";
page.on("dialog", (dialog) => {
  if (dialog.type() === "beforeunload") return void dialog.accept();
  question = dialog.message();
  void dialog.dismiss(); // the bulk delete is only looked at, never done
});

try {
  await page.setViewportSize({ width: 1440, height: 900 });
  await logIn(page, base, process.env.SLUICE_USER ?? "admin", process.env.SLUICE_PASSWORD ?? "");

  // -- an unknown channel: one request, one 404, nothing more --------------------------------
  apiCalls.length = 0;
  await page.goto(`${base}/#/channels/does-not-exist`);
  await page.getByTestId("channel-not-found").waitFor();
  await sleep(5000); // long enough for two status polls, were any running
  const about = apiCalls.filter((c) => c.url.includes("does-not-exist"));
  const notFound = apiCalls.filter((c) => c.status === 404);
  console.log(
    `[e2e] unknown channel: ${apiCalls.length} API requests, ${notFound.length} 404: ${apiCalls.map((c) => `${c.status} ${c.url}`).join(", ")}`,
  );
  if (about.length !== 1) fail(`an unknown channel's page asked ${about.length} times about it`);
  if (notFound.length !== 1) fail(`${notFound.length} requests answered 404 (one expected)`);

  // -- the API docs lead back ------------------------------------------------------------------
  await page.goto(`${base}/api/docs/`);
  await page.getByText("Sluice API").first().waitFor();
  await page.screenshot({ path: `${out}/words-api-docs.png` });
  await page.getByTestId("back-to-console").click();
  await page.getByRole("heading", { name: "Channels" }).waitFor();
  console.log(`[e2e] back from the API docs at ${page.url()}`);

  // -- the list's names at 1,024 and 1,440 px ----------------------------------------------------
  for (const width of [1024, 1440]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto(`${base}/#/channels`);
    for (const name of [running, stopped]) {
      const link = page.getByTestId(`channel-row-${name}`).locator("a.channel-name");
      await link.waitFor();
      const box = await link.evaluate((el) => ({
        height: el.getBoundingClientRect().height,
        column: Math.round(el.closest("td").getBoundingClientRect().width),
        title: el.getAttribute("title"),
        hyphens: getComputedStyle(el).hyphens,
      }));
      console.log(`[e2e] ${width}px ${name}: ${JSON.stringify(box)}`);
      if (box.height > 24) fail(`at ${width}px the name ${name} takes ${box.height}px (wrapped)`);
      if (box.column < width * 0.25) fail(`at ${width}px the name column is ${box.column}px wide`);
      if (box.title !== name) fail(`the name ${name} has no tooltip with the whole name`);
      if (box.hyphens !== "manual") fail(`hyphens is ${box.hyphens} on ${name}`);
    }
    await page.screenshot({ path: `${out}/words-channels-${width}.png`, fullPage: true });
  }

  // -- bulk start and bulk delete's question ------------------------------------------------------
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`${base}/#/channels`);
  for (const name of [running, stopped]) await page.getByLabel(`Select ${name}`, { exact: true }).check();
  await page.getByTestId("bulk-start").click();
  const summary = page.getByTestId("bulk-messages");
  await summary.getByText("1 started, 1 already running.", { exact: true }).waitFor();
  console.log(`[e2e] bulk start: ${await summary.innerText()}`);
  for (const name of [running, stopped]) await page.getByLabel(`Select ${name}`, { exact: true }).check();
  await page.getByTestId("bulk-delete").click();
  for (let i = 0; i < 20 && !question; i++) await sleep(100);
  console.log(`[e2e] bulk delete asks: ${question}`);
  if (
    !question.startsWith("Delete 2 channels:") ||
    !question.includes(`"${running}"`) ||
    !question.includes(`"${stopped}"`)
  )
    fail(`bulk delete's question does not name both channels: ${question}`);

  // -- the channel page at both widths; a paused channel offers Resume, not Start ----------------------
  for (const width of [1024, 1440]) {
    await page.setViewportSize({ width, height: 900 });
    await page.goto(`${base}/#/channels/${encodeURIComponent(running)}`);
    await page.getByRole("heading", { name: "History", exact: true }).waitFor();
    await page.screenshot({ path: `${out}/words-channel-${width}.png` });
    const heading = await page.locator(".channel-title").evaluate((el) => ({
      height: el.getBoundingClientRect().height,
      font: parseFloat(getComputedStyle(el).fontSize),
    }));
    console.log(`[e2e] channel page at ${width}px: heading ${JSON.stringify(heading)}`);
    if (heading.height > heading.font * 1.8) fail(`at ${width}px the channel's name wraps in its heading`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    if (overflow > 0) fail(`the channel page is ${overflow}px wider than the ${width}px window`);
  }
  const actions = page.getByRole("group", { name: "Channel actions" });
  await actions.getByRole("button", { name: "Pause", exact: true }).click();
  const start = actions.getByRole("button", { name: "Start", exact: true });
  const resume = actions.getByRole("button", { name: "Resume", exact: true });
  await page.waitForFunction(() =>
    [...document.querySelectorAll('[aria-label="Channel actions"] button')].some(
      (b) => b.textContent === "Resume" && !b.disabled,
    ),
  );
  const startTitle = await start.getAttribute("title");
  console.log(
    `[e2e] paused: Start disabled ${await start.isDisabled()}, title "${startTitle}"; Resume enabled ${await resume.isEnabled()}`,
  );
  if (!(await start.isDisabled())) fail("Start is enabled on a paused channel");
  if (!/Resume/.test(startTitle ?? "")) fail(`Start's tooltip does not say why: ${startTitle}`);
  await page.getByText("Desired state", { exact: true }).waitFor();

  // -- the builder at 1,024 and 1,440 px; typing logs no console error ------------------------------
  for (const width of [1024, 1440]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto(`${base}/#/build/${encodeURIComponent(stopped)}`);
    await page.reload(); // the palette's first state follows the window's width
    await page.locator(".stage-node").first().waitFor();
    await sleep(600);
    const canvas = await page.locator(".canvas").evaluate((el) => el.getBoundingClientRect().width);
    const rail = await page.locator(".palette-rail").count();
    console.log(`[e2e] builder at ${width}px: canvas ${Math.round(canvas)}px, palette ${rail ? "folded" : "open"}`);
    if (width === 1024 && !rail) fail("the palette is open at 1,024 px");
    if (canvas < width * 0.55) fail(`the canvas is ${Math.round(canvas)}px of ${width}px`);
    await page.screenshot({ path: `${out}/words-builder-${width}.png` });
  }
  consoleErrors.length = 0;
  apiCalls.length = 0;
  await page.locator(".stage-node.kind-source").first().click();
  const rate = page.locator(".config-panel").getByLabel("Events per second", { exact: true });
  await rate.click();
  await rate.press("ControlOrMeta+a");
  await rate.pressSequentially("-12", { delay: 150 });
  await page.locator(".stage-node.kind-source.invalid").waitFor({ timeout: 10_000 });
  await sleep(1000);
  const checks = apiCalls.filter((c) => c.url.includes("/validate"));
  console.log(
    `[e2e] typing: ${checks.length} checks (${checks.map((c) => c.status).join(",")}), console errors: ${JSON.stringify(consoleErrors)}`,
  );
  if (checks.length === 0) fail("typing asked the server for no check");
  if (checks.some((c) => c.status >= 400)) fail("a check while typing answered an error status");
  if (consoleErrors.length > 0) fail(`typing logged console errors: ${consoleErrors.join(" | ")}`);
  await page.screenshot({ path: `${out}/words-builder-invalid.png` });
} finally {
  await browser.close();
}
