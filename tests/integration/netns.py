"""Two network namespaces joined by a veth pair, for integration tests that need a real link.

`netns_pair` builds the namespaces, the veth pair and the addresses, and deletes all of it in a
`finally`; processes started through the yielded `NetnsPair` are ended before the namespaces go.
"""

from __future__ import annotations

import ipaddress
import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
_seq = itertools.count()


def end_process(p: subprocess.Popen[Any]) -> None:
    """Kill `p` if it still runs, and reap it."""
    if p.poll() is None:
        p.kill()
    p.wait(timeout=10)


@dataclass
class NetnsPair:
    """Namespace `a` (device `dev_a`, address `ip_a`) and `b` (`dev_b`, `ip_b`), one veth pair between them."""

    a: str
    b: str
    dev_a: str
    dev_b: str
    ip_a: str
    ip_b: str
    procs: list[subprocess.Popen[Any]] = field(default_factory=list)

    def popen(self, ns: str, *cmd: str, **kw: Any) -> subprocess.Popen[Any]:
        """Start `cmd` in namespace `ns`; it is killed when the pair is torn down."""
        p = subprocess.Popen(["ip", "netns", "exec", ns, *cmd], **kw)
        self.procs.append(p)
        return p

    def run(self, ns: str, *cmd: str) -> str:
        """Run `cmd` in namespace `ns` to completion; raise if it fails, else return its stdout."""
        return subprocess.run(["ip", "netns", "exec", ns, *cmd], check=True, capture_output=True, text=True).stdout

    def python(self, ns: str, *args: str, **kw: Any) -> subprocess.Popen[Any]:
        """Start this interpreter in namespace `ns`, from the checkout root (so `-m` finds the repo's packages)."""
        return self.popen(ns, sys.executable, *args, cwd=REPO, **kw)

    def end_processes(self) -> None:
        """End every process started here; if one will not die, still try the rest, then raise."""
        errors: list[BaseException] = []
        for p in self.procs:
            try:
                end_process(p)
            except Exception as e:
                errors.append(e)
        if errors:
            raise errors[0]


def _sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


@contextmanager
def netns_pair(prefix: str, subnet: str, dev_a: str = "va", dev_b: str = "vb") -> Iterator[NetnsPair]:
    """Namespaces `<prefix>A<tag>` and `<prefix>B<tag>` joined by veth `dev_a` <-> `dev_b`, all links up,
    with the first and second host addresses of the /24 `subnet` on `dev_a` and `dev_b`.

    Callers use distinct prefixes, subnets and device names so that tests in different files do not collide.
    """
    net = ipaddress.IPv4Network(subnet)
    if net.prefixlen != 24:
        raise ValueError(f"{subnet}: want a /24")
    ip_a, ip_b = str(net.network_address + 1), str(net.network_address + 2)
    tag = f"{os.getpid() % 100000}{next(_seq)}"
    pair = NetnsPair(f"{prefix}A{tag}", f"{prefix}B{tag}", dev_a, dev_b, ip_a, ip_b)
    created: list[str] = []
    try:
        for ns in (pair.a, pair.b):
            _sh("ip", "netns", "add", ns)
            created.append(ns)
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
        _sh("ip", "link", "add", dev_a, "netns", pair.a, "type", "veth", "peer", "name", dev_b, "netns", pair.b)
        _sh("ip", "-n", pair.a, "addr", "add", f"{ip_a}/24", "dev", dev_a)
        _sh("ip", "-n", pair.b, "addr", "add", f"{ip_b}/24", "dev", dev_b)
        _sh("ip", "-n", pair.a, "link", "set", dev_a, "up")
        _sh("ip", "-n", pair.b, "link", "set", dev_b, "up")
        yield pair
    finally:
        try:
            pair.end_processes()
        finally:
            # Deleting a namespace deletes the veth end in it, and with it the peer.
            for ns in created:
                subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
