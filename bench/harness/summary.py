"""summary.md: the tables of a run, medians over its repetitions (bench/README.md, "Reading the
figures")."""

from .runs_table import is_number, median_of, ms, num, ratio, rps
from .scenarios import is_reference


def _median_unless_reference(table, scenario, system, column):
    """The median of COLUMN, or "-" for a reference (which has no upstream)."""
    return "-" if is_reference(system) else table.median(scenario, system, column)


def _cells(values):
    return "| " + " | ".join(str(v) for v in values) + " |"


def main_table(table, scenarios, systems):
    lines = ["| scenario | system | runs | req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | "
             "errors | unexpected status | upstream calls | upstream / 1k req | peak RSS MiB | "
             "server CPU ms / 1k req | wg-bench exit |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for sc in scenarios:
        for sy in systems:
            n = table.count(sc, sy)
            if n == 0:
                continue
            m = lambda column: table.median(sc, sy, column)  # noqa: E731
            lines.append(_cells([
                sc, sy, n, rps(m("rps")), ms(m("p50_us")), ms(m("p90_us")), ms(m("p99_us")),
                ms(m("p999_us")), ms(m("max_us")), m("errors"), m("unexpected"),
                _median_unless_reference(table, sc, sy, "upstream_calls"),
                _median_unless_reference(table, sc, sy, "upstream_per_1k"),
                num("%.1f", m("peak_rss_kb"), 1024), num("%.1f", m("server_cpu_ms_per_1k")),
                table.exits(sc, sy)]))
    return lines


def ratio_table(table, scenarios, systems):
    lines = ["Ratios (gateway ÷ other, medians): throughput above 1 and p99 below 1 favour the "
             "gateway.", "",
             "| scenario | other | req/s ratio | p99 ratio | upstream/1k ratio | server CPU / 1k "
             "req ratio |",
             "|---|---|---:|---:|---:|---:|"]
    for sc in scenarios:
        for sy in systems:
            if sy == "gateway" or not table.count(sc, sy) or not table.count(sc, "gateway"):
                continue

            def r(column):
                return ratio(table.median(sc, "gateway", column), table.median(sc, sy, column))

            upstream = "n/a" if is_reference(sy) else r("upstream_per_1k")
            lines.append(_cells([sc, sy, r("rps"), r("p99_us"), upstream,
                                 r("server_cpu_ms_per_1k")]))
    return lines


def beyond_l1(table, scenario):
    """The gateway's peak RSS less its L1 bytes, in MiB: "median (min..max)" over the runs."""
    values = sorted((int(r["peak_rss_kb"]) * 1024 - float(r["l1_bytes"])) / 1048576
                    for r in table.of(scenario, "gateway")
                    if r["peak_rss_kb"].isdigit() and _is_plain_decimal(r["l1_bytes"]))
    if not values:
        return "-"
    return "%.1f (%.1f..%.1f)" % (median_of(values), values[0], values[-1])


def _is_plain_decimal(text):
    return bool(text) and all(c.isdigit() or c == "." for c in text)


def gateway_table(table, scenarios):
    lines = ["Gateway internals (medians): Redis commands per measured client request (what the "
             "gateway",
             "asked during the measured period: cache lookups and stores, quota counting, locks, "
             "with a",
             "script's own commands counted one by one; not measurable when Redis restarts "
             "mid-run),",
             "what L1 held at the end, and peak RSS",
             "less L1's bytes (bodies and their compressed variants, plus the cache's per-entry "
             "overhead",
             "estimate; not the body files big bodies are sent from, which RSS does not show): "
             "what the",
             "process holds beyond its cache, median and range over the runs.", "",
             "| scenario | runs | Redis commands / request | L1 entries | L1 MiB | peak RSS MiB | "
             "RSS − L1 MiB (min..max) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for sc in scenarios:
        n = table.count(sc, "gateway")
        if n == 0:
            continue
        m = lambda column: table.median(sc, "gateway", column)  # noqa: E731
        redis, entries, l1 = m("redis_per_request"), m("l1_entries"), m("l1_bytes")
        lines.append(_cells([
            sc, n, "-" if redis in ("?", "-") else "%.3f" % float(redis),
            "-" if entries in ("?", "-") else "%d" % int(float(entries)),
            "-" if l1 in ("?", "-") else "%.1f" % (float(l1) / 1048576),
            num("%.1f", m("peak_rss_kb"), 1024), beyond_l1(table, sc)]))
    return lines


def walker_table(table, scenario, baseline, systems):
    """Per system, the scenario with its walker against its baseline (the same visitors
    without it)."""
    sc, base = scenario, baseline
    lines = [f"Walker ({sc} against its baseline {base}, medians): upstream calls per 1,000 "
             "client requests",
             f"(all answers of the run, warm-up included) and the visitors' p99 without the "
             f"walker ({base}) and",
             f"with it ({sc}, the walker's answers recorded apart). The walker's part is an "
             "estimate: the",
             "figure with the walker less the baseline's scaled to the visitors' share (with - "
             "without ×",
             "(1 - walker's share)); it holds when both runs answered about as many requests "
             "(see req/s).", "",
             f"| system | runs ({base} / {sc}) | upstream / 1k req without walker | with walker | "
             "walker's part (est.) | visitors' p99 ms without walker | with walker | with ÷ "
             "without | walker's p99 ms | walker's share of answers |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for sy in systems:
        if not table.count(sc, sy):
            continue
        up_base = _median_unless_reference(table, base, sy, "upstream_per_1k")
        up_walk = _median_unless_reference(table, sc, sy, "upstream_per_1k")
        share = table.median(sc, sy, "walker_share")
        if any(v in ("?", "-") for v in (up_walk, up_base, share)):
            walker_part = "-"
        else:
            walker_part = "%.4g" % (float(up_walk) - float(up_base) * (1 - float(share)))
        p99_base = table.median(base, sy, "visitors_p99_us")
        p99_walk = table.median(sc, sy, "visitors_p99_us")
        lines.append(_cells([
            sy, f"{table.count(base, sy)} / {table.count(sc, sy)}", num("%.4g", up_base),
            num("%.4g", up_walk), walker_part, ms(p99_base), ms(p99_walk),
            ratio(p99_walk, p99_base), ms(table.median(sc, sy, "walker_p99_us")),
            num("%.1f%%", share, 0.01)]))
    return lines


def per_thread(value, threads):
    return "-" if value in ("?", "-") else "%.0f" % (float(value) / threads)


def scaling_table(table, scenario, pin_note):
    """One row per thread count, medians over its runs."""
    sc = scenario
    lines = [f"Scaling ({sc}, medians): the gateway with `--threads N` and nginx with "
             "`worker_processes N`",
             "(`listen ... reuseport`) on the same load; per thread / per worker is req/s ÷ N, "
             "speed-up is",
             f"req/s at N ÷ req/s at 1. Pinning: {pin_note.removeprefix('scaling: ')}.", "",
             "| threads / workers N | runs (gateway / nginx) | gateway req/s | nginx req/s | "
             "gateway req/s per thread | nginx req/s per worker | gateway ÷ nginx | gateway "
             "speed-up N ÷ 1 | nginx speed-up N ÷ 1 |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    g1, n1 = table.median(sc, "gateway", "rps", 1), table.median(sc, "nginx", "rps", 1)
    for th in table.thread_counts(sc):
        g, n = table.median(sc, "gateway", "rps", th), table.median(sc, "nginx", "rps", th)
        lines.append(_cells([
            th, f"{table.count(sc, 'gateway', th)} / {table.count(sc, 'nginx', th)}", rps(g),
            rps(n), per_thread(g, th), per_thread(n, th), ratio(g, n), ratio(g, g1),
            ratio(n, n1)]))
    lines.append("")
    # Throughput alone would hide a thread count that answers fast but wrongly.
    bad = ["%s N=%s run %s: %d errors, %d unexpected status"
           % (r["system"], r["threads"], r["rep"], _int(r["errors"]), _int(r["unexpected"]))
           for r in table.rows if r["scenario"] == sc
           and _float(r["errors"]) + _float(r["unexpected"]) > 0]
    if bad:
        lines.append("Runs with transport errors or unexpected statuses (see runs.tsv): "
                     + "; ".join(bad) + ".")
    else:
        lines.append("No run had a transport error or an unexpected status.")
    return lines


def _float(text):
    return float(text) if is_number(text) else 0.0


def _int(text):
    return int(_float(text))


def failures_paragraph(failures, threshold_failures, fail_if):
    gated = f" (gateway runs with `--fail-if {fail_if}`)" if fail_if else ""
    if not failures and not threshold_failures:
        return [f"Every wg-bench run exited 0{gated}."]
    return ([f"Runs whose wg-bench did not exit 0{gated}:", ""]
            + [f"- {what}" for what in failures + threshold_failures])


def summary(table, run):
    """The lines of summary.md for RUN (a run.Run: its scenarios, systems and failures)."""
    lines = []
    if run.scenario_names:
        lines += main_table(table, run.scenario_names, run.systems)
        if "gateway" in run.systems and len(run.systems) > 1:
            lines += [""] + ratio_table(table, run.scenario_names, run.systems)
        if "gateway" in run.systems:
            lines += [""] + gateway_table(table, run.scenario_names)
    for sc in run.scenario_names:
        if sc in run.baseline_of:
            lines += [""] + walker_table(table, sc, run.baseline_of[sc], run.systems)
    for i, sc in enumerate(run.sweep_names):
        if run.scenario_names or i > 0:
            lines.append("")
        lines += scaling_table(table, sc, run.sweep_pinning.note)
    lines.append("")
    lines += failures_paragraph(run.failures, run.threshold_failures, run.opts.fail_if)
    return lines
