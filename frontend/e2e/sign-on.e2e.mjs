// Single sign-on in headless Chromium against a real Keycloak (tests/e2e/test_sign_on_console.py),
// for a console at SLUICE_URL whose provider is ISSUER, named PROVIDER on the login page:
// * the login page's "Sign in with <PROVIDER>" leads to the provider's own sign-in page;
// * signing in there as SSO_USER (SSO_PASSWORD) lands in the console as that user (its header,
//   /api/v1/me/);
// * logging out ends the provider's session too: back on the login page, the button leads to
//   the provider's sign-in form again, not straight back in.
// * with EXPECT_TEAMS (JSON: {"team": ["role", ...]}), /api/v1/me/ lists exactly those teams and
//   roles: what the site's sign-in rules made of the provider's groups at this login;
// * with GONE (a channel's name), that channel is not found (404) for the user, in the API and
//   on its page.
// ONCE=1 signs in only (no logout). Screenshots into SHOTS, under the PHASE prefix (default
// "sign-on"). Prints FAIL lines (the caller fails on them).
import { openBrowser } from "./browser.mjs";

const base = (process.env.SLUICE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const out = process.env.SHOTS ?? "../test-artifacts/e2e";
const issuer = process.env.ISSUER ?? "";
const provider = process.env.PROVIDER ?? "Keycloak";
const user = process.env.SSO_USER ?? "";
const password = process.env.SSO_PASSWORD ?? "";
const fail = (message) => {
  console.log(`[e2e] FAIL: ${message}`);
  process.exitCode = 1;
};
const atProvider = (url) => url.href.startsWith(`${issuer}/`);
const expectTeams = process.env.EXPECT_TEAMS ? JSON.parse(process.env.EXPECT_TEAMS) : null;
const gone = process.env.GONE ?? "";
const once = process.env.ONCE === "1";
const phase = process.env.PHASE ?? "sign-on";
// {team: roles} as one comparable string: teams and roles in order.
const canon = (pairs) => JSON.stringify(Object.fromEntries(pairs.map(([t, r]) => [t, [...r].sort()]).sort()));

const { browser, page } = await openBrowser();
try {
  await page.goto(`${base}/`);
  await page.waitForURL((url) => url.pathname === "/login/");
  await page.screenshot({ path: `${out}/${phase}-login.png` });
  await page.getByRole("link", { name: `Sign in with ${provider}` }).click();
  await page.waitForURL(atProvider);
  await page.locator("#username").waitFor();
  await page.screenshot({ path: `${out}/${phase}-provider.png` });
  console.log(`[e2e] the button led to ${new URL(page.url()).origin}${new URL(page.url()).pathname}`);

  await page.locator("#username").fill(user);
  await page.locator("#password").fill(password);
  await page.locator("#kc-login").click();
  await page.waitForURL((url) => url.href.startsWith(`${base}/`) && url.pathname === "/");
  await page.locator("form.logout").getByText(user, { exact: true }).waitFor();
  const me = await page.evaluate(async () => (await fetch("/api/v1/me/")).json());
  console.log(`[e2e] back in the console as ${me.username} (roles: ${JSON.stringify(me.roles)})`);
  if (me.username !== user) fail(`signed in as ${me.username}, not ${user}`);
  if (expectTeams) {
    const want = canon(Object.entries(expectTeams));
    const got = canon(me.teams.map((t) => [t.name, t.roles]));
    console.log(`[e2e] ${me.username}'s teams and roles: ${got}`);
    if (got !== want) fail(`teams and roles ${got}, expected ${want}`);
  }
  if (gone) {
    const answer = await page.evaluate(async (name) => (await fetch(`/api/v1/channels/${name}/`)).status, gone);
    if (answer !== 404) fail(`GET /api/v1/channels/${gone}/ answered ${answer}, not 404`);
    await page.goto(`${base}/#/channels/${gone}`);
    await page.getByTestId("channel-not-found").waitFor();
    console.log(`[e2e] ${gone} is not found for ${me.username} (API 404, the not-found page)`);
    await page.goto(`${base}/#/`);
    await page.locator("form.logout").getByText(user, { exact: true }).waitFor();
  }
  await page.screenshot({ path: `${out}/${phase}-console.png` });

  if (!once) {
    await page.getByRole("button", { name: "Log out" }).click();
    await page.waitForURL((url) => url.pathname === "/login/" || atProvider(url));
    if (atProvider(new URL(page.url()))) {
      fail(`logging out stopped at the provider (${page.url()}) instead of coming back`);
    }
    await page.waitForURL((url) => url.href.startsWith(`${base}/login/`));
    console.log("[e2e] logged out, back on the console's login page");

    await page.getByRole("link", { name: `Sign in with ${provider}` }).click();
    await page.waitForURL((url) => atProvider(url) || url.pathname === "/");
    if (new URL(page.url()).pathname === "/") {
      fail("after logging out, the provider signed the user straight back in");
    } else {
      await page.locator("#username").waitFor();
      console.log("[e2e] the provider's session ended with the console's: it asks again");
    }
  }
} catch (error) {
  fail(String(error));
  await page.screenshot({ path: `${out}/${phase}-failure.png` }).catch(() => {});
} finally {
  await browser.close();
}
