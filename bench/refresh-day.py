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
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

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


def log(message):
    print(f"[refresh-day] {message}", file=sys.stderr, flush=True)


class UsageError(Exception):
    pass


def to_ms(text):
    """'500ms', '10s', '2m', '1h' -> milliseconds."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text or "")
    if not match:
        raise UsageError(f"bad duration {text!r} (expected e.g. 500ms, 10s, 2m)")
    factor = {"ms": 1, "s": 1000, "m": 60000, "h": 3600000}[match.group(2)]
    return int(float(match.group(1)) * factor + 0.5)


def whole_minutes(text, what):
    ms = to_ms(text)
    if ms <= 0 or ms % 60000:
        raise UsageError(f"{what} must be a whole number of minutes (e.g. 2m), got {text}")
    return ms // 60000


# ----------------------------------------------------------------------------- HTTP (loopback)
# No proxy from the environment, ever: everything here is on 127.0.0.1.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http(method, port, path, timeout=5.0):
    """(status, body bytes) of METHOD http://127.0.0.1:PORT/PATH."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def stub_total(port):
    status, body = http("GET", port, "/__stub/stats", timeout=2.0)
    if status != 200:
        raise RuntimeError(f"/__stub/stats answered {status}")
    return int(json.loads(body)["total"])


# ----------------------------------------------------------------------------- processes
def ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
        return low if low > 12000 else 32768
    except (OSError, ValueError, IndexError):
        return 32768


