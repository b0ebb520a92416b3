"""One run of wg-bench against one freshly started system: the scenario's fault injected
mid-run, and the figures wg-bench does not see (upstream calls, peak RSS, server CPU time,
Redis commands, L1) read around it."""

import os
import time

from . import procfs
from .console import Logger
from .processes import sleep_until
from .runs_table import row
from .scenarios import is_reference

log = Logger("run.sh")

EXIT_MEANINGS = {1: "runtime error", 2: "usage error", 3: "connection failure",
                 4: "no measured request got an expected answer",
                 5: "--fail-if threshold crossed"}


def exit_meaning(status):
    return EXIT_MEANINGS.get(status, "unexpected exit status")


class Measurement:
    """What one scenario's runs share: its files, its stub, its overrides."""

    def __init__(self, processes, launcher, stub, redis, wg_bench, results_dir, ids_file, opts):
        self.processes = processes
        self.launcher = launcher
        self.stub = stub
        self.redis = redis
        self.wg_bench = wg_bench
        self.results_dir = results_dir
        self.ids_file = ids_file
        self.opts = opts

    def run_one(self, plan, system, rep, threads):
        """Runs SYSTEM once; returns (runs.tsv line, wg-bench's exit status, failure text)."""
        runner = plan.runner
        name = runner["name"]
        label = f"{name}-{system}-t{threads}-{rep}" if plan.sweep else f"{name}-{system}-{rep}"
        out = os.path.join(self.results_dir, "json", f"{label}.json")
        self.stub.reset()
        latency = int(runner.get("upstream_latency_ms", "0") or 0)
        if latency > 0:
            self.stub.set_latency(latency)
        server = self.launcher.start(system, runner, threads, plan.server_pin(threads),
                                     reuseport=plan.sweep)
        if plan.sweep:
            unit = "worker" if system == "nginx" else "thread"
            log(f"{name}: {system} with {threads} {unit}(s) (run {rep}) on 127.0.0.1:{server.port}")
        else:
            log(f"{name}: {system} (run {rep}) on 127.0.0.1:{server.port}")

        args = [self.wg_bench, "--target", f"http://127.0.0.1:{server.port}", "--scenario",
                plan.file, "--ids", self.ids_file, "--label", system, "--out", out,
                "--seed", rep, "--tsv"]
        for flag, value in (("--duration", self.opts.duration), ("--warmup", self.opts.warmup),
                            ("--connections", self.opts.connections),
                            ("--threads", plan.bench_threads)):
            if value:
                args += [flag, value]
        if self.opts.fail_if and system == "gateway":
            args += ["--fail-if", self.opts.fail_if]

        started = time.monotonic()
        tsv_path = os.path.join(self.processes.work, "tsv")
        bench = self.processes.start("wg-bench", args, pin=plan.other_pin, log_path=tsv_path,
                                     stderr_to_log=False)
        # The server's CPU time and (the gateway's) Redis commands count over the measured period.
        sleep_until(started + plan.warmup_ms / 1000)
        cpu_before = procfs.tree_cpu_ticks(server.process.pid)
        redis_before = self.redis.commands_processed() if system == "gateway" else None
        fault_note = self._inject_fault(plan, system, started)
        status = self.processes.wait(bench)
        cpu_ms = ((procfs.tree_cpu_ticks(server.process.pid) - cpu_before) * 1000
                  // procfs.clock_ticks())
        if fault_note:
            log(f"{name}: {system}: {fault_note}")

        upstream = 0 if is_reference(system) else self.stub.total()
        rss = procfs.peak_rss_kb(server.process.pid)
        redis_used, l1_entries, l1_bytes = None, "-", "-"
        if system == "gateway":
            # The INFO call itself counts as one command; a restarted Redis lost the count.
            redis_after = self.redis.commands_processed()
            if None not in (redis_before, redis_after) and runner.get("fault") != "redis":
                redis_used = redis_after - redis_before - 1
            # Whatever the gateway did after the measured period (finishing fills) counts too:
            # the figure errs on the high side.
            l1_entries = server.gateway.metric('wg_cache_entries{tier="l1"}') or "?"
            l1_bytes = server.gateway.metric('wg_cache_bytes{tier="l1"}') or "?"
            # Less the body files L1 charges, which live outside RSS: RSS − L1 compares like
            # with like.
            if l1_bytes != "?":
                l1_bytes = "%.0f" % (float(l1_bytes) - procfs.body_file_bytes(server.process.pid))
        self.launcher.stop(server)

        failure = None
        if status != 0:
            sweep_note = f" (N={threads})" if plan.sweep else ""
            failure = f"{name} {system} run {rep}{sweep_note}: exit {status} ({exit_meaning(status)})"
            log(failure)
        # wg-bench prints a header line, then its data line (neither on a usage or runtime error).
        with open(tsv_path) as f:
            lines = f.read().splitlines()
        line = row(name, system, rep, threads, status, lines[-1] if lines else "", upstream, rss,
                   redis_used, l1_entries, l1_bytes, cpu_ms)
        return line, status, failure

    def _inject_fault(self, plan, system, started):
        """The scenario's fault, timed from the start of the measured period; what was done."""
        fault = plan.runner.get("fault", "")
        at = started + (plan.warmup_ms + plan.fault_at_ms) / 1000
        until = at + plan.fault_for_ms / 1000
        if fault == "upstream" and system != "constant":
            mode = plan.runner["fault_mode"]
            sleep_until(at)
            self.stub.set_fault(mode)
            sleep_until(until)
            self.stub.set_fault("none")
            return f"upstream {mode} from {plan.fault_at_ms} ms for {plan.fault_for_ms} ms"
        if fault == "redis" and system == "gateway":
            sleep_until(at)
            self.redis.stop()
            sleep_until(until)
            self.redis.start()
            return (f"redis-server killed at {plan.fault_at_ms} ms, restarted after "
                    f"{plan.fault_for_ms} ms")
        return ""
