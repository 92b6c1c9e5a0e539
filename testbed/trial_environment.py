"""The environment variables a trial reads, checked before anything runs: the workflow calls
`check()` at load and every `tcprepro trial` before it builds anything, so a bad value is one line
naming the variable and the fix, never a traceback per trial or a value on a guest's command line."""
from __future__ import annotations

from testbed.placement import kernel_mode
from testbed.uml import Limits, userspace_from_env


def check() -> None:
    """Raise ValueError naming the first variable that is not a value it can take."""
    kernel_mode()
    Limits.from_env()
    userspace_from_env()