def port_open(port):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def free_port():
    """A loopback port nobody listens on, below the ephemeral range (as bench/run.sh picks)."""
    low = ephemeral_low()
    for _ in range(200):
        port = random.randrange(10000, low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        if not port_open(port):
            return port
    raise RuntimeError("no free loopback port")


def wait_port(port, seconds=15.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if port_open(port):
            return True
        time.sleep(0.05)
    return False


class Processes:
    """Background processes, each in its own process group, all stopped by stop_all()."""

    def __init__(self, work, pin):
        self.work = work
        self.pin = pin  # {"server": "0", "other": "1"} or None (one CPU: nothing pinned)
        self.running = []

    def start(self, name, argv, cpus=None):
        """Starts argv (pinned to `cpus`, "server" or "other"), output to WORK/NAME.log."""
        if self.pin and cpus:
            argv = ["taskset", "-c", self.pin[cpus]] + list(argv)
        path = os.path.join(self.work, f"{name}.log")
        logfile = open(path, "wb")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logfile,
                                stderr=subprocess.STDOUT, start_new_session=True)
        proc.log_path = path
        proc.logfile = logfile
        proc.name = name
        self.running.append(proc)
        return proc

    def stop(self, proc, grace=10.0):
        if proc not in self.running:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                # Not gone in time: its whole group (nginx's workers, Varnish's child).
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
        proc.logfile.close()
        self.running.remove(proc)

    def stop_all(self):
        for proc in reversed(list(self.running)):
            self.stop(proc, grace=5.0)

    @staticmethod
    def listen_port(proc, listener, seconds=15.0):
        """The port of the '"listener":"NAME","address":"...:PORT"' line in the process's log."""
        pattern = re.compile(r'"listener":"%s","address":"[^"]*:(\d+)"' % re.escape(listener))
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with open(proc.log_path, "rb") as f:
                match = pattern.search(f.read().decode("utf-8", "replace"))
            if match:
                return int(match.group(1))
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        with open(proc.log_path, "rb") as f:
            tail = f.read().decode("utf-8", "replace")[-2000:]
        raise RuntimeError(f"{proc.name}: no listening line for {listener}:\n{tail}")


# ----------------------------------------------------------------------------- configurations
# The same as bench/run.sh's start_nginx (nginx_conf_head + the proxy_cache server), with one
# worker and the 1 h proxy_cache_valid as the fallback only: the stub's Cache-Control (max-age
# to the boundary) and Expires take precedence over proxy_cache_valid, so every copy expires at
# the boundary; stale copies are served while one background update refreshes them.
NGINX_CONF = """\
# Written by bench/refresh-day.py: nginx proxy_cache as an equivalent cache in front of the stub.
{user_line}worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
worker_rlimit_nofile 40000;
events {{ worker_connections 16384; }}
http {{
  access_log off;
  client_body_temp_path {dir}/tmp/body;
  proxy_temp_path {dir}/tmp/proxy;
  fastcgi_temp_path {dir}/tmp/fastcgi;
  uwsgi_temp_path {dir}/tmp/uwsgi;
  scgi_temp_path {dir}/tmp/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 60s;
  proxy_cache_path {dir}/cache levels=1:2 keys_zone=wg:32m max_size=1g inactive=1d use_temp_path=off;
  upstream stub {{
    server 127.0.0.1:{stub_port};
    keepalive 64;
  }}
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    location /api/v1/widgets/widget/ {{
      proxy_pass http://stub;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_connect_timeout 2s;
      proxy_read_timeout 10s;
      proxy_cache wg;
      proxy_cache_key $request_uri;
      # Upstream's Cache-Control / Expires (the boundary) win over this.
      proxy_cache_valid 200 3600s;
      proxy_cache_valid 400 404 5m;
      proxy_cache_lock on;
      proxy_cache_lock_timeout 10s;
      proxy_cache_lock_age 10s;
      proxy_cache_use_stale error timeout updating http_500 http_502 http_503 http_504;
      proxy_cache_background_update on;
      add_header X-Cache-Status $upstream_cache_status always;
    }}
    location / {{ return 404; }}
  }}
}}
"""

# bench/run.sh's start_varnish VCL, with the TTL of a 200 taken from the boundary: the stub's
# Expires (std.time of it, less now), so every copy expires at the boundary; 24 h grace as there
# (stale while revalidating, and kept when a refresh fails).
VARNISH_VCL = """\
vcl 4.1;
# Written by bench/refresh-day.py: Varnish as an equivalent cache in front of the stub.
import std;
backend stub {{
  .host = "127.0.0.1";
  .port = "{stub_port}";
  .connect_timeout = 2s;
  .first_byte_timeout = 10s;
  .between_bytes_timeout = 10s;
}}
sub vcl_recv {{
  if (req.url !~ "^/api/v1/widgets/widget/") {{ return (synth(404)); }}
  if (req.method != "GET" && req.method != "HEAD") {{ return (pass); }}
  unset req.http.Cookie;
  return (hash);
}}
sub vcl_backend_response {{
  if (beresp.status == 200) {{
    # Until the boundary (upstream's Expires); without one, an hour as in bench/run.sh.
    set beresp.ttl = std.time(beresp.http.Expires, now + 1h) - now;
    set beresp.grace = 24h;  # stale while revalidating, and kept when a refresh fails
  }} elsif (beresp.status == 400 || beresp.status == 404) {{
    set beresp.ttl = 5m;
  }} else {{
    if (bereq.is_bgfetch) {{ return (abandon); }}  # keep serving the stale copy
    set beresp.ttl = 0s;
    set beresp.uncacheable = true;
  }}
  return (deliver);
}}
sub vcl_backend_error {{
  if (bereq.is_bgfetch) {{ return (abandon); }}
}}
sub vcl_deliver {{
  if (obj.hits > 0) {{ set resp.http.X-Cache = "hit"; }} else {{ set resp.http.X-Cache = "miss"; }}
}}
"""


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
        self.procs = ctx.procs
        self.started = []  # this run's processes, stopped at its end
        self.targets = []  # (label, port, seed, connections)
        self.admin_ports = []
        self.readings = {}  # whole unix second k -> the stub's total just before k
        self.boundary = None
        self.stub_port = None

    def start(self, name, argv, cpus):
        proc = self.procs.start(name, argv, cpus)
        self.started.append(proc)
        return proc

    def stop(self):
        for proc in reversed(self.started):
            self.procs.stop(proc)
        self.started = []

    # --- the pieces
    def start_stub(self):
        c = self.ctx
        proc = self.start(f"{self.system}-stub", [
            c.bin("widget-upstream-stub"), "--listen", "127.0.0.1:0", "--widgets",
            str(c.widgets), "--seed", "1", "--cache-mb", "2048", "--prerender",
            "--expires-at", str(self.boundary)], "other")
        self.stub_port = Processes.listen_port(proc, "stub", seconds=300)
        status, body = http("GET", self.stub_port, "/__stub/widgets", timeout=30)
        if status != 200:
            raise RuntimeError(f"the stub's /__stub/widgets answered {status}")
        with open(c.ids_file, "wb") as f:
            f.write(body)

    def start_redis(self):
        port = free_port()
        redis_dir = os.path.join(self.ctx.work, f"redis-{self.system}")
        os.makedirs(redis_dir, exist_ok=True)
        self.start(f"{self.system}-redis", [
            "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", redis_dir, "--protected-mode", "yes"], "other")
        if not wait_port(port):
            raise RuntimeError("redis-server did not start")
        return port

    def start_gateways(self, instances, threads):
        c = self.ctx
        conf = os.path.join(c.results, "gateway", f"{self.system}.toml")
        with open(conf, "w") as f:
            f.write(gateway_toml(self.boundary))
        redis_port = self.start_redis()
        for i in range(instances):
            proc = self.start(f"{self.system}-gateway-{i}", [
                c.bin("widget-gateway"), "--config", conf, "--listen", "127.0.0.1:0",
                "--admin-listen", "127.0.0.1:0", "--upstream", f"http://127.0.0.1:{self.stub_port}",
                "--redis", f"redis://127.0.0.1:{redis_port}/0", "--threads", str(threads)],
                "server")
            port = Processes.listen_port(proc, "public")
            self.admin_ports.append(Processes.listen_port(proc, "admin"))
            self.targets.append((f"{self.system}-{i}" if instances > 1 else self.system, port))

    def start_nginx(self):
        c = self.ctx
        d = os.path.join(c.work, f"nginx-{self.system}")
        os.makedirs(os.path.join(d, "cache"))
        os.makedirs(os.path.join(d, "tmp"))
        port = free_port()
        # As root, nginx would switch its worker to an account that cannot write under DIR.
        user_line = ""
        if os.geteuid() == 0:
            import grp
            import pwd
            pw = pwd.getpwuid(os.geteuid())
            user_line = f"user {pw.pw_name} {grp.getgrgid(pw.pw_gid).gr_name};\n"
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(user_line=user_line, dir=d, stub_port=self.stub_port, port=port))
        shutil.copy(conf, os.path.join(c.results, "nginx.conf"))
        self.start(f"{self.system}-nginx", [
            c.tool("nginx"), "-p", d, "-c", conf, "-e", os.path.join(d, "error.log")], "server")
        if not wait_port(port):
            raise RuntimeError("nginx did not start: " + open(os.path.join(d, "error.log")).read())
        self.targets.append((self.system, port))

    def start_varnish(self):
        c = self.ctx
        d = os.path.join(c.work, f"varnish-{self.system}")
        os.makedirs(d)
        port = free_port()
        vcl = os.path.join(d, "bench.vcl")
        with open(vcl, "w") as f:
            f.write(VARNISH_VCL.format(stub_port=self.stub_port))
        shutil.copy(vcl, os.path.join(c.results, "varnish.vcl"))
        proc = self.start(f"{self.system}-varnish", [
            c.tool("varnishd"), "-F", "-j", "none", "-n", os.path.join(d, "state"),
            "-a", f"127.0.0.1:{port}", "-T", "none", "-f", vcl, "-s", "malloc,256m"], "server")
        if not wait_port(port, seconds=30):
            with open(proc.log_path, "rb") as f:
                raise RuntimeError("varnishd did not start:\n" + f.read().decode("utf-8", "replace"))
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
        first_id = json.load(open(self.ctx.ids_file))[0]["id"]
        for label, port in self.targets:
            status, _ = http("GET", port, f"/api/v1/widgets/widget/{first_id}/remote", timeout=10)
            if status != 200:
                raise RuntimeError(f"{label} answered {status} to a known widget")

    # --- the stub's counter, just before every whole second
    def poll(self, until, stop_event):
        k = int(time.time()) + 1
        while k <= until and not stop_event.is_set():
            delay = k - 0.005 - time.time()
            if delay > 0 and stop_event.wait(delay):
                break
            try:
                self.readings[k] = stub_total(self.stub_port)
            except (OSError, RuntimeError, ValueError):
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
            self.targets, self.admin_ports = [], []
        else:
            raise RuntimeError(f"{self.system}: could not start in time for a boundary")
        http("POST", self.stub_port, "/__stub/reset")  # zero the counters (the checks above)
        http("POST", self.stub_port, f"/__stub/latency?ms={c.latency_ms}")

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
        for proc in benches:
            try:
                statuses.append(proc.wait(timeout=w + a + 60))
            except subprocess.TimeoutExpired:
                self.procs.stop(proc)
                statuses.append("timeout")
        sleep_until(self.boundary + a + 2.2)
        stop_event.set()
        poller.join(timeout=5)
        for i, admin in enumerate(self.admin_ports):
            try:
                _, body = http("GET", admin, "/metrics")
                with open(os.path.join(c.results, "gateway", f"{self.system}-{i}.metrics"), "wb") as f:
                    f.write(body)
            except OSError:
                pass
        for proc in benches:
            shutil.copy(proc.log_path, os.path.join(c.results, "json", f"{proc.name}.log"))
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
        for i in range(len(self.admin_ports)):
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
    def __init__(self, opts, work, results):
        self.work = work
        self.results = results
        self.ids_file = os.path.join(work, "ids.json")
        self.scenario = opts.scenario
        self.bin_dir = os.path.join(opts.build_dir, "bin")
        ncpu = os.cpu_count() or 1
        if ncpu >= 2:
            other = "1" if ncpu == 2 else f"1-{ncpu - 1}"
            self.pin_note = (f"the system under test is pinned to CPU 0; wg-bench, the stub and "
                             f"redis-server to CPU(s) {other} (taskset)")
            pin = {"server": "0", "other": other}
        else:
            self.pin_note = "one CPU: nothing is pinned, load generator and server share it"
            pin = None
        self.procs = Processes(work, pin)
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

    @staticmethod
    def tool(name):
        return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin") or name

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
                procs.append(self.procs.start(f"calibrate-{i}", probe, "other"))
            for s in listeners:
                conns = [s.accept()[0] for _ in range(2)]
                delays.append(time.time() - launched)
                for conn in conns:
                    conn.close()
        except OSError:
            return 0.15  # a typical figure on the machine this was written on
        finally:
            for p in procs:
                self.procs.stop(p, grace=1.0)
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
    missing = [t for t in need if not Context.tool(t) or not shutil.which(Context.tool(t))]
    if not missing:
        return
    if opts.no_install:
        raise RuntimeError(f"missing tools: {' '.join(missing)} (--no-install given)")
    log(f"installing missing tools ({' '.join(missing)}) with deploy/install-deps.sh --bench-tools")
    subprocess.run([os.path.join(ROOT, "deploy", "install-deps.sh"), "--bench-tools"], check=True)


