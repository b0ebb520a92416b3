"""report.md of a run, and bench/RESULTS.md from it with --publish: the run (date, command,
source, pinning, load), the load of each scenario, the machine, all tables and the plots."""

from . import ROOT, machine
from .constant_bodies import SAMPLE_REQUESTS


def load_of(row, short=False):
    """A scenarios.tsv row's load: "closed loop, 50 connections" or "open loop at 2000 req/s,
    64 connections" (SHORT, for a panel title: "open loop 2000 req/s, 64 conn.")."""
    connections = f"{row['connections']} conn." if short else f"{row['connections']} connections"
    if row["mode"] == "open":
        return f"open loop {'' if short else 'at '}{row['rate']} req/s, {connections}"
    return f"closed loop, {connections}"


def scenario_rows(path):
    """scenarios.tsv as dicts."""
    with open(path) as f:
        lines = f.read().splitlines()
    names = lines[0].split("\t")
    return [dict(zip(names, line.split("\t"))) for line in lines[1:]]


def report(run, summary_lines, plots, prefix=""):
    """The report's lines; PREFIX "published/" for bench/RESULTS.md, whose links lead into
    bench/published/."""
    opts, systems = run.opts, run.systems
    lines = ["# Bench results", ""]
    if prefix:
        folder = prefix.rstrip("/")
        lines += [f"Written by `bench/run.sh --publish` from the run whose files are in "
                  f"[{folder}/]({folder}/); see",
                  "[README.md](README.md) for what each scenario does and how to read the figures."]
    else:
        lines += ["Written by `bench/run.sh` for this run; see bench/README.md for what each "
                  "scenario does and",
                  "how to read the figures."]
    # Paths in the checkout: relative.
    command = opts.command_line.replace(ROOT + "/", "")
    lines += ["Latencies are client-side (wg-bench), in ms.", "", "## Run", "",
              f"- Date (UTC): {run.start_iso}", f"- Command: `bench/run.sh {command}`",
              f"- Source: {run.source_revision}"]
    if run.scenario_names:
        lines += [f"- Systems: {' '.join(systems)}; gateway with --threads {opts.gateway_threads}, "
                  "nginx with 1 worker, Varnish with malloc storage; access logs off",
                  f"- Pinning: {run.pinning.note}"]
    if run.sweep_names:
        sweeps = " ".join(run.sweep_names)
        with_nginx = (" and nginx with worker_processes N (listen reuseport)"
                      if "nginx" in systems else "")
        connections = f" and {opts.connections} connections" if opts.connections else ""
        lines += [f"- Scaling ({sweeps}): gateway with --threads N{with_nginx}, N = "
                  f"1..{run.sweep_pinning.max_threads}; wg-bench with "
                  f"{run.sweep_pinning.bench_threads} thread(s){connections}; access logs off",
                  f"- Pinning ({sweeps}): {run.sweep_pinning.note.removeprefix('scaling: ')}"]
    if opts.fail_if:
        lines.append(f"- Gateway runs with `--fail-if {opts.fail_if}`")
    lines += [f"- Load average (1, 5, 15 min) before / after the run: {run.load_at_start} / "
              f"{machine.load_average()} (anything well above 0 means other work shared the CPUs)",
              "", "Load per scenario (after run.sh's overrides):", "",
              "| scenario | load | measured / warm-up ms | runs per system |", "|---|---|---:|---:|"]
    scenarios = scenario_rows(run.scenarios_tsv)
    lines += [f"| {r['scenario']} | {load_of(r)} | {r['duration_ms']} / {r['warmup_ms']} | "
              f"{r['reps']} |" for r in scenarios]
    if "constant" in systems or "static" in systems:
        static = ", nginx static the same bytes as files" if "static" in systems else ""
        lines += ["", f"The constant reference serves bodies of each scenario's mean size, from "
                      f"{SAMPLE_REQUESTS} sampled requests{static}:", ""]
        lines += [f"- {r['scenario']}: {r['constant_note']}" for r in scenarios
                  if r["constant_note"] != "-"]
    versions = f"redis-server {machine.redis_version()}"
    if "nginx" in systems:
        versions += f", {machine.nginx_version()}"
    if "varnish" in systems:
        versions += f", {machine.varnish_version()}"
    lines += ["", "## Machine", "",
              f"- CPU: {machine.cpu_model() or 'unknown'}, {run.pinning.ncpu} CPUs",
              "- Memory: %.1f GiB" % machine.memory_gib(),
              f"- Kernel: {machine.kernel()}; OS: {machine.os_name()}",
              f"- {versions}", "", "## Figures", "", *summary_lines, ""]
    if plots.drawn:
        lines += ["Plots: " + ", ".join(f"[{title}]({prefix}{name})" for title, name in plots.drawn)
                  + ".", ""]
    if plots.notes:
        lines += ["Not drawn:", "", *[f"- {note}" for note in plots.notes], ""]
    lines.append(f"Per-run JSON from wg-bench: `{prefix}json/`; every run's row: "
                 f"`{prefix}runs.tsv`; load per scenario: `{prefix}scenarios.tsv`.")
    return lines
