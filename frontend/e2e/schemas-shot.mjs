// Screenshots of the Schemas page (a subject's versions and the diff between two of them),
// for a console already running at SLUICE_URL with the user alice and a few subjects.
import { axeViolations, logIn, openBrowser } from "./browser.mjs";

const base = process.env.SLUICE_URL;
const out = process.env.SHOTS ?? "../test-artifacts";
const { browser, page } = await openBrowser();
try {
  await logIn(page, base, "alice", "s3cret-pass-123");
  await page.getByRole("link", { name: "Schemas" }).click();
  await page.getByRole("heading", { name: "Schemas" }).waitFor();
  await page.getByRole("link", { name: "orders-value" }).click();
  await page.getByRole("heading", { name: "orders-value" }).waitFor();
  await page.getByLabel("Schema diff").locator(".diff-line.added").first().waitFor();
  await page.screenshot({ path: `${out}/schemas-diff.png`, fullPage: true });
  await page.getByLabel("From version").selectOption("1");
  await page.getByText("Changes from version 1 to 3").waitFor();
  await page.screenshot({ path: `${out}/schemas-diff-1-3.png`, fullPage: true });
  const { bad } = await axeViolations(page, `${out}/schemas-axe.json`);
  console.log(`axe: ${bad.length} serious or critical`);
  if (bad.length) process.exitCode = 1;
} finally {
  await browser.close();
}