def build(opts):
    """As bench/lib/build.sh: the three binaries in Release, nothing else."""
    if not opts.no_build:
        log(f"building Release in {opts.build_dir}")
        subprocess.run(["cmake", "-S", ROOT, "-B", opts.build_dir, "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=Release"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", opts.build_dir, "-j", str(opts.jobs), "--target",
                        "widget-gateway", "widget-upstream-stub", "wg-bench"], check=True,
                       stdout=sys.stderr)
    for b in ("widget-gateway", "widget-upstream-stub", "wg-bench"):
        if not os.access(os.path.join(opts.build_dir, "bin", b), os.X_OK):
            raise RuntimeError(f"{opts.build_dir}/bin/{b} is missing (build first or drop --no-build)")


def results_folder(opts, stamp):
    if opts.out:
        out = os.path.abspath(opts.out)
        if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
            raise UsageError(f"--out {opts.out} is not an empty folder (a run never overwrites another)")
        os.makedirs(out, exist_ok=True)
    else:
        base = os.path.join(BENCH_DIR, "results")
        os.makedirs(base, exist_ok=True)
        out = os.path.join(base, f"{stamp}-refresh-day")
        i = 2
        while True:
            try:
                os.mkdir(out)
                break
            except FileExistsError:
                out = os.path.join(base, f"{stamp}-refresh-day-{i}")
                i += 1
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
    add(f"- Source: {git_describe()}")
    add(f"- Machine: {cpu_model()}, {os.cpu_count()} CPU(s); {ctx.pin_note}")
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


