"""The emulated path's tc trees, built stage by stage and read back from the kernel.

Per direction: HTB (rate) with a bfifo/pfifo leaf (the drop-tail queue, sized so that it and the
packet in transmission make up the configured buffer) on the router's egress, and
netem (one-way delay, random loss) on the bridge ports downstream. A size table removes the 14-byte
Ethernet header from every packet's length, so rates and byte limits count IP bytes, as dummynet
(the papers' emulator) did. The netem stage gets a packet limit far above the path's BDP so that the
drop-tail queue is the only place a packet can be dropped for lack of room (the mismatch between
shaper queue and window that the Westwood report's appendix warns about).
"""
from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass
from typing import Any, Protocol

from topologies.dumbbell import Stage, batch_command

QUEUE_HANDLE = "2:"           # the drop-tail leaf: the sampler and the fidelity checks read it
ETH_HEADER = 14
MTU = 1500
LATE_DEQUEUE_S = 0.005        # how late a dequeue HTB's bucket makes up for (htb_burst_bytes)


class NodeLike(Protocol):
    name: str

    def cmd(self, *args: str) -> str: ...


class ShapingError(RuntimeError):
    """A tc stage the kernel refused or did not apply as asked."""


def run(node: NodeLike, command: str) -> str:
    """Run a command in the node's namespace and fail loudly, naming it, if it fails."""
    out = node.cmd(f"{command}; echo __rc=$?")
    body, _, rc = out.rpartition("__rc=")
    if rc.strip() != "0":
        raise ShapingError(f"{node.name}: `{command}` failed: {body.strip()}")
    return body


@dataclass(frozen=True)
class DirectionSpec:
    rate_kbit: float
    delay_ms: float
    loss_pct: float
    limit_bytes: int | None
    limit_packets: int | None

    @classmethod
    def from_config(cls, d: dict[str, Any]) -> DirectionSpec:
        return cls(float(d["rate_kbit"]), float(d["delay_ms"]), float(d.get("loss_pct", 0)),
                   d.get("limit_bytes"), d.get("limit_packets"))

    @property
    def leaf_limit(self) -> tuple[str, int]:
        """The drop-tail leaf's limit: the configured buffer less the packet in transmission.

        HTB dequeues a packet as its transmission starts and holds the next one back for the
        packet's serialization time, so that packet is no longer in the bfifo while it is "on the
        wire". dummynet (the papers' emulator), like a modem's buffer, counts it until it has left.
        The leaf's limit is the buffer less one MTU (one packet for pfifo): a full buffer then
        delays a packet by exactly buffer/rate, 480 ms for 60000 bytes at 1 Mbit/s.
        """
        if self.limit_bytes is not None:
            return "bytes", int(self.limit_bytes) - MTU
        return "packets", int(self.limit_packets or 0) - 1

    @property
    def needs_netem(self) -> bool:
        return self.delay_ms > 0 or self.loss_pct > 0

    def netem_limit_packets(self, rtt_ms: float) -> int:
        """Room for everything the link can put in flight during the delay, many times over."""
        bdp_packets = self.rate_kbit * 1000 / 8 * max(rtt_ms, 1) / 1000 / 100
        return max(1000, 10 * math.ceil(bdp_packets))


def htb_burst_bytes(rate_kbit: float) -> int:
    """HTB's bucket: one packet plus LATE_DEQUEUE_S of tokens.

    With one packet's worth (tc's default at these rates), every dequeue that the qdisc watchdog
    makes late loses its tokens for good. Under QEMU TCG, where timers fire tens of microseconds
    late, a 10 Mbit/s class then drained at 93 % of its rate. The allowance lets the bucket make up
    a late dequeue; after an idle spell it lets packets leave at most LATE_DEQUEUE_S ahead of
    strict spacing (dummynet, the papers' emulator, released a 1 ms tick's worth at a time). 2 ms
    was not enough with netem delay at 10 Mbit/s: those cells drained 1.9-2.7 % slow while the
    guest's CPUs were 35 % busy, so late timers, not a lack of CPU.
    """
    return MTU + math.ceil(rate_kbit * 1000 / 8 * LATE_DEQUEUE_S)


