"""Trials on the virtual-time lane: the acceptance path measured as an unprivileged user, every
fidelity check at the lane's tolerances, and virtual time's two promises: a trial run again repeats
to the last byte, and trials running at once do not disturb one another.

Three runs: cell A alone (as `nobody`), then A again (as root, elsewhere) beside cell B, then B alone.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.integration.conftest import CHECKOUT, PAPERS, trial_cmd

pytestmark = [pytest.mark.uml]

RAW = ("tcp_probe.trace", "qdisc.csv", "voip-voip0.csv", "iperf2-bulk0-client.csv")


@pytest.fixture(scope="module")
def lane_env():
    from testbed import uml_kernel
    uml_kernel.ensure()                         # built once, before any trial's clock starts
    return dict(os.environ, TCPREPRO_PAPER_DIR=str(PAPERS), TCPREPRO_KERNEL="uml")


def readable_by_all(path: Path) -> bool:
    """Whether another user can reach `path` (every parent searchable, the file readable)."""
    for p in path.parents:
        if not p.stat().st_mode & stat.S_IXOTH:
            return False
    return bool(path.stat().st_mode & stat.S_IROTH)


@pytest.fixture(scope="module")
def runs(lane_env):
    """{name: trial dir} of the three runs; the unprivileged one writes where `nobody` may."""
    base = Path(tempfile.mkdtemp(prefix="tcprepro-uml-trials-"))
    base.chmod(0o755)
    unpriv = base / "nobody"
    unpriv.mkdir()
    shutil.chown(unpriv, "nobody", "nogroup")
    out = {"a_alone": unpriv / "umlpair" / "cubic-loss0" / "trial-1",
           "a_beside_b": base / "root" / "x" / "umlpair" / "cubic-loss0" / "trial-1",
           "b_beside_a": base / "root" / "x" / "umlpair" / "htcp-loss1" / "trial-1",
           "b_alone": base / "root" / "y" / "umlpair" / "htcp-loss1" / "trial-1"}
    results: dict[str, subprocess.CompletedProcess[str]] = {}
    if os.geteuid() == 0 and readable_by_all(CHECKOUT / "tcprepro" / "__init__.py"):
        as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        env = {**lane_env, "HOME": str(unpriv), "TCPREPRO_RUN_DIR": str(unpriv / "run")}
    else:                                       # already unprivileged, or the checkout is private
        as_nobody, env = [], lane_env
    results["a_alone"] = subprocess.run([*as_nobody, *trial_cmd("umlpair", "cubic-loss0", out["a_alone"])],
                                        env=env, capture_output=True, text=True, timeout=900)
    together = {k: subprocess.Popen(trial_cmd("umlpair", cell, out[k]), env=lane_env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
                for k, cell in (("a_beside_b", "cubic-loss0"), ("b_beside_a", "htcp-loss1"))}
    for k, proc in together.items():
        stdout, stderr = proc.communicate(timeout=900)
        results[k] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    results["b_alone"] = subprocess.run(trial_cmd("umlpair", "htcp-loss1", out["b_alone"]), env=lane_env,
                                        capture_output=True, text=True, timeout=900)
    for k, proc in results.items():
        assert proc.returncode == 0, f"{k}: {proc.stderr[-3000:]}"
    yield {k: out[k] for k in out} | {"unprivileged": bool(as_nobody) or os.geteuid() != 0}
    shutil.rmtree(base, ignore_errors=True)


def test_acceptance_trial_unprivileged_at_the_lanes_tolerances(runs):
    d = runs["a_alone"]
    assert runs["unprivileged"], "the checkout is not readable by other users: run the suite from a shared path"
    assert d.stat().st_uid != 0, "the trial was written by the unprivileged user"
    summary = json.loads((d / "summary.json").read_text())
    prov = json.loads((d / "provenance.json").read_text())
    assert summary["valid"] and summary["attempt"] == 1, summary["invalid_reasons"]
    assert prov["kernel"]["where"] == "uml" and "tcprepro-um" in prov["kernel"]["release"]
    assert prov["virtual_time"]["hz"] == 250 and prov["virtual_time"]["virtual_s"] >= 20
    assert prov["bulk_generator"] == "iperf2" and prov["variation"]["seed"] > 0
    checks = {c["name"]: c for c in prov["fidelity"]}
    assert all(c["pass"] is not False for c in checks.values()), [c for c in checks.values() if c["pass"] is False]
    assert checks["base_rtt"]["measured"] == pytest.approx(50.0, abs=0.05)
    assert checks["forward.rate_at_saturation"]["measured"] == pytest.approx(1000, rel=0.01)
    assert checks["virtual_time"]["pass"] and checks["virtual_time"]["measured"] <= 1.0
    m = summary["metrics"]
    # no packet crosses faster than the 25 ms the path adds, nor slower than a full buffer allows,
    # give or take the seeded per-packet delay jitter (testbed/variation.py)
    jitter = prov["variation"]["jitter_ms"]
    assert m["owd_min_ms"] >= 25 - jitter - 0.05 and m["owd_max_ms"] <= 25 + 480 + jitter + 0.5
    assert m["owd_median_ms"] > 300, "CUBIC keeps the 60000-byte queue mostly full"


def test_builtin_htcp_runs_with_the_cells_parameters_and_netem_loss(runs):
    """The registry's parameters, and the cell's own (scenario.module_params: RTT scaling off),
    as the guest's kernel reports them back through sysfs."""
    prov = json.loads((runs["b_alone"] / "provenance.json").read_text())
    cc = prov["congestion_controls"]["htcp"]
    assert cc["impl"] == "builtin" and cc["params"] == {"use_bandwidth_switch": "0", "use_rtt_scaling": "0",
                                                        "use_adaptive_backoff": "0"}
    loss = {c["name"]: c for c in prov["fidelity"]}["forward.loss_measured"]
    assert loss["pass"] and loss["measured"] > 0


