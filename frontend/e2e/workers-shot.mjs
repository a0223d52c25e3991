// The Workers page against a running console (SLUICE_URL, SLUICE_USER, SLUICE_PASSWORD):
//   node e2e/workers-shot.mjs undrain <worker> <shot.png>  click "Back in service" on a worker
//     that is draining or drained (a screenshot first), and wait until its row says so;
//   node e2e/workers-shot.mjs drain <worker> <shot.png>    click "Drain" on a worker in service
//     (the confirmation accepted) and wait until its row says "draining" or "drained" (then
//     the screenshot);
//   node e2e/workers-shot.mjs cells <worker> <shot.png>    wait until the worker's row shows its
//     capacity (real-time cores, slots), take the screenshot and print what its cells say;
//   node e2e/workers-shot.mjs shot <worker> <shot.png>     print {"ready": true} once the page
//     shows the worker, wait until its row says "draining" (drained: too late), then take the
//     screenshot.
// bench/drain.py and tests/e2e/test_console.py run them on their live stacks. Prints one JSON
// line of what it saw.
import { logIn, openBrowser } from "./browser.mjs";

const [mode, worker, shot] = process.argv.slice(2);
const base = process.env.SLUICE_URL;
const { browser, page } = await openBrowser();
page.on("dialog", (dialog) => void dialog.accept());
try {
  await logIn(page, base, process.env.SLUICE_USER ?? "admin", process.env.SLUICE_PASSWORD ?? "");
  await page.goto(`${base}/#/workers`);
  const row = page.getByRole("row").filter({ has: page.getByRole("cell", { name: worker, exact: true }) });
  const badge = row.getByTestId("service-badge");
  await badge.waitFor();
  if (mode === "cells") {
    const cell = (id) => row.getByTestId(id).first();
    await cell("worker-slots").filter({ hasNotText: "—" }).waitFor({ timeout: 60_000 });
    await page.screenshot({ path: shot, fullPage: true });
    const [cores, slots] = [await cell("worker-cores").textContent(), await cell("worker-slots").textContent()];
    console.log(JSON.stringify({ worker, cores, slots }));
    process.exit(0);
  }
  if (mode === "undrain") {
    await row.getByText(/draining|drained/).waitFor();
    await page.screenshot({ path: shot, fullPage: true });
    await row.getByRole("button", { name: `Back in service ${worker}` }).click();
    await row.getByRole("status").waitFor();
    await row.getByText("in service", { exact: true }).waitFor();
  } else {
    if (mode === "drain") {
      await row.getByText("in service", { exact: true }).waitFor();
      await row.getByRole("button", { name: `Drain ${worker}` }).click();
      await row.getByRole("status").waitFor();
    }
    if (mode === "shot") console.log(JSON.stringify({ ready: true }));
    await row.getByText(mode === "shot" ? /^draining$/ : /^(draining|drained)$/).waitFor({ timeout: 60_000 });
    await page.waitForTimeout(500); // the cluster view's second poll, for the drivers table
    await page.screenshot({ path: shot, fullPage: true });
  }
  const seen = await badge.textContent();
  const buttons = await row
    .getByRole("button")
    .evaluateAll((nodes) => nodes.map((n) => `${n.textContent}${n.disabled ? " (disabled)" : ""}`));
  let filtered;
  if (mode === "drain") {
    // The service filter (?service=): the drained worker leaves "In service", back under "All".
    const filter = page.getByTestId("service-filter");
    await filter.selectOption("IN_SERVICE");
    await badge.waitFor({ state: "detached" }); // its row (other tables may name the worker too)
    await filter.selectOption("");
    await row.getByTestId("service-badge").waitFor();
    filtered = true;
  }
  console.log(JSON.stringify({ worker, service: seen, buttons, filtered }));
} finally {
  await browser.close();
}
