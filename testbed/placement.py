"""Which lane (testbed/lane/: uml, host or vm; simulated for a model) runs each cell of a paper, or
what keeps it from every lane.

A cell's scenario names the features it needs (`needs`); a Survey holds every lane's verdicts on
them (testbed/host_probes.py, testbed/kernel_config.py, testbed/runner_checks.py); `plan` places a
paper's cells on the first lane that has everything, all on one kernel where it can, since they are
compared with one another. `_place` is the one decision: the workflow plans with it, and a trial
(`tcprepro trial`, whose command line the workflow cannot extend without rerunning every finished
trial) takes the lane the workflow placed its cell on (TCPREPRO_PLACED, `for_jobs`), checked against
the survey, or places its cell itself when run by hand (`cell_lane`). The spec records the lane
(testbed/run.py finish_spec), and the measuring process refuses a spec whose lane is not its own.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cc import registry as cc_registry
from configuration import environment
from configuration.load import is_simulated
from experiments import load_paper
from testbed import lane as lanes
from testbed.host_probes import host_checks
from testbed.kernel_config import pinned_checks, uml_checks
from testbed.kernel_features import BOOT_PARAMS, Check, by_name
from testbed.lane import Lane
from testbed.lane.base import absent as _absent
from testbed.runner_checks import uml_runner_checks, vm_runner_checks

# TCPREPRO_KERNEL or a paper's `lane:`: `auto`, or the name of the measured lane to force.
KERNEL_MODES = ("auto", lanes.HOST.name, lanes.VM.name, lanes.UML.name)
SIMULATION_NEEDS = frozenset({"tool:ns3"})     # a simulated paper's cells: the simulator's toolchain only


@dataclass
class Survey:
    """Each lane's checks by feature name, and whether the VM and UML runners can boot their kernels."""

    host: dict[str, Check]
    vm: dict[str, Check]
    runner: list[Check]
    host_release: str
    vm_release: str | None
    uml: dict[str, Check] = field(default_factory=dict)
    uml_runner: list[Check] = field(default_factory=list)
    uml_release: str | None = None

    def lacks(self, lane: Lane, need: Iterable[str]) -> list[str]:
        """What `lane` lacks of `need` (its runner's failed checks included)."""
        return lane.lacks(self, need)


def take_survey(refresh: bool = False, ccs: Iterable[str] = ()) -> Survey:
    host = by_name(host_checks(refresh, ccs))
    runner, release = vm_runner_checks()
    vm = by_name(pinned_checks(release, host, ccs)) if release else {}
    uml, uml_release = uml_checks(host, ccs)
    return Survey(host, vm, runner, cc_registry.running_release(), release, by_name(uml), uml_runner_checks(),
                  uml_release)


def needs(scenario: dict[str, Any]) -> set[str]:
    """Feature names a cell's scenario needs (netem only if some delay or loss is non-zero). A
    simulated scenario needs only its simulator's toolchain, and never a kernel feature."""
    if is_simulated(scenario):
        return set(SIMULATION_NEEDS)
    need = {"root", "sysctl:writable", "netns+veth", "qdisc:htb", "tracefs", "tracepoint:tcp_probe", "tool:mininet",
            "tool:ip", "tool:tc", "tool:ping", "tool:ethtool"}
    for direction in scenario["bottleneck"].values():
        if float(direction.get("delay_ms") or 0) > 0 or float(direction.get("loss_pct") or 0) > 0:
            need.add("qdisc:netem")
        need.add("qdisc:bfifo" if "limit_bytes" in direction else "qdisc:pfifo")
    for flow in scenario["flows"]:
        if flow["kind"] == "bulk":
            need |= {f"cc:{flow['cc']}", "tool:iperf", "tool:iperf3"}     # iperf2 by default, iperf3 on request
    if scenario.get("keep_pcap"):
        need |= {"tool:tcpdump", "tool:tcptrace"}
    if scenario.get("switch") == "ovs":     # topologies/switches.py
        need |= {"switch:ovs", "tool:ovs-vswitchd", "tool:ovs-vsctl", "tool:ovsdb-server", "tool:ovsdb-tool",
                 "tool:ovs-appctl"}
    if any(f["kind"] == "bulk" and (f.get("cc_impl") == "bpf" or f.get("cc_params")) for f in scenario["flows"]):
        need.add("bpf:struct_ops")          # per-flow parameters and forced BPF exist only as BPF objects
    if cc_registry.read_at_register(scenario.get("module_params") or {}):
        need.add(BOOT_PARAMS)               # a sysfs write after boot would leave the registered value behind
    return need


