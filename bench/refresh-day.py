#!/usr/bin/env python3
"""refresh-day: the daily refresh boundary under load (bench/run.sh refresh-day; see bench/README.md).

zipf-site's visitors (bench/scenarios/refresh-day.toml) ask each system for a few minutes while
upstream's daily refresh boundary passes: a whole UTC minute just ahead, at which every cached
copy expires. The gateway is configured with cache.refresh_at at that minute (utc_offset
"+00:00", refresh_lag "0s", jitter spreading its refreshes over the next 30 s); the stub upstream
runs with --expires-at at that moment, so nginx proxy_cache and Varnish get the same TTL from
its Cache-Control and Expires and expire all their copies at once. For each system it reports
the visitors' p99 and their answers that waited for upstream (slower than --slow-above) in the
minute before the boundary and in each minute after it, and the upstream calls before and after
the boundary (per second, from the stub's counter).

Systems, each started fresh with a fresh stub, one after the other:
  gateway-2t  widget-gateway --threads 2 (one instance, its own redis-server)
  gateway-2i  two widget-gateway instances --threads 1 sharing one redis-server, the load split
              over both (one wg-bench per instance, half the connections each)
  nginx       nginx proxy_cache (bench/run.sh's configuration)
  varnish     Varnish (bench/run.sh's configuration, the TTL from the boundary)

The system under test is pinned to CPU 0; the stub, redis-server and wg-bench to the other
CPU(s), as bench/run.sh does. Everything listens on 127.0.0.1 only, and every process started
here is stopped when the script ends, however it ends.

Results: bench/results/<UTC time>-refresh-day/ (or --out DIR): report.md (the tables),
per-second.tsv (upstream calls and the visitors' answers, slow answers and p99 per second
around the boundary), json/ (wg-bench's JSON of each run), gateway/ (the configuration and the
gateway's /metrics at the end of each gateway run).

Python 3 standard library only.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

from harness import build, machine, nginx_conf, pinning, results, varnish_conf
from harness.console import Failure, Interrupted, Logger, UsageError
from harness.durations import to_ms
from harness.loopback import free_port, get, wait_port
from harness.processes import managed_processes
from harness.redis import Redis
from harness.services import Gateway, Stub, first_widget_id

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_DIR = os.path.join(ROOT, "bench")
SYSTEMS = ("gateway-2t", "gateway-2i", "nginx", "varnish")
SYSTEM_TITLES = {
    "gateway-2t": "gateway, 1 instance, --threads 2",
    "gateway-2i": "gateway, 2 instances × --threads 1, one Redis",
    "nginx": "nginx proxy_cache, 1 worker",
    "varnish": "Varnish, malloc 256m",
}
# How long before the warm-up starts a system must be up (stub rendered, system listening).
STARTUP_MARGIN_S = 15
GATEWAY_JITTER = "30s"

log = Logger("refresh-day")


def whole_minutes(text, what):
    ms = to_ms(text)
    if ms <= 0 or ms % 60000:
        raise UsageError(f"{what} must be a whole number of minutes (e.g. 2m), got {text}")
    return ms // 60000


# ----------------------------------------------------------------------------- configurations
def nginx_config(folder, port, stub_port):
    """bench/run.sh's proxy_cache with one worker; the 1 h proxy_cache_valid is the fallback
    only: the stub's Cache-Control (max-age to the boundary) and Expires take precedence, so
    every copy expires at the boundary; stale copies are served while one background update
    refreshes them."""
    return nginx_conf.proxy_cache(
        folder, port, stub_port, "3600s", writer="bench/refresh-day.py",
        ttl_comment="      # Upstream's Cache-Control / Expires (the boundary) win over this.\n")


def varnish_config(stub_port):
    """bench/run.sh's VCL with the TTL of a 200 taken from the boundary: the stub's Expires
    (std.time of it, less now; without one, an hour as in bench/run.sh), so every copy expires
    at the boundary; 24 h grace as there."""
    return varnish_conf.vcl(stub_port, "std.time(beresp.http.Expires, now + 1h) - now",
                            writer="bench/refresh-day.py", import_std=True)


def gateway_toml(boundary):
    hhmm = datetime.datetime.fromtimestamp(boundary, datetime.timezone.utc).strftime("%H:%M")
    return f"""\
