// The console's rough edges (issue 17), each checked in Debian's headless Chromium against the
// real stack (tests/e2e/test_console_edges.py sets up the channels):
// * the site icon; a channel name no channel has: a not-found page, no buttons, no polling;
// * the builder: the Delete key and the "Delete stage" button do the same, one undo each;
//   leaving with unsaved work asks (and staying keeps it); import asks before replacing the
//   canvas and the name, and Undo brings them back; a saved channel's name is read-only with a
//   note, and its own export imports as a copy (chain-copy); the name's rule is said as typed;
// * the Audit page: rows, filters by channel and action;
// * a Kafka channel with a preview sink started, run to the end and stopped: the offsets panel
//   never says "it is STOPPED" while starting; readable per-stage counters; the live tail one
//   row per event, opening to pretty JSON; once stopped, no events/s, no "running" revision,
//   no "X → X" lifecycle line, the tasks line true to the state; an offset past the partition's
//   end refused beside its row, the last success message gone; the restart policy edited.
// Environment: SLUICE_URL, SLUICE_USER, SLUICE_PASSWORD, SHOTS, CHROMIUM, CHAIN (a saved
// generator → filter → preview channel), KAFKA_CHANNEL (Kafka → preview, EVENTS records).
import { mkdirSync } from "node:fs";
import { join } from "node:path";

import { logIn, openBrowser } from "./browser.mjs";

