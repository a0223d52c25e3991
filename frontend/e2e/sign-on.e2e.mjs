// Single sign-on in headless Chromium against a real Keycloak (tests/e2e/test_sign_on_console.py),
// for a console at SLUICE_URL whose provider is ISSUER, named PROVIDER on the login page:
// * the login page's "Sign in with <PROVIDER>" leads to the provider's own sign-in page;
// * signing in there as SSO_USER (SSO_PASSWORD) lands in the console as that user (its header,
//   /api/v1/me/);
// * logging out ends the provider's session too: back on the login page, the button leads to
//   the provider's sign-in form again, not straight back in.
// Screenshots into SHOTS. Prints FAIL lines (the caller fails on them).
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

const { browser, page } = await openBrowser();
try {
  await page.goto(`${base}/`);
  await page.waitForURL((url) => url.pathname === "/login/");
  await page.screenshot({ path: `${out}/sign-on-login.png` });
  await page.getByRole("link", { name: `Sign in with ${provider}` }).click();
  await page.waitForURL(atProvider);
  await page.locator("#username").waitFor();
  await page.screenshot({ path: `${out}/sign-on-provider.png` });
  console.log(`[e2e] the button led to ${new URL(page.url()).origin}${new URL(page.url()).pathname}`);

  await page.locator("#username").fill(user);
  await page.locator("#password").fill(password);
  await page.locator("#kc-login").click();
  await page.waitForURL((url) => url.href.startsWith(`${base}/`) && url.pathname === "/");
  await page.locator("form.logout").getByText(user, { exact: true }).waitFor();
  const me = await page.evaluate(async () => (await fetch("/api/v1/me/")).json());
  console.log(`[e2e] back in the console as ${me.username} (roles: ${JSON.stringify(me.roles)})`);
  if (me.username !== user) fail(`signed in as ${me.username}, not ${user}`);
  await page.screenshot({ path: `${out}/sign-on-console.png` });

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
} catch (error) {
  fail(String(error));
  await page.screenshot({ path: `${out}/sign-on-failure.png` }).catch(() => {});
} finally {
  await browser.close();
}
