"""refresh-day's report.md, per-second.tsv and summary.json (bench/README.md, "The
refresh-day run")."""

import json
import os
import time

from . import ROOT, machine

SYSTEM_TITLES = {
    "gateway-2t": "gateway, 1 instance, --threads 2, prefetch off",
    "gateway-prefetch": "gateway, 1 instance, --threads 2, prefetch on",
    "gateway-2i": "gateway, 2 instances × --threads 1, one Redis",
    "nginx": "nginx proxy_cache, 1 worker",
    "varnish": "Varnish, malloc 256m",
}
# The gateway spreads its refreshes over this much after the boundary.
GATEWAY_JITTER = "30s"


def fmt(value, spec="{:.0f}"):
    return "-" if value is None else spec.format(value)


def ms(us):
    return "-" if us is None else f"{us / 1000:.1f}"


def slow_cell(m):
    if not m:
        return "-"
    share = 100.0 * m["slow"] / m["responses"] if m["responses"] else 0.0
    return f"{m['slow']} ({share:.2f} %)"


def extra_slow(m, before):
    """Slow answers beyond the baseline's share of them: the ones the boundary added."""
    if not m or not before or not before["responses"]:
        return "-"
    return f"{m['slow'] - m['responses'] * before['slow'] / before['responses']:+.0f}"


def merged_minutes(minutes):
    """Several minutes as one: answers and slow answers summed, the worst minute's p99 (the
    per-minute histograms are not kept, so no p99 of the whole is computed)."""
    if not minutes or any(m is None for m in minutes):
        return None
    return {"responses": sum(m["responses"] for m in minutes),
            "seconds": sum(m["seconds"] for m in minutes),
            "slow": sum(m["slow"] for m in minutes),
            "p99_us": max(m["p99_us"] for m in minutes)}


