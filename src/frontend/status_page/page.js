'use strict';
// The status page: reads /admin/status, /admin/quota (the month-end projection is its) and
// /admin/top-widgets with the admin token as a bearer header, refreshes every 5 s, and purges one widget after a confirmation. The token lives in
// this tab's sessionStorage only. Every value from the gateway is written as text
// (textContent), never parsed as HTML.
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

  function askPurge(id) {
    $('purge-id').value = id;
    const wanted = $('purge-id').value.trim();
    if (!wanted) return;
    $('confirm-id').textContent = wanted;
    $('confirm').hidden = false;
    $('purge-result').textContent = '';
  }

  async function purge() {
    const id = $('confirm-id').textContent;
    $('confirm').hidden = true;
    try {
      const answer = await call('/admin/purge?widget=' + encodeURIComponent(id), 'POST');
      $('purge-result').textContent = 'Purged ' + answer.purged + '.';
      $('purge-result').className = 'good';
    } catch (e) {
      if (e instanceof Refused) {
        sessionStorage.removeItem(TOKEN_KEY);
        showLogin(true);
        return;
      }
      $('purge-result').textContent = 'Purge failed: ' + e.message;
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
  refresh();
})();
