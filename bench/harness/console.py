"""Messages on stderr, and the two ways a command fails: a usage error (exit 2) or a failure
(exit 1)."""

import sys


class UsageError(Exception):
    """Bad arguments: the command exits 2 and has started nothing."""


class Failure(RuntimeError):
    """Something the run needs did not work: the command exits 1."""


class Interrupted(Exception):
    """Ctrl-C, SIGTERM or SIGHUP: everything started is stopped, and the command exits 130."""


class Logger:
    def __init__(self, prefix):
        self.prefix = prefix

    def __call__(self, message):
        print(f"[{self.prefix}] {message}", file=sys.stderr, flush=True)
