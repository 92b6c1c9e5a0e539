"""The dumbbell: N senders and N receivers on either side of one router, the bottleneck.

    s0 ─┐                        ┌─ r0
    s1 ─┼─ bl ── rt-eth0 [rt] rt-eth1 ── br ─┼─ r1
    ... ┘                        └─ ...

The switches are Linux bridges, or Open vSwitch where a cell asks for it (topologies/switches.py).
Every node, switches included, lives in its own network namespace, so two trials on one kernel never
share an interface name. Where each stage of the emulated path sits (testbed/shaping.py builds it):
- rate and drop-tail queue: the router's egress (rt-eth1 forward, rt-eth0 reverse): the only place a
  packet waits for the link;
- one-way delay and random loss: netem on the bridge port toward each end host (br-eth<i> forward,
  bl-eth<i> reverse), downstream of the queue and outside every host, so no sender socket is charged
  for packets in flight (TCP small queues would otherwise throttle the sender).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mininet.link import Intf
from mininet.node import Node
from mininet.topo import Topo

from topologies import switches

LEFT_NET, RIGHT_NET = "10.0.1", "10.0.2"
ROUTER = "rt"
LEFT_BRIDGE, RIGHT_BRIDGE = "bl", "br"


def sender(i: int) -> str:
    return f"s{i}"


def receiver(i: int) -> str:
    return f"r{i}"


def sender_ip(i: int) -> str:
    return f"{LEFT_NET}.{10 + i}"


def receiver_ip(i: int) -> str:
    return f"{RIGHT_NET}.{10 + i}"


@dataclass(frozen=True)
class Stage:
    """Where one direction of the path is shaped: the router's egress and the delay ports."""

    queue_node: str
    queue_dev: str
    delay_node: str
    delay_devs: tuple[str, ...]


def stages(pairs: int) -> dict[str, Stage]:
    """forward = senders to receivers (data); reverse = receivers to senders (ACKs)."""
    return {
        "forward": Stage(ROUTER, f"{ROUTER}-eth1", RIGHT_BRIDGE,
                         tuple(f"{RIGHT_BRIDGE}-eth{i + 1}" for i in range(pairs))),
        "reverse": Stage(ROUTER, f"{ROUTER}-eth0", LEFT_BRIDGE,
                         tuple(f"{LEFT_BRIDGE}-eth{i + 1}" for i in range(pairs))),
    }


def batch_command(tool: str, lines: list[str]) -> str:
    """A shell command feeding `lines` to `<tool> -batch -` (ip, tc): one process for all of them.
    printf's format is fixed, so a '%' in a line (netem's loss) stays literal."""
    for line in lines:
        if "'" in line:
            raise ValueError(f"{tool} -batch line with a quote: {line!r}")
    return "printf '%s\\n' " + " ".join(f"'{line}'" for line in lines) + f" | {tool} -batch -"


class QuietIntf(Intf):
    """An interface that records its address and leaves configuring it to its node (`Batched`):
    Mininet's own Intf runs one ifconfig per interface and setting."""

    prefixLen: str | int | None

    def config(self, mac: str | None = None, ip: str | None = None, **params: Any) -> dict[str, Any]:
        if ip:
            self.ip, self.prefixLen = ip.split("/")
        return {}

    def setIP(self, ipstr: str, prefixLen: int | None = None) -> None:
        self.ip, self.prefixLen = ipstr.split("/") if "/" in ipstr else (ipstr, prefixLen)


class Batched(Node):
    """A node that configures itself with one `ip -batch` (one process). Under QEMU TCG each process
    spawned costs ~0.12 s, and Mininet's Node.config spends one per interface, address and route."""

    def extra_ip(self) -> list[str]:
        """`ip -batch` lines a node kind adds after its interfaces are up."""
        return []

    def extra_shell(self) -> list[str]:
        """Shell commands (builtins, no process) a node kind runs before its `ip -batch`."""
        return []

    def config(self, mac: str | None = None, ip: str | None = None, defaultRoute: str | None = None,
               lo: str = "up", **params: Any) -> dict[str, Any]:
        if ip and self.defaultIntf() is not None:
            self.defaultIntf().setIP(ip)
        lines = ["link set lo up"]
        for intf in self.intfList():
            if str(intf) == "lo":
                continue
            lines.append(f"link set {intf} up")
            if intf.ip:
                lines.append(f"addr add {intf.ip}/{intf.prefixLen} dev {intf}")
        if defaultRoute:
            lines.append(f"route replace default {defaultRoute}")
        lines += self.extra_ip()
        script = " && ".join([*self.extra_shell(), batch_command("ip", lines)])
        out = self.cmd(f"{script}; echo __rc=$?")
        body, _, rc = out.rpartition("__rc=")
        if rc.strip() != "0":
            raise RuntimeError(f"{self.name}: configuring failed: {body.strip()[-300:]}")
        return {}


