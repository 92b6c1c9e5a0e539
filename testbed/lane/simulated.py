"""The simulated lane: a paper's ns-3 model on the host; no kernel under test, no root, no VM.
A deterministic simulation gives the same result when rerun: one attempt."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testbed import trial_dir
from testbed.lane.base import Lane, lacking

if TYPE_CHECKING:
    from testbed.placement import Survey


class SimulatedLane(Lane):
    # "sim": the word the workflow has always used for these trials (config `cluster.mem_mb.sim`)
    name = "sim"
    where = "host"
    measures = "a simulator's model of the paper's network (ns-3), on the host"
    phrase = "on the host"
    per_core = True
    deterministic = True
    cluster_mem = "sim"
    needs_root = False
    on_cluster = True
    sweeps_kernel = False

    def lacks(self, survey: Survey, need: Iterable[str]) -> list[str]:
        """Only the simulator's toolchain, checked on the host."""
        return lacking(survey.host, need)

    def measure(self, spec: dict[str, Any], partial: Path, binary: Any = None) -> None:
        # The model's adapters import the analysis (numpy): loaded when a trial runs.
        from testbed import simulate
        simulate.measure(spec, partial, binary)

    def attempt(self, spec: dict[str, Any], partial: Path, final_dir: Path, binary: Any = None,
                may_replace: trial_dir.Fingerprint | None = None) -> dict[str, Any]:
        from testbed import simulate  # as in measure: numpy only when a trial runs
        simulate.measure(spec, partial, binary)
        return simulate.finalize(partial, final_dir, may_replace)