const base = (process.env.SLUICE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const shots = process.env.SHOTS ?? "test-artifacts/edges";
const chain = process.env.CHAIN ?? "edges-chain";
const kafkaChannel = process.env.KAFKA_CHANNEL ?? "edges-kafka";
const events = Number(process.env.EVENTS ?? "10");
const RUN_TIMEOUT = 180_000;
mkdirSync(shots, { recursive: true });

const started = Date.now();
const step = (what) => console.log(`[edges ${((Date.now() - started) / 1000).toFixed(1)}s] ${what}`);
const check = (ok, what) => {
  if (!ok) throw new Error(`FAILED: ${what}`);
  step(`ok: ${what}`);
};

const { browser, page } = await openBrowser();
const pageErrors = [];
page.on("pageerror", (error) => pageErrors.push(String(error)));
const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
const nodes = () => page.locator(".canvas .react-flow__node").count();
const edges = () => page.locator(".canvas .react-flow__edge").count();
/** Answer the next dialog (confirm) and return its message. */
const nextDialog = (accept) =>
  new Promise((resolve) =>
    page.once("dialog", async (dialog) => {
      const message = dialog.message();
      await (accept ? dialog.accept() : dialog.dismiss());
      resolve(message);
    }),
  );

try {
  await logIn(page, base, process.env.SLUICE_USER ?? "admin", process.env.SLUICE_PASSWORD ?? "");

  // -- the site icon -------------------------------------------------------------------------
  const icon = await page.locator('link[rel="icon"]').getAttribute("href");
  const favicon = await page.request.get(`${base}${icon}`);
  check(
    favicon.status() === 200 && favicon.headers()["content-type"] === "image/svg+xml",
    `the page's icon ${icon} is an SVG`,
  );

  // -- a channel that does not exist ----------------------------------------------------------
  const polled = [];
  const onRequest = (request) => {
    if (request.url().includes("/api/v1/channels/no-such-channel")) polled.push(request.url());
  };
  page.on("request", onRequest);
  await page.goto(`${base}/#/channels/no-such-channel`);
  await page.getByTestId("channel-not-found").waitFor();
  await page.waitForTimeout(5000);
  page.off("request", onRequest);
  const buttons = await page.getByRole("button", { name: /^(Start|Stop|Delete|Pause)/ }).count();
  const text = await page.locator("main").innerText();
  check(buttons === 0, "the not-found page has no Start/Stop/Delete buttons");
  check(!text.includes("No Channel matches"), "no raw Django message");
  check(polled.length === 1, `one request, nothing polled in 5 s (${polled.length}: ${polled.join(", ")})`);
  await shot("channel-not-found");

  // -- the builder: Delete key and button, undo ------------------------------------------------
  await page.goto(`${base}/#/build/${chain}`);
  await page.getByTestId("node-transform-filter").waitFor();
  check((await nodes()) === 3 && (await edges()) === 2, "the chain loads: 3 stages, 2 edges");
  await page.locator(".canvas .react-flow__node:has([data-testid=node-transform-filter])").click();
  await page.keyboard.press("Delete");
  await page.waitForFunction(() => document.querySelectorAll(".canvas .react-flow__node").length === 2);
  check((await edges()) === 1, "the Delete key removes the filter and joins source to sink (1 edge)");
  await page.getByRole("button", { name: "Undo" }).click();
  await page.waitForFunction(() => document.querySelectorAll(".canvas .react-flow__node").length === 3);
  check((await edges()) === 2, "one Undo brings the filter and both its edges back");
  await page.locator(".canvas .react-flow__node:has([data-testid=node-transform-filter])").click();
  await page.getByRole("button", { name: "Delete stage" }).click();
  await page.waitForFunction(() => document.querySelectorAll(".canvas .react-flow__node").length === 2);
  check((await edges()) === 1, "the Delete stage button does the same");
  await page.getByRole("button", { name: "Undo" }).click();
  await page.waitForFunction(() => document.querySelectorAll(".canvas .react-flow__node").length === 3);

  // -- leaving with unsaved work asks ---------------------------------------------------------
  let asked = nextDialog(false);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Channels" }).click();
  check(/unsaved changes/.test(await asked), "clicking Channels with unsaved work asks");
  await page.waitForTimeout(300);
  check(page.url().endsWith(`#/build/${chain}`) && (await nodes()) === 3, "Stay keeps the builder and its canvas");

  // -- import asks, and Undo brings the canvas and the name back -------------------------------
  const file = {
    name: "imported.json",
    mimeType: "application/json",
    buffer: Buffer.from(
      JSON.stringify({
        name: "imported-one",
        description: "from a file",
        spec: { source: { type: "generator", config: {} }, transforms: [], sink: { type: "preview", config: {} } },
      }),
    ),
  };
  asked = nextDialog(true);
  await page.getByLabel("Import channel JSON").setInputFiles(file);
  check(/Replace .*edges-chain.* with imported\.json\? Undo brings them back/.test(await asked), "import asks first");
  await page.waitForFunction(() => document.querySelectorAll(".canvas .react-flow__node").length === 2);
  check((await page.getByTestId("channel-name").inputValue()) === "imported-one", "the import replaced the name");
  await shot("builder-imported");
  await page.getByRole("button", { name: "Undo" }).click();
  await page.waitForFunction(() => document.querySelectorAll(".canvas .react-flow__node").length === 3);
  check((await page.getByTestId("channel-name").inputValue()) === chain, "Undo brings the name and canvas back");

  // -- a saved channel's name is fixed and says so; its export imports as a copy ---------------
  check(
    (await page.getByTestId("channel-name").getAttribute("readonly")) !== null,
    "a saved channel's name is read-only",
  );
  await page.getByTestId("channel-name-fixed").filter({ hasText: "Import as a copy" }).waitFor();
  const prompts = [];
  const answerDialogs = async (dialog) => {
    if (dialog.type() === "prompt") prompts.push(dialog.message());
    await dialog.accept(dialog.type() === "prompt" ? dialog.defaultValue() : undefined);
  };
  page.on("dialog", answerDialogs);
  await page.getByLabel("Import channel JSON").setInputFiles({
    ...file,
    buffer: Buffer.from(JSON.stringify({ ...JSON.parse(file.buffer.toString()), name: chain })),
  });
  await page.waitForFunction(
    (name) => document.querySelector("[data-testid=channel-name]")?.value === `${name}-copy`,
    chain,
  );
  page.off("dialog", answerDialogs);
  check(
    prompts.length === 1 && prompts[0].includes(`A channel named “${chain}” exists`),
    "importing under a taken name asks for a copy's name",
  );
  check((await page.getByTestId("channel-name").getAttribute("readonly")) === null, "the copy's name can be typed");
  await page.getByRole("button", { name: "Undo" }).click();
  await page.waitForFunction((name) => document.querySelector("[data-testid=channel-name]")?.value === name, chain);

  // -- the name's rule, as typed ---------------------------------------------------------------
  asked = nextDialog(true);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Builder" }).click();
  await asked;
  await page.getByTestId("channel-name").waitFor();
  await page.getByTestId("channel-name").fill("Orders EU");
  const nameError = page.locator("#channel-name-error");
  await nameError.waitFor();
  check(/Lower-case only: use "orders eu"/.test(await nameError.innerText()), "an upper-case name is refused as typed");
  await shot("builder-name-rule");
  await page.getByTestId("channel-name").fill("orders eu");
  check(/No spaces/.test(await nameError.innerText()), "a space is named");
  await page.getByTestId("channel-name").fill("orders-eu");
  await page.waitForFunction(() => !document.querySelector("#channel-name-error"));
  step("ok: a good name clears the message");

  // -- the Audit page --------------------------------------------------------------------------
  asked = nextDialog(true);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit" }).click();
  await asked;
  await page.getByTestId("audit-row").first().waitFor();
  const total = Number((await page.getByTestId("audit-count").innerText()).replace(/,/g, ""));
  check(total > 0, `the audit page lists ${total} event(s)`);
  await page.getByTestId("audit-channel").fill(chain);
  await page.waitForFunction(
    (name) =>
      [...document.querySelectorAll("[data-testid=audit-row] td:nth-child(4)")].every((td) => td.textContent === name),
    chain,
  );
  check((await page.getByTestId("audit-row").count()) >= 1, `filtered to ${chain}`);
  await page.getByTestId("audit-channel").fill("");
  await page.getByTestId("audit-action").selectOption("channel.create");
  await page.waitForFunction(() =>
    [...document.querySelectorAll("[data-testid=audit-row] td:nth-child(3)")].every(
      (td) => td.textContent === "channel.create",
    ),
  );
  await page.getByTestId("audit-row").first().getByRole("button").click();
  await page.locator(".audit-detail pre").waitFor();
  await shot("audit");
  step("ok: filtered by action; a row opens to its request");

  // -- a Kafka channel: start, run to the end, stop ---------------------------------------------
  await page.goto(`${base}/#/channels/${kafkaChannel}`);
  const badge = page.locator("h1 [data-testid=state-badge]");
  await badge.waitFor();
  const offsetsStatus = page.getByTestId("offsets").locator(".offsets-status");
  await page.getByRole("button", { name: "Start", exact: true }).click();
  const seen = new Set();
  const deadline = Date.now() + RUN_TIMEOUT;
  while ((await badge.innerText()) !== "RUNNING") {
    if (Date.now() > deadline) throw new Error("the channel did not start");
    const said = await offsetsStatus.innerText();
    const line = `${await badge.innerText()}: ${said}`;
    if (!seen.has(line)) check(!/it is STOPPED/.test(said), `while starting the offsets panel says: ${said}`);
    seen.add(line);
    await page.waitForTimeout(250);
  }
  step(`states seen while starting: ${[...seen].join(" | ")}`);
  // The tail fills, the tasks reach the end of the topic.
  await page.getByTestId("tail-row").first().waitFor({ timeout: RUN_TIMEOUT });
  const summary = await page.getByTestId("tail-row").first().locator("summary").innerText();
  check(/\w=/.test(summary) && !summary.includes("\n"), `a tail row is one readable line: ${summary}`);
  await page.getByTestId("tail-row").first().locator("summary").click();
  const pretty = await page.getByTestId("tail-row").first().locator("pre").innerText();
  check(pretty.split("\n").length > 2, "an opened row shows the event pretty-printed");
  await page.waitForFunction(
    () =>
      [...document.querySelectorAll(".mini-canvas .stage-count")].some((el) =>
        /^[0-9.]+[KMB]? in$/.test(el.textContent ?? ""),
      ),
    null,
    { timeout: RUN_TIMEOUT },
  );
  const counters = await page.locator(".mini-canvas .stage-count").evaluateAll((els) =>
    els.map((el) => {
      const box = el.getBoundingClientRect();
      const style = getComputedStyle(el);
      const zoom = box.height / el.offsetHeight; // React Flow scales the nodes
      return { text: el.textContent, px: parseFloat(style.fontSize) * zoom, lines: el.getClientRects().length };
    }),
  );
  step(`counters: ${JSON.stringify(counters)}`);
  check(
    counters.every((c) => c.px >= 11),
    "per-stage counters are at least 11 px on screen",
  );
  check(
    counters.every((c) => c.lines === 1),
    "no counter wraps",
  );
  await page.getByTestId("live-tail").scrollIntoViewIfNeeded();
  await shot("channel-running");
  await page.waitForFunction(
    (end) =>
      [...document.querySelectorAll("section[aria-label=Tasks] tbody tr td:nth-child(4)")].some(
        (td) => td.textContent === String(end),
      ),
    events,
    { timeout: RUN_TIMEOUT },
  );
  await page.getByRole("button", { name: "Stop", exact: true }).click();
  await page.waitForFunction(
    () => document.querySelector("h1 [data-testid=state-badge]")?.textContent === "STOPPED",
    null,
    {
      timeout: 60_000,
    },
  );
  await page.waitForTimeout(2500); // a poll after the stop
  check((await page.getByTestId("events-per-second").innerText()) === "—", "a stopped channel shows no events/s");
  const revisions = await page.getByTestId("revisions").locator("tbody").innerText();
  check(!/running/.test(revisions), "no revision tagged running on a stopped channel");
  const timeline = await page.locator("ol.timeline").innerText();
  const same = timeline.split("\n").filter((line) => /\b([A-Z]+) → \1\b/.test(line));
  check(same.length === 0, `no "X → X" line in the timeline (${same.join("; ")})`);
  step(`timeline "stays" lines: ${timeline.split("\n").filter((line) => / stays /.test(line)).length}`);
  const noTasks = page.getByTestId("no-tasks");
  if ((await noTasks.count()) > 0)
    check(/stopped/.test(await noTasks.innerText()), "the tasks line says the channel is stopped");

  // -- offsets: a success, then a refusal beside its row, the success gone -----------------------
  const input = page.getByLabel(`New offset for`).first();
  await page.waitForFunction(() => !document.querySelector("[data-testid=offsets] input")?.disabled, null, {
    timeout: 30_000,
  });
  await input.fill("3");
  await page.getByRole("button", { name: "Set offsets", exact: true }).click();
  await page.getByTestId("offsets-message").waitFor();
  step(`ok: set to 3: ${await page.getByTestId("offsets-message").innerText()}`);
  await input.fill(String(events + 5));
  await page.getByRole("button", { name: "Set offsets", exact: true }).click();
  const rowError = page.getByTestId("offsets").locator("td .error");
  await rowError.waitFor();
  check(
    /Past the end of .*: its end offset is 10/.test(await rowError.innerText()),
    `refused beside the row: ${await rowError.innerText()}`,
  );
  check((await page.getByTestId("offsets-message").count()) === 0, "the old success message is gone");
  await page.getByTestId("offsets").scrollIntoViewIfNeeded();
  await shot("offsets-past-end");

  // -- the restart policy ----------------------------------------------------------------------
  const policy = page.getByTestId("restart-policy");
  await policy.getByTestId("policy-max_attempts").fill("3");
  await policy.getByTestId("policy-backoff_max_seconds").fill("0.5");
  await policy.getByRole("button", { name: "Save policy" }).click();
  check(
    /at least backoff_initial_seconds/.test(await policy.locator("#policy-backoff_max_seconds-error").innerText()),
    "a cap under the first wait is refused",
  );
  await policy.getByTestId("policy-backoff_max_seconds").fill("30");
  await policy.getByRole("button", { name: "Save policy" }).click();
  await policy.getByTestId("policy-message").waitFor();
  await page.reload();
  await page.getByTestId("restart-policy").getByTestId("policy-max_attempts").waitFor();
  check(
    (await page.getByTestId("policy-max_attempts").inputValue()) === "3",
    "the policy is saved (3 attempts after a reload)",
  );
  await page.getByTestId("restart-policy").scrollIntoViewIfNeeded();
  await shot("channel-stopped");

  if (pageErrors.length > 0) throw new Error(`errors in the page:\n${pageErrors.join("\n")}`);
  step("passed");
} catch (error) {
  await shot("failure-edges").catch(() => {});
  console.error(`[edges] FAILED: ${error?.stack ?? error}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
