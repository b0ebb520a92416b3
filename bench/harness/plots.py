"""PNG plots of a run with gnuplot: bars per system with whiskers over the runs (throughput,
upstream calls, latency percentiles, the walker), and lines for a scaling sweep.

The scale rule: a panel whose largest median is 10 times its smallest non-zero one or more gets
a log axis (and says so); the others start at 0. A panel whose values are all zero or missing is
not drawn, and the report says so.
"""

import os
import subprocess

from .console import Logger

log = Logger("run.sh")

COLORS = {"gateway": "#1f77b4", "nginx": "#2ca02c", "varnish": "#ff7f0e", "constant": "#7f7f7f",
          "static": "#e377c2"}
OTHER_COLOR = "#9467bd"


def value_label(v):
    """The median printed above a bar: three significant digits for small values."""
    a = abs(v)
    if a >= 100000:
        return "%.0fk" % (v / 1000)
    if a >= 10000:
        return "%.1fk" % (v / 1000)
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    if a >= 1:
        return "%.2f" % v
    if a == 0:
        return "0"
    return "%.3g" % v


def quoted(text):
    return "'" + text.replace("'", "") + "'"


def _number(v):
    """A number as gnuplot's data block reads it (integers without a fraction)."""
    return str(int(v)) if v == int(v) else "%.6g" % v


def read_groups(data_path):
    """[(group, [(system, median, min, max)])] in the file's order."""
    groups = {}
    with open(data_path) as f:
        next(f, None)
        for line in f:
            group, system, _runs, median, low, high = line.rstrip("\n").split("\t")
            groups.setdefault(group, []).append((system, float(median), float(low), float(high)))
    return list(groups.items())


def log_axis_floor(bars):
    """The bottom of a log axis for BARS, or 0 for a linear one (the scale rule)."""
    smallest = min((m for _, m, _, _ in bars if m > 0), default=0)
    largest = max([0] + [m for _, m, _, _ in bars] + [hi for _, _, _, hi in bars])
    if smallest <= 0 or largest / smallest < 10:
        return 0
    floor = 1.0
    while floor > smallest / 2:
        floor /= 10
    while floor * 10 <= smallest / 2:
        floor *= 10
    return floor


def bar_chart_script(groups, png, title, ylabel, footer, panel_titles):
    """(gnuplot script or None when nothing is drawn, notes on what was left out)."""
    notes, drawn = [], []
    for group, bars in groups:
        if any(m != 0 or hi != 0 for _, m, _, hi in bars):
            drawn.append((group, bars))
        else:
            notes.append(f"{group}: all values are zero or missing, not drawn")
    if not drawn:
        return None, notes + ["nothing to draw"]
    cols = len(drawn) if len(drawn) <= 2 else 2 if len(drawn) == 4 else 3
    rows = (len(drawn) + cols - 1) // cols
    width = max(440 * cols + 80, 1000)
    height = 320 * rows + 110
    out = [f'set terminal pngcairo size {width},{height} font ",10"',
           f"set output {quoted(png)}",
           "set style fill solid 0.85 noborder", "set grid ytics", "set key off", "set bmargin 3",
           f'set label 1001 {quoted(footer)} at screen 0.01, screen 0.018 font ",8"',
           "set multiplot layout %d,%d title %s font \",13\" margins %.3f,%.3f,%.3f,%.3f "
           "spacing %.3f,%.3f" % (rows, cols, quoted(title), 105 / width, 1 - 20 / width,
                                  80 / height, 1 - 55 / height, 115 / width, 70 / height)]
    for k, (group, bars) in enumerate(drawn, 1):
        floor = log_axis_floor(bars)
        largest = max([m for _, m, _, _ in bars] + [hi for _, _, _, hi in bars])
        out.append(f"$P{k} << EOD")
        for i, (system, median, low, high) in enumerate(bars):
            y, ylo, yhi = (max(v, floor) for v in (median, low, high))
            color = int(COLORS.get(system, OTHER_COLOR)[1:], 16)
            out.append("\t".join([str(i), _number(y), _number(i - 0.36), _number(i + 0.36),
                                  _number(floor), _number(y), str(color), _number(ylo),
                                  _number(yhi), f'"{value_label(median)}"']))
        out.append("EOD")
        panel_title = panel_titles.get(group, group) + (" (log scale)" if floor else "")
        out += [f"set title {quoted(panel_title)}", f"set ylabel {quoted(ylabel)}",
                "set xrange [-0.6:%f]" % (len(bars) - 0.4),
                "set xtics (" + ", ".join(f"{quoted(b[0])} {i}" for i, b in enumerate(bars))
                + ") nomirror"]
        if floor:
            out += ["set logscale y", "set yrange [%g:%g]" % (floor, largest * 4)]
        else:
            out += ["unset logscale y", "set yrange [0:%g]" % (largest * 1.22 if largest > 0 else 1)]
        out += [f"plot $P{k} using 1:2:3:4:5:6:7 with boxxyerror lc rgb variable, \\",
                f'  $P{k} using 1:8:(0):($9 - $8) with vectors heads size 0.06,90 lc rgb "black" '
                "linewidth 1.2, \\",
                f'  $P{k} using 1:9:10 with labels offset 0,0.8 font ",9"']
        if k == 1:
            out.append("unset label 1001")
    out.append("unset multiplot")
    return "\n".join(out) + "\n", notes


