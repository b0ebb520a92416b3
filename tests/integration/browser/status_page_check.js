// The status page as an operator's browser shows it: headless Chromium opens GET /admin/ui on
// the admin listener and goes through what an operator does.
//
// usage: node status_page_check.js CHROMIUM ADMIN_PORT TOKEN WIDGET_ID SCREENSHOT
//
// 1. loads the page (console errors and CSP violations are collected from here on);
// 2. a wrong token: the refusal shows and no data does;
// 3. the right token: the data shows (read back as the page renders it); the screenshot is
//    taken here, at a laptop's width;
// 4. purges WIDGET_ID through the confirmation step, hard (chosen explicitly: soft is the
//    page's default) then soft, and an id made of HTML markup, which must come back as text;
// 5. a phone's width: nothing wider than the screen.
// Every request the page sends is recorded: the token must never be in a URL.
//
// Prints exactly one line "STATUS_PAGE_RESULT {json}" and exits by itself (bounded by a
// watchdog).

'use strict';

const { chromium } = require('playwright-core');

const RESULT_MARK = 'STATUS_PAGE_RESULT ';
const OVERALL_TIMEOUT_MS = 60000;
const STEP_TIMEOUT_MS = 10000;

const [chromiumPath, adminPort, token, widgetId, screenshot] = process.argv.slice(2);

const check = require('./one_result')(RESULT_MARK, OVERALL_TIMEOUT_MS);
const report = (result) => check.report(result);
let browser;

const visible = (page, selector) =>
  page.waitForSelector(selector, { state: 'visible', timeout: STEP_TIMEOUT_MS });

async function main() {
  const result = { consoleErrors: [], requests: [] };
  const base = `http://127.0.0.1:${adminPort}`;
  try {
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true,
                                      args: ['--no-sandbox'] });
    check.browser = browser;
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const page = await context.newPage();
    // Errors the page itself causes (script errors, CSP refusals); a refused token's 401 is
    // logged by Chromium as a failed resource, which is the expected answer, so those lines
    // are counted apart.
    result.refusedLoads = 0;
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      if (/status of 401/.test(m.text())) result.refusedLoads++;
      else result.consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => result.consoleErrors.push('pageerror: ' + e.message));
    page.on('request', (r) => result.requests.push(r.method() + ' ' + r.url()));

    // 1. Load: the token form, no data, no request for data yet.
    const answer = await page.goto(`${base}/admin/ui`);
    result.pageStatus = answer.status();
    await visible(page, '#login');
    result.boardHiddenAtLoad = await page.locator('#board').isHidden();

    // 2. A wrong token: refused, nothing shown.
    await page.fill('#token', token + 'x');
    await page.click('#save-token');
    await visible(page, '#refused');
    result.boardHiddenAfterWrongToken = await page.locator('#board').isHidden();
    result.storedAfterWrongToken = await page.evaluate(() => Object.keys(sessionStorage).length);

    // 3. The right token: the data.
    await page.fill('#token', token);
    await page.press('#token', 'Enter');
    await visible(page, '#board');
    await page.waitForSelector('#top tr', { timeout: STEP_TIMEOUT_MS });
    result.refusedHiddenWithData = await page.locator('#login').isHidden();
    result.shown = await page.evaluate(() => ({
      quota: document.getElementById('quota-summary').textContent,
      hitRatio: document.getElementById('hit-ratio').textContent,
      rps: document.getElementById('rps').textContent,
      today: document.getElementById('today').textContent,
      redis: document.getElementById('redis-state').textContent,
      circuit: document.getElementById('circuit').textContent,
      workers: document.querySelectorAll('#workers tr').length,
      topIds: [...document.querySelectorAll('#top td.id')].map((td) => td.textContent),
      chartLines: document.querySelectorAll('#burn polyline, #burn line.projection').length,
      oldestAge: document.getElementById('oldest-age').textContent,
    }));
    result.tokenInStorage = await page.evaluate((t) => Object.values(sessionStorage).includes(t),
                                                token);
    await page.screenshot({ path: screenshot, fullPage: true });

    // 4. Purge through the confirmation: hard (removed), then soft (made stale).
    await page.fill('#purge-id', widgetId);
    await page.check('#purge-hard');
    await page.click('#purge');
    await visible(page, '#confirm');
    result.confirmNames = await page.textContent('#confirm-id');
    await page.click('#confirm-yes');
    await page.waitForFunction(() => /^Purged /.test(document.getElementById('purge-result').textContent),
                               null, { timeout: STEP_TIMEOUT_MS });
    result.purgeResult = await page.textContent('#purge-result');

    await page.fill('#purge-id', widgetId);
    await page.check('#purge-soft');
    await page.click('#purge');
    await visible(page, '#confirm');
    await page.click('#confirm-yes');
    await page.waitForFunction(
        () => /^Soft-purged /.test(document.getElementById('purge-result').textContent),
        null, { timeout: STEP_TIMEOUT_MS });
    result.softPurgeResult = await page.textContent('#purge-result');

    const markup = '<img src=x id=injected>';
    await page.fill('#purge-id', markup);
    await page.click('#purge');
    await visible(page, '#confirm');
    await page.click('#confirm-yes');
    await page.waitForFunction((m) => document.getElementById('purge-result').textContent.includes(m),
                               markup, { timeout: STEP_TIMEOUT_MS });
    result.markupRenderedAsText = await page.evaluate(() => document.getElementById('injected') === null);

    // 5. A phone.
    await page.setViewportSize({ width: 390, height: 844 });
    result.phoneOverflow = await page.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth);

    result.tokenInAnyUrl = result.requests.some((r) => r.includes(token));
    result.pageUrl = page.url();
    report(result);
  } catch (e) {
    result.error = String(e && e.message ? e.message : e);
    report(result);
  } finally {
    if (browser) await browser.close();
    check.done();
  }
}

main();
