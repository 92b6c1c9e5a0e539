"""What every lane is: where a trial runs, and what follows from it.

A lane is one of uml (a User-Mode Linux guest in virtual time), host (this kernel in real time), vm
(a QEMU guest in real time) or simulated (an ns-3 model, no kernel under test). Placement
(testbed/placement.py) picks the lane of each cell once; the workflow (rules/common.smk) and the
trial runner (testbed/run.py) then ask the lane, never compare its name: whether a trial is CPU
work (a core each) or mostly waits (one real-time trial slot, Snakemake resource `trial_lanes`),
what it asks a cluster for, how often it is measured, what it lacks of a cell's needs, how it
measures, and the provenance it adds. Its `name` is the word that provenance (`kernel.where`),
TCPREPRO_KERNEL and a paper's `lane:` use.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from testbed import trial_dir
from testbed.kernel_features import Check

if TYPE_CHECKING:                       # placement imports the lanes: only the type, for the checker
    from testbed.placement import Survey

INTERRUPTED_CODES = {128 + 2, 128 + 15}   # a guest's job ended by SIGINT or SIGTERM
# Mininet imports distutils.version; in a venv with setuptools, its _distutils_hack (armed at start-up
# from a .pth, so this must be in the environment before Python starts) loads all of setuptools and
# pkg_resources for it: 0.45 s of a trial process's 0.55 s start on a host, seconds under QEMU TCG.
# The standard library's distutils serves Mininet as well.
FAST_DISTUTILS = "stdlib"


class TrialFailed(RuntimeError):
    pass


def absent(name: str) -> Check:
    """A feature nobody checked: failed, with the fix when it is a congestion control."""
    if name.startswith("cc:"):
        return Check(name, False, "not checked", f"add {name[3:]} to config/congestion_controls.yaml")
    return Check(name, False, "not checked")


def lacking(checks: Mapping[str, Check], need: Iterable[str]) -> list[str]:
    """The names of `need` that `checks` does not pass, sorted."""
    return sorted(n for n in need if not checks.get(n, absent(n)).ok)


class Lane(ABC):
    """One lane; each is a singleton (testbed/lane/__init__.py), compared by identity."""

    name: ClassVar[str]
    # Where its trials run, as provenance (`kernel.where`) and doctor's report name it: a lane's own
    # name, but the simulated lane's, whose model runs on the host.
    where: ClassVar[str]
    measures: ClassVar[str]             # what a trial here measures, in words (the docs' lane table)
    phrase: ClassVar[str]               # the plan's words: "runs <phrase>"
    per_core: ClassVar[bool]            # CPU work from start to end: a core each, no trial slot
    deterministic: ClassVar[bool]       # a rerun repeats the result: measured once, never retried
    cluster_mem: ClassVar[str]          # the key of config `cluster.mem_mb` a trial job asks for
    needs_root: ClassVar[bool] = True   # builds namespaces and qdiscs in a kernel the caller shares
    # A cluster job may run it: one unprivileged process, no per-machine state (docs/cluster.md).
    on_cluster: ClassVar[bool] = False
    # A killed trial may leave namespaces and qdiscs in this machine's kernel: swept before each trial.
    sweeps_kernel: ClassVar[bool] = True

    def __repr__(self) -> str:
        return f"<lane {self.name}>"

    # -- what the workflow asks (rules/trials.smk) --------------------------------------------------
    @property
    def threads(self) -> int:
        """Snakemake threads of a trial job: one core for CPU work, none for a trial that waits."""
        return 1 if self.per_core else 0

    @property
    def trial_slots(self) -> int:
        """The Snakemake resource `trial_lanes` a trial job holds: real-time trials share a kernel
        and a VM, so `--resources trial_lanes=N` caps how many measure at once."""
        return 0 if self.per_core else 1

    def mem_mb(self, cluster: Mapping[str, Any]) -> int:
        return int(cluster["mem_mb"][self.cluster_mem])

    def attempts(self, max_attempts: int) -> int:
        """How often a trial that fails its checks is measured in one run."""
        return 1 if self.deterministic else max_attempts

    # -- placement ---------------------------------------------------------------------------------
    @abstractmethod
    def lacks(self, survey: Survey, need: Iterable[str]) -> list[str]:
        """What this lane lacks of `need` (its runner's failed checks included), sorted."""

    # -- the trial runner (testbed/run.py) ---------------------------------------------------------
    def prepare(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The spec as this lane measures it (the virtual-time lane adds its seeded variation)."""
        return spec

    def refuse(self, out: Path) -> str | None:
        """Why this lane cannot write a trial to `out`, or None."""
        return None

    def notice(self, spec: dict[str, Any]) -> str | None:
        """A line for the user before measuring, or None."""
        return None

    @abstractmethod
    def measure(self, spec: dict[str, Any], partial: Path, binary: Any = None) -> None:
        """Run the measurement into `partial` (spec.json is there), with the provenance this lane
        records; raise on failure."""

    def attempt(self, spec: dict[str, Any], partial: Path, final_dir: Path, binary: Any = None,
                may_replace: trial_dir.Fingerprint | None = None) -> dict[str, Any]:
        """One attempt: the measurement, then the host-side analysis and the rename into place."""
        # The analysis pulls in pandas: imported when a trial is analysed, not when a workflow loads.
        from testbed.finalize import finalize
        self.measure(spec, partial, binary)
        return finalize(partial, final_dir, may_replace)
