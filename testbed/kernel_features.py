"""The features a lane's kernel is checked for, by name, and the verdict on one.

Every way of learning a kernel's features speaks of them by these names: the running kernel is
probed (testbed/host_probes.py tries each qdisc with its `tc_args`), a kernel that is not running is
read (testbed/kernel_config.py looks for the `KernelOption`s that give each feature), and placement
(testbed/placement.py) compares the lanes' verdicts name by name.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from cc import registry as cc_registry


class KernelOption(NamedTuple):
    symbol: str                    # without the CONFIG_ prefix
    module: str | None = None      # the .ko that provides it when the option is =m


class Qdisc(NamedTuple):
    tc_args: tuple[str, ...]       # what `tc qdisc add dev X` is given to try it
    option: KernelOption


QDISCS: dict[str, Qdisc] = {
    "htb": Qdisc(("root", "handle", "1:", "htb", "default", "1"), KernelOption("NET_SCH_HTB", "sch_htb")),
    "tbf": Qdisc(("root", "handle", "1:", "tbf", "rate", "1mbit", "burst", "32k", "latency", "50ms"),
                 KernelOption("NET_SCH_TBF", "sch_tbf")),
    "bfifo": Qdisc(("root", "handle", "1:", "bfifo", "limit", "60000"), KernelOption("NET_SCH_FIFO")),
    "pfifo": Qdisc(("root", "handle", "1:", "pfifo", "limit", "100"), KernelOption("NET_SCH_FIFO")),
    "netem": Qdisc(("root", "handle", "1:", "netem", "delay", "10ms", "loss", "1%"),
                   KernelOption("NET_SCH_NETEM", "sch_netem")),
    "ingress": Qdisc(("ingress",), KernelOption("NET_SCH_INGRESS", "sch_ingress")),
    "prio": Qdisc(("root", "handle", "1:", "prio"), KernelOption("NET_SCH_PRIO", "sch_prio")),
}
# Kernel features and the options that give them, for reading an installed kernel statically.
KERNEL_OPTIONS: dict[str, tuple[KernelOption, ...]] = {
    "netns+veth": (KernelOption("NET_NS"), KernelOption("VETH", "veth")),
    **{f"qdisc:{kind}": (q.option,) for kind, q in QDISCS.items()},
    "ifb": (KernelOption("IFB", "ifb"),),
    "bridge": (KernelOption("BRIDGE", "bridge"),),
    # Open vSwitch's kernel datapath: the switch as an open choice (topologies/switches.py).
    "switch:ovs": (KernelOption("OPENVSWITCH", "openvswitch"),),
    "tracefs": (KernelOption("TRACING"),),
    "modules": (KernelOption("MODULES"),),
}


# A cell whose algorithm reads a parameter only when it registers (at boot, for a built-in one) needs
# a kernel booted with the cell's value: cc/registry.py read_at_register.
BOOT_PARAMS = "kernel:boot-module-params"
BOOT_PARAMS_FIX = ("run the cell on the virtual-time lane, which boots every trial with its cell's parameters "
                   "(unset TCPREPRO_KERNEL, or set it to uml; make uml-kernel)")


@dataclass(frozen=True)
class Check:
    """One feature's verdict on one kernel; `fix` says what to do when `ok` is false."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


def by_name(checks: Iterable[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def cc_names(extra: Iterable[str] = ()) -> list[str]:
    """The congestion controls a kernel is checked for: the registry's, then `extra`."""
    return list(dict.fromkeys([*cc_registry.registry(), *extra]))
