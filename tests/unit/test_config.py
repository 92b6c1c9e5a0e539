"""Paper configs: the matrix expands as declared, and bad fields are rejected by name."""
from pathlib import Path

import pytest
import yaml

from configuration.load import ConfigError, expand_flows
from experiments import load_paper

COLLATERAL = Path(__file__).resolve().parents[2] / "config" / "collateral.yaml"


def write_variant(tmp_path: Path, mutate) -> Path:
    data = yaml.safe_load(COLLATERAL.read_text())
    mutate(data)
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_collateral_matrix_expands_to_every_combination():
    cfg = load_paper("collateral")
    # the paper's three algorithms and H-TCP's adaptive backoff beyond it; CUBIC's step investigation
    # (three settings at 50 ms)
    assert len(cfg.cells_by_id) == 4 * 2 * 3 + 6 * 3
    assert cfg.cells_by_id["cubic-dnqueue-rtt50-f2"].scenario["bottleneck"]["reverse"]["limit_bytes"] == 62060
    assert cfg.cells_by_id["cubic-rtt50-f2"].scenario["bottleneck"]["forward"]["limit_bytes"] == 60000
    cell = cfg.cells_by_id["htcp-rtt100-f5"]
    assert cell.scenario["bottleneck"]["forward"]["delay_ms"] == 50      # ${owd_ms} took the int
    assert cell.scenario["flows"][0]["count"] == 5
    assert [c.cell_id for c in cfg.cells("smoke")] == ["cubic-rtt50-f1"]


def test_module_params_keep_only_what_changes_a_trial(tmp_path):
    """scenario.module_params: a cell asking for the registry's own value, or for an algorithm it
    does not run, has the spec of a cell that does not mention it; a changed one reaches the spec.
    An unknown parameter is an error naming it."""
    cfg = load_paper("collateral")
    assert "module_params" not in cfg.trial_spec("htcp-rtt50-f2", 1, "full")          # 0: the registry's
    assert "module_params" not in cfg.trial_spec("cubic-rtt50-f2", 1, "full")         # runs no H-TCP
    spec = cfg.trial_spec("htcp-adaptive-rtt50-f2", 1, "full")
    assert spec["module_params"] == {"htcp": {"use_adaptive_backoff": 1}}
    assert spec["flows"][0]["cc"] == "htcp"
    data = yaml.safe_load(COLLATERAL.read_text())
    data["scenario"]["module_params"] = {"htcp": {"use_adaptive_reset": 1}}
    bad = tmp_path / "collateral.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"module_params\.htcp: htcp: no module parameter use_adaptive_reset"):
        load_paper(bad)
    data["matrix"]["algorithm"][3]["htcp_backoff"] = "on"                  # a word where an integer goes
    data["scenario"]["module_params"] = {"htcp": {"use_adaptive_backoff": "${htcp_backoff}"}}
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"'scenario\.module_params\.htcp\.use_adaptive_backoff': 'on' is not of"):
        load_paper(bad)


def test_trial_spec_gives_each_flow_an_id_and_port():
    cfg = load_paper("collateral")
    spec = cfg.trial_spec("newreno-rtt50-f2", 3, "quick")
    assert [(f["id"], f["port_offset"]) for f in spec["flows"]] == [("bulk0", 1), ("bulk1", 2), ("voip0", 60)]
    assert spec["duration_s"] == cfg.profile("quick")["duration_s"] and spec["trial"] == 3


def test_stagger_spaces_flow_starts():
    flows = expand_flows([{"kind": "bulk", "pair": 0, "cc": "cubic", "count": 3, "start_s": 1,
                           "stagger_s": 15}])
    assert [f["start_s"] for f in flows] == [1, 16, 31]


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda d: d["scenario"]["bottleneck"]["forward"].update(rate_kbit=-5), "scenario.bottleneck.forward.rate_kbit"),
    (lambda d: d["scenario"]["bottleneck"]["forward"].update(limit_packets=60), "scenario.bottleneck.forward"),
    (lambda d: d["scenario"]["flows"][0].update(ccc="cubic"), "scenario.flows[0]"),
    (lambda d: d["profiles"]["quick"].update(trials=0), "profiles.quick.trials"),
    (lambda d: d["profiles"].pop("full"), "profiles"),
    (lambda d: d["profiles"]["smoke"].update(cells=["nope"]), "profiles.smoke.cells"),
    (lambda d: d["matrix"].update(cc=[5]), "scenario.flows[0].cc"),
    (lambda d: d["matrix"].update(cc=["vegas2"]), "flows[0].cc: unknown congestion control 'vegas2'"),
    (lambda d: d["scenario"]["flows"][1].update(pair=7), "flows[1].pair"),
    (lambda d: d["scenario"]["bottleneck"]["forward"].update(delay_ms="${nope}"), "${nope}"),
    (lambda d: d.update(figure_trials=["nope"]), "field 'figure_trials': no cell 'nope'"),
])
def test_bad_field_is_named(tmp_path, mutate, field):
    with pytest.raises(ConfigError) as err:
        load_paper(write_variant(tmp_path, mutate))
    assert field in str(err.value)


