"""A private redis-server on 127.0.0.1, and the few commands the harness asks it (a minimal RESP
client, so no redis-cli is needed)."""

import os
import socket
import time

from .console import Failure
from .loopback import free_port, wait_port

# The recipes' persistence mode (deploy/): the append-only file, fsync'ed every second; cache
# entries are volatile, the quota keys are not.
PERSISTENT = ("--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory", "512mb",
              "--maxmemory-policy", "volatile-ttl")
NOT_PERSISTENT = ("--appendonly", "no")


class RedisError(Exception):
    pass


class Redis:
    """One redis-server on a port kept across restarts (the gateway reconnects to it)."""

    def __init__(self, processes, name="redis", pin=None, persistence=NOT_PERSISTENT):
        self.processes = processes
        self.name = name
        self.pin = pin
        self.persistence = persistence
        self.port = free_port()
        self.dir = os.path.join(processes.work, name)
        self.process = None

    def start(self, tries=3):
        """Starts it (again), up once it answers PING (after loading its append-only file)."""
        os.makedirs(self.dir, exist_ok=True)
        for _ in range(tries):
            self.process = self.processes.start(self.name, [
                "redis-server", "--port", self.port, "--bind", "127.0.0.1", "--save", "",
                *self.persistence, "--dir", self.dir, "--protected-mode", "yes"], pin=self.pin)
            if wait_port(self.port) and self._answers_ping():
                return
            tail = self.process.log_tail(500)
            self.stop()
            time.sleep(0.5)
        raise Failure(f"redis-server did not start on port {self.port}:\n{tail}")

    def _answers_ping(self, seconds=10.0):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if self.command("PING") == "PONG":
                    return True
            except (OSError, RedisError):
                pass  # LOADING its data, or not listening yet
            time.sleep(0.05)
        return False

    def stop(self):
        if self.process:
            self.processes.stop(self.process)
            self.process = None

    def kill(self):
        """SIGKILL: what a crash does (the soak's fault)."""
        if self.process:
            self.processes.kill(self.process)
            self.process = None

    def command(self, *args):
        """The reply to one command: str, int, bytes, None or a list of those."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(_encode(args))
            return _Reader(s.makefile("rb")).reply()

    def info_field(self, section, field):
        """A field of INFO SECTION as an int, or None when redis-server does not answer."""
        try:
            text = self.command("INFO", section).decode()
        except (OSError, RedisError, AttributeError):
            return None
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key == field:
                return int(value)
        return None

    def commands_processed(self):
        return self.info_field("stats", "total_commands_processed")


def _encode(args):
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


class _Reader:
    def __init__(self, stream):
        self.stream = stream

    def reply(self):
        line = self.stream.readline()
        if not line.endswith(b"\r\n"):
            raise RedisError("connection closed")
        kind, body = line[:1], line[1:-2]
        if kind == b"+":
            return body.decode()
        if kind == b"-":
            raise RedisError(body.decode())
        if kind == b":":
            return int(body)
        if kind == b"$":
            n = int(body)
            return None if n < 0 else self.stream.read(n + 2)[:-2]
        if kind == b"*":
            n = int(body)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise RedisError(f"unexpected reply {line!r}")
