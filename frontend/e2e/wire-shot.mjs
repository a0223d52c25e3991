// Screenshots of the builder's Kafka source and sink forms in a Confluent wire format (the
// avro format and its schema registry settings), for a console already running at SLUICE_URL.
// SLUICE_USER / SLUICE_PASSWORD log in; SHOTS is where the pictures go.
import { axeViolations, logIn, openBrowser } from "./browser.mjs";
import * as canvas from "./canvas.mjs";

const base = process.env.SLUICE_URL;
const out = process.env.SHOTS ?? "../test-artifacts";
const { browser, page } = await openBrowser();
try {
  await logIn(page, base, process.env.SLUICE_USER ?? "admin", process.env.SLUICE_PASSWORD);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Builder" }).click();
  await page.getByTestId("palette-source-generator").waitFor();
  await canvas.addStage(page, "source", "kafka", "kafka", 110, 160);
  await page.getByLabel("Bootstrap servers").fill("127.0.0.1:9092");
  await page.getByLabel("Topics").fill("orders");
  await page.getByLabel("Record format").selectOption("avro");
  await page.getByText("Schema registry").first().scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${out}/wire-source-avro.png`, fullPage: true });
  await canvas.addStage(page, "sink", "kafka", "kafka", 590, 160);
  await page.getByLabel("Record format").selectOption("avro");
  await page.screenshot({ path: `${out}/wire-sink-avro.png`, fullPage: true });
  const { bad } = await axeViolations(page, `${out}/wire-axe.json`);
  console.log(`axe: ${bad.length} serious or critical`);
} finally {
  await browser.close();
}