@dataclass(frozen=True)
class CellPlan:
    cell_id: str
    where: Lane | None             # the lane it runs on, or None: runnable on none
    host_lacks: tuple[str, ...]
    vm_lacks: tuple[str, ...]
    uml_lacks: tuple[str, ...] = ()


@dataclass
class Plan:
    paper: str
    profile: str
    mode: str                      # TCPREPRO_KERNEL (or the paper's `lane`): auto, host, vm or uml
    cells: list[CellPlan]
    fixes: dict[str, str] = field(default_factory=dict)   # missing feature -> fix

    @property
    def runnable(self) -> bool:
        return all(c.where for c in self.cells)

    def summary(self) -> str:
        """One line: where the paper runs, or why it cannot."""
        return f"{self.paper}: {_summary_body(self)}"


def _union(cells: Iterable[CellPlan], attr: str) -> str:
    return ", ".join(sorted({n for c in cells for n in getattr(c, attr)}))


def _summary_body(plan: Plan) -> str:
    stuck = [c for c in plan.cells if not c.where]
    if stuck:
        return _cannot_run(plan, stuck)
    by_lane = {lane: [c for c in plan.cells if c.where is lane] for lane in lanes.ALL}
    used = [lane for lane in lanes.ALL if by_lane[lane]]
    if used in ([lanes.HOST], [lanes.SIMULATED]):       # a simulated paper's model runs on the host
        return "runs on the host"
    parts = [lane.phrase + (f" ({len(by_lane[lane])} cells)" if len(used) > 1 else "") for lane in used]
    host_lacks = _union([c for c in plan.cells if c.where is not lanes.HOST], "host_lacks")
    return "runs " + " and ".join(parts) + (f" (host lacks: {host_lacks})" if host_lacks else "")


def _cannot_run(plan: Plan, stuck: list[CellPlan]) -> str:
    count = f"{len(stuck)} of {len(plan.cells)} cells"
    host_lacks = _union(stuck, "host_lacks")
    forced = forced_lane(plan.mode)
    if forced is lanes.HOST:
        why = f"TCPREPRO_KERNEL=host but the host lacks {host_lacks}"
        if not any(c.vm_lacks for c in stuck):
            return f"cannot run: {why} ({count}). Fix: unset TCPREPRO_KERNEL: the pinned VM kernel has them"
    elif forced is lanes.VM:
        why = f"TCPREPRO_KERNEL=vm but the VM lacks {_union(stuck, 'vm_lacks')}"
    elif forced is lanes.UML:
        why = f"the UML lane lacks {_union(stuck, 'uml_lacks')}"
        fixes = "; ".join(f"{n}: {plan.fixes[n]}" for n in sorted({n for c in stuck for n in c.uml_lacks})
                          if plan.fixes.get(n))
        return f"cannot run: {why} ({len(stuck)} of {len(plan.cells)} cells)" + (f". Fix: {fixes}" if fixes else "")
    else:
        why = f"host lacks {host_lacks}; VM lacks {_union(stuck, 'vm_lacks')}"
    # Forced to the host, the host's gaps matter; otherwise what stops the VM fallback does.
    missing = {n for c in stuck for n in (c.host_lacks if forced is lanes.HOST else c.vm_lacks)}
    fixes = "; ".join(f"{n}: {plan.fixes[n]}" for n in sorted(missing) if plan.fixes.get(n))
    return f"cannot run: {why} ({count})" + (f". Fix: {fixes}" if fixes else "")


