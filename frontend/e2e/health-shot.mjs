// One screenshot of the channels list's Health column (the explanation on hover), for a
// console already running at SLUICE_URL with the user alice.
import { openBrowser, logIn } from "./browser.mjs";

const base = process.env.SLUICE_URL;
const out = process.env.SHOTS ?? "../test-artifacts";
const { browser, page } = await openBrowser();
try {
  await logIn(page, base, "alice", "s3cret-pass-123");
  await page.getByTestId("sort-health").click();
  const badges = page.getByTestId("health-badge");
  await badges.first().waitFor();
  const titles = await badges.evaluateAll((nodes) => nodes.map((n) => `${n.textContent} | ${n.title}`));
  console.log(titles.join("\n"));
  await badges.first().hover();
  await page.screenshot({ path: `${out}/health-channels-list.png`, fullPage: true });
} finally {
  await browser.close();
}
