"""bench/run.sh compare DIR_A DIR_B [--threshold 10%]: the medians of two runs' runs.tsv side by
side, with a verdict per scenario and system. Exit status: 0 no regression, 1 a regression, 2
usage error."""

import os
import re
import sys

from . import RESULTS_ROOT
from .console import UsageError
from .runs_table import is_number, median_of

METRICS = ("rps", "p50_us", "p99_us", "errors", "upstream_per_1k", "peak_rss_kb")
NAMES = {"rps": "req/s", "p50_us": "p50 ms", "p99_us": "p99 ms", "errors": "errors",
         "upstream_per_1k": "upstream / 1k req", "peak_rss_kb": "peak RSS MiB"}
HIGHER_IS_BETTER = {"rps"}  # every other metric: lower is better
DRIFT_METRICS = ("rps", "p50_us", "p99_us")  # what the machine's drift moves
REFERENCE = "constant"

INTRO = """\
Each cell: median A → median B (change). "regression": the median moved the wrong way by
more than the threshold and the ranges (min..max over repetitions) do not overlap; where
both runs have the constant reference, req/s and latency are judged net of its change (the
machine's drift), p99 against twice the threshold, and upstream calls only when they moved
by at least 1 per 1,000 requests.
"""


def results_folder(name):
    """A folder given to compare: a path, or a folder name under bench/results/ ("latest")."""
    for folder in (name, os.path.join(RESULTS_ROOT, name)):
        if os.path.isfile(os.path.join(folder, "runs.tsv")):
            return os.path.abspath(folder)
    raise UsageError(f"compare: {name} is not a results folder (no runs.tsv)")


def parse_arguments(argv):
    """(folder A, folder B, threshold in %) of compare's arguments."""
    folders, threshold, rest = [], "10", list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--threshold":
            threshold = rest.pop(0) if rest else ""
        elif arg.startswith("--threshold="):
            threshold = arg.split("=", 1)[1]
        elif arg.startswith("-"):
            raise UsageError(f"compare: unknown option {arg}")
        elif len(folders) == 2:
            raise UsageError("compare takes two folders")
        else:
            folders.append(arg)
    if len(folders) != 2:
        raise UsageError("usage: bench/run.sh compare DIR_A DIR_B [--threshold 10%]")
    threshold = threshold.removesuffix("%")
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", threshold):
        raise UsageError("--threshold expects a percentage (e.g. 10%)")
    return folders[0], folders[1], threshold


class Side:
    """One folder's runs.tsv: per row key (scenario, system, threads of a sweep), its number of
    runs and the values of each metric."""

    def __init__(self, path):
        with open(path) as f:
            lines = f.read().splitlines()
        names = lines[0].split("\t") if lines else []
        if not {"scenario", "system", "rps"} <= set(names):
            raise UsageError("runs.tsv without the scenario, system and rps columns")
        self.order, self.runs, self.values = [], {}, {}
        for line in lines[1:]:
            r = dict(zip(names, line.split("\t")))
            sweep_threads = r.get("threads", "") if r["scenario"].startswith("scaling") else ""
            key = (r["scenario"], r["system"], sweep_threads)
            if key not in self.runs:
                self.order.append(key)
                self.runs[key] = 0
            self.runs[key] += 1
            for metric in METRICS:
                if metric not in r:
                    continue
                value = r[metric]
                # From the counts when runs.tsv has them: older files rounded this column to 0.1.
                if (metric == "upstream_per_1k" and is_number(r.get("upstream_calls", ""))
                        and is_number(r.get("all_responses", ""))
                        and float(r["all_responses"]) > 0):
                    value = str(float(r["upstream_calls"]) * 1000 / float(r["all_responses"]))
                if is_number(value):
                    self.values.setdefault((key, metric), []).append(float(value))

    def stats(self, key, metric):
        """(median, min, max) or None."""
        values = sorted(self.values.get((key, metric), []))
        return (median_of(values), values[0], values[-1]) if values else None


def show(value, metric):
    if metric in ("p50_us", "p99_us"):
        return "%.3f" % (value / 1000)
    if metric == "peak_rss_kb":
        return "%.1f" % (value / 1024)
    if metric == "upstream_per_1k":
        return "%.4g" % value
    return "%.0f" % value


