// What every browser check shares: it prints exactly one result line ("MARK {json}"), and a
// watchdog ends it, browser included, when no result came in time: a hung browser or server
// must not hold the test until ctest's timeout. Chromium also quits by itself once node is
// gone (its DevTools pipe closes); closing it first is only tidier.
//
//   const check = require('./one_result')('CORS_RESULT ', 60000);
//   check.browser = await chromium.launch(...);  // closed by the watchdog if it fires
//   check.report({...});                         // later calls print nothing
//   check.done();                                // stops the watchdog

'use strict';

module.exports = function oneResult(mark, timeoutMs) {
  let printed = false;
  const check = {
    browser: undefined,
    report(result) {
      if (printed) return;
      printed = true;
      process.stdout.write(mark + JSON.stringify(result) + '\n');
    },
    done() {
      clearTimeout(watchdog);
    },
  };
  const watchdog = setTimeout(() => {
    check.report({ error: `no result within ${timeoutMs} ms` });
    setTimeout(() => process.exit(3), 5000).unref();
    (check.browser ? check.browser.close() : Promise.resolve()).finally(() => process.exit(3));
  }, timeoutMs);
  return check;
};
