// The 10,000-channel list in Chromium (bench/fleet.py --chromium): logs in as the bench user,
// then loads the console afresh and times navigation start → the first page of channels shown
// with the search box usable (time to interactive), then a search and the next page. Prints one
// JSON line of figures; saves a screenshot to the path given.
import { openBrowser, logIn } from "./browser.mjs";

const [base, shot] = process.argv.slice(2);
const { browser, page } = await openBrowser();
try {
  await logIn(page, base, "bench", "bench-password");
  const loads = [];
  for (let run = 0; run < 5; run += 1) {
    await page.goto(`${base}/`, { waitUntil: "commit" });
    await page.locator('[data-testid^="channel-row-"]').first().waitFor();
    await page.getByTestId("fleet-search").waitFor({ state: "visible" });
    loads.push(await page.evaluate(() => performance.now()));
  }
  // What the last load waited for: the document, then each request (start → end, ms).
  const waterfall = await page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0];
    const ms = (value) => Math.round(value);
    return {
      document: { response_end: ms(nav.responseEnd), dom_interactive: ms(nav.domInteractive) },
      requests: performance
        .getEntriesByType("resource")
        .map(
          (r) =>
            `${new URL(r.name).pathname.replace("/static/ui/assets/", "")}${new URL(r.name).search.slice(0, 40)} ${ms(r.startTime)}→${ms(r.responseEnd)}`,
        ),
    };
  });
  loads.sort((a, b) => a - b);
  const rows = await page.locator('[data-testid^="channel-row-"]').count();
  const count = await page.getByTestId("channel-count").textContent();

  let started = Date.now();
  await page.getByTestId("fleet-search").fill("ch-0424");
  await page.getByTestId("channel-row-ch-04249").waitFor();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid^="channel-row-"]').length <= 11);
  const search = Date.now() - started; // includes the 250 ms typing pause

  await page.getByTestId("fleet-search").fill("");
  await page.getByTestId("channel-row-ch-00000").waitFor();
  started = Date.now();
  await page.getByTestId("next-page").click();
  await page.getByTestId("page-range").filter({ hasText: "51–100" }).waitFor();
  await page.locator('[data-testid^="channel-row-"]').first().waitFor();
  const nextPage = Date.now() - started;

  await page.getByTestId("next-page").click(); // back to a representative first view
  await page.goto(`${base}/`);
  await page.locator('[data-testid^="channel-row-"]').first().waitFor();
  await page.getByRole("checkbox", { name: "Select all channels on this page" }).check();
  await page.screenshot({ path: shot, fullPage: false });
  console.log(
    JSON.stringify({
      rows_shown: rows,
      count_shown: count,
      interactive_ms_p50: Math.round(loads[Math.floor(loads.length / 2)]),
      interactive_ms_max: Math.round(loads[loads.length - 1]),
      search_ms_incl_250ms_debounce: search,
      next_page_ms: nextPage,
      last_load: waterfall,
      screenshot: shot,
    }),
  );
} finally {
  await browser.close();
}