class EndHost(Batched):
    """A sender or receiver."""


class Router(Batched):
    """A namespace that forwards IPv4 between its interfaces."""

    def extra_shell(self) -> list[str]:
        return ["echo 1 > /proc/sys/net/ipv4/ip_forward"]


class Bridge(Batched):
    """A Linux bridge inside its own namespace: a switch whose ports never collide across trials."""

    def extra_ip(self) -> list[str]:
        return switches.linux_bridge_lines(self)

    def start_switch(self) -> dict[str, Any]:
        """Nothing to start: the bridge forwards once `config` has made it."""
        return {"kind": switches.LINUX_BRIDGE}

    def switch_counts(self) -> dict[str, int]:
        """No counts of its own: what a bridge forwards, its ports' counters say."""
        return {}


class OvsBridge(Batched):
    """Open vSwitch inside its own namespace (topologies/switches.py): its ports come up in the
    node's one `ip -batch`; `start_switch` then starts its daemons, which take them into their
    bridge, and they stop with the node. Not in `config`: the daemons' first act is a blocking
    getrandom(), which on the virtual-time lane returns only once the trial has rekeyed the
    guest's random state (testbed/trial.py rekey_guest_random), after the network exists."""

    ovs: switches.OvsDaemons | None = None

    def start_switch(self) -> dict[str, Any]:
        self.ovs = switches.OvsDaemons(self)
        return self.ovs.start()

    def switch_counts(self) -> dict[str, int]:
        assert self.ovs is not None
        return self.ovs.datapath_counts()

    def terminate(self) -> None:
        if self.ovs is not None:
            self.ovs.stop()
        super().terminate()


SWITCH_CLASSES: dict[str, type[Bridge | OvsBridge]] = {switches.LINUX_BRIDGE: Bridge, switches.OVS: OvsBridge}


class Dumbbell(Topo):
    """Declaration only: Mininet builds it (with `QuietIntf` links, each node configuring itself in
    one process); testbed/shaping.py shapes it."""

    def build(self, pairs: int = 1, switch: str = switches.LINUX_BRIDGE) -> None:
        if switch not in SWITCH_CLASSES:
            raise ValueError(f"unknown switch {switch!r}: one of {', '.join(SWITCH_CLASSES)}")
        rt = self.addHost(ROUTER, cls=Router, ip=None)
        bl = self.addHost(LEFT_BRIDGE, cls=SWITCH_CLASSES[switch], ip=None)
        br = self.addHost(RIGHT_BRIDGE, cls=SWITCH_CLASSES[switch], ip=None)
        # Bridge ports are numbered so that port i+1 faces host i; port 0 faces the router.
        self.addLink(bl, rt, intfName1=f"{LEFT_BRIDGE}-eth0", intfName2=f"{ROUTER}-eth0",
                     params2={"ip": f"{LEFT_NET}.1/24"})
        self.addLink(br, rt, intfName1=f"{RIGHT_BRIDGE}-eth0", intfName2=f"{ROUTER}-eth1",
                     params2={"ip": f"{RIGHT_NET}.1/24"})
        for i in range(pairs):
            s = self.addHost(sender(i), cls=EndHost, ip=f"{sender_ip(i)}/24", defaultRoute=f"via {LEFT_NET}.1")
            r = self.addHost(receiver(i), cls=EndHost, ip=f"{receiver_ip(i)}/24", defaultRoute=f"via {RIGHT_NET}.1")
            self.addLink(s, bl, intfName1=f"{sender(i)}-eth0", intfName2=f"{LEFT_BRIDGE}-eth{i + 1}")
            self.addLink(r, br, intfName1=f"{receiver(i)}-eth0", intfName2=f"{RIGHT_BRIDGE}-eth{i + 1}")
