"""bench/run.sh SCENARIO|all [options]: every planned run of wg-bench, then the run's folder
(runs.tsv, scenarios.tsv, summary.md, plots, report.md), `latest` and --publish.

Exit status: 0 every wg-bench run exited 0; 1 one failed (or the harness did); 5 the only
failures were gateway runs that crossed --fail-if.
"""

import os
import sys
import time
from dataclasses import dataclass

from . import BENCH_DIR, build, machine, pinning, results
from .console import Logger
from .constant_bodies import fetch_constant_bodies
from .durations import to_ms
from .measure import Measurement
from .plot_data import write_plot_data
from .plots import Plotter
from .processes import managed_processes
from .redis import Redis
from .report import load_of, report, scenario_rows
from .runs_table import HEADER, RunsTable, read_rows
from .scenarios import (fault_window, is_sweep, open_loop_rate, runner_values, scenario_files,
                        with_baselines)
from .services import Stub
from .summary import summary
from .systems import Launcher

log = Logger("run.sh")

SCENARIOS_HEADER = ("scenario\tmode\tconnections\trate\tduration_ms\twarmup_ms\treps\t"
                    "constant_widget_bytes\tconstant_reviews_bytes\tconstant_note\n")


@dataclass
class ScenarioPlan:
    """One scenario as this run runs it: its overrides applied, its pinning chosen."""
    file: str
    runner: dict
    sweep: bool
    duration_ms: int
    warmup_ms: int
    fault_at_ms: int
    fault_for_ms: int
    reps: int
    bench_threads: str
    other_pin: str
    default_server_pin: str
    sweep_pinning: pinning.SweepPinning

    def server_pin(self, threads):
        return self.sweep_pinning.server(threads) if self.sweep else self.default_server_pin


