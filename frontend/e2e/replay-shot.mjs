// Screenshots of a channel page's Replays panel (runs with their progress and state), for a
// console already running at SLUICE_URL: SLUICE_CHANNEL names the channel, SLUICE_USER and
// SLUICE_PASSWORD log in, SHOTS is the folder (default ../test-artifacts), SHOT_NAME the file.
import { openBrowser, logIn } from "./browser.mjs";

const base = process.env.SLUICE_URL;
const channel = process.env.SLUICE_CHANNEL;
const out = process.env.SHOTS ?? "../test-artifacts";
const name = process.env.SHOT_NAME ?? "replay-panel";
const { browser, page } = await openBrowser();
try {
  await logIn(page, base, process.env.SLUICE_USER ?? "alice", process.env.SLUICE_PASSWORD ?? "s3cret-pass-123");
  await page.goto(`${base}/#/channels/${encodeURIComponent(channel)}`);
  const panel = page.getByTestId("replays");
  await panel.getByTestId("replay-row").first().waitFor();
  await panel.scrollIntoViewIfNeeded();
  const rows = await panel.getByTestId("replay-row").allTextContents();
  console.log(rows.join("\n"));
  await panel.screenshot({ path: `${out}/${name}.png` });
  await page.screenshot({ path: `${out}/${name}-page.png`, fullPage: true });
} finally {
  await browser.close();
}
