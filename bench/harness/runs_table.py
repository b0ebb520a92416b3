"""runs.tsv: one row per run of wg-bench, its figures as measured, and the medians and ranges
the reports take from it."""

import re

# exit: wg-bench's exit status (0 ok, 1 runtime error, 2 usage error, 3 connection failure, 4 no
# measured request got an expected answer, 5 a --fail-if threshold was crossed); the figures of
# a run whose wg-bench printed none are "-".
COLUMNS = ("scenario", "system", "rep", "rps", "p50_us", "p90_us", "p99_us", "p999_us", "max_us",
           "errors", "unexpected", "all_responses", "upstream_calls", "upstream_per_1k",
           "peak_rss_kb", "redis_per_request", "l1_entries", "l1_bytes", "threads", "exit",
           "visitors_p99_us", "walker_responses", "walker_share", "walker_p99_us",
           "server_cpu_ms_per_1k")
HEADER = "\t".join(COLUMNS) + "\n"

# wg-bench --tsv: label responses rps p50 p90 p99 p999 max errors unexpected all bytes, then mode
# offered late unsent exit (not read here) and the roles: the visitors' p99, the walker's answers
# and its p99.
_BENCH_FIELDS = 20
_NUMBER = re.compile(r"[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?")


def is_number(text):
    return bool(_NUMBER.fullmatch(text))


def row(scenario, system, rep, threads, exit_status, bench_line, upstream_calls, peak_rss_kb,
        redis_commands, l1_entries, l1_bytes, server_cpu_ms):
    """The runs.tsv line of one run; BENCH_LINE is wg-bench's TSV data line ("" when it printed
    none, as on a usage or runtime error); REDIS_COMMANDS is None when not measured."""
    b = bench_line.rstrip("\n").split("\t")
    head = [scenario, system, str(rep)]
    if not bench_line or b[0] == "label" or len(b) < _BENCH_FIELDS:
        return "\t".join(head + ["-"] * 9 + [str(upstream_calls), "-", str(peak_rss_kb), "-",
                                              l1_entries, l1_bytes, str(threads),
                                              str(exit_status)] + ["-"] * 5) + "\n"
    responses, all_responses = float(b[1]), float(b[10])

    def per(value, count, spec):
        return spec % (value / count) if count > 0 else "-"

    redis = "-" if redis_commands is None or responses == 0 else "%.4f" % (redis_commands / responses)
    return "\t".join(head + b[2:11] + [
        str(upstream_calls), per(upstream_calls * 1000, all_responses, "%.4g"), str(peak_rss_kb),
        redis, l1_entries, l1_bytes, str(threads), str(exit_status), b[17], b[18],
        per(float(b[18]), responses, "%.4f"), b[19],
        per(server_cpu_ms * 1000, responses, "%.4g")]) + "\n"


def read_rows(path):
    """The rows of a runs.tsv as dicts by column name."""
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines:
        return []
    names = lines[0].split("\t")
    return [dict(zip(names, line.split("\t"))) for line in lines[1:]]


def g10(value):
    return "%.10g" % value


class RunsTable:
    """The rows of one run's runs.tsv, and the figures the summary and plots take from it."""

    def __init__(self, rows):
        self.rows = rows

    def of(self, scenario, system, threads=None):
        return [r for r in self.rows if r["scenario"] == scenario and r["system"] == system
                and (threads is None or r["threads"] == str(threads))]

    def count(self, scenario, system, threads=None):
        return len(self.of(scenario, system, threads))

    def spread(self, scenario, system, column, threads=None):
        """(median, min, max) as text ("%.10g") over the runs' numeric values of COLUMN;
        ("-",)*3 when runs exist but none has a number, ("?",)*3 when there is no run."""
        rows = self.of(scenario, system, threads)
        if not rows:
            return ("?",) * 3
        values = sorted(float(r[column]) for r in rows if is_number(r[column]))
        if not values:
            return ("-",) * 3
        return g10(median_of(values)), g10(values[0]), g10(values[-1])

    def median(self, scenario, system, column, threads=None):
        return self.spread(scenario, system, column, threads)[0]

    def exits(self, scenario, system):
        """wg-bench's exit statuses of the runs, in run order ("0,0,5")."""
        return ",".join(r["exit"] for r in self.of(scenario, system))

    def thread_counts(self, scenario):
        return sorted({int(r["threads"]) for r in self.rows if r["scenario"] == scenario})


def median_of(sorted_values):
    n = len(sorted_values)
    mid = n // 2
    return sorted_values[mid] if n % 2 else (sorted_values[mid - 1] + sorted_values[mid]) / 2


# Number formatting that passes "?" and "-" through.
def num(spec, value, divisor=1):
    return value if value in ("?", "-") else spec % (float(value) / divisor)


def ms(us):
    return num("%.3f", us, 1000)


def rps(value):
    return num("%.0f", value)


def ratio(a, b):
    if a in ("?", "-") or b in ("?", "-") or float(b) == 0:
        return "n/a"
    return "%.2f" % (float(a) / float(b))
