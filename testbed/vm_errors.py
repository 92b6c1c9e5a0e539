"""What the VM lane raises: one base class, so a caller catches every way the lane failed in one
clause (the CLI reports them all alike), and subclasses for the failures a caller tells apart."""
from __future__ import annotations


class VMError(RuntimeError):
    """The lane could not run a job (the VM died, or would not start)."""


class VMBootError(VMError):
    """The VM did not come up; the message names the console log and quotes its end."""


class KernelNotFoundError(VMError):
    """No pinned kernel image is installed."""
