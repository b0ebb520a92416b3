'use strict';
// The status page: reads /admin/status, /admin/quota (the month-end projection is its) and
// /admin/top-widgets with the admin token as a bearer header, refreshes every 5 s, and purges one
// widget (soft: made stale and refreshed while served; or hard: removed) after a confirmation.
// The token lives in this tab's sessionStorage only. Every value from the gateway is written as
// text (textContent), never parsed as HTML.
(() => {
  const TOKEN_KEY = 'widget-gateway-admin-token';
  const REFRESH_MS = 5000;
  const SVG = 'http://www.w3.org/2000/svg';
  const $ = (id) => document.getElementById(id);
  let timer = null;

  class Refused extends Error {}

  const token = () => sessionStorage.getItem(TOKEN_KEY);
  const fmt = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en'));
  const pct = (r) => (r === null || r === undefined ? '–' : (100 * r).toFixed(1) + ' %');
  // Copies older than this are past the daily refresh and its slack: shown as bad.
  const OLD_COPY_S = 26 * 3600;

  // "42 s", "5 min 3 s", "3 h 12 min", "1 d 0 h 0 min".
  function duration(seconds) {
    if (seconds === null || seconds === undefined) return '–';
    if (!Number.isFinite(Number(seconds))) return '–';
    const s = Math.max(0, Math.round(Number(seconds)));
    const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600);
    const m = Math.floor((s % 3600) / 60), r = s % 60;
    if (d > 0) return d + ' d ' + h + ' h ' + m + ' min';
    if (h > 0) return h + ' h ' + m + ' min';
    if (m > 0) return m + ' min ' + r + ' s';
    return r + ' s';
  }

  // The gateway's UTC times ("2026-12-01T15:00:00.000Z") as "2026-12-01 15:00:00 UTC".
  const utc = (text) =>
    (typeof text === 'string' && text ? text.slice(0, 19).replace('T', ' ') + ' UTC' : '–');

  async function call(path, method = 'GET') {
    const response = await fetch(path, {
      method,
      headers: { Authorization: 'Bearer ' + token() },
      cache: 'no-store',
      credentials: 'omit',
    });
    if (response.status === 401) throw new Refused();
    const body = await response.json();
    if (!response.ok) throw new Error((body.error && body.error.message) || response.status);
    return body;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function cell(row, text, className) {
    const td = document.createElement('td');
    td.textContent = text;
    if (className) td.className = className;
    row.appendChild(td);
    return td;
  }

  function badge(id, word) {
    const node = $(id);
    node.textContent = word.replace('_', '-');
    node.className = 'badge ' + word;
  }

  function svg(parent, name, attributes, text) {
    const node = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    parent.appendChild(node);
    return node;
  }

  // What is left of the month's quota over the month (used when the quota is unlimited), and a
  // dashed line from now to the reset at the current burn rate.
  function drawBurnDown(quota, projected) {
    const chart = $('burn');
    clear(chart);
    const W = 640, H = 240, L = 56, R = 12, T = 12, B = 28;
    const t0 = Date.parse(quota.month_starts_at), t1 = Date.parse(quota.resets_at);
    const limited = quota.limit > 0;
    const value = (used) => (limited ? quota.limit - used : used);
    const points = quota.history.map(([at, used]) => [Date.parse(at), value(used)]);
    const end = value(projected);
    const values = points.map((p) => p[1]).concat([end, 0, limited ? quota.limit : 1]);
    const top = Math.max(...values), bottom = Math.min(...values);
    const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
    const y = (v) => T + ((top - v) / (top - bottom || 1)) * (H - T - B);
    svg(chart, 'line', { class: 'axis', x1: L, y1: T, x2: L, y2: H - B });
    svg(chart, 'line', { class: bottom < 0 ? 'zero' : 'axis', x1: L, y1: y(0), x2: W - R, y2: y(0) });
    svg(chart, 'text', { class: 'label', x: L - 6, y: y(top) + 4, 'text-anchor': 'end' }, fmt(top));
    svg(chart, 'text', { class: 'label', x: L - 6, y: y(0) + 4, 'text-anchor': 'end' }, '0');
    svg(chart, 'text', { class: 'label', x: L, y: H - 8 }, quota.month_starts_at.slice(0, 10));
    svg(chart, 'text', { class: 'label', x: W - R, y: H - 8, 'text-anchor': 'end' },
        'reset ' + quota.resets_at.slice(0, 16).replace('T', ' '));
    if (points.length > 0) {
      const line = points.map(([t, v]) => x(t).toFixed(1) + ',' + y(v).toFixed(1)).join(' ');
      svg(chart, 'polyline', { class: 'used', points: line });
      const [tn, vn] = points[points.length - 1];
      svg(chart, 'line', { class: 'projection', x1: x(tn), y1: y(vn), x2: x(t1), y2: y(end) });
    }
  }

  function showStatus(s, projected) {
    const q = s.quota;
    const share = q.limit > 0 ? ' of ' + fmt(q.limit) + ' (' + pct(q.used / q.limit) + ')' : ' (no limit)';
    $('quota-summary').textContent = 'Used ' + fmt(q.used) + share + ' · projected ' +
        fmt(projected) + ' at the reset on ' + q.resets_at + ' · mode ';
    const mode = document.createElement('span');
    mode.id = 'quota-mode';
    mode.textContent = q.mode;
    mode.className = 'badge ' + q.mode;
    $('quota-summary').appendChild(mode);
    drawBurnDown(q, projected);

    $('hit-ratio').textContent = pct(s.traffic.hit_ratio);
    $('rps').textContent = s.traffic.requests_per_second === null ? '–'
        : s.traffic.requests_per_second.toFixed(1);
    $('hit-ratio-start').textContent = pct(s.traffic.hit_ratio_since_start);
    showFreshness(s);

    const today = s.upstream_today;
    if (today) {
      $('today').textContent = fmt(today.calls) + (today.bound === null ? ' (no daily bound: unlimited quota)'
          : ' of ' + fmt(today.bound) + ' (the day\'s even share of what is left)');
      $('today-meter').max = Math.max(1, today.bound || today.calls);
      $('today-meter').value = today.calls;
    }

    badge('redis-state', s.redis.state);
    $('redis-mode').textContent = s.redis.mode +
        (s.redis.sentinel_master ? ' (' + s.redis.sentinel_master + ')' : '');
    $('redis-nodes').textContent = s.redis.nodes.join(', ');
    badge('circuit', s.circuit);

    const rows = $('workers');
    clear(rows);
    for (const w of s.workers) {
      const row = document.createElement('tr');
      cell(row, String(w.worker));
      cell(row, fmt(w.requests));
      cell(row, fmt(w.connections));
      cell(row, fmt(w.l1_entries));
      cell(row, w.redis, w.redis === 'up' ? 'good' : 'bad');
      rows.appendChild(row);
    }
  }

  // The last prefetch after the daily refresh this instance led (docs/prefetch.md).
  function showPrefetch(p) {
    const last = p && p.last;
    if (!last) {
      $('prefetch-last').textContent = p && p.leading ? 'under way' : 'none led here';
      $('prefetch-unchanged').textContent = '–';
      $('prefetch-unchanged').className = '';
      return;
    }
    const r = last.results || {};
    const fetched = (r.fetched || 0) + (r.unchanged || 0);
    let text = utc(last.boundary) + ': ' + fmt(fetched) + ' of ' + fmt(last.keys) + ' keys fetched, ' +
        fmt(last.upstream_requests) + ' upstream requests' +
        (last.budget === null ? '' : ' (budget ' + fmt(last.budget) + ')') +
        ', ' + fmt(r.stored) + ' already stored, ' + fmt(r.budget) + ' skipped for the budget';
    if (!last.finished) text += ', stopped: ' + (last.paused || 'unfinished');
    if (last.previous_wasted !== null && last.previous_fetched > 0) {
      text += '; the day before: ' + fmt(last.previous_wasted) + ' of ' +
          fmt(last.previous_fetched) + ' never asked for';
    }
    if (p.leading) text += ' (another under way)';
    $('prefetch-last').textContent = text;
    const share = last.unchanged_share, base = last.baseline_unchanged_share;
    if (share === null) {
      $('prefetch-unchanged').textContent = '–';
      $('prefetch-unchanged').className = '';
    } else {
      $('prefetch-unchanged').textContent = pct(share) +
          (base === null ? ' (no baseline yet)' :
              ' (usually ' + pct(base) + ', over ' + fmt(last.baseline_days) + ' days)');
      $('prefetch-unchanged').className =
          base !== null && last.baseline_days >= 3 && share > base + 0.3 ? 'bad' : '';
    }
  }

  function showFreshness(s) {
    const a = s.answers, f = s.freshness;
    if (!a || !f) return;  // a gateway from before these fields
    const stale = a.stale || {};
    const staleTotal = stale.total || 0;
    const answered = (a.fresh || 0) + staleTotal + (a.unconfirmed || 0) + (a.empty_on_error || 0) +
        (a.miss || 0);
    $('answers-fresh').textContent = fmt(a.fresh) +
        (answered > 0 ? ' (' + pct(a.fresh / answered) + ' of answers)' : '');
    $('answers-stale').textContent = fmt(staleTotal) +
        (answered > 0 ? ' (' + pct(staleTotal / answered) + ' of answers)' : '');
    const reasons = Object.entries(stale).filter(([reason, n]) => reason !== 'total' && n > 0)
        .map(([reason, n]) => reason + ' ' + fmt(n));
    $('stale-reasons').textContent = reasons.length > 0 ? reasons.join(' · ') : 'none';
    $('answers-unconfirmed').textContent = fmt(a.unconfirmed);
    $('answers-empty').textContent = fmt(a.empty_on_error);
    $('answers-miss').textContent = fmt(a.miss);

    const age = f.oldest_served_age_s;
    $('oldest-age').textContent = duration(age);
    $('oldest-age').className = age > OLD_COPY_S ? 'bad' : '';

    const next = Date.parse(f.next_refresh);
    if (!f.next_refresh || !(next > 0)) {
      $('next-refresh').textContent = '–';  // no daily refresh known (the epoch)
    } else {
      const now = Date.parse(s.now);
      const wait = next - (Number.isFinite(now) ? now : Date.now());
      $('next-refresh').textContent = utc(f.next_refresh) +
          (wait >= 0 ? ' (in ' + duration(wait / 1000) + ')' : '');
    }
    $('held-back').textContent = fmt(f.held_back);
    showPrefetch(f.prefetch);

    // One column per kind (stale, early), one row per result.
    const kinds = Object.entries(f.refreshes || {});
    const head = $('refresh-kinds');
    clear(head);
    for (const title of ['result'].concat(kinds.map(([kind]) => kind))) {
      head.appendChild(document.createElement('th')).textContent = title;
    }
    const refreshes = $('refreshes');
    clear(refreshes);
    for (const result of ['stored', 'unchanged', 'unconfirmed', 'adopted', 'failed']) {
      const row = document.createElement('tr');
      cell(row, result);
      for (const [, counts] of kinds) {
        const n = counts[result];
        cell(row, fmt(n), result === 'failed' && n > 0 ? 'bad' : undefined);
      }
      refreshes.appendChild(row);
    }

    const pending = f.unconfirmed || { total: 0, keys: [] };
    const keys = pending.keys || [];
    const rows = $('pending');
    clear(rows);
    for (const k of keys) {
      const row = document.createElement('tr');
      cell(row, k.key, 'id');
      cell(row, utc(k.since));
      cell(row, utc(k.confirm_at));
      rows.appendChild(row);
    }
    $('pending-total').textContent = pending.total > keys.length
        ? '(' + fmt(keys.length) + ' of ' + fmt(pending.total) + ' listed)'
        : '(' + fmt(pending.total) + ')';
    $('pending-table').hidden = keys.length === 0;
    $('pending-none').hidden = keys.length > 0;
  }

  function showTop(top) {
    $('top-since').textContent = 'Since ' + top.since + ' (this instance)';
    const rows = $('top');
    clear(rows);
    for (const w of top.widgets) {
      const row = document.createElement('tr');
      cell(row, w.id, 'id');
      cell(row, fmt(w.upstream_calls) + (w.error > 0 ? ' (±' + fmt(w.error) + ')' : ''));
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = 'Purge…';
      button.addEventListener('click', () => askPurge(w.id));
      row.appendChild(document.createElement('td')).appendChild(button);
      rows.appendChild(row);
    }
  }

  function showLogin(refused) {
    if (timer) clearTimeout(timer);
    timer = null;
    $('board').hidden = true;
    $('forget').hidden = true;
    $('login').hidden = false;
    $('refused').hidden = !refused;
  }

  async function refresh() {
    if (timer) clearTimeout(timer);
    timer = null;
    if (!token()) {
      showLogin(false);
      return;
    }
    try {
      const [status, quota, top] = await Promise.all(
          [call('/admin/status'), call('/admin/quota'), call('/admin/top-widgets?n=10')]);
      showStatus(status, quota.projected_month_end);
      showTop(top);
      $('login').hidden = true;
      $('board').hidden = false;
      $('forget').hidden = false;
      $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
    } catch (e) {
      if (e instanceof Refused) {
        sessionStorage.removeItem(TOKEN_KEY);
        showLogin(true);
        return;
      }
      $('updated').textContent = 'update failed: ' + e.message;
    }
    timer = setTimeout(refresh, REFRESH_MS);
  }

  const softChosen = () => $('purge-soft').checked;

  // The confirmation says which purge the button does (the choice can change while it shows).
  function describePurge() {
    if (softChosen()) {
      $('confirm-kind').textContent = 'Soft-purge';
      $('confirm-effect').textContent = 'Its copies become stale at once and are still served ' +
          'while one refresh per key replaces them (no visitor waits).';
      $('confirm-yes').textContent = 'Soft-purge it';
    } else {
      $('confirm-kind').textContent = 'Hard-purge (remove)';
      $('confirm-effect').textContent =
          'Its copies are removed: its next requests wait for upstream.';
      $('confirm-yes').textContent = 'Purge it';
    }
  }

  function askPurge(id) {
    $('purge-id').value = id;
    const wanted = $('purge-id').value.trim();
    if (!wanted) return;
    $('confirm-id').textContent = wanted;
    describePurge();
    $('confirm').hidden = false;
    $('purge-result').textContent = '';
  }

  async function purge() {
    const id = $('confirm-id').textContent;
    const soft = softChosen();
    $('confirm').hidden = true;
    try {
      const answer = await call(
          '/admin/purge?widget=' + encodeURIComponent(id) + (soft ? '&soft=1' : ''), 'POST');
      // What the gateway says it did ("soft": true only for a soft purge).
      $('purge-result').textContent =
          (answer.soft === true ? 'Soft-purged ' : 'Purged ') + answer.purged + '.';
      $('purge-result').className = 'good';
    } catch (e) {
      if (e instanceof Refused) {
        sessionStorage.removeItem(TOKEN_KEY);
        showLogin(true);
        return;
      }
      $('purge-result').textContent =
          (soft ? 'Soft purge failed: ' : 'Purge failed: ') + e.message;
      $('purge-result').className = 'bad';
    }
    refresh();
  }

  function saveToken() {
    const typed = $('token').value.trim();
    $('token').value = '';
    if (!typed) return;
    sessionStorage.setItem(TOKEN_KEY, typed);
    refresh();
  }

  $('save-token').addEventListener('click', saveToken);
  $('token').addEventListener('keydown', (e) => { if (e.key === 'Enter') saveToken(); });
  $('forget').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin(false);
  });
  $('purge').addEventListener('click', () => askPurge($('purge-id').value));
  $('confirm-yes').addEventListener('click', purge);
  $('confirm-no').addEventListener('click', () => { $('confirm').hidden = true; });
  $('purge-soft').addEventListener('change', describePurge);
  $('purge-hard').addEventListener('change', describePurge);
  refresh();
})();