def test_unknown_paper_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"known papers: .*collateral"):
        load_paper("nosuchpaper")


def test_invalid_yaml_is_reported(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("paper: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_paper(bad)


def test_count_zero_drops_an_entry_and_a_cell_may_set_its_duration(tmp_path):
    def mutate(data):
        data["scenario"]["flows"].append({"kind": "bulk", "pair": 0, "cc": "newreno", "count": 0, "bytes": 1000})
        data["scenario"]["duration_s"] = "${owd_ms}"
    cfg = load_paper(write_variant(tmp_path, mutate))
    spec = cfg.trial_spec("newreno-rtt50-f2", 1, "quick")
    assert [f["cc"] for f in spec["flows"] if f["kind"] == "bulk"] == ["newreno", "newreno"]
    assert spec["duration_s"] == 25 == cfg.duration_s("newreno-rtt50-f2", "quick")
    assert load_paper("collateral").duration_s("newreno-rtt50-f2", "quick") == cfg.profile("quick")["duration_s"]


def test_a_parameter_left_at_its_null_default_leaves_its_fields_unset(tmp_path):
    """matrix_defaults: a point that does not name a parameter takes its default; null unsets every
    scenario field naming it (a whole placeholder or inside a sysctl's words), so that cell's spec
    is the one it had before the field existed; a point that sets it gets the field."""
    before = load_paper("collateral")

    def mutate(data):
        data["matrix_defaults"].update(length=None, rcvbuf=None)
        data["matrix"]["algorithm"][0]["length"] = 40                 # newreno's cells only
        data["matrix"]["algorithm"][1]["rcvbuf"] = 65536              # htcp's cells only
        data["scenario"]["duration_s"] = "${length}"
        data["scenario"].setdefault("sysctls", {})["net.ipv4.tcp_rmem"] = "4096 ${rcvbuf} ${rcvbuf}"
    cfg = load_paper(write_variant(tmp_path, mutate))
    cubic = cfg.trial_spec("cubic-rtt50-f2", 1, "full")
    assert cubic["scenario"] == before.trial_spec("cubic-rtt50-f2", 1, "full")["scenario"]
    assert cubic["duration_s"] == before.profile("full")["duration_s"]
    assert "length" not in cubic["params"] and "rcvbuf" not in cubic["params"]
    assert cfg.trial_spec("newreno-rtt50-f2", 1, "full")["duration_s"] == 40
    htcp = cfg.trial_spec("htcp-rtt50-f2", 1, "full")
    assert htcp["scenario"]["sysctls"]["net.ipv4.tcp_rmem"] == "4096 65536 65536"
    assert "net.ipv4.tcp_rmem" not in cubic["scenario"].get("sysctls", {})
    # a parameter with no default that a point leaves out is still an error naming it
    path = write_variant(tmp_path, lambda d: d["scenario"].update(duration_s="${length}"))
    with pytest.raises(ConfigError, match=r"\$\{length\} is not a matrix parameter"):
        load_paper(path)


def test_extra_matrices_add_cells_on_part_of_an_axis(tmp_path):
    """extra_matrices: further products of the same axes, their cells after the matrix's; a cell id
    that one of them gives twice is refused like the matrix's own."""
    cfg = load_paper("wlan")
    ids = list(cfg.cells_by_id)
    assert [i for i in ids if "-ackq200-" in i] == [f"dl2-ul2-dataack-ackq200-q100-mt{m}" for m in (6,)]
    assert ids.index("dl2-ul2-dataack-ackq200-q100-mt6") > ids.index("dl4-ul4-dataack-ackq1000-q100-mt8")
    assert cfg.trial_spec("dl1-ul1-fifo-bic-q100-mt1", 1, "full")["scenario"]["tcp"] == "TcpBic"

    def twice(data):                    # every axis of the matrix, each cut to its first value
        data["extra_matrices"] = [{axis: values[:1] for axis, values in data["matrix"].items()}]
    with pytest.raises(ConfigError, match="gives 'newreno-rtt50-f1' twice"):
        load_paper(write_variant(tmp_path, twice))


def test_negative_count_is_rejected(tmp_path):
    path = write_variant(tmp_path, lambda d: d["scenario"]["flows"][0].update(count=-1))
    with pytest.raises(ConfigError, match="count"):
        load_paper(path)


# The rows of issue 30's table a paper config can hold: each is refused at load, naming the field,
# the file and, for a cell's value, the cell.
def forward(**values):
    return lambda d: d["scenario"]["bottleneck"]["forward"].update(**values)


def sysctl(name, value):
    return lambda d: d["scenario"]["sysctls"].update({name: value})


@pytest.mark.parametrize(("mutate", "field"), [
    (forward(rate_kbit=0), "forward.rate_kbit': 0 is less than or equal to the minimum of 0"),
    (forward(limit_bytes=1000), "forward.limit_bytes': 1000 is less than the minimum of 1500"),
    (forward(loss_pct=100), "forward.loss_pct': 100 is greater than or equal to the maximum of 100"),
    (lambda d: d["matrix"].update(flows=[70]),
     "cell newreno-rtt50-f70: scenario.flows: 70 bulk flows, but a trial's port block has room for 59"),
    (lambda d: d["matrix"].update(cc=["cubic;echo INJECTED"]), "field 'matrix.cc[0]'"),
    (lambda d: d.update(cell_id="${cc};echo INJECTED-${rtt_ms}-${flows}"), "field 'cell_id'"),
    (sysctl("net.ipv4.tcp_ecn", "1; touch /tmp/pwned"), "field 'scenario.sysctls.net.ipv4.tcp_ecn'"),
    (sysctl("net/../../etc", 1), "field 'scenario.sysctls'"),
    # global, not per network namespace: the host lane's machine would keep them
    (sysctl("kernel.panic_on_oops", 1), "field 'scenario.sysctls'"),
    (sysctl("vm.overcommit_memory", 2), "field 'scenario.sysctls'"),
    (sysctl("net.core.default_qdisc", "fq"), "field 'scenario.sysctls'"),
    (sysctl("net.ipv4.tcp_mem", "1 2 3"), "field 'scenario.sysctls'"),
    (sysctl("net.ipv4.tcp_sack", 2 ** 40), "field 'scenario.sysctls.net.ipv4.tcp_sack'"),
])
def test_a_value_the_emulation_cannot_take_is_refused_at_load(tmp_path, mutate, field):
    path = write_variant(tmp_path, mutate)
    with pytest.raises(ConfigError) as err:
        load_paper(path)
    assert str(err.value).startswith(str(path)) and field in str(err.value)
    assert "\n" not in str(err.value)


def test_a_trial_spec_is_the_callers_own_copy() -> None:
    cfg = load_paper("collateral")
    spec = cfg.trial_spec("cubic-rtt50-f1", 1, "full")
    spec["scenario"]["bottleneck"]["forward"]["limit_bytes"] = 1
    spec["params"]["cc"] = "changed"
    again = cfg.trial_spec("cubic-rtt50-f1", 2, "full")
    assert again["scenario"]["bottleneck"]["forward"]["limit_bytes"] == 60000 and again["params"]["cc"] != "changed"


def test_a_profile_may_leave_out_duration_only_where_every_cell_sets_its_own(tmp_path):
    """A profile's duration_s is the bound of the cells that set none of their own: a profile may
    omit it when all its cells set one (ledbat's), and is refused when one of them does not."""
    def bounded(data):
        data["scenario"]["duration_s"] = "${owd_ms}"
        del data["profiles"]["quick"]["duration_s"]
    cfg = load_paper(write_variant(tmp_path, bounded))
    spec = cfg.trial_spec("newreno-rtt50-f2", 1, "quick")
    assert spec["duration_s"] == 25 == cfg.duration_s("newreno-rtt50-f2", "quick")

    def unbounded(data):
        del data["profiles"]["quick"]["duration_s"]
    with pytest.raises(ConfigError, match=r"profiles\.quick\.duration_s.*sets no scenario\.duration_s"):
        load_paper(write_variant(tmp_path, unbounded))
    assert all("duration_s" not in load_paper("ledbat").profile(p) for p in ("full", "quick", "smoke"))
