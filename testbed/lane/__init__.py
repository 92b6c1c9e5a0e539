"""The lanes a trial runs on, one module each behind one interface (testbed/lane/base.py).

Each is a singleton: code holds the lane placement chose and asks it, or compares by identity
(`lane is UML`); a lane's name is read only where a person or a file names it (TCPREPRO_KERNEL, a
paper's `lane:`, provenance).
"""
from __future__ import annotations

from testbed.lane.base import Lane
from testbed.lane.host import HostLane
from testbed.lane.simulated import SimulatedLane
from testbed.lane.uml import UmlLane
from testbed.lane.vm import VmLane

UML: Lane = UmlLane()
HOST: Lane = HostLane()
VM: Lane = VmLane()
SIMULATED: Lane = SimulatedLane()
# The lanes that measure a kernel, in the order `auto` tries them: virtual time first (exact, and no
# load on the host can spoil a trial), then this kernel in real time, then the VM.
MEASURED: tuple[Lane, ...] = (UML, HOST, VM)
ALL: tuple[Lane, ...] = (*MEASURED, SIMULATED)


def by_name(name: str) -> Lane:
    """The lane a person or a file names (KeyError if none)."""
    return {lane.name: lane for lane in ALL}[name]


__all__ = ["ALL", "HOST", "MEASURED", "SIMULATED", "UML", "VM", "Lane", "by_name"]