def line_chart_script(data_path, png, title, footer, max_threads):
    """Scaling: req/s against N per system with whiskers over the runs, the value at each point,
    and the gateway's 1-thread figure × N dashed."""
    linear, series = [], {}
    with open(data_path) as f:
        next(f, None)
        for line in f:
            threads, system, _runs, median, low, high = line.rstrip("\n").split("\t")
            if system == "linear":
                linear.append(f"{threads}\t{median}")
            else:
                v = float(median)
                label = "%.1fk" % (v / 1000) if v >= 10000 else "%.0f" % v
                series.setdefault(system, []).append(
                    f'{threads}\t{median}\t{low}\t{high}\t"{label}"')
    blocks = ["$LINEAR << EOD", *linear, "EOD"]
    curves = ""
    for system in ("gateway", "nginx"):
        if system not in series:
            continue
        name = system.upper()
        blocks += [f"${name} << EOD", *series[system], "EOD"]
        curves += (f"${name} using 1:2:3:4 with yerrorlines linewidth 2 linecolor rgb "
                   f"'{COLORS[system]}' title '{system}', ${name} using 1:4:5 with labels offset "
                   "0,0.9 notitle, ")
    return "\n".join([
        'set terminal pngcairo size 1000,600 font ",10"', f"set output {quoted(png)}", *blocks,
        f"set title {quoted(title)}", "set xlabel 'N: gateway threads / nginx worker processes'",
        "set ylabel 'requests/s (higher is better)'", "set key inside left top", "set grid",
        "set bmargin 6", "set offsets 0, 0, graph 0.1, 0",
        f'set label 1001 {quoted(footer)} at screen 0.01, screen 0.02 font ",8"',
        f"set xrange [0.5:{max_threads} + 0.5]", "set yrange [0:*]",
        *(["set xtics 1"] if max_threads <= 16 else []),
        f"plot {curves}$LINEAR using 1:2 with lines dashtype 2 linecolor rgb 'gray40' title "
        "'gateway at 1 thread × N (linear)'"]) + "\n"


class Plotter:
    """Draws the plots of one results folder; remembers what it drew and what it left out."""

    def __init__(self, folder):
        self.folder = folder
        self.drawn = []   # (title, file name)
        self.notes = []   # charts or panels not drawn

    def _gnuplot(self, script, png, title):
        result = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
        if result.returncode != 0:
            log(f"gnuplot failed for {png}:\n{result.stderr}")
            return
        self.drawn.append((title, os.path.basename(png)))

    def bar_chart(self, name, title, ylabel, footer, panel_titles=None):
        png = os.path.join(self.folder, f"{name}.png")
        script, notes = bar_chart_script(read_groups(os.path.join(self.folder, f"{name}.dat")),
                                         png, title, ylabel, footer, panel_titles or {})
        self.notes += [f"{name}.png: {note}" for note in notes]
        if script:
            self._gnuplot(script, png, title)

    def line_chart(self, name, title, footer, max_threads):
        png = os.path.join(self.folder, f"{name}.png")
        script = line_chart_script(os.path.join(self.folder, f"{name}.dat"), png, title, footer,
                                   max_threads)
        self._gnuplot(script, png, title)
