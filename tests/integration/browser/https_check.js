// Headless Chromium on an HTTPS page calls the gateway directly over HTTPS, as a site's page
// would without any proxy in front: the protocol the browser negotiated (h2 expected) is read
// from Resource Timing, the JSON from the answers.
//
// usage: node https_check.js CHROMIUM GATEWAY_PORT PAGE_PORT CERT KEY WIDGET_ID
//
// The page is served over HTTPS with the same test certificate as the gateway. Chromium trusts
// that certificate's key only (--ignore-certificate-errors-spki-list), not every certificate.
// Prints exactly one line "HTTPS_RESULT {json}" and exits by itself (bounded by a watchdog).

'use strict';

const crypto = require('crypto');
const fs = require('fs');
const https = require('https');
const { chromium } = require('playwright-core');

const RESULT_MARK = 'HTTPS_RESULT ';
const OVERALL_TIMEOUT_MS = 60000;

const [chromiumPath, gatewayPort, pagePort, certFile, keyFile, widgetId] = process.argv.slice(2);

const check = require('./one_result')(RESULT_MARK, OVERALL_TIMEOUT_MS);
const report = (result) => check.report(result);
let browser;

// base64(sha256(SubjectPublicKeyInfo)), the form Chromium's SPKI list takes.
function spkiHash(pem) {
  const der = new crypto.X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
  return crypto.createHash('sha256').update(der).digest('base64');
}

// Runs inside the page.
async function callGateway({ base, widgetId }) {
  const out = {};
  const widget = await fetch(`${base}/api/v1/widgets/widget/${widgetId}/remote`,
                             { headers: { 'X-Requested-With': 'XMLHttpRequest' } });
  out.widgetStatus = widget.status;
  out.widgetId = (await widget.json())._id;
  const reviews = await fetch(`${base}/api/v1/widgets/widget/${widgetId}/reviews/remote?limit=3`);
  out.reviewsStatus = reviews.status;
  out.reviewsCount = (await reviews.json()).length;
  out.protocols = performance.getEntriesByType('resource')
                      .filter((e) => e.name.startsWith(base))
                      .map((e) => e.nextHopProtocol);
  return out;
}

async function main() {
  const cert = fs.readFileSync(certFile, 'utf8');
  const key = fs.readFileSync(keyFile, 'utf8');
  const server = https.createServer({ cert, key }, (req, res) => {
    res.writeHead(req.url === '/' ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><meta charset="utf-8"><title>shop</title><p>shop page');
  });
  await new Promise((resolve) => server.listen(Number(pagePort), '127.0.0.1', resolve));
  try {
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: ['--no-sandbox', `--ignore-certificate-errors-spki-list=${spkiHash(cert)}`],
    });
    check.browser = browser;
    const page = await browser.newPage();
    await page.goto(`https://127.0.0.1:${pagePort}/`);
    const result = await page.evaluate(callGateway,
                                       { base: `https://127.0.0.1:${gatewayPort}`, widgetId });
    result.pageProtocol = await page.evaluate(() => location.protocol);
    report(result);
  } catch (e) {
    report({ error: String(e && e.message ? e.message : e) });
  } finally {
    if (browser) await browser.close();
    server.close();
    check.done();
  }
}

main();
