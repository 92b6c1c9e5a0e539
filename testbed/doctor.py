"""What this machine can run, and where: the `doctor` report.

A table of every feature on each lane's kernel (this host's, probed; the pinned VM kernel's and
the UML kernel's, read) with the fix for what is missing, then a line per paper saying where it
runs (testbed/placement.py). `main` is `tcprepro doctor`; it exits non-zero when a paper can run
nowhere, so a script can stop before it starts a workflow that would fail.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from configuration.load import paper_names
from experiments import load_paper
from testbed.kernel_features import Check, by_name
from testbed.placement import CellPlan, Plan, Survey, fix_for, paper_ccs, plan, take_survey, vm_check

ROW_ORDER = ("root", "sysctl:", "netns+veth", "qdisc:", "ifb", "bridge", "tracefs", "tracepoint:", "modules",
             "bpf:", "tool:", "cc:", "vm:", "uml:")


def _row_rank(name: str) -> int:
    return next((i for i, p in enumerate(ROW_ORDER) if name == p or (p.endswith(":") and name.startswith(p))),
                len(ROW_ORDER))


def rows(survey: Survey) -> list[tuple[str, Check | None, Check | None, Check | None, str]]:
    """(feature, host check, pinned-kernel check, UML-kernel check, fix), in a stable reading order."""
    names = list(dict.fromkeys([*survey.host, *survey.vm, *(c.name for c in survey.runner), *survey.uml,
                                *(c.name for c in survey.uml_runner)]))
    names.sort(key=_row_rank)
    out = []
    for name in names:
        host, vm = survey.host.get(name), vm_check(survey, name)
        uml = by_name(survey.uml_runner).get(name) or survey.uml.get(name)
        fix = fix_for(host, vm) if not name.startswith("uml:") else (uml.fix if uml and not uml.ok else "")
        out.append((name, host, vm, uml, fix))
    return out


def _cell(check: Check | None) -> str:
    if check is None:
        return "-"
    return f"{'ok' if check.ok else 'NO'}: {check.detail}"


def render_table(survey: Survey) -> str:
    header = ("feature", f"host {survey.host_release}", f"pinned VM kernel {survey.vm_release or '?'}",
              f"UML kernel {survey.uml_release or '?'}", "fix")
    table = [header, *((n, _cell(h), _cell(v), _cell(u), fix) for n, h, v, u, fix in rows(survey))]
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    lines = [" | ".join([*(r[i].ljust(widths[i]) for i in range(4)), r[4]]).rstrip() for r in table]
    lines.insert(1, "-+-".join("-" * w for w in [*widths, len(header[4])]))
    return "\n".join(lines)


def report_json(survey: Survey, plans: list[Plan]) -> dict[str, Any]:
    return {
        "host_release": survey.host_release,
        "vm_release": survey.vm_release,
        "uml_release": survey.uml_release,
        "features": [{"name": n, "host": asdict(h) if h else None, "vm": asdict(v) if v else None,
                      "uml": asdict(u) if u else None, "fix": fix} for n, h, v, u, fix in rows(survey)],
        "papers": [{**asdict(p), "cells": [_cell_json(c) for c in p.cells], "runnable": p.runnable,
                    "summary": p.summary()} for p in plans],
    }


def _cell_json(cell: CellPlan) -> dict[str, Any]:
    """A cell's placement, its lane as provenance names where it ran (testbed/lane/base.py `where`)."""
    return {**asdict(cell), "where": cell.where.where if cell.where else None}


def main(papers: list[str] | None = None, profile: str = "quick", refresh: bool = False,
         as_json: bool = False) -> int:
    """Print the feature table and each paper's placement; non-zero if a paper can run nowhere."""
    configs = {name: load_paper(name) for name in papers or paper_names()}
    ccs = {cc for cfg in configs.values() for cc in paper_ccs(cfg.cells(profile))}
    survey = take_survey(refresh, ccs)
    plans = [plan(name, profile, survey) for name in configs]   # TCPREPRO_KERNEL, else the paper's `lane`
    if as_json:
        print(json.dumps(report_json(survey, plans), indent=2))
    else:
        print(render_table(survey))
        print()
        for p in plans:
            print(p.summary())
    return 0 if all(p.runnable for p in plans) else 1