def write_report(ctx, results, failures, started, finished, command):
    path = os.path.join(ctx.results, "report.md")
    w = ctx.warmup_min
    after = ctx.after_min
    lines = []
    add = lines.append
    add("# refresh-day: the daily refresh boundary under load")
    add("")
    add(f"- Run: {utc_stamp(started)} to {utc_stamp(finished)} ({(finished - started) / 60:.1f} min), "
        f"`{command}`")
    add(f"- Source: {machine.source_revision()}")
    add(f"- Machine: {machine.cpu_model() or 'unknown CPU'}, {os.cpu_count()} CPU(s); "
        f"{ctx.pin_note}")
    add(f"- Load: `{os.path.relpath(ctx.scenario, ROOT)}` (zipf-site's visitors: Zipf 1.1 over "
        f"{ctx.widgets} widgets, realistic pagination), closed loop, {ctx.connections} connections "
        f"in all, upstream latency {ctx.latency_ms} ms; warm-up {w} min before the boundary, "
        f"{after} min measured after it; slow = answers that took longer than {ctx.slow_above} "
        f"(`wg-bench --slow-above`)")
    add(f"- Boundary: a whole UTC minute ahead of each system's start: the gateway's "
        f"`cache.refresh_at` (utc_offset +00:00, refresh_lag 0s, jitter {GATEWAY_JITTER}), "
        f"and the stub's `--expires-at` (Cache-Control max-age and Expires for nginx and Varnish)")
    add("")
    add("## Visitors")
    add("")
    # Up to two minutes after, a column group per minute; past that, the whole period here and
    # the minutes in a table of their own (below), so that ten minutes still fit a page.
    per_minute_columns = after <= 2
    head = ["system", "req/s before", "p99 ms before", "slow before"]
    if per_minute_columns:
        for m in range(after):
            head += [f"p99 ms min +{m + 1}", f"slow min +{m + 1}", f"extra slow min +{m + 1}"]
    else:
        head += [f"p99 ms after, worst minute of {after}", f"slow after ({after} min)",
                 f"extra slow after ({after} min)"]
    head += ["errors", "wg-bench exit"]
    add("| " + " | ".join(head) + " |")
    add("|---|" + "---:|" * (len(head) - 1))
    for r in results:
        b = r["before"]
        row = [SYSTEM_TITLES.get(r["system"], r["system"]),
               fmt(b["responses"] / b["seconds"]) if b and b["seconds"] else "-",
               ms(b["p99_us"]) if b else "-", slow_cell(b)]
        if per_minute_columns:
            for m in r["after"]:
                row += [ms(m["p99_us"]) if m else "-", slow_cell(m), extra_slow(m, b)]
        else:
            whole = merged_minutes(r["after"])
            row += [ms(whole["p99_us"]) if whole else "-", slow_cell(whole),
                    extra_slow(whole, b)]
        errors = fmt(r.get("errors"))
        if r.get("unexpected"):
            errors += " (" + ", ".join(f"{k} x {v}" for k, v in sorted(r["unexpected"].items())) + ")"
        row += [errors, ",".join(str(s) for s in r["wg_bench_exit"])]
        add("| " + " | ".join(row) + " |")
    add("")
    fill = (f"the warm-up's last; the minute(s) before it fill the caches" if w > 1 else
            "the whole warm-up, while the caches fill: run with --warmup 2m for a warm baseline")
    add(f"Before = the minute before the boundary ({fill}); min +1, +2 = the first, second "
        f"minute after it (past two minutes, the whole period after it, and its worst minute's "
        f"p99). p99 is that minute's "
        f"(wg-bench's per-minute histogram). Slow answers waited for upstream: a hit takes well "
        f"under {ctx.slow_above} here, an upstream round trip {ctx.latency_ms} ms or more; the "
        f"share is of the minute's answers. Hits are slow too now and then, with no upstream "
        f"call at all (the system's core is busy, or wg-bench's): the minute before the "
        f"boundary gives that floor, and extra slow = a minute's slow answers less the floor's "
        f"share of its answers, the visitors the boundary made wait. For the two gateway "
        f"instances, the counts are both "
        f"wg-bench runs' sums and p99 is the higher of the two instances' p99s. Errors: requests "
        f"without an answer over the whole run plus unexpected statuses after the boundary.")
    add("")
    if not per_minute_columns:
        add("### Minute by minute after the boundary")
        add("")
        add("Each cell: that minute's p99 ms, extra slow answers, and upstream calls.")
        add("")
        add("| minute | " + " | ".join(SYSTEM_TITLES.get(r["system"], r["system"])
                                       for r in results) + " |")
        add("|---:|" + "---:|" * len(results))
        for m in range(after):
            cells = []
            for r in results:
                minute = r["after"][m] if m < len(r["after"]) else None
                calls = r["calls_after_minutes"][m] if m < len(r["calls_after_minutes"]) else None
                cells.append(f"{ms(minute['p99_us']) if minute else '-'} ms, "
                             f"{extra_slow(minute, r['before'])} slow, {fmt(calls)} calls")
            add(f"| +{m + 1} | " + " | ".join(cells) + " |")
        add("")
    add("## Upstream calls")
    add("")
    head = ["system", f"before ({w} min)", "of which the last minute"]
    if per_minute_columns:
        head += [f"min +{m + 1}" for m in range(after)]
    head += [f"after ({after} min)", "calls per key across the boundary"]
    add("| " + " | ".join(head) + " |")
    add("|---|" + "---:|" * (len(head) - 1))
    for r in results:
        ratio = (f"{r['calls_after'] / r['calls_before']:.2f}"
                 if r["calls_after"] is not None and r["calls_before"] else "-")
        row = [SYSTEM_TITLES.get(r["system"], r["system"]), fmt(r["calls_before"]),
               fmt(r["calls_last_minute"])]
        if per_minute_columns:
            row += [fmt(x) for x in r["calls_after_minutes"]]
        row += [fmt(r["calls_after"]), ratio]
        add("| " + " | ".join(row) + " |")
    add("")
    add("From the stub's request counter, read just before every whole second. Calls per key "
        "across the boundary = calls after ÷ calls before: each call before the boundary filled "
        "one key, so 1.0 means as many calls after as keys filled before (every key refetched "
        "once, if the tail's first fills after the boundary are set aside: the last minute "
        "before it shows their rate). The gateway spreads its refreshes over "
        f"{GATEWAY_JITTER} of jitter after the boundary (and fills reviews pages from shared "
        "300-review windows, so it has fewer keys to fill); nginx and Varnish expire every copy "
        "at the boundary itself.")
    add("")
    add("### Around the boundary, per 5 seconds")
    add("")
    add("Upstream calls (and the visitors' slow answers) in each 5 s from 10 s before the "
        "boundary to 60 s after it:")
    add("")
    add("| from s | " + " | ".join(SYSTEM_TITLES.get(r["system"], r["system"]) for r in results) + " |")
    add("|---:|" + "---:|" * len(results))
    for t0 in range(-10, 60, 5):
        cells = []
        for r in results:
            rows = [s for s in r["seconds"] if t0 <= s["t"] < t0 + 5]
            up = [s["upstream"] for s in rows]
            slow = [s.get("slow") for s in rows]
            up_text = "-" if any(u is None for u in up) else str(sum(up))
            slow_text = "-" if any(x is None for x in slow) else str(sum(slow))
            cells.append(f"{up_text} ({slow_text})")
        add(f"| {t0:+d} | " + " | ".join(cells) + " |")
    add("")
    gateways = [r for r in results if r["metrics"]]
    if gateways:
        add("### The gateway's counters at the end of its run")
        add("")
        add("| system | stale answers served | background refreshes | upstream requests | "
            "withheld | coalesced waiters |")
        add("|---|---:|---:|---:|---:|---:|")
        for r in gateways:
            m = r["metrics"]
            add(f"| {SYSTEM_TITLES[r['system']]} | " + " | ".join(fmt(m.get(k)) for k in (
                "wg_stale_served_total", "wg_background_refreshes_total",
                "wg_upstream_requests_total", "wg_upstream_withheld_total",
                "wg_coalesced_waiters_total")) + " |")
        add("")
        add("Summed over instances and labels, from each instance's /metrics "
            "(`gateway/*.metrics`), the whole run.")
        add("")
        add(f"### What the gateway's visitors met after the boundary ({after} min)")
        add("")
        results_shown = ("hit", "stale", "derived", "miss", "collapsed")
        add("| system | " + " | ".join(results_shown) + " | waited for upstream |")
        add("|---|" + "---:|" * (len(results_shown) + 1))
        for r in gateways:
            m = r["metrics"]
            waited = [m.get(f"after_{k}") for k in ("miss", "collapsed")]
            add(f"| {SYSTEM_TITLES[r['system']]} | "
                + " | ".join(fmt(m.get(f"after_{k}", 0 if "after_hit" in m else None))
                             for k in results_shown)
                + f" | {fmt(sum(x or 0 for x in waited) if 'after_hit' in m else None)} |")
        add("")
        add("Answers to visitors by `Cache-Status` result, from `wg_requests_total{cache}` read "
            "just before the boundary and at the end (`gateway/*-boundary.metrics`). Waited "
            "for upstream = miss + collapsed (a visitor who joined another's fetch).")
        add("")
    prefetching = [r for r in results if r.get("prefetch")]
    if prefetching:
        add("## The prefetch after the refresh")
        add("")
        add("| system | keys planned | fetched | of which unchanged | upstream requests | budget | "
            "skipped: stored since the boundary | skipped: budget | took ms |")
        add("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in prefetching:
            p = r["prefetch"]
            add(f"| {SYSTEM_TITLES.get(r['system'], r['system'])} | " + " | ".join(
                fmt(p.get(k)) for k in ("keys", "fetched", "unchanged", "upstream_requests",
                                        "budget", "skipped_stored", "skipped_budget",
                                        "duration_ms")) + " |")
        add("")
        add("From the leading instance's `prefetch_done` event. The keys are those asked at least "
            "twice before the boundary (the warm-up is the day before); a key a visitor's refresh "
            "stored first is skipped, at no upstream cost. The budget is the day's: half of the "
            "day's even share of what is left of the monthly limit (set high here, so that it "
            "never binds).")
        add("")
    replays = [r for r in results if r.get("what_if")]
    if replays:
        add("## What --what-if predicted")
        add("")
        add("| system | requests replayed | upstream requests predicted | measured (the stub) | "
            "fresh | stale | miss |")
        add("|---|---:|---:|---:|---:|---:|---:|")
        for r in replays:
            p = r["what_if"]
            if "error" in p:
                add(f"| {SYSTEM_TITLES.get(r['system'], r['system'])} | {p['error']} | | | | | |")
                continue
            add(f"| {SYSTEM_TITLES.get(r['system'], r['system'])} | {fmt(p.get('requests'))} | "
                f"{fmt(p.get('upstream_requests'))} | {fmt(p.get('measured_upstream_requests'))} | "
                + " | ".join(fmt(100 * p.get(k, 0), "{:.2f} %") for k in
                             ("fresh_share", "stale_share", "miss_share")) + " |")
        add("")
        add("`widget-gateway --what-if` over the gateway's access log of the run, with the run's "
            "configuration, beside the calls the stub counted over the same load (the known "
            "widget asked before the load is in the log, not in the stub's count). The replay "
            "has no prefetch, so only the run without it is replayed.")
        add("")
    if failures:
        add("## Failed")
        add("")
        for failure in failures:
            add(f"- {failure}")
        add("")
    add("## What two cores can and cannot show")
    add("")
    add("Everything shares two cores: the system under test on one, wg-bench, the stub and "
        "redis-server on the other (the gateway's two threads, or two instances, share their "
        "one core). Closed-loop p99 here is mostly queueing behind the connections and CPU "
        "contention, so absolute latencies are this machine's. What carries over to bigger "
        "machines is counted, not timed: the upstream calls per key across the boundary, the "
        "shape of the refresh (all at once or spread), and how many visitors waited for "
        "upstream after it.")
    add("")
    add("## Files")
    add("")
    add("- `per-second.tsv`: per system and second from the start of the warm-up (t = seconds "
        "from the boundary): upstream calls, the visitors' answers, slow answers, transport "
        "errors and p99 (µs, the higher of two instances)")
    add("- `json/LABEL.json`: wg-bench's JSON of each run (its `time_series` and `minutes` carry "
        "`slow`), `json/LABEL-wg-bench.log` its summary")
    add("- `gateway/`: the gateway's configuration and its /metrics at the end; `nginx.conf`, "
        "`varnish.vcl`: the others' configurations (ports of the last run)")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")

    with open(os.path.join(ctx.results, "per-second.tsv"), "w") as f:
        f.write("system\tt_s\tunix_s\tupstream_calls\tresponses\tslow\terrors\tp99_us\n")
        for r in results:
            for s in r["seconds"]:
                f.write("\t".join([r["system"], str(s["t"]), str(s["unix"])] + [
                    "-" if s.get(k) is None else str(s[k])
                    for k in ("upstream", "responses", "slow", "errors", "p99_us")]) + "\n")
    with open(os.path.join(ctx.results, "summary.json"), "w") as f:
        json.dump([{k: v for k, v in r.items() if k != "seconds"} for r in results], f, indent=1)
    return path


def utc_stamp(t):
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))
