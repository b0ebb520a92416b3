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
  gateway-2t  widget-gateway --threads 2 (one instance, its own redis-server), prefetch off;
              its access log is then replayed with --what-if, beside the calls it made
  gateway-prefetch  the same with the prefetch after the refresh on (cache.prefetch): the keys
              asked at least twice in the warm-up, fetched again within PREFETCH_WINDOW of the
              boundary, inside the copies' jitter
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

Python 3 standard library only. What it shares with bench/run.sh (processes, redis-server, the
stub, the gateway, nginx's and Varnish's configurations, pinning, build) is in bench/harness/,
and so is its report (harness/refresh_day_report.py).
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

from harness import ROOT, SCENARIO_DIR, build, nginx_conf, pinning, results, varnish_conf
from harness.console import Failure, Interrupted, Logger, UsageError
from harness.durations import to_ms
from harness.loopback import free_port, get, wait_port
from harness.processes import managed_processes
from harness.redis import Redis
from harness.refresh_day_report import GATEWAY_JITTER, write_report
from harness.scenarios import runner_values
from harness.services import Gateway, Stub, first_widget_id

SYSTEMS = ("gateway-2t", "gateway-prefetch", "gateway-2i", "nginx", "varnish")
# The prefetch's window: within the copies' jitter (GATEWAY_JITTER), so that what it fetches
# again is fetched before visitors find it expired.
PREFETCH_WINDOW = "20s"
# A monthly limit large enough never to bind: the prefetch's budget is shown beside its calls.
MONTHLY_LIMIT = 3_000_000
# How long before the warm-up starts a system must be up (stub rendered, system listening).
STARTUP_MARGIN_S = 15

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


