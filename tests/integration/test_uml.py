"""The UML runner itself (testbed/uml.py): a guest runs its job and powers off, its randomness is a
function of the seed alone, and a guest that stops advancing virtual time, or whose caller is
interrupted, is killed with everything it started on the host."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import CHECKOUT

pytestmark = [pytest.mark.uml]


@pytest.fixture(scope="session")
def uml_kernel():
    """The lane's kernel, built here when the checkout has none yet (a fresh clone: ~5 min)."""
    from testbed import uml_kernel
    return uml_kernel.ensure()


def guest_processes(kernel, under: Path) -> list[str]:
    """Host processes of UML guests of this kernel (the kernel and its address-space carriers, which
    run its binary whatever their argv[0]: the runner starts it through a descriptor) that share a
    folder below `under` (their working directory): other guests (a workflow running on this
    machine) are not this test's."""
    mine = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if Path(os.readlink(entry / "exe")) != kernel.path.resolve():
                continue
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if cwd == under or under in cwd.parents:
            mine.append(f"{entry.name} {(entry / 'cmdline').read_bytes()[:80]!r}")
    return mine


def share(root: Path, name: str) -> Path:
    """A shared folder outside /tmp's tmpfs view in the guest is not needed: any host path works."""
    d = root / name
    d.mkdir(parents=True)
    return d


def test_a_guest_runs_its_job_and_returns_its_status(uml_kernel, tmp_path):
    from testbed import uml
    d = share(tmp_path, "job")
    run = uml.run(["sh", "-c", f"echo written > {uml.GUEST_SHARE}/out.txt; sleep 30; exit 7"],
                  share=d, cwd=Path("/"), env={}, seed=1, kernel=uml_kernel)
    assert run.rc == 7
    assert (d / "out.txt").read_text() == "written\n"
    # 30 virtual seconds of sleep (+ the init's 2 s) advance the guest's clock, not the host's
    assert run.virtual_s is not None and run.virtual_s >= 32
    assert run.wall_s < 30, f"{run.wall_s:.1f} s of wall time for 30 virtual seconds of sleep"
    assert not (d / uml.CONTROL).exists(), "the control folder is removed"
    assert "reboot: System halted" in (d / uml.CONSOLE).read_text()
    assert not guest_processes(uml_kernel, tmp_path)


def test_randomness_follows_the_seed_and_nothing_else(uml_kernel, tmp_path):
    """The command line is the guest's only entropy: the same seed gives the same random bytes in
    another shared folder; another seed gives others."""
    from testbed import uml
    job = ["sh", "-c", f"head -c 16 /dev/urandom | od -An -tx1 > {uml.GUEST_SHARE}/r.txt"]
    draws = []
    for name, seed in (("a", 5), ("b/c/d", 5), ("e", 6)):
        d = share(tmp_path, name)
        assert uml.run(job, share=d, cwd=Path("/"), env={}, seed=seed, kernel=uml_kernel).rc == 0
        draws.append((d / "r.txt").read_text())
    assert draws[0] == draws[1] and draws[0] != draws[2], draws


def test_a_guest_that_stops_virtual_time_is_killed(uml_kernel, tmp_path):
    """A job spinning on the CPU never lets the guest's clock move: no heartbeat reaches the host,
    and the watchdog kills the guest with every host process it made."""
    from testbed import uml
    d = share(tmp_path, "spin")
    t0 = time.monotonic()
    with pytest.raises(uml.UmlError, match="virtual time stalled"):
        uml.run(["sh", "-c", "while :; do :; done"], share=d, cwd=Path("/"), env={}, seed=1, kernel=uml_kernel,
                limits=uml.Limits(stall_s=8))
    assert time.monotonic() - t0 < 60
    assert not guest_processes(uml_kernel, tmp_path)
    assert not (d / uml.CONTROL).exists()


def test_an_interrupted_caller_leaves_no_guest(uml_kernel, tmp_path):
    """SIGTERM to the process running a guest (a trial stopped by Snakemake): it unwinds and the guest
    dies with it; SIGKILL to it: the guest dies by its parent-death signal."""
    d = share(tmp_path, "term")
    code = (f"import sys; from pathlib import Path; from testbed import uml; "
            f"from testbed.interrupt import install_signal_handlers; install_signal_handlers(); "
            f"uml.run(['sh', '-c', 'echo up > {uml_share()}/up; sleep 100000'], share=Path(sys.argv[1]), "
            f"cwd=Path('/'), env={{}}, seed=1)")
    for sig in (signal.SIGTERM, signal.SIGKILL):
        (d / "up").unlink(missing_ok=True)
        proc = subprocess.Popen([sys.executable, "-c", code, str(d)], cwd=CHECKOUT)
        deadline = time.monotonic() + 60
        while not (d / "up").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (d / "up").exists(), "the guest never started its job"
        os.kill(proc.pid, sig)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while guest_processes(uml_kernel, tmp_path) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not guest_processes(uml_kernel, tmp_path), f"after {sig.name}: {guest_processes(uml_kernel, tmp_path)}"


def uml_share() -> str:
    from testbed import uml
    return str(uml.GUEST_SHARE)


