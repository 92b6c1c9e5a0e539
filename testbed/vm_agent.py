"""Guest side of the VM lane: runs the jobs that host callers drop into a shared spool directory.

Started by ``vng --exec`` inside the VM (see testbed/shared_vm.py). Standard library only and run by
path with ``python -S``, so it starts fast under TCG and imports nothing of the project. It exits,
and so powers the VM off, on a stop request or after an idle period.

Spool layout, under the boot directory (on the 9p share the guest can write):
  ready.json          written once the guest is set up; the host waits for it
  stopping            written before the agent exits; jobs seen after it are rejected
  jobs/<id>/          a job: spec.json (argv, cwd, env) and hb (heartbeat the host touches);
                      the agent adds started, out, err, exit (or rejected)
  jobs/<id>.cancel    the host asks for SIGTERM to the job
  jobs/stop           the host asks for shutdown: running jobs are terminated first

Every host-to-guest signal is an entry in jobs/, so one stat of that directory per tick tells
whether anything changed: 9p calls cost milliseconds of emulated CPU each under TCG, and the
agent must not steal CPU from the trials it runs. A full listing every few seconds covers
changes that left the directory's mtime unchanged (two within one timestamp tick).

Each job runs in its own session and its own cgroup: SIGTERM goes to its process group (so its
own cleanup runs), and whatever is left in the cgroup when the job ends, or when the grace
period runs out, is killed, including daemons that left the process group with setsid
(Mininet's node shells do).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup/tcprepro")
SCAN_EVERY = 0.5  # stat of jobs/
FULL_SCAN_EVERY = 5.0  # listing of jobs/ even when its mtime did not move
HEARTBEAT_CHECK_EVERY = 5.0


def log(msg: str) -> None:
    uptime = Path("/proc/uptime").read_text().split()[0]
    print(f"[{uptime:>10}] tcprepro-agent: {msg}", flush=True)


def write_atomic(path: Path, text: str) -> None:
    """Write via rename so the host never reads a half-written file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def mtime_ns(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


class Job:
    """One running job and what the agent tracks about it."""

    def __init__(self, job_id: str, job_dir: Path, proc: subprocess.Popen[bytes],
                 cgroup: Path | None) -> None:
        self.id, self.dir, self.proc, self.cgroup = job_id, job_dir, proc, cgroup
        self.hb_mtime = mtime_ns(job_dir / "hb")
        self.hb_seen_at = time.monotonic()
        self.term_at: float | None = None
        self.killed = False
        try:
            self.pidfd: int | None = os.pidfd_open(proc.pid)
        except OSError:
            self.pidfd = None


def pin_tcp_probe(tracing: Path) -> None:
    """Keep tcp:tcp_probe registered twice for the whole boot (buffers off, a filter nothing
    matches), so a trial's own instance never changes the tracepoint's static key or static call.
    Each such change live-patches kernel text (int3 + IPIs), and under QEMU TCG one of them left a
    vCPU looping in the int3 handler: an RCU stall that hung the guest mid-trial."""
    event = tracing / "events" / "tcp" / "tcp_probe"
    if not event.is_dir():
        return
    for n in (1, 2):
        inst = tracing / "instances" / f"keepalive-tcp_probe-{n}"
        try:
            inst.mkdir(exist_ok=True)
            (inst / "tracing_on").write_text("0\n")
            (inst / "events" / "tcp" / "tcp_probe" / "filter").write_text("dport == 0\n")
            (inst / "events" / "tcp" / "tcp_probe" / "enable").write_text("1\n")
        except OSError as exc:
            log(f"could not pin tcp_probe ({exc}); trials will toggle it")
            return


def setup_guest() -> dict[str, object]:
    """Make the guest ready for trials; report what is there so the host can record it."""
    release = os.uname().release
    tracing = Path("/sys/kernel/tracing")
    if not os.path.ismount(tracing):
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(tracing)], check=False)
    pin_tcp_probe(tracing)
    with contextlib.suppress(OSError):
        subprocess.run(["ip", "link", "set", "lo", "up"], check=False, capture_output=True)
    cgroup_ok = True
    try:
        CGROUP_ROOT.mkdir(exist_ok=True)
    except OSError as exc:
        log(f"no cgroup for jobs ({exc}); falling back to process groups")
        cgroup_ok = False
    mem_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    clock = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    return {
        "release": release,
        "cpus": os.cpu_count(),
        "mem_kb": mem_kb,
        "tracefs": os.path.ismount(tracing),
        "modules": Path(f"/lib/modules/{release}/modules.dep").exists(),
        "cgroup": cgroup_ok,
        "clocksource": clock.read_text().strip(),
        "uptime": float(Path("/proc/uptime").read_text().split()[0]),
    }


