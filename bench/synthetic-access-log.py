#!/usr/bin/env python3
"""synthetic-access-log: a day of zipf-site visitors as the gateway's access log would record
them, for `widget-gateway --what-if` (docs/what-if.md) when no production log is at hand.

The widgets and their counts come from the stub upstream's listing (GET /__stub/widgets on a
stub you started on 127.0.0.1), so pages past a widget's end and its review counts are what the
stub would answer. Visitors follow bench/scenarios/zipf-site.toml's shape: Zipf popularity over
the widgets, 35 % widget data and 65 % reviews pages (limits 10 and 20, later pages rarer), with
a day's rhythm (the busiest hour about four times the quietest). Every line is a 200 answered
with upstream's data: the log says what visitors asked, not how a gateway answered (a replay
decides that).

  bench/synthetic-access-log.py --stub-port 8081 --requests 200000 --start 2026-12-01T04:00:00Z \\
      --instances 2 --out /tmp/day   # writes /tmp/day-0.log and /tmp/day-1.log

Python 3 standard library only; talks to 127.0.0.1 only.
"""

import argparse
import bisect
import datetime
import json
import math
import random
import sys
import urllib.request

PLATFORMS = ("doubleGis", "yaSprav", "avito", "zoon", "vkontakte", "prodoctorov", "otzovik",
             "googleMap", "yaBusiness")


def listing(port, widgets):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/__stub/widgets?limit={widgets}",
                                timeout=30) as answer:
        return json.load(answer)


def zipf_weights(n, exponent):
    weights = [1.0 / (rank ** exponent) for rank in range(1, n + 1)]
    total = sum(weights)
    cumulative, acc = [], 0.0
    for w in weights:
        acc += w / total
        cumulative.append(acc)
    return cumulative


def day_rhythm(second_of_day):
    """Relative traffic: lowest at 04:00 local, highest at 16:00, four times as much."""
    phase = (second_of_day / 86400.0 - 16 / 24) * 2 * math.pi
    return 2.5 + 1.5 * math.cos(phase)


def stamp(t):
    ms = int(round(t * 1000))
    base = datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc)
    return base.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


def counts_json(widget):
    amounts = widget.get("reviewAmount", {})
    return json.dumps({"total": widget["totalReviewAmount"], "reviewAmount": amounts,
                       "sources": list(amounts), "consistent": True}, separators=(",", ":"))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stub-port", type=int, required=True)
    p.add_argument("--widgets", type=int, default=2000)
    p.add_argument("--requests", type=int, default=200000)
    p.add_argument("--start", default="2026-12-01T04:00:00Z", help="UTC, the day's first second")
    p.add_argument("--hours", type=float, default=24.0)
    p.add_argument("--instances", type=int, default=1, help="one log file each")
    p.add_argument("--zipf", type=float, default=1.1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True, help="file prefix: OUT-0.log, OUT-1.log, ...")
    opts = p.parse_args(argv)
    rng = random.Random(opts.seed)
    widgets = listing(opts.stub_port, opts.widgets)
    popularity = zipf_weights(len(widgets), opts.zipf)
    start = datetime.datetime.strptime(opts.start, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    span = opts.hours * 3600
    # Arrival times drawn by the day's rhythm (rejection sampling against its peak).
    times = []
    while len(times) < opts.requests:
        t = rng.random() * span
        if rng.random() * 4.0 <= day_rhythm((start + t) % 86400):
            times.append(start + t)
    times.sort()
    outputs = [open(f"{opts.out}-{i}.log", "w") for i in range(opts.instances)]
    for t in times:
        widget = widgets[min(bisect.bisect_left(popularity, rng.random()), len(widgets) - 1)]
        line = {"time": stamp(t), "client": "198.51.100.7", "method": "GET"}
        if rng.random() < 0.35:
            line.update(route="widget", widget=widget["id"], status=200, cache="hit")
            line["counts"] = "@COUNTS@"
        else:
            limit = rng.choice((10, 20))
            pages = max(1, min(10, math.ceil(widget["totalReviewAmount"] / limit)))
            page = min(int(rng.paretovariate(1.5)) - 1, pages - 1)
            typed = rng.random() < 0.05 and widget.get("reviewAmount")
            line.update(route="reviews", widget=widget["id"], status=200, cache="hit",
                        limit=limit, skip=page * limit,
                        type=rng.choice(list(widget["reviewAmount"])) if typed else None)
        line.update(upstream_ms=None, bytes=0, duration_ms=0.1, trace_id=None)
        text = json.dumps(line, separators=(",", ":"))
        text = text.replace('"@COUNTS@"', counts_json(widget))
        outputs[rng.randrange(opts.instances)].write(text + "\n")
    for f in outputs:
        f.close()
    print(f"{len(times)} requests over {opts.hours:g} h from {opts.start} in "
          f"{opts.instances} file(s) {opts.out}-*.log", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
