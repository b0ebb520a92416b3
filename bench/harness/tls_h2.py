"""bench/tls-h2.sh: the hit path over HTTPS, side by side with nginx.

HTTP/1.1 over TLS and HTTP/2 over TLS, driven by wg-bench (closed loop, one io thread) and by
h2load (nghttp2's load generator, one thread), same certificate, same key, TLS 1.3, one gateway
thread against one nginx worker; and a handshake-heavy cell: a new connection for every request
(openssl s_time, two clients at once), with session resumption off (a full handshake each time)
and on (-reuse: TLS 1.3 session tickets). The gateway serves from its cache (a widget warmed
first); nginx serves the same URL from proxy_cache in front of the same stub. Runs alternate
(gateway, nginx, gateway, ...) so that a noisy neighbour hurts both alike; the figures are
medians and their ratio. Results go to DIR (default bench/results/<UTC time>-tls-h2/), never to
tracked files.
"""

import http.client
import json
import os
import re
import ssl
import subprocess
import sys
import time

from . import ROOT, RESULTS_ROOT, build, machine, nginx_conf
from .console import Failure, Logger, UsageError
from .loopback import free_port, wait_port
from .processes import managed_processes
from .redis import Redis
from .runs_table import median_of
from .services import Gateway, Stub, first_widget_id

log = Logger("tls-h2")

USAGE = """\
usage: bench/tls-h2.sh [--duration 8s] [--reps 3] [--out DIR] [--build-dir DIR] [--no-build]
"""
PROTOCOL_NAMES = {"h1": "HTTP/1.1 + TLS", "h2": "HTTP/2 + TLS"}
HANDSHAKE_NAMES = {"new": "full (no resumption)", "reuse": "resumed (session tickets)"}
SYSTEMS = ("gateway", "nginx")

# wg-bench sends only one cached widget's data, over and over.
ONE_WIDGET = """\
name = "tls-h2"
description = "one cached widget, over and over"
pool = 1
[keys]
widgets = 1
[mix]
widget = 1.0
reviews = 0.0
"""


def parse_options(argv):
    opts = {"--duration": "8s", "--reps": "3", "--out": "",
            "--build-dir": os.path.join(ROOT, "build"), "--no-build": False}
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg in ("-h", "--help"):
            return None
        if arg == "--no-build":
            opts[arg] = True
        elif arg in opts and rest:
            opts[arg] = rest.pop(0)
        else:
            raise UsageError(f"unknown option {arg}")
    if not re.fullmatch(r"[1-9][0-9]*s", opts["--duration"]):
        raise UsageError("--duration expects whole seconds (e.g. 8s)")
    if not re.fullmatch(r"[1-9][0-9]*", opts["--reps"]):
        raise UsageError("--reps expects a number")
    return opts


def nginx_config(folder, port, stub_port, cert, key):
    return f"""\
{nginx_conf.user_line()}worker_processes 1;
daemon off;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {folder}/tmp/body;
  proxy_temp_path {folder}/tmp/proxy;
  keepalive_requests 1000000;
  proxy_cache_path {folder}/cache keys_zone=wg:16m inactive=1d use_temp_path=off;
  upstream stub {{ server 127.0.0.1:{stub_port}; keepalive 16; }}
  server {{
    listen 127.0.0.1:{port} ssl http2;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:tls:10m;
    # The gateway's TLS choices (src/http/tls_server_context.cpp), so that both do the same
    # cryptography: TLS 1.3 with AES-128 first, by the server's preference, one ticket.
    ssl_prefer_server_ciphers on;
    ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384;
    ssl_conf_command NumTickets 1;
    http2_max_concurrent_streams 100;
    location / {{
      proxy_pass http://stub;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache wg;
      proxy_cache_key $request_uri;
      proxy_cache_valid 200 1h;
      proxy_cache_lock on;
    }}
  }}
}}
"""


