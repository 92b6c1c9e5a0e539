"""One trial, start to finish: build the network, shape it, check it, measure, tear it down.

The lifecycle lives here and nowhere else. Everything the trial starts is owned by a context that
undoes it on success, failure, or SIGINT/SIGTERM (which the CLI turns into TrialInterrupted), and
every process it starts carries a parent-death signal, so even a SIGKILLed runner leaves no traffic
generator behind (its namespaces die with their last process; tracefs instances are swept later).
The output directory is written as <trial>.partial and renamed into place only when complete.
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import platform
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mininet.net import Mininet

from cc.registry import CcChoice, provide
from configuration import CHECKOUT, environment
from testbed import fidelity, port_slots, shaping
from testbed.interrupt import TrialInterrupted, install_signal_handlers
from testbed.tracing import ProbeTrace
from topologies import switches
from topologies.dumbbell import (
    LEFT_BRIDGE,
    RIGHT_BRIDGE,
    RIGHT_NET,
    Dumbbell,
    QuietIntf,
    receiver,
    receiver_ip,
    sender,
    sender_ip,
    stages,
)

log = logging.getLogger("tcprepro.trial")
PYTHON = sys.executable
# Our own helper processes (VoIP, qdisc sampler) use the standard library only: `-S` skips site and
# its .pth processing, a second of start-up under QEMU TCG; they run from the checkout so `-m` finds them.
HELPER = [PYTHON, "-S", "-m"]
SAMPLE_INTERVAL_S = 0.01
START_LEAD_S = 0.5            # traffic starts this long after the last process is ready
UML_START_GRID_S = 10         # on the virtual-time lane, at a multiple of this (run_traffic)
SETUP_NICENESS = 10
DRAIN_S = 1.0                 # receivers keep listening this long after senders stop
PING_INTERVAL_S = 0.01        # calibration pings: 30 of them, 10 ms apart
SOCKET_CHECK_AFTER_S = 0.5    # a flow's congestion control is read this long after its handshake
IPERF3_CONTROL_BYTES = 4096   # more than iperf3's control connection moves before its test ends


def bulk_generator(spec: dict[str, Any]) -> str:
    """What runs the timed bulk flows: the spec's bulk_generator (config/workflow.yaml, or
    TCPREPRO_BULK_GENERATOR through testbed/run.py). Fixed-size flows run iperf2 everywhere."""
    return str(spec["bulk_generator"])


@dataclass
class Processes:
    """Every process the trial started, stopped in reverse order on exit."""

    procs: list[tuple[str, subprocess.Popen]] = field(default_factory=list)
    files: list[Any] = field(default_factory=list)

    def log_file(self, path: Path) -> Any:
        """A file a process writes its output to; closed here when the trial's processes stop."""
        fh = path.open("w")
        self.files.append(fh)
        return fh

    def start(self, node: Any, name: str, argv: list[str], **kw: Any) -> subprocess.Popen:
        # setpriv: the process is killed if this runner dies, whatever the cause. SIGKILL, not
        # SIGTERM: an iperf2 client takes SIGTERM as "stop when the test ends" and would hold its
        # namespace for the rest of its -t; a trial whose runner died is discarded anyway.
        kw.setdefault("cwd", str(CHECKOUT))
        proc = node.popen(["setpriv", "--pdeathsig", "KILL", "--", *argv], **kw)
        self.procs.append((name, proc))
        return proc

    def stop(self, name_prefix: str = "", timeout: float = 5.0) -> None:
        for name, proc in reversed(self.procs):
            if name.startswith(name_prefix) and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for name, proc in reversed(self.procs):
            if not name.startswith(name_prefix):
                continue
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop on SIGTERM: killing it", name)
                proc.kill()
                proc.wait()
        if not name_prefix:
            for fh in self.files:
                fh.close()
            self.files.clear()


def cpu_times() -> list[int]:
    """The aggregate `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal (ticks)."""
    with open("/proc/stat") as fh:
        return [int(x) for x in fh.readline().split()[1:9]]


def cpu_shares(before: list[int], after: list[int]) -> dict[str, float | int]:
    """Shares of all CPUs' time between two `cpu_times` readings: how busy the measuring kernel was."""
    d = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(d) or 1
    user, nice, system, idle, iowait, irq, softirq, steal = d
    return {"cpus": os.cpu_count() or 1, "busy": round(1 - (idle + iowait) / total, 4),
            "user": round((user + nice) / total, 4), "system": round(system / total, 4),
            "irq": round(irq / total, 4), "softirq": round(softirq / total, 4), "steal": round(steal / total, 4)}


