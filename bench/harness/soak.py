"""bench/run.sh soak: two gateway instances sharing one Redis run a steady site for a long time
while the world around them fails on a schedule; the run fails when something grows or breaks
(bench/README.md, "The soak").

Load: bench/scenarios/soak.toml, open loop, half the rate to each instance from one wg-bench
each. Faults, timed from the start: redis-server SIGKILLed and restarted from its append-only
file every --redis-every; the stub closing every connection for --outage-for every
--outage-every; SIGHUP to both gateways every --sighup-every; none in the last --quiet.
Sampled every --sample-every, per instance: RSS less the cache, open fds, Redis's clients, and
canary keys that must answer 200 every time. Exit status: 0 passed; 1 a check failed or a run
broke; 2 usage.
"""

import json
import os
import re
import signal
import sys
import time

from . import BENCH_DIR, SCENARIO_DIR, build, machine, procfs, results, soak_report
from .console import Failure, Logger, UsageError
from .durations import to_ms
from .loopback import status_of
from .processes import managed_processes
from .redis import PERSISTENT, Redis
from .services import Gateway, Stub

log = Logger("soak")

USAGE = """\
usage: bench/run.sh soak [options]
  --duration D       length of the load (default 30m)
  --rate R           requests per second, both instances together (default 1500)
  --settle D         growth is judged after this (default 5m)
  --redis-every D    SIGKILL and restart redis-server this often (default 5m; 0 = never)
  --redis-down-for D how long Redis stays down each time (default 10s)
  --outage-every D   upstream outage this often (default 7m; 0 = never)
  --outage-for D     length of each outage (default 60s)
  --sighup-every D   SIGHUP to both gateways this often (default 1m; 0 = never)
  --sample-every D   sampling interval (default 10s)
  --quiet D          no fault starts in the run's last D (default 30s)
  --out DIR          the run's folder (new or empty; default bench/results/<UTC time>-soak/)
  --publish          also copy the folder to bench/published-soak/ and write bench/RESULTS-soak.md
  --build-dir DIR    Release build directory (default build, the shipped build CI tests)
  --no-build         use the binaries already in the build directory
  --no-install       do not install missing tools
  --jobs N           build jobs (default 2)
Durations: 500ms, 10s, 5m, 1h. Exit status: 0 passed; 1 a check failed or a run broke; 2 usage.
"""

DURATIONS = {"--duration": "30m", "--settle": "5m", "--redis-every": "5m",
             "--redis-down-for": "10s", "--outage-every": "7m", "--outage-for": "60s",
             "--sighup-every": "1m", "--sample-every": "10s", "--quiet": "30s"}
# The order the summary's command line names them in.
COMMAND_ORDER = ("--duration", "--rate", "--settle", "--redis-every", "--redis-down-for",
                 "--outage-every", "--outage-for", "--sighup-every", "--sample-every")
GATEWAY_CONFIG = """\
# Written by bench/run.sh soak. A limit far above the run's needs: the lease path is exercised
# without ever refusing.
[quota]
monthly_limit = 100000000
[access]
# wg-bench is one client address asking for widgets nobody fetched yet (all valid).
unknown_per_ip_rate = 0
[log]
access_log = "off"
"""
CANARY_WIDGETS = 5
TICK_S = 0.25


