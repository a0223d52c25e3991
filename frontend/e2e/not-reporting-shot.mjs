// Screenshots of a channel that stopped reporting: the channels list (state badge and its
// since-when on hover, health critical) and the channel's page, for a console already running
// at SLUICE_URL with the user alice and a channel CHANNEL whose reports stopped.
import { openBrowser, logIn } from "./browser.mjs";

const base = process.env.SLUICE_URL;
const out = process.env.SHOTS ?? "../test-artifacts";
const name = process.env.CHANNEL ?? "payments";
const { browser, page } = await openBrowser();
try {
  await logIn(page, base, process.env.SLUICE_USER ?? "alice", process.env.SLUICE_PASSWORD ?? "s3cret-pass-123");
  const row = page.getByTestId(`channel-row-${name}`);
  const badge = row.getByTestId("state-badge");
  await badge.filter({ hasText: "NOT REPORTING" }).waitFor();
  console.log(`list: ${await badge.textContent()} | ${await badge.getAttribute("title")}`);
  await badge.hover();
  await page.screenshot({ path: `${out}/not-reporting-list.png`, fullPage: true });
  await page.goto(`${base}/#/channels/${encodeURIComponent(name)}`);
  const line = page.getByTestId("not-reporting");
  await line.waitFor();
  console.log(`page: ${await line.textContent()}`);
  await page.screenshot({ path: `${out}/not-reporting-page.png`, fullPage: false });
} finally {
  await browser.close();
}
