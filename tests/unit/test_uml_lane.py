"""The virtual-time lane's parts that need no guest: the kernel's definition and cache key, the
guest's command line and job, the trials' seeded variation, and the virtual-time fidelity check."""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
import yaml

from experiments import load_paper
from testbed import fidelity, uml, uml_kernel, variation


def test_the_command_line_differs_only_by_the_seed() -> None:
    a, b = uml.command_line(1, "1G"), uml.command_line(2, "1G")
    assert [x for x in a if x not in b] == ["tcprepro.seed=1"]
    assert "time-travel=inf-cpu" in a and "ro" in a
    assert not any("/" in x and "=" in x and not x.startswith(("init=", "rootflags=")) for x in a)
    assert "init=/proc/self/cwd/.uml/init" in a      # no host path: the kernel mixes its command line
    assert uml.command_line(1, "1G", ["tcp_cubic.beta=819"]) == [*a, "tcp_cubic.beta=819"]


def test_the_job_gets_exactly_its_environment_and_quoted_arguments() -> None:
    script = uml.job_script(["printf", "%s\n", "a b", "$HOME;x"], Path("/some dir"), {"K": "v w"})
    assert script.splitlines()[0] == "cd '/some dir' || exit 124"
    assert "exec env -i" in script and "'K=v w'" in script and "PATH=" in script
    assert "'a b' '$HOME;x'" in script


def test_every_builtin_variant_comes_from_the_registry_with_its_parameters() -> None:
    reg = yaml.safe_load(uml_kernel.REGISTRY.read_text())
    variants = uml_kernel.builtin_variants()
    wanted = {e["kernel_name"]: e["bpf"]["params"] for e in reg.values() if e.get("kernel_wrapper")}
    assert set(variants) == set(wanted) == {"ledbat", "ledbat_min1", "ledbat_md2", "ledbat_md1", "ledbat_mdv"}
    assert variants["ledbat_mdv"]["DECREASE"] == 3 and variants["ledbat_md2"]["CURRENT_FILTER"] == 2
    files = uml_kernel.generated_files()
    assert '#define CC_NAME "ledbat_md2"' in files["v_ledbat_md2.c"]
    assert "#define BETA_PERMILLE 600" in files["v_ledbat_md2.c"]
    assert "obj-y += v_ledbat_mdv.o" in files["Makefile"] and "ledbat.h" in files


def test_the_cache_key_covers_the_fragment_the_patches_and_the_algorithm(tmp_path, monkeypatch) -> None:
    root = tmp_path / "kernel" / "uml"
    shutil.copytree(uml_kernel.DEFINITION, root)
    monkeypatch.setattr(uml_kernel, "DEFINITION", root)
    base = uml_kernel.key()
    (root / "config.fragment").write_text((root / "config.fragment").read_text() + "CONFIG_NET_SCH_SFQ=y\n")
    changed_fragment = uml_kernel.key()
    patch = sorted((root / "patches").glob("*.patch"))[0]
    patch.write_text(patch.read_text() + "\n")
    changed_patch = uml_kernel.key()
    assert len({base, changed_fragment, changed_patch}) == 3


def test_a_fragment_option_the_build_did_not_honour_is_named() -> None:
    options = uml_kernel.fragment_options()
    assert options["CONFIG_UML_TIME_TRAVEL_SUPPORT"] == "y" and options["CONFIG_SMP"] == "n"
    final = "\n".join(f"{k}={v}" for k, v in options.items() if v != "n")
    assert uml_kernel.config_mismatches(final) == []
    wrong = final.replace("CONFIG_HZ=250", "CONFIG_HZ=100") + "\nCONFIG_SMP=y\n"
    assert sorted(uml_kernel.config_mismatches(wrong)) == ["CONFIG_HZ=250 (got 100)", "CONFIG_SMP=n (got y)"]


