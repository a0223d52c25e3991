// A bus drawn in Debian's headless Chromium (playwright-core, no download): generator → EU
// filter → preview; a second filter drawn from the generator forks it (the first link stays;
// undone), then a second sink (files) dragged from the generator forks the channel into two
// rules (the canvas adds a rule node per branch: "default" for the branch the linear channel
// had, with the EU filter as its own transform, "rule-1" for the new one). The new rule is
// renamed and given a pattern; the rules bench tells which rules' sinks two sample events
// reach (the EU filter of the default branch counts) and marks them on the
// canvas. Saving is refused because a preview sink cannot be a rule's target, the error
// marked on that node; it is replaced by a files sink and the bus saved. The saved spec is
// read back (two rules, the pattern), exported as JSON, and the channel page shows the rules
// table. axe-core checks the builder and the channel page. With E2E_BUS_RUN=1 the bus is then
// started until both rules show matched events in the table and on the pipeline's rule
// nodes, and stopped. Screenshots builder-bus.png, channel-bus.png (channel-bus-running.png)
// in E2E_ARTIFACTS.
// Environment: SLUICE_URL, SLUICE_USER, SLUICE_PASSWORD, E2E_ARTIFACTS, E2E_CHANNEL, CHROMIUM,
// E2E_BUS_RUN, E2E_RUN_TIMEOUT_MS.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { axeViolations, logIn, openBrowser } from "./browser.mjs";
import { addStage, canvasNode, connect, selectNode } from "./canvas.mjs";

