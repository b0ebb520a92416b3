"""Ports and HTTP on 127.0.0.1, the only address anything here talks to."""

import random
import re
import socket
import time
import urllib.error
import urllib.request

from .console import Failure

# No proxy from the environment, ever: everything here is on 127.0.0.1.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http(method, port, path, timeout=10.0):
    """(status, body bytes) of METHOD http://127.0.0.1:PORT/PATH; Failure when unreachable."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (OSError, urllib.error.URLError) as error:
        raise Failure(f"{method} 127.0.0.1:{port}{path}: {error}") from error


def get(port, path, timeout=10.0):
    return http("GET", port, path, timeout)


def post(port, path, timeout=10.0):
    return http("POST", port, path, timeout)


def status_of(port, path, timeout=10.0):
    """The status of GET PATH, or "none" when nothing answered."""
    try:
        return str(get(port, path, timeout)[0])
    except Failure:
        return "none"


def port_open(port):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_port(port, seconds=15.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if port_open(port):
            return True
        time.sleep(0.05)
    return False


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
        return low if low > 12000 else 32768
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A loopback port nobody listens on now (for servers that cannot bind port 0 and say which
    they got), below the kernel's ephemeral range so that no outgoing connection holds it."""
    low = _ephemeral_low()
    for _ in range(200):
        port = random.randrange(10000, low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        if not port_open(port):
            return port
    raise Failure("no free loopback port")


def listen_port(process, listener, seconds=15.0):
    """The port of the '"listener":"NAME","address":"...:PORT"' line that the gateway, the stub
    and wg-bench's constant server write when they listen (they bind port 0)."""
    pattern = re.compile(r'"listener":"%s","address":"[^"]*:(\d+)"' % re.escape(listener))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        match = pattern.search(process.log_tail(chars=1 << 20))
        if match:
            return int(match.group(1))
        if not process.running():
            break
        time.sleep(0.05)
    raise Failure(f"{process.name}: no listening line for {listener} in {process.log_path}:\n"
                  + process.log_tail())