def make_certificate(work):
    """One certificate for both servers (subjectAltName IP:127.0.0.1), from a CA made here."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    p = {name: os.path.join(work, name) for name in
         ("ca.key", "ca.pem", "key.pem", "req.pem", "ext", "cert.pem")}
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-days", "2", "-subj", "/CN=bench-ca", "-keyout", p["ca.key"], "-out", p["ca.pem"])
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
            "/CN=127.0.0.1", "-keyout", p["key.pem"], "-out", p["req.pem"])
    with open(p["ext"], "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", p["req.pem"], "-CA", p["ca.pem"], "-CAkey", p["ca.key"],
            "-CAcreateserial", "-days", "2", "-extfile", p["ext"], "-out", p["cert.pem"])
    return p["ca.pem"], p["cert.pem"], p["key.pem"]


def https_get(port, path, ca):
    connection = http.client.HTTPSConnection(
        "127.0.0.1", port, timeout=10, context=ssl.create_default_context(cafile=ca))
    try:
        connection.request("GET", path)
        connection.getresponse().read()
    finally:
        connection.close()


class Cells:
    """The runs' figures: (cell, system, rep) → the fields of one run."""

    def __init__(self, reps):
        self.reps = reps
        self.figures = {}

    def median(self, cell, system, field):
        """The median over the runs of FIELD, as sort -g | awk print it."""
        texts = sorted((self.figures[cell, system, rep][field] for rep in range(1, self.reps + 1)),
                       key=float)
        if len(texts) % 2:
            return texts[len(texts) // 2]
        return "%.6g" % median_of([float(t) for t in texts])

    def medians(self, cell, field):
        """(gateway, nginx, gateway ÷ nginx)."""
        gateway, nginx = (self.median(cell, s, field) for s in SYSTEMS)
        ratio = float(gateway) / float(nginx) if float(nginx) > 0 else 0
        return gateway, nginx, "%.2f" % ratio


class TlsH2:
    def __init__(self, opts, processes, bin_dir, out):
        self.duration = opts["--duration"]
        self.seconds = self.duration[:-1]
        self.processes = processes
        self.bin_dir = bin_dir
        self.out = out
        self.work = processes.work

    def start(self):
        self.ca, cert, key = make_certificate(self.work)
        redis = Redis(self.processes)
        redis.start()
        stub = Stub(self.processes, os.path.join(self.bin_dir, "widget-upstream-stub"), 20)
        config = os.path.join(self.work, "gateway.toml")
        with open(config, "w") as f:
            f.write(f'[server]\ntls_cert_file = "{cert}"\ntls_key_file = "{key}"\n'
                    '[log]\naccess_log = "off"\n')
        gateway = Gateway(self.processes, os.path.join(self.bin_dir, "widget-gateway"), config,
                          stub.port, redis.port, 1)
        folder = os.path.join(self.work, "nginx")
        os.makedirs(os.path.join(folder, "cache"))
        os.makedirs(os.path.join(folder, "tmp"))
        nginx_port = free_port()
        with open(os.path.join(folder, "nginx.conf"), "w") as f:
            f.write(nginx_config(folder, nginx_port, stub.port, cert, key))
        self.processes.start("nginx", ["nginx", "-p", folder, "-c",
                                       os.path.join(folder, "nginx.conf"), "-e",
                                       os.path.join(folder, "error.log")])
        if not wait_port(nginx_port):
            raise Failure("nginx did not start:\n" + open(os.path.join(folder, "error.log")).read())
        self.ports = {"gateway": gateway.port, "nginx": nginx_port}
        widget_id = first_widget_id(stub.widgets_json(limit=1))
        self.path = f"/api/v1/widgets/widget/{widget_id}/remote"
        for port in self.ports.values():  # warm both caches
            for _ in range(3):
                https_get(port, self.path, self.ca)
        self.ids = os.path.join(self.work, "ids.txt")
        with open(self.ids, "w") as f:
            f.write(widget_id + "\n")
        self.scenario = os.path.join(self.work, "one-widget.toml")
        with open(self.scenario, "w") as f:
            f.write(ONE_WIDGET)

    def wg_bench(self, proto, system, rep):
        """HTTP/1.1 with 64 connections; HTTP/2 with 16 connections x 10 streams; closed loop
        for --duration after 1 s of warm-up → [req/s, mean ms, succeeded, errored]."""
        load = ["--connections", "64"] if proto == "h1" else ["--http2", "--connections", "16",
                                                              "--streams", "10"]
        result = os.path.join(self.out, f"{proto}-{system}-{rep}.json")
        with open(os.path.join(self.out, "wg-bench.log"), "a") as log_file:
            subprocess.run([os.path.join(self.bin_dir, "wg-bench"), "--target",
                            f"https://127.0.0.1:{self.ports[system]}", "--cacert", self.ca,
                            "--scenario", self.scenario, "--ids", self.ids, *load, "--threads",
                            "1", "--duration", self.duration, "--warmup", "1s", "--label", system,
                            "--progress", "off", "--out", result],
                           stdout=log_file, stderr=subprocess.STDOUT)
        try:
            with open(result) as f:
                r = json.load(f)
        except (OSError, ValueError):
            return ["0", "0", "0", "0"]  # no result: wg-bench.log says why
        return ["%.2f" % r["throughput_rps"], "%.3f" % (r["latency_us"]["mean"] / 1000),
                str(r["responses"]), str(r["errors_total"])]

    def h2load(self, proto, system, rep):
        """The same loads from h2load, one thread → [req/s, succeeded, errored]."""
        load = ["--h1", "-c", "64", "-m", "1"] if proto == "h1" else ["-c", "16", "-m", "10"]
        path = os.path.join(self.out, f"h2load-{proto}-{system}-{rep}.log")
        with open(path, "w") as log_file:
            subprocess.run(["h2load", *load, "-t", "1", "-D", self.seconds, "--warm-up-time", "1",
                            f"https://127.0.0.1:{self.ports[system]}{self.path}"],
                           stdout=log_file, stderr=subprocess.STDOUT)
        text = open(path).read().replace(",", "")
        rps = re.search(r"^finished in \S+ (\S+) req/s", text, re.M)
        ok = re.search(r"(\d+) succeeded", text)
        errored = re.search(r"(\d+) errored", text)
        return ["%.2f" % float(rps.group(1) if rps else 0),
                str(int(ok.group(1)) if ok else 0), str(int(errored.group(1)) if errored else 0)]

    def handshakes(self, mode, system, rep):
        """A new TLS connection per request, two openssl s_time clients at once for --duration;
        "new" makes a full handshake each time, "reuse" resumes → [connections/s, bytes per
        connection]."""
        logs = [os.path.join(self.out, f"s_time-{mode}-{system}-{rep}-{i}.log") for i in (1, 2)]
        clients = [self.processes.start(f"s_time-{i}", [
            "openssl", "s_time", "-connect", f"127.0.0.1:{self.ports[system]}", "-CAfile",
            self.ca, f"-{mode}", "-time", self.seconds, "-www", self.path], log_path=log)
            for i, log in enumerate(logs, 1)]
        for client in clients:
            self.processes.wait(client)
        rate, size = 0.0, 0
        for path in logs:
            for match in re.finditer(r"(\d+) connections in ([\d.]+) real seconds, (\d+) bytes",
                                     open(path).read()):
                rate += int(match.group(1)) / float(match.group(2))
                size = int(match.group(3))
        return ["%.2f" % rate, str(size)]

    def measure(self, reps):
        self.bench, self.loads, self.connects = Cells(reps), Cells(reps), Cells(reps)
        for rep in range(1, reps + 1):
            for proto in ("h1", "h2"):
                for system in SYSTEMS:
                    figures = self.bench.figures[proto, system, rep] = self.wg_bench(
                        proto, system, rep)
                    log(f"rep {rep} {proto} {system}: {' '.join(figures)}")
                    figures = self.loads.figures[proto, system, rep] = self.h2load(
                        proto, system, rep)
                    log(f"rep {rep} {proto} {system} (h2load): {' '.join(figures)}")
            for mode in ("new", "reuse"):
                for system in SYSTEMS:
                    figures = self.connects.figures[mode, system, rep] = self.handshakes(
                        mode, system, rep)
                    log(f"rep {rep} handshakes ({mode}) {system}: {' '.join(figures)}")

    def summary(self, reps):
        d = self.duration
        lines = ["# The hit path over TLS: gateway (1 thread) vs nginx (1 worker)", "",
                 f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, {machine.cpu_count()} "
                 f"CPUs ({machine.cpu_model()}),",
                 f"wg-bench {d} per run after 1 s warm-up (closed loop, 1 io thread), {reps} runs "
                 "each, alternating; TLS 1.3.",
                 "HTTP/1.1: 64 connections; HTTP/2: 16 connections x 10 streams. Medians; higher "
                 "req/s is better.", "",
                 "| protocol | system | req/s | mean latency ms | req/s ratio (gateway ÷ nginx) |",
                 "|---|---|---:|---:|---:|"]
        for proto in ("h1", "h2"):
            gw, ng, ratio = self.bench.medians(proto, 0)
            gw_ms, ng_ms, _ = self.bench.medians(proto, 1)
            lines += [f"| {PROTOCOL_NAMES[proto]} | gateway | {gw} | {gw_ms} |  |",
                      f"| {PROTOCOL_NAMES[proto]} | nginx | {ng} | {ng_ms} | {ratio} |"]
        lines += ["", f"The same loads from h2load (1 thread, {d} after 1 s of warm-up), medians:",
                  "", "| protocol | system | req/s | req/s ratio (gateway ÷ nginx) |",
                  "|---|---|---:|---:|"]
        for proto in ("h1", "h2"):
            gw, ng, ratio = self.loads.medians(proto, 0)
            lines += [f"| {PROTOCOL_NAMES[proto]} | gateway | {gw} |  |",
                      f"| {PROTOCOL_NAMES[proto]} | nginx | {ng} | {ratio} |"]
        lines += ["", f"A new connection per request (openssl s_time, 2 clients, {d}; each reads "
                      "one answer), medians:", "",
                  "| handshakes | system | connections/s | bytes per connection | ratio (gateway "
                  "÷ nginx) |", "|---|---|---:|---:|---:|"]
        for mode in ("new", "reuse"):
            gw, ng, ratio = self.connects.medians(mode, 0)
            size = {s: self.connects.figures[mode, s, 1][1] for s in SYSTEMS}
            lines += [f"| {HANDSHAKE_NAMES[mode]} | gateway | {gw} | {size['gateway']} |  |",
                      f"| {HANDSHAKE_NAMES[mode]} | nginx | {ng} | {size['nginx']} | {ratio} |"]
        lines += ["", "Every run's figures (req/s, mean latency ms, succeeded, errored):", ""]
        for prefix, cells in (("", self.bench), ("h2load ", self.loads),
                              ("s_time ", self.connects)):
            keyed = {",".join(map(str, key)): figures for key, figures in cells.figures.items()}
            lines += [f"- {prefix}{key}: {' '.join(keyed[key])}" for key in sorted(keyed)]
        return lines


def main(argv):
    opts = parse_options(argv)
    if opts is None:
        sys.stdout.write(USAGE + __doc__.split("\n", 2)[2])
        return 0
    out = opts["--out"] or os.path.join(
        RESULTS_ROOT, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-tls-h2")
    os.makedirs(out, exist_ok=True)
    missing = build.missing_tools(["nginx", "h2load", "openssl"])
    if missing:
        raise Failure(f"{' '.join(missing)} missing (deploy/install-deps.sh --bench-tools)")
    build.add_system_bin_dirs_to_path()
    bin_dir = build.release_binaries(not opts["--no-build"],
                                     os.path.abspath(opts["--build-dir"]), 2, log)
    reps = int(opts["--reps"])
    with managed_processes("wg-tls-h2") as processes:
        run = TlsH2(opts, processes, bin_dir, out)
        run.start()
        run.measure(reps)
    lines = run.summary(reps)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    sys.stdout.write("\n".join(lines) + "\n")
    log(f"results in {out}")
    return 0
