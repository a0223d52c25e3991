// The builder knowing the shape of a channel's events, in headless Chromium, for a console at
// SLUICE_URL whose channel CHANNEL has a filter on data.amout (misspelled) and whose registry
// holds the JSON Schema subject SUBJECT (the payload: amount, region): picked as the shape of
// the source, the filter's node warns of the unknown field; the pattern editor suggests
// field paths; a corrected pattern clears the warning. Screenshots into SHOTS.
import { openBrowser, logIn } from "./browser.mjs";
import { canvasNode, selectNode } from "./canvas.mjs";

const base = process.env.SLUICE_URL;
const channel = process.env.CHANNEL;
const subject = process.env.SUBJECT;
const out = process.env.SHOTS ?? "../test-artifacts";
const fail = (message) => {
  console.log(`[e2e] FAIL: ${message}`);
  process.exitCode = 1;
};
const { browser, page } = await openBrowser();
try {
  await logIn(page, base, process.env.SLUICE_USER ?? "alice", process.env.SLUICE_PASSWORD ?? "s3cret-pass-123");
  await page.goto(`${base}/#/build/${encodeURIComponent(channel)}`);
  const filter = canvasNode(page, "transform-filter");
  await filter.waitFor();
  const warning = filter.getByTestId("unknown-field-warning");
  if (await warning.count()) fail("a warning before any schema is known");

  const pick = page.locator('select[aria-label="Shape of the events"]');
  await pick.locator(`option[value="${subject}"]`).waitFor({ state: "attached" });
  await pick.selectOption(subject);
  await warning.waitFor();
  const text = await warning.textContent();
  console.log(`[e2e] warning: ${text}`);
  if (!text.includes("data.amout")) fail(`the warning does not name data.amout: ${text}`);
  await page.screenshot({ path: `${out}/shape-unknown-field-warning.png`, fullPage: true });

  await selectNode(page, "transform-filter");
  const editor = page.locator(".config-panel .json-field textarea").first();
  await editor.waitFor();
  await editor.fill('{"data": {"amout": [1], "reg');
  await editor.press("End");
  const suggestions = page.getByTestId("field-suggestions");
  await suggestions.waitFor();
  const offered = await suggestions.locator("code").allTextContents();
  console.log(`[e2e] suggestions for "reg": ${offered.join(", ")}`);
  if (!offered.includes("data.region")) fail(`data.region not suggested: ${offered}`);
  await page.screenshot({ path: `${out}/shape-autocomplete.png`, fullPage: true });
  await suggestions.getByRole("option", { name: /data\.region/ }).click();
  const value = await editor.inputValue();
  console.log(`[e2e] after choosing: ${value}`);
  if (!value.endsWith('"region')) fail(`the suggestion was not inserted: ${value}`);

  await editor.fill('{"data": {"amount": [{"numeric": [">", 1]}]}}');
  await warning.waitFor({ state: "detached" });
  console.log("[e2e] warning cleared once the pattern names data.amount");
} finally {
  await browser.close();
}
