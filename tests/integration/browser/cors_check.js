// Headless Chromium reads the gateway's API from pages on other origins, so that CORS is judged
// by a real browser rather than by our reading of the Fetch standard.
//
// usage: node cors_check.js CHROMIUM GATEWAY_PORT ALLOWED_PAGE_PORT OTHER_PAGE_PORT WIDGET_ID
//
// Serves a blank page on 127.0.0.1:ALLOWED_PAGE_PORT (an origin the gateway allows) and on
// 127.0.0.1:OTHER_PAGE_PORT (one it does not), and from each page fetches the widget and
// reviews endpoints with a custom header, which makes the browser send a preflight first (the
// refused page also once without it). On the allowed page it also reads the exposed headers and
// refetches the widget with cache: 'no-cache', which makes Chromium revalidate its cached copy
// with If-None-Match.
//
// Prints exactly one line "CORS_RESULT {json}" and exits by itself (bounded by a watchdog), the
// browser and both page servers closed.

'use strict';

const http = require('http');
const { chromium } = require('playwright-core');

const RESULT_MARK = 'CORS_RESULT ';
const OVERALL_TIMEOUT_MS = 60000;
const FETCH_TIMEOUT_MS = 7000;  // six fetches stay well inside the overall bound

const [chromiumPath, gatewayPort, allowedPort, otherPort, widgetId] = process.argv.slice(2);

const check = require('./one_result')(RESULT_MARK, OVERALL_TIMEOUT_MS);
const report = (result) => check.report(result);
let browser;

function servePage(port) {
  const server = http.createServer((req, res) => {
    if (req.url === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><meta charset="utf-8"><title>widget page</title><p>widget page');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(port), '127.0.0.1', () => resolve(server));
  });
}

// Runs inside the page. Each fetch outcome is reported, never thrown: the caller judges them.
async function fetchInPage({ url, init, timeoutMs }) {
  const out = { ok: false };
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    out.ok = true;
    out.status = response.status;
    out.etag = response.headers.get('etag');
    out.age = response.headers.get('age');
    out.cacheStatus = response.headers.get('cache-status');
    const text = await response.text();
    out.bodyLength = text.length;
    try {
      const json = JSON.parse(text);
      out.json = true;
      out.jsonType = Array.isArray(json) ? 'array' : json === null ? 'null' : typeof json;
      if (Array.isArray(json)) out.length = json.length;
      else if (json && typeof json === 'object') out.id = json._id ?? null;
    } catch (e) {
      out.json = false;
    }
  } catch (e) {
    out.errorName = e.name;  // TypeError: refused by CORS (or network); TimeoutError: no answer
    out.error = String(e.message);
  }
  return out;
}

async function main() {
  const gateway = `http://127.0.0.1:${gatewayPort}`;
  const widgetUrl = `${gateway}/api/v1/widgets/widget/${widgetId}/remote`;
  const reviewsUrl = `${gateway}/api/v1/widgets/widget/${widgetId}/reviews/remote?limit=5&skip=0`;
  // Not a CORS-safelisted request header: the browser must preflight.
  const preflighted = { headers: { 'X-Requested-With': 'XMLHttpRequest' } };
  const run = (page, url, init) =>
    page.evaluate(fetchInPage, { url, init, timeoutMs: FETCH_TIMEOUT_MS });

  const servers = [];
  const result = {};
  try {
    servers.push(await servePage(allowedPort));
    servers.push(await servePage(otherPort));
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: ['--no-sandbox'],
      timeout: 30000,
    });
    check.browser = browser;
    result.browserVersion = browser.version();
    // One context for both pages: the refused page shares the HTTP cache that holds the
    // allowed page's answers, as for someone visiting both sites.
    const context = await browser.newContext();

    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${allowedPort}/`, { timeout: 15000 });
    result.allowed = {
      origin: await page.evaluate(() => location.origin),
      widget: await run(page, widgetUrl, preflighted),
      reviews: await run(page, reviewsUrl, preflighted),
      // The first answer is in the browser cache now; 'no-cache' makes Chromium ask the gateway
      // with If-None-Match and, on 304, hand the page the cached 200.
      revalidated: await run(page, widgetUrl, { ...preflighted, cache: 'no-cache' }),
    };

    const other = await context.newPage();
    await other.goto(`http://127.0.0.1:${otherPort}/`, { timeout: 15000 });
    result.other = {
      origin: await other.evaluate(() => location.origin),
      widget: await run(other, widgetUrl, preflighted),
      reviews: await run(other, reviewsUrl, preflighted),
      // No preflight: refused on the actual answer's missing Access-Control-Allow-Origin.
      // 'no-store' keeps the browser from revalidating the allowed page's cached copy, so the
      // only 304 the gateway logs for the widget is the allowed page's revalidation.
      simple: await run(other, widgetUrl, { cache: 'no-store' }),
    };
    await context.close();
  } catch (e) {
    result.error = String(e && e.stack ? e.stack : e);
  } finally {
    if (browser) await browser.close().catch(() => {});
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }
  report(result);
  check.done();
  return result.error ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    report({ error: String(e && e.stack ? e.stack : e) });
    process.exit(1);
  });
