"""What a profile's result sets actually ran, read from their provenance summaries: per paper the
cells and trials, the lane (or simulator) and the kernels. The browser report opens with it, so a
reader sees what was measured, on what, before any verdict, whatever the workflow was asked for.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from analysis.resultset import ResultSet

# A trial's `kernel.where` (analysis/report/provenance.py counts them, an accelerator in parentheses).
LANES = {"uml": "on the virtual-time lane (a User-Mode Linux guest per trial, its clock advancing only "
                "when the guest is idle)",
         "vm": "on the VM lane (a QEMU VM of the pinned Debian kernel, in real time)",
         "host": "on the host's own kernel, in real time"}


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} ({n})" if len(counts) > 1 else k for k, n in counts.items())


def _lanes(where: dict[str, int]) -> str:
    parts = []
    for key, n in where.items():
        lane, _, accel = key.partition(" ")
        phrase = LANES.get(lane, f"on lane {lane}") + (f" {accel}" if accel else "")
        parts.append(phrase + (f": {n} trials" if len(where) > 1 else ""))
    return "; ".join(parts) or "on no recorded lane"


def _simulators(sims: dict[str, int]) -> str:
    """'ns-3 3.37 (libns3-dev 3.37-2), 3 builds of build/wlan/wlan_dcf': one simulator, however many
    times its model was rebuilt."""
    by_sim: Counter[str] = Counter()
    binary: dict[str, str] = {}
    for text in sims:
        name, _, build = text.rpartition(", ")
        name = name or text
        by_sim[name] += 1
        binary[name] = build.split(" sha256:")[0] if build else ""
    return "; ".join(f"{name}, {n} build{'s' if n > 1 else ''} of {binary[name]}" if binary[name] else name
                     for name, n in by_sim.items())


def paper_line(name: str, rs: ResultSet, per_cell: int | None) -> str:
    """One Markdown list item: what paper `name`'s result set ran."""
    prov: dict[str, Any] = rs.provenance
    if not prov:
        return f"- **{name}**: no provenance summary in its result set"
    sims = prov.get("simulators") or {}
    unit = "runs" if sims else "trials"
    cells = f"{prov['cells']} cells, " if prov.get("cells") else ""
    each = f" ({per_cell} per cell)" if per_cell else ""
    line = (f"- **{name}**: {cells}{prov.get('trials_valid', '?')} of {prov.get('trials_expected', '?')} planned "
            f"{unit} valid{each}, ")
    if sims:
        line += f"simulated by {_simulators(sims)}, on the host (kernel {_counted(prov.get('kernels') or {})})"
    else:
        line += f"{_lanes(prov.get('where') or {})}, kernel {_counted(prov.get('kernels') or {})}"
    return line + "."


SHORT = {"uml": "the virtual-time lane (UML)", "vm": "the VM lane", "host": "the host's kernel",
         "simulation": "simulation"}


def lanes_used(sets: dict[str, ResultSet | None]) -> list[str]:
    """Where the result sets ran, each once, in order of first appearance: a lane, or simulation."""
    out: list[str] = []
    for rs in sets.values():
        if rs is None:
            continue
        kinds = ["simulation"] if rs.provenance.get("simulators") else \
            [k.partition(" ")[0] for k in rs.provenance.get("where") or {}]
        out += [SHORT.get(k, k) for k in kinds if SHORT.get(k, k) not in out]
    return out
