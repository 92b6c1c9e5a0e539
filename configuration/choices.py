"""The settings a paper left open, as cells the workflow can run.

config/<paper>.yaml's `reference.choices` names each open setting, the reading taken and its
alternatives. An alternative flips that one choice in the cells it touches: matrix parameters given
other values (`set`), or keys merged into the cell's scenario (`scenario`). Each touched cell gets a
twin measured under the alternative; every other cell is the reference's own, reused, not rerun. A
twin whose scenario is the same as a cell the matrix already runs (an investigation's cell) is that
cell, not a new one. A verdict under the alternative is the paper's analysis over the reference's
cells with the twins in their places (docs/robustness.md).

An alternative may name touched cells that no claim reads (`unread`, with its reason): the workflow
does not measure their twins. They stay touched, so a claim that came to read one would be "not
evaluated" under the alternative, never judged on the reference's cell in its place.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from configuration.load import Cell, ConfigError, PaperConfig

SILENT = "the paper is silent"
TWIN_SEP = "+"          # a twin's id: <cell>+<choice>.<alternative> (a cell id's own characters)


@dataclass(frozen=True)
class Alternative:
    """One alternative reading of one open choice, and the cells it replaces."""

    choice: str
    alternative: str
    reading: str
    paper: str
    favoured: bool
    twins: dict[str, str]
    """{reference cell: the cell measured in its place under this alternative}"""
    unread: frozenset[str] = frozenset()
    """The touched reference cells no claim reads: the workflow does not measure their twins."""

    @property
    def key(self) -> str:
        return f"{self.choice}.{self.alternative}"


def twin_id(cell_id: str, choice: str, alternative: str) -> str:
    return f"{cell_id}{TWIN_SEP}{choice}.{alternative}"


def _touched(paper: PaperConfig, where: str, cells: Any) -> list[Cell]:
    """The cells an alternative's `cells` selects, in matrix order; ConfigError when none or when a
    parameter it names is not one of the matrix's."""
    if cells == "matrix":
        return [paper.cells_by_id[c] for c in paper.matrix_cells]
    known = {k for c in paper.cells_by_id.values() for k in c.params}
    for param in cells:
        if param not in known:
            raise ConfigError(f"{paper.path}: {where}.cells: no matrix parameter {param!r}; "
                              f"they are: {', '.join(sorted(known))}")
    out = [c for c in paper.cells_by_id.values()
           if all(c.params.get(k) in values for k, values in cells.items())]
    if not out:
        raise ConfigError(f"{paper.path}: {where}.cells: {cells} selects no cell")
    return out


def alternatives(paper: PaperConfig) -> tuple[list[Alternative], dict[str, Cell]]:
    """Every alternative of the paper's open choices, and the new cells (twins) they need, by id.

    ConfigError when an alternative would change nothing in a cell it touches (its verdict would be
    the reference's by construction), names a parameter the matrix lacks, or when ids repeat."""
    found: list[Alternative] = []
    twins: dict[str, Cell] = {}
    by_scenario = {_frozen(c.scenario): c.cell_id for c in paper.cells_by_id.values()}
    seen_choices: set[str] = set()
    for i, choice in enumerate(paper.data.get("reference", {}).get("choices") or []):
        if "alternatives" not in choice:
            continue
        cid = choice["id"]
        if cid in seen_choices:
            raise ConfigError(f"{paper.path}: reference.choices[{i}].id: {cid!r} twice")
        seen_choices.add(cid)
        seen_alts: set[str] = set()
        for j, alt in enumerate(choice["alternatives"]):
            where = f"reference.choices[{i}].alternatives[{j}]"
            if alt["id"] in seen_alts:
                raise ConfigError(f"{paper.path}: {where}.id: {alt['id']!r} twice in choice {cid}")
            seen_alts.add(alt["id"])
            if choice["paper"] == SILENT and alt["paper"] == SILENT and not alt["favoured"]:
                raise ConfigError(f"{paper.path}: {where}.favoured: false, but the paper is silent on both readings; "
                                  "its text then favours the alternative as much as the reading taken: true")
            placed: dict[str, str] = {}
            for cell in _touched(paper, where, alt["cells"]):
                name = twin_id(cell.cell_id, cid, alt["id"])
                twin = paper.cell_at({**cell.point, **alt.get("set", {})}, name=name,
                                     scenario_over=alt.get("scenario"))
                if twin.scenario == cell.scenario:
                    raise ConfigError(f"{paper.path}: {where}: changes nothing in cell {cell.cell_id}; "
                                      "an alternative must change what the cell runs")
                same = by_scenario.get(_frozen(twin.scenario))
                if same is None:
                    twins[name] = twin
                    same = name
                placed[cell.cell_id] = same
            unread = _unread(paper, where, alt, placed)
            found.append(Alternative(cid, alt["id"], alt["reading"], alt["paper"], bool(alt["favoured"]), placed,
                                     unread))
    return found, twins


def _unread(paper: PaperConfig, where: str, alt: dict[str, Any], placed: dict[str, str]) -> frozenset[str]:
    """The touched cells the alternative's `unread.cells` selects; ConfigError when it selects one it
    does not touch (nothing to leave unmeasured there) or none."""
    if "unread" not in alt:
        return frozenset()
    cells = {c.cell_id for c in _touched(paper, f"{where}.unread", alt["unread"]["cells"])}
    if stray := sorted(cells - set(placed)):
        raise ConfigError(f"{paper.path}: {where}.unread.cells: selects {stray[0]}"
                          f"{f' and {len(stray) - 1} more' if len(stray) > 1 else ''}, which the alternative "
                          "does not touch; name only cells its `cells` selects")
    return frozenset(cells)


def _frozen(value: Any) -> Any:
    """A hashable copy of a scenario (mappings by sorted key), for finding equal ones."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value
