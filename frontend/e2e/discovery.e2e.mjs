// The channel page's schema discovery panel in headless Chromium, for a console at SLUICE_URL
// whose channel CHANNEL runs with discovery on and has a discovered schema: the switch is on,
// the fields are listed with their types and when they were first seen; then the builder
// offers a sample event generated from the discovered schema. Screenshots into SHOTS.
import { openBrowser, logIn } from "./browser.mjs";
import { selectNode } from "./canvas.mjs";

const base = process.env.SLUICE_URL;
const channel = process.env.CHANNEL;
const out = process.env.SHOTS ?? "../test-artifacts";
const fail = (message) => {
  console.log(`[e2e] FAIL: ${message}`);
  process.exitCode = 1;
};
const { browser, page } = await openBrowser();
try {
  await logIn(page, base, process.env.SLUICE_USER ?? "alice", process.env.SLUICE_PASSWORD ?? "s3cret-pass-123");
  await page.goto(`${base}/#/channels/${encodeURIComponent(channel)}`);
  const panel = page.getByRole("region", { name: "Schema discovery" });
  const table = panel.getByTestId("discovered-fields");
  await table.waitFor();
  if (!(await panel.getByRole("checkbox").isChecked())) fail("the switch is not on");
  const paths = await table.locator("tbody td:first-child").allTextContents();
  console.log(`[e2e] discovered fields: ${paths.join(", ")}`);
  if (!paths.includes("data.amount")) fail("data.amount is not listed");
  await panel.scrollIntoViewIfNeeded();
  await panel.screenshot({ path: `${out}/discovery-panel.png` });

  await page.goto(`${base}/#/build/${encodeURIComponent(channel)}`);
  await selectNode(page, "transform-filter");
  const pick = page.locator(".bench select").first();
  await pick.locator('option[value="schema:0"]').waitFor({ state: "attached" });
  await pick.selectOption("schema:0");
  const sample = JSON.parse(await page.locator(".bench textarea").first().inputValue());
  console.log(`[e2e] generated sample: ${JSON.stringify(sample)}`);
  if (typeof sample?.data?.amount !== "number") fail("the generated sample has no numeric data.amount");
  await page.screenshot({ path: `${out}/discovery-sample-event.png`, fullPage: true });
} finally {
  await browser.close();
}
