"""Results folders: a new one per run (never overwriting another), bench/results/latest, and
--publish's copy into the tracked bench/published/."""

import os
import shutil

from . import BENCH_DIR, RESULTS_ROOT
from .console import UsageError

PUBLISHED_DIR = os.path.join(BENCH_DIR, "published")


def new_folder(out, stamp, tag, forbidden_under=None):
    """--out OUT (created; it must be empty), or bench/results/STAMP-TAG/ with a -2, -3...
    suffix when a run of the same second has it. FORBIDDEN_UNDER: a folder --out must not be in
    (the published figures, which only --publish writes)."""
    if out:
        if os.path.exists(out):
            if not os.path.isdir(out):
                raise UsageError(f"--out {out} is not a folder")
            if os.listdir(out):
                raise UsageError(f"--out {out} is not empty (a run never overwrites another)")
        folder = os.path.abspath(out)
        if forbidden_under and folder.startswith(forbidden_under):
            raise UsageError("--out must not be under bench/published/ (use --publish)")
        os.makedirs(folder, exist_ok=True)
        return folder
    os.makedirs(RESULTS_ROOT, exist_ok=True)
    folder, suffix = os.path.join(RESULTS_ROOT, f"{stamp}-{tag}"), 2
    while True:
        try:
            os.mkdir(folder)
            return folder
        except FileExistsError:
            folder = os.path.join(RESULTS_ROOT, f"{stamp}-{tag}-{suffix}")
            suffix += 1


def point_latest_at(folder):
    """bench/results/latest → FOLDER, when FOLDER is under bench/results/ (a run elsewhere,
    --out, leaves it alone)."""
    if os.path.dirname(folder) != RESULTS_ROOT:
        return
    link = os.path.join(RESULTS_ROOT, "latest")
    temporary = link + ".new"
    if os.path.lexists(temporary):
        os.remove(temporary)
    os.symlink(os.path.basename(folder), temporary)
    os.replace(temporary, link)


def publish(folder, published_dir, summary_path=None, summary_target=None):
    """Replaces PUBLISHED_DIR with a copy of FOLDER (and copies SUMMARY_PATH to
    SUMMARY_TARGET when given)."""
    shutil.rmtree(published_dir, ignore_errors=True)
    shutil.copytree(folder, published_dir, symlinks=True)
    if summary_path:
        shutil.copyfile(summary_path, summary_target)
