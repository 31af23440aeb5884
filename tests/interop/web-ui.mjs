#!/usr/bin/env node
// Drives the web pages of a live moraine-mcp in Debian's Chromium (playwright-core).
//
//   node web-ui.mjs <base-url> <reader-token> <claude-reader-token> <screenshot-dir>
//
// The server holds the demo sessions, tests/web (a session whose prompts, tool output and
// answers carry <script>, onerror= and javascript: payloads) as source claude, and 60 sessions
// of source laptop-2 that say "bulkword". reader-token reads everything; claude-reader-token
// reads source claude only. Runs every step twice, with JavaScript on and off: sign in, a link
// from another site, search, open a hit and land on its turn, page through sessions, sources,
// the person limited to one source, the hostile session (no dialog, no script element, payloads shown as text), keyboard
// and labels, and a phone-sized screen. Screenshots of each page go to <screenshot-dir>.
// Exits 1 at the first failed check, 2 on usage errors.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium } from './browser.mjs';
import { CheckError, check, show } from './report.mjs';

const [base, readerToken, limitedToken, shots] = process.argv.slice(2);
if (!base || !readerToken || !limitedToken || !shots) {
  console.error('usage: web-ui.mjs <base-url> <reader-token> <claude-reader-token> <screenshot-dir>');
  process.exit(2);
}
mkdirSync(shots, { recursive: true });

let step = 'start';
let label = 'web';
let passed = 0;
function ok(detail) {
  passed += 1;
  console.log(`${label}: ${step}: ok${detail ? ` (${detail})` : ''}`);
}

// A browser context with JavaScript on or off; every dialog (an alert() that ran) fails.
async function open(browser, javaScript, viewport = { width: 1280, height: 900 }) {
  const context = await browser.newContext({ javaScriptEnabled: javaScript, viewport });
  const page = await context.newPage();
  page.dialogs = [];
  page.on('dialog', async (dialog) => {
    page.dialogs.push(dialog.message());
    await dialog.dismiss().catch(() => {});
  });
  page.on('pageerror', (e) => page.dialogs.push(`page error: ${e.message}`));
  return { context, page };
}

async function shot(page, name, suffix) {
  await page.screenshot({ path: join(shots, `${name}${suffix}.png`), fullPage: name !== 'phone' });
}

