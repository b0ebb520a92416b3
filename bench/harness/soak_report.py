"""The soak's judgement and files: minutes.tsv (per minute: the samples' maxima, each instance's
req/s and p99), growth after the settle period, summary.md and soak.png."""

import json
import subprocess
from collections import Counter

MINUTES_HEADER = ("minute", "rss_less_cache_mb_0", "rss_less_cache_mb_1", "fds_0", "fds_1",
                  "redis_clients", "rps_0", "rps_1", "p99_ms_0", "p99_ms_1")


def read_tsv(path):
    with open(path) as f:
        lines = f.read().splitlines()
    names = lines[0].split("\t")
    return [dict(zip(names, line.split("\t"))) for line in lines[1:]]


def minute_load(bench_json):
    """{minute: (req/s, p99 ms)} from wg-bench's per-minute histograms."""
    try:
        with open(bench_json) as f:
            minutes = json.load(f).get("minutes", [])
    except (OSError, ValueError):
        return {}
    return {m["minute"]: ("%.0f" % (m["responses"] / m["seconds"] if m["seconds"] > 0 else 0),
                          "%.2f" % (m["p99_us"] / 1000)) for m in minutes}


def _max(current, value):
    return value if current is None or value > current else current


def minutes_rows(samples, loads):
    """minutes.tsv's rows: per minute, the samples' maxima per instance and each instance's
    req/s and p99 (LOADS: minute_load of instance 0 and 1)."""
    rss, fds, clients = {}, {}, {}
    for s in samples:
        m, instance = int(float(s["t_s"]) // 60), s["instance"]
        if s["rss_less_cache_kb"] != "-":
            rss[m, instance] = _max(rss.get((m, instance)), int(s["rss_less_cache_kb"]))
        fds[m, instance] = _max(fds.get((m, instance)), int(s["fds"]))
        clients.setdefault(m, None)
        if s["redis_clients"] != "-":
            clients[m] = _max(clients[m], int(s["redis_clients"]))
    rows = []
    for m in sorted(clients):
        load = [loads[i].get(m) for i in (0, 1)]
        rows.append([m, "%.1f" % ((rss.get((m, "0")) or 0) / 1024),
                     "%.1f" % ((rss.get((m, "1")) or 0) / 1024), fds.get((m, "0"), ""),
                     fds.get((m, "1"), ""), "-" if clients[m] is None else clients[m],
                     *(x[0] if x else "-" for x in load), *(x[1] if x else "-" for x in load)])
    return rows


def growth(samples, settle_ms):
    """[(check, instance, first third's max, last third's max, "ok"|"GREW")]: after the settle
    period, the maximum over the last third of the samples against the first third's. RSS less
    the cache may grow by max(16 MiB, 20 %), open fds by 16, Redis connections by 4."""
    judged = [s for s in samples if float(s["t_s"]) * 1000 >= settle_ms]
    checks = []
    for instance in ("0", "1"):
        rows = [s for s in judged if s["instance"] == instance]
        third = max(len(rows) // 3, 1)

        def third_max(column, rows_of_third):
            values = [int(s[column]) for s in rows_of_third if s[column] != "-"]
            return max(values, default=-1)

        def judge(what, column, allowed):
            first, last = third_max(column, rows[:third]), third_max(column, rows[-third:])
            grew = last - first > allowed(first)
            checks.append((what, instance, first, last, "GREW" if grew else "ok"))

        judge("rss_less_cache", "rss_less_cache_kb", lambda first: max(first * 0.2, 16384))
        judge("fds", "fds", lambda first: 16)
        if instance == "0":  # Redis's connections are both instances' together
            judge("redis_clients", "redis_clients", lambda first: 4)
    return checks


def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def fault_counts(faults):
    counts = Counter(f["fault"] for f in faults)
    return "; ".join(f"{n} × {fault}" for fault, n in sorted(counts.items()))


def summary(when, command, commit, machine_note, failures, checks, canaries, counter, upstream,
            faults, minutes):
    not_200 = sum(1 for c in canaries if c["status"] != "200")
    lines = [f"# Soak: {when}", "", f"Command: `{command}`",
             f"Commit: {commit} (at the start); machine: {machine_note}; nothing pinned (two "
             "gateways, two wg-bench, the stub and Redis share the CPUs).", "",
             f"## Verdict: {'FAILED' if failures else 'passed'}", ""]
    lines += [f"- {f}" for f in failures]
    if failures:
        lines.append("")
    lines += markdown_table(("check", "instance", "first third after settle", "last third",
                             "verdict"), checks)
    lines += ["", f"Canary answers: {len(canaries)}, not 200: {not_200}. Quota counter after "
                  f"graceful stops: {counter}; requests the stub received: {upstream}.",
              f"Faults: {fault_counts(faults)}.", "",
              "## Per minute (samples' maxima; req/s and p99 per instance from wg-bench's "
              "per-minute histograms)", ""]
    return lines + markdown_table(MINUTES_HEADER, minutes)


def plot(folder, log):
    minutes = f"{folder}/minutes.tsv"
    script = f"""\
set terminal pngcairo size 1200,900 noenhanced
set output "{folder}/soak.png"
set datafile separator "\\t"
set datafile missing "-"
set key top left
set multiplot layout 2,2 title "soak: per minute"
set xlabel "minute"
set ylabel "MiB"
set title "RSS less wg\\_cache\\_bytes"
plot "{minutes}" using 1:2 skip 1 with linespoints title "gateway 0", "" using 1:3 skip 1 with linespoints title "gateway 1"
set ylabel "count"
set title "open fds and Redis connections"
plot "" using 1:4 skip 1 with linespoints title "fds 0", "" using 1:5 skip 1 with linespoints title "fds 1", "" using 1:6 skip 1 with linespoints title "Redis clients"
set ylabel "req/s"
set title "answers per second"
plot "" using 1:7 skip 1 with linespoints title "gateway 0", "" using 1:8 skip 1 with linespoints title "gateway 1"
set ylabel "ms"
set title "p99"
plot "" using 1:9 skip 1 with linespoints title "gateway 0", "" using 1:10 skip 1 with linespoints title "gateway 1"
unset multiplot
"""
    with open(f"{folder}/gnuplot.log", "w") as errors:
        if subprocess.run(["gnuplot"], input=script, text=True, stderr=errors).returncode != 0:
            log("gnuplot failed; no plot (gnuplot.log)")
