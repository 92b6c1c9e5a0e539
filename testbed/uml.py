"""The virtual-time lane: one job (a trial's measurement) in its own User-Mode Linux instance.

UML runs the Linux kernel as an ordinary host process, so the lane needs no root, no /dev/kvm and
no capabilities. Booted with `time-travel=inf-cpu`, the guest's clocks advance only while it is
idle: CPU work takes no virtual time, so timers, netem delays and shapers fire exactly when they
should whatever load the host carries, and a trial costs the host CPU it uses, not its duration.
One instance per trial, so lanes are independent processes and run one per core.

The guest sees the host's / read-only through hostfs, the checkout read-only at GUEST_CHECKOUT, and
writes only to tmpfs and to one shared folder, the trial's .partial directory, which it sees as
GUEST_SHARE: both fixed paths, whatever the host's, so a checkout under /root or /tmp (where the
guest mounts its own tmpfs) serves as well as any. A job is a function of its inputs alone, to the
last bit, wherever it runs: the kernel mixes its command line into its random pool and the patched
UML kernel takes no entropy from the host (kernel/uml/patches), so the command line carries the
seed and nothing that depends on the host (the guest's init and the shared folder are reached as
/proc/self/cwd: the host resolves hostfs paths in the UML process, whose working directory is the
shared folder); and the shared folder has the same path in every guest, so that nothing of the
host's layout reaches a job.

A guest never holds the host's root. Its kernel can write through hostfs wherever its host process
may (the guest's read-only mounts are the guest's own choice, which its root can undo), so a caller
running as root starts the UML process as the dedicated unprivileged user GUEST_USER instead
(`make deps` creates it): the guest then reaches what any unprivileged user reaches, its share (lent
to that user for the run) and the checkout; where a folder above them is closed to that user (a
clone in root's home), they are bound at BIND_ROOT in a mount namespace of the guest's own.
docs/threat-model.md says what that leaves.

In the shared folder: .uml/init (testbed/uml_init), .uml/job.sh (the job), .uml/heartbeat (the
guest's uptime, rewritten each virtual second), .uml/exit (the job's status); uml-console.log (the
guest's console) stays with the trial.
"""
from __future__ import annotations

import contextlib
import math
import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from configuration import environment
from testbed.uml_kernel import UmlKernel, ensure

GUEST_INIT = Path(__file__).resolve().with_name("uml_init")
CONTROL = ".uml"
GUEST_SHARE = Path("/run/tcprepro-share")     # where a job finds the shared folder
GUEST_CHECKOUT = Path("/run/tcprepro-checkout")   # where a job finds the checkout, read-only
GUEST_USER = "tcprepro-guest"                 # whom a root caller's guests run as
CONSOLE = "uml-console.log"
# The guest's CLOCK_REALTIME at boot (2026-01-01T00:00:00Z): fixed, as the kernel mixes it into its
# random pool too; pcap timestamps are converted to the monotonic clock anyway.
TIME_TRAVEL_START_NS = 1_767_225_600 * 1_000_000_000
GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PANIC = "Kernel panic"


class UmlError(RuntimeError):
    """The guest did not run its job to the end; the message says why and quotes its console."""


@dataclass(frozen=True)
class GuestRun:
    rc: int
    wall_s: float
    virtual_s: float | None         # the guest's uptime when its job ended
    kernel: UmlKernel
    command_line: tuple[str, ...]
    # The guest's /proc/interrupts when its job ended, {"<irq> <name>": count}: in virtual time a
    # rerun of the same trial must count the same; a difference names what reached the guest from
    # the host at a moment of the host's choosing (its timing leaks into the guest's random pool).
    interrupts: dict[str, int] = field(default_factory=dict)
    # The host CPU (user + system, seconds) of the UML process and the host processes that carried
    # the guest's address spaces: what the trial cost the host (benchmarks/per_packet.py).
    host_cpu_s: float | None = None