def kernel_mode() -> str:
    mode = (environment.get("TCPREPRO_KERNEL") or "auto").strip().lower() or "auto"
    if mode not in KERNEL_MODES:
        raise ValueError(f"TCPREPRO_KERNEL={mode!r}: choose one of {', '.join(KERNEL_MODES)}")
    return mode


def forced_lane(mode: str) -> Lane | None:
    """The lane a mode forces; None under `auto`."""
    return None if mode == "auto" else lanes.by_name(mode)


def paper_needs(paper: str) -> set[str]:
    """What every cell of a paper needs together (all matrix cells, whatever the profile)."""
    return {n for c in load_paper(paper).cells_by_id.values() for n in needs(c.scenario)}


def _place(need: set[str], survey: Survey, mode: str,
           together: set[str] | None = None) -> tuple[Lane | None, list[str], list[str], list[str]]:
    """(lane, host lacks, VM lacks, UML lacks) for one cell. Under `auto` the first lane of
    testbed.lane.MEASURED that has everything, and `together` (the paper's needs) decides: a paper's cells are
    compared with one another, so all of them run on one kernel (the congestion controls' code and
    the emulator differ between lanes); a forced mode places the cell alone, on that lane. A
    simulated cell (it needs only tool:ns3) runs on the simulated lane, on the host, whatever the mode:
    no kernel is under test."""
    if need == SIMULATION_NEEDS:
        host_lacks = lanes.SIMULATED.lacks(survey, need)
        return (None if host_lacks else lanes.SIMULATED), host_lacks, host_lacks, host_lacks
    if mode == "auto" and together:
        placed = _place(need | together, survey, mode)
        if placed[0] is not None:
            return placed
    lacks = {lane: survey.lacks(lane, need) for lane in lanes.MEASURED}
    forced = forced_lane(mode)
    order = lanes.MEASURED if forced is None else (forced,)
    where = next((lane for lane in order if not lacks[lane]), None)
    return where, lacks[lanes.HOST], lacks[lanes.VM], lacks[lanes.UML]


def paper_mode(cfg: Any) -> str:
    """TCPREPRO_KERNEL if set, else the lane the paper's config names (`lane`), else auto."""
    mode = kernel_mode()
    return cfg.data.get("lane", "auto") if mode == "auto" else mode


def plan(paper: str, profile: str = "quick", survey: Survey | None = None, mode: str | None = None,
         extra: Iterable[str] = ()) -> Plan:
    """Where each cell of `paper` runs: the first lane that has everything it needs, else nowhere.
    `extra`: cells beyond the profile's (an open choice's twins, configuration/choices.py)."""
    cfg = load_paper(paper)
    cells = cfg.cells(profile) + [c for c in map(cfg.any_cell, extra) if c is not None]
    mode = mode or paper_mode(cfg)
    survey = survey or take_survey(ccs=paper_ccs(cfg.cells_by_id.values()))
    together = paper_needs(paper)
    placed = []
    for cell in cells:
        where, host_lacks, vm_lacks, uml_lacks = _place(needs(cell.scenario), survey, mode, together)
        placed.append(CellPlan(cell.cell_id, where, tuple(host_lacks), tuple(vm_lacks), tuple(uml_lacks)))
    fixes = {n: fix_for(survey.host.get(n, _absent(n)), vm_check(survey, n))
             for c in placed for n in {*c.host_lacks, *c.vm_lacks}}
    fixes.update({n: _uml_check(survey, n).fix for c in placed for n in c.uml_lacks if _uml_check(survey, n).fix})
    return Plan(cfg.name, profile, mode, placed, fixes)


class CannotRun(RuntimeError):
    """Neither the host kernel nor the VM can run a cell; the message names what is missing."""


PLACED = "TCPREPRO_PLACED"


