"""Scenario files (bench/scenarios/*.toml): which ones a run covers, and their [runner] values
as wg-bench reads them (`wg-bench --scenario FILE --print-runner`)."""

import os
import subprocess
import tomllib

from . import SCENARIO_DIR
from .console import Failure, UsageError

# The scenarios of `all`, in their order. refresh-day and soak have their own commands.
ALL_SCENARIOS = ("hot-hits", "hot-hits-256", "large-page", "big-pages", "big-pages-256",
                 "zipf-site", "zipf-site-redis-only", "quota-walk", "memory-10k", "cold-storm",
                 "cache-busters", "upstream-outage", "redis-outage", "scaling")


def is_sweep(name):
    """`scaling` and any `scaling-*` are swept over the servers' thread counts."""
    return name == "scaling" or name.startswith("scaling-")


def is_reference(system):
    """The references serve fixed bodies: no cache, no upstream."""
    return system in ("constant", "static")


def scenario_path(name):
    return os.path.join(SCENARIO_DIR, f"{name}.toml")


def scenario_files(argument):
    """The files of SCENARIO|all: a name under bench/scenarios/ or a path to a .toml file."""
    if argument == "all":
        return [scenario_path(name) for name in ALL_SCENARIOS]
    if os.path.isfile(argument):
        return [os.path.abspath(argument)]
    if os.path.isfile(scenario_path(argument)):
        return [scenario_path(argument)]
    raise UsageError(f"no scenario {argument} (have: {' '.join(ALL_SCENARIOS)})")


def runner_values(wg_bench, file):
    """The scenario's [runner] values and defaults, as wg-bench resolves them: name, mode,
    connections, duration_ms, warmup_ms, reps, stub_widgets, widgets, fault... (all strings)."""
    result = subprocess.run([wg_bench, "--scenario", file, "--print-runner"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise Failure(f"{file}: wg-bench --print-runner failed: {result.stderr.strip()}")
    return dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)


def open_loop_rate(file):
    """[load] rate of a scenario file, as written ("-" when it has none)."""
    with open(file, "rb") as f:
        rate = tomllib.load(f).get("load", {}).get("rate")
    return "-" if rate is None else str(rate)


def with_baselines(files, wg_bench, log):
    """FILES with the baseline of each scenario that names one (runner.baseline, e.g.
    quota-walk's zipf-site) put before it, unless the run has it already; and {scenario name:
    its baseline's name}. The baseline runs in the same folder, with the same overrides."""
    expanded, baseline_of = [], {}
    for file in files:
        runner = runner_values(wg_bench, file)
        baseline = runner.get("baseline", "")
        if baseline:
            baseline_of[runner["name"]] = baseline
            baseline_file = scenario_path(baseline)
            if not os.path.isfile(baseline_file):
                raise Failure(f"{file}: runner.baseline names {baseline}, but there is no "
                              f"{baseline_file}")
            if baseline_file not in files and baseline_file not in expanded:
                log(f"{os.path.basename(file)[:-len('.toml')]}: its baseline {baseline} runs first")
                expanded.append(baseline_file)
        expanded.append(file)
    return expanded, baseline_of


def fault_window(runner, duration_ms):
    """(start, length) of the scenario's fault in ms from the start of the measured period; a
    shortened run keeps the fault inside it."""
    at, length = int(runner["fault_at_ms"]), int(runner["fault_for_ms"])
    if at + length > duration_ms:
        return duration_ms * 3 // 10, duration_ms * 4 // 10
    return at, length