def git_describe():
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


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


def on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


def main(argv):
    command = "bench/run.sh refresh-day" + "".join(f" {a}" for a in argv)
    try:
        opts = parse_args(argv)
    except UsageError as e:
        log(f"error: {e}")
        return 2
    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGHUP, on_sigterm)
    started = time.time()
    work = tempfile.mkdtemp(prefix="wg-refresh-day.")
    ctx = None
    status = 0
    try:
        ensure_tools(opts, opts.systems)
        os.environ["PATH"] += ":/usr/sbin:/sbin"
        build(opts)
        results_dir = results_folder(opts, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started)))
        log(f"results: {results_dir}")
        ctx = Context(opts, work, results_dir)
        log(f"{os.cpu_count()} CPUs: {ctx.pin_note}")
        results = []
        failures = []
        log(f"{len(opts.systems)} system(s), about "
            f"{len(opts.systems) * (ctx.warmup_min + ctx.after_min + 1)} minutes")
        for system in opts.systems:
            run = Run(ctx, system)
            try:
                result = run.execute()
            except (RuntimeError, OSError, subprocess.SubprocessError, ValueError, KeyError) as e:
                # Recorded, and the other systems go on.
                log(f"{system}: failed: {type(e).__name__}: {e}")
                failures.append(f"{system}: {type(e).__name__}: {e}")
                status = 1
                continue
            finally:
                run.stop()
            results.append(result)
            if any(s != 0 for s in result["wg_bench_exit"]):
                status = 1
            log(f"{system}: calls before {result['calls_before']}, after {result['calls_after']}; "
                f"wg-bench exit {result['wg_bench_exit']}")
        report = write_report(ctx, results, failures, started, time.time(), command)
        log(f"report: {report}")
        with open(report) as f:
            sys.stdout.write(f.read())
    except UsageError as e:
        log(f"error: {e}")
        status = 2
    except KeyboardInterrupt:
        log("interrupted")
        status = 130
    except SystemExit as e:
        log("stopped by a signal")
        status = e.code if isinstance(e.code, int) else 1
    except Exception as e:  # noqa: BLE001 - report, stop everything, fail
        log(f"error: {type(e).__name__}: {e}")
        status = 1
    finally:
        if ctx:
            ctx.procs.stop_all()
        shutil.rmtree(work, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