async function signIn(page, token, next = '/ui/') {
  await page.goto(`${base}${next}`);
  check(page.url().startsWith(`${base}/ui/signin`), `an unsigned visit was not sent to sign in: ${page.url()}`);
  await page.getByLabel('Access token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForLoadState();
  check(page.url() === `${base}${next}`, `signing in landed on ${page.url()}, not ${next}`);
}

async function texts(page, selector) {
  return page.locator(selector).allInnerTexts();
}

async function hrefs(page, selector) {
  return page.locator(selector).evaluateAll((links) => links.map((a) => a.getAttribute('href')));
}

async function run(browser, javaScript) {
  const suffix = javaScript ? '' : '-nojs';
  label = javaScript ? 'web' : 'web (no JavaScript)';

  step = 'sign in';
  const { context, page } = await open(browser, javaScript);
  await page.goto(`${base}/ui/signin`);
  await shot(page, 'signin', suffix);
  await page.getByLabel('Access token').fill('not-a-token-of-this-server');
  await page.getByRole('button', { name: 'Sign in' }).click();
  check((await page.locator('.notice').innerText()).includes('not accepted'), 'a wrong token was not refused');
  await signIn(page, readerToken);
  const cookies = await context.cookies();
  const signin = cookies.find((c) => c.name === 'moraine_signin');
  check(signin && signin.httpOnly && signin.sameSite === 'Lax', `sign-in cookie ${show(signin)}`);
  check(!cookies.some((c) => c.value.includes(readerToken)), 'a cookie holds the token');
  ok('HttpOnly, SameSite=Lax cookie; a wrong token refused');

  step = 'a link from another site';
  // A page of another site (answered by the browser itself) links to the sessions, as a chat
  // or a mail would: the sign-in goes with the navigation, so the page opens signed in.
  const otherSite = 'http://elsewhere.test/**';
  await page.route(otherSite, (route) =>
    route.fulfill({ contentType: 'text/html', body: `<a id="to" href="${base}/ui/sessions">sessions</a>` }));
  await page.goto('http://elsewhere.test/chat');
  await page.locator('#to').click();
  await page.waitForLoadState();
  await page.unroute(otherSite);
  check(page.url() === `${base}/ui/sessions`, `a link from another site landed on ${page.url()}`);
  check(await page.locator('.who').count() === 1, 'the page from a link elsewhere is not signed in');
  ok('opened signed in');
  await page.goto(`${base}/ui/`);

  step = 'search';
  await page.getByLabel('Words to find').fill('inkwell preview escapes');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.waitForLoadState();
  const groups = await page.locator('article.group').count();
  const marks = await texts(page, 'mark');
  check(groups >= 1, 'no hits grouped by session');
  check(marks.some((m) => m.toLowerCase() === 'inkwell'), `no marked query word: ${show(marks)}`);
  await shot(page, 'search', suffix);
  ok(`${groups} sessions, ${marks.length} marked words`);

  if (javaScript) {
    // The README's picture: the demo sessions, searched.
    await page.goto(`${base}/ui/?q=${encodeURIComponent('dockerfile cache')}`);
    check((await page.locator('article.group').count()) >= 2, 'the demo search found fewer than two sessions');
    await page.screenshot({ path: join(shots, 'search-demo.png') });
    await page.goBack();
  }

  step = 'open a hit and land on its turn';
  const hit = page.locator('a.hit').first();
  const href = await hit.getAttribute('href');
  await hit.click();
  await page.waitForLoadState();
  const anchor = decodeURIComponent(new URL(page.url()).hash.slice(1));
  check(anchor.startsWith('event:'), `the hit's link has no event anchor: ${page.url()}`);
  const target = page.locator(`[id="${anchor}"]`);
  check((await target.count()) === 1, `no element ${anchor} on the session page`);
  check(await target.isVisible(), `the hit's event ${anchor} is not shown`);
  const box = await target.boundingBox();
  check(box && box.y >= -5 && box.y < 900, `the page did not land on the hit (y=${box && box.y})`);
  const turn = await target.evaluate((e) => e.closest('section.turn')?.id);
  check(new URL(`${base}${href}`).searchParams.get('turn') === turn.replace('turn-', ''), `landed in ${turn}, not the hit's turn`);
  await shot(page, 'session', suffix);
  ok(`${anchor} in ${turn}`);

  step = 'hostile content stays inert';
  const scripts = await page.locator('script, img, svg, iframe').count();
  check(scripts === 0, `${scripts} script/img/svg/iframe elements on the page`);
  for (const summary of await page.locator('details.collapsed > summary').all()) await summary.click();
  const body = await page.locator('main').innerText();
  for (const payload of ["<script>alert('xss-prompt')</script>", "<img src=x onerror=alert('xss-answer')>",
    "[a link](javascript:alert('xss-link'))", "<img src=x onerror=alert('xss-output')>"]) {
    check(body.includes(payload), `${payload} is not shown as text`);
  }
  const jsLinks = await page.locator('a[href^="javascript:"]').count();
  check(jsLinks === 0, `${jsLinks} javascript: links`);
  check(page.dialogs.length === 0, `a script ran: ${show(page.dialogs)}`);
  ok('payloads shown as text; no dialog, no script element, no javascript: link');

  step = 'show more';
  const more = page.getByRole('link', { name: 'Show more' }).first();
  check((await more.count()) === 1, 'the long tool output has no "Show more"');
  await more.click();
  await page.waitForLoadState();
  check(/\/ui\/event\//.test(page.url()), `show more went to ${page.url()}`);
  const full = await page.locator('main').innerText();
  check(full.includes("<img src=x onerror=alert('xss-long-79')>"), 'the event page does not show the whole output as text');
  check(page.dialogs.length === 0, `a script ran on the event page: ${show(page.dialogs)}`);
  await shot(page, 'event', suffix);
  ok(page.url().replace(base, ''));

  step = 'page through sessions';
  await page.getByRole('link', { name: 'Sessions', exact: true }).click();
  await page.waitForLoadState();
  const days = await page.locator('section.day h2').count();
  const first = await hrefs(page, 'li.session > a');
  check(first.length === 50 && days >= 2, `first page: ${first.length} sessions in ${days} days`);
  await shot(page, 'sessions', suffix);
  await page.getByRole('link', { name: 'Older →' }).click();
  await page.waitForLoadState();
  const second = await hrefs(page, 'li.session > a');
  check(second.length > 0 && !second.some((s) => first.includes(s)), `the second page repeats the first: ${show(second)}`);
  await page.getByRole('link', { name: '← Newest' }).click();
  await page.waitForLoadState();
  check(JSON.stringify(await hrefs(page, 'li.session > a')) === JSON.stringify(first), 'back to the newest page differs');
  ok(`${first.length} + ${second.length} sessions, ${days} days on the first page`);

  step = 'sources';
  await page.getByRole('link', { name: 'Sources', exact: true }).click();
  await page.waitForLoadState();
  const sources = await texts(page, 'tbody th');
  for (const s of ['claude', 'codex', 'laptop-2']) check(sources.includes(s), `source ${s} missing: ${show(sources)}`);
  await shot(page, 'sources', suffix);
  ok(sources.join(', '));

  step = 'keyboard and labels';
  await page.goto(`${base}/ui/sources`);
  await page.keyboard.press('Tab');
  const focused = await page.evaluate(() => document.activeElement?.textContent);
  check(focused === 'Skip to content', `the first Tab reached ${show(focused)}`);
  await page.keyboard.press('Enter');
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input:not([type=hidden]), select')]
    .filter((e) => !e.labels || e.labels.length === 0).map((e) => e.name));
  check(unlabelled.length === 0, `inputs without a label: ${show(unlabelled)}`);
  check(await page.locator('nav[aria-label="Main"]').count() === 1, 'no labelled main navigation');
  ok('skip link first; every input labelled');

  step = 'sign out';
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForLoadState();
  check(page.url().startsWith(`${base}/ui/signin`), `signing out landed on ${page.url()}`);
  await page.goto(`${base}/ui/sources`);
  check(page.url().startsWith(`${base}/ui/signin`), 'the pages still open after signing out');
  ok();
  await context.close();

  step = 'a person limited to source claude';
  const limited = await open(browser, javaScript);
  await signIn(limited.page, limitedToken, '/ui/sessions');
  const listed = await texts(limited.page, 'li.session .meta');
  check(listed.length > 0 && listed.every((m) => m.includes('source claude')), `other sources listed: ${show(listed)}`);
  await limited.page.goto(`${base}/ui/?q=bulkword`);
  check((await limited.page.locator('#results-heading').innerText()) === 'No hits', 'another source\'s words were found');
  await limited.page.goto(`${base}/ui/sessions?source=laptop-2`);
  check((await limited.page.locator('li.session').count()) === 0, 'another source listed when asked for');
  await limited.page.goto(`${base}/ui/sources`);
  const own = await texts(limited.page, 'tbody th');
  check(own.length === 1 && own[0] === 'claude', `sources shown: ${show(own)}`);
  const elsewhere = await limited.page.goto(`${base}${secondSource}`);
  check(elsewhere.status() === 404, `another source's session answered ${elsewhere.status()}`);
  ok('lists, searches, sources and a session by URL keep to claude');
  await limited.context.close();

  if (javaScript) {
    step = 'phone-sized screen';
    const phone = await open(browser, true, { width: 390, height: 844 });
    await signIn(phone.page, readerToken, href.split('#')[0]);
    const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(overflow <= 1, `the session page is ${overflow}px wider than a phone`);
    await shot(phone.page, 'phone', '');
    ok('no sideways scrolling');
    await phone.context.close();
  }
}

// A laptop-2 session's page, found with the reader's token before the checks.
let secondSource = '';

async function main() {
  const browser = await launchChromium();
  try {
    step = 'find a session of another source';
    const { context, page } = await open(browser, false);
    await signIn(page, readerToken, '/ui/sessions?source=laptop-2');
    secondSource = await page.locator('li.session > a').first().getAttribute('href');
    check(secondSource && secondSource.startsWith('/ui/session/'), `no laptop-2 session: ${show(secondSource)}`);
    await context.close();
    await run(browser, true);
    await run(browser, false);
  } finally {
    await browser.close();
  }
}

main().then(
  () => {
    console.log(`web: all ${passed} checks passed; screenshots in ${shots}`);
    process.exit(0);
  },
  (e) => {
    const detail = e instanceof CheckError ? e.message : `${e && e.name ? `${e.name}: ` : ''}${e && e.message ? e.message : show(e)}\n${e && e.stack ? e.stack : ''}`;
    console.error(`FAIL ${label}: ${step}: ${detail}`);
    process.exit(1);
  },
);
