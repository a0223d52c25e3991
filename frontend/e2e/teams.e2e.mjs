// Teams in the console (issue 33), in Debian's headless Chromium against the real stack
// (tests/e2e/test_teams_console.py makes the teams, the user and the channels):
// * a member of two teams sees their channels with each one's team beside its name, never a
//   third team's (the count included), and the team filter keeps one team's;
// * a channel's Start button follows the user's role in its team (not an operator there: off);
// * another team's channel, opened by its address, is the not-found page;
// * the builder asks a new channel's team of a user who may create in both, offering only those.
// Environment: SLUICE_URL, SLUICE_USER, SLUICE_PASSWORD, SHOTS, CHROMIUM, MINE (comma-separated
// channel=team pairs the user sees), HIDDEN (a channel of a team the user is not in).
import { mkdirSync } from "node:fs";
import { join } from "node:path";

import { logIn, openBrowser } from "./browser.mjs";

const base = (process.env.SLUICE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const shots = process.env.SHOTS ?? "test-artifacts/teams";
const mine = Object.fromEntries((process.env.MINE ?? "").split(",").map((pair) => pair.split("=")));
const hidden = process.env.HIDDEN ?? "hidden";
mkdirSync(shots, { recursive: true });

const started = Date.now();
const step = (what) => console.log(`[teams ${((Date.now() - started) / 1000).toFixed(1)}s] ${what}`);
const check = (ok, what) => {
  if (!ok) throw new Error(`FAILED: ${what}`);
  step(`ok: ${what}`);
};

const { browser, page } = await openBrowser();
const pageErrors = [];
page.on("pageerror", (error) => pageErrors.push(String(error)));
const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
const rowNames = () =>
  page
    .locator('[data-testid^="channel-row-"]')
    .evaluateAll((rows) => rows.map((row) => row.getAttribute("data-testid").replace("channel-row-", "")).sort());

try {
  await logIn(page, base, process.env.SLUICE_USER ?? "", process.env.SLUICE_PASSWORD ?? "");
  const names = Object.keys(mine).sort();

  // -- the list: the user's teams' channels, each with its team --------------------------------
  await page.goto(`${base}/#/`);
  await page.getByTestId(`channel-row-${names[0]}`).waitFor();
  check(JSON.stringify(await rowNames()) === JSON.stringify(names), `the list holds ${names.join(", ")} only`);
  const count = (await page.getByTestId("channel-count").textContent()).trim();
  check(count === String(names.length), `the count says ${names.length}, not another team's channels too`);
  for (const name of names) {
    const team = (await page.getByTestId(`channel-row-${name}`).getByTestId("channel-team").textContent()).trim();
    check(team === mine[name], `${name} shows its team ${mine[name]}`);
  }
  check(!(await page.content()).includes(hidden), `the page never names ${hidden}`);
  if (process.env.QUOTAS) {
    // The header's use against quota: the test set them, the user's channels are the truth.
    const quotas = page.getByTestId("team-quotas");
    await quotas.waitFor();
    const said = (await quotas.textContent()).trim();
    check(said === process.env.QUOTAS, `the header says "${said}" (expected "${process.env.QUOTAS}")`);
  }
  await shot("channels-two-teams");

  // -- the team filter ---------------------------------------------------------------------------
  const filter = page.getByTestId("fleet-team");
  const offered = await filter.locator("option").allTextContents();
  const teams = [...new Set(Object.values(mine))].sort();
  check(
    JSON.stringify(offered) === JSON.stringify(["All teams", ...teams.map((t) => `Team: ${t}`)]),
    `the team filter offers all and ${teams.join(", ")}`,
  );
  await filter.selectOption(teams[0]);
  const kept = names.filter((name) => mine[name] === teams[0]);
  await page.waitForFunction(
    (expected) => document.querySelector('[data-testid="channel-count"]')?.textContent?.trim() === expected,
    String(kept.length),
  );
  check(JSON.stringify(await rowNames()) === JSON.stringify(kept), `team ${teams[0]} keeps ${kept.join(", ")}`);
  await shot("channels-one-team");

  // -- a channel's page: its controls follow the user's roles in its team ----------------------
  const first = names[0];
  await page.goto(`${base}/#/channels/${first}`);
  const start = page.getByRole("button", { name: "Start", exact: true });
  await start.waitFor();
  const title = await start.getAttribute("title");
  check(
    (await start.isDisabled()) && title.includes(`operator role in team ${mine[first]}`),
    `Start on ${first} is disabled, saying it needs the operator role in team ${mine[first]}`,
  );
  const header = (await page.getByTestId("channel-page-team").textContent()).trim();
  check(header === `team ${mine[first]}`, `${first}'s page names its team in the header (${header})`);
  await shot("channel-viewer-in-team");

  // -- another team's channel by its address -----------------------------------------------------
  await page.goto(`${base}/#/channels/${hidden}`);
  await page.getByTestId("channel-not-found").waitFor();
  check(true, `${hidden}, another team's channel, is the not-found page`);

  // -- the builder asks a new channel's team ----------------------------------------------------
  await page.goto(`${base}/#/build`);
  const choice = page.getByTestId("channel-team");
  await choice.waitFor();
  const choices = await choice.locator("option").allTextContents();
  check(
    JSON.stringify(choices) === JSON.stringify(["Choose the team…", ...teams]),
    `a new channel's team is one of ${teams.join(", ")}`,
  );
  await choice.selectOption(teams[1]);
  check((await choice.inputValue()) === teams[1], `${teams[1]} chosen`);
  await shot("builder-team");

  check(pageErrors.length === 0, `no page errors (${pageErrors.join("; ")})`);
  step("all checks passed");
} finally {
  await browser.close();
}
