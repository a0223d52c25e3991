// End-to-end run of the console in Debian's headless Chromium (playwright-core, no download):
// log in, drag a source, a filter and a sink onto the canvas, connect them, fill the forms,
// see a validation error and fix it, try sample events on the pattern, save, start, watch it
// run, pause, resume, stop; view its offsets, save a second revision and open the diff between
// the running revision and the latest, then deploy it from the page's deploy bar (its plan and
// confirmation checked). axe-core checks the channels list, the builder and the channel page
// (no serious or critical violation; reports axe-<page>-<flow>.json). Screenshots
// (builder-<flow>.png, channel-<flow>.png, revisions-<flow>.png, deploy-<flow>.png) go to
// E2E_ARTIFACTS.
//
// E2E_FLOW=generator: generator → filter → preview (the live tail shows the output).
// E2E_FLOW=kafka: Kafka source (E2E_KAFKA, topic E2E_TOPIC_IN, from the earliest offset) →
//   filter → Kafka sink (topic E2E_TOPIC_OUT); the caller keeps producing to E2E_TOPIC_IN. The
//   live tail shows the sink topic's records near the top, holds an opened row, pauses
//   (tail-kafka-1440.png, tail-kafka-1024.png).
// Environment: SLUICE_URL, SLUICE_USER, SLUICE_PASSWORD, E2E_ARTIFACTS, E2E_CHANNEL,
// CHROMIUM (default /usr/bin/chromium), E2E_BUILDER_ONLY=1 to stop after saving.
import { mkdirSync } from "node:fs";
import { join } from "node:path";

import { axeViolations, logIn, openBrowser } from "./browser.mjs";
import * as canvas from "./canvas.mjs";