def for_jobs(placed: Mapping[str, Mapping[str, Lane | None]]) -> str:
    """The workflow's placement ({paper: {cell: lane}}) as its trial jobs read it (PLACED):
    {paper: {lane name: [cells]}}, compact JSON."""
    out: dict[str, dict[str, list[str]]] = {}
    for paper, cells in sorted(placed.items()):
        for cell_id, where in sorted(cells.items()):
            if where is not None:
                out.setdefault(paper, {}).setdefault(where.name, []).append(cell_id)
    return json.dumps(out, separators=(",", ":"))


def workflow_lane(paper: str, cell_id: str) -> Lane | None:
    """The lane the running workflow placed this cell on, or None outside a workflow (or for a cell
    it did not place)."""
    text = environment.get(PLACED)
    if not text:
        return None
    try:
        placed = json.loads(text)
    except ValueError:
        raise CannotRun(f"{PLACED} is not the workflow's placement (JSON). Fix: unset it") from None
    return next((lanes.by_name(name) for name, cells in (placed.get(paper) or {}).items() if cell_id in cells), None)


def cell_lane(cell: Any) -> Lane:
    """The lane one measured cell runs on now: the workflow's placement, or, run by hand, its own
    (raises CannotRun naming the missing features). Inside a guest (the VM's or UML's own trial
    process) the cell runs on that guest's kernel: the host lane."""
    if environment.flag("TCPREPRO_IN_VM") or environment.flag("TCPREPRO_IN_UML"):
        return lanes.HOST
    together = paper_needs(cell.paper)
    survey = take_survey(ccs={n.removeprefix("cc:") for n in together if n.startswith("cc:")})
    if (planned := workflow_lane(cell.paper, cell.cell_id)) is not None:
        if lacks := survey.lacks(planned, needs(cell.scenario)):
            raise CannotRun(f"cell {cell.cell_id}: the workflow placed it on the {planned.name} lane, which now "
                            f"lacks {', '.join(lacks)}. Fix: run the workflow again, so that it places the cell anew")
        return planned
    mode = paper_mode(load_paper(cell.paper))
    where, host_lacks, vm_lacks, uml_lacks = _place(needs(cell.scenario), survey, mode, together)
    if where is None:
        if forced_lane(mode) is lanes.UML:
            fixes = "; ".join(f"{n}: {_uml_check(survey, n).fix}" for n in uml_lacks)
            raise CannotRun(f"cell {cell.cell_id} cannot run on the UML lane: it lacks {', '.join(uml_lacks)}. "
                            f"Fix: {fixes}")
        fixes = "; ".join(f"{n}: {fix_for(survey.host.get(n, _absent(n)), vm_check(survey, n))}"
                          for n in sorted({*host_lacks, *vm_lacks}))
        raise CannotRun(f"cell {cell.cell_id} cannot run (TCPREPRO_KERNEL={mode}): host lacks "
                        f"{', '.join(host_lacks) or 'nothing'}; VM lacks {', '.join(vm_lacks) or 'nothing'}. "
                        f"Fix: {fixes}")
    return where


def paper_ccs(cells: Iterable[Any]) -> set[str]:
    return {n.removeprefix("cc:") for c in cells for n in needs(c.scenario) if n.startswith("cc:")}


def _uml_check(survey: Survey, name: str) -> Check:
    runner = by_name(survey.uml_runner)
    return runner.get(name) or survey.uml.get(name, _absent(name))


def vm_check(survey: Survey, name: str) -> Check | None:
    if name.startswith("uml:"):
        return None
    runner = by_name(survey.runner)
    if name in runner:
        return runner[name]
    return survey.vm.get(name, _absent(name)) if survey.vm_release else None


def fix_for(host: Check | None, vm: Check | None) -> str:
    """The fix column: nothing if the host has it, 'runs in the VM' if the pinned kernel has it."""
    if host is not None and host.ok:
        return ""
    if host is None:
        return "" if vm is None or vm.ok else vm.fix
    if vm is not None and vm.ok:
        return f"runs in the VM: the pinned kernel has {vm.detail}"
    return "; ".join(dict.fromkeys(f for f in (host.fix, vm.fix if vm else "") if f))