def test_variation_is_seeded_per_trial_and_recorded() -> None:
    cfg = load_paper("collateral")
    spec = cfg.trial_spec("cubic-rtt50-f5", 3, "full")
    a, again = variation.apply(spec), variation.apply(spec)
    other = variation.apply(cfg.trial_spec("cubic-rtt50-f5", 4, "full"))
    assert a == again and a["variation"]["seed"] != other["variation"]["seed"]
    assert a["variation"]["seed"] == variation.seed_for("collateral", "cubic-rtt50-f5", 3)
    offsets = a["variation"]["start_offsets_ms"]
    for f in a["flows"]:
        span = 50.0 if f["kind"] == "bulk" else f["interval_ms"]
        assert 0 <= offsets[f["id"]] < span
        assert f["start_s"] == pytest.approx(f["start_s_configured"] + offsets[f["id"]] / 1000, abs=1e-6)
    assert len(set(offsets.values())) == len(offsets), "every flow gets its own offset"
    assert spec["flows"][0]["start_s"] == 0.0, "the configured spec is left alone"


def test_the_offsets_keep_the_configured_order_of_the_flows_starts() -> None:
    """LEDBAT's Figure 6 read as the words say, TCP 20 ms after LEDBAT on a 40-ms base RTT: a whole
    RTT of offset would start TCP first in some trials. Flows configured to start together keep it."""
    cfg = load_paper("ledbat")
    twin = next(a for a in cfg.alternatives if a.key == "fig6_start.ms20").twins["ledbat-tcp-20mbit-100mb"]
    for k in range(1, 21):
        flows = {f["id"]: f for f in variation.apply(cfg.trial_spec(twin, k, "full"))["flows"]}
        assert flows["bulk0"]["start_s"] < 0.02 <= flows["bulk1"]["start_s"] < 0.06
    spec = cfg.trial_spec("ledbat-rtt40-n2-100mb", 1, "full")             # starts 15 s apart: whole RTTs
    rng = random.Random(variation.seed_for("ledbat", "ledbat-rtt40-n2-100mb", 1))
    assert list(variation.apply(spec)["variation"]["start_offsets_ms"].values()) == [
        round(rng.uniform(0.0, 40.0), 3) for _ in spec["flows"]]


def test_tolerances_per_lane() -> None:
    real, virtual = fidelity.tolerances("vm"), fidelity.tolerances("uml")
    assert fidelity.tolerances("host") == real and real.rtt_ms == 0.5 and virtual.rtt_ms == 0.05
    assert real.window_rate_tolerance(1000) == 0.05
    # virtual time: two packets per 0.5-s window, the byte counter's resolution
    assert virtual.window_rate_tolerance(1000) == pytest.approx(2 * 1500 * 8 / 500_000)
    assert virtual.window_rate_tolerance(10_000) == pytest.approx(0.0048)
    assert fidelity.base_rtt_result(50.04, 50.0, virtual)["pass"]
    assert not fidelity.base_rtt_result(50.06, 50.0, virtual)["pass"]
    assert fidelity.base_rtt_result(50.4, 50.0, real)["pass"]


def _trial_dir(tmp_path: Path, late_ms: float, ping_gap_ms: float, sampler_late: int) -> tuple[Path, dict, dict]:
    d = tmp_path / "trial"
    (d / "pcap").mkdir(parents=True)
    (d / "voip-voip0.json").write_text(json.dumps({"max_late_ms": late_ms, "late_sends": int(late_ms > 1)}))
    (d / "qdisc_sampler.log").write_text(f"qdisc_sampler: 3000 samples, mean interval 10.000 ms (target 10.000), "
                                         f"{sampler_late} late (> 5.0 ms), 0 slots skipped; SCHED_FIFO 10\n")
    spec = {"flows": [{"id": "voip0", "kind": "voip", "interval_ms": 20, "start_s": 0.0}]}
    prov = {"calibration": {"rounds": [{"ping_interval_ms": 10.0, "ping_min_gap_ms": ping_gap_ms}]}}
    return d, spec, prov


def test_virtual_time_check_passes_a_trial_on_plan(tmp_path) -> None:
    d, spec, prov = _trial_dir(tmp_path, late_ms=0.001, ping_gap_ms=12.9, sampler_late=0)
    c = fidelity.virtual_time_check(d, spec, prov)
    assert c["pass"] and c["measured"] == pytest.approx(0.001)


