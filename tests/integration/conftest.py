"""Shared fixtures for tests that run real trials: root, and a check that nothing is left behind."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
PAPERS = CHECKOUT / "tests" / "data" / "papers"
TRACEFS_INSTANCES = Path("/sys/kernel/tracing/instances")


def _count(cmd: str) -> int:
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True).stdout
    return len([line for line in out.splitlines() if line.strip()])


def machine_state() -> dict[str, object]:
    """What a trial could leave behind: namespaces (named or held by a process), veths and bridges
    in the root namespace, tracefs instances of ours, traffic and capture processes."""
    return {
        "netns": _count("lsns -t net -n -o NS | sort -u"),
        "named_netns": _count("ip netns list"),
        "veth": _count("ip -o link show type veth"),
        "bridges": _count("ip -o link show type bridge | grep -v docker0"),
        "instances": sorted(p.name for p in TRACEFS_INSTANCES.glob("tcprepro-*")) if TRACEFS_INSTANCES.exists()
        else [],
        "procs": _our_processes(),
    }


def _our_processes() -> set[str]:
    """Traffic (iperf2, iperf3), capture and Mininet processes: by exact name, or by the module a Python one runs."""
    exact = subprocess.run(["pgrep", "-a", "-x", "iperf|iperf3|tcpdump"], capture_output=True, text=True).stdout
    ours = subprocess.run(["pgrep", "-a", "-f", r"-m (traffic\.voip|testbed\.qdisc_sampler)|bash .*mininet:"],
                          capture_output=True, text=True).stdout
    return {line for line in (exact + ours).splitlines() if line.strip() and not _zombie(line.split()[0])}


def _zombie(pid: str) -> bool:
    """An exited process its new parent has not reaped holds nothing (no namespace, socket or file):
    a container whose PID 1 does not reap orphans keeps such entries, and they are not a trial's."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True                                 # gone since pgrep listed it


@pytest.fixture(scope="session", autouse=True)
def quiet_cores():
    """Integration tests measure links in real time: they start once the UML kernel build that
    `make test` runs beside the unit tests (scripts/uml-kernel-early) has finished, since a trial
    sharing the cores with a compiler fails its rate checks."""
    from testbed import uml_kernel

    waited = uml_kernel.wait_for_build()
    if waited:
        print(f"\nwaited {waited:.0f} s for the UML kernel build")


@pytest.fixture
def nothing_left_behind():
    """Assert the machine holds no more of our artefacts after the test than before it."""
    if os.geteuid() != 0:
        pytest.skip("needs root: trials build namespaces and qdiscs")
    before = machine_state()
    yield
    after = machine_state()
    # Only what appeared counts: other software (a container starting, say) may remove its own.
    grown = {k: (before[k], after[k]) for k in before
             if (after[k] > before[k] if isinstance(after[k], int) else set(after[k]) - set(before[k]))}
    assert not grown, f"left behind (before, after): {grown}"


@pytest.fixture
def paper_env(monkeypatch):
    """Run the CLI against the test papers (tests/data/papers), forced onto the host kernel."""
    env = dict(os.environ, TCPREPRO_PAPER_DIR=str(PAPERS))
    monkeypatch.setenv("TCPREPRO_PAPER_DIR", str(PAPERS))
    return env


@pytest.fixture
def host_env(paper_env):
    """paper_env pinned to the host kernel, for the tests that assert the host path. Skipped where
    the host cannot serve trials at all: an unprivileged container mounts /proc/sys read-only, so
    the workflow sends every trial to the VM there (test_vm_trial covers that path)."""
    from testbed.host_probes import check_sysctl_writable

    writable = check_sysctl_writable()
    if not writable.ok:
        pytest.skip(f"the host kernel cannot run trials here: {writable.detail}; fix: {writable.fix}")
    return {**paper_env, "TCPREPRO_KERNEL": "host"}


def trial_cmd(paper: str, cell: str, out: Path, profile: str = "smoke", trial: int = 1) -> list[str]:
    return [sys.executable, "-m", "tcprepro", "trial", "--paper", paper, "--cell", cell,
            "--trial", str(trial), "--profile", profile, "--out", str(out)]
