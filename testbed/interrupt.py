"""SIGINT and SIGTERM become an exception, so a trial unwinds its own clean-up on the way out.

Kept apart from testbed/trial.py (which imports Mininet) so that simulated trials, which need
neither Mininet nor root, share the same interrupt handling.
"""
from __future__ import annotations

import signal
from typing import Any


class TrialInterrupted(Exception):
    """SIGINT or SIGTERM arrived: unwind, clean up, leave no partial result."""


def _raise_interrupted(signum: int, _frame: Any) -> None:
    raise TrialInterrupted(signal.Signals(signum).name)


def install_signal_handlers() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _raise_interrupted)
