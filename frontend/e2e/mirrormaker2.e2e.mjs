// The offsets panel's MirrorMaker 2 wizard in headless Chromium, for a console at SLUICE_URL whose
// channel CHANNEL (STOPPED, reading TOPIC) finds MM2's offsets for alias ALIAS in the default
// offsets topic (MM2_LAST: "partition:offset,..." as MM2 left them). Take over: a bad alias is
// refused on its field, the review shows MM2's last copied offsets and the channel's next ones,
// the panel then shows them. Hand back: brokers the channel does not use are refused by the
// server on the field; with the defaults, the offsets are written. Screenshots into SHOTS.
import { openBrowser, logIn } from "./browser.mjs";

const base = process.env.SLUICE_URL;
const channel = process.env.CHANNEL;
const alias = process.env.ALIAS;
const out = process.env.SHOTS ?? "../test-artifacts";
const last = Object.fromEntries((process.env.MM2_LAST ?? "").split(",").map((pair) => pair.split(":").map(Number)));
const fail = (message) => {
  console.log(`[e2e] FAIL: ${message}`);
  process.exitCode = 1;
};
const { browser, page } = await openBrowser();
try {
  await logIn(page, base, process.env.SLUICE_USER ?? "alice", process.env.SLUICE_PASSWORD ?? "s3cret-pass-123");
  await page.goto(`${base}/#/channels/${encodeURIComponent(channel)}`);
  const wizard = page.getByTestId("mm2-wizard");
  await wizard.scrollIntoViewIfNeeded();
  await wizard.getByRole("button", { name: "Take over from MirrorMaker 2…" }).click();

  // 1. A bad alias is refused next to its field, before anything is asked.
  await wizard.getByLabel("Source cluster alias").fill("east.1");
  await wizard.getByRole("button", { name: "Next: review offsets" }).click();
  await wizard.getByText("A cluster alias: 1-64 letters").waitFor();
  if ((await wizard.getByLabel("Source cluster alias").getAttribute("aria-invalid")) !== "true")
    fail("the bad alias is not marked invalid");
  await wizard.screenshot({ path: `${out}/mm2-wizard-bad-alias.png` });

  // 2. Review: MM2's last copied offsets, and the channel's next offset after the take-over.
  await wizard.getByLabel("Source cluster alias").fill(alias);
  await wizard.getByRole("button", { name: "Next: review offsets" }).click();
  const preview = wizard.getByTestId("mm2-preview");
  await preview.waitFor();
  const rows = await preview
    .locator("tbody tr")
    .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent.trim())));
  console.log(`[e2e] take-over review: ${JSON.stringify(rows)}`);
  for (const [partition, offset] of Object.entries(last)) {
    const row = rows.find((r) => r[1] === String(partition));
    if (!row || row[2] !== String(offset) || row[4] !== String(offset + 1))
      fail(`partition ${partition}: expected MM2 ${offset} → next ${offset + 1}, got ${JSON.stringify(row)}`);
  }
  await page.getByTestId("offsets").screenshot({ path: `${out}/mm2-wizard-review.png` });
  await wizard.getByRole("button", { name: "Take over", exact: true }).click();
  const result = wizard.getByTestId("mm2-result");
  await result.waitFor();
  console.log(`[e2e] take-over: ${await result.textContent()}`);
  // The panel's table shows the new (pending) position.
  for (const [partition, offset] of Object.entries(last)) {
    const cell = page
      .getByTestId("offsets")
      .locator("table")
      .first()
      .locator("tbody tr")
      .filter({ hasText: String(offset + 1) });
    if ((await cell.count()) === 0) fail(`the panel does not show ${offset + 1} for partition ${partition}`);
  }
  await page.getByTestId("offsets").screenshot({ path: `${out}/mm2-wizard-taken-over.png` });
  await wizard.getByRole("button", { name: "Close" }).click();

  // 3. Hand back: brokers the channel does not use are refused by the server, on the field.
  await wizard.getByRole("button", { name: "Hand back to MirrorMaker 2…" }).click();
  await wizard.getByLabel("Source cluster alias").fill(alias);
  await wizard.getByLabel("Brokers of MM2's target cluster").fill("kafka.elsewhere:9092");
  await wizard.getByRole("button", { name: "Next: review offsets" }).click();
  await wizard.getByText("Must be the brokers of the channel's Kafka source or sink").first().waitFor();
  await wizard.screenshot({ path: `${out}/mm2-wizard-bad-brokers.png` });
  await wizard.getByLabel("Brokers of MM2's target cluster").fill("");
  await wizard.getByRole("button", { name: "Next: review offsets" }).click();
  await wizard.getByTestId("mm2-preview").waitFor();
  await wizard.getByRole("button", { name: "Hand back", exact: true }).click();
  await result.waitFor();
  const handed = await result.textContent();
  console.log(`[e2e] hand-back: ${handed}`);
  if (!/handed back to MirrorMaker 2/.test(handed)) fail(`no hand-back message: ${handed}`);
  await page.getByTestId("offsets").screenshot({ path: `${out}/mm2-wizard-handed-back.png` });
} finally {
  await browser.close();
}
