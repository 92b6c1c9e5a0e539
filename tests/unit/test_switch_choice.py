"""The switch as an open choice (topologies/switches.py): what a cell asks for reaches the topology,
placement and the kernel checks; the network itself is tested on the UML lane
(tests/integration/test_uml_switch.py)."""
from __future__ import annotations

import pytest

from configuration.choices import alternatives
from experiments import load_paper
from testbed import placement, uml_kernel
from testbed.kernel_config import uml_checks
from topologies.dumbbell import Bridge, Dumbbell, OvsBridge


@pytest.mark.parametrize(("paper", "touched"), [("collateral", 18), ("westwood", 26), ("ledbat", 150)])
def test_every_measured_paper_can_run_its_main_cells_over_open_vswitch(paper, touched):
    """Collateral Damage's 18 and Westwood+'s 26 main cells (not the investigations' sweeps of other
    choices, as its other alternatives), LEDBAT's whole matrix; each twin differs only in its switch."""
    cfg = load_paper(paper)
    alts, twins = alternatives(cfg)
    (ovs,) = [a for a in alts if a.key == "switch.ovs"]
    assert len(ovs.twins) == touched and set(ovs.twins) <= set(cfg.matrix_cells)
    for ref, twin in ovs.twins.items():
        a, b = cfg.any_cell(ref).scenario, twins[twin].scenario
        assert b["switch"] == "ovs" and "switch" not in a
        assert {k: v for k, v in b.items() if k != "switch"} == a


def test_an_open_vswitch_cell_needs_the_datapath_and_the_daemons_and_the_uml_kernel_has_them(monkeypatch):
    cfg = load_paper("collateral")
    _, twins = alternatives(cfg)
    need = placement.needs(next(t for name, t in twins.items() if name.endswith("+switch.ovs")).scenario)
    assert {"switch:ovs", "tool:ovs-vswitchd", "tool:ovsdb-server", "tool:ovs-vsctl"} <= need
    monkeypatch.setattr(uml_kernel, "cached", lambda: None)     # read from config.fragment
    checks = {c.name: c for c in uml_checks()[0]}
    assert checks["switch:ovs"].ok, checks["switch:ovs"]


def test_the_topology_puts_the_asked_for_switch_on_both_sides():
    for switch, cls in (("linux-bridge", Bridge), ("ovs", OvsBridge)):
        topo = Dumbbell(pairs=2, switch=switch)
        assert topo.nodeInfo("bl")["cls"] is cls and topo.nodeInfo("br")["cls"] is cls
    with pytest.raises(ValueError, match=r"unknown switch 'p4'.*linux-bridge, ovs"):
        Dumbbell(pairs=1, switch="p4")


def test_the_running_kernels_datapath_is_probed_and_its_absence_names_the_fix():
    from testbed.host_probes import probe_ovs_datapath
    check = probe_ovs_datapath()
    assert check.name == "switch:ovs"
    if not check.ok:                    # this machine's kernel: no datapath, no loadable modules
        assert "ovs_datapath" in check.detail and "virtual-time lane" in check.fix