def gateway_toml(boundary, prefetch, access_log):
    hhmm = datetime.datetime.fromtimestamp(boundary, datetime.timezone.utc).strftime("%H:%M")
    return f"""\
# Written by bench/refresh-day.py: upstream's daily refresh at the run's boundary, {hhmm} UTC.
# Every copy stored before it is fresh until the boundary plus a random 0..{GATEWAY_JITTER}, then
# served stale while one refresh per key (fleet-wide) replaces it; with the prefetch on, the keys
# asked at least twice before the boundary are fetched again within {PREFETCH_WINDOW} of it.
# Access logging off as for nginx and Varnish, but where a replay (--what-if) reads it.
[cache]
refresh_at = "{hhmm}"
utc_offset = "+00:00"
refresh_lag = "0s"
jitter = "{GATEWAY_JITTER}"
max_ttl = "24h"
min_ttl = "0s"
prefetch = {"true" if prefetch else "false"}
prefetch_window = "{PREFETCH_WINDOW}"
[quota]
monthly_limit = {MONTHLY_LIMIT}
[log]
access_log = "{access_log}"
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
        self.access_log = None
        self.gateway_conf = None
        self.total_calls = None  # the stub's count over the whole load

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
        self.access_log = (os.path.join(c.results, "gateway", f"{self.system}.access.log")
                           if self.system in ("gateway-2t", "gateway-prefetch") else None)
        with open(conf, "w") as f:
            f.write(gateway_toml(self.boundary, self.system == "gateway-prefetch",
                                 self.access_log or "off"))
        self.gateway_conf = conf
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
        if self.system in ("gateway-2t", "gateway-prefetch"):
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
        # The gateways' counters at the boundary, so that what visitors met after it (misses,
        # stale answers) is told apart from the warm-up's fill.
        at_boundary = threading.Timer(max(0.0, self.boundary - 0.2 - time.time()),
                                      self.save_metrics, args=("boundary",))
        at_boundary.daemon = True
        at_boundary.start()
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
        at_boundary.cancel()
        self.save_metrics("end")
        try:
            self.total_calls = self.stub.total()
        except (OSError, Failure, ValueError):
            self.total_calls = None
        for process in benches:
            shutil.copy(process.log_path, os.path.join(c.results, "json", f"{process.name}.log"))
        self.stop()
        summary = self.summarize(statuses)
        summary["prefetch"] = self.prefetch_done()
        summary["what_if"] = self.what_if()
        return summary

    def metrics_path(self, i, when):
        suffix = "" if when == "end" else f"-{when}"
        return os.path.join(self.ctx.results, "gateway", f"{self.system}-{i}{suffix}.metrics")

    def save_metrics(self, when):
        for i, gateway in enumerate(self.gateways):
            try:
                text = gateway.metrics_text()
            except (OSError, Failure, ValueError) as e:
                log(f"{self.system}: metrics at {when}: {e}")
                continue
            with open(self.metrics_path(i, when), "w") as f:
                f.write(text)

    def prefetch_done(self):
        """The leading instance's prefetch_done event (its stderr), if it led one."""
        for gateway in self.gateways:
            try:
                text = open(gateway.process.log_path, encoding="utf-8", errors="replace").read()
            except OSError:
                continue
            for line in text.splitlines():
                if '"event":"prefetch_done"' in line:
                    try:
                        return json.loads(line)
                    except ValueError:
                        pass
        return None

    def what_if(self):
        """The replay of the gateway's access log (without the prefetch, which a replay does not
        model) beside the calls the stub counted over the same load."""
        if self.system != "gateway-2t" or not self.access_log or not os.path.exists(self.access_log):
            return None
        answer = subprocess.run([self.ctx.bin("widget-gateway"), "--what-if", self.access_log,
                                 "--config", self.gateway_conf], capture_output=True, text=True,
                                timeout=300)
        if answer.returncode != 0:
            return {"error": answer.stderr.strip()}
        predicted = json.loads(answer.stdout)
        predicted["measured_upstream_requests"] = self.total_calls
        return predicted

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
        """A few of the gateway's counters at the end, summed over instances and labels, and
        the visitors' answers by cache result after the boundary (end less boundary)."""
        wanted = ("wg_stale_served_total", "wg_background_refreshes_total",
                  "wg_upstream_requests_total", "wg_upstream_withheld_total",
                  "wg_coalesced_waiters_total")
        end, at_boundary = self.counters("end"), self.counters("boundary")
        totals = {name: v for (name, _), v in end.items() if name in wanted}
        for (name, result), v in end.items():
            if name == "by_result" and at_boundary:
                totals[f"after_{result}"] = v - at_boundary.get((name, result), 0)
        return totals

    def counters(self, when):
        """{(name, ""): sum} for every counter, and {("by_result", cache): sum} of the answers
        to visitors (wg_requests_total by its cache label), over the instances."""
        out = {}
        for i in range(len(self.gateways)):
            path = self.metrics_path(i, when)
            if not os.path.exists(path):
                return {}
            for line in open(path, encoding="utf-8", errors="replace"):
                if line.startswith("#"):
                    continue
                name = re.split(r"[{ ]", line, maxsplit=1)[0]
                try:
                    value = float(line.rsplit(" ", 1)[1])
                except (ValueError, IndexError):
                    continue
                out[(name, "")] = out.get((name, ""), 0) + value
                cache = re.search(r'cache="([a-z]+)"', line)
                if name == "wg_requests_total" and cache:
                    key = ("by_result", cache.group(1))
                    out[key] = out.get(key, 0) + value
        return out


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
        runner = runner_values(self.bin("wg-bench"), opts.scenario)
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


# ----------------------------------------------------------------------------- main
def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="bench/run.sh refresh-day",
        description="The daily refresh boundary under load: zipf-site visitors while every cached "
                    "copy expires, for the gateway (2 threads; 2 instances), nginx and Varnish.")
    p.add_argument("--compare", action="store_true",
                   help="every system: the gateway with the prefetch off and on, two instances, "
                        "nginx and Varnish (the default; as run.sh's --compare)")
    p.add_argument("--systems", default=",".join(SYSTEMS),
                   help=f"comma-separated subset of {','.join(SYSTEMS)} (default: all, in this order)")
    p.add_argument("--scenario", default=os.path.join(SCENARIO_DIR, "refresh-day.toml"),
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
    if opts.compare and opts.systems != ",".join(SYSTEMS):
        raise UsageError("--compare runs every system: leave --systems out")
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
