"""The stub upstream and the gateway as the bench scripts start them, on 127.0.0.1."""

import json

from .console import Failure
from .loopback import get, listen_port, post


class Stub:
    """widget-upstream-stub: the upstream every system under test asks, and its counters."""

    def __init__(self, processes, binary, widgets, pin=None, extra=(), name="stub"):
        self.process = processes.start(name, [
            binary, "--listen", "127.0.0.1:0", "--widgets", widgets, "--seed", "1", *extra],
            pin=pin)
        self.processes = processes
        # Rendering a large data set before it listens takes a while (about 6 s for 10,000).
        self.port = listen_port(self.process, "stub", seconds=300)

    def stop(self):
        self.processes.stop(self.process)

    def _post(self, path):
        status, _ = post(self.port, path)
        if status != 200:
            raise Failure(f"the stub answered {status} to POST {path}")

    def reset(self):
        """Zeroes its counters and clears its latency and fault."""
        self._post("/__stub/reset")

    def set_latency(self, ms):
        self._post(f"/__stub/latency?ms={ms}")

    def set_fault(self, mode):
        self._post(f"/__stub/fault?mode={mode}")

    def total(self):
        """Requests received since the last reset."""
        status, body = get(self.port, "/__stub/stats")
        if status != 200:
            raise Failure(f"the stub's /__stub/stats answered {status}")
        return int(json.loads(body)["total"])

    def widgets_json(self, limit=None):
        """Its widget list as JSON bytes (what wg-bench's --ids reads)."""
        path = "/__stub/widgets" + (f"?limit={limit}" if limit else "")
        status, body = get(self.port, path, timeout=30)
        if status != 200:
            raise Failure(f"the stub's {path} answered {status}")
        return body


class Gateway:
    """One widget-gateway instance with its public and admin listeners on ports it chose."""

    def __init__(self, processes, binary, config, stub_port, redis_port, threads, pin=None,
                 name="gateway"):
        self.process = processes.start(name, [
            binary, "--config", config, "--listen", "127.0.0.1:0", "--admin-listen",
            "127.0.0.1:0", "--upstream", f"http://127.0.0.1:{stub_port}",
            "--redis", f"redis://127.0.0.1:{redis_port}/0", "--threads", threads], pin=pin)
        self.port = listen_port(self.process, "public")
        self.admin_port = listen_port(self.process, "admin")

    @property
    def pid(self):
        return self.process.pid

    def metrics_text(self):
        try:
            return get(self.admin_port, "/metrics")[1].decode("utf-8", "replace")
        except Failure:
            return ""

    def metric(self, sample):
        """The value of one sample of /metrics (e.g. 'wg_cache_bytes{tier="l1"}') as written,
        or None when absent."""
        for line in self.metrics_text().splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[0] == sample:
                return fields[1]
        return None


def first_widget_id(ids_json):
    widgets = json.loads(ids_json)
    if not widgets:
        raise Failure("the stub listed no widgets")
    return widgets[0]["id"]
