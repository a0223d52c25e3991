// The channel page's HTTP ingestion panel in Debian's headless Chromium (playwright-core):
// log in, open a channel whose source is `http` (the caller created it), issue its token, set
// its rate limit, and run axe-core on the page. Prints `TOKEN <token>` for the caller, which
// then posts an event with it.
// Environment: SLUICE_URL, SLUICE_USER, SLUICE_PASSWORD, E2E_ARTIFACTS, E2E_CHANNEL, CHROMIUM.
import { mkdirSync } from "node:fs";
import { join } from "node:path";

import { axeViolations, logIn, openBrowser } from "./browser.mjs";

const base = (process.env.SLUICE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const artifacts = process.env.E2E_ARTIFACTS ?? "test-artifacts/e2e";
const channel = process.env.E2E_CHANNEL ?? "e2e-ingest";
mkdirSync(artifacts, { recursive: true });

const { browser, page } = await openBrowser();
page.on("dialog", (dialog) => dialog.accept());

try {
  await logIn(page, base, process.env.SLUICE_USER ?? "admin", process.env.SLUICE_PASSWORD ?? "");

  await page.goto(`${base}/#/channels/${encodeURIComponent(channel)}`);
  const panel = page.getByTestId("ingest");
  await panel.waitFor();
  await panel.getByText("No token yet").waitFor();
  await panel.getByRole("button", { name: "Issue token" }).click();
  const token = (await panel.getByTestId("ingest-token").textContent())?.trim() ?? "";
  if (!token.startsWith("slk_")) throw new Error(`no token shown: ${token}`);
  await panel.getByRole("button", { name: "Rotate token" }).waitFor();

  await panel.getByLabel("Rate limit (events/s)").fill("0");
  await panel.getByRole("button", { name: "Save limit" }).click();
  await panel.getByText("At least 1 event per second").waitFor();
  await panel.getByLabel("Rate limit (events/s)").fill("50");
  await panel.getByRole("button", { name: "Save limit" }).click();
  await panel.getByText("Rate limit: 50 events/s.").waitFor();

  const { bad } = await axeViolations(page, join(artifacts, "axe-channel-ingest.json"));
  await page.screenshot({ path: join(artifacts, "channel-ingest.png"), fullPage: true });
  if (bad.length > 0) throw new Error(`axe on the ingestion panel:\n${JSON.stringify(bad, null, 2)}`);
  console.log(`TOKEN ${token}`);
} catch (error) {
  await page.screenshot({ path: join(artifacts, "failure-ingest.png"), fullPage: true }).catch(() => {});
  console.error(error);
  process.exitCode = 1;
} finally {
  await browser.close();
}
