"""The VM lane's one VM per checkout: booted on first use, shared, powered off when idle.

When the host kernel lacks what a paper needs (netem, tcp_htcp, ...), trials run in a VM booted
from the pinned 6.1 kernel. A TCG boot takes ~30 s, so the VM is shared: the first job of a
workflow run boots it (under a file lock), later and concurrent jobs reuse it, and it powers off
by itself after an idle period or on ``stop()``.

Host and guest talk through files: the guest agent (testbed/vm_agent.py) polls a spool directory
under ``<checkout>/results/.vm/``, which the guest sees writable over 9p. 9p shows host-created
files to the guest within one poll and guest writes to the host at once (measured), and it needs
no guest network, no vsock, no extra daemon.

State, all under ``<checkout>/results/.vm/``: ``lock`` (flock), ``lane.json`` (the current VM),
``console.log`` (kernel console and agent log of the latest boot), ``boots.jsonl`` (one record
per boot), ``boot-<id>/`` (that boot's spool).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from configuration import environment
from testbed import vng
from testbed.job_relay import CancelFlag, Cancelled, Tail, read_int, request_cancel
from testbed.process_groups import host_boot_id, kill_group, proc_stat, reap_children, track_child
from testbed.vm_errors import VMBootError, VMError
from testbed.vm_kernel import KernelImage, pinned_kernel, select_accel

CHECKOUT = Path(__file__).resolve().parent.parent
AGENT = Path(__file__).resolve().with_name("vm_agent.py")
HEARTBEAT_EVERY = 2.0
POLL = 0.1
PICKUP_TIMEOUT = 60.0  # the agent scans its spool every 0.5 s
# udev would load these for QEMU's emulated hardware (SATA, SMBus, watchdogs, KVM, CPU crypto);
# under TCG that doubled the boot. No trial needs them, and an explicit modprobe still works.
_UDEV_BLACKLIST = ("kvm,kvm_amd,kvm_intel,ccp,psmouse,ahci,libahci,libata,sr_mod,cdrom,sg,iTCO_wdt,"
                   "iTCO_vendor_support,i6300esb,i2c_i801,i2c_smbus,lpc_ich,pcspkr,serio_raw,evdev,"
                   "button,qemu_fw_cfg,aesni_intel,sha1_ssse3,sha256_ssse3,sha512_ssse3,"
                   "ghash_clmulni_intel,crc32c_intel,crc32_pclmul,crct10dif_pclmul,intel_pmc_bxt,"
                   "powernow_k8,acpi_cpufreq,intel_rapl_msr,intel_rapl_common,joydev,floppy")
# QEMU reopens its stdout/stderr by /proc/self/fd path with O_TRUNC and separate offsets, which
# garbles a log file given directly: give it a pipe, and let cat append the pipe to the log.
_LOGGED = '{ "$@"; echo "# virtme-ng exited with status $?"; } 2>&1 | cat >> "$0"'
SLOT_ENV = "TCPREPRO_VM_SLOT"          # the measurement slot (testbed/lane/vm.py vm_slot) a job holds


@dataclass(frozen=True)
class VMConfig:
    """VM size and timeouts; every field can be set from the environment (see from_env)."""

    cpus: int = 2
    memory: str = "3G"
    idle: float = 60.0  # the VM powers off after this long without any job
    orphan: float = 30.0  # a guest job whose caller stopped heart-beating this long is terminated
    grace: float = 10.0  # SIGTERM -> SIGKILL delay for a cancelled guest job
    boot_timeout: float = 240.0  # until the guest agent is ready
    banner_timeout: float = 45.0  # until the kernel prints its banner (catches non-kernels)

    @classmethod
    def from_env(cls) -> VMConfig:
        env = environment.view()
        d = cls()
        return cls(
            cpus=int(env.get("TCPREPRO_VM_CPUS", d.cpus)),
            memory=env.get("TCPREPRO_VM_MEMORY", d.memory),
            idle=float(env.get("TCPREPRO_VM_IDLE", d.idle)),
            orphan=float(env.get("TCPREPRO_VM_ORPHAN", d.orphan)),
            grace=float(env.get("TCPREPRO_VM_GRACE", d.grace)),
            boot_timeout=float(env.get("TCPREPRO_VM_BOOT_TIMEOUT", d.boot_timeout)),
            banner_timeout=float(env.get("TCPREPRO_VM_BANNER_TIMEOUT", d.banner_timeout)),
        )


@dataclass
class VMInfo:
    """What lane.json records about the running VM (pid = process group of vng/qemu)."""

    pid: int
    start_ticks: int
    boot_id: str
    kernel: str
    release: str
    accel: str
    launched_at: float
    boot_dir: str
    ready: dict[str, Any] = field(default_factory=dict)
    host_boot: str = ""         # the host's /proc/sys/kernel/random/boot_id when it was launched


def _alive(info: VMInfo) -> bool:
    """The recorded VM runs: same host boot, and its pid names a process that started when it did
    (a bare pid may since have been given to an unrelated process)."""
    reap_children()
    if info.host_boot and info.host_boot != host_boot_id():
        return False
    st = proc_stat(info.pid)
    return st is not None and st[1] == info.start_ticks and st[0] not in "ZX"


def _kill_lane_group(info: VMInfo) -> None:
    """Kill what is left of a recorded VM's process group, and nothing else: not after the host
    rebooted, and not when its pid now names another process (Linux reuses no pid that still
    names a process group, so that group is the other process's own)."""
    if info.host_boot and info.host_boot != host_boot_id():
        return
    st = proc_stat(info.pid)
    if st is not None and st[1] != info.start_ticks:
        return
    kill_group(info.pid)


class SharedVM:
    """One shared VM per checkout. Safe to use from several processes at once."""

    def __init__(self, checkout: Path | None = None, *, kernel: KernelImage | None = None,
                 accel: str | None = None, config: VMConfig | None = None) -> None:
        self.checkout = Path(checkout or CHECKOUT).resolve()
        # Resolved: in the docker image results/ is a link to the /repro/results mount, and the
        # guest must get the real folder as its writable share.
        self.results = (self.checkout / "results").resolve()
        self.state = self.results / ".vm"
        self.console = self.state / "console.log"
        self._kernel = kernel
        self._accel = accel
        self.config = config or VMConfig.from_env()

    # -- state files

    @contextlib.contextmanager
    def _locked(self, cancel: threading.Event | None = None) -> Iterator[None]:
        """Polls rather than blocks, so a cancelled caller stops waiting for another's boot."""
        self.state.mkdir(parents=True, exist_ok=True)
        with open(self.state / "lock", "w") as fh:
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if cancel is not None and cancel.is_set():
                        raise Cancelled from None
                    time.sleep(0.2)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _read_info(self) -> VMInfo | None:
        try:
            return VMInfo(**json.loads((self.state / "lane.json").read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def _write_info(self, info: VMInfo) -> None:
        tmp = self.state / ".lane.json.tmp"
        tmp.write_text(json.dumps(asdict(info)))
        os.replace(tmp, self.state / "lane.json")

    def _clear_info(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.state / "lane.json").unlink()

    # -- boot

    def ensure_running(self, cancel: threading.Event | None = None) -> VMInfo:
        """Return the ready VM of this checkout, booting one if there is none."""
        with self._locked(cancel):
            info = self._read_info()
            if info and _alive(info) and Path(info.boot_dir, "stopping").exists():
                self._wait_exit(info, timeout=30.0)
                info = None
            if info and _alive(info):
                return info if info.ready else self._wait_ready(info, cancel)
            if info:  # a VM that is gone: make sure nothing of it lingers
                _kill_lane_group(info)
                self._clear_info()
            return self._boot(cancel)

    def _boot(self, cancel: threading.Event | None) -> VMInfo:
        kernel = self._kernel or pinned_kernel()
        accel = self._accel or select_accel(kernel)
        self._clean_old_boots()
        boot_id = uuid.uuid4().hex[:12]
        boot_dir = self.state / f"boot-{boot_id}"
        (boot_dir / "jobs").mkdir(parents=True)
        cmd = self._vng_command(kernel, accel, boot_dir)
        self.console.write_text(f"# tcprepro.vm boot {boot_id}: {shlex.join(cmd)}\n")
        try:
            proc = subprocess.Popen(["/bin/sh", "-c", _LOGGED, str(self.console), *cmd],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True,
                                    cwd=self.checkout, env=vng.env())
        except OSError as exc:
            raise VMBootError(f"cannot start virtme-ng: {exc}") from exc
        track_child(proc)
        stat = proc_stat(proc.pid)
        info = VMInfo(pid=proc.pid, start_ticks=stat[1] if stat else 0, boot_id=boot_id,
                        kernel=str(kernel.path), release=kernel.release, accel=accel,
                        launched_at=time.time(), boot_dir=str(boot_dir), host_boot=host_boot_id())
        self._write_info(info)
        return self._wait_ready(info, cancel)

    def _vng_command(self, kernel: KernelImage, accel: str, boot_dir: Path) -> list[str]:
        """9p is forced: its write-through, uncached semantics are what the spool relies on."""
        venv_bin = self.checkout / ".venv" / "bin"
        prepend = [str(venv_bin)] if venv_bin.is_dir() else []
        prepend.append(str(Path(sys.executable).parent))
        agent = [sys.executable, "-S", "-u", str(AGENT), "--boot-dir", str(boot_dir), "--accel", accel,
                 "--idle", str(self.config.idle), "--orphan", str(self.config.orphan),
                 "--grace", str(self.config.grace)]
        for p in dict.fromkeys(prepend):
            agent += ["--path-prepend", p]
        cmd = [vng.binary(), "--run", str(kernel.path), "--force-9p", "--verbose",
               "--cpus", str(self.config.cpus), "--memory", self.config.memory, "--user", "root",
               "--name", "tcprepro-vm", "--cwd", str(self.checkout), "--rwdir", str(self.results),
               "--append", f"modprobe.blacklist={_UDEV_BLACKLIST}"]
        if accel == "tcg":
            cmd.append("--disable-kvm")
        return [*cmd, "--exec", shlex.join(agent)]

    def _wait_ready(self, info: VMInfo, cancel: threading.Event | None) -> VMInfo:
        """Wait for the guest agent; whoever sees it ready first records the boot."""
        ready_file = Path(info.boot_dir, "ready.json")
        deadline = info.launched_at + self.config.boot_timeout
        banner_by = info.launched_at + self.config.banner_timeout
        while not ready_file.exists():
            if not _alive(info):
                self._fail_boot(info, "the VM exited before its agent was ready")
            if time.time() > deadline:
                self._fail_boot(info, f"agent not ready after {self.config.boot_timeout:.0f} s")
            if banner_by and time.time() > banner_by:
                if not _has_banner(self.console):
                    self._fail_boot(info, f"no kernel banner on the console after "
                                          f"{self.config.banner_timeout:.0f} s (not a bootable kernel?)")
                banner_by = 0.0
            if cancel is not None and cancel.is_set():
                raise Cancelled
            time.sleep(0.2)
        info.ready = json.loads(ready_file.read_text())
        info.ready["boot_seconds"] = round(time.time() - info.launched_at, 1)
        self._write_info(info)
        if info.ready["release"] != info.release:
            self._fail_boot(info, f"guest runs {info.ready['release']}, expected {info.release}")
        self._record_boot(info)
        return info

    def _record_boot(self, info: VMInfo) -> None:
        r = info.ready
        _say(f"VM booted: kernel {r['release']}, accel {info.accel}, {r['cpus']} CPUs, "
             f"{r['mem_kb'] // 1024} MiB, in {r['boot_seconds']} s (console log: {self.console})")
        if not r.get("modules"):
            _say(f"warning: no /lib/modules/{r['release']} in the guest: modprobe will fail")
        with open(self.state / "boots.jsonl", "a") as fh:
            fh.write(json.dumps({"at": info.launched_at, "boot_id": info.boot_id,
                                 "kernel": info.kernel, "accel": info.accel, **r}) + "\n")

    def _fail_boot(self, info: VMInfo, reason: str) -> None:
        _kill_lane_group(info)
        self._clear_info()
        shutil.rmtree(info.boot_dir, ignore_errors=True)
        tail = _tail(self.console, 25)
        raise VMBootError(f"VM boot failed ({info.kernel}, accel {info.accel}): {reason}.\n"
                          f"Console log: {self.console}\n--- last lines ---\n{tail}")

    def _clean_old_boots(self) -> None:
        for old in self.state.glob("boot-*"):
            shutil.rmtree(old, ignore_errors=True)

    def _wait_exit(self, info: VMInfo, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while _alive(info) and time.monotonic() < deadline:
            time.sleep(0.2)
        _kill_lane_group(info)

    # -- jobs

    def exec(self, argv: list[str], cwd: Path | str, env: dict[str, str] | None = None) -> int:
        """Run argv in the VM, streaming its output here; return its exit code.

        SIGINT/SIGTERM (when called from the main thread) cancel the guest job: it gets SIGTERM,
        is killed after the grace period, and this returns 128 + the signal number."""
        if environment.flag("TCPREPRO_IN_VM"):
            # Already in the guest (a job that calls vm_exec again): just run it.
            return subprocess.call(argv, cwd=cwd, env={**os.environ, **(env or {})})
        cancel = CancelFlag()
        with cancel.installed():
            try:
                info, job_dir = self._submit_until_started(argv, Path(cwd), env or {}, cancel.event)
            except Cancelled:
                return 128 + cancel.signum
            _say(f"job on kernel {info.ready['release']} ({info.accel}), VM pid {info.pid}: "
                 f"{shlex.join(argv)}")
            return self._follow(info, job_dir, cancel)

    def _submit_until_started(self, argv: list[str], cwd: Path, env: dict[str, str],
                              cancel: threading.Event) -> tuple[VMInfo, Path]:
        """Submit; resubmit to a fresh VM if the current one was powering off meanwhile."""
        spec = {"argv": [str(a) for a in argv], "cwd": str(cwd.resolve()), "env": env}
        for _ in range(3):
            info = self.ensure_running(cancel)
            try:
                job_dir = self._submit(info, spec)
            except OSError:  # that boot's spool is gone: the VM went away meanwhile
                continue
            if self._await_start(info, job_dir, cancel):
                return info, job_dir
            shutil.rmtree(job_dir, ignore_errors=True)
        raise VMError(f"the VM kept shutting down before running the job; see {self.console}")

    @staticmethod
    def _submit(info: VMInfo, spec: dict[str, Any]) -> Path:
        job_id = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        jobs = Path(info.boot_dir, "jobs")
        tmp = jobs / f".{job_id}"
        tmp.mkdir()
        (tmp / "spec.json").write_text(json.dumps(spec))
        (tmp / "hb").touch()
        os.replace(tmp, jobs / job_id)
        return jobs / job_id

    def _await_start(self, info: VMInfo, job_dir: Path, cancel: threading.Event) -> bool:
        """True once the agent took the job; False if that VM is going away (resubmit)."""
        deadline = time.monotonic() + PICKUP_TIMEOUT
        while True:
            if (job_dir / "started").exists() or (job_dir / "exit").exists():
                return True
            if (job_dir / "rejected").exists() or not _alive(info):
                return False
            if time.monotonic() > deadline:
                raise VMError(f"the VM's agent did not pick up the job in {PICKUP_TIMEOUT:.0f} s; "
                              f"see {self.console}")
            if cancel.is_set():
                request_cancel(job_dir)
                raise Cancelled
            time.sleep(POLL)

    def _follow(self, info: VMInfo, job_dir: Path, cancel: CancelFlag) -> int:
        out = Tail(job_dir / "out", sys.stdout)
        err = Tail(job_dir / "err", sys.stderr)
        beat = checked = 0.0
        give_up: float | None = None
        while True:
            now = time.monotonic()
            out.pump()
            err.pump()
            code = read_int(job_dir / "exit")
            if code is not None:
                out.pump()
                err.pump()
                shutil.rmtree(job_dir, ignore_errors=True)
                with contextlib.suppress(OSError):
                    job_dir.with_name(f"{job_dir.name}.cancel").unlink()
                if cancel.event.is_set():
                    _say(f"cancelled by signal {cancel.signum}; guest job exited with {code}")
                    return 128 + cancel.signum
                return code
            if now - beat > HEARTBEAT_EVERY:
                with contextlib.suppress(OSError):
                    os.utime(job_dir / "hb")
                beat = now
            if cancel.event.is_set() and give_up is None:
                request_cancel(job_dir)
                give_up = now + self.config.grace + 10.0
            if give_up is not None and (now > give_up or cancel.count > 1):
                _say("cancelled; guest job did not report its exit in time (the agent kills it)")
                return 128 + cancel.signum
            if now - checked > 1.0:
                checked = now
                if not _alive(info):
                    out.pump()
                    err.pump()
                    raise VMError(f"the VM exited while the job ran; console log: {self.console}\n"
                                  f"{_tail(self.console, 15)}")
            time.sleep(POLL)

    # -- control

    def stop(self, timeout: float | None = None, if_idle: bool = False) -> bool:
        """Power the VM off (its jobs get SIGTERM first); True if one was running. With `if_idle`,
        only when no job runs: a workflow ending must not kill another one's trials."""
        with self._locked():
            info = self._read_info()
            if info is None:
                return False
            was_alive = _alive(info)
            if if_idle and was_alive and self._running_jobs(info):
                return False
            if was_alive:
                with contextlib.suppress(OSError):
                    Path(info.boot_dir, "jobs", "stop").touch()
                limit = timeout if timeout is not None else self.config.grace + 30.0
                self._wait_exit(info, limit)
            else:
                _kill_lane_group(info)
            self._clear_info()
            return was_alive

    def slot_in_use(self, index: int) -> bool:
        """Whether a guest job that measures in slot `index` (SLOT_ENV in its environment) has not
        exited. Its host caller may be gone: a SIGKILLed caller's job measures on until the agent
        finds its heartbeat stopped (`orphan` seconds), so the slot's flock alone frees it too early."""
        info = self._read_info()
        if info is None or not _alive(info):
            return False
        for job in Path(info.boot_dir, "jobs").glob("[!.]*"):
            if not job.is_dir() or (job / "exit").exists():
                continue
            with contextlib.suppress(OSError, ValueError):
                if (json.loads((job / "spec.json").read_text()).get("env") or {}).get(SLOT_ENV) == str(index):
                    return True
        return False

    @staticmethod
    def _running_jobs(info: Any) -> list[dict[str, Any]]:
        """Jobs submitted (started or about to be) that have not exited."""
        jobs = []
        for job in sorted(Path(info.boot_dir, "jobs").glob("[!.]*")):
            if job.is_dir() and (job / "spec.json").exists() and not (job / "exit").exists():
                with contextlib.suppress(OSError, ValueError):
                    jobs.append({"id": job.name, "started": (job / "started").exists(),
                                 "argv": json.loads((job / "spec.json").read_text())["argv"]})
        return jobs

    def status(self) -> dict[str, Any] | None:
        """The running VM's kernel, accel, pid, uptime and jobs; None if no VM is running."""
        info = self._read_info()
        if info is None or not _alive(info):
            return None
        jobs = [j for j in self._running_jobs(info) if j.pop("started")]
        return {"release": info.ready.get("release", info.release), "accel": info.accel,
                "pid": info.pid, "ready": bool(info.ready),
                "uptime": round(time.time() - info.launched_at, 1),
                "boot_seconds": info.ready.get("boot_seconds"), "jobs": jobs,
                "console": str(self.console)}


def _has_banner(console: Path) -> bool:
    try:
        with open(console, "rb") as fh:
            return b"Linux version" in fh.read(1 << 20)
    except OSError:
        return False


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_bytes()[-20000:].decode(errors="replace")
    except OSError:
        return "(no console log)"
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", text)
    kept = [ln for ln in text.splitlines() if ln.strip()]
    return "\n".join(kept[-lines:])


def _say(msg: str) -> None:
    print(f"tcprepro.vm: {msg}", file=sys.stderr, flush=True)
