"""The dumbbell: N senders and N receivers on either side of one router, the bottleneck.

    s0 ─┐                        ┌─ r0
    s1 ─┼─ bl ── rt-eth0 [rt] rt-eth1 ── br ─┼─ r1
    ... ┘                        └─ ...

Every node, bridges included, lives in its own network namespace, so two trials on one kernel never
share an interface name. Where each stage of the emulated path sits (testbed/shaping.py builds it):
- rate and drop-tail queue: the router's egress (rt-eth1 forward, rt-eth0 reverse): the only place a
  packet waits for the link;
- one-way delay and random loss: netem on the bridge port toward each end host (br-eth<i> forward,
  bl-eth<i> reverse), downstream of the queue and outside every host, so no sender socket is charged
  for packets in flight (TCP small queues would otherwise throttle the sender).
"""
from __future__ import annotations

from dataclasses import dataclass

from mininet.node import Node
from mininet.topo import Topo

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


class Router(Node):
    """A namespace that forwards IPv4 between its interfaces."""

    def config(self, **params):
        result = super().config(**params)
        self.cmd("sysctl -qw net.ipv4.ip_forward=1")
        return result


class Bridge(Node):
    """A Linux bridge inside its own namespace: a switch whose ports never collide across trials."""

    def config(self, **params):
        result = super().config(**params)
        ports = " ".join(str(i) for i in self.intfList() if str(i) != "lo")
        self.cmd(
            "ip link add name br0 type bridge forward_delay 0 stp_state 0 && "
            f"for p in {ports}; do ip link set $p master br0 && ip link set $p up; done && "
            "ip link set br0 up"
        )
        return result


class Dumbbell(Topo):
    """Declaration only: Mininet builds it; testbed/shaping.py shapes it."""

    def build(self, pairs: int = 1) -> None:
        rt = self.addHost(ROUTER, cls=Router, ip=None)
        bl = self.addHost(LEFT_BRIDGE, cls=Bridge, ip=None)
        br = self.addHost(RIGHT_BRIDGE, cls=Bridge, ip=None)
        # Bridge ports are numbered so that port i+1 faces host i; port 0 faces the router.
        self.addLink(bl, rt, intfName1=f"{LEFT_BRIDGE}-eth0", intfName2=f"{ROUTER}-eth0",
                     params2={"ip": f"{LEFT_NET}.1/24"})
        self.addLink(br, rt, intfName1=f"{RIGHT_BRIDGE}-eth0", intfName2=f"{ROUTER}-eth1",
                     params2={"ip": f"{RIGHT_NET}.1/24"})
        for i in range(pairs):
            s = self.addHost(sender(i), ip=f"{sender_ip(i)}/24", defaultRoute=f"via {LEFT_NET}.1")
            r = self.addHost(receiver(i), ip=f"{receiver_ip(i)}/24", defaultRoute=f"via {RIGHT_NET}.1")
            self.addLink(s, bl, intfName1=f"{sender(i)}-eth0", intfName2=f"{LEFT_BRIDGE}-eth{i + 1}")
            self.addLink(r, br, intfName1=f"{receiver(i)}-eth0", intfName2=f"{RIGHT_BRIDGE}-eth{i + 1}")
