"""The ``ctshard`` console script and ``python -m ctshard``: the command line of the ``ctshard``
tool, run by the same C++ code (``examples/cli``, linked into the extension), not a copy; and
``check-rule`` (``ctshard._check_rule_cli``), which needs torch."""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence

from . import _ext


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ctshard`` command line with ``argv`` (default ``sys.argv[1:]``) and return its exit
    status: output on the process's standard output and error, as the tool's. Ctrl-C and a closed
    pipe end the process as they end the tool (their default actions: Python's handlers cannot
    run while the C++ code holds the thread)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not all(isinstance(a, str) for a in args):
        raise TypeError(f"ctshard command line: argv must be strings, got {args!r}")
    if args[:1] == ["check-rule"]:  # runs a torch reference: the one subcommand written in Python
        from ._check_rule_cli import main as check_rule_main

        return check_rule_main(args)
    for name in ("SIGINT", "SIGPIPE"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    sys.stdout.flush()
    sys.stderr.flush()
    return int(_ext.cli(["ctshard", *args]))
