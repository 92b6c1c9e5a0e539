"""The doctor on the real kernel: its verdicts are compared with what this test learns on its own
(plain `tc`/`ip` in its own namespace, /proc, the pinned kernel's files), and with the facts
DESIGN.md records for this project's machines (6.18 host without netem or modules; Debian 6.1 VM
kernel with both as modules)."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from configuration import CHECKOUT
from experiments import load_paper
from testbed import doctor, host_probes, kernel_config, placement, runner_checks
from testbed import lane as lanes
from testbed.kernel_features import BOOT_PARAMS, Check

pytestmark = [pytest.mark.root, pytest.mark.skipif(os.geteuid() != 0, reason="needs root")]

AVAILABLE_CC = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
# The host DESIGN.md measured: kernel 6.18 in a VM, built without loadable modules.
MEASURED_HOST = os.uname().release.startswith("6.18") and not Path("/proc/modules").exists()
PINNED_CONFIGS = sorted(Path("/boot").glob("config-6.1.0-*-amd64"))


def tc_accepts(*qdisc: str) -> bool:
    """Ask the kernel directly, in a namespace of this test's own."""
    ns = f"tdtest-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "add", "name", "x0", "type", "veth", "peer", "name", "x1"],
                       check=True)
        return subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", "x0", *qdisc],
                              capture_output=True).returncode == 0
    finally:
        subprocess.run(["ip", "netns", "delete", ns], check=True)


def netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def root_links() -> set[str]:
    out = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0].split("@")[0] for line in out.splitlines() if line.strip()}


def run_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tcprepro", "doctor", *args], cwd=CHECKOUT,
                          capture_output=True, text=True, env={**os.environ, **env}, timeout=600)


@pytest.fixture(scope="module")
def probed() -> dict[str, Check]:
    return {c.name: c for c in host_probes.probe_kernel()}


@pytest.fixture(scope="module")
def pinned_release() -> str:
    if not PINNED_CONFIGS:
        pytest.skip("no Debian 6.1 kernel installed (make deps installs linux-image-amd64)")
    return PINNED_CONFIGS[-1].name.removeprefix("config-")


@pytest.mark.parametrize(("kind", "args"), [
    ("htb", ("root", "htb")), ("tbf", ("root", "tbf", "rate", "1mbit", "burst", "10k", "latency", "20ms")),
    ("bfifo", ("root", "bfifo")), ("pfifo", ("root", "pfifo")), ("netem", ("root", "netem", "delay", "5ms")),
    ("ingress", ("ingress",)), ("prio", ("root", "prio")),
])
def test_qdisc_probe_agrees_with_tc(probed: dict[str, Check], kind: str,
                                    args: tuple[str, ...]) -> None:
    assert probed[f"qdisc:{kind}"].ok == tc_accepts(*args), probed[f"qdisc:{kind}"]


@pytest.mark.skipif(not MEASURED_HOST, reason="DESIGN.md's facts are for the 6.18 host without modules")
def test_measured_host_facts(probed: dict[str, Check]) -> None:
    assert probed["qdisc:htb"].ok and probed["netns+veth"].ok and probed["ifb"].ok and probed["bridge"].ok
    assert not probed["qdisc:netem"].ok and "unknown" in probed["qdisc:netem"].detail
    assert not host_probes.check_modules().ok
    # No tcp_htcp module here: H-TCP is this repo's BPF struct_ops, and nothing without BPF.
    assert host_probes.check_cc_host("htcp").detail.startswith("bpf:")
    assert not host_probes.check_cc_host("htcp", bpf_ok=False).ok


def test_cc_verdicts_agree_with_proc() -> None:
    listed = set(AVAILABLE_CC.read_text().split())
    assert "cubic" in listed
    cubic = host_probes.check_cc_host("cubic")
    assert cubic.ok and cubic.detail.startswith("builtin")
    htcp = host_probes.check_cc_host("htcp")
    if "htcp" not in listed and not Path("/proc/modules").exists():
        bpf_ok = host_probes.check_bpf_prereqs().ok
        assert htcp.ok == bpf_ok and (htcp.detail.startswith("bpf:") if bpf_ok else bool(htcp.fix))