def process_cpu_s(pid: int) -> float | None:
    """utime + stime of a running process, in seconds (None once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parse_ss_cc(out: str, min_acked: int = 0) -> str | None:
    """The congestion control of the socket that moved the most data in `ss -ti` output (iperf3's
    control connection to the same port runs the default one): on each info line, the word before
    the first key:value (flags such as ts, sack, ecn come first). None unless that socket has
    `min_acked` bytes acknowledged."""
    flags = {"ts", "sack", "ecn", "ecnseen", "fastopen", "noqueue", "orphaned"}
    best: tuple[int, str] | None = None
    for line in out.splitlines():
        if not line.startswith(("\t", " ")):
            continue
        words = line.split()
        cc = None
        for w in words:
            if ":" in w:
                break
            if w not in flags:
                cc = w
                break
        acked = next((int(w.split(":", 1)[1]) for w in words if w.startswith("bytes_acked:")), 0)
        if cc is not None and (best is None or acked > best[0]):
            best = (acked, cc)
    return best[1] if best and best[0] >= min_acked else None


def split_ss_by_dport(out: str) -> dict[int, str]:
    """`ss -Htin` output cut into each peer port's lines (a connection line, then its indented
    info line), so that one listing answers for every flow of a sender."""
    blocks: dict[int, list[str]] = {}
    port: int | None = None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(("\t", " ")):
            peer = line.split()[-1] if line.split() else ""
            tail = peer.rsplit(":", 1)[-1]
            port = int(tail) if tail.isdigit() else None
        if port is not None:
            blocks.setdefault(port, []).append(line)
    return {p: "\n".join(lines) + "\n" for p, lines in blocks.items()}


def _wait_listening(node: Any, proto: str, port: int, timeout: float = 120.0) -> None:
    """Block until a server in `node` listens on `port` (ss in its namespace)."""
    flag = "-ltnH" if proto == "tcp" else "-lunH"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if f":{port} " in node.cmd(f"ss {flag} sport = :{port}") + " ":
            return
        time.sleep(0.1)                 # each check is a shell round trip: costly under QEMU TCG
    raise RuntimeError(f"{node.name}: nothing listening on {proto}/{port} after {timeout:.0f} s")


def tool_versions() -> dict[str, str]:
    def first_line(argv: list[str]) -> str:
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=5)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "unavailable"
    # deferred: Mininet only for its version here; this module runs in the guest's measuring
    # process, where every import costs virtual time before the trial
    import mininet.net
    return {
        "iperf3": first_line(["iperf3", "--version"]),
        "iperf2": first_line(["iperf", "-v"]),
        "tcpdump": first_line(["tcpdump", "--version"]),
        "tcptrace": first_line(["tcptrace", "-v"]),
        "tc": first_line(["tc", "-V"]),
        "mininet": getattr(mininet.net, "VERSION", "unknown"),
        "python": platform.python_version(),
    }


def where_running() -> dict[str, Any]:
    if environment.flag("TCPREPRO_IN_UML"):
        return {"release": platform.release(), "where": "uml", "accel": None}
    in_vm = environment.flag("TCPREPRO_IN_VM")
    return {"release": platform.release(), "where": "vm" if in_vm else "host",
            "accel": environment.get("TCPREPRO_VM_ACCEL_USED") if in_vm else None}


# The UML kernel's knob (kernel/uml/patches/0006): a write rekeys the guest's random state from its
# command line (which carries the trial's seed) and the value written, and cuts it off from
# everything the guest did before, so the measurement's ports, sequence numbers and netem draws do
# not depend on the machine image whose user space the guest runs (docs/uml.md).
GUEST_RANDOM_KNOB = Path("/proc/sys/kernel/random/tcprepro_measure")


def rekey_guest_random(seed: int) -> bool:
    """Rekey the virtual-time guest's random state at the measurement's start; False elsewhere."""
    if not GUEST_RANDOM_KNOB.exists():       # only the UML lane's kernel has it
        return False
    GUEST_RANDOM_KNOB.write_text(f"{seed % 2**64}\n")
    return True


class Trial:
    """A running trial: its network, its port slot, its processes, its output directory."""

    def __init__(self, spec: dict[str, Any], out_dir: Path) -> None:
        self.spec = spec
        self.lane = spec["lane"]            # the measured lane placement chose (testbed/run.py finish_spec)
        self.scenario = spec["scenario"]
        self.out = out_dir
        self.flows = spec["flows"]
        self.dirs = {d: shaping.DirectionSpec.from_config(self.scenario["bottleneck"][d])
                     for d in ("forward", "reverse")}
        self.stages = stages(self.scenario["pairs"])
        self.procs = Processes()
        self.voip_senders: list[tuple[dict[str, Any], subprocess.Popen]] = []
        self.provenance: dict[str, Any] = {"schema": "tcprepro.provenance/1"}
        self.timing: dict[str, float] = {}
        self.net: Mininet | None = None
        self.slot: port_slots.PortSlot | None = None
        self.generator = bulk_generator(spec)
        self.provenance["bulk_generator"] = self.generator
        self._t_mark = time.monotonic()

    def mark(self, what: str) -> None:
        """Log how long the step that just ended took: set-up cost is a tracked figure."""
        now = time.monotonic()
        log.info("%-24s %.2f s", what, now - self._t_mark)
        self._t_mark = now

    # -- set-up ------------------------------------------------------------------------------
    def build(self) -> None:
        self.net = Mininet(topo=Dumbbell(pairs=self.scenario["pairs"],
                                         switch=self.scenario.get("switch", switches.LINUX_BRIDGE)), controller=None,
                           intf=QuietIntf, autoSetMacs=False, build=False)
        self.net.build()
        self.mark("built network")
        self.provenance.update(shaping.configure_nodes(self.net, self.scenario.get("sysctls")))
        if self.scenario.get("quickack"):
            self.provenance["receiver_routes"] = self.disable_delayed_acks()
        self.mark("configured nodes")
        self.provenance["sysctls"] = self.scenario.get("sysctls") or {}

    def start_switches(self) -> None:
        """The switches' own processes, if any (Open vSwitch's daemons: topologies/dumbbell.py)."""
        self.provenance["switch"] = {side: self.node(side).start_switch() for side in (LEFT_BRIDGE, RIGHT_BRIDGE)}
        self.mark("started switches")

    def count_switched(self) -> None:
        """Open vSwitch's datapath counts, once the traffic is over: what its kernel flows
        forwarded (hit) and what went up to its daemon (missed)."""
        for side in (LEFT_BRIDGE, RIGHT_BRIDGE):
            self.provenance["switch"][side].update(self.node(side).switch_counts())

    def disable_delayed_acks(self) -> dict[str, str]:
        """Receivers ACK every segment: the route toward the senders carries `quickack 1` (what the
        LEDBAT paper did by patching its kernel). Read back so provenance shows it took."""
        routes = {}
        for i in range(self.scenario["pairs"]):
            node = self.node(receiver(i))
            shaping.run(node, f"ip route change default via {RIGHT_NET}.1 dev {receiver(i)}-eth0 quickack 1")
            routes[receiver(i)] = shaping.run(node, "ip route show default").strip()
            if "quickack 1" not in routes[receiver(i)]:
                raise RuntimeError(f"quickack did not take on {receiver(i)}: {routes[receiver(i)]}")
        return routes

    def node(self, name: str) -> Any:
        assert self.net is not None
        return self.net.get(name)

    def shape(self) -> None:
        """Queues first, then calibrate the stack's own latency, then the delay stages."""
        for d, stage in self.stages.items():
            shaping.apply_queue(self.node(stage.queue_node), stage, self.dirs[d])
        self.mark("applied queues")
        rtt_cfg = self.dirs["forward"].delay_ms + self.dirs["reverse"].delay_ms
        calibration = self.calibrate_delay(rtt_cfg)
        self.mark("calibrated delay")
        self.add_jitter(calibration)
        trees = {}
        for d, stage in self.stages.items():
            trees[f"{d}/queue"] = shaping.read_back(self.node(stage.queue_node), stage.queue_dev)
            if self.dirs[d].needs_netem:
                trees[f"{d}/delay"] = shaping.read_back(self.node(stage.delay_node), stage.delay_devs[0])
        self.provenance["qdiscs"] = trees
        self.provenance["calibration"] = calibration
        checks = fidelity.static_checks(self.dirs, trees)
        checks.append(fidelity.base_rtt_result(calibration["rounds"][-1]["base_rtt_ms"], rtt_cfg,
                                               fidelity.tolerances(self.lane)))
        self.provenance["fidelity"] = checks
        self.mark("checked path")

    def calibrate_delay(self, rtt_cfg: float, rounds: int = 4) -> dict[str, Any]:
        """Closed loop: set netem, measure the base RTT, correct netem by the error, repeat.

        The stack and netem's own timers add latency (about 0.05 ms on a host kernel, 0.5-3.5 ms
        under QEMU TCG); subtracting it keeps the base RTT at the configured value. Each direction
        gets half the correction: the papers configured RTT/2 each way. Every round measures with
        the settings it applied, and the last round's measurement is the one the base-RTT check
        reports (a second sample seconds later would differ by TCG's drift, not by the path).
        """
        tol = fidelity.tolerances(self.lane)
        netem_dirs = [d for d, spec in self.dirs.items() if spec.needs_netem]
        applied = {d: self.dirs[d].delay_ms for d in self.dirs}
        history = []
        for i in range(rounds if netem_dirs else 1):
            for d in netem_dirs:
                stage = self.stages[d]
                shaping.apply_delay(self.node(stage.delay_node), stage, self.dirs[d], applied[d], rtt_cfg)
            ping = fidelity.idle_ping(self.node(sender(0)), receiver_ip(0), count=30, interval=PING_INTERVAL_S)
            measured = ping.median_ms
            history.append({"netem_delay_ms": dict(applied), "base_rtt_ms": measured,
                            "ping_interval_ms": PING_INTERVAL_S * 1000, "ping_min_gap_ms": ping.min_gap_ms})
            error = measured - rtt_cfg
            if abs(error) <= tol.rtt_ms / 2 or not netem_dirs or i == rounds - 1:
                break
            for d in netem_dirs:
                applied[d] = max(0.0, applied[d] - error / len(netem_dirs))
        return {"rounds": history, "netem_delay_ms": applied,
                "note": "netem delay corrected until the median idle ping RTT matches the configured RTT"}

    def add_jitter(self, calibration: dict[str, Any]) -> None:
        """The seeded per-packet delay jitter of a virtual-time trial (testbed/variation.py), on every
        delay stage whose delay can take it, after the base RTT was measured without it."""
        jitter_ms = float((self.spec.get("variation") or {}).get("jitter_ms") or 0)
        if not jitter_ms:
            return
        applied = calibration["netem_delay_ms"]
        jittered = {}
        for d, stage in self.stages.items():
            if self.dirs[d].needs_netem and applied[d] >= jitter_ms:
                rtt_cfg = self.dirs["forward"].delay_ms + self.dirs["reverse"].delay_ms
                shaping.apply_delay(self.node(stage.delay_node), stage, self.dirs[d], applied[d], rtt_cfg, jitter_ms)
                jittered[d] = jitter_ms
        calibration["jitter_ms"] = jittered
        self.mark("added jitter")

    def provide_ccs(self, stack: contextlib.ExitStack) -> dict[str, CcChoice]:
        """Every congestion control the flows ask for, loaded for this trial (and unloaded by
        `stack` when it ends); keyed by flow cc_key, recorded in provenance."""
        choices: dict[str, CcChoice] = {}
        for f in self.flows:
            if f["kind"] == "bulk" and f["cc_key"] not in choices:
                choices[f["cc_key"]] = stack.enter_context(
                    provide(f["cc"], params=f.get("cc_params"), impl=f.get("cc_impl"),
                            module_params=(self.spec.get("module_params") or {}).get(f["cc"])))
        self.provenance["congestion_controls"] = {k: c.provenance() for k, c in choices.items()}
        self.mark("loaded congestion controls")
        return choices

    def check_loss(self) -> None:
        """Random loss as it happened: netem's own drop counters over the whole run."""
        for d, stage in self.stages.items():
            spec = self.dirs[d]
            if spec.loss_pct <= 0:
                continue
            sent = dropped = 0
            for dev in stage.delay_devs:
                for q in json.loads(shaping.run(self.node(stage.delay_node), f"tc -s -j qdisc show dev {dev}") or "[]"):
                    if q["kind"] == "netem":
                        sent, dropped = sent + q.get("packets", 0), dropped + q.get("drops", 0)
            self.provenance["fidelity"].append(fidelity.loss_check(d, spec.loss_pct, dropped, sent + dropped))

    # -- measurement ---------------------------------------------------------------------------
    def port(self, flow: dict[str, Any]) -> int:
        assert self.slot is not None
        return self.slot.port_base + flow["port_offset"]

    def record_endpoints(self) -> None:
        """Who talks to whom on which port: what the analysis needs to find each flow in captures."""
        self.provenance["endpoints"] = {
            f["id"]: {"sender": sender_ip(f["pair"]), "receiver": receiver_ip(f["pair"]), "port": self.port(f)}
            for f in self.flows}

    def start_receivers(self) -> None:
        """Start every receiver and every VoIP sender, and wait until all are ready: receivers
        listening, VoIP senders (Python: seconds to start under QEMU TCG) waiting for their start
        time on stdin. The senders' shared start time is then set by `run_traffic`."""
        t_start = time.monotonic()
        for f in self.flows:
            rnode = self.node(receiver(f["pair"]))
            if f["kind"] == "bulk" and (f.get("bytes") or self.generator == "iperf2"):
                # Fixed size: iperf2, whose server reads to EOF (iperf3 -n ends the test once the
                # bytes are written and drops what is still in flight); timed, where bulk_generator says.
                self.procs.start(rnode, f"server-{f['id']}",
                                 ["iperf", "-s", "-B", receiver_ip(f["pair"]), "-p", str(self.port(f)), "-y", "C"],
                                 stdout=self.procs.log_file(self.out / f"iperf2-{f['id']}-server.csv"),
                                 stderr=subprocess.DEVNULL)
            elif f["kind"] == "bulk":
                self.procs.start(rnode, f"server-{f['id']}",
                                 ["iperf3", "-s", "-1", "-B", receiver_ip(f["pair"]), "-p", str(self.port(f))],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            else:
                self.procs.start(rnode, f"recv-{f['id']}",
                                 [*HELPER, "traffic.voip", "recv", "--bind", receiver_ip(f["pair"]),
                                  "--port", str(self.port(f)), "--out", str(self.out / f"voip-{f['id']}.csv")])
        duration = float(self.spec["duration_s"])
        for f in (f for f in self.flows if f["kind"] == "voip"):
            argv = [*HELPER, "traffic.voip", "send", "--dst", receiver_ip(f["pair"]),
                    "--port", str(self.port(f)), "--packet-bytes", str(f["packet_bytes"]),
                    "--interval-ms", str(f["interval_ms"]), "--start-at", "stdin",
                    "--duration", f"{duration - f['start_s']:.3f}", "--out", str(self.out / f"voip-{f['id']}.json")]
            self.voip_senders.append((f, self.procs.start(
                self.node(sender(f["pair"])), f"client-{f['id']}", argv, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        for f in self.flows:
            _wait_listening(self.node(receiver(f["pair"])), "tcp" if f["kind"] == "bulk" else "udp",
                            self.port(f))
        for f, proc in self.voip_senders:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                err = proc.stderr.read() if proc.stderr and proc.poll() is not None else ""
                raise RuntimeError(f"VoIP sender {f['id']} did not start: {err.strip()[-300:]}")
        self.timing["process_start_s"] = time.monotonic() - t_start

    def start_monitors(self) -> None:
        assert self.slot is not None
        devs = [f"{st.queue_dev}:{d}:{shaping.QUEUE_HANDLE}" for d, st in self.stages.items()]
        sampler = self.procs.start(
            self.node("rt"), "monitor-qdisc",
            [*HELPER, "testbed.qdisc_sampler", "--out", str(self.out / "qdisc.csv"),
             "--interval", str(SAMPLE_INTERVAL_S), *[x for d in devs for x in ("--dev", d)]],
            stderr=self.procs.log_file(self.out / "qdisc_sampler.log"))
        lo, hi = self.slot.port_range
        (self.out / "pcap").mkdir(exist_ok=True)
        for pair in sorted({f["pair"] for f in self.flows if f["kind"] == "bulk"}):
            s = sender(pair)
            err = self.procs.log_file(self.out / "pcap" / f"{s}.log")
            # The capture goes to stdout, into a file this runner opened: tcpdump, dropping root,
            # would chown its own file, which a UML guest's host folder refuses. Buffered (no -U):
            # a write per packet costs the virtual-time lane a host round trip per packet; tcpdump
            # flushes when it stops, and fidelity.capture_check counts the file against its report.
            self.procs.start(self.node(s), f"monitor-pcap-{s}",
                             ["tcpdump", "-i", f"{s}-eth0", "-s", "128", "-n", "-w", "-",
                              f"tcp and portrange {lo}-{hi}"],
                             stdout=self.procs.log_file(self.out / "pcap" / f"{s}.pcap"), stderr=err)
            self._wait_file_line(self.out / "pcap" / f"{s}.log", "listening on")
        self._wait_started(sampler, self.out / "qdisc.csv", self.out / "qdisc_sampler.log")

    @staticmethod
    def _wait_started(proc: subprocess.Popen, output: Path, errlog: Path, timeout: float = 60.0) -> None:
        """A monitor is running once its output exists; one that exits first fails the trial with
        its own error message, before any traffic is wasted."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                why = errlog.read_text().strip()[-300:]
                raise RuntimeError(f"{output.stem} monitor exited {proc.returncode}: {why}")
            if output.exists():
                return
            time.sleep(0.05)
        raise RuntimeError(f"{output.name} not created in {timeout:.0f} s")

    @staticmethod
    def _wait_file_line(path: Path, needle: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in path.read_text():
                return
            time.sleep(0.02)
        raise RuntimeError(f"{path.name}: '{needle}' not seen in {timeout:.0f} s: {path.read_text()[-300:]}")

    def run_traffic(self, ccs: dict[str, CcChoice]) -> None:
        """VoIP senders, already started and waiting, get their absolute start time; iperf clients
        (fast to start) are launched at theirs."""
        duration = float(self.spec["duration_s"])
        startup = self.timing.get("process_start_s", 0.0)
        t0 = time.monotonic() + START_LEAD_S
        if self.lane == "uml":
            # In virtual time the set-up's length can depend on the machine image whose user space
            # the guest runs: traffic starts at the next multiple of UML_START_GRID_S of the guest's
            # clock instead, so that every flow starts at the same instant of it whatever image the
            # guest runs, against its ticks, the sequence numbers' clock and the ephemeral ports'
            # 10-s epoch (docs/uml.md). Idle virtual time costs next to no wall time.
            t0 = float(math.ceil(t0 / UML_START_GRID_S) * UML_START_GRID_S)
        self.provenance["t0_monotonic"] = t0
        # pcap timestamps are CLOCK_REALTIME: this converts them to the monotonic clock of the rest.
        self.provenance["realtime_minus_monotonic_s"] = time.clock_gettime(time.CLOCK_REALTIME) - time.monotonic()
        clients: list[subprocess.Popen] = []
        for f, proc in self.voip_senders:
            assert proc.stdin is not None
            proc.stdin.write(f"{t0 + f['start_s']:.6f}\n")
            proc.stdin.close()
            clients.append(proc)
        # Each bulk flow is started at its time, and its socket's congestion control is read back
        # once its connection is up (a round trip or two after the start).
        settle = 2 * sum(d.delay_ms for d in self.dirs.values()) / 1000 + SOCKET_CHECK_AFTER_S
        bulk = [f for f in self.flows if f["kind"] == "bulk"]
        events = sorted([(t0 + float(f["start_s"]), 0, f) for f in bulk]
                        + [(t0 + float(f["start_s"]) + settle, 1, f) for f in bulk], key=lambda e: (e[0], e[1]))
        socket_cc: dict[str, str | None] = {}
        fixed_size: dict[int, str] = {}         # client pid -> flow id of a fixed-size transfer
        for at, is_check, f in events:
            time.sleep(max(0.0, at - time.monotonic()))
            if is_check:
                if f["id"] not in socket_cc:
                    due = [g for g in bulk if g is f or (g["pair"] == f["pair"] and g["id"] not in socket_cc
                                                          and t0 + float(g["start_s"]) + settle <= time.monotonic())]
                    socket_cc.update(self.socket_ccs(f, due))
                continue
            remaining = max(1.0, t0 + duration - time.monotonic())
            kernel_cc = ccs[f["cc_key"]].kernel_name
            if f.get("bytes") or self.generator == "iperf2":
                amount = ["-n", str(f["bytes"])] if f.get("bytes") else ["-t", f"{remaining:.0f}"]
                argv = ["iperf", "-c", receiver_ip(f["pair"]), "-p", str(self.port(f)), *amount,
                        "-Z", kernel_cc, "-y", "C"]
                stdout = self.procs.log_file(self.out / f"iperf2-{f['id']}-client.csv")
            else:
                argv = ["iperf3", "-c", receiver_ip(f["pair"]), "-p", str(self.port(f)), "-C", kernel_cc,
                        "-t", f"{remaining:.0f}", "-J", "--logfile", str(self.out / f"iperf-{f['id']}.json")]
                stdout = subprocess.DEVNULL
            clients.append(self.procs.start(self.node(sender(f["pair"])), f"client-{f['id']}", argv,
                                            stdout=stdout, stderr=subprocess.PIPE))
            if f.get("bytes"):
                fixed_size[clients[-1].pid] = f["id"]
        self.provenance["fidelity"].append(fidelity.socket_cc_check(
            {f["id"]: ccs[f["cc_key"]].kernel_name for f in bulk}, socket_cc))
        deadline = t0 + duration + 15.0 + 3 * startup
        cpu_at_start = cpu_times()
        unfinished = []
        for proc in clients:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired as exc:
                if proc.pid not in fixed_size:
                    raise RuntimeError(f"a traffic client still ran {deadline - t0 - duration:.0f} s after the "
                                       f"trial's end: {' '.join(map(str, exc.cmd))[:200]}") from None
                # A fixed-size transfer still under way at the cell's time bound is an outcome, not a
                # fault: it is stopped here, and the analysis marks the trial invalid, naming it.
                proc.kill()
                proc.wait()
                unfinished.append(fixed_size[proc.pid])
        if unfinished:
            self.provenance["unfinished_transfers"] = {"bound_s": duration, "flows": unfinished}
            log.warning("fixed-size transfer(s) %s not done by the cell's bound of %.0f s: stopped",
                        ", ".join(unfinished), duration)
        self.timing["traffic_s"] = time.monotonic() - t0
        self.provenance["cpu_during_traffic"] = {
            **cpu_shares(cpu_at_start, cpu_times()),
            "processes_cpu_s": {name: round(cpu, 3) for name, p in self.procs.procs
                                if name.startswith(("monitor-", "server-", "recv-"))
                                and (cpu := process_cpu_s(p.pid)) is not None}}
        time.sleep(DRAIN_S)
        failed = [(n, p) for n, p in self.procs.procs if n.startswith("client-") and p.returncode != 0
                  and n.removeprefix("client-") not in unfinished]
        if failed:
            name, proc = failed[0]
            err = proc.stderr.read() if proc.stderr else ""
            err = err.decode(errors="replace") if isinstance(err, bytes) else err
            raise RuntimeError(f"{name} exited {proc.returncode}: {err.strip()[-500:]}")

    def socket_ccs(self, flow: dict[str, Any], due: list[dict[str, Any]]) -> dict[str, str | None]:
        """The congestion control the kernel reports for the sockets of `flow` and of the other
        flows of its sender whose check is `due` (one `ss -ti` listing for all: under TCG each call
        costs a second or more, and nine flows read one by one outlived their 20-s transfers); None
        for `flow` if its connection is not up: iperf2 carries on with the default when its -Z
        fails. iperf3 opens its data connection after its control one, which runs the default
        algorithm: its socket counts once it has moved more than a control exchange
        (IPERF3_CONTROL_BYTES). Of the other due flows, only those already up are answered."""
        found: dict[str, str | None] = {}
        blocks: dict[int, str] = {}
        for _ in range(20):             # a lost SYN is sent again a second later
            blocks = split_ss_by_dport(self.node(sender(flow["pair"])).cmd("ss -Htin state established"))
            for g in due:
                iperf3 = not (g.get("bytes") or self.generator == "iperf2")
                cc = parse_ss_cc(blocks.get(self.port(g), ""), IPERF3_CONTROL_BYTES if iperf3 else 0)
                if cc is not None:
                    found[g["id"]] = cc
            if flow["id"] in found:
                return found
            time.sleep(0.5)
        found[flow["id"]] = parse_ss_cc(blocks.get(self.port(flow), ""))
        return found

    # -- the whole lifecycle -------------------------------------------------------------------
    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        with port_slots.acquire() as slot:
            self.slot = slot
            self.provenance["port_base"] = slot.port_base
            t_setup = time.monotonic()
            t_down: float | None = None
            stack = contextlib.ExitStack()
            try:
                # Set-up yields the CPU to trials already measuring in other port slots (whose
                # processes run at normal priority); this trial's own are started after it.
                _set_niceness(SETUP_NICENESS)
                self.build()
                # From here on the guest kernel's randomness is the trial's own (rekey_guest_random):
                # the qdiscs, neighbour entries, sockets and flows set up next draw from it.
                self.provenance["random_rekeyed"] = rekey_guest_random(
                    int(self.spec.get("variation", {}).get("seed", 0)))
                self.start_switches()
                self.shape()
                ccs = self.provide_ccs(stack)
                _set_niceness(0)
                lo, hi = slot.port_range
                with ProbeTrace(self.out / "tcp_probe.trace", lo, hi, tag=slot.tag):
                    self.record_endpoints()
                    self.start_monitors()
                    self.mark("started monitors")
                    self.start_receivers()
                    self.mark("started receivers")
                    self.timing["setup_s"] = time.monotonic() - t_setup
                    self.run_traffic(ccs)
                    t_down = time.monotonic()
                    self.procs.stop()
                    self.check_loss()
                    self.count_switched()
                yield
            finally:
                t_down = t_down or time.monotonic()
                self.procs.stop()
                if self.net is not None:
                    _stop_network(self.net)
                stack.close()               # unload congestion controls once no socket uses them
                self.timing["teardown_s"] = time.monotonic() - t_down


def _stop_network(net: Mininet) -> None:
    """Tear the network down by ending each node's shell, the last process in its namespace: the
    namespace goes, and its veth ends with it (both ends of every link live in a node's namespace).
    Mininet's own stop() first deletes each link from inside its node, two shell round trips per
    link: seconds under QEMU TCG for nothing the kernel would not do anyway."""
    for node in reversed(net.hosts):
        shell = node.shell
        node.terminate()
        if shell is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                shell.wait(5)


def _set_niceness(value: int) -> None:
    with contextlib.suppress(PermissionError):      # raising it back needs root, which trials have
        os.setpriority(os.PRIO_PROCESS, 0, value)


@contextlib.contextmanager
def _scratch(partial: Path, local: bool) -> Iterator[Path]:
    """Where the measurement writes while traffic runs. In the VM, a guest-local tmpfs: writing
    raw series over the shared 9p mount costs emulated CPU while the link is being emulated.
    Copied into `partial` when the measurement ends, whatever the outcome."""
    if not local:
        yield partial
        return
    # deferred: this module runs in the guest's measuring process, where every import costs
    # virtual time before the trial
    import shutil
    import tempfile
    scratch = Path(tempfile.mkdtemp(prefix="tcprepro-trial-"))
    try:
        yield scratch
    finally:
        for item in scratch.iterdir():
            dest = partial / item.name
            if item.is_dir():
                shutil.copytree(item, dest, dirs_exist_ok=True)
            else:
                shutil.copy2(item, dest)
        shutil.rmtree(scratch, ignore_errors=True)


def measure(spec: dict[str, Any], partial: Path) -> dict[str, Any]:
    """The part of a trial that needs the kernel under test: raw series and provenance.json.

    Analysis happens afterwards on the host (testbed/finalize.py), so a trial run in the VM pays
    for neither pandas' import nor its computations under emulation.
    """
    handler = logging.FileHandler(partial / "trial.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)      # the phase timings belong in trial.log whoever configured logging
    in_vm = environment.flag("TCPREPRO_IN_VM")
    try:
        with _scratch(partial, local=in_vm) as out:
            return _measure_into(spec, partial, out)
    finally:
        log.removeHandler(handler)
        handler.close()


def _measure_into(spec: dict[str, Any], partial: Path, out: Path) -> dict[str, Any]:
    kernel = where_running()
    # Placement's decision (the spec's `lane`) and the kernel this process finds itself on agree, or
    # the trial measures nothing: its tolerances and clock would be another lane's.
    if spec.get("lane") != kernel["where"]:
        raise RuntimeError(f"trial placed on the {spec.get('lane') or '(unrecorded)'} lane, but this process "
                           f"runs on the {kernel['where']} lane: its spec.json must come from `tcprepro trial` "
                           "(testbed/run.py finish_spec records the lane)")
    trial = Trial(spec, out)
    log.info("trial %s/%s/%d on kernel %s (%s)", spec["paper"], spec["cell"], spec["trial"],
             kernel["release"], kernel["where"])
    try:
        with trial.running():
            pass
    except BaseException as exc:
        log.error("measurement failed: %s", exc, exc_info=not isinstance(exc, TrialInterrupted))
        raise
    prov = trial.provenance
    prov.update({"kernel": kernel, "paper": spec["paper"], "cell": spec["cell"], "trial": spec["trial"],
                 "config_sha256": spec.get("config_sha256"),
                 # in a UML guest every process costs the host milliseconds: the host adds them
                 "tools": {} if environment.flag("TCPREPRO_IN_UML") else tool_versions(),
                 "timing": trial.timing})
    (partial / "provenance.json").write_text(json.dumps(prov, indent=2, default=str))
    log.info("set-up %.2f s, tear-down %.2f s", trial.timing.get("setup_s", -1), trial.timing.get("teardown_s", -1))
    return prov


def main(argv: list[str] | None = None) -> int:
    """`python -m testbed.trial --spec spec.json --out DIR`: measure only (what the VM runs)."""
    # deferred: this module runs in the guest's measuring process, where every import costs
    # virtual time before the trial
    import argparse
    p = argparse.ArgumentParser(prog="python -m testbed.trial", description=main.__doc__)
    p.add_argument("--spec", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    install_signal_handlers()
    try:
        measure(json.loads(args.spec.read_text()), args.out)
    except TrialInterrupted as exc:
        print(f"interrupted ({exc}): measurement stopped, network torn down", file=sys.stderr)
        return 130
    except Exception as exc:
        print(f"error: measurement failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