class Agent:
    """The event loop: single-threaded, so nothing races with fork."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.boot_dir = Path(args.boot_dir)
        self.jobs_dir = self.boot_dir / "jobs"
        self.idle = args.idle
        self.orphan = args.orphan
        self.grace = args.grace
        self.hb_every = min(HEARTBEAT_CHECK_EVERY, self.orphan / 2)
        self.base_env = self._base_env(args)
        # BPF objects built for the pinned kernel outlive the boot (clang is slow under TCG).
        self.base_env["TCPREPRO_BPF_BUILD"] = str(self.boot_dir.parent / "bpf")
        self.running: dict[str, Job] = {}
        self.seen: set[str] = set()
        self.last_activity = time.monotonic()
        self.use_cgroup = False
        self.jobs_mtime: int | None = None

    @staticmethod
    def _base_env(args: argparse.Namespace) -> dict[str, str]:
        env = dict(os.environ)
        path = env.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        env["PATH"] = os.pathsep.join([*args.path_prepend, path])
        env.setdefault("HOME", "/root")
        env["TCPREPRO_IN_VM"] = "1"
        env["TCPREPRO_VM_ACCEL_USED"] = args.accel
        env["TCPREPRO_VM_KERNEL"] = os.uname().release
        return env

    def run(self) -> int:
        info = setup_guest()
        self.use_cgroup = bool(info["cgroup"])
        info["boot_id"] = self.boot_dir.name
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(self.boot_dir / "ready.json", json.dumps(info))
        log(f"ready: {json.dumps(info)}")
        next_scan = next_full = next_hb = 0.0
        while True:
            now = time.monotonic()
            if now >= next_scan:
                next_scan = now + SCAN_EVERY
                mtime = mtime_ns(self.jobs_dir)
                if mtime != self.jobs_mtime or now >= next_full:
                    self.jobs_mtime, next_full = mtime, now + FULL_SCAN_EVERY
                    if self.scan():
                        self.stop_all("stop requested")
                        break
            self.reap()
            if now >= next_hb:
                next_hb = now + self.hb_every
                self.check_heartbeats(now)
            if not self.running and now - self.last_activity > self.idle:
                log(f"no job for {self.idle:.0f} s")
                break
            self.wait(max(0.0, next_scan - time.monotonic()))
        write_atomic(self.boot_dir / "stopping", "")
        self.scan(accept=False)
        log("powering off")
        return 0

    def wait(self, timeout: float) -> None:
        """Sleep until the next scan, waking at once when a job exits."""
        fds = [j.pidfd for j in self.running.values() if j.pidfd is not None]
        if fds:
            select.select(fds, [], [], timeout)
        else:
            time.sleep(timeout)

    def scan(self, accept: bool = True) -> bool:
        """Act on new entries in jobs/; True when a stop was requested."""
        try:
            names = sorted(os.listdir(self.jobs_dir))
        except OSError:
            return False
        stop = False
        for name in names:
            if name in self.seen or name.startswith("."):
                continue
            self.seen.add(name)
            if name == "stop":
                stop = True
            elif name.endswith(".cancel"):
                self.cancel(name.removesuffix(".cancel"))
            elif accept:
                self.start(name, self.jobs_dir / name)
            else:
                write_atomic(self.jobs_dir / name / "rejected", "")
        return stop

    def start(self, job_id: str, job_dir: Path) -> None:
        self.last_activity = time.monotonic()
        try:
            spec = json.loads((job_dir / "spec.json").read_text())
        except (OSError, ValueError) as exc:
            log(f"job {job_id}: unreadable spec ({exc})")
            write_atomic(job_dir / "exit", "126")
            return
        env = {**self.base_env, **spec.get("env", {})}
        cgroup = self._make_cgroup(job_id)
        argv = list(spec["argv"])
        if cgroup is not None:
            # Join the cgroup before exec so every descendant is in it from the start.
            argv = ["/bin/sh", "-c", 'echo $$ > "$0" 2>/dev/null; exec "$@"',
                    str(cgroup / "cgroup.procs"), *argv]
        with open(job_dir / "out", "wb") as out, open(job_dir / "err", "wb") as err:
            try:
                proc = subprocess.Popen(argv, cwd=spec["cwd"], env=env, stdin=subprocess.DEVNULL,
                                        stdout=out, stderr=err, start_new_session=True)
            except OSError as exc:
                err.write(f"tcprepro-agent: cannot run {spec['argv']!r} in {spec['cwd']}: {exc}\n"
                          .encode())
                err.flush()
                self._remove_cgroup(cgroup)
                write_atomic(job_dir / "exit", "127")
                return
        write_atomic(job_dir / "started", str(proc.pid))
        self.running[job_id] = Job(job_id, job_dir, proc, cgroup)

    def cancel(self, job_id: str) -> None:
        job = self.running.get(job_id)
        if job is not None and job.term_at is None:
            self.terminate(job, "cancelled by the host caller")

    def reap(self) -> None:
        now = time.monotonic()
        for job in list(self.running.values()):
            rc = job.proc.poll()
            if rc is not None:
                self.finish(job, rc)
            elif job.term_at is not None and not job.killed and now - job.term_at > self.grace:
                log(f"job {job.id}: still running {self.grace:.0f} s after SIGTERM, killing it")
                self._kill_all(job)

    def check_heartbeats(self, now: float) -> None:
        for job in self.running.values():
            hb = mtime_ns(job.dir / "hb")
            if hb != job.hb_mtime:
                job.hb_mtime, job.hb_seen_at = hb, now
            elif job.term_at is None and now - job.hb_seen_at > self.orphan:
                self.terminate(job, f"host caller silent for {self.orphan:.0f} s (gone?)")

    def terminate(self, job: Job, reason: str) -> None:
        log(f"job {job.id}: SIGTERM ({reason})")
        job.term_at = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.proc.pid, signal.SIGTERM)

    def finish(self, job: Job, rc: int) -> None:
        """Record the exit code once nothing of the job is left running."""
        self._kill_all(job)
        self._remove_cgroup(job.cgroup)
        if job.pidfd is not None:
            os.close(job.pidfd)
        code = rc if rc >= 0 else 128 - rc
        write_atomic(job.dir / "exit", str(code))
        del self.running[job.id]
        self.last_activity = time.monotonic()

    def stop_all(self, reason: str) -> None:
        for job in self.running.values():
            self.terminate(job, reason)
        deadline = time.monotonic() + self.grace
        while self.running and time.monotonic() < deadline:
            self.reap()
            self.wait(0.1)
        for job in list(self.running.values()):
            self._kill_all(job)
            self.finish(job, job.proc.wait())

    def _kill_all(self, job: Job) -> None:
        job.killed = True
        if job.cgroup is not None:
            with contextlib.suppress(OSError):
                (job.cgroup / "cgroup.kill").write_text("1")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(job.proc.pid, signal.SIGKILL)

    def _make_cgroup(self, job_id: str) -> Path | None:
        if not self.use_cgroup:
            return None
        path = CGROUP_ROOT / job_id
        try:
            path.mkdir()
        except OSError as exc:
            log(f"job {job_id}: no cgroup ({exc})")
            return None
        return path

    @staticmethod
    def _remove_cgroup(cgroup: Path | None) -> None:
        """rmdir fails while killed members are still exiting, so retry briefly."""
        if cgroup is None:
            return
        for _ in range(100):
            try:
                cgroup.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)
        log(f"cgroup {cgroup} still not empty after kill")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="tcprepro VM agent")
    p.add_argument("--boot-dir", required=True)
    p.add_argument("--idle", type=float, default=60.0)
    p.add_argument("--orphan", type=float, default=30.0)
    p.add_argument("--grace", type=float, default=10.0)
    p.add_argument("--accel", default="tcg")
    p.add_argument("--path-prepend", action="append", default=[])
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return Agent(args).run()


if __name__ == "__main__":
    sys.exit(main())