def queue_commands(dev: str, spec: DirectionSpec) -> list[str]:
    rate = f"{spec.rate_kbit:g}kbit"
    burst = htb_burst_bytes(spec.rate_kbit)
    unit, limit = spec.leaf_limit
    leaf = f"bfifo limit {limit}" if unit == "bytes" else f"pfifo limit {limit}"
    return [
        f"tc qdisc replace dev {dev} root handle 1: stab overhead -{ETH_HEADER} linklayer ethernet "
        f"htb default 1 r2q 1",
        f"tc class add dev {dev} parent 1: classid 1:1 htb rate {rate} ceil {rate} "
        f"burst {burst} cburst {burst} quantum {MTU}",
        f"tc qdisc add dev {dev} parent 1:1 handle {QUEUE_HANDLE} {leaf}",
    ]


# With jitter, netem keeps packets in order only in its rate mode (each packet then leaves no sooner
# than the one before it); at this rate a packet's serialization is about a microsecond.
JITTER_RATE = "10gbit"


def netem_command(dev: str, spec: DirectionSpec, delay_ms: float, rtt_ms: float, jitter_ms: float = 0.0) -> str:
    loss = f" loss random {spec.loss_pct:g}%" if spec.loss_pct > 0 else ""
    jitter = f" {jitter_ms:.3f}ms rate {JITTER_RATE}" if jitter_ms > 0 else ""
    return (f"tc qdisc replace dev {dev} root handle 1: netem delay {delay_ms:.3f}ms{jitter}"
            f" limit {spec.netem_limit_packets(rtt_ms)}{loss}")


def run_tc(node: NodeLike, commands: list[str]) -> None:
    """`tc` commands in one `tc -batch` process (each spawn costs ~0.12 s under QEMU TCG); tc stops
    at the first that fails and says which, and `run` raises with that."""
    if commands:
        run(node, batch_command("tc", [c.removeprefix("tc ") for c in commands]))


def apply_queue(node: NodeLike, stage: Stage, spec: DirectionSpec) -> None:
    run_tc(node, queue_commands(stage.queue_dev, spec))


def apply_delay(node: NodeLike, stage: Stage, spec: DirectionSpec, delay_ms: float, rtt_ms: float,
                jitter_ms: float = 0.0) -> None:
    """netem on every delay port; delay_ms is the calibrated value (configured minus stack latency),
    jitter_ms a uniform per-packet deviation either side of it (order kept)."""
    if spec.needs_netem:
        run_tc(node, [netem_command(dev, spec, delay_ms, rtt_ms, jitter_ms) for dev in stage.delay_devs])


def read_back(node: NodeLike, dev: str) -> dict[str, Any]:
    """The qdisc and class tree as the kernel reports it: what provenance records."""
    qdiscs = json.loads(run(node, f"tc -j -d qdisc show dev {dev}") or "[]")
    # iproute2 6.1 prints HTB classes as text even with -j: keep the text, parse what we check.
    classes = run(node, f"tc -d class show dev {dev}").strip()
    return {"dev": dev, "qdiscs": qdiscs, "classes": classes}


def applied_queue_limit(tree: dict[str, Any]) -> tuple[str, int] | None:
    """(unit, limit) of the drop-tail leaf as applied: bytes for bfifo, packets for pfifo."""
    for q in tree["qdiscs"]:
        if q.get("handle") == QUEUE_HANDLE and q["kind"] in ("bfifo", "pfifo"):
            return ("bytes" if q["kind"] == "bfifo" else "packets"), int(q["options"]["limit"])
    return None


_UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def applied_rate_bit(tree: dict[str, Any]) -> float | None:
    """The HTB class 1:1 rate in bit/s, from `tc -d class show` text."""
    m = re.search(r"class htb 1:1 .*?\brate (\d+(?:\.\d+)?)([KMG]?bit)\b", tree["classes"], re.I)
    return float(m.group(1)) * _UNITS[m.group(2).lower()] if m else None


def applied_burst_bytes(tree: dict[str, Any]) -> int | None:
    """The HTB class 1:1 bucket (burst) in bytes, from `tc -d class show` text."""
    m = re.search(r"class htb 1:1 .*?\bburst (\d+)b\b", tree["classes"])
    return int(m.group(1)) if m else None


def applied_netem(tree: dict[str, Any]) -> dict[str, Any] | None:
    for q in tree["qdiscs"]:
        if q["kind"] == "netem":
            return q["options"]
    return None


@dataclass
class NodeSetup:
    """What prepares one node for a trial. Under QEMU TCG every process spawned costs ~0.12 s, so
    `script` spawns as few as it can: ethtool once per interface (it takes one device), sysctls
    written to /proc/sys by the shell itself, every `ip` change in one `ip -batch`."""

    ethtool: list[str]
    ip: list[str]                  # `ip -batch` lines: link and neighbour changes
    sysctls: dict[str, Any]

    @property
    def script(self) -> str:
        parts = [f"ethtool -K {dev} tso off gso off gro off" for dev in self.ethtool]
        parts += [f"echo {shlex.quote(str(v))} > /proc/sys/{k.replace('.', '/')}" for k, v in self.sysctls.items()]
        if self.ip:
            parts.append(batch_command("ip", self.ip))
        return " && ".join(parts)


def node_setup(net: Any, sysctls: dict[str, Any] | None = None) -> dict[str, NodeSetup]:
    """Per node:
    - offloads off on every interface: segmentation offloads would let one 64 KB 'packet' through
      the queue. `ethtool gso off` is not enough: TCP always builds software GSO packets;
      gso_max_segs 1 makes every skb one MTU-sized segment, so the drop-tail queue counts and drops
      real packets;
    - the scenario's sysctls;
    - permanent ARP entries between every host and the router, so no ARP request ever waits in the
      bottleneck queue (a first VoIP packet would otherwise wait behind a full queue for resolution).
    """
    for key, value in (sysctls or {}).items():
        if not re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)+", key):
            raise ShapingError(f"sysctl {key!r}: not a sysctl name")
        if not re.fullmatch(r"[A-Za-z0-9_.:-]+( [A-Za-z0-9_.:-]+)*", str(value)):
            raise ShapingError(f"sysctl {key}: {value!r} is not a sysctl value (words and numbers)")
    setups: dict[str, NodeSetup] = {}
    router = net.get("rt")
    for node in net.hosts:
        devs = [str(i) for i in node.intfList() if str(i) != "lo"]
        setups[node.name] = NodeSetup(devs, [f"link set dev {d} gso_max_segs 1" for d in devs], dict(sysctls or {}))
    for host in net.hosts:
        if host.name in ("rt", "bl", "br") or not host.IP():
            continue
        intf = host.defaultIntf()
        gw_intf = router.intf("rt-eth0" if host.IP().startswith("10.0.1.") else "rt-eth1")
        setups["rt"].ip.append(f"neigh replace {host.IP()} lladdr {intf.MAC()} dev {gw_intf} nud permanent")
        setups[host.name].ip.append(f"neigh replace {gw_intf.IP()} lladdr {gw_intf.MAC()} dev {intf} nud permanent")
    return setups


def configure_nodes(net: Any, sysctls: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run each node's `NodeSetup` in one round trip to its shell; what provenance records of it."""
    setups = node_setup(net, sysctls)
    for node in net.hosts:
        if setups[node.name].script:
            run(node, setups[node.name].script)
    return {"offloads": {n: {d: "tso gso gro off, gso_max_segs 1" for d in s.ethtool} for n, s in setups.items()},
            "neighbours": sum(line.startswith("neigh") for s in setups.values() for line in s.ip)}
