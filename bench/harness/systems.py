"""The systems under test of bench/run.sh, each started fresh for one run: the gateway (with
its own empty redis-server), nginx proxy_cache, Varnish, nginx serving static files, and
wg-bench's constant-response server."""

import os
import shutil
from dataclasses import dataclass

from . import nginx_conf, varnish_conf
from .console import Failure
from .loopback import free_port, listen_port, wait_port
from .services import Gateway


@dataclass
class Server:
    process: object
    port: int
    gateway: Gateway = None  # the gateway's admin listener, for its metrics


def gateway_config(runner, ttl_ms):
    """The gateway's configuration for a scenario: access log off as for nginx and Varnish, the
    scenario's TTL, L1 and derivation switches."""
    lines = ["# Written by bench/run.sh. Access logging off, as for nginx and Varnish.",
             "[log]", 'access_log = "off"', "[cache]"]
    if ttl_ms > 0:
        lines += [f'min_ttl = "{ttl_ms}ms"', f'max_ttl = "{ttl_ms}ms"', 'jitter = "0s"']
    if runner.get("gateway_l1", "1") == "0":
        lines.append("l1_max_bytes = 0")
    if runner.get("derive_pages", "1") == "0":
        lines.append("derive_pages = false")
    lines += ["[access]",
              "# The load generator is one client address asking for many widgets nobody has fetched",
              "# yet (all valid): the per-client limit on such lookups would measure itself.",
              "unknown_per_ip_rate = 0"]
    return "\n".join(lines) + "\n"


class Launcher:
    """Starts one system at a time against the run's stub, pinned to the server's CPUs."""

    def __init__(self, processes, bin_dir, stub_port, redis, constant_bodies):
        self.processes = processes
        self.work = processes.work
        self.bin_dir = bin_dir
        self.stub_port = stub_port
        self.redis = redis  # started and stopped with each gateway run
        self.constant_bodies = constant_bodies  # (widget body path, reviews body path)

    def start(self, system, runner, threads, pin, reuseport):
        ttl_ms = int(runner.get("cache_ttl_ms", "0") or 0)
        if system == "gateway":
            return self._gateway(runner, ttl_ms, threads, pin)
        if system == "nginx":
            return self._nginx(ttl_ms, threads, pin, reuseport)
        if system == "varnish":
            return self._varnish(ttl_ms, pin)
        if system == "static":
            return self._static(pin)
        return self._constant(pin)

    def stop(self, server):
        self.processes.stop(server.process)
        if server.gateway:
            self.redis.stop()

    def _gateway(self, runner, ttl_ms, threads, pin):
        config = os.path.join(self.work, "gateway.toml")
        with open(config, "w") as f:
            f.write(gateway_config(runner, ttl_ms))
        self.redis.start()
        gateway = Gateway(self.processes, os.path.join(self.bin_dir, "widget-gateway"), config,
                          self.stub_port, self.redis.port, threads, pin=pin)
        return Server(gateway.process, gateway.port, gateway)

    def _fresh_folder(self, name, *subfolders):
        folder = os.path.join(self.work, name)
        shutil.rmtree(folder, ignore_errors=True)
        for sub in subfolders:
            os.makedirs(os.path.join(folder, sub))
        return folder

    def _nginx_process(self, name, folder, config, port, pin):
        path = os.path.join(folder, "nginx.conf")
        with open(path, "w") as f:
            f.write(config)
        error_log = os.path.join(folder, "error.log")
        process = self.processes.start(name, ["nginx", "-p", folder, "-c", path, "-e", error_log],
                                       pin=pin)
        if not wait_port(port):
            detail = open(error_log).read() if os.path.exists(error_log) else process.log_tail()
            raise Failure(f"{name} did not start:\n{detail}")
        return Server(process, port)

    def _nginx(self, ttl_ms, workers, pin, reuseport):
        folder = self._fresh_folder("nginx", "cache", "tmp")
        port = free_port()
        # proxy_cache_valid takes whole seconds.
        ttl = f"{(ttl_ms + 999) // 1000 if ttl_ms > 0 else 3600}s"
        config = nginx_conf.proxy_cache(folder, port, self.stub_port, ttl, workers, reuseport)
        return self._nginx_process("nginx", folder, config, port, pin)

    def _static(self, pin):
        folder = self._fresh_folder("static", "files", "tmp")
        widget_body, reviews_body = self.constant_bodies
        shutil.copy(widget_body, os.path.join(folder, "files", "widget.json"))
        shutil.copy(reviews_body, os.path.join(folder, "files", "reviews.json"))
        port = free_port()
        return self._nginx_process("nginx (static)", folder, nginx_conf.static_files(folder, port),
                                   port, pin)

    def _varnish(self, ttl_ms, pin):
        folder = self._fresh_folder("varnish", "")
        port = free_port()
        vcl_path = os.path.join(folder, "bench.vcl")
        with open(vcl_path, "w") as f:
            f.write(varnish_conf.vcl(self.stub_port, f"{ttl_ms if ttl_ms > 0 else 3600000}ms"))
        process = self.processes.start("varnish", [
            "varnishd", "-F", "-j", "none", "-n", os.path.join(folder, "state"),
            "-a", f"127.0.0.1:{port}", "-T", "none", "-f", vcl_path, "-s", "malloc,256m"], pin=pin)
        if not wait_port(port):
            raise Failure(f"varnishd did not start:\n{process.log_tail()}")
        return Server(process, port)

    def _constant(self, pin):
        widget_body, reviews_body = self.constant_bodies
        process = self.processes.start("constant", [
            os.path.join(self.bin_dir, "wg-bench"), "--serve-constant", "--listen", "127.0.0.1:0",
            "--body-file", widget_body, "--reviews-body-file", reviews_body], pin=pin)
        return Server(process, listen_port(process, "constant"))