def test_a_trial_run_again_repeats_to_the_last_byte(runs):
    """Same cell and trial number, another user, another path, another trial beside it: the same
    bytes in every raw series."""
    for name in RAW:
        assert (runs["a_alone"] / name).read_bytes() == (runs["a_beside_b"] / name).read_bytes(), name


def test_trials_running_at_once_do_not_disturb_each_other(runs):
    for name in RAW:
        assert (runs["b_alone"] / name).read_bytes() == (runs["b_beside_a"] / name).read_bytes(), name
    a = json.loads((runs["a_alone"] / "summary.json").read_text())["metrics"]
    b = json.loads((runs["b_alone"] / "summary.json").read_text())["metrics"]
    assert a != b, "two different cells gave identical metrics"


# What another machine image's user space does differently before a measurement (docs/uml.md): it
# draws more from the kernel's random stream (Python's start, /dev/urandom, each execve's AT_RANDOM
# and ASLR), reads the clock and misses files more often, and takes longer to set up. (Not
# os.urandom: getrandom() blocks until the guest's CRNG is ready, which takes minutes of virtual
# time; the trial's rekey makes it ready.)
OTHER_IMAGE_PRELUDE = """
python3 -S -c 'import time; open("/dev/urandom", "rb").read(4096); [time.monotonic() for _ in range(3000)]'
for f in 1 2 3 4 5 6 7 8 9; do cat /nonexistent/$f 2>/dev/null; ls /nonexistent-$f 2>/dev/null; done
head -c 1000 /dev/urandom > /dev/null
sleep 0.0037
"""


def test_a_trial_does_not_depend_on_what_the_guests_user_space_did_before(runs, lane_env, tmp_path):
    """The same trial with the guest's user space doing more before the measurement, as another
    machine image's would: the same bytes in every raw series. (Measured across two real images, this
    machine's and a fresh Debian 12 container's, in docs/measurements.md.)"""
    out = tmp_path / "umlpair" / "cubic-loss0" / "trial-1"
    proc = subprocess.run(trial_cmd("umlpair", "cubic-loss0", out), capture_output=True, text=True, timeout=900,
                          env={**lane_env, "TCPREPRO_UML_PRELUDE": OTHER_IMAGE_PRELUDE})
    assert proc.returncode == 0, proc.stderr[-3000:]
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["random_rekeyed"] is True
    for name in RAW:
        assert (runs["a_alone"] / name).read_bytes() == (out / name).read_bytes(), name