const base = (process.env.SLUICE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const user = process.env.SLUICE_USER ?? "admin";
const password = process.env.SLUICE_PASSWORD ?? "";
const artifacts = process.env.E2E_ARTIFACTS ?? "test-artifacts/e2e";
const channel = process.env.E2E_CHANNEL ?? "e2e-orders";
const builderOnly = process.env.E2E_BUILDER_ONLY === "1";
const flow = process.env.E2E_FLOW ?? "generator";
const kafka = process.env.E2E_KAFKA ?? "127.0.0.1:9092";
const topicIn = process.env.E2E_TOPIC_IN ?? "e2e-in";
const topicOut = process.env.E2E_TOPIC_OUT ?? "e2e-out";
const RUN_TIMEOUT = Number(process.env.E2E_RUN_TIMEOUT_MS ?? 180_000);

mkdirSync(artifacts, { recursive: true });
const started = Date.now();
const step = (what) => console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s] ${what}`);

const { browser, page } = await openBrowser();
const consoleErrors = [];
page.on("pageerror", (error) => consoleErrors.push(String(error)));

const connect = (fromNode, toNode) => canvas.connect(page, fromNode, toNode);
const selectNode = (node) => canvas.selectNode(page, node);
const addStage = (kind, type, search, x, y) => canvas.addStage(page, kind, type, search, x, y);

const FLOWS = {
  generator: {
    source: "source-generator",
    sink: "sink-preview",
    async addSource() {
      await addStage("source", "generator", "generator", 110, 160);
      await page.getByLabel("Events per second").fill("20");
    },
    async addSink() {
      await addStage("sink", "preview", "preview", 590, 160);
    },
  },
  kafka: {
    source: "source-kafka",
    sink: "sink-kafka",
    async addSource() {
      await addStage("source", "kafka", "kafka", 110, 160);
      await page.getByLabel("Bootstrap servers").fill(kafka);
      await page.getByLabel("Topics").fill(topicIn);
      // Typed as the help text says it (text, not JSON); the plaintext broker's form folds its
      // SASL / TLS settings away, and the node names its topic.
      await page.getByLabel("Starting offsets").fill("earliest");
      await page.getByText("Security (SASL / TLS): none, plaintext").waitFor();
      if (await page.getByLabel("SASL mechanism").isVisible()) throw new Error("SASL fields shown");
      await page
        .getByTestId("node-source-kafka")
        .filter({ hasText: `kafka · ${topicIn}` })
        .waitFor();
    },
    async addSink() {
      await addStage("sink", "kafka", "kafka", 590, 160);
      await page.getByLabel("Bootstrap servers").fill(kafka);
      await page.getByLabel("Topic", { exact: false }).first().fill(topicOut);
    },
  },
};

/** Run axe-core on the page as it is; fail on any serious or critical violation. */
async function checkA11y(label) {
  const { report, bad } = await axeViolations(page, join(artifacts, `axe-${label}-${flow}.json`));
  step(`axe on ${label}: ${report.length} violation(s), ${bad.length} serious or critical`);
  if (bad.length > 0) throw new Error(`axe on ${label}:\n${JSON.stringify(bad, null, 2)}`);
}

const stateBadge = () => page.locator("h1 [data-testid=state-badge]");

/** The Kafka → Kafka channel's live tail: near the top, on the sink topic's records, an opened
 * row held in place while newer events wait behind a button, Pause stops the reading. */
async function checkTail() {
  step("the live tail shows the sink topic's events near the top");
  const check = (ok, what) => {
    if (!ok) throw new Error(`FAILED: ${what}`);
    step(`ok: ${what}`);
  };
  const rows = page.getByTestId("tail-row");
  await rows.first().waitFor({ timeout: RUN_TIMEOUT });
  check((await page.getByTestId("tail-point").inputValue()) === "sink", "the tail opens on the sink");
  const location = (await page.getByTestId("tail-location").textContent()) ?? "";
  check(location === `Kafka topic ${topicOut} on ${kafka}`, `it says where it reads: ${location}`);
  const first = rows.first().locator("summary");
  const line = await first.innerText();
  check(
    /^\d\d:\d\d:\d\d\.\d{3}\s+p0 #\d+\s+(key=\S+\s+)?.*region=eu-/.test(line),
    `a row: time, partition/offset, fields: ${line}`,
  );
  const tailBox = await page.getByRole("region", { name: "Live tail", exact: true }).boundingBox();
  const pipelineBox = await page.getByRole("region", { name: "Pipeline", exact: true }).boundingBox();
  check(tailBox.y < pipelineBox.y && tailBox.y < 700, `the tail is near the top (y ${Math.round(tailBox.y)} px)`);
  check(
    Math.abs(tailBox.width - pipelineBox.width) < 2 && tailBox.width > 1000,
    `the tail is full width, as the Pipeline (${Math.round(tailBox.width)} px)`,
  );

  step("an opened row stays in place while newer events wait");
  await first.click();
  // A poll may have put newer rows on top between reading the first row and the click: the row
  // under test is the one the click opened.
  const opened = page.locator("[data-testid=tail-row][open]");
  await opened.first().waitFor({ timeout: 10_000 });
  check((await opened.count()) === 1, "one row is open");
  const openedLine = await opened.first().locator("summary").innerText();
  await page.getByTestId("tail-waiting").waitFor({ timeout: 60_000 });
  check((await rows.first().locator("summary").innerText()) === openedLine, "the opened row is still the first");
  check(await rows.first().evaluate((el) => el.open), "and still open");
  const held = (await page.getByTestId("tail-status").textContent()) ?? "";
  check(held.startsWith("Held while an event is open"), `the tail says it is held: ${held}`);
  const pretty = await rows.first().locator("pre").innerText();
  check(pretty.split("\n").length > 2 && pretty.includes('"region"'), "the opened row shows the value in full");
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(artifacts, `tail-${flow}-1440.png`) });
  await page.setViewportSize({ width: 1024, height: 900 });
  await page.screenshot({ path: join(artifacts, `tail-${flow}-1024.png`) });
  await page.setViewportSize({ width: 1280, height: 800 });
  // How long a look takes, polled beside a running channel (the server reads Kafka each time).
  const took = [];
  const timed = (request) => {
    if (request.url().includes(`/channels/${channel}/tail`)) took.push(Math.round(request.timing().responseEnd));
  };
  page.on("requestfinished", timed);
  await page.waitForTimeout(6500);
  page.off("requestfinished", timed);
  step(`tail reads took ${took.join(", ")} ms`);
  const waiting = (await page.getByTestId("tail-waiting").textContent()) ?? "";
  await page.getByTestId("tail-waiting").click();
  check((await rows.first().locator("summary").innerText()) !== line, `"${waiting}" brings the newer events in`);

  step("Pause tail stops the reading");
  // Close what is open (the opened row may have left the newest 50 with the newer events).
  for (const open of await page.locator("[data-testid=tail-row][open] > summary").all()) await open.click();
  await page.getByRole("button", { name: "Pause tail" }).click();
  await page.getByTestId("tail-status").filter({ hasText: "Paused: not reading new events." }).waitFor();
  let reads = 0;
  const count = (request) => {
    if (request.url().includes(`/channels/${channel}/tail`)) reads += 1;
  };
  page.on("request", count);
  await page.waitForTimeout(5000);
  page.off("request", count);
  check(reads === 0, `no reads while paused (${reads})`);
  await page.getByRole("button", { name: "Resume tail" }).click();
  await page.getByTestId("tail-status").filter({ hasText: "Reading every 2 s" }).waitFor();
}

async function waitForState(state) {
  await page.waitForFunction(
    (wanted) => document.querySelector("h1 [data-testid=state-badge]")?.textContent === wanted,
    state,
    { timeout: RUN_TIMEOUT },
  );
  step(`channel is ${state}`);
}

try {
  step("log in");
  await logIn(page, base, user, password);
  await page.getByRole("region", { name: "Getting started" }).waitFor();
  await checkA11y("channels");

  const stages = FLOWS[flow];
  if (!stages) throw new Error(`unknown E2E_FLOW ${flow}`);
  step(`open the builder and drag three stages onto the canvas (${flow})`);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Builder" }).click();
  await page.getByTestId("palette-source-generator").waitFor();
  await stages.addSource();
  await addStage("transform", "filter", "filter", 350, 160);
  await stages.addSink();

  step("connect source → filter → sink");
  await connect(stages.source, "transform-filter");
  await connect("transform-filter", stages.sink);
  await page.waitForFunction(() => document.querySelectorAll(".react-flow__edge").length === 2);

  step("the empty filter is invalid: the server says so as we go");
  await selectNode("transform-filter");
  await page.locator("[data-testid=node-transform-filter].invalid").waitFor();
  await page
    .locator(".config-panel")
    .getByText(/pattern needs a field|field required/)
    .first()
    .waitFor();

  step("a mistyped operator is refused on save, marked on the filter's field");
  await page.getByLabel("Channel name").fill(channel);
  await page.getByLabel("Event pattern").fill('{"data": {"region": [{"prefx": "eu-"}]}}');
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByTestId("save-message").filter({ hasText: "Not saved" }).waitFor();
  await page.getByText("unknown operator 'prefx'").first().waitFor();

  step("fix it, try the pattern on picked sample events, save");
  await page.getByLabel("Event pattern").fill('{"data": {"region": [{"prefix": "eu-"}]}}');
  await page.waitForFunction(() => !document.querySelector(".stage-node.invalid"));
  await page.getByLabel("Pick a sample event").selectOption({ label: "EC2 instance state change (EventBridge)" });
  await page.getByRole("button", { name: "Test pattern" }).click();
  await page.getByTestId("pattern-result").filter({ hasText: "No match" }).waitFor();
  await page.getByLabel("Pick a sample event").selectOption({ label: "Order (the demo generator's)" });
  await page.getByRole("button", { name: "Test pattern" }).click();
  await page
    .getByTestId("pattern-result")
    .filter({ hasText: /^Match$/ })
    .waitFor();
  if (flow === "generator") {
    step("available-now is refused on the generator source's node (it has no end); back to micro-batch");
    await page.locator(".react-flow__pane").click({ position: { x: 20, y: 20 } });
    await page.getByLabel("Execution mode").selectOption("available-now");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByTestId("save-message").filter({ hasText: "Not saved" }).waitFor();
    await page.locator("[data-testid=node-source-generator].invalid").waitFor();
    await selectNode("source-generator");
    await page
      .locator(".config-panel")
      .getByText(/no end for available-now/)
      .first()
      .waitFor();
    await page.locator(".react-flow__pane").click({ position: { x: 20, y: 20 } });
    await page.getByLabel("Execution mode").selectOption("micro-batch");
    await page.getByLabel("Isolation").selectOption("shared");
  }
  await checkA11y("builder");
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByTestId("save-message").filter({ hasText: "Saved revision 1" }).waitFor();
  await page.screenshot({ path: join(artifacts, `builder-${flow}.png`) });
  step(`builder screenshot: ${join(artifacts, `builder-${flow}.png`)}`);

  if (!builderOnly) {
    step("open the channel page and start it");
    await page.getByRole("link", { name: "Open channel page" }).click();
    await page.getByRole("heading", { name: channel }).waitFor();
    await page.getByRole("button", { name: "Start", exact: true }).click();
    await waitForState("RUNNING");
    await page
      .getByTestId("driver")
      .filter({ hasText: /^Driver \S+/ })
      .waitFor({ timeout: RUN_TIMEOUT });
    step(`${await page.getByTestId("driver").textContent()}`);

    step("events are counted");
    await page.waitForFunction(
      (withTail) => {
        const rate = document.querySelector("[data-testid=events-per-second]")?.textContent ?? "";
        const tail = document.querySelectorAll("[data-testid=live-tail] .tail-event").length;
        return (!withTail || tail > 0) && /^[0-9.,]+$/.test(rate) && Number(rate.replace(/,/g, "")) > 0;
      },
      flow === "generator",
      { timeout: RUN_TIMEOUT },
    );
    const rate = await page.getByTestId("events-per-second").textContent();
    step(`events/s = ${rate}`);

    if (flow === "kafka") await checkTail();

    step("the read-only canvas counts events per stage");
    await page.waitForFunction(
      () => {
        // Each figure is a span of its own ("12 in", "10 out"): read them one by one.
        const lines = [...document.querySelectorAll(".stage-detail")].map((el) =>
          [...el.querySelectorAll(".stage-count")].map((part) => part.textContent ?? "").join(" · "),
        );
        // Source, every transform and the sink each say what came in and went out.
        return lines.length >= 3 && lines.every((line) => /\d[\d.,KM]* in · \d[\d.,KM]* out/.test(line));
      },
      null,
      { timeout: RUN_TIMEOUT },
    );
    const stageLines = await page.locator(".stage-detail").allTextContents();
    step(`stage counts: ${stageLines.join(" | ")}`);
    await page.screenshot({ path: join(artifacts, `channel-${flow}.png`), fullPage: true });
    step(`channel screenshot: ${join(artifacts, `channel-${flow}.png`)}`);

    step("pause, resume, stop");
    await page.getByRole("button", { name: "Pause", exact: true }).click();
    await waitForState("PAUSED");
    await page.getByRole("button", { name: "Resume", exact: true }).click();
    await waitForState("RUNNING");
    await page.getByRole("button", { name: "Stop", exact: true }).click();
    await waitForState("STOPPED");
    await page.getByRole("region", { name: "Lifecycle" }).getByText("PAUSED").first().waitFor();

    step("view the offsets of the stopped channel");
    const offsets = page.getByRole("region", { name: "Offsets" });
    await page.getByTestId("offsets").scrollIntoViewIfNeeded();
    if (flow === "kafka") {
      const first = offsets.getByLabel(`New offset for ${topicIn} partition 0`);
      await page.waitForFunction(
        (label) => {
          const input = document.querySelector(`[aria-label="${label}"]`);
          return input && !input.disabled;
        },
        `New offset for ${topicIn} partition 0`,
        { timeout: 30_000 },
      );
      await first.fill("0");
      await offsets.getByRole("button", { name: "Set offsets", exact: true }).click();
      await page.getByTestId("offsets-message").waitFor();
      step(`offsets: ${await page.getByTestId("offsets-message").textContent()}`);
    } else {
      await page.getByTestId("offsets-note").waitFor();
      step(`offsets: ${await page.getByTestId("offsets-note").textContent()}`);
    }
    await checkA11y("channel");

    step("save a second revision and diff it against the running one");
    await page.getByRole("link", { name: "Edit in builder" }).click();
    await page.getByTestId("node-transform-filter").waitFor();
    await selectNode("transform-filter");
    await page.getByLabel("Event pattern").fill('{"data": {"region": [{"prefix": "eu-w"}]}}');
    await page.waitForFunction(() => !document.querySelector(".stage-node.invalid"));
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByTestId("save-message").filter({ hasText: "Saved revision 2" }).waitFor();
    await page.getByRole("link", { name: "Open channel page" }).click();
    const diff = page.getByTestId("revision-diff");
    await diff.filter({ hasText: "Revision 1 → revision 2" }).waitFor();
    await diff.locator("ins.diff-line").filter({ hasText: '"eu-w"' }).waitFor();
    await diff.locator("del.diff-line").filter({ hasText: '"eu-"' }).waitFor();
    await page.getByRole("region", { name: "Revisions" }).getByText("admin").first().waitFor();
    await page.getByTestId("revisions").scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(artifacts, `revisions-${flow}.png`), fullPage: true });
    await checkA11y("channel-diff");

    step("the page says which revision ran and which is saved, and deploys the saved one");
    const bar = page.getByTestId("deploy-bar");
    await bar.filter({ hasText: "Last ran revision 1; revision 2 is saved and not deployed yet." }).waitFor();
    await bar.filter({ hasText: "Starts the channel with revision 2, from its checkpoint." }).waitFor();
    await bar.filter({ hasText: "Changed: transforms[" }).waitFor();
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(artifacts, `deploy-${flow}.png`) });
    let asked = "";
    page.once("dialog", (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await bar.getByRole("button", { name: "Deploy revision 2" }).click();
    await waitForState("RUNNING");
    if (!asked.startsWith(`Deploy revision 2 of ${channel}?`)) throw new Error(`confirmation: ${asked}`);
    await page.getByTestId("deploy-bar").waitFor({ state: "detached", timeout: RUN_TIMEOUT });
    step(`deployed: ${asked.replace(/\n+/g, " ")}`);
    await page.getByRole("button", { name: "Stop", exact: true }).click();
    await waitForState("STOPPED");
  }
  if (consoleErrors.length > 0) throw new Error(`errors in the page:\n${consoleErrors.join("\n")}`);
  step("passed");
} catch (error) {
  await page.screenshot({ path: join(artifacts, `failure-${flow}.png`), fullPage: true }).catch(() => {});
  console.error(`[e2e] FAILED: ${error?.stack ?? error}`);
  console.error(
    `[e2e] state badge: ${await stateBadge()
      .textContent()
      .catch(() => "?")}`,
  );
  process.exitCode = 1;
} finally {
  await browser.close();
}
