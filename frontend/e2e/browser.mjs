// What the browser scripts share: Debian's Chromium through playwright-core (no download),
// the console's login, and axe-core on the page as it is.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

import { chromium } from "playwright-core";

const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");

/** Headless Chromium (CHROMIUM, default /usr/bin/chromium) and one 1280×800 page. */
export async function openBrowser() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-background-networking", "--disable-dev-shm-usage"],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(15_000);
  // The console runs under its Content-Security-Policy here as in production: anything the
  // policy blocks fails the script (it may still finish, to show what else went wrong).
  page.on("console", (message) => {
    if (/Content.Security.Policy/i.test(message.text())) {
      console.log(`[e2e] CSP violation: ${message.text()}`);
      process.exitCode = 1;
    }
  });
  return { browser, page };
}

/** Log in through the console's login page and wait for the channel list. */
export async function logIn(page, base, user, password) {
  await page.goto(`${base}/`);
  await page.getByLabel("User name").fill(user);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Channels" }).waitFor();
}

/** Run axe-core on the page, write its violations to `reportPath`, and return them with the
 * serious or critical ones. */
export async function axeViolations(page, reportPath) {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern (an
  // injected <script> would be blocked, as it should be).
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(readFileSync(AXE, "utf8"));
  const result = await page.evaluate(() =>
    window.axe.run(document, {
      resultTypes: ["violations"],
      runOnly: ["wcag2a", "wcag2aa", "wcag21aa", "best-practice"],
    }),
  );
  const report = result.violations.map((v) => ({
    id: v.id,
    impact: v.impact,
    help: v.help,
    nodes: v.nodes.map((n) => n.target.join(" ")),
  }));
  writeFileSync(reportPath, JSON.stringify(report, null, 2));
  return { report, bad: report.filter((v) => v.impact === "serious" || v.impact === "critical") };
}