@pytest.mark.skipif(os.geteuid() != 0, reason="a root user's clone in root's home")
def test_a_root_users_clone_under_root_runs_the_lane_as_the_guests_user(runs, lane_env, tmp_path):
    """The checkout in a folder only root may enter (root's home, /root), run as root: the guest's
    host process runs as the unprivileged GUEST_USER, sees the clone at its fixed place, and the
    trial gives the same bytes as the one run as `nobody` from the checkout's own path. The clone is
    this checkout bind-mounted there, in a mount namespace of the test's own."""
    from testbed import uml
    home = Path(tempfile.mkdtemp(prefix="tcprepro-clone-", dir="/root"))
    try:
        home.chmod(0o700)
        clone = home / "tcprepro"
        clone.mkdir()
        out = tmp_path / "umlpair" / "cubic-loss0" / "trial-1"
        python = clone / Path(sys.executable).relative_to(CHECKOUT)
        cmd = [str(python), "-m", "tcprepro", "trial", "--paper", "umlpair", "--cell", "cubic-loss0",
               "--trial", "1", "--profile", "smoke", "--out", str(out)]
        script = 'mount --bind "$1" "$2" && cd "$2" && shift 2 && exec "$@"'
        proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                               str(CHECKOUT), str(clone), *cmd], env=lane_env, capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        prov = json.loads((out / "provenance.json").read_text())
        assert prov["kernel"]["where"] == "uml"
        for name in RAW:
            assert (runs["a_alone"] / name).read_bytes() == (out / name).read_bytes(), name
        assert {p.stat().st_uid for p in out.rglob("*")} == {0}, f"the trial is the caller's, not {uml.GUEST_USER}'s"
    finally:
        # rmdir, never rmtree: were the bind mount seen here, the clone would be this checkout
        for d in (home / "tcprepro", home):
            with contextlib.suppress(OSError):
                d.rmdir()