def parse_options(argv):
    """{option: value as given} and {option: ms} of the durations; UsageError when wrong."""
    given = dict(DURATIONS, **{"--rate": "1500", "--out": "", "--build-dir":
                               os.path.join(os.path.dirname(BENCH_DIR), "build"), "--jobs": "2"})
    flags = set()
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg in ("-h", "--help"):
            return None, None, None
        if arg in ("--publish", "--no-build", "--no-install"):
            flags.add(arg)
        elif arg in given:
            if not rest or not rest[0]:
                raise UsageError(f"{arg} expects a value")
            given[arg] = rest.pop(0)
        else:
            raise UsageError(f"unknown option {arg} (see --help)")
    ms = {name: to_ms(given[name], zero_allowed=True) for name in DURATIONS}
    if not re.fullmatch(r"[0-9]+", given["--rate"]) or int(given["--rate"]) < 2:
        raise UsageError("--rate must be an integer of at least 2")
    if ms["--duration"] < 60000:
        raise UsageError("--duration must be at least 1m")
    if ms["--sample-every"] < 1000:
        raise UsageError("--sample-every must be at least 1s")
    if ms["--settle"] + 3 * ms["--sample-every"] > ms["--duration"]:
        raise UsageError("--settle must leave at least three samples of the run to judge "
                         "growth on")
    if ms["--quiet"] >= ms["--duration"]:
        raise UsageError("--quiet must be shorter than --duration")
    return given, ms, flags


class Every:
    """An event due every PERIOD ms from PERIOD on (never when PERIOD is 0)."""

    def __init__(self, period):
        self.period = period
        self.next = period if period > 0 else None

    def due(self, t):
        if self.next is None or t < self.next:
            return False
        self.next += self.period
        return True