@pytest.mark.parametrize(("late_ms", "gap_ms", "sampler_late", "worst"), [
    (0.0, 0.2, 0, "calibration ping"),        # pings sent in a burst (ping within the first second)
    (4.0, 12.9, 0, "voip0 send grid"),       # a VoIP packet 4 ms off its grid
    (0.0, 12.9, 2, "qdisc sampler grid"),    # two samples more than half an interval late
])
def test_virtual_time_check_names_what_strayed(tmp_path, late_ms, gap_ms, sampler_late, worst) -> None:
    d, spec, prov = _trial_dir(tmp_path, late_ms, gap_ms, sampler_late)
    c = fidelity.virtual_time_check(d, spec, prov)
    assert c["pass"] is False and f"worst: {worst}" in c["note"]


@pytest.mark.parametrize("paper", ["collateral", "westwood", "ledbat"])
def test_before_the_build_the_fragment_promises_every_kernel_feature_a_measured_paper_needs(paper, monkeypatch):
    """A fresh machine plans from kernel/uml/config.fragment (the kernel is built by the workflow's
    first rule): options the fragment's tracers select must count, or every paper would fall back
    to the VM lane before the kernel exists."""
    from testbed import placement
    from testbed.kernel_config import uml_checks
    monkeypatch.setattr(uml_kernel, "cached", lambda: None)
    checks, release = uml_checks(ccs=placement.paper_ccs(load_paper(paper).cells_by_id.values()))
    need = {n for n in placement.paper_needs(paper) if not n.startswith("tool:")}
    missing = [c for c in checks if c.name in need and not c.ok]
    assert "not built yet" in release and not missing, missing


def test_a_checkout_the_guests_user_cannot_read_is_named_with_the_fix(tmp_path) -> None:
    """Run as root, the guest runs as the unprivileged GUEST_USER: a checkout closed to others
    (a clone made with umask 077) would fail inside the guest with no word of why. Where the
    checkout lies does not matter (pytest's tmp_path is under /tmp, which the guest covers)."""
    import os

    from testbed import uml
    from testbed.runner_checks import check_uml_checkout

    for d in ("testbed", ".venv"):
        (tmp_path / d).mkdir()
    (tmp_path / "testbed" / "trial.py").write_text("")
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("")
    for path in (tmp_path, tmp_path / "testbed", tmp_path / ".venv"):
        path.chmod(0o755)
    open_check = check_uml_checkout(tmp_path)
    if os.geteuid() != 0:
        assert open_check.ok and str(uml.GUEST_CHECKOUT) in open_check.detail
        return
    assert open_check.ok, open_check                  # make deps created the guest's user
    (tmp_path / ".venv").chmod(0o700)
    closed = check_uml_checkout(tmp_path)
    assert not closed.ok and ".venv" in closed.detail and uml.GUEST_USER in closed.detail
    assert "o+rX" in closed.fix


def test_the_guests_interrupt_counts_are_read_per_line(tmp_path) -> None:
    """The guest's /proc/interrupts as init saves it (a UML guest's real format), one count per
    interrupt; absent (a guest that died first) gives none, not an error."""
    saved = tmp_path / "interrupts"
    saved.write_text("           CPU0       \n"
                     "  0:      24240  SIGALRM    hr timer\n"
                     "  5:          0     SIGIO    mconsole\n"
                     " 12:          3     SIGIO    console\n")
    assert uml.read_interrupts(saved) == {"0 SIGALRM hr timer": 24240, "5 SIGIO mconsole": 0, "12 SIGIO console": 3}
    assert uml.read_interrupts(tmp_path / "missing") == {}


def test_real_time_tests_wait_while_another_process_builds_the_kernel(tmp_path, monkeypatch) -> None:
    """The build's lock held by another process (as scripts/uml-kernel-early's build holds it):
    wait_for_build returns only once it is released; with no build running it returns at once."""
    import io
    import subprocess
    import sys

    monkeypatch.setenv("TCPREPRO_UML_BUILD", str(tmp_path))
    assert uml_kernel.wait_for_build() == 0.0                       # no lock file: no build ever ran
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT);"
         " fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(1.5)", str(tmp_path / ".lock")],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout and holder.stdout.readline().strip() == "held"
    log = io.StringIO()
    waited = uml_kernel.wait_for_build(log)
    assert holder.wait(5) == 0
    assert waited > 0.5 and "waiting for the kernel build" in log.getvalue()
    assert uml_kernel.wait_for_build() == 0.0                       # released: no wait
