"""The switch on either side of the dumbbell's router: a Linux bridge, or Open vSwitch.

Every reference cell runs the Linux bridge. Which switch sat beside the papers' routers is an open
choice (`switch` under each measured paper's reference.choices): the design card names Open
vSwitch, Mininet's default switch. Either lives in its own network namespace.

Open vSwitch here is Debian's ovsdb-server and ovs-vswitchd over the kernel datapath
(CONFIG_OPENVSWITCH), one pair of daemons per namespace (the kernel keeps one datapath per
namespace), standalone with no controller: the bridge's NORMAL action, a MAC-learning switch. The
daemons keep their database, sockets and logs in a folder of their own, started and stopped with
the node, so two switches (and two trials) never share one.
"""
from __future__ import annotations

import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from mininet.node import Node

LINUX_BRIDGE, OVS = "linux-bridge", "ovs"
BRIDGE = "br0"
OVS_SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
# Daemon log levels: warnings and worse to the log file, nothing to a console nobody reads.
OVS_LOG = ["-vconsole:off", "-vsyslog:off", "-vfile:warn"]
START_TIMEOUT_S = 30
# ovs-vswitchd 3.1 counts the CPUs it may use (count_cpu_cores) only once its monotonic clock
# reads 10 s (a refresh interval measured from 0), and until then runs no upcall handler in its
# per-CPU dispatch mode: the datapath's first packet of each flow goes nowhere. A machine has been
# up longer than that; a virtual-time guest starts its trial at 2 s, so the daemons wait for it.
MIN_UPTIME_S = 11.0
PORT_LINE = re.compile(r"^\s+(\S+) \d+/\d+:", re.MULTILINE)


def ports(node: Node) -> list[str]:
    return [str(i) for i in node.intfList() if str(i) != "lo"]


def linux_bridge_lines(node: Node) -> list[str]:
    """`ip -batch` lines: a Linux bridge over every port, no STP, no forwarding delay."""
    return [f"link add name {BRIDGE} type bridge forward_delay 0 stp_state 0",
            *[f"link set {p} master {BRIDGE}" for p in ports(node)], f"link set {BRIDGE} up"]


def wait_for_uptime(seconds: float) -> None:
    """Sleep until the kernel has been up `seconds` (a virtual-time guest's clock starts at its
    boot, two seconds before its job: the sleep is virtual time)."""
    up = float(Path("/proc/uptime").read_text().split()[0])
    if up < seconds:
        time.sleep(seconds - up)


def datapath_ports(dpif_show: str) -> list[str]:
    """The port names `ovs-appctl dpif/show` lists under its bridges ("    bl-eth0 3/4: (system)")."""
    return PORT_LINE.findall(dpif_show)


def datapath_head(dpif_show: str) -> tuple[str, dict[str, int]]:
    """The datapath's name and its packet counts, from `dpif/show`'s first line ("system@ovs-system:
    hit:120 missed:4"): `hit` forwarded by a flow in the kernel, `missed` sent up to ovs-vswitchd
    (a flow's first packet)."""
    name, _, counts = dpif_show.splitlines()[0].partition(":")
    return name.strip(), {k: int(v) for k, v in (c.split(":") for c in counts.split())}


class OvsDaemons:
    """ovsdb-server and ovs-vswitchd in one node's namespace, and the folder they keep state in."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.dir = Path(tempfile.mkdtemp(prefix=f"tcprepro-ovs-{node.name}-"))
        self.db = f"unix:{self.dir / 'db.sock'}"
        # OVS_RUNDIR: ovs-vswitchd also makes a management socket per bridge there (<bridge>.mgmt).
        self.env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "OVS_RUNDIR": str(self.dir),
                    "OVS_LOGDIR": str(self.dir), "OVS_DBDIR": str(self.dir), "OVS_SYSCONFDIR": str(self.dir)}
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def run(self, *argv: str) -> str:
        """A short OVS command in the node's namespace; its failure names the command and its error."""
        proc = self.node.popen(list(argv), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate(timeout=START_TIMEOUT_S + 10)
        if proc.returncode != 0:
            raise RuntimeError(f"{self.node.name}: {' '.join(argv)} failed ({proc.returncode}): {err.strip()[-400:]}"
                               + self.log_tail())
        return out

    def daemon(self, name: str, *argv: str) -> None:
        # setpriv: the daemon dies with the trial's runner, whatever ends it (testbed/trial.py).
        log = self.dir / f"{name}.log"
        with (self.dir / f"{name}.stderr").open("w") as err:
            proc = self.node.popen(["setpriv", "--pdeathsig", "KILL", "--", name, *argv, *OVS_LOG,
                                    f"--log-file={log}", f"--pidfile={self.dir / name}.pid",
                                    f"--unixctl={self.dir / name}.ctl", "--no-chdir"],
                                   env=self.env, stdout=subprocess.DEVNULL, stderr=err)
        self.procs.append((name, proc))

    def start(self) -> dict[str, Any]:
        """Database, daemons, then the bridge over every port; returns what provenance records.
        ovs-vsctl returns once ovs-vswitchd has applied the change (it waits for the bridge's
        configuration to catch up), so the ports are in the kernel datapath when it does;
        `datapath_ports` checks that they are."""
        wait_for_uptime(MIN_UPTIME_S)
        self.run("ovsdb-tool", "create", str(self.dir / "conf.db"), str(OVS_SCHEMA))
        self.daemon("ovsdb-server", str(self.dir / "conf.db"), f"--remote=p{self.db}")
        # --retry: connects once ovsdb-server listens (--timeout bounds the wait)
        self.run("ovs-vsctl", f"--db={self.db}", f"--timeout={START_TIMEOUT_S}", "--retry", "--no-wait", "init")
        self.daemon("ovs-vswitchd", self.db)
        cmd = ["ovs-vsctl", f"--db={self.db}", f"--timeout={START_TIMEOUT_S}", "add-br", BRIDGE,
               "--", "set-fail-mode", BRIDGE, "standalone"]
        for p in ports(self.node):
            cmd += ["--", "add-port", BRIDGE, p]
        self.run(*cmd)
        shown = self.dpif_show()
        missing = sorted(set(ports(self.node)) - set(datapath_ports(shown)))
        if missing:
            raise RuntimeError(f"{self.node.name}: Open vSwitch did not attach {', '.join(missing)} to its "
                               f"kernel datapath (dpif/show: {shown.strip()!r})" + self.log_tail())
        version = self.run("ovs-vswitchd", "--version").splitlines()[0].strip()
        return {"kind": OVS, "version": version, "datapath": datapath_head(shown)[0], "fail_mode": "standalone"}

    def dpif_show(self) -> str:
        return self.run("ovs-appctl", "-t", str(self.dir / "ovs-vswitchd.ctl"), "dpif/show")

    def datapath_counts(self) -> dict[str, int]:
        return datapath_head(self.dpif_show())[1]

    def log_tail(self) -> str:
        tails = []
        for name in ("ovsdb-server.log", "ovsdb-server.stderr", "ovs-vswitchd.log", "ovs-vswitchd.stderr"):
            path = self.dir / name
            lines = path.read_text(errors="replace").strip().splitlines()[-5:] if path.exists() else []
            if lines:
                tails.append(f"{name}: " + " | ".join(lines))
        return ("; " + "; ".join(tails)) if tails else ""

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM, as the daemons expect; then the folder. The datapath goes with the namespace."""
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for _, proc in reversed(self.procs):
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
        shutil.rmtree(self.dir, ignore_errors=True)
