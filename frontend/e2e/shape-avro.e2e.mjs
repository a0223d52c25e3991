// An Avro subject as the shape of a channel's events, in headless Chromium, for a console at
// SLUICE_URL whose channel CHANNEL has a filter on data.custmer (misspelled), a SQL transform
// reading data:regoin and a Kafka sink keyed on data.customer.nmae, and whose registry holds
// the Avro subject SUBJECT (an order record: a nested customer record, an items array, a
// map): picked as the shape, every one of the three nodes warns of its unknown field; the
// sink's key field suggests the nested record's fields; choosing one clears its warning.
// Screenshots into SHOTS.
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
  await canvasNode(page, "sink-kafka").waitFor();
  const pick = page.locator('select[aria-label="Shape of the events"]');
  await pick.locator(`option[value="${subject}"]`).waitFor({ state: "attached" });
  await pick.selectOption(subject);

  const expected = {
    "transform-filter": "data.custmer",
    "transform-sql": "data.regoin",
    "sink-kafka": "data.customer.nmae",
  };
  for (const [node, field] of Object.entries(expected)) {
    const warning = canvasNode(page, node).getByTestId("unknown-field-warning");
    await warning.waitFor();
    const text = await warning.textContent();
    console.log(`[e2e] ${node} warning: ${text}`);
    if (!text.includes(field) || text.split(",").length !== 1) fail(`${node} should warn of ${field} only: ${text}`);
  }
  await page.screenshot({ path: `${out}/shape-avro-unknown-fields.png`, fullPage: true });

  await selectNode(page, "sink-kafka");
  const key = page.getByLabel("Key field");
  await key.fill("data.cust");
  await key.press("End");
  const suggestions = page.getByTestId("field-suggestions");
  await suggestions.waitFor();
  const offered = await suggestions.locator("code").allTextContents();
  console.log(`[e2e] key field suggestions for "data.cust": ${offered.join(", ")}`);
  for (const path of ["data.customer.name", "data.customer.tier"]) {
    if (!offered.includes(path)) fail(`${path} not suggested: ${offered}`);
  }
  await suggestions.scrollIntoViewIfNeeded(); // the side panel scrolls: show the list
  await page.screenshot({ path: `${out}/shape-avro-suggestions.png`, fullPage: true });
  await suggestions.getByRole("option", { name: /data\.customer\.name/ }).click();
  const value = await key.inputValue();
  console.log(`[e2e] key field after choosing: ${value}`);
  if (value !== "data.customer.name") fail(`the suggestion was not inserted: ${value}`);
  await canvasNode(page, "sink-kafka").getByTestId("unknown-field-warning").waitFor({ state: "detached" });
  console.log("[e2e] sink warning cleared once the key field names data.customer.name");
} finally {
  await browser.close();
}
