"""The data behind the plots (*.dat): one row per group (scenario, percentile...) and system,
the median over the runs and the range (min, max) over them."""

import os

from .scenarios import is_reference

PERCENTILES = (("p50", "p50_us"), ("p90", "p90_us"), ("p99", "p99_us"), ("p99.9", "p999_us"))


def spread_rows(table, group, scenario, column, divisor, systems):
    rows = []
    for sy in systems:
        m, lo, hi = table.spread(scenario, sy, column)
        if m in ("?", "-"):
            continue
        rows.append("%s\t%s\t%d\t%.6g\t%.6g\t%.6g\n" % (
            group, sy, table.count(scenario, sy), float(m) / divisor, float(lo) / divisor,
            float(hi) / divisor))
    return rows


def _write(path, header, rows):
    with open(path, "w") as f:
        f.write(header + "\n")
        f.writelines(rows)


def write_plot_data(folder, table, run):
    """throughput.dat, upstream.dat, latency-SCENARIO.dat, walker-SCENARIO.dat (a scenario with
    a baseline) and scaling-SCENARIO.dat (a sweep) in FOLDER."""
    systems = run.systems
    upstream_systems = [sy for sy in systems if not is_reference(sy)]
    if run.scenario_names:
        _write(os.path.join(folder, "throughput.dat"),
               "scenario\tsystem\truns\trps_median\trps_min\trps_max",
               [r for sc in run.scenario_names
                for r in spread_rows(table, sc, sc, "rps", 1, systems)])
        _write(os.path.join(folder, "upstream.dat"),
               "scenario\tsystem\truns\tupstream_per_1k_median\tupstream_per_1k_min\t"
               "upstream_per_1k_max",
               [r for sc in run.scenario_names
                for r in spread_rows(table, sc, sc, "upstream_per_1k", 1, upstream_systems)])
    for sc in run.scenario_names:
        _write(os.path.join(folder, f"latency-{sc}.dat"),
               "percentile\tsystem\truns\tms_median\tms_min\tms_max",
               [r for name, column in PERCENTILES
                for r in spread_rows(table, name, sc, column, 1000, systems)])
    # The visitors' p99 without the walker (the baseline) and with it, and the walker's own p99.
    for sc in run.scenario_names:
        base = run.baseline_of.get(sc)
        if not base:
            continue
        _write(os.path.join(folder, f"walker-{sc}.dat"),
               "group\tsystem\truns\tms_median\tms_min\tms_max",
               spread_rows(table, f"visitors p99 without the walker ({base})", base,
                           "visitors_p99_us", 1000, systems)
               + spread_rows(table, f"visitors p99 with the walker ({sc})", sc,
                             "visitors_p99_us", 1000, systems)
               + spread_rows(table, f"walker p99 ({sc})", sc, "walker_p99_us", 1000, systems))
    # req/s by thread count; "linear" is the gateway's 1-thread median times N.
    for sc in run.sweep_names:
        g1 = table.median(sc, "gateway", "rps", 1)
        rows = []
        for th in table.thread_counts(sc):
            for sy in ("gateway", "nginx"):
                m, lo, hi = table.spread(sc, sy, "rps", th)
                if m not in ("?", "-"):
                    rows.append(f"{th}\t{sy}\t{table.count(sc, sy, th)}\t{m}\t{lo}\t{hi}\n")
            if g1 not in ("?", "-"):
                rows.append("%s\tlinear\t-\t%.0f\t-\t-\n" % (th, float(g1) * th))
        _write(os.path.join(folder, f"scaling-{sc}.dat"),
               "threads\tsystem\truns\trps_median\trps_min\trps_max", rows)