class Run:
    def __init__(self, opts):
        self.opts = opts
        self.systems = opts.systems
        epoch = time.time()
        self.stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(epoch))
        self.start_iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
        self.scenario_names, self.sweep_names = [], []  # plain scenarios; scaling sweeps
        self.baseline_of = {}
        self.failures, self.threshold_failures = [], []
        self.pinning = pinning.default_pinning()
        self.sweep_pinning = pinning.sweep_pinning(opts.max_threads, opts.client_cpus,
                                                   opts.bench_threads, self.pinning.ncpu)

    def plan(self, file, runner):
        o = self.opts
        sweep = is_sweep(runner["name"])
        duration_ms = to_ms(o.duration) if o.duration else int(runner["duration_ms"])
        fault_at, fault_for = fault_window(runner, duration_ms)
        return ScenarioPlan(
            file=file, runner=runner, sweep=sweep, duration_ms=duration_ms,
            warmup_ms=to_ms(o.warmup) if o.warmup else int(runner["warmup_ms"]),
            fault_at_ms=fault_at, fault_for_ms=fault_for, reps=int(o.reps or runner["reps"]),
            bench_threads=str(self.sweep_pinning.bench_threads) if sweep else o.bench_threads,
            other_pin=self.sweep_pinning.client_cpus if sweep else self.pinning.other,
            default_server_pin=self.pinning.server, sweep_pinning=self.sweep_pinning)

    def execute(self):
        o = self.opts
        files = scenario_files(o.scenario)
        tag = "all" if o.scenario == "all" else os.path.basename(o.scenario).removesuffix(".toml")
        self.folder = results.new_folder(o.out, self.stamp, tag, results.PUBLISHED_DIR)
        os.makedirs(os.path.join(self.folder, "json"), exist_ok=True)
        log(f"results: {self.folder}")
        self.prepare_tools()
        self.bin_dir = build.release_binaries(o.build, o.build_dir, o.jobs, log)
        log(f"{self.pinning.ncpu} CPUs: {self.pinning.note}")
        self.runs_tsv = os.path.join(self.folder, "runs.tsv")
        self.scenarios_tsv = os.path.join(self.folder, "scenarios.tsv")
        with open(self.runs_tsv, "w") as f:
            f.write(HEADER)
        with open(self.scenarios_tsv, "w") as f:
            f.write(SCENARIOS_HEADER)
        self.source_revision = machine.source_revision()
        self.load_at_start = machine.load_average()
        with managed_processes("wg-bench-run") as processes:
            wg_bench = os.path.join(self.bin_dir, "wg-bench")
            files, self.baseline_of = with_baselines(files, wg_bench, log)
            redis = Redis(processes)
            for file in files:
                self.run_scenario(processes, redis, self.plan(file, runner_values(wg_bench, file)))
        self.write_reports()
        return self.exit_status()

    def prepare_tools(self):
        needed = ["redis-server", "taskset", "gnuplot"]
        needed += [tool for system, tool in (("nginx", "nginx"), ("static", "nginx"),
                                             ("varnish", "varnishd")) if system in self.systems]
        missing = build.missing_tools(dict.fromkeys(needed))
        if missing:
            if self.opts.install:
                build.install_bench_tools(log, missing)
            else:
                log(f"missing tools: {' '.join(missing)} (--no-install given)")
        build.add_system_bin_dirs_to_path()
        self.have_gnuplot = build.have_tool("gnuplot")

    def run_scenario(self, processes, redis, plan):
        o, runner, name = self.opts, plan.runner, plan.runner["name"]
        redis.pin = plan.other_pin
        (self.sweep_names if plan.sweep else self.scenario_names).append(name)
        if runner.get("requests", "0") not in ("", "0"):
            length = f"{runner['requests']} requests"
        else:
            length = f"{plan.duration_ms} ms after {plan.warmup_ms} ms warm-up"
        meant_for = runner.get("systems") or " ".join(self.systems)
        if plan.sweep:
            top = self.sweep_pinning.max_threads
            log(f"=== {name}: {plan.reps} run(s) per system and thread count (1..{top}) of "
                f"{length}; systems: {meant_for}")
            log(self.sweep_pinning.note)
            if top > self.pinning.ncpu:
                log(f"warning: --max-threads {top} is more than the {self.pinning.ncpu} CPUs; "
                    f"points above {self.pinning.ncpu} share them")
            if o.gateway_threads != 1:
                log(f"{name}: --gateway-threads is ignored (the scenario sweeps 1..{top})")
        else:
            log(f"=== {name}: {plan.reps} run(s) per system of {length}; systems: {meant_for}")

        stub = Stub(processes, os.path.join(self.bin_dir, "widget-upstream-stub"),
                    runner["stub_widgets"], pin=plan.other_pin,
                    extra=("--cache-mb", "2048", "--prerender"))
        ids_file = os.path.join(processes.work, "ids.json")
        with open(ids_file, "wb") as f:
            f.write(stub.widgets_json(limit=runner["widgets"]))
        bodies = None
        constant_cells = ["-", "-", "-"]
        if "constant" in self.systems or "static" in self.systems:
            bodies = fetch_constant_bodies(os.path.join(self.bin_dir, "wg-bench"), plan.file,
                                           ids_file, stub.port, runner.get("first_limit", ""),
                                           processes.work)
            constant_cells = [bodies.widget_bytes, bodies.reviews_bytes, bodies.note]
        with open(self.scenarios_tsv, "a") as f:
            f.write("\t".join(str(c) for c in [
                name, runner["mode"], o.connections or runner["connections"],
                open_loop_rate(plan.file), plan.duration_ms, plan.warmup_ms, plan.reps,
                *constant_cells]) + "\n")

        # A scenario may be meant for some systems only (runner.systems): run those of --systems.
        meant = runner.get("systems", "")
        systems = [s for s in self.systems if not meant or s in meant.split(",")]
        if not systems:
            log(f"{name}: none of {' '.join(self.systems)} is meant for it "
                f"(runner.systems = {meant}); skipped")
        launcher = Launcher(processes, self.bin_dir, stub.port, redis,
                            (bodies.widget_path, bodies.reviews_path) if bodies else None)
        measurement = Measurement(processes, launcher, stub, redis,
                                  os.path.join(self.bin_dir, "wg-bench"), self.folder, ids_file, o)
        for rep in range(1, plan.reps + 1):
            for system, threads in self.schedule(plan, systems):
                line, status, failure = measurement.run_one(plan, system, rep, threads)
                with open(self.runs_tsv, "a") as f:
                    f.write(line)
                if failure:
                    (self.threshold_failures if status == 5 else self.failures).append(failure)
        stub.stop()

    def schedule(self, plan, systems):
        """(system, threads) of one repetition, in order. A sweep visits every thread count,
        alternating systems at each: drift over the run hits every point and both alike."""
        if plan.sweep:
            return [(s, n) for n in range(1, self.sweep_pinning.max_threads + 1)
                    for s in systems if s in ("gateway", "nginx")]
        threads = {"gateway": self.opts.gateway_threads, "varnish": "-"}
        return [(s, threads.get(s, 1)) for s in systems]

    def write_reports(self):
        table = RunsTable(read_rows(self.runs_tsv))
        summary_lines = summary(table, self)
        summary_path = os.path.join(self.folder, "summary.md")
        with open(summary_path, "w") as f:
            f.write("\n".join(summary_lines) + "\n")
        write_plot_data(self.folder, table, self)
        plots = Plotter(self.folder)
        if self.have_gnuplot:
            self.draw(plots)
        else:
            log("gnuplot not found: no PNG plots")
            plots.notes.append("gnuplot was not installed: no plots")
        with open(os.path.join(self.folder, "report.md"), "w") as f:
            f.write("\n".join(report(self, summary_lines, plots)) + "\n")
        results.point_latest_at(self.folder)
        log(f"summary ({summary_path}):")
        sys.stdout.write("\n".join(summary_lines) + "\n")
        sys.stdout.flush()
        if self.opts.publish:
            # Publishing replaces bench/published/ with this run's folder and rewrites
            # bench/RESULTS.md.
            results.publish(self.folder, results.PUBLISHED_DIR)
            with open(os.path.join(BENCH_DIR, "RESULTS.md"), "w") as f:
                f.write("\n".join(report(self, summary_lines, plots, "published/")) + "\n")
            log("published: bench/published/ and bench/RESULTS.md now hold this run")
        log(f"results in {self.folder} (report.md, summary.md, runs.tsv, plots)")

    def footer(self, load, marks="bars"):
        """The footer of every plot: machine, date, load, source, how to read it."""
        return (f"{machine.cpu_model() or 'unknown CPU'}, {self.pinning.ncpu} CPUs | "
                f"{self.start_iso} | {load} | source {self.source_revision} | {marks}: median of "
                f"the runs, whiskers: min..max over the runs")

    def draw(self, plots):
        loads = {}
        for r in scenario_rows(self.scenarios_tsv):
            loads.setdefault(r["scenario"], (load_of(r), load_of(r, short=True)))
        if self.scenario_names:
            titles = {sc: f"{sc}: {short}" for sc, (_, short) in loads.items()}
            in_titles = self.footer("load: in each panel title")
            plots.bar_chart("throughput", "Throughput per scenario and system (higher is better)",
                            "requests/s (higher is better)", in_titles, titles)
            if any(s not in ("constant", "static") for s in self.systems):
                plots.bar_chart("upstream",
                                "Upstream calls per 1,000 client requests (lower is better)",
                                "upstream calls / 1k req (lower is better)", in_titles, titles)
        for sc in self.scenario_names:
            plots.bar_chart(f"latency-{sc}", f"Latency percentiles: {sc} (lower is better)",
                            "ms (lower is better)", self.footer(loads[sc][0]))
        for sc in self.scenario_names:
            if sc in self.baseline_of:
                plots.bar_chart(f"walker-{sc}",
                                f"p99 with and without the walker: {sc} (lower is better)",
                                "ms (lower is better)", self.footer(loads[sc][0]))
        for sc in self.sweep_names:
            plots.line_chart(f"scaling-{sc}", f"Throughput by threads / workers: {sc} (higher is "
                             "better)", self.footer(loads[sc][0], "points"),
                             self.sweep_pinning.max_threads)

    def exit_status(self):
        if self.failures:
            log(f"runs whose wg-bench failed: {''.join(f + '; ' for f in self.failures)}")
            return 1
        if self.threshold_failures:
            log(f"gateway runs that crossed --fail-if {self.opts.fail_if}: "
                f"{''.join(f + '; ' for f in self.threshold_failures)}")
            return 5
        return 0