@dataclass(frozen=True)
class Limits:
    """When the host gives up on a guest: no heartbeat (virtual time stalled: a job spinning at zero
    virtual cost, or a hung kernel) for `stall_s` of wall time, or `deadline_s` of wall time in all."""

    memory: str = "1G"
    stall_s: float = 300.0
    deadline_s: float = 6 * 3600.0

    @classmethod
    def from_env(cls) -> Limits:
        """The limits, TCPREPRO_UML_* overriding each; a value that is not one is a ValueError naming
        the variable (the memory goes onto the guest's kernel command line: a size, nothing else)."""
        d = cls()
        env = environment.view()
        memory = env.get("TCPREPRO_UML_MEMORY", d.memory).strip()
        size = re.fullmatch(r"(\d{1,6})([MG])", memory)
        mib = int(size.group(1)) * (1024 if size.group(2) == "G" else 1) if size else 0
        if not 256 <= mib <= 64 * 1024:
            raise ValueError(f"TCPREPRO_UML_MEMORY={memory!r}: give the guest's memory as 256M to 64G "
                             f"(e.g. {d.memory})")
        return cls(memory=memory, stall_s=_seconds(env, "TCPREPRO_UML_STALL_S", d.stall_s),
                   deadline_s=_seconds(env, "TCPREPRO_UML_DEADLINE_S", d.deadline_s))


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A positive, finite number of seconds from the environment, or a ValueError naming it."""
    raw = env.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}={raw!r}: give a positive number of seconds (default {default:g})")
    return value


def command_line(seed: int, memory: str, boot_params: Sequence[str] = ()) -> list[str]:
    """The kernel's arguments: the same for every job but the seed and the job's own built-in
    parameters (`module.param=value`, set before the kernel's initcalls read them)."""
    return [f"mem={memory}", "rootfstype=hostfs", "rootflags=/", "ro", f"init=/proc/self/cwd/{CONTROL}/init",
            "time-travel=inf-cpu", f"time-travel-start={TIME_TRAVEL_START_NS}", "con=null", "con0=null,fd:1",
            "loglevel=4", f"tcprepro.seed={seed}", *boot_params]


def job_script(argv: Sequence[str], cwd: Path, env: Mapping[str, str], prelude: str = "") -> str:
    """What the guest's init runs: `prelude` (shell), then the job with exactly `env` (plus the
    guest's PATH), in `cwd`."""
    assigns = " ".join(shlex.quote(f"{k}={v}") for k, v in sorted({"PATH": GUEST_PATH, "HOME": "/root",
                                                                     "LANG": "C.UTF-8", **env}.items()))
    return (f"{prelude.rstrip()}\n" * bool(prelude.strip()) + f"cd {shlex.quote(str(cwd))} || exit 124\n"
            f"exec env -i {assigns} {' '.join(shlex.quote(a) for a in argv)}\n")


def in_guest(path: Path, checkout: Path) -> Path:
    """Where the guest sees a host path: under GUEST_CHECKOUT if it lies in `checkout` (as given,
    links not followed: a venv's python is a link whose own place tells Python its venv), else as is."""
    for candidate in (path, path.parent.resolve() / path.name):
        with contextlib.suppress(ValueError):
            return GUEST_CHECKOUT / candidate.relative_to(checkout)
    return path


def guest_ids() -> tuple[int, int] | None:
    """(uid, gid) the UML process runs as when the caller is root: GUEST_USER's; None otherwise
    (it runs as the caller). A UmlError with the fix when that user is missing or is root."""
    if os.geteuid() != 0:
        return None
    try:
        user = pwd.getpwnam(GUEST_USER)
    except KeyError:
        raise UmlError(f"run as root, a UML guest runs as the unprivileged user {GUEST_USER}, which does not "
                       f"exist here; fix: make deps (or: useradd --system --no-create-home --shell "
                       f"/usr/sbin/nologin {GUEST_USER})") from None
    if user.pw_uid == 0 or user.pw_gid == 0:
        raise UmlError(f"the user {GUEST_USER} has uid {user.pw_uid}, gid {user.pw_gid}: a UML guest must not run "
                       f"with root's ids; fix: userdel {GUEST_USER} && make deps")
    return user.pw_uid, user.pw_gid


def unreadable_by_others(checkout: Path, kernel: Path) -> list[Path]:
    """What an unprivileged guest user cannot reach among what a job needs: the checkout's folders
    on the way to its code and venv, and the kernel (the folders above them do not count: the guest
    reaches them through binds where those are closed). Permission bits of 'others': the guest's
    user owns none of them."""
    need = [(checkout, 0o005), (checkout / "testbed", 0o005), (checkout / "testbed" / "trial.py", 0o004),
            (kernel, 0o005)]
    venv = checkout / ".venv"
    if venv.is_dir():
        need += [(venv, 0o005), (venv / "pyvenv.cfg", 0o004)]
    bad = []
    for path, bits in need:
        with contextlib.suppress(OSError):
            if path.stat().st_mode & bits != bits:
                bad.append(path)
    return bad


def _lend(tree: Path, ids: tuple[int, int]) -> None:
    """Give `tree` and everything in it to `ids` (the guest's share, before and after a run)."""
    for root, dirs, files in os.walk(tree):
        os.chown(root, *ids)
        for name in (*dirs, *files):
            os.chown(os.path.join(root, name), *ids, follow_symlinks=False)


# A root caller's guest whose share, checkout or kernel lies behind a folder closed to GUEST_USER
# (root's home, pytest's /tmp/pytest-of-root) gets them bound here, in a mount namespace of its own:
# hostfs walks host paths literally, with the UML process's rights (it follows /proc/self/cwd as
# the path the link names, not as the open folder).
BIND_ROOT = Path("/run/tcprepro-uml")
# $1 share, $2 checkout ('' for none), $3 kernel, $4 the private folder, $5 the guest's user space
# ('' for the host's), then the command; binds everything under BIND_ROOT of that user space.
_BIND_SCRIPT = f"""
b=$5{BIND_ROOT}
mount -t tmpfs -o mode=0755,size=64k tcprepro-uml "$b"
mkdir "$b/share" "$b/checkout" "$b/private"
touch "$b/linux"
mount --bind "$1" "$b/share"
mount --bind "$3" "$b/linux"
mount --bind "$4" "$b/private"
if [ -n "$2" ]; then mount --bind "$2" "$b/checkout" && mount -o remount,bind,ro "$b/checkout"; fi
if [ -n "$5" ]; then mount -t proc proc "$5/proc" && mount --rbind /dev "$5/dev"; fi
root=${{5:-/}}
shift 5
exec chroot "$root" /bin/sh -c 'cd {BIND_ROOT}/share && exec "$@"' sh "$@"
"""


def userspace_from_env() -> Path | None:
    """TCPREPRO_UML_USERSPACE: a root tree (a debootstrapped Debian 12, say) the guest's / is instead
    of the host's, for the test that a trial does not depend on the image's user space; None when
    unset. A ValueError naming the variable when it is not a tree a guest can run on, or the caller
    is not root (the UML process starts chrooted there)."""
    raw = (environment.get("TCPREPRO_UML_USERSPACE") or "").strip()
    if not raw:
        return None
    tree = Path(raw)
    lacks = [p for p in ("bin/sh", "bin/busybox", "usr/bin/python3", "usr/sbin/chroot", "usr/bin/setpriv",
                         "proc", "dev", "run") if not (tree / p).exists()]
    if not tree.is_absolute() or lacks:
        raise ValueError(f"TCPREPRO_UML_USERSPACE={raw!r}: give the absolute path of a root tree with the "
                         f"guest's tools (it lacks {', '.join(lacks) or 'an absolute path'})")
    if os.geteuid() != 0:
        raise ValueError("TCPREPRO_UML_USERSPACE needs a root caller: the guest's process starts chrooted there")
    return tree


def _walkable(path: Path) -> bool:
    """Whether a user who owns none of the folders above `path` can walk to it (each searchable by
    others). `path` itself is the guest user's own (the share, the private folder) or checked apart
    (the checkout and kernel: unreadable_by_others)."""
    return all(p.stat().st_mode & 0o001 for p in path.parents)


def _may_mount() -> bool:
    """Whether this process holds CAP_SYS_ADMIN (bit 21 of its effective set), which a mount namespace takes."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        status = Path("/proc/self/status").read_text().splitlines()
        return bool(int(next(line for line in status if line.startswith("CapEff:")).split()[1], 16) >> 21 & 1)
    return False


def _host_command(kernel: Path, share: Path, checkout: Path | None, private: Path, args: Sequence[str],
                  ids: tuple[int, int] | None, userspace: Path | None) -> tuple[list[str], Path, Path | None, Path]:
    """(argv, working directory, the checkout's and the private folder's paths as the UML process
    sees them) of the UML process. The caller's own: as it is. A root caller's: as GUEST_USER, no
    groups; in a mount namespace with BIND_ROOT when a path it needs is closed to that user (root
    may make one), or when the guest's / is another user space than the host's (`userspace`)."""
    tie = ["--pdeathsig", "KILL", "--"]
    if ids is None:
        if userspace:
            raise UmlError("a guest on another user space (TCPREPRO_UML_USERSPACE) needs a root caller: "
                           "its UML process starts chrooted there")
        return ["setpriv", *tie, str(kernel), *args], share, checkout, private
    drop = ["setpriv", f"--reuid={ids[0]}", f"--regid={ids[1]}", "--clear-groups", *tie]
    if not userspace and all(_walkable(p) for p in (share, kernel, private, *([checkout] if checkout else []))):
        return [*drop, str(kernel), *args], share, checkout, private
    if not shutil.which("unshare"):
        raise UmlError("a root caller's guest needs util-linux's unshare to reach a folder closed to "
                       f"{GUEST_USER}; fix: make deps")
    if not _may_mount():
        closed = next((p for p in (share, kernel, private, *([checkout] if checkout else []))
                       if not _walkable(p)), userspace)
        raise UmlError(f"{closed}: a folder above it is closed to {GUEST_USER}, whom a root caller's guest runs "
                       "as, and this root may not make a mount namespace to bind it (no CAP_SYS_ADMIN, as in "
                       "docker by default); fix: chmod o+x on the folders above it, or run as an unprivileged user")
    ((userspace or Path("/")) / BIND_ROOT.relative_to("/")).mkdir(mode=0o755, parents=True, exist_ok=True)
    return (["unshare", "--mount", "--propagation", "private", "--", "sh", "-ec", _BIND_SCRIPT, "sh",
             str(share), str(checkout or ""), str(kernel), str(private), str(userspace or ""),
             *drop, str(BIND_ROOT / "linux"), *args],
            Path("/"), BIND_ROOT / "checkout" if checkout else None, BIND_ROOT / "private")


def run(argv: Sequence[str], *, share: Path, cwd: Path, env: Mapping[str, str], seed: int,
        checkout: Path | None = None, limits: Limits | None = None, kernel: UmlKernel | None = None,
        boot_params: Sequence[str] = (), prelude: str = "", userspace: Path | None = None) -> GuestRun:
    """Boot a guest that runs `argv` (in `cwd`, with `env`: guest paths) with `share` writable as
    GUEST_SHARE and `checkout` (if given) read-only as GUEST_CHECKOUT, wait for it to power off,
    and return the job's exit status. SIGINT/SIGTERM in the caller (as an exception) and every
    failure kill the guest's whole process group. `boot_params` go on the kernel's command line
    (command_line). `prelude` is shell the guest runs before the job; `userspace`, a root tree the
    guest's / is instead of the host's (another machine image's user space: the test that a trial
    does not depend on it). Run as root, the guest's host process runs as GUEST_USER (guest_ids)."""
    limits = limits or Limits.from_env()
    kernel = kernel or ensure()
    ids = guest_ids()
    if ids and checkout and (bad := unreadable_by_others(checkout, kernel.path)):
        raise UmlError(f"run as root, a UML guest runs as {GUEST_USER}, who cannot read {', '.join(map(str, bad))}; "
                       f"fix: chmod o+rX on them (chmod -R o+rX {checkout}), or run as an unprivileged user")
    share = share.resolve()
    control = share / CONTROL
    shutil.rmtree(control, ignore_errors=True)
    control.mkdir(parents=True)
    shutil.copy2(GUEST_INIT, control / "init")
    (control / "job.sh").write_text(job_script(argv, cwd, env, prelude))
    args = command_line(seed, limits.memory, boot_params)
    private = Path(tempfile.mkdtemp(prefix="tcprepro-uml-"))
    # UML keeps its memory in a file under TMPDIR (which must allow exec: /dev/shm in a container
    # does not) and its control socket under $HOME/.uml: both private to this guest.
    try:
        host_argv, host_cwd, checkout_on_host, private_on_host = _host_command(
            kernel.path, share, checkout, private, args, ids, userspace)
        if checkout is not None:
            (control / "checkout").write_text(f"{checkout_on_host}\n")
        if ids:
            _lend(share, ids)
            os.chown(private, *ids)
    except (OSError, UmlError):
        shutil.rmtree(private, ignore_errors=True)
        shutil.rmtree(control, ignore_errors=True)
        raise
    host_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": str(private_on_host),
                "HOME": str(private_on_host)}
    t0 = time.monotonic()
    # The console is a regular file: a pipe can be full, and the guest then waits for the host's
    # SIGIO, an interrupt whose virtual time would depend on the host's load (and the kernel mixes
    # interrupt timing into its random pool).
    console = (share / CONSOLE).open("ab")
    try:
        proc = subprocess.Popen(host_argv, cwd=host_cwd, env=host_env, stdin=subprocess.DEVNULL, stdout=console,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as exc:
        shutil.rmtree(private, ignore_errors=True)
        raise UmlError(f"cannot start {kernel.path}: {exc}") from None
    finally:
        console.close()
    try:
        why = _wait(proc, control / "heartbeat", share / CONSOLE, limits, t0)
        wall = time.monotonic() - t0
        virtual = _uptime(control / "heartbeat")
        if why:
            raise UmlError(f"{why} after {wall:.0f} s; console: {share / CONSOLE}:\n{_tail(share / CONSOLE)}")
        try:
            rc = int((control / "exit").read_text().strip())
        except (OSError, ValueError):
            raise UmlError(f"the guest powered off without its job's exit status; "
                           f"console: {share / CONSOLE}:\n{_tail(share / CONSOLE)}") from None
        run = GuestRun(rc, wall, virtual, kernel, tuple(args), read_interrupts(control / "interrupts"))
    finally:
        cpu = _kill_group(proc)
        shutil.rmtree(private, ignore_errors=True)
        shutil.rmtree(control, ignore_errors=True)
        if ids:
            _lend(share, (os.geteuid(), os.getegid()))
    return replace(run, host_cpu_s=cpu)


def _wait(proc: subprocess.Popen[bytes], heartbeat: Path, console: Path, limits: Limits,
          t0: float) -> str | None:
    """None once the guest has exited by itself, else why it had to be stopped. The UML process is
    left unreaped (WNOWAIT), so its process group cannot be reused before _kill_group."""
    last_beat, last_change = None, t0
    while True:
        if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return None
        time.sleep(0.2)
        now = time.monotonic()
        if _panicked(console):
            return "the guest kernel panicked"
        with contextlib.suppress(OSError):
            beat = heartbeat.stat().st_mtime_ns
            if beat != last_beat:
                last_beat, last_change = beat, now
        if now - last_change > limits.stall_s:
            return (f"virtual time stalled: no heartbeat for {limits.stall_s:.0f} s of wall time (a guest "
                    f"process spinning, or a hung kernel; TCPREPRO_UML_STALL_S sets the limit)")
        if now - t0 > limits.deadline_s:
            return f"wall-time deadline of {limits.deadline_s:.0f} s passed (TCPREPRO_UML_DEADLINE_S)"


def read_interrupts(path: Path) -> dict[str, int]:
    """/proc/interrupts as the guest's init saved it: {"<irq> <name>": count}; {} if absent."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines[1:]:                       # the first line names the CPUs
        irq, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            out[f"{irq.strip()} {' '.join(fields[1:])}".strip()] = int(fields[0])
    return out


def _panicked(console: Path) -> bool:
    """A panicked UML kernel spins forever: its console's last lines say so."""
    try:
        with console.open("rb") as fh:
            fh.seek(max(0, console.stat().st_size - 4096))
            return PANIC.encode() in fh.read()
    except OSError:
        return False


def _kill_group(proc: subprocess.Popen[bytes]) -> float | None:
    """The UML process and the host processes that carry its guest's address spaces, all of them.
    The UML process is not reaped before this, so the group id is still its own. Returns the host
    CPU of the UML process and the children it reaped (the address-space processes of a guest that
    powered off), None if it was not reaped within 10 s."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while True:
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return round(usage.ru_utime + usage.ru_stime, 3)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def _uptime(heartbeat: Path) -> float | None:
    try:
        return float(heartbeat.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no console output)"