class Soak:
    def __init__(self, given, ms, flags, processes, bin_dir, folder):
        self.given, self.ms, self.flags = given, ms, flags
        self.processes = processes
        self.bin_dir = bin_dir
        self.folder = folder
        self.work = processes.work

    def path(self, name):
        return os.path.join(self.folder, name)

    def elapsed_ms(self):
        return (time.monotonic() - self.start) * 1000

    def append(self, name, *cells):
        with open(self.path(name), "a") as f:
            f.write("\t".join(str(c) for c in cells) + "\n")

    def fault(self, what):
        self.append("faults.tsv", "%.1f" % (self.elapsed_ms() / 1000), what)
        log(what)

    def start_services(self):
        self.redis = Redis(self.processes, persistence=PERSISTENT)
        self.redis.start(tries=1)
        self.stub = Stub(self.processes, os.path.join(self.bin_dir, "widget-upstream-stub"),
                         10000)
        self.ids_file = os.path.join(self.work, "ids.json")
        ids_json = self.stub.widgets_json()
        with open(self.ids_file, "wb") as f:
            f.write(ids_json)
        config = os.path.join(self.work, "gateway.toml")
        with open(config, "w") as f:
            f.write(GATEWAY_CONFIG)
        self.gateways = [Gateway(self.processes, os.path.join(self.bin_dir, "widget-gateway"),
                                 config, self.stub.port, self.redis.port, 1, name=f"gateway-{i}")
                         for i in (0, 1)]
        # Canary keys: the first widgets' data and first reviews page, cached on both instances
        # before the load. A cached key is served through every fault (from L1, fresh or stale).
        ids = [w["id"] for w in json.loads(ids_json)[:CANARY_WIDGETS]]
        if len(ids) < CANARY_WIDGETS:
            raise Failure(f"the stub listed fewer than {CANARY_WIDGETS} widgets")
        self.canaries = [p for i in ids for p in (f"/api/v1/widgets/widget/{i}/remote",
                         f"/api/v1/widgets/widget/{i}/reviews/remote?limit=10&skip=0")]
        for i, gateway in enumerate(self.gateways):
            for path in self.canaries:
                code = status_of(gateway.port, path)
                if code != "200":
                    raise Failure(f"warming canary {path} on gateway {i} answered {code}")
        self.stub.set_latency(20)

    def start_load(self):
        rate = int(self.given["--rate"]) // 2
        self.benches = [self.processes.start(f"wg-bench-{i}", [
            os.path.join(self.bin_dir, "wg-bench"), "--target",
            f"http://127.0.0.1:{gateway.port}", "--scenario",
            os.path.join(SCENARIO_DIR, "soak.toml"), "--ids", self.ids_file, "--label",
            f"gateway-{i}", "--mode", "open", "--rate", rate, "--duration",
            f"{self.ms['--duration']}ms", "--warmup", "0s", "--seed", i + 1, "--progress", "off",
            "--out", self.path(f"wg-bench-{i}.json")]) for i, gateway in enumerate(self.gateways)]
        self.start = time.monotonic()

    def sample(self):
        t = "%.1f" % (self.elapsed_ms() / 1000)
        clients = "-"
        if self.redis.process:
            connected = self.redis.info_field("clients", "connected_clients")
            clients = "-" if connected is None else connected - 1  # less the INFO call's own
        for i, gateway in enumerate(self.gateways):
            if not gateway.process.running():
                raise Failure(f"gateway {i} exited during the run (log: "
                              f"{gateway.process.log_tail(500)})")
            rss = procfs.rss_kb(gateway.pid)
            cache = gateway.metric('wg_cache_bytes{tier="l1"}') or "-"
            less = "-" if cache == "-" else "%d" % (rss - float(cache) / 1024)
            self.append("samples.tsv", t, i, rss, cache, less, procfs.open_fds(gateway.pid),
                        clients)
            for path in self.canaries:
                self.append("canaries.tsv", t, i, path, status_of(gateway.port, path))

    def run_schedule(self):
        """One loop, a tick every 250 ms: each scheduled event fires once when its time has
        come."""
        ms = self.ms
        redis_kills, outages = Every(ms["--redis-every"]), Every(ms["--outage-every"])
        sighups, samples = Every(ms["--sighup-every"]), Every(ms["--sample-every"])
        samples.next = 0
        redis_back_at = outage_ends_at = None
        quiet_from = ms["--duration"] - ms["--quiet"]
        while any(b.running() for b in self.benches):
            t = self.elapsed_ms()
            if redis_back_at is not None and t >= redis_back_at:
                self.redis.start(tries=1)
                redis_back_at = None
                self.fault("redis-server restarted from its append-only file")
            if outage_ends_at is not None and t >= outage_ends_at:
                self.stub.set_fault("none")
                outage_ends_at = None
                self.fault("upstream back")
            if redis_kills.due(t) and t < quiet_from:
                self.redis.kill()
                redis_back_at = t + ms["--redis-down-for"]
                self.fault("redis-server SIGKILLed")
            if outages.due(t) and t < quiet_from:
                self.stub.set_fault("close")
                outage_ends_at = t + ms["--outage-for"]
                self.fault("upstream outage (every connection closed)")
            if sighups.due(t):
                for gateway in self.gateways:
                    os.kill(gateway.pid, signal.SIGHUP)
                self.fault("SIGHUP to both gateways")
            if t < ms["--duration"] and samples.due(t):
                self.sample()
            time.sleep(TICK_S)
        if not self.redis.process:  # (never: faults stop --quiet before the end)
            self.redis.start(tries=1)
        if outage_ends_at is not None:
            self.stub.set_fault("none")

    def finish(self):
        """The runs' failures, after both instances stopped gracefully; and the quota counter
        against what the stub received."""
        failures = []
        for i, bench in enumerate(self.benches):
            # 5 would be a --fail-if, which is not given; errors during outages are expected.
            status = self.processes.wait(bench)
            if status != 0:
                tail = " ".join(bench.log_tail(300).splitlines()[-3:])
                failures.append(f"wg-bench {i} exited {status}: {tail}")
        # Both instances report and give their leases back on SIGTERM.
        time.sleep(2)
        for i, gateway in enumerate(self.gateways):
            status = self.processes.stop(gateway.process, grace=60)
            if status != 0:
                failures.append(f"gateway {i} exited {status} on SIGTERM")
        upstream = self.stub.total()
        return failures, upstream, self.month_counter()

    def month_counter(self):
        keys, cursor = [], "0"
        while True:
            cursor, found = self.redis.command("SCAN", cursor, "MATCH", "wg:quota:{*}",
                                               "COUNT", 1000)
            keys += [k.decode() for k in found]
            if cursor in (b"0", "0"):
                break
        months = sorted(k for k in keys if re.fullmatch(r"wg:quota:\{[0-9]{4}-[0-9]{2}\}", k))
        return int(self.redis.command("GET", months[-1]) or 0) if months else 0


