#!/usr/bin/env node
// Signs in to the web pages of a live moraine-mcp through a real authorization server, in
// Debian's Chromium (playwright-core), with and without JavaScript.
//
//   OAUTH_INTROSPECTION_SECRET=… node web-oauth.mjs <base-url> <provider-port>
//
// The server (server.public_url = base-url) trusts the issuer http://127.0.0.1:<provider-port>
// with web.oauth_client_id = "moraine-web", and its rules give the team-a group (alice) read on
// source claude only. This starts that issuer (oidc-provider, oauth-provider.mjs) with the
// public client moraine-web, then: the sign-in page offers the issuer; alice signs in on its
// login and consent pages and comes back signed in, by name, to the page she asked for; she
// sees source claude only; a callback this browser did not start is refused; signing out ends
// it. Exits 1 at the first failed check, 2 on usage errors.

import { generateKeyPairSync } from 'node:crypto';
import { launchChromium } from './browser.mjs';
import { startProvider } from './oauth-provider.mjs';
import { CheckError, check, show } from './report.mjs';

const [base, portText] = process.argv.slice(2);
const port = Number(portText);
if (!base || !Number.isInteger(port)) {
  console.error('usage: web-oauth.mjs <base-url> <provider-port>');
  process.exit(2);
}

let step = 'start';
let label = 'web oauth';
let passed = 0;
function ok(detail) {
  passed += 1;
  console.log(`${label}: ${step}: ok${detail ? ` (${detail})` : ''}`);
}

async function run(browser, javaScript) {
  label = javaScript ? 'web oauth' : 'web oauth (no JavaScript)';
  const context = await browser.newContext({ javaScriptEnabled: javaScript });
  const page = await context.newPage();

  step = 'the sign-in page offers the issuer';
  await page.goto(`${base}/ui/sessions`);
  check(page.url().startsWith(`${base}/ui/signin`), `not sent to sign in: ${page.url()}`);
  const offer = page.getByRole('link', { name: /sign in with your account at/ });
  check((await offer.count()) === 1, 'no link to sign in at the issuer');
  ok(await offer.innerText());

  step = 'alice signs in at the issuer';
  await offer.click();
  await page.waitForLoadState();
  check(page.url().startsWith(`http://127.0.0.1:${port}/`), `not at the issuer: ${page.url()}`);
  await page.locator('input[name="login"]').fill('alice');
  await page.locator('input[name="password"]').fill('any-password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.waitForLoadState();
  const consent = page.getByRole('button', { name: 'Continue' });
  if (await consent.count()) {
    await consent.click();
  }
  await page.waitForURL(`${base}/ui/sessions`, { timeout: 20000 });
  const who = await page.locator('.who').innerText();
  check(who.includes('alice@example.com'), `signed in as ${show(who)}`);
  const cookie = (await context.cookies()).find((c) => c.name === 'moraine_signin');
  check(cookie && cookie.httpOnly && cookie.sameSite === 'Lax', `sign-in cookie ${show(cookie)}`);
  ok(`${who}, back on /ui/sessions`);

  step = 'rights from her groups';
  const listed = await page.locator('li.session .meta').allInnerTexts();
  check(listed.length > 0 && listed.every((m) => m.includes('source claude')), `other sources listed: ${show(listed)}`);
  await page.goto(`${base}/ui/sources`);
  const sources = await page.locator('tbody th').allInnerTexts();
  check(sources.length === 1 && sources[0] === 'claude', `sources shown: ${show(sources)}`);
  ok('source claude only');

  step = 'a callback this browser did not start';
  const forged = await page.goto(`${base}/ui/signin/callback?state=${'0'.repeat(64)}&code=stolen`);
  check(forged.status() === 400, `a forged callback answered ${forged.status()}`);
  ok();

  step = 'sign out';
  await page.goto(`${base}/ui/sources`);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForLoadState();
  await page.goto(`${base}/ui/sources`);
  check(page.url().startsWith(`${base}/ui/signin`), 'still signed in after signing out');
  ok();
  await context.close();
}

async function main() {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const key = { ...privateKey.export({ format: 'jwk' }), kid: `web-${Date.now()}` };
  const provider = await startProvider({
    port,
    resource: `${base}/mcp`,
    keys: [key],
    clients: [{
      client_id: 'moraine-web',
      token_endpoint_auth_method: 'none',
      redirect_uris: [`${base}/ui/signin/callback`],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    }],
  });
  const browser = await launchChromium();
  try {
    await run(browser, true);
    await run(browser, false);
  } finally {
    await browser.close();
    await provider.close();
  }
}

main().then(
  () => {
    console.log(`web oauth: all ${passed} checks passed`);
    process.exit(0);
  },
  (e) => {
    const detail = e instanceof CheckError ? e.message : `${e && e.name ? `${e.name}: ` : ''}${e && e.message ? e.message : show(e)}\n${e && e.stack ? e.stack : ''}`;
    console.error(`FAIL ${label}: ${step}: ${detail}`);
    process.exit(1);
  },
);
