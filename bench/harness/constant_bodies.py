"""The bodies the constant server (and nginx static) serve: real stub answers as large as what
the scenario asks for on average.

From the first SAMPLE_REQUESTS requests of the scenario's pool, the valid ones (200 from the
stub) are fetched once; the widget data and the reviews page closest to the mean size of each
kind are served. A kind absent from the sample falls back to the first widget's data, or its
first page of the scenario's first limit.
"""

import os
import re
import subprocess
import time
from dataclasses import dataclass

from .console import Failure
from .loopback import get
from .services import first_widget_id

SAMPLE_REQUESTS = 300
_VALID_TARGET = re.compile(
    r"/api/v1/widgets/widget/[A-Za-z0-9._~-]+/(reviews/)?remote(\?[A-Za-z0-9._~%=&+,;:-]*)?")


@dataclass
class ConstantBodies:
    widget_path: str
    reviews_path: str
    widget_bytes: int
    reviews_bytes: int
    note: str


def sample_targets(wg_bench, scenario_file, ids_file):
    """The GET targets among the scenario's first SAMPLE_REQUESTS requests."""
    result = subprocess.run([wg_bench, "--scenario", scenario_file, "--ids", ids_file,
                             "--print-requests", str(SAMPLE_REQUESTS)],
                            capture_output=True, text=True)
    targets = []
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "GET" and _VALID_TARGET.fullmatch(fields[1]):
            targets.append(fields[1])
    return targets


def closest_to_mean(answers):
    """{kind: (count, mean bytes, the target closest to the mean)} of (kind, size, target)
    answers; the first of equally close ones."""
    chosen = {}
    for kind in ("widget", "reviews"):
        of_kind = [(size, target) for k, size, target in answers if k == kind]
        if of_kind:
            mean = sum(size for size, _ in of_kind) / len(of_kind)
            best = min(of_kind, key=lambda answer: (answer[0] - mean) ** 2)
            chosen[kind] = (len(of_kind), mean, best[1])
    return chosen


def fetch_constant_bodies(wg_bench, scenario_file, ids_file, stub_port, first_limit, work):
    with open(ids_file, "rb") as f:
        first_id = first_widget_id(f.read())
    answers = []
    deadline = time.monotonic() + 120
    for target in sample_targets(wg_bench, scenario_file, ids_file):
        if time.monotonic() > deadline:
            break
        try:
            status, body = get(stub_port, target)
        except Failure:
            continue
        if status == 200:
            kind = "reviews" if "/reviews/remote" in target else "widget"
            answers.append((kind, len(body), target))
    chosen = closest_to_mean(answers)

    if "widget" in chosen:
        count, mean, widget_target = chosen["widget"]
        widget_note = f"mean of {count} sampled widget answers {mean:.0f} bytes"
    else:
        widget_target = f"/api/v1/widgets/widget/{first_id}/remote"
        widget_note = "no widget request in the sample: the first widget's data"
    if "reviews" in chosen:
        count, mean, reviews_target = chosen["reviews"]
        reviews_note = f"mean of {count} sampled reviews pages {mean:.0f} bytes"
    else:
        reviews_target = (f"/api/v1/widgets/widget/{first_id}/reviews/remote"
                          f"?limit={first_limit}&skip=0")
        reviews_note = ("no reviews request in the sample: the first widget's page of limit "
                        f"{first_limit}")

    paths = []
    for name, target in (("constant.body", widget_target),
                         ("constant-reviews.body", reviews_target)):
        path = os.path.join(work, name)
        with open(path, "wb") as f:
            f.write(get(stub_port, target)[1])
        paths.append(path)
    widget_bytes, reviews_bytes = (os.path.getsize(p) for p in paths)
    note = (f"widget data {widget_bytes} bytes ({widget_note}), reviews page {reviews_bytes} "
            f"bytes ({reviews_note})")
    return ConstantBodies(paths[0], paths[1], widget_bytes, reviews_bytes, note)