def main(argv):
    given, ms, flags = parse_options(argv)
    if given is None:
        sys.stdout.write(USAGE)
        return 0
    # The commit the run measures, read now: the checkout may move during a long run.
    commit = machine.short_commit()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    folder = results.new_folder(given["--out"], stamp, "soak")
    results.point_latest_at(folder)
    log(f"results: {folder}")
    missing = build.missing_tools(["redis-server"])
    if missing:
        if "--no-install" in flags:
            raise Failure(f"missing tools: {' '.join(missing)} (--no-install given)")
        build.install_bench_tools(log, missing)
    have_gnuplot = build.have_tool("gnuplot")
    bin_dir = build.release_binaries("--no-build" not in flags,
                                     os.path.abspath(given["--build-dir"]), given["--jobs"], log)
    for name, header in (("samples.tsv", "t_s\tinstance\trss_kb\tcache_bytes\trss_less_cache_kb"
                                         "\tfds\tredis_clients"),
                         ("canaries.tsv", "t_s\tinstance\tpath\tstatus"),
                         ("faults.tsv", "t_s\tfault")):
        with open(os.path.join(folder, name), "w") as f:
            f.write(header + "\n")
    with managed_processes("wg-soak") as processes:
        soak = Soak(given, ms, flags, processes, bin_dir, folder)
        soak.start_services()
        soak.start_load()
        soak.run_schedule()
        failures, upstream, counter = soak.finish()
    return judge(folder, given, ms, flags, commit, failures, upstream, counter, have_gnuplot)


def judge(folder, given, ms, flags, commit, run_failures, upstream, counter, have_gnuplot):
    samples = soak_report.read_tsv(os.path.join(folder, "samples.tsv"))
    canaries = soak_report.read_tsv(os.path.join(folder, "canaries.tsv"))
    faults = soak_report.read_tsv(os.path.join(folder, "faults.tsv"))
    loads = [soak_report.minute_load(os.path.join(folder, f"wg-bench-{i}.json")) for i in (0, 1)]
    minutes = soak_report.minutes_rows(samples, loads)
    with open(os.path.join(folder, "minutes.tsv"), "w") as f:
        f.write("\t".join(soak_report.MINUTES_HEADER) + "\n")
        f.writelines("\t".join(str(c) for c in row) + "\n" for row in minutes)
    checks = soak_report.growth(samples, ms["--settle"])
    failures = [f"{what} of instance {instance} grew from {before} to {after} after the settle "
                "period" for what, instance, before, after, verdict in checks if verdict != "ok"]
    not_200 = sum(1 for c in canaries if c["status"] != "200")
    if not_200:
        failures.append(f"{not_200} of {len(canaries)} canary answers were not 200 (canaries.tsv)")
    if counter != upstream:
        failures.append(f"the quota counter is {counter} after graceful stops; the stub received "
                        f"{upstream} requests")
    failures += run_failures
    command = "bench/run.sh soak " + " ".join(f"{name} {given[name]}" for name in COMMAND_ORDER)
    machine_note = "%d CPUs, %.0f GiB" % (machine.cpu_count(), machine.memory_gib())
    lines = soak_report.summary(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), command,
                                commit, machine_note, failures, checks, canaries, counter,
                                upstream, faults, minutes)
    summary_path = os.path.join(folder, "summary.md")
    with open(summary_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    if have_gnuplot:
        soak_report.plot(folder, log)
    if "--publish" in flags:
        results.publish(folder, os.path.join(BENCH_DIR, "published-soak"), summary_path,
                        os.path.join(BENCH_DIR, "RESULTS-soak.md"))
        log("published to bench/published-soak/ and bench/RESULTS-soak.md")
    per_minute = next(i for i, line in enumerate(lines) if line.startswith("## Per minute"))
    sys.stderr.write("\n".join(lines[:per_minute + 1]) + "\n")
    if failures:
        return 1
    log("passed")
    return 0