def machine_drift(a, b):
    """{(scenario, metric): B's median ÷ A's} of the constant reference: it does no cache work,
    so its change is the machine's, not the code's."""
    drift = {}
    for key in a.order:
        if key[1] != REFERENCE or key not in b.runs:
            continue
        for metric in DRIFT_METRICS:
            sa, sb = a.stats(key, metric), b.stats(key, metric)
            if sa and sb and sa[0] > 0 and sb[0] > 0:
                drift[(key[0], metric)] = sb[0] / sa[0]
    return drift


def compare_row(key, a, b, threshold, drift):
    """(table line without its verdict, verdict, whether it is a regression)."""
    scenario, system, threads = key
    line = "| %s%s | %s | %d / %d |" % (scenario, f" (N={threads})" if threads else "", system,
                                         a.runs[key], b.runs[key])
    worse, improved = [], []
    for metric in METRICS:
        sa, sb = a.stats(key, metric), b.stats(key, metric)
        if not sa or not sb:
            line += " - |"
            continue
        (ma, la, ha), (mb, lb, hb) = sa, sb
        if ma != 0:
            pct = (mb - ma) * 100 / ma
            change = "%+.1f%%" % pct
        elif mb == 0:
            pct, change = 0, "±0%"
        else:
            pct, change = 1e9, "from 0"
        line += f" {show(ma, metric)} → {show(mb, metric)} ({change}) |"
        if not (hb < la or lb > ha):
            continue  # the ranges overlap
        if system == REFERENCE:
            continue  # the reference: its change is the drift
        if (scenario, metric) in drift and ma > 0:
            pct = (mb / ma / drift[(scenario, metric)] - 1) * 100
        if metric == "upstream_per_1k" and abs(mb - ma) < 1:
            continue
        # A tail rests on few samples and moves most with the machine: twice the threshold.
        limit = 2 * threshold if metric == "p99_us" else threshold
        better = metric in HIGHER_IS_BETTER
        if (pct < -limit) if better else (pct > limit):
            worse.append(NAMES[metric])
        elif (pct > limit) if better else (pct < -limit):
            improved.append(NAMES[metric])
    referenced = (scenario, "rps") in drift
    regression = False
    if system == REFERENCE and referenced:
        verdict = "reference: the machine's drift"
    elif worse:
        verdict, regression = "**regression**: " + ", ".join(worse), True
    elif improved:
        verdict = "improvement: " + ", ".join(improved)
    else:
        verdict = "within noise"
    if system != REFERENCE and referenced:
        verdict += " (net of the reference)"
    return line, verdict, regression


def compare_tables(path_a, path_b, threshold):
    """The table's lines and the number of regressions; UsageError when no row is in both."""
    a, b = Side(path_a), Side(path_b)
    drift = machine_drift(a, b)
    lines, regressions = [], 0
    for key in a.order:
        if key not in b.runs:
            continue
        if not lines:
            lines.append("| scenario | system | runs A / B |"
                         + "".join(f" {NAMES[m]} |" for m in METRICS) + " verdict |")
            lines.append("|---|---|---:|" + "---:|" * len(METRICS) + "---|")
        line, verdict, regression = compare_row(key, a, b, threshold, drift)
        regressions += regression
        lines.append(f"{line} {verdict} |")
    if not lines:
        raise UsageError("no scenario and system in both folders")
    return lines, regressions


def main(argv, out=sys.stdout):
    name_a, name_b, threshold = parse_arguments(argv)
    dir_a, dir_b = results_folder(name_a), results_folder(name_b)
    print(f"Compare: A = {dir_a}, B = {dir_b}; threshold {threshold}%.", file=out)
    print(INTRO, file=out)
    lines, regressions = compare_tables(os.path.join(dir_a, "runs.tsv"),
                                        os.path.join(dir_b, "runs.tsv"), float(threshold))
    print("\n".join(lines), file=out)
    print(file=out)
    print(f"{regressions} regression(s)." if regressions else "No regression.", file=out)
    return 1 if regressions else 0
