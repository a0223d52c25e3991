// The channel page's dead-letter view in Debian's headless Chromium (playwright-core): log in,
// open a channel that has dead letters (the caller made them), follow the dead-letter card to
// the view, filter by error class, inspect one (its error, origin and event), select two and
// redrive them after the confirmation, and run axe-core on the page. Prints `REDRIVE <the
// result line>` for the caller, which checks it against the API.
// Environment: SLUICE_URL, SLUICE_USER, SLUICE_PASSWORD, E2E_ARTIFACTS, E2E_CHANNEL, CHROMIUM,
// E2E_CAST_ERRORS (how many dead letters are CastError).
import { mkdirSync } from "node:fs";
import { join } from "node:path";

import { axeViolations, logIn, openBrowser } from "./browser.mjs";

const base = (process.env.SLUICE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const artifacts = process.env.E2E_ARTIFACTS ?? "test-artifacts/e2e";
const channel = process.env.E2E_CHANNEL ?? "e2e-dead-letters";
const castErrors = process.env.E2E_CAST_ERRORS ?? "";
mkdirSync(artifacts, { recursive: true });

const { browser, page } = await openBrowser();
let confirmed = "";
page.on("dialog", (dialog) => {
  confirmed = dialog.message();
  void dialog.accept();
});

try {
  await page.setViewportSize({ width: 1280, height: 1000 });
  await logIn(page, base, process.env.SLUICE_USER ?? "admin", process.env.SLUICE_PASSWORD ?? "");
  await page.goto(`${base}/#/channels/${encodeURIComponent(channel)}`);
  await page.getByRole("link", { name: /^Dead letters: .*show them$/ }).click();
  if (!page.url().endsWith(`/dead-letters`)) throw new Error(`the card did not link to the view: ${page.url()}`);
  const panel = page.getByTestId("dead-letters");
  await panel.getByText(/matching, newest first/).waitFor();

  await panel.getByLabel("Error class").selectOption("CastError");
  await panel.getByTestId("dead-letters-count").getByText(`${castErrors} matching, newest first`).waitFor();
  const inspect = panel.getByRole("button", { name: /^Inspect dead letter / });
  await inspect.first().click();
  const detail = page.getByTestId("dead-letter-detail");
  await detail.getByText("transforms[0] (cast)").waitFor();
  await detail.getByRole("region", { name: "Original record" }).getByText('"amount": "n/a"').waitFor();
  await detail.getByRole("region", { name: "Event" }).getByText('"seq"').first().waitFor();
  await panel.screenshot({ path: join(artifacts, "dead-letters.png") });

  const boxes = panel.getByRole("checkbox", { name: /^Select dead letter / });
  await boxes.nth(0).check();
  await boxes.nth(1).check();
  await panel.getByRole("button", { name: "Redrive selected (2)" }).click();
  const result = panel.getByTestId("redrive-result");
  await result.getByText(/Redrove 2 dead letter|Redrive failed/).waitFor();
  if (!confirmed.startsWith(`Redrive 2 dead letter(s) of ${channel}?`)) throw new Error(`no confirmation: ${confirmed}`);
  const { bad } = await axeViolations(page, join(artifacts, "axe-dead-letters.json"));
  await panel.screenshot({ path: join(artifacts, "dead-letters-redrive.png") });
  await page.screenshot({ path: join(artifacts, "channel-dead-letters.png"), fullPage: true });
  if (bad.length > 0) throw new Error(`axe on the dead-letter view:\n${JSON.stringify(bad, null, 2)}`);
  console.log(`REDRIVE ${(await result.textContent())?.trim()}`);
} catch (error) {
  await page.screenshot({ path: join(artifacts, "failure-dead-letters.png"), fullPage: true }).catch(() => {});
  console.error(error);
  process.exitCode = 1;
} finally {
  await browser.close();
}
