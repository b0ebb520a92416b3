"""Which CPUs the system under test and the rest (wg-bench, the stub, redis-server) run on.

On two or more CPUs the system under test gets CPU 0 and the rest the others, so that the load
generator does not measure its own share of the server's CPU. Scaling scenarios pin the server
with N threads to CPUs 0..N-1 and the rest to the CPUs above the largest N.
"""

import os
from dataclasses import dataclass


def cpu_count_of(cpu_list):
    """How many CPUs a taskset list ("1", "8-15", "2,4-7") names."""
    count = 0
    for part in cpu_list.split(","):
        low, _, high = part.partition("-")
        count += int(high) - int(low) + 1 if high else 1
    return count


def _first_cpu(cpu_list):
    return min(int(n) for part in cpu_list.split(",") for n in part.split("-"))


@dataclass
class Pinning:
    ncpu: int
    server: str      # taskset list of the system under test ("" = not pinned)
    other: str       # of wg-bench, the stub and redis-server
    note: str        # what the report says about it


def default_pinning(ncpu=None):
    ncpu = ncpu or os.cpu_count() or 1
    if ncpu < 2:
        return Pinning(ncpu, "", "", "one CPU: nothing is pinned, load generator and server share it")
    other = "1" if ncpu == 2 else f"1-{ncpu - 1}"
    return Pinning(ncpu, "0", other,
                   f"the system under test is pinned to CPU 0; wg-bench, the stub and "
                   f"redis-server to CPU(s) {other} (taskset)")


@dataclass
class SweepPinning:
    """A scaling scenario's pinning: the server by its thread count, the rest on client_cpus."""
    ncpu: int
    max_threads: int
    client_cpus: str   # "" = not pinned
    bench_threads: int
    note: str

    def server(self, threads):
        """The CPU list of a server with THREADS threads (all CPUs when it has more)."""
        if self.ncpu < 2:
            return ""
        n = min(threads, self.ncpu)
        return f"0-{n - 1}" if n > 1 else "0"


def sweep_pinning(max_threads, client_cpus, bench_threads, ncpu=None):
    """MAX_THREADS, CLIENT_CPUS and BENCH_THREADS as given ("" = default)."""
    ncpu = ncpu or os.cpu_count() or 1
    max_threads = int(max_threads) if max_threads else ncpu
    if ncpu < 2:
        client_cpus = ""
    elif not client_cpus:
        if max_threads < ncpu - 1:
            client_cpus = f"{max_threads}-{ncpu - 1}"
        elif max_threads == ncpu - 1:
            client_cpus = str(max_threads)
        else:
            client_cpus = str(ncpu - 1)
    if bench_threads:
        threads = int(bench_threads)
    else:
        threads = cpu_count_of(client_cpus) if client_cpus else 1
    if ncpu < 2:
        note = "scaling: one CPU, nothing is pinned"
    else:
        note = (f"scaling: the server with N threads (workers) is pinned to CPUs 0..N-1; wg-bench "
                f"({threads} thread(s)), the stub and redis-server to CPU(s) {client_cpus} (taskset)")
        first = _first_cpu(client_cpus)
        if first < max_threads:
            note += (f"; from N = {first + 1} on the server shares CPU {first} with the load "
                     f"generator")
    return SweepPinning(ncpu, max_threads, client_cpus, threads, note)