def test_the_workflow_runs_the_lane_one_trial_per_core(runs, lane_env, tmp_path):
    """`snakemake` on a paper whose config names the lane (no TCPREPRO_KERNEL): both cells on UML,
    a core each, and the same bytes as the trials run directly."""
    import sys

    env = {k: v for k, v in lane_env.items() if k != "TCPREPRO_KERNEL"}
    results = tmp_path / "results"
    proc = subprocess.run([str(Path(sys.executable).with_name("snakemake")), "--cores", "2", "--directory",
                           str(CHECKOUT), "--config", "papers=[umlpair]", f"results={results}", "profile=smoke",
                           f"figures={tmp_path / 'figures'}"], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert "2 on cores (simulated or virtual time), 2 at a time" in out
    for cell, direct in (("cubic-loss0", runs["a_alone"]), ("htcp-loss1", runs["b_alone"])):
        trial = results / "smoke" / "umlpair" / cell / "trial-1"
        assert json.loads((trial / "provenance.json").read_text())["kernel"]["where"] == "uml"
        for name in RAW:
            assert (trial / name).read_bytes() == (direct / name).read_bytes(), (cell, name)


def test_a_transfer_past_its_bound_is_stopped_and_the_trial_says_so(lane_env, tmp_path):
    """A fixed-size transfer still under way at its cell's time bound is an outcome of the
    algorithm, not a fault of the trial: stopped at the bound, the trial is invalid and names it."""
    out = tmp_path / "umlbound" / "past-bound" / "trial-1"
    proc = subprocess.run(trial_cmd("umlbound", "past-bound", out), env=lane_env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["unfinished_transfers"] == {"bound_s": 8, "flows": ["bulk0"]}
    assert not summary["valid"]
    reason = "bulk0: fixed-size transfer not done by the cell's bound of 8 s (stopped there)"
    assert reason in summary["invalid_reasons"]


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (the trial's guest: the UML kernel and its helpers)."""
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        for entry in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = entry.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent and int(entry.parent.name) not in found:
                found.add(int(entry.parent.name))
                todo.append(int(entry.parent.name))
    return found


def running(pid: int) -> bool:
    """Alive and not a zombie (a container's init may never reap one)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


def test_sigkill_during_set_up_leaves_no_guest_and_a_swept_partial(lane_env, tmp_path):
    """kill -9 of the runner while the guest builds its network: the guest dies by its parent-death
    signal (its namespaces, qdiscs and BPF die with its kernel) and the sweep removes the partial."""
    import signal
    import time

    from testbed.cleanup import sweep
    from tests.integration.test_trial import wait_for_set_up

    results = tmp_path / "results"
    out = results / "smoke" / "umlpair" / "cubic-loss0" / "trial-1"
    proc = subprocess.Popen(trial_cmd("umlpair", "cubic-loss0", out), env=lane_env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_for_set_up(out, timeout=120)
    guest = descendants(proc.pid)
    assert guest, "no guest process under the runner"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert "started receivers" not in (out.with_name("trial-1.partial") / "trial.log").read_text()
    deadline = time.monotonic() + 10
    while any(running(p) for p in guest) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in guest if running(p)], "guest processes outlived the runner"
    assert any("partial trial" in r for r in sweep(results=results, quiet=True, kernel_state=False))
    assert not out.exists() and not out.with_name("trial-1.partial").exists()


def test_a_corrected_check_evaluated_again_changes_only_that_checks_record(runs, lane_env, tmp_path):
    """`tcprepro recheck` on a finished trial whose record of a post-trial check differs from what
    the check's code now gives: the record is staged here as a failed 0.5-s rate check (what the
    check's earlier bar left on three Westwood+ trials). The new result replaces it, the old one is
    kept under `rechecked`, the summary is valid again, and nothing else of the trial changes; a
    second pass finds nothing to change."""
    from analysis import require_valid

    trial = tmp_path / "results" / "smoke" / "umlpair" / "htcp-loss1" / "trial-1"
    shutil.copytree(runs["b_alone"], trial)
    prov_path, summary_path = trial / "provenance.json", trial / "summary.json"
    prov, summary = json.loads(prov_path.read_text()), json.loads(summary_path.read_text())
    assert summary["valid"], summary["invalid_reasons"]
    now = next(c for c in prov["fidelity"] if c["name"] == "forward.rate_worst_0.5s")
    staged = {**now, "measured": 950.0, "tolerance": 0.048, "pass": False}
    prov["fidelity"] = [staged if c is now else c for c in prov["fidelity"]]
    reason = "fidelity forward.rate_worst_0.5s: measured 950.0 kbit/s, configured 1000 ± 0.048"
    summary.update(valid=False, invalid_reasons=[reason])
    prov_path.write_text(json.dumps(prov, indent=2))
    summary_path.write_text(json.dumps(summary, indent=2))
    raw = {p.name: p.read_bytes() for p in trial.iterdir() if p.name not in ("provenance.json", "summary.json")}

    cmd = [sys.executable, "-m", "tcprepro", "recheck", "forward.rate_worst_0.5s", "--paper", "umlpair",
           "--profile", "smoke", "--results", str(tmp_path / "results")]
    first = subprocess.run(cmd, env=lane_env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0 and "umlpair: 1 trial changed" in first.stdout, first.stdout + first.stderr
    assert "htcp-loss1/trial-1: FAIL (950.0 kbit/s, tolerance 0.048) -> pass" in first.stdout, first.stdout
    prov, summary = json.loads(prov_path.read_text()), json.loads(summary_path.read_text())
    assert next(c for c in prov["fidelity"] if c["name"] == "forward.rate_worst_0.5s") == now
    assert [(r["name"], r["before"]) for r in prov["rechecked"]] == [("forward.rate_worst_0.5s", staged)]
    assert prov["rechecked"][0]["by"].startswith("tcprepro recheck, tcprepro ")
    assert summary["valid"] and summary["invalid_reasons"] == []
    require_valid(prov, "provenance")
    require_valid(summary, "summary")
    assert {p.name: p.read_bytes() for p in trial.iterdir()
            if p.name not in ("provenance.json", "summary.json")} == raw

    again = subprocess.run(cmd, env=lane_env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "umlpair: 0 trials changed" in again.stdout, again.stdout + again.stderr