def test_tracepoint_found_in_mounted_tracefs() -> None:
    assert host_probes.check_tracefs().ok
    mounts = Path("/proc/mounts").read_text().split("\n")
    assert any(m.split()[1:3] == ["/sys/kernel/tracing", "tracefs"] for m in mounts if m)
    assert host_probes.check_tracepoint().ok == Path("/sys/kernel/tracing/events/tcp/tcp_probe/format").exists()


def test_pinned_kernel_has_netem_and_htcp(pinned_release: str) -> None:
    config = (Path("/boot") / f"config-{pinned_release}").read_text()
    modules = Path("/lib/modules") / pinned_release
    assert "CONFIG_NET_SCH_NETEM=m" in config and any(modules.rglob("sch_netem.ko*"))
    assert any(modules.rglob("tcp_htcp.ko*"))
    checks = {c.name: c for c in kernel_config.pinned_checks(pinned_release)}
    assert checks["qdisc:netem"].ok and "sch_netem" in checks["qdisc:netem"].detail
    # its tcp_htcp has no switch for the adaptive backoff the registry turns off: BPF H-TCP serves
    assert checks["cc:htcp"].ok and checks["cc:htcp"].detail.startswith("bpf:"), checks["cc:htcp"]
    assert checks["cc:cubic"].ok and checks["qdisc:htb"].ok and checks["tracepoint:tcp_probe"].ok


def test_static_reading_notices_missing_module_and_option(tmp_path: Path) -> None:
    """A kernel that says =m but ships no .ko, or lacks the option, must not pass."""
    release = "9.9.0-test"
    (tmp_path / f"config-{release}").write_text(
        "CONFIG_NET_SCH_HTB=y\nCONFIG_NET_SCH_NETEM=m\nCONFIG_NET_SCH_TBF=m\n"
        "# CONFIG_NET_SCH_PRIO is not set\n")
    (tmp_path / release).mkdir()
    (tmp_path / release / "modules.dep").write_text("kernel/net/sched/sch_tbf.ko:\n")
    checks = {c.name: c for c in kernel_config.pinned_checks(release, boot=tmp_path, modules_root=tmp_path)}
    assert checks["qdisc:htb"].ok and checks["qdisc:tbf"].ok
    assert not checks["qdisc:netem"].ok and "not installed" in checks["qdisc:netem"].detail
    assert not checks["qdisc:prio"].ok and checks["qdisc:prio"].fix


def test_needs_follow_the_scenario() -> None:
    scenario = copy.deepcopy(load_paper("collateral").cells("quick")[0].scenario)
    assert {"qdisc:netem", "qdisc:htb", "qdisc:bfifo", "tracepoint:tcp_probe"} <= placement.needs(scenario)
    for direction in scenario["bottleneck"].values():
        direction.update(delay_ms=0, loss_pct=0)
    assert "qdisc:netem" not in placement.needs(scenario)
    scenario["bottleneck"]["reverse"]["loss_pct"] = 0.5
    assert "qdisc:netem" in placement.needs(scenario)
    fwd = scenario["bottleneck"]["forward"]
    fwd["limit_packets"] = fwd.pop("limit_bytes")
    assert {"qdisc:pfifo", "qdisc:bfifo"} <= placement.needs(scenario)
    scenario["flows"] = [{"kind": "bulk", "pair": 0, "cc": "westwood"}]
    assert "cc:westwood" in placement.needs(scenario) and "cc:htcp" not in placement.needs(scenario)


def test_probes_leave_nothing_behind_and_are_quick() -> None:
    before_ns, before_links = netns_names(), root_links()
    started = os.times().elapsed
    checks = host_probes.probe_kernel()
    assert os.times().elapsed - started < 5
    assert next(c for c in checks if c.name == "qdisc:htb").ok    # so a namespace and veth really existed
    assert netns_names() - before_ns == set()
    assert not {n for n in root_links() - before_links if n.startswith("tcprdoc")}


