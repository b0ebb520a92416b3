'use strict';
// Judges responses captured from a real gateway with a real client-side HTTP cache library
// (http-cache-semantics), so that the integration tests see the gateway's headers the way a CDN
// or a browser cache does, not the way the gateway's own code thinks of them.
//
// Usage: node check.js CASES.json
// CASES.json is a list of
//   { "name": "...",
//     "request":  { "method": "GET", "url": "/...", "headers": { "accept-encoding": "gzip" } },
//     "response": { "status": 200, "headers": { "cache-control": "...", ... } },
//     "probes": [ { "method": "GET", "url": "/...", "headers": {...} } ],          (optional)
//     "revalidation": { "request": {...}, "response": { "status": 304, ... } } }  (optional)
// Header names must be lower-case (as the library expects). Prints one JSON list with, per case:
//   storable, ttl_ms (timeToLive(): freshness plus the stale-* allowances), fresh_s (maxAge() -
//   age(): the freshness left, in seconds), private_storable / private_ttl_ms (the same for a
//   browser's private cache), revalidation_headers (what the cache would send to revalidate),
//   probes (satisfiesWithoutRevalidation for each probe request), and for a revalidation:
//   matches, modified, storable, ttl_ms and fresh_s of the updated policy.

const fs = require('fs');
const CachePolicy = require('http-cache-semantics');

function judge(policy) {
  return {
    storable: policy.storable(),
    ttl_ms: policy.timeToLive(),
    fresh_s: policy.maxAge() - policy.age(),
  };
}

function main() {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: node check.js CASES.json\n');
    process.exit(2);
  }
  const cases = JSON.parse(fs.readFileSync(file, 'utf8'));
  const results = cases.map((c) => {
    const shared = new CachePolicy(c.request, c.response, { shared: true });
    const browser = new CachePolicy(c.request, c.response, { shared: false });
    const out = Object.assign({ name: c.name }, judge(shared));
    out.private_storable = browser.storable();
    out.private_ttl_ms = browser.timeToLive();
    out.revalidation_headers = shared.revalidationHeaders(c.request);
    out.probes = (c.probes || []).map((p) => shared.satisfiesWithoutRevalidation(p));
    if (c.revalidation) {
      const r = shared.revalidatedPolicy(c.revalidation.request, c.revalidation.response);
      out.revalidation = Object.assign({ matches: !!r.matches, modified: !!r.modified },
                                       judge(r.policy));
    }
    return out;
  });
  process.stdout.write(JSON.stringify(results) + '\n');
}

main();
