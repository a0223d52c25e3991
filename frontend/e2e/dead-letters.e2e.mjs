// The channel page's dead-letter view in Debian's headless Chromium (playwright-core): log in,
// open a channel that has dead letters (the caller made them), follow the dead-letter card to
// the view, filter by error class, inspect one (its error, origin and event), select two and
// redrive them after the confirmation, which must name the live target (E2E_SINK_TOPIC) it
// writes into; the two are then marked as redriven, and selecting one again warns before a
// second redrive. The Replays panel's confirmation names the target too (then Back: nothing
// is replayed). Runs axe-core on the page. Prints `REDRIVE <the result line>` and `MARK <a
// redriven letter's mark>` for the caller, which checks them against the API.
// Environment: SLUICE_URL, SLUICE_USER, SLUICE_PASSWORD, E2E_ARTIFACTS, E2E_CHANNEL, CHROMIUM,
// E2E_CAST_ERRORS (how many dead letters are CastError), E2E_SINK_TOPIC (the channel's sink).
import { mkdirSync } from "node:fs";
import { join } from "node:path";

import { axeViolations, logIn, openBrowser } from "./browser.mjs";

const base = (process.env.SLUICE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const artifacts = process.env.E2E_ARTIFACTS ?? "test-artifacts/e2e";
const channel = process.env.E2E_CHANNEL ?? "e2e-dead-letters";
const castErrors = process.env.E2E_CAST_ERRORS ?? "";
const sinkTopic = process.env.E2E_SINK_TOPIC ?? "";
mkdirSync(artifacts, { recursive: true });

const { browser, page } = await openBrowser();
let dialogs = "";
page.on("dialog", (dialog) => {
  dialogs += dialog.message(); // the confirmations are the page's own, never a browser dialog
  void dialog.dismiss();
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
  const confirm = panel.getByTestId("run-confirm");
  await confirm.getByText(`Redrive 2 dead letter(s) of ${channel}?`, { exact: false }).waitFor();
  await confirm.getByRole("list", { name: "Targets it writes into" }).getByText(`kafka topic ${sinkTopic}`).waitFor();
  await confirm.getByText(/writes the selected dead letters' events again into 1 live target/).waitFor();
  await confirm.getByText(/marked: record headers sluicereplay/).waitFor();
  await panel.screenshot({ path: join(artifacts, "dead-letters-confirm.png") });
  await confirm.getByRole("button", { name: "Redrive into 1 live target" }).click();
  const result = panel.getByTestId("redrive-result");
  await result.getByText(/Redrove 2 dead letter|Redrive failed/).waitFor();
  if (dialogs) throw new Error(`a browser dialog instead of the page's confirmation: ${dialogs}`);
  const redriveLine = (await result.textContent())?.trim() ?? "";
  await panel.screenshot({ path: join(artifacts, "dead-letters-redrive.png") });

  // The two are marked; selecting one of them again warns before a second redrive.
  const marks = panel.getByTestId("redriven-mark");
  await marks.nth(1).waitFor({ timeout: 30_000 });
  const mark = (await marks.first().textContent())?.trim() ?? "";
  const marked = panel.getByRole("row").filter({ has: page.getByTestId("redriven-mark") });
  await marked.first().getByRole("checkbox").check();
  await panel.getByRole("button", { name: "Redrive selected (1)" }).click();
  await confirm.getByText("1 of them was redriven already").waitFor();
  await panel.screenshot({ path: join(artifacts, "dead-letters-redrive-again.png") });
  await confirm.getByRole("button", { name: "Back" }).click();
  console.log(`MARK ${mark}`);

  // A replay names its target before it starts (Back: nothing is replayed here).
  const replays = page.getByTestId("replays");
  await replays.getByRole("button", { name: "Replay…" }).click();
  const replayConfirm = replays.getByTestId("run-confirm");
  await replayConfirm
    .getByRole("list", { name: "Targets it writes into" })
    .getByText(`kafka topic ${sinkTopic}`)
    .waitFor();
  await replayConfirm.getByRole("button", { name: "Replay into 1 live target" }).waitFor();
  await replays.screenshot({ path: join(artifacts, "replay-confirm.png") });
  await replayConfirm.getByRole("button", { name: "Back" }).click();
  const { bad } = await axeViolations(page, join(artifacts, "axe-dead-letters.json"));
  await page.screenshot({ path: join(artifacts, "channel-dead-letters.png"), fullPage: true });
  if (bad.length > 0) throw new Error(`axe on the dead-letter view:\n${JSON.stringify(bad, null, 2)}`);
  console.log(`REDRIVE ${redriveLine}`);
} catch (error) {
  await page.screenshot({ path: join(artifacts, "failure-dead-letters.png"), fullPage: true }).catch(() => {});
  console.error(error);
  process.exitCode = 1;
} finally {
  await browser.close();
}
