"""The congestion-control registry: schema, BPF parameter sets and their kernel names, and how a
paper's flows name an algorithm, an implementation and parameter overrides."""
from pathlib import Path

import pytest
import yaml

from cc import bpf_build, registry
from configuration.load import ConfigError, cc_key, expand_flows
from experiments import load_paper
from testbed import lane as lanes
from testbed import placement
from testbed.kernel_features import BOOT_PARAMS, Check
from tests.unit.test_config import write_variant

REGISTRY = Path(registry.REGISTRY_PATH)


def test_registry_is_valid_and_every_bpf_source_exists():
    reg = registry.registry()
    for name, e in reg.items():
        if "bpf" in e:
            assert (bpf_build.SOURCES / e["bpf"]["source"]).exists(), name
            assert len(e["bpf"]["kernel_name"]) <= 15


def test_registry_error_names_the_field(tmp_path):
    data = yaml.safe_load(REGISTRY.read_text())
    data["ledbat"]["bpf"]["params"]["target_ms"] = 0.025
    bad = tmp_path / "cc.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(registry.CcUnavailable, match=r"ledbat/bpf/params/target_ms"):
        registry.registry(bad)


def test_default_parameters_keep_the_registered_name():
    name, defines = registry.bpf_params("ledbat-mdvar")
    assert name == "bpf_ledbat_mdv"
    assert {k: defines[k] for k in ("DECREASE", "MDVAR_SUB_PKTS", "CURRENT_FILTER", "TARGET_MS")} == {
        "DECREASE": 3, "MDVAR_SUB_PKTS": 3, "CURRENT_FILTER": 1, "TARGET_MS": 25}


def test_an_override_gets_its_own_short_stable_name():
    name, defines = registry.bpf_params("ledbat", {"target_ms": 100})
    again, _ = registry.bpf_params("ledbat", {"target_ms": 100})
    other, _ = registry.bpf_params("ledbat", {"target_ms": 50})
    assert name == again != other and name.startswith("bpf_le_") and len(name) <= 15
    assert defines["TARGET_MS"] == 100


@pytest.mark.parametrize("name,params,error", [
    ("ledbat", {"beta": 1}, "unknown parameter"),
    ("ledbat-md-nf2", {"beta_permille": 0.6}, "must be an integer"),
    ("cubic", {"x": 1}, "no BPF implementation"),
])
def test_bad_overrides_are_named(name, params, error):
    with pytest.raises(registry.CcUnavailable, match=error):
        registry.bpf_params(name, params)


def test_a_bad_override_in_a_paper_is_a_config_error(tmp_path):
    def mutate(d):
        d["scenario"]["flows"][0].update({"cc": "htcp", "cc_params": {"rtt_scaling": 0, "nope": 3}})
    with pytest.raises(ConfigError, match=r"flows\[0\]\.cc_params: .*unknown parameter\(s\) nope"):
        load_paper(write_variant(tmp_path, mutate))


def test_an_unknown_implementation_is_rejected_by_the_schema(tmp_path):
    def mutate(d):
        d["scenario"]["flows"][0]["cc_impl"] = "kernel"
    with pytest.raises(ConfigError, match="cc_impl"):
        load_paper(write_variant(tmp_path, mutate))


def test_flows_with_the_same_algorithm_share_a_key_and_overrides_do_not():
    flows = expand_flows([
        {"kind": "bulk", "pair": 0, "cc": "htcp", "count": 2},
        {"kind": "bulk", "pair": 1, "cc": "htcp", "cc_impl": "bpf", "cc_params": {"rtt_scaling": 0}},
    ])
    assert [f["cc_key"] for f in flows] == ["htcp", "htcp", "htcp@bpf[rtt_scaling=0]"]
    assert cc_key({"cc": "ledbat"}) == "ledbat"


def test_without_btf_the_build_names_the_kernel_option(monkeypatch, tmp_path):
    monkeypatch.setattr(bpf_build, "KERNEL_BTF", tmp_path / "no-btf")
    with pytest.raises(bpf_build.BuildError, match="CONFIG_DEBUG_INFO_BTF"):
        bpf_build.build("probe.bpf.c", "trp_probe")


def test_names_the_kernel_cannot_take_are_refused():
    with pytest.raises(bpf_build.BuildError, match="15"):
        bpf_build.build("probe.bpf.c", "a_name_far_too_long")


def test_static_options_read_the_pinned_kernel_config(tmp_path):
    """The Debian VM kernel: H-TCP and Westwood+ as modules, LEDBAT as BPF (from its config)."""
    release = next((p.name.removeprefix("config-") for p in Path("/boot").glob("config-*")), None)
    if release is None:
        pytest.skip("no installed kernel config in /boot")
    assert "bpf" in registry.options("ledbat", release)
    assert "bpf" not in registry.options("newreno", release)


def test_target_ms_marks_the_delay_based_algorithms() -> None:
    """The LEDBAT variants carry a queueing-delay target; loss-based algorithms none."""
    from cc.registry import target_ms

    assert target_ms("ledbat") == 25.0 and target_ms("ledbat-mdvar") == 25.0
    assert target_ms("cubic") is None and target_ms("westwood") is None