# Written by bench/refresh-day.py: upstream's daily refresh at the run's boundary, {hhmm} UTC.
# Every copy stored before it is fresh until the boundary plus a random 0..{GATEWAY_JITTER}, then
# served stale while one refresh per key (fleet-wide) replaces it. Access logging off, as for
# nginx and Varnish.
[cache]
refresh_at = "{hhmm}"
utc_offset = "+00:00"
refresh_lag = "0s"
jitter = "{GATEWAY_JITTER}"
max_ttl = "24h"
min_ttl = "0s"
[log]
access_log = "off"
[access]
# The load generator is one client address asking for many widgets nobody has fetched yet (all
# valid): the per-client limit on such lookups would measure itself.
unknown_per_ip_rate = 0
"""


# ----------------------------------------------------------------------------- one system's run
class Run:
    """One system: its processes, its boundary, its wg-bench runs and the stub's counter."""

    def __init__(self, ctx, system):
        self.ctx = ctx
        self.system = system
        self.processes = ctx.processes
        self.started = []  # this run's processes, stopped at its end
        self.targets = []  # (label, port)
        self.gateways = []
        self.readings = {}  # whole unix second k -> the stub's total just before k
        self.boundary = None
        self.stub = None

    def start(self, name, argv, cpus):
        """Starts a process of this run, pinned to the "server" or the "other" CPUs."""
        process = self.processes.start(name, argv, pin=self.ctx.pins[cpus])
        self.started.append(process)
        return process

    def stop(self):
        for process in reversed(self.started):
            self.processes.stop(process)
        self.started = []

    # --- the pieces
    def start_stub(self):
        c = self.ctx
        self.stub = Stub(self.processes, c.bin("widget-upstream-stub"), c.widgets,
                         pin=c.pins["other"], name=f"{self.system}-stub",
                         extra=("--cache-mb", "2048", "--prerender",
                                "--expires-at", self.boundary))
        self.started.append(self.stub.process)
        with open(c.ids_file, "wb") as f:
            f.write(self.stub.widgets_json())

    def start_gateways(self, instances, threads):
        c = self.ctx
        conf = os.path.join(c.results, "gateway", f"{self.system}.toml")
        with open(conf, "w") as f:
            f.write(gateway_toml(self.boundary))
        redis = Redis(self.processes, name=f"{self.system}-redis", pin=c.pins["other"])
        redis.start()
        self.started.append(redis.process)
        for i in range(instances):
            gateway = Gateway(self.processes, c.bin("widget-gateway"), conf, self.stub.port,
                              redis.port, threads, pin=c.pins["server"],
                              name=f"{self.system}-gateway-{i}")
            self.started.append(gateway.process)
            self.gateways.append(gateway)
            self.targets.append((f"{self.system}-{i}" if instances > 1 else self.system,
                                 gateway.port))

    def start_nginx(self):
        c = self.ctx
        d = os.path.join(c.work, f"nginx-{self.system}")
        os.makedirs(os.path.join(d, "cache"))
        os.makedirs(os.path.join(d, "tmp"))
        port = free_port()
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(nginx_config(d, port, self.stub.port))
        shutil.copy(conf, os.path.join(c.results, "nginx.conf"))
        self.start(f"{self.system}-nginx", [
            "nginx", "-p", d, "-c", conf, "-e", os.path.join(d, "error.log")], "server")
        if not wait_port(port):
            raise Failure("nginx did not start: " + open(os.path.join(d, "error.log")).read())
        self.targets.append((self.system, port))

    def start_varnish(self):
        c = self.ctx
        d = os.path.join(c.work, f"varnish-{self.system}")
        os.makedirs(d)
        port = free_port()
        vcl = os.path.join(d, "bench.vcl")
        with open(vcl, "w") as f:
            f.write(varnish_config(self.stub.port))
        shutil.copy(vcl, os.path.join(c.results, "varnish.vcl"))
        process = self.start(f"{self.system}-varnish", [
            "varnishd", "-F", "-j", "none", "-n", os.path.join(d, "state"),
            "-a", f"127.0.0.1:{port}", "-T", "none", "-f", vcl, "-s", "malloc,256m"], "server")
        if not wait_port(port, seconds=30):
            raise Failure("varnishd did not start:\n" + process.log_tail())
        self.targets.append((self.system, port))

    def start_system(self):
        if self.system == "gateway-2t":
            self.start_gateways(instances=1, threads=2)
        elif self.system == "gateway-2i":
            self.start_gateways(instances=2, threads=1)
        elif self.system == "nginx":
            self.start_nginx()
        elif self.system == "varnish":
            self.start_varnish()
        # Each target answers a known widget through the stub before the load.
        with open(self.ctx.ids_file, "rb") as f:
            first_id = first_widget_id(f.read())
        for label, port in self.targets:
            status, _ = get(port, f"/api/v1/widgets/widget/{first_id}/remote")
            if status != 200:
                raise Failure(f"{label} answered {status} to a known widget")

    # --- the stub's counter, just before every whole second
    def poll(self, until, stop_event):
        k = int(time.time()) + 1
        while k <= until and not stop_event.is_set():
            delay = k - 0.005 - time.time()
            if delay > 0 and stop_event.wait(delay):
                break
            try:
                self.readings[k] = self.stub.total()
            except (OSError, Failure, ValueError):
                pass  # a missing reading shows as "-"
            k += 1

    # --- the whole run
    def execute(self):
        c = self.ctx
        w, a = c.warmup_min * 60, c.after_min * 60
        for attempt in range(2):
            now = time.time()
            # The first whole UTC minute that leaves time to start everything before the warm-up.
            self.boundary = (int(now + STARTUP_MARGIN_S + w) // 60 + 1) * 60
            start_at = self.boundary - w
            log(f"{self.system}: boundary {utc(self.boundary)} (refresh_at "
                f"{time.strftime('%H:%M', time.gmtime(self.boundary))} UTC); warm-up from "
                f"{utc(start_at)}")
            self.start_stub()
            self.start_system()
            if time.time() < start_at - 3:
                break
            log(f"{self.system}: started too late for this boundary; trying the next minute")
            self.stop()
            self.targets, self.gateways = [], []
        else:
            raise Failure(f"{self.system}: could not start in time for a boundary")
        self.stub.reset()  # zero the counters (the checks above)
        self.stub.set_latency(c.latency_ms)

        n = len(self.targets)
        connections = [c.connections // n + (1 if i < c.connections % n else 0) for i in range(n)]
        args = [[c.bin("wg-bench"), "--target", f"http://127.0.0.1:{port}",
                 "--scenario", c.scenario, "--ids", c.ids_file, "--label", label,
                 "--out", os.path.join(c.results, "json", f"{label}.json"),
                 "--seed", str(i + 1), "--connections", str(connections[i]),
                 "--warmup", f"{w}s", "--duration", f"{a}s", "--slow-above", c.slow_above,
                 "--progress", "off"]
                for i, (label, port) in enumerate(self.targets)]
        # wg-bench's series counts seconds from its own start, which comes after it has built its
        # request pool: measured here with the same arguments, so that its seconds (and minutes)
        # start on whole seconds and the boundary falls on the start of one.
        delay = c.startup_delay(args)
        log(f"{self.system}: wg-bench starts {delay * 1000:.0f} ms after it is launched")

        stop_event = threading.Event()
        poller = threading.Thread(target=self.poll, args=(self.boundary + a + 2, stop_event),
                                  daemon=True)
        poller.start()
        sleep_until(start_at - delay)
        benches = [self.start(f"{label}-wg-bench", argv, "other")
                   for (label, _), argv in zip(self.targets, args)]
        log(f"{self.system}: load on {', '.join(f'127.0.0.1:{p}' for _, p in self.targets)}, "
            f"{c.connections} connections; boundary in {self.boundary - time.time():.0f} s")
        statuses = []
        for process in benches:
            try:
                statuses.append(self.processes.wait(process, timeout=w + a + 60))
            except subprocess.TimeoutExpired:
                self.processes.stop(process)
                statuses.append("timeout")
        sleep_until(self.boundary + a + 2.2)
        stop_event.set()
        poller.join(timeout=5)
        for i, gateway in enumerate(self.gateways):
            with open(os.path.join(c.results, "gateway", f"{self.system}-{i}.metrics"), "w") as f:
                f.write(gateway.metrics_text())
        for process in benches:
            shutil.copy(process.log_path, os.path.join(c.results, "json", f"{process.name}.log"))
        self.stop()
        return self.summarize(statuses)

    # --- figures
    def summarize(self, statuses):
        c = self.ctx
        w, a = c.warmup_min * 60, c.after_min * 60
        reports = []
        for label, _ in self.targets:
            path = os.path.join(c.results, "json", f"{label}.json")
            try:
                with open(path) as f:
                    reports.append(json.load(f))
            except (OSError, ValueError):
                reports.append(None)
        ok = [r for r in reports if r]

        def minute(k):
            """Minute k of the run (0 = the first of the warm-up), merged over the instances."""
            rows = [r["minutes"][k] for r in ok if k < len(r["minutes"])]
            if len(rows) < len(reports) or not rows:
                return None
            return {"responses": sum(x["responses"] for x in rows),
                    "seconds": rows[0]["seconds"],
                    "slow": sum(x.get("slow", 0) for x in rows),
                    "errors": sum(x["errors"] for x in rows),
                    "p99_us": max(x["p99_us"] for x in rows)}

        def calls(t0, t1):  # upstream calls in [boundary + t0, boundary + t1)
            b = self.boundary
            if b + t0 in self.readings and b + t1 in self.readings:
                return self.readings[b + t1] - self.readings[b + t0]
            return None

        w_min = c.warmup_min
        out = {
            "system": self.system,
            "boundary": self.boundary,
            "wg_bench_exit": statuses,
            "before": minute(w_min - 1),
            "after": [minute(w_min + m) for m in range(c.after_min)],
            "calls_before": calls(-w, 0),
            "calls_last_minute": calls(-60, 0),
            "calls_after_minutes": [calls(60 * m, 60 * m + 60) for m in range(c.after_min)],
            "calls_after": calls(0, a),
            "errors": None,
        }
        if ok and len(ok) == len(reports):
            out["errors"] = sum(r["errors_total"] + r["unexpected_status"] for r in ok) + sum(
                s["errors"] for r in ok for s in r["time_series"]["seconds"][:w])
            out["unexpected"] = {}
            for r in ok:
                for code, n in r["unexpected_by_status"].items():
                    out["unexpected"][code] = out["unexpected"].get(code, 0) + n
        # Per second around the boundary: upstream calls, and the visitors' answers, slow answers
        # and p99 (the higher of the instances').
        seconds = []
        for t in range(-w, a):
            row = {"t": t, "unix": self.boundary + t, "upstream": calls(t, t + 1)}
            entries = [r["time_series"]["seconds"][w + t] for r in ok
                       if w + t < len(r["time_series"]["seconds"])]
            if entries and len(entries) == len(reports):
                row["responses"] = sum(e["responses"] for e in entries)
                row["slow"] = sum(e.get("slow", 0) for e in entries)
                row["errors"] = sum(e["errors"] for e in entries)
                row["p99_us"] = max(e["p99_us"] for e in entries)
            seconds.append(row)
        out["seconds"] = seconds
        out["metrics"] = self.gateway_metrics()
        return out

    def gateway_metrics(self):
        """A few of the gateway's counters at the end, summed over instances and labels."""
        wanted = ("wg_stale_served_total", "wg_background_refreshes_total",
                  "wg_upstream_requests_total", "wg_upstream_withheld_total",
                  "wg_coalesced_waiters_total")
        totals = {}
        for i in range(len(self.gateways)):
            path = os.path.join(self.ctx.results, "gateway", f"{self.system}-{i}.metrics")
            if not os.path.exists(path):
                continue
            for line in open(path, encoding="utf-8", errors="replace"):
                name = re.split(r"[{ ]", line, maxsplit=1)[0]
                if name in wanted:
                    try:
                        totals[name] = totals.get(name, 0) + float(line.rsplit(" ", 1)[1])
                    except (ValueError, IndexError):
                        pass
        return totals


def utc(t):
    return time.strftime("%H:%M:%S", time.gmtime(t)) + " UTC"


def sleep_until(t):
    while True:
        left = t - time.time()
        if left <= 0:
            return
        time.sleep(min(left, 0.5) if left > 0.05 else left)


# ----------------------------------------------------------------------------- the whole run
class Context:
    def __init__(self, opts, processes, results):
        self.processes = processes
        self.work = processes.work
        self.results = results
        self.ids_file = os.path.join(self.work, "ids.json")
        self.scenario = opts.scenario
        self.bin_dir = os.path.join(opts.build_dir, "bin")
        # As bench/run.sh pins: the system under test on CPU 0, the rest on the others.
        pins = pinning.default_pinning()
        self.pin_note = pins.note
        self.pins = {"server": pins.server, "other": pins.other}
        runner = scenario_runner(self.bin("wg-bench"), opts.scenario)
        self.widgets = opts.widgets or int(runner["stub_widgets"])
        self.connections = opts.connections or int(runner["connections"])
        self.latency_ms = int(runner["upstream_latency_ms"])
        self.warmup_min = whole_minutes(opts.warmup or f"{int(runner['warmup_ms']) // 1000}s",
                                        "--warmup")
        self.after_min = whole_minutes(opts.after or f"{int(runner['duration_ms']) // 1000}s",
                                       "--after")
        self.slow_above = opts.slow_above
        to_ms(self.slow_above)

    def bin(self, name):
        return os.path.join(self.bin_dir, name)

    def startup_delay(self, args_list):
        """Seconds from launching these wg-bench processes together to their runs' start: each
        is pointed at a listener of its own here; the second connection it opens (after its
        reachability probe) is its first load connection, opened when its series starts."""
        listeners, procs, delays = [], [], []
        try:
            for argv in args_list:
                s = socket.socket()
                s.bind(("127.0.0.1", 0))
                s.listen(256)
                s.settimeout(10)
                listeners.append(s)
            launched = time.time()
            for i, (argv, s) in enumerate(zip(args_list, listeners)):
                probe = list(argv)
                probe[probe.index("--target") + 1] = f"http://127.0.0.1:{s.getsockname()[1]}"
                probe[probe.index("--out") + 1] = os.devnull
                procs.append(self.processes.start(f"calibrate-{i}", probe,
                                                  pin=self.pins["other"]))
            for s in listeners:
                conns = [s.accept()[0] for _ in range(2)]
                delays.append(time.time() - launched)
                for conn in conns:
                    conn.close()
        except OSError:
            return 0.15  # a typical figure on the machine this was written on
        finally:
            for p in procs:
                self.processes.stop(p, grace=1.0)
            for s in listeners:
                s.close()
        return sum(delays) / len(delays)


def scenario_runner(wg_bench, scenario):
    out = subprocess.run([wg_bench, "--scenario", scenario, "--print-runner"], check=True,
                         capture_output=True, text=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def ensure_tools(opts, systems):
    need = ["redis-server", "taskset"]
    if "nginx" in systems:
        need.append("nginx")
    if "varnish" in systems:
        need.append("varnishd")
    missing = build.missing_tools(need)
    if missing:
        if opts.no_install:
            raise Failure(f"missing tools: {' '.join(missing)} (--no-install given)")
        build.install_bench_tools(log, missing)
    build.add_system_bin_dirs_to_path()


def results_folder(opts, stamp):
    out = results.new_folder(opts.out, stamp, "refresh-day")
    for sub in ("json", "gateway"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    return out


# ----------------------------------------------------------------------------- report
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
    head = ["system", "req/s before", "p99 ms before", "slow before"]
    for m in range(after):
        head += [f"p99 ms min +{m + 1}", f"slow min +{m + 1}", f"extra slow min +{m + 1}"]
    head += ["errors", "wg-bench exit"]
    add("| " + " | ".join(head) + " |")
    add("|---|" + "---:|" * (len(head) - 1))
    for r in results:
        b = r["before"]
        row = [SYSTEM_TITLES.get(r["system"], r["system"]),
               fmt(b["responses"] / b["seconds"]) if b and b["seconds"] else "-",
               ms(b["p99_us"]) if b else "-", slow_cell(b)]
        for m in r["after"]:
            row += [ms(m["p99_us"]) if m else "-", slow_cell(m), extra_slow(m, b)]
        errors = fmt(r.get("errors"))
        if r.get("unexpected"):
            errors += " (" + ", ".join(f"{k} x {v}" for k, v in sorted(r["unexpected"].items())) + ")"
        row += [errors, ",".join(str(s) for s in r["wg_bench_exit"])]
        add("| " + " | ".join(row) + " |")
    add("")
    fill = (f"the warm-up's last; the minute(s) before it fill the caches" if w > 1 else
            "the whole warm-up, while the caches fill: run with --warmup 2m for a warm baseline")
    add(f"Before = the minute before the boundary ({fill}); min +1, +2 = the first, second "
        f"minute after it. p99 is that minute's "
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
    add("## Upstream calls")
    add("")
    head = ["system", f"before ({w} min)", "of which the last minute"]
    head += [f"min +{m + 1}" for m in range(after)]
    head += [f"after ({after} min)", "calls per key across the boundary"]
    add("| " + " | ".join(head) + " |")
    add("|---|" + "---:|" * (len(head) - 1))
    for r in results:
        ratio = (f"{r['calls_after'] / r['calls_before']:.2f}"
                 if r["calls_after"] is not None and r["calls_before"] else "-")
        row = [SYSTEM_TITLES.get(r["system"], r["system"]), fmt(r["calls_before"]),
               fmt(r["calls_last_minute"])]
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


# ----------------------------------------------------------------------------- main
def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="bench/run.sh refresh-day",
        description="The daily refresh boundary under load: zipf-site visitors while every cached "
                    "copy expires, for the gateway (2 threads; 2 instances), nginx and Varnish.")
    p.add_argument("--systems", default=",".join(SYSTEMS),
                   help=f"comma-separated subset of {','.join(SYSTEMS)} (default: all, in this order)")
    p.add_argument("--scenario", default=os.path.join(BENCH_DIR, "scenarios", "refresh-day.toml"),
                   help="the load (default bench/scenarios/refresh-day.toml)")
    p.add_argument("--warmup", help="load before the boundary, whole minutes (default: the "
                                    "scenario's, 2m: a minute to fill, a minute of baseline)")
    p.add_argument("--after", help="load after the boundary, whole minutes (default: the "
                                   "scenario's duration, 2m)")
    p.add_argument("--connections", type=int, help="wg-bench connections in all (default: the "
                                                   "scenario's; split over two instances)")
    p.add_argument("--widgets", type=int, help="the stub's widgets (default: the scenario's)")
    p.add_argument("--slow-above", default="10ms",
                   help="an answer slower than this waited for upstream (default 10ms)")
    p.add_argument("--out", help="the run's folder (new or empty; default "
                                 "bench/results/<UTC time>-refresh-day/)")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"),
                   help="Release build directory (default build)")
    p.add_argument("--no-build", action="store_true", help="use the binaries already built")
    p.add_argument("--no-install", action="store_true", help="do not install missing tools")
    p.add_argument("--jobs", type=int, default=2, help="build jobs (default 2)")
    opts = p.parse_args(argv)
    systems = [s for s in opts.systems.split(",") if s]
    for s in systems:
        if s not in SYSTEMS:
            raise UsageError(f"unknown system {s} (have: {', '.join(SYSTEMS)})")
    if not systems:
        raise UsageError("--systems names no system")
    opts.systems = systems
    opts.scenario = os.path.abspath(opts.scenario)
    opts.build_dir = os.path.abspath(opts.build_dir)
    if opts.connections is not None and opts.connections < 2:
        raise UsageError("--connections must be at least 2")
    for flag, value in (("--warmup", opts.warmup), ("--after", opts.after)):
        if value is not None:
            whole_minutes(value, flag)
    to_ms(opts.slow_above)
    return opts


def main(argv):
    command = "bench/run.sh refresh-day" + "".join(f" {a}" for a in argv)
    try:
        opts = parse_args(argv)
    except UsageError as e:
        log(f"error: {e}")
        return 2
    started = time.time()
    status = 0
    try:
        ensure_tools(opts, opts.systems)
        build.release_binaries(not opts.no_build, opts.build_dir, opts.jobs, log)
        results_dir = results_folder(opts, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started)))
        log(f"results: {results_dir}")
        with managed_processes("wg-refresh-day") as processes:
            ctx = Context(opts, processes, results_dir)
            log(f"{os.cpu_count()} CPUs: {ctx.pin_note}")
            system_results, failures = [], []
            log(f"{len(opts.systems)} system(s), about "
                f"{len(opts.systems) * (ctx.warmup_min + ctx.after_min + 1)} minutes")
            for system in opts.systems:
                run = Run(ctx, system)
                try:
                    result = run.execute()
                except (RuntimeError, OSError, subprocess.SubprocessError, ValueError,
                        KeyError) as e:
                    # Recorded, and the other systems go on.
                    log(f"{system}: failed: {type(e).__name__}: {e}")
                    failures.append(f"{system}: {type(e).__name__}: {e}")
                    status = 1
                    continue
                finally:
                    run.stop()
                system_results.append(result)
                if any(s != 0 for s in result["wg_bench_exit"]):
                    status = 1
                log(f"{system}: calls before {result['calls_before']}, after "
                    f"{result['calls_after']}; wg-bench exit {result['wg_bench_exit']}")
        report = write_report(ctx, system_results, failures, started, time.time(), command)
        log(f"report: {report}")
        with open(report) as f:
            sys.stdout.write(f.read())
    except UsageError as e:
        log(f"error: {e}")
        status = 2
    except (Interrupted, KeyboardInterrupt):
        log("interrupted: every process started was stopped")
        status = 130
    except Exception as e:  # noqa: BLE001 - report (everything is stopped by now), fail
        log(f"error: {type(e).__name__}: {e}")
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