@pytest.mark.skipif(os.geteuid() != 0, reason="what a root caller's guest may do on the host")
@pytest.mark.parametrize("closed", [False, True], ids=["open-folders", "behind-a-closed-folder"])
def test_a_root_callers_guest_holds_no_root_on_the_host(uml_kernel, tmp_path, closed):
    """Started by root, the guest's host process runs as the unprivileged GUEST_USER: its root can
    undo its own read-only mount of the host's /, and still writes nowhere that user may not (here a
    root-owned folder open to all for reading). The share is lent for the run and given back. Both
    ways the process starts: directly where every folder above the share is open (the docker
    image's /repro), in a mount namespace of its own where one is closed (pytest's /tmp/pytest-of-root)."""
    import pwd
    import shutil
    import tempfile

    from testbed import uml
    host_dir = Path(tempfile.mkdtemp(prefix="tcprepro-root-owned-", dir="/var/tmp"))
    try:
        host_dir.chmod(0o755)
        d = share(tmp_path if closed else host_dir, "root")
        way = uml._host_command(uml_kernel.path, d, None, d, [], uml.guest_ids(), None)[0][0]
        assert way == ("unshare" if closed else "setpriv"), way
        job = (f"mount -o remount,rw / && echo remounted > {uml.GUEST_SHARE}/remount; "
               f"touch {host_dir}/escaped; echo > {uml.GUEST_SHARE}/mine; "
               f"stat -c %u {uml.GUEST_SHARE}/mine > {uml.GUEST_SHARE}/host-uid")
        run = uml.run(["sh", "-c", job], share=d, cwd=Path("/"), env={}, seed=1, kernel=uml_kernel)
        assert run.rc == 0, (d / uml.CONSOLE).read_text()[-2000:]
        assert (d / "remount").read_text() == "remounted\n", "the guest could not remount /: the test shows nothing"
        assert not (host_dir / "escaped").exists(), "a root caller's guest wrote into a root-owned host folder"
        assert int((d / "host-uid").read_text()) == pwd.getpwnam(uml.GUEST_USER).pw_uid
        assert {(p.stat().st_uid, p.stat().st_gid) for p in (d, *d.rglob("*"))} == {(0, 0)}, \
            "the share is given back to the caller"
    finally:
        shutil.rmtree(host_dir, ignore_errors=True)


def test_the_checkout_and_kernel_are_reached_behind_a_closed_folder(uml_kernel, tmp_path):
    """A clone under /root (mode 0700), with its kernel: the guest sees the checkout at the fixed
    GUEST_CHECKOUT, read-only, whoever the guest's host process runs as."""
    import shutil
    import tempfile

    from testbed import uml
    from testbed.uml_kernel import UmlKernel
    closed = Path(tempfile.mkdtemp(prefix="tcprepro-closed-", dir="/var/tmp"))      # mode 0700
    try:
        checkout = closed / "clone"
        checkout.mkdir(mode=0o755)
        (checkout / "hello").write_text("from the checkout\n")
        kernel = UmlKernel(closed / "linux", uml_kernel.info)
        shutil.copy2(uml_kernel.path, kernel.path)
        d = share(tmp_path, "closed")
        job = (f"cat hello > {uml.GUEST_SHARE}/seen; pwd >> {uml.GUEST_SHARE}/seen; "
               f"touch {uml.GUEST_CHECKOUT}/written 2>/dev/null || echo read-only >> {uml.GUEST_SHARE}/seen")
        run = uml.run(["sh", "-c", job], share=d, checkout=checkout, cwd=uml.GUEST_CHECKOUT, env={}, seed=1,
                      kernel=kernel)
        assert run.rc == 0, (d / uml.CONSOLE).read_text()[-2000:]
        assert (d / "seen").read_text() == f"from the checkout\n{uml.GUEST_CHECKOUT}\nread-only\n"
        assert not (checkout / "written").exists()
    finally:
        shutil.rmtree(closed, ignore_errors=True)


def test_a_root_caller_with_a_checkout_closed_to_the_guests_user_is_told_the_fix(uml_kernel, tmp_path):
    """A checkout the guest's user may not read would fail inside the guest, with no word of why:
    refused before the guest boots, naming what and the fix."""
    if os.geteuid() != 0:
        pytest.skip("only a root caller's guest runs as another user")
    from testbed import uml
    checkout = tmp_path / "clone"
    (checkout / "testbed").mkdir(parents=True)
    (checkout / "testbed" / "trial.py").write_text("")
    checkout.chmod(0o750)
    d = share(tmp_path, "refused")
    with pytest.raises(uml.UmlError, match=r"cannot read .*clone.*fix: chmod o\+rX"):
        uml.run(["true"], share=d, checkout=checkout, cwd=uml.GUEST_CHECKOUT, env={}, seed=1, kernel=uml_kernel)
    assert sorted(p.name for p in d.iterdir()) == [], "nothing was prepared for a guest that never booted"


@pytest.mark.skipif(os.geteuid() != 0, reason="a root caller without CAP_SYS_ADMIN")
def test_a_root_caller_that_may_not_mount_is_told_which_folder_is_closed(uml_kernel, tmp_path):
    """Root without CAP_SYS_ADMIN (docker's default) cannot bind a share that lies behind a folder
    closed to the guest's user: refused before the guest boots, naming the folder and the fix, not
    unshare's own words in a console."""
    d = share(tmp_path, "nocap")
    code = ("import sys; from pathlib import Path; from testbed import uml\n"
            "try:\n"
            "    uml.run(['true'], share=Path(sys.argv[1]), cwd=Path('/'), env={}, seed=1)\n"
            "except uml.UmlError as exc:\n"
            "    print(exc); sys.exit(3)\n")
    proc = subprocess.run(["setpriv", "--bounding-set", "-sys_admin", "--", sys.executable, "-c", code, str(d)],
                          cwd=CHECKOUT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "no CAP_SYS_ADMIN" in proc.stdout and "fix: chmod o+x" in proc.stdout and str(d) in proc.stdout
    assert not list(d.iterdir()), "nothing was prepared for a guest that never booted"
    assert not guest_processes(uml_kernel, tmp_path)