def test_a_run_may_override_a_kernel_implementations_parameters() -> None:
    """TCPREPRO_MODULE_PARAMS (testbed/run.py) reaches the registry entry; a name the registry does
    not list for that algorithm is refused, and so is a malformed setting."""
    import pytest

    from cc.registry import CcUnavailable, entry
    from testbed.run import parse_module_params

    over = parse_module_params("htcp.use_adaptive_backoff=1")
    assert entry("htcp", over["htcp"])["module_params"]["use_adaptive_backoff"] == 1
    assert entry("htcp")["module_params"]["use_adaptive_backoff"] == 0
    with pytest.raises(CcUnavailable, match="no module parameter beta"):
        entry("htcp", {"beta": 1})
    with pytest.raises(ValueError, match=r"<congestion control>\.<parameter>=<integer>"):
        parse_module_params("htcp.use_adaptive_backoff=on")


def test_a_cells_module_parameters_go_on_a_guests_command_line() -> None:
    """The UML lane boots each guest with its cell's parameters of built-in algorithms (CUBIC reads
    beta when it registers, before any sysfs write); a cell with the registry's values has none."""
    import pytest

    from cc.registry import CcUnavailable, boot_params

    cfg = load_paper("collateral")
    spec = cfg.trial_spec("cubic-beta08-rtt50-f1", 1, "full")
    assert boot_params(spec["module_params"]) == ["tcp_cubic.beta=819"]
    assert "module_params" not in cfg.trial_spec("cubic-rtt50-f1", 1, "full")
    assert boot_params({"htcp": {"use_adaptive_backoff": 1}, "cubic": {"fast_convergence": 0}}) == [
        "tcp_cubic.fast_convergence=0", "tcp_htcp.use_adaptive_backoff=1"]
    with pytest.raises(CcUnavailable, match="no module parameter use_rtt_scaling"):
        boot_params({"cubic": {"use_rtt_scaling": 1}})


def test_the_vms_bpf_objects_are_chosen_as_provide_would_choose_them() -> None:
    """bpf_object_for (what the host builds for a VM trial, testbed/run.py): none where the pinned
    kernel has the algorithm built in or as a usable module, the registry's object otherwise, and an
    override's own name with its parameters."""
    from testbed.vm_errors import KernelNotFoundError
    from testbed.vm_kernel import pinned_kernel
    try:
        release = pinned_kernel().release
    except KernelNotFoundError as exc:
        pytest.skip(str(exc))
    assert registry.bpf_object_for("cubic", release) is None
    assert registry.bpf_object_for("westwood", release) is None                   # the module serves it
    assert registry.bpf_object_for("westwood", release, impl="bpf")[:2] == ("westwood.bpf.c", "bpf_westwood")
    assert registry.bpf_object_for("htcp", release)[:2] == ("htcp.bpf.c", "bpf_htcp")     # module lacks the switch
    source, name, defines = registry.bpf_object_for("ledbat", release, params={"target_ms": 50})
    assert source == "ledbat.bpf.c" and name != "bpf_ledbat" and defines["TARGET_MS"] == 50


def test_a_parameter_read_at_registration_needs_a_kernel_booted_with_it() -> None:
    """CUBIC reads beta when it registers: a cell that changes it needs a kernel booted with the
    value, which only the UML lane gives; fast convergence, read at each loss, needs nothing, and the
    placement of collateral's beta-0.8 cell is the UML lane or, under another lane, a loud refusal."""
    for name, e in registry.registry().items():
        assert set(e.get("read_at_register") or []) <= set(e.get("module_params") or {}), name
    assert registry.read_at_register({"cubic": {"beta": 819, "fast_convergence": 0}}) == ["tcp_cubic.beta"]
    assert registry.read_at_register({"cubic": {"fast_convergence": 0}}) == []
    cfg = load_paper("collateral")
    need = placement.needs(cfg.cells_by_id["cubic-beta08-rtt50-f1"].scenario)
    assert BOOT_PARAMS in need and BOOT_PARAMS not in placement.needs(cfg.cells_by_id["cubic-nofc-rtt50-f1"].scenario)
    ok = {n: Check(n, True, "") for n in need - {BOOT_PARAMS}}
    survey = placement.Survey(host={**ok, BOOT_PARAMS: Check(BOOT_PARAMS, False, "", "the UML lane")},
                              vm={**ok, BOOT_PARAMS: Check(BOOT_PARAMS, False, "", "the UML lane")}, runner=[],
                              host_release="6.1", vm_release="6.1-pinned",
                              uml={**ok, BOOT_PARAMS: Check(BOOT_PARAMS, True, "")}, uml_release="6.6-um")
    assert placement._place(need, survey, "auto")[0] is lanes.UML
    where, host_lacks, vm_lacks, _ = placement._place(need, survey, "host")
    assert where is None and host_lacks == [BOOT_PARAMS] and vm_lacks == [BOOT_PARAMS]
