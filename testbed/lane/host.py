"""The host lane: this machine's kernel, in real time; trials share it (one port slot each)."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testbed.lane.base import Lane, lacking

if TYPE_CHECKING:
    from testbed.placement import Survey


class HostLane(Lane):
    name = "host"
    where = "host"
    measures = "this machine's kernel, in real time"
    phrase = "on the host"
    per_core = False
    deterministic = False
    cluster_mem = "uml"                 # a cluster never measures here (rules/common.smk cluster_lane)

    def lacks(self, survey: Survey, need: Iterable[str]) -> list[str]:
        return lacking(survey.host, need)

    def measure(self, spec: dict[str, Any], partial: Path, binary: Any = None) -> None:
        # Mininet and the trial's machinery: loaded by the process that measures, not by the workflow.
        from testbed.trial import measure
        measure(spec, partial)
