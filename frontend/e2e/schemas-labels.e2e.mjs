// Register a schema and edit a channel's labels in Debian's headless Chromium (playwright-core).
// Schemas page: register a new Avro subject through the form (checked first), then a new
// version from the subject's page: invalid JSON is shown under the schema field, an
// incompatible version is refused with the registry's words, a compatible one is registered.
// Channel page (the caller created E2E_CHANNEL, stopped): add two labels, one invalid first
// (the error beside its row), save them and see them in the channel list. Screenshots at 1,440
// and 1,024 px; axe-core on both pages.
// Environment: SLUICE_URL, SLUICE_USER, SLUICE_PASSWORD, E2E_ARTIFACTS, E2E_CHANNEL,
// E2E_SUBJECT, CHROMIUM.
import { mkdirSync } from "node:fs";
import { join } from "node:path";

import { axeViolations, logIn, openBrowser } from "./browser.mjs";

const base = (process.env.SLUICE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const artifacts = process.env.E2E_ARTIFACTS ?? "test-artifacts/e2e";
const channel = process.env.E2E_CHANNEL ?? "e2e-labels";
const subject = process.env.E2E_SUBJECT ?? "e2e-orders-value";
mkdirSync(artifacts, { recursive: true });

const V1 = { type: "record", name: "Order", fields: [{ name: "id", type: "string" }] };
const BREAKING = { ...V1, fields: [...V1.fields, { name: "region", type: "string" }] };
const V2 = { ...V1, fields: [...V1.fields, { name: "region", type: "string", default: "eu" }] };

const { browser, page } = await openBrowser();
const step = (text) => console.log(`step: ${text}`);

/** A full-page screenshot at 1,440 and at 1,024 px wide. */
async function shots(name) {
  for (const width of [1440, 1024]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(artifacts, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

async function checkA11y(label) {
  const { bad } = await axeViolations(page, join(artifacts, `axe-${label}.json`));
  if (bad.length > 0) throw new Error(`axe on ${label}:\n${JSON.stringify(bad, null, 2)}`);
}

try {
  await page.setViewportSize({ width: 1440, height: 900 });
  await logIn(page, base, process.env.SLUICE_USER ?? "admin", process.env.SLUICE_PASSWORD ?? "");

  step("register a new subject through the form");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Schemas" }).click();
  await page.getByRole("heading", { name: "Schemas", exact: true }).waitFor();
  await page.getByRole("button", { name: "Register a schema" }).click();
  const form = page.locator("section.register-schema");
  await form.getByLabel("Subject").fill(subject);
  await form.getByLabel("Schema type").selectOption("AVRO");
  await form.getByLabel("Schema", { exact: true }).fill(JSON.stringify(V1, null, 2));
  await form.getByRole("button", { name: "Check compatibility" }).click();
  const status = page.getByTestId("register-status");
  await status.getByText(`${subject} is a new subject: this schema will be its version 1.`).waitFor();
  await shots("schemas-register-check");
  await form.getByRole("button", { name: "Register", exact: true }).click();
  await status.getByText(new RegExp(`Registered ${subject} version 1 \\(schema id \\d+\\)`)).waitFor();
  await page.getByRole("table", { name: "Subjects" }).getByRole("link", { name: subject }).waitFor();
  await shots("schemas-register-done");

  step("a new version: invalid JSON is shown under the schema field");
  await status.getByRole("link", { name: `Show ${subject}` }).click();
  await page.getByRole("heading", { name: subject, exact: true }).waitFor();
  await page.getByTestId("subject-team").getByText("team default", { exact: true }).waitFor();
  await page.getByRole("button", { name: "Register a new version" }).click();
  await page.getByRole("heading", { name: `Register a new version of ${subject}` }).waitFor();
  const text = form.getByLabel("Schema", { exact: true });
  if (JSON.parse(await text.inputValue()).name !== "Order")
    throw new Error("the latest version's text is not the start");
  await text.fill('{"type": "record", "name": ');
  await form.getByRole("button", { name: "Check compatibility" }).click();
  await form.locator("#register-schema-note.error").waitFor();
  const why = await form.locator("#register-schema-note").textContent();
  step(`schema error beside the field: ${why}`);
  if (!/Invalid schema/.test(why ?? "")) throw new Error(`unexpected schema error: ${why}`);
  await shots("schemas-register-invalid");

  step("an incompatible version is said before and refused after, in the registry's words");
  await text.fill(JSON.stringify(BREAKING, null, 2));
  await form.getByRole("button", { name: "Check compatibility" }).click();
  await status
    .getByText(`Not compatible with ${subject}'s versions under BACKWARD: registering will be refused.`)
    .waitFor();
  await status
    .getByRole("list", { name: "Incompatibilities" })
    .getByText(/READER_FIELD_MISSING_DEFAULT_VALUE/)
    .waitFor();
  await form.getByRole("button", { name: "Register", exact: true }).click();
  const refused = page.getByTestId("register-refused");
  await refused.getByText(/Not registered: .* compatibility level BACKWARD refuses this schema/).waitFor();
  await refused.getByText(/Schema being registered is incompatible with an earlier schema/).waitFor();
  await shots("schemas-register-refused");

  step("a compatible version: said to become version 2, then registered");
  await text.fill(JSON.stringify(V2, null, 2));
  await form.getByRole("button", { name: "Check compatibility" }).click();
  await status
    .getByText(`Compatible with ${subject}'s versions under BACKWARD: this schema will be version 2.`)
    .waitFor();
  await form.getByRole("button", { name: "Register", exact: true }).click();
  await status.getByText(new RegExp(`Registered ${subject} version 2`)).waitFor();
  await page.getByRole("table", { name: "Versions" }).getByRole("cell", { name: "2", exact: true }).first().waitFor();
  await checkA11y("schemas-register");
  await shots("schemas-register-v2");

  step("edit the channel's labels on its page");
  await page.goto(`${base}/#/channels/${encodeURIComponent(channel)}`);
  const labels = page.getByTestId("labels-panel");
  await labels.waitFor();
  await labels.getByText("No labels.").waitFor();
  await labels.getByRole("button", { name: "Edit labels" }).click();
  await labels.getByLabel("Label 1 key").fill("team");
  await labels.getByLabel("Label 1 value").fill("payments");
  await labels.getByRole("button", { name: "Add a label" }).click();
  await labels.getByLabel("Label 2 key").fill("tier");
  await labels.getByLabel("Label 2 value").fill("gold plated");
  await labels
    .locator("#label-1-error")
    .getByText(/A label value must be empty or/)
    .waitFor();
  await labels.locator("#label-1-error").scrollIntoViewIfNeeded();
  await shots("channel-labels-invalid");
  await labels.getByLabel("Label 2 value").fill("");
  await labels.getByTestId("labels-change").getByText("Saving adds team=payments, tier.").waitFor();
  await labels
    .getByTestId("labels-change")
    .getByText(/saving makes no new revision/)
    .waitFor();
  await labels.scrollIntoViewIfNeeded();
  await shots("channel-labels-edit");
  await labels.getByRole("button", { name: "Save labels" }).click();
  await labels.getByText("Labels saved.", { exact: false }).waitFor();
  await labels.getByTestId("labels-saved").getByText("team=payments").waitFor();
  await labels.scrollIntoViewIfNeeded();
  await checkA11y("channel-labels");
  await shots("channel-labels-saved");

  step("the channel list shows them");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Channels" }).click();
  await page.getByRole("button", { name: "team=payments" }).first().waitFor();
  step("done");
} finally {
  await browser.close();
}
