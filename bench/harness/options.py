"""The command line of `bench/run.sh SCENARIO|all [options]`."""

import os
import re
from dataclasses import dataclass, field

from . import ROOT
from .console import UsageError
from .durations import to_ms

SYSTEMS = ("gateway", "nginx", "varnish", "static", "constant")

USAGE = """\
usage: bench/run.sh SCENARIO|all [options]
       bench/run.sh compare DIR_A DIR_B [--threshold 10%]
       bench/run.sh soak [--duration 30m] [options]   (bench/run.sh soak --help)
       bench/run.sh refresh-day [--systems LIST] [options]   (bench/refresh-day.py --help)
  SCENARIO          a name from bench/scenarios/ (without .toml) or a path to a .toml file
  --compare         also run nginx proxy_cache, Varnish, nginx serving static files and the
                    constant-response reference
  --systems LIST    comma-separated subset of gateway,nginx,varnish,static,constant
  --duration D      measured duration of every run (e.g. 5s; default: the scenario's)
  --warmup D        warm-up of every run (default: the scenario's)
  --reps N          repetitions per system (default: the scenario's, 1-3)
  --gateway-threads N  --threads of the gateway (default 1; nginx runs 1 worker)
  --connections N   wg-bench connections of every run (default: the scenario's)
  --bench-threads N wg-bench io threads of every run (default: the scenario's; on a scaling
                    scenario, one per CPU of --client-cpus)
  --max-threads N   scaling scenarios: sweep the gateway's threads and nginx's workers over
                    1..N (default: the number of CPUs)
  --client-cpus L   scaling scenarios: taskset CPU list for wg-bench, the stub and redis-server
                    (default: the CPUs above N, or the last CPU when N covers them all)
  --fail-if EXPR    passed to wg-bench for the gateway's runs (e.g. p99>5ms,errors>0,rate<0.95);
                    the script exits 5 when one of them crossed it
  --out DIR         the run's folder (default: bench/results/<UTC time>-<scenario|all>/)
  --publish         also copy the run's folder to bench/published/ (replacing it) and write
                    bench/RESULTS.md from it; without it no tracked file changes
  --build-dir DIR   Release build directory (default: build, shared with the test suite)
  --no-build        use the binaries already in the build directory
  --no-install      do not install missing tools (nginx-light, varnish, gnuplot-nox)
  --jobs N          build jobs (default 2)
compare: per scenario and system in both folders (each with a runs.tsv; "latest" and folder
names under bench/results/ work too), the medians of req/s, p50, p99, errors, upstream calls
per 1k and peak RSS, their change, and a verdict; "regression" when a median moved the wrong
way by more than the threshold (default 10%) and the ranges over repetitions do not overlap.
Exit status: 0 done (compare: no regression); 1 a run failed (compare: a regression); 2 usage
error; 5 only --fail-if thresholds were crossed.
"""


class HelpRequested(Exception):
    pass


@dataclass
class RunOptions:
    scenario: str = ""
    systems: list = field(default_factory=lambda: ["gateway"])
    duration: str = ""         # "" = the scenario's
    warmup: str = ""
    reps: str = ""
    gateway_threads: int = 1
    connections: str = ""
    bench_threads: str = ""
    max_threads: str = ""      # "" = the number of CPUs
    client_cpus: str = ""
    fail_if: str = ""
    out: str = ""
    publish: bool = False
    build_dir: str = os.path.join(ROOT, "build")
    build: bool = True
    install: bool = True
    jobs: str = "2"
    command_line: str = ""     # the arguments as given, for the report


# Options that take a value → the RunOptions field it sets.
_VALUED = {"--systems": "systems", "--duration": "duration", "--warmup": "warmup",
           "--reps": "reps", "--gateway-threads": "gateway_threads",
           "--connections": "connections", "--bench-threads": "bench_threads",
           "--max-threads": "max_threads", "--client-cpus": "client_cpus",
           "--build-dir": "build_dir", "--jobs": "jobs", "--fail-if": "fail_if", "--out": "out"}
_FLAGS = {"--compare": ("compare", True), "--no-build": ("build", False),
          "--no-install": ("install", False), "--publish": ("publish", True)}

_COUNT = r"[1-9][0-9]*"
_CPU_LIST = r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*"


def parse_run_options(argv):
    """RunOptions of ARGV; UsageError on anything wrong, HelpRequested on -h/--help."""
    given, compare, rest = {}, False, list(argv)
    opts = RunOptions(command_line=" ".join(argv))
    while rest:
        arg = rest.pop(0)
        if arg in ("-h", "--help"):
            raise HelpRequested()
        if arg in _VALUED:
            if not rest or rest[0] == "":
                raise UsageError(f"{arg} expects a value")
            given[_VALUED[arg]] = rest.pop(0)
        elif arg in _FLAGS:
            name, value = _FLAGS[arg]
            if name == "compare":
                compare = True
            else:
                setattr(opts, name, value)
        elif arg.startswith("-"):
            raise UsageError(f"unknown option {arg}")
        elif opts.scenario:
            raise UsageError("one scenario (or all) at a time")
        else:
            opts.scenario = arg
    if not opts.scenario:
        raise UsageError("no scenario given")

    systems = given.pop("systems", None)
    for name, value in given.items():
        setattr(opts, name, value)
    if systems is not None:
        opts.systems = systems.split(",")
    elif compare:
        opts.systems = list(SYSTEMS)
    for system in opts.systems:
        if system not in SYSTEMS:
            raise UsageError(f"unknown system {system}")

    _check(opts.reps, r"[0-9]*", "--reps expects a number")
    _check(str(opts.gateway_threads), _COUNT, "--gateway-threads expects a number")
    opts.gateway_threads = int(opts.gateway_threads)
    for value, flag in ((opts.connections, "--connections"), (opts.bench_threads, "--bench-threads"),
                        (opts.max_threads, "--max-threads")):
        _check(value, f"({_COUNT})?", f"{flag} expects a number")
    _check(opts.client_cpus, f"({_CPU_LIST})?",
           "--client-cpus expects a CPU list (e.g. 1 or 8-15 or 2,4-7)")
    for value in (opts.duration, opts.warmup):
        if value:
            to_ms(value)
    opts.build_dir = os.path.abspath(opts.build_dir)
    return opts


def _check(value, pattern, message):
    if not re.fullmatch(pattern, value):
        raise UsageError(message)
