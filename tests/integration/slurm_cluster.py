"""A real one-node SLURM cluster (Debian's slurmctld and slurmd, authenticated by munge) that a test
starts in a folder of its own and stops again, leaving no daemon and no job behind.

It is a cluster as the workflow meets one: jobs go through sbatch to slurmctld, which places them on
slurmd's two CPUs, and the executor plugin watches them with squeue. No accounting database:
`MinJobAge` keeps a finished job visible to squeue for five minutes, which is what the plugin's
squeue status command needs (`--slurm-status-command squeue`). Everything (key, sockets, state,
logs, ports) is private to the folder, so the machine's own munge or SLURM, if any, is untouched.

SLURM's commands find their config at /etc/slurm/slurm.conf (the executor plugin clears SLURM_*
variables, SLURM_CONF included, inside a job): the daemons and every client run in a private mount
namespace, held open by one process, in which the folder is bind-mounted over /etc/slurm. The
namespace goes with that process; `Cluster.command` wraps a command to run inside it.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "scontrol")
NODE = "localhost"
CPUS = 2


class ClusterError(RuntimeError):
    pass


@dataclass(frozen=True)
class Cluster:
    root: Path
    env: dict[str, str]          # what a client (sbatch, the plugin) needs: SLURM_CONF
    holder: subprocess.Popen     # the process that holds the mount namespace open

    def command(self, argv: list[str], cwd: Path | None = None) -> list[str]:
        """`argv` run inside the cluster's mount namespace, where /etc/slurm is this cluster's, in
        `cwd` (default: this process's)."""
        return ["nsenter", "-t", str(self.holder.pid), "-m", f"--wd={cwd or os.getcwd()}", "--", *argv]

    def pids(self) -> dict[str, int]:
        out = {}
        for name in DAEMONS:
            with contextlib.suppress(OSError, ValueError):
                out[name] = int((self.root / f"{name}.pid").read_text().split()[0])
        return out

    def jobs(self) -> list[str]:
        """Every job slurmctld still knows (running or finished within MinJobAge): 'id state name'."""
        proc = subprocess.run(self.command(["squeue", "-h", "-t", "all", "-o", "%i %T %j"]), env=self.env,
                              capture_output=True, text=True, timeout=30)
        if proc.returncode != 0:
            raise ClusterError(f"squeue failed: {proc.stderr.strip()}")
        return [line for line in proc.stdout.splitlines() if line.strip()]


def missing_tools() -> list[str]:
    return [t for t in (*DAEMONS, *CLIENTS) if shutil.which(t) is None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise ClusterError("no MemTotal in /proc/meminfo")


def slurm_conf(root: Path, memory_mb: int) -> str:
    ctld, slurmd = _free_port(), _free_port()
    return "\n".join([
        "ClusterName=tcprepro-test",
        f"SlurmctldHost={NODE}",
        f"SlurmctldPort={ctld}",
        f"SlurmdPort={slurmd}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={root}/munge.socket",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool",
        f"SlurmctldPidFile={root}/slurmctld.pid",
        f"SlurmdPidFile={root}/slurmd.pid",
        f"SlurmctldLogFile={root}/slurmctld.log",
        f"SlurmdLogFile={root}/slurmd.log",
        # No cgroups (a container may not delegate them): processes tracked by parentage.
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        # Cores and memory are both consumable: a job's --mem must fit the node, as on a cluster.
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "ReturnToService=2",
        "MinJobAge=300",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        f"NodeName={NODE} NodeAddr=127.0.0.1 CPUs={CPUS} RealMemory={memory_mb} State=UNKNOWN",
        f"PartitionName=test Nodes={NODE} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def _run(argv: list[str], env: dict[str, str], what: str) -> None:
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise ClusterError(f"{what} failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}")


def _wait(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child of ours counts as gone (the daemons double-fork, so they are not ours).
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


def start(root: Path) -> Cluster:
    """munged, slurmctld and slurmd, each daemonised with its pid file in `root`; returns once the
    node is idle and takes jobs."""
    if missing := missing_tools():
        raise ClusterError(f"missing {', '.join(missing)}: run `make test-deps` (config/test-packages.txt)")
    if not Path("/etc/slurm").is_dir():
        raise ClusterError("no /etc/slurm to mount this cluster's config on: run `make test-deps`")
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)                                   # munged wants its socket's folder reachable
    for d in ("state", "spool", "etc"):
        (root / d).mkdir(exist_ok=True)
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    conf = root / "etc" / "slurm.conf"
    conf.write_text(slurm_conf(root, int(_memory_mb() * 0.8)))
    env = {**os.environ, "SLURM_CONF": "/etc/slurm/slurm.conf"}
    # The holder dies with this process (pdeathsig), and the namespace with it.
    holder = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--", "unshare", "--mount", "--propagation",
                               "private", "--", "sleep", "infinity"], stdin=subprocess.DEVNULL)
    cluster = Cluster(root, env, holder)
    try:
        own = os.readlink("/proc/self/ns/mnt")
        _wait(lambda: os.readlink(f"/proc/{holder.pid}/ns/mnt") != own, 10, "the mount namespace")
        _run(cluster.command(["mount", "--bind", str(root / "etc"), "/etc/slurm"]), env, "mounting /etc/slurm")
        # --force: munged runs as root here, which it otherwise refuses.
        _run(cluster.command(["munged", f"--key-file={key}", f"--socket={root}/munge.socket",
                              f"--pid-file={root}/munged.pid", f"--log-file={root}/munged.log",
                              f"--seed-file={root}/munged.seed", "--force"]), env, "munged")
        _run(cluster.command(["slurmctld"]), env, "slurmctld")
        _run(cluster.command(["slurmd", "-N", NODE]), env, "slurmd")

        def idle() -> bool:
            proc = subprocess.run(cluster.command(["sinfo", "-h", "-N", "-o", "%T"]), env=env,
                                  capture_output=True, text=True)
            return proc.returncode == 0 and proc.stdout.strip() == "idle"
        _wait(idle, 60, "the node to come up idle (logs: slurmctld.log, slurmd.log in " + str(root) + ")")
    except BaseException:
        stop(cluster)
        raise
    return cluster


def stop(cluster: Cluster) -> list[str]:
    """Cancel every job, stop the daemons; return what is still running (nothing, normally)."""
    env = cluster.env
    with contextlib.suppress(Exception):
        subprocess.run(cluster.command(["scancel", "--full", "--user", str(os.getuid())]), env=env,
                       capture_output=True, timeout=30)

        def ended() -> bool:
            return not [j for j in cluster.jobs() if j.split()[1] in ("PENDING", "RUNNING", "COMPLETING")]
        _wait(ended, 30, "cancelled jobs to end")
    pids = cluster.pids()
    for name in ("slurmd", "slurmctld", "munged"):
        pid = pids.get(name)
        if pid is None or not _alive(pid):
            continue
        os.kill(pid, signal.SIGTERM)
        with contextlib.suppress(ClusterError):
            _wait(lambda p=pid: not _alive(p), 20, f"{name} to stop")
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ClusterError):
        _wait(lambda: not [p for p in pids.values() if _alive(p)], 10, "the daemons to exit")
    ns = ""
    with contextlib.suppress(OSError):
        ns = os.readlink(f"/proc/{cluster.holder.pid}/ns/mnt")
    cluster.holder.kill()
    cluster.holder.wait()
    if ns:
        with contextlib.suppress(ClusterError):
            _wait(lambda: not _in_namespace(ns), 10, "the cluster's processes to exit")
    return [f"{name} (pid {pid})" for name, pid in pids.items() if _alive(pid)] + (_in_namespace(ns) if ns else [])


def _in_namespace(ns: str) -> list[str]:
    """Processes still in the cluster's mount namespace (a daemon, a slurmstepd, a job)."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.readlink(proc / "ns" / "mnt") == ns and _alive(int(proc.name)):
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:80]
                out.append(f"{cmd.strip()} (pid {proc.name})")
    return out


@contextlib.contextmanager
def running(root: Path) -> Iterator[Cluster]:
    cluster = start(root)
    try:
        yield cluster
    finally:
        stop(cluster)
