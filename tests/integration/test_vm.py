"""The VM lane, with real boots of the pinned kernel (no mocks).

One module-scoped lane (one boot) serves most tests; a second short-lived lane checks that
concurrent cold callers share one boot and that killed callers leave nothing behind. Each lane
lives in a temporary checkout so a developer's own lane is not disturbed.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.process_groups import group_members
from testbed.shared_vm import SharedVM, VMConfig
from testbed.vm_errors import KernelNotFoundError, VMBootError
from testbed.vm_kernel import KernelImage, pinned_kernel

REPO = Path(__file__).resolve().parents[2]


def _have_vm() -> str | None:
    try:
        pinned_kernel()
    except KernelNotFoundError as exc:
        return str(exc)
    if shutil.which("qemu-system-x86_64") is None:
        return "qemu-system-x86_64 missing: run `make deps`"
    return None


pytestmark = [pytest.mark.vm, pytest.mark.skipif(_have_vm() is not None, reason=str(_have_vm()))]


def _live_processes_mentioning(text: str) -> list[str]:
    """Non-zombie processes whose command line contains text (our vng/qemu carry the checkout)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and state not in "ZX":
            found.append(f"{entry.name}: {cmd[:150]}")
    return found


def _cli(checkout: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """A separate caller process, as Snakemake would start one per trial."""
    return subprocess.Popen([sys.executable, "-m", "testbed.vm", "--checkout", str(checkout), *args],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def _wait_for_line(proc: subprocess.Popen[str], want: str, timeout: float) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    seen = ""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            seen += line
            if want in line:
                return seen
        if proc.poll() is not None:
            break
    raise AssertionError(f"no {want!r} from caller within {timeout} s; got {seen!r}")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    co = tmp_path_factory.mktemp("checkout")
    (co / "results").mkdir()
    return co


@pytest.fixture(scope="module")
def lane(checkout: Path) -> Iterator[SharedVM]:
    lane = SharedVM(checkout, config=VMConfig(idle=120.0))
    lane.ensure_running()
    yield lane
    lane.stop()


def test_guest_runs_pinned_kernel(lane: SharedVM, checkout: Path, capfd: pytest.CaptureFixture[str]) -> None:
    release = pinned_kernel().release
    assert lane.exec(["uname", "-r"], checkout / "results") == 0
    out, err = capfd.readouterr()
    assert out.strip() == release
    assert f"kernel {release}" in err  # the caller is told where the job ran
    record = json.loads((checkout / "results/.vm/boots.jsonl").read_text().splitlines()[-1])
    assert record["release"] == release and record["accel"] in ("kvm", "tcg")


def test_exit_code_propagates(lane: SharedVM, checkout: Path) -> None:
    assert lane.exec(["sh", "-c", "exit 3"], checkout / "results") == 3
    assert lane.exec(["/nonexistent/binary"], checkout / "results") == 127


def test_guest_environment(lane: SharedVM, checkout: Path, capfd: pytest.CaptureFixture[str]) -> None:
    script = ('echo "$TCPREPRO_IN_VM $FOO $(id -u) $(pwd)"; command -v python; '
              "test -d /sys/kernel/tracing/events/tcp/tcp_probe && echo tracefs-ok")
    assert lane.exec(["sh", "-c", script], checkout / "results", env={"FOO": "bar"}) == 0
    lines = capfd.readouterr().out.splitlines()
    assert lines[0] == f"1 bar 0 {checkout / 'results'}"
    assert Path(lines[1]).parent == Path(sys.executable).parent  # the venv comes first on PATH
    assert lines[2] == "tracefs-ok"


def test_netem_in_guest(lane: SharedVM, checkout: Path, capfd: pytest.CaptureFixture[str]) -> None:
    script = ("modprobe sch_netem && ip netns add tvm && ip -n tvm link set lo up && "
              "ip netns exec tvm tc qdisc add dev lo root netem delay 1ms && "
              "ip netns exec tvm tc qdisc show dev lo; rc=$?; ip netns del tvm; exit $rc")
    assert lane.exec(["sh", "-c", script], checkout / "results") == 0
    assert "netem" in capfd.readouterr().out


def test_guest_writes_reach_host(lane: SharedVM, checkout: Path) -> None:
    target = checkout / "results" / "from-guest" / "hello.txt"
    assert lane.exec(["sh", "-c", f"mkdir -p {target.parent} && uname -r > {target}"], checkout) == 0
    assert target.read_text().strip() == pinned_kernel().release


def test_concurrent_jobs_overlap(lane: SharedVM, checkout: Path) -> None:
    script = "cut -d' ' -f1 /proc/uptime; sleep 3; cut -d' ' -f1 /proc/uptime"
    callers = [_cli(checkout, "exec", "--", "sh", "-c", script) for _ in range(2)]
    spans = []
    for proc in callers:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        start, end = (float(x) for x in out.split())
        spans.append((start, end))
    (s1, e1), (s2, e2) = spans
    assert s1 < e2 and s2 < e1, f"jobs ran one after the other: {spans}"


def test_cancel_terminates_guest_job(lane: SharedVM, checkout: Path) -> None:
    marker = checkout / "results" / "cleanup-ran"
    script = (f"trap 'echo yes > {marker}; exit 7' TERM; sleep 997 & "
              "echo started; wait")
    caller = _cli(checkout, "exec", "--", "sh", "-c", script)
    _wait_for_line(caller, "started", 60)
    caller.send_signal(signal.SIGTERM)
    caller.wait(timeout=30)
    assert caller.returncode == 128 + signal.SIGTERM
    assert marker.read_text().strip() == "yes"  # the job's own cleanup ran
    # nothing of the job is left in the guest (not even its background sleep)
    assert lane.exec(["sh", "-c", "! pgrep -f 'sleep 99[7]'"], checkout) == 0


def test_a_killed_trial_s_slot_waits_for_its_guest_job(lane: SharedVM, checkout: Path) -> None:
    """SIGKILL frees the runner's flock at once while its guest job measures on until the agent
    reaps it as an orphan (30 s without heartbeat): the next trial must not measure beside it."""
    from testbed.lane.vm import vm_slot
    from testbed.port_slots import try_slot

    code = ("import sys; from pathlib import Path; from testbed.lane.vm import exec_in_vm_slot; "
            f"sys.exit(exec_in_vm_slot(['sh', '-c', 'echo started; sleep 996'], Path('/'), {{}}, "
            f"checkout=Path({str(checkout)!r}), slots=1))")
    runner = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True)
    _wait_for_line(runner, "started", 60)
    runner.kill()
    runner.wait()
    killed = time.monotonic()
    free = try_slot(lane.state, "measure", 1)
    assert free is not None, "the killed runner's flock is still held"
    os.close(free[1])
    assert lane.slot_in_use(0)
    with vm_slot(1, lane.state, busy=lane.slot_in_use) as index:
        waited = time.monotonic() - killed
        assert index == 0 and not lane.slot_in_use(0)
        assert lane.exec(["sh", "-c", "! pgrep -f 'sleep 99[6]'"], checkout) == 0
    assert waited > 10, f"the slot was taken {waited:.1f} s after the kill, while its guest job measured"


def test_status_cli(lane: SharedVM, checkout: Path) -> None:
    proc = _cli(checkout, "status")
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert pinned_kernel().release in out and "accel" in out and "uptime" in out


def test_stop_if_idle_spares_running_jobs(lane: SharedVM, checkout: Path) -> None:
    """A workflow that ends stops the VM only if no other workflow's job runs there."""
    caller = _cli(checkout, "exec", "--", "sh", "-c", "echo started; sleep 4; echo done")
    _wait_for_line(caller, "started", 60)
    assert not lane.stop(if_idle=True)
    out, _ = caller.communicate(timeout=60)
    assert caller.returncode == 0 and "done" in out
    assert lane.status() is not None


def test_stop_leaves_no_process(lane: SharedVM, checkout: Path) -> None:
    pid = lane.status()["pid"]  # type: ignore[index]
    assert lane.stop()
    assert lane.status() is None
    assert group_members(pid) == []
    assert _live_processes_mentioning(str(checkout)) == []


def test_missing_kernel_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(KernelNotFoundError, match="make deps"):
        pinned_kernel(tmp_path)


def test_bogus_kernel_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "vmlinuz-bogus"
    bogus.write_bytes(os.urandom(200_000))
    co = tmp_path / "co"
    lane = SharedVM(co, kernel=KernelImage(bogus, "bogus"), accel="tcg",
                config=VMConfig(banner_timeout=8.0))
    with pytest.raises(VMBootError) as err:
        lane.exec(["true"], tmp_path)
    assert str(co / "results/.vm/console.log") in str(err.value)
    assert "last lines" in str(err.value)
    assert _live_processes_mentioning(str(bogus)) == []
    assert not (co / "results/.vm/lane.json").exists()


def test_killed_callers_share_one_boot_and_vm_goes_idle(tmp_path: Path) -> None:
    """Two cold callers boot one VM; kill -9 both; the guest jobs are reaped as orphans and
    the VM powers itself off by the idle rule."""
    co = tmp_path / "co"
    env = {"TCPREPRO_VM_IDLE": "3", "TCPREPRO_VM_ORPHAN": "4"}
    callers = [_cli(co, "exec", "--", "sh", "-c", "echo started; sleep 998", env=env) for _ in range(2)]
    for proc in callers:
        _wait_for_line(proc, "started", 240)
    assert len((co / "results/.vm/boots.jsonl").read_text().splitlines()) == 1
    pid = json.loads((co / "results/.vm/lane.json").read_text())["pid"]
    for proc in callers:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 60
    while group_members(pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert group_members(pid) == [], "the VM did not power off after its callers died"
    assert _live_processes_mentioning(str(co)) == []
    assert "host caller silent" in (co / "results/.vm/console.log").read_text()