const base = (process.env.SLUICE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const artifacts = process.env.E2E_ARTIFACTS ?? "test-artifacts/e2e";
const channel = process.env.E2E_CHANNEL ?? "e2e-bus";
const runIt = process.env.E2E_BUS_RUN === "1";
const RUN_TIMEOUT = Number(process.env.E2E_RUN_TIMEOUT_MS ?? 180_000);
const PATTERN = '{"data": {"amount": [{"numeric": [">", 100]}]}}';
mkdirSync(artifacts, { recursive: true });
const started = Date.now();
const step = (what) => console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s] ${what}`);

const { browser, page } = await openBrowser();
const consoleErrors = [];
page.on("pageerror", (error) => consoleErrors.push(String(error)));

async function checkA11y(label) {
  const { report, bad } = await axeViolations(page, join(artifacts, `axe-${label}-bus.json`));
  step(`axe on ${label}: ${report.length} violation(s), ${bad.length} serious or critical`);
  if (bad.length > 0) throw new Error(`axe on ${label}:\n${JSON.stringify(bad, null, 2)}`);
}

const panel = () => page.locator(".config-panel");

async function waitForState(state) {
  await page.waitForFunction(
    (wanted) => document.querySelector("h1 [data-testid=state-badge]")?.textContent === wanted,
    state,
    { timeout: RUN_TIMEOUT },
  );
  step(`channel is ${state}`);
}
const filesSink = (nth) => page.locator('.react-flow__node:has([data-testid="node-sink-files"])').nth(nth);

async function testRules(sample, summary) {
  await page.getByLabel("Pick a sample event").selectOption({ label: sample });
  await page.getByRole("button", { name: "Test the rules" }).click();
  await page.getByTestId("rules-result").filter({ hasText: summary }).waitFor();
  step(`rules bench, ${sample}: ${summary}`);
}

try {
  step("log in and open the builder");
  await logIn(page, base, process.env.SLUICE_USER ?? "admin", process.env.SLUICE_PASSWORD ?? "");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Builder" }).click();
  await page.getByTestId("palette-source-generator").waitFor();

  step("draw generator → filter → preview");
  await addStage(page, "source", "generator", "generator", 90, 140);
  await page.getByLabel("Events per second").fill("20");
  await addStage(page, "transform", "filter", "filter", 300, 140);
  await page.getByLabel("Event pattern").fill('{"data": {"region": [{"prefix": "eu-"}]}}');
  await addStage(page, "sink", "preview", "preview", 510, 140);
  await connect(page, "source-generator", "transform-filter");
  await connect(page, "transform-filter", "sink-preview");

  step("a second filter drawn from the source is a second branch: the EU filter stays linked");
  await addStage(page, "transform", "filter", "filter", 300, 330, 1);
  await connect(
    page,
    "source-generator",
    page.locator('.react-flow__node:has([data-testid="node-transform-filter"])').nth(1),
  );
  await canvasNode(page, "rule-default").waitFor();
  await canvasNode(page, "rule-rule-1").waitFor();
  // generator → each rule, default → EU filter → preview, rule-1 → the new filter.
  await page.waitForFunction(() => document.querySelectorAll(".react-flow__edge").length === 5);
  // Undo the fork and the new filter (its form's edits may be steps of their own too).
  const drawn = () =>
    page.evaluate(() => [
      document.querySelectorAll(".react-flow__node").length,
      document.querySelectorAll(".react-flow__edge").length,
    ]);
  for (let clicks = 0; clicks < 6 && (await drawn()).join() !== "3,2"; clicks++) {
    await page.getByRole("button", { name: "Undo" }).click();
  }
  await page.waitForFunction(
    () =>
      document.querySelectorAll(".react-flow__node").length === 3 &&
      document.querySelectorAll(".react-flow__edge").length === 2,
  );
  step(`undone: ${(await drawn()).join(" nodes, ")} edges`);

  step("drag a second sink (files) from the generator: the channel forks into two rules");
  await addStage(page, "sink", "files", "files", 510, 330);
  await page.getByLabel("Directory").fill("e2e-bus/big-orders");
  await connect(page, "source-generator", filesSink(0));
  await canvasNode(page, "rule-default").waitFor();
  await canvasNode(page, "rule-rule-1").waitFor();
  // generator → each rule, default → EU filter → preview, rule-1 → files.
  await page.waitForFunction(() => document.querySelectorAll(".react-flow__edge").length === 5);

  step("name the second rule and give it a pattern");
  await selectNode(page, "rule-rule-1");
  await page.getByLabel("Rule name").fill("big-orders");
  await page.getByLabel("Event pattern").fill(PATTERN);
  await canvasNode(page, "rule-big-orders").waitFor();
  await page.waitForFunction(() => !document.querySelector(".stage-node.invalid"));

  step("a preview sink cannot be a rule's target: the save is refused, marked on that node");
  await page.getByLabel("Channel name").fill(channel);
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByTestId("save-message").filter({ hasText: "Not saved" }).waitFor();
  await page.locator("[data-testid=node-sink-preview].invalid").waitFor();
  await selectNode(page, "sink-preview");
  await panel()
    .getByText(/a rule cannot send to it/)
    .waitFor();

  step("replace it with a files sink, dropped where it stood");
  const spot = await canvasNode(page, "sink-preview").boundingBox();
  const pane = await page.locator(".react-flow__pane").boundingBox();
  await panel().getByRole("button", { name: "Delete stage" }).click();
  // A drop puts the node's corner 80, 30 px up-left of the pointer.
  await addStage(page, "sink", "files", "files", spot.x - pane.x + 80, spot.y - pane.y + 30, 1);
  await page.getByLabel("Directory").fill("e2e-bus/eu");
  await connect(page, "transform-filter", filesSink(1));

  step("which rules' sinks does a sample reach?");
  await selectNode(page, "rule-big-orders");
  // The default rule matches every event, but its own EU filter drops the EC2 event.
  await testRules("EC2 instance state change (EventBridge)", "0 of 2 rules match");
  await page.getByTestId("rule-result-default").filter({ hasText: "Dropped" }).waitFor();
  await page.getByTestId("rule-result-big-orders").filter({ hasText: "No match" }).waitFor();
  // The server says why, per rule: the branch's own filter dropped it (issue 30).
  await page.getByTestId("rule-result-default").getByText("its filter (transform 1) drops the event").waitFor();
  await page.getByRole("table", { name: "Rules the sample matches" }).scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(artifacts, "rules-bench.png") });
  await canvasNode(page, "rule-default").getByTestId("rule-match").filter({ hasText: "no match" }).waitFor();
  await testRules("Order (the demo generator's)", "2 of 2 rules match");
  await canvasNode(page, "rule-default").getByTestId("rule-match").filter({ hasText: "sample matches" }).waitFor();
  await canvasNode(page, "rule-big-orders").getByTestId("rule-match").filter({ hasText: "sample matches" }).waitFor();
  await checkA11y("builder");

  step("save the bus");
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByTestId("save-message").filter({ hasText: "Saved revision 1" }).waitFor();
  await page.screenshot({ path: join(artifacts, "builder-bus.png") });
  step(`builder screenshot: ${join(artifacts, "builder-bus.png")}`);

  step("the saved spec has two rules");
  const saved = await page.evaluate(async (name) => {
    const answer = await fetch(`/api/v1/channels/${name}/`, { headers: { Accept: "application/json" } });
    return answer.json();
  }, channel);
  const rules = saved.spec.rules ?? [];
  const summary = rules.map(
    (r) => `${r.name}: ${JSON.stringify(r.pattern)} → ${r.sinks.map((s) => s.type).join(", ")}`,
  );
  step(`saved rules: ${summary.join(" | ")}`);
  if (rules.length !== 2 || "sink" in saved.spec)
    throw new Error(`expected a bus with two rules: ${JSON.stringify(saved.spec)}`);
  if (rules[0].transforms?.[0]?.type !== "filter")
    throw new Error(`the default rule lost its EU filter: ${JSON.stringify(rules[0])}`);
  if (JSON.stringify(rules[1].pattern) !== JSON.stringify(JSON.parse(PATTERN)))
    throw new Error(`the pattern was not saved: ${JSON.stringify(rules[1])}`);

  step("export the bus as JSON");
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("button", { name: "Export" }).click(),
  ]);
  const exported = JSON.parse(readFileSync(await download.path(), "utf8"));
  if ((exported.spec.rules ?? []).map((r) => r.name).join(",") !== "default,big-orders")
    throw new Error(`export: ${JSON.stringify(exported)}`);

  step("the channel page lists the rules");
  await page.getByRole("link", { name: "Open channel page" }).click();
  await page.getByRole("heading", { name: channel }).waitFor();
  const table = page.getByRole("region", { name: "Rules" });
  await table.getByTestId("rule-row-default").waitFor();
  await table.getByTestId("rule-row-big-orders").filter({ hasText: "data.amount" }).waitFor();
  await page.locator(".mini-canvas [data-testid=node-rule-big-orders]").waitFor();
  // The builder's bench marks belong to the builder's canvas, not to this one.
  if ((await page.locator(".mini-canvas [data-testid=rule-match]").count()) > 0)
    throw new Error("the channel page's pipeline shows the builder's rule marks");
  await page.screenshot({ path: join(artifacts, "channel-bus.png"), fullPage: true });
  await checkA11y("channel");

  step("reopened in the builder, the bus saves as it was (no new revision)");
  await page.getByRole("link", { name: "Edit in builder" }).click();
  await canvasNode(page, "rule-big-orders").waitFor();
  await canvasNode(page, "rule-default").waitFor();
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByTestId("save-message").filter({ hasText: "Saved revision 1 " }).waitFor();
  await page.getByRole("link", { name: "Open channel page" }).click();
  await page.getByRole("heading", { name: channel }).waitFor();

  if (runIt) {
    step("start the bus: each rule's counts in the table and on its node");
    await page.getByRole("button", { name: "Start", exact: true }).click();
    await waitForState("RUNNING");
    await page.waitForFunction(
      () =>
        ["default", "big-orders"].every((rule) => {
          const cell = document.querySelector(`[data-testid=rule-row-${rule}] td:nth-child(3)`);
          return Number((cell?.textContent ?? "").replace(/,/g, "")) > 0;
        }),
      null,
      { timeout: RUN_TIMEOUT },
    );
    const rows = await page.getByTestId("rules-table").locator("tbody tr").allInnerTexts();
    step(`rules: ${rows.map((r) => r.replace(/\s+/g, " ")).join(" | ")}`);
    await page
      .locator(".mini-canvas [data-testid=node-rule-big-orders] .stage-detail")
      .filter({ hasText: "matched" })
      .waitFor();
    const stages = await page.evaluate(async (name) => {
      const answer = await fetch(`/api/v1/channels/${name}/status`, { credentials: "same-origin" });
      const body = await answer.json();
      return { stages: body.stages, events_per_second: body.events_per_second };
    }, channel);
    step(`status: ${JSON.stringify(stages)}`);
    // A bus counts its source as a linear channel does (the walk found none).
    await page
      .locator(".mini-canvas [data-testid=node-source-generator] .stage-detail")
      .filter({ hasText: /events\/s in\s*[\d.,KM]+ in/ })
      .waitFor({ timeout: RUN_TIMEOUT });
    const lines = await page.locator(".mini-canvas .stage-detail").allTextContents();
    step(`pipeline: ${lines.join(" | ")}`);
    await page.screenshot({ path: join(artifacts, "channel-bus-running.png"), fullPage: true });
    await page.getByRole("button", { name: "Stop", exact: true }).click();
    await waitForState("STOPPED");
  }
  if (consoleErrors.length > 0) throw new Error(`errors in the page:\n${consoleErrors.join("\n")}`);
  step("passed");
} catch (error) {
  await page.screenshot({ path: join(artifacts, "failure-bus.png"), fullPage: true }).catch(() => {});
  console.error(`[e2e] FAILED: ${error?.stack ?? error}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