def test_cleanup_on_failure_and_stale_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[set[str]] = []

    def explode(ns: str, kind: str) -> Check:
        seen.append(netns_names())
        raise RuntimeError("probe failed midway")

    monkeypatch.setattr(host_probes, "_probe_qdisc", explode)
    with pytest.raises(RuntimeError):
        host_probes.probe_kernel()
    scratch = f"{host_probes.NETNS_PREFIX}{os.getpid()}"
    assert scratch in seen[0] and scratch not in netns_names()
    dead = subprocess.Popen(["true"])
    dead.wait()                                             # its pid names a run that died
    stale = f"{host_probes.NETNS_PREFIX}{dead.pid}"
    subprocess.run(["ip", "netns", "add", stale], check=True)
    monkeypatch.undo()
    host_probes.probe_kernel()
    assert stale not in netns_names()


def test_results_cached_per_boot(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(host_probes, "CACHE_PATH", tmp_path / "host-features.json")
    first = host_probes.cached_probe_kernel()
    key = json.loads((tmp_path / "host-features.json").read_text())["key"]
    assert key["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert key["release"] == os.uname().release

    def must_not_probe() -> list[Check]:
        raise AssertionError("re-probed despite a cache for this boot")

    monkeypatch.setattr(host_probes, "probe_kernel", must_not_probe)
    assert host_probes.cached_probe_kernel() == first
    with pytest.raises(AssertionError):
        host_probes.cached_probe_kernel(refresh=True)


def test_missing_vm_runner_degrades_to_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    import testbed
    monkeypatch.setitem(sys.modules, "testbed.vm_kernel", None)   # makes `from testbed import vm_kernel` fail...
    monkeypatch.delattr(testbed, "vm_kernel", raising=False)      # ...also after another test imported it
    runner, release = runner_checks.vm_runner_checks()
    assert release is None and runner[0].name == "vm:runner"
    assert runner[0].detail.startswith("VM runner not available:")


def test_forced_host_fails_naming_what_is_missing() -> None:
    if tc_accepts("root", "netem", "delay", "5ms") or "htcp" in AVAILABLE_CC.read_text().split():
        pytest.skip("this host has netem or htcp")
    proc = run_cli("--paper", "collateral", TCPREPRO_KERNEL="host")
    assert proc.returncode != 0
    summary = proc.stdout.strip().splitlines()[-1]
    assert summary.startswith("collateral: cannot run") and "qdisc:netem" in summary
    assert ("cc:htcp" in summary) != host_probes.check_bpf_prereqs().ok      # BPF H-TCP serves where it can


def test_without_the_uml_lane_collateral_runs_in_the_vm_but_for_its_cubic_beta_cells(pinned_release: str) -> None:
    pytest.importorskip("testbed.vm_kernel", reason="testbed/vm_kernel.py (the VM runner) is not in the checkout yet")
    if tc_accepts("root", "netem", "delay", "5ms"):
        pytest.skip("this host has netem: collateral may run on the host")
    survey = placement.take_survey(ccs={"newreno", "cubic", "htcp"})
    survey.uml_release = None                        # as where its kernel cannot be built
    p = placement.plan("collateral", "quick", survey=survey, mode="auto")
    # CUBIC reads beta when it registers: the cells beyond the paper that change it need a kernel
    # booted with it, which the shared VM is not; every other cell runs there
    stuck = [c for c in p.cells if c.where is None]
    assert stuck and all(c.cell_id.startswith("cubic-beta08") for c in stuck), stuck
    assert all(c.vm_lacks == (BOOT_PARAMS,) for c in stuck)
    assert all(c.where is lanes.VM for c in p.cells if c not in stuck), p.cells
    assert f"lacks {BOOT_PARAMS} ({len(stuck)} of {len(p.cells)} cells)" in p.summary()
    proc = run_cli("--paper", "collateral", TCPREPRO_KERNEL="vm")
    assert proc.returncode == 1, proc.stdout + proc.stderr          # some of the paper's cells cannot run
    assert "pinned VM kernel " + pinned_release in proc.stdout
    lacks = placement._union([c for c in p.cells if c not in stuck], "host_lacks")   # netem, and what else
    assert "qdisc:netem" in lacks and ("cc:htcp" in lacks) != host_probes.check_bpf_prereqs().ok
    assert f"collateral: cannot run: TCPREPRO_KERNEL=vm but the VM lacks {BOOT_PARAMS}" in proc.stdout
    assert "set it to uml" in proc.stdout


def test_a_paper_runs_on_one_kernel(pinned_release: str) -> None:
    """Without the UML lane (its kernel cannot be built), Westwood's Test 1 needs no netem and would
    fit the host alone; its Tests 2-3 need the VM, so every cell goes there: cells compared with one
    another share the kernel and its CC code."""
    pytest.importorskip("testbed.vm_kernel", reason="testbed/vm_kernel.py (the VM runner) is not in the checkout yet")
    if tc_accepts("root", "netem", "delay", "5ms"):
        pytest.skip("this host has netem: westwood may run on the host")
    cfg = load_paper("westwood")
    t1 = cfg.cells_by_id["cubic-t1"]
    survey = placement.take_survey(ccs={"cubic", "westwood"})
    survey.uml_release = None                        # as where its kernel cannot be built
    alone = placement._place(placement.needs(t1.scenario), survey, "auto")
    if alone[1]:
        pytest.skip(f"this host lacks {alone[1]} even for Test 1: no cell of westwood fits it alone")
    assert alone[0] is lanes.HOST, alone                  # on its own, Test 1 would run on the host
    p = placement.plan("westwood", "quick", survey=survey, mode="auto")
    assert {c.cell_id: c.where for c in p.cells}["cubic-t1"] is lanes.VM
    assert all(c.where is lanes.VM for c in p.cells), p.cells
    forced = placement.plan("westwood", "quick", survey=survey, mode="host")
    assert {c.cell_id: c.where for c in forced.cells}["cubic-t1"] is lanes.HOST   # a forced mode places cells alone


def test_auto_places_measured_papers_on_the_virtual_time_lane() -> None:
    """With the UML lane available (built, or buildable here), it comes first: exact timing, and no
    load on the host can spoil a trial. A cell that needs a BPF object of its own cannot go there."""
    survey = placement.take_survey(ccs={"cubic", "westwood", "htcp"})
    if not all(c.ok for c in survey.uml_runner):
        pytest.skip(f"the UML lane is not available here: {[c for c in survey.uml_runner if not c.ok]}")
    for paper in ("collateral", "westwood", "ledbat"):
        p = placement.plan(paper, "quick", survey=survey, mode="auto")
        assert {c.where for c in p.cells} == {lanes.UML}, p.summary()
        assert "virtual-time lane" in p.summary()
    bpf_only = {**load_paper("collateral").cells_by_id["htcp-rtt50-f1"].scenario}
    bpf_only["flows"] = [{**bpf_only["flows"][0], "cc_impl": "bpf"}]
    where, _, _, uml_lacks = placement._place(placement.needs(bpf_only), survey, "uml")
    assert where is None and uml_lacks == ["bpf:struct_ops"]


def test_doctor_reports_the_lane_a_paper_names(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A paper's `lane` holds in doctor's report as in the run: a paper that names the VM must not be
    reported on the virtual-time lane because auto would put it there."""
    monkeypatch.delenv("TCPREPRO_KERNEL", raising=False)
    text = (CHECKOUT / "tests" / "data" / "papers" / "vmsmoke.yaml").read_text()
    (tmp_path / "vmsmoke.yaml").write_text(text.replace("paper: vmsmoke\n", "paper: vmsmoke\nlane: vm\n", 1))
    monkeypatch.setenv("TCPREPRO_PAPER_DIR", str(tmp_path))
    assert load_paper("vmsmoke").data.get("lane") == "vm"
    doctor.main(["vmsmoke"], as_json=True)
    (report,) = json.loads(capsys.readouterr().out)["papers"]
    assert report["mode"] == "vm", report
    assert "virtual-time lane" not in report["summary"], report["summary"]
    if report["runnable"]:
        assert "in the VM" in report["summary"], report["summary"]
