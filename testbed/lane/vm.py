"""The VM lane: a QEMU guest on Debian's pinned 6.1 kernel, in real time (testbed/shared_vm.py).

One guest is shared by the checkout's trials: each measures as a job in it, holding one of its
measurement slots (`vm_lanes`); its analysis runs on the host. The guest writes its trial only
inside the results folder it shares with the host. The guest's own trial records where it ran
(`kernel.where` vm, the accelerator).
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cc import bpf_build, registry
from configuration import CHECKOUT, environment
from configuration.load import load_workflow
from testbed import kernel_btf
from testbed.interrupt import TrialInterrupted
from testbed.lane.base import FAST_DISTUTILS, INTERRUPTED_CODES, Lane, TrialFailed, lacking
from testbed.port_slots import try_slot
from testbed.shared_vm import SLOT_ENV, SharedVM
from testbed.vm_kernel import pinned_kernel

if TYPE_CHECKING:
    from testbed.placement import Survey

log = logging.getLogger("tcprepro.trial")


@contextlib.contextmanager
def vm_slot(slots: int | None = None, lock_dir: Path | None = None,
            busy: Callable[[int], bool] | None = None) -> Iterator[int]:
    """Hold one of the VM's measurement slots (`vm_lanes` in config/workflow.yaml) while measuring.

    The workflow may run more trials than the VM measures at once: their host-side parts (start-up,
    the analysis) then overlap another trial's measurement instead of idling the VM. An flock, so a
    killed holder frees its slot; `busy(index)` says whether that holder's guest job still measures
    (testbed/shared_vm.py SharedVM.slot_in_use), and the slot is taken only once it has stopped."""
    n = slots or max(1, int(environment.get("TCPREPRO_VM_LANES") or load_workflow().get("vm_lanes", 1)))
    lock_dir = lock_dir or CHECKOUT / "results" / ".vm"
    while (slot := try_slot(lock_dir, "measure", n)) is None:
        time.sleep(0.2)
    index, fd = slot
    try:
        while busy is not None and busy(index):
            time.sleep(0.5)
        yield index
    finally:
        os.close(fd)


def exec_in_vm_slot(argv: list[str], cwd: Path, env: dict[str, str], checkout: Path | None = None,
                    slots: int | None = None) -> int:
    """Run argv in the VM lane holding a measurement slot; the job carries the slot's index, so a
    later holder of the slot waits for it even if this process is killed."""
    shared = SharedVM(checkout)
    with vm_slot(slots, shared.state, busy=shared.slot_in_use) as index:
        return shared.exec(argv, cwd, {**env, SLOT_ENV: str(index)})


def prebuild_bpf_for_vm(spec: dict[str, Any], checkout: Path = CHECKOUT) -> list[Any]:
    """Compile on the host, for the VM's pinned kernel, the BPF objects the trial will load there
    (clang under TCG takes half a minute or more per object, here a second), into the cache the
    guest reads (results/.vm/bpf). Best effort: what fails here the guest builds, or fails on, itself."""
    root = (checkout / "results").resolve() / ".vm" / "bpf"
    built = []
    try:
        image = pinned_kernel()
        module_params = spec.get("module_params") or {}
        wanted = {}                 # by kernel name: one per algorithm and parameter set
        for f in (f for f in spec["flows"] if f["kind"] == "bulk"):
            obj = registry.bpf_object_for(f["cc"], image.release, f.get("cc_params"), f.get("cc_impl"),
                                          module_params.get(f["cc"]))
            if obj is not None:
                wanted[obj[1]] = obj
        if wanted:                  # the image's BTF only then: decompressing it takes seconds
            kernel = bpf_build.TargetKernel(image.release, kernel_btf.image_btf(image.path, root))
            built = [bpf_build.build(*obj, kernel, root) for _, obj in sorted(wanted.items())]
    except Exception as exc:        # an optimisation: the guest reports real failures itself
        log.warning("BPF objects not prebuilt on the host (the VM builds them): %s", exc)
    return built


class VmLane(Lane):
    name = "vm"
    where = "vm"
    measures = "Debian's pinned Linux 6.1 in a QEMU guest (KVM or TCG), in real time"
    phrase = "in the VM"
    per_core = False
    deterministic = False
    cluster_mem = "uml"                 # a cluster never measures here (rules/common.smk cluster_lane)

    def lacks(self, survey: Survey, need: Iterable[str]) -> list[str]:
        runner_lacks = [c.name for c in survey.runner if not c.ok]
        return sorted({*runner_lacks, *(lacking(survey.vm, need) if survey.vm_release else [])})

    def refuse(self, out: Path) -> str | None:
        shared = SharedVM().results
        if out.resolve().is_relative_to(shared):
            return None
        # The guest writes its trial where the host reads it only inside the folder it shares.
        return (f"{out} is outside {shared}, the one results folder the VM shares with this host; fix: keep "
                f"`results` under it (results=results/<name>), or make results/ a link to where you want them")

    def notice(self, spec: dict[str, Any]) -> str | None:
        return (f"{spec['paper']}/{spec['cell']} trial {spec['trial']}: the host kernel lacks what this cell "
                f"needs: measuring in the VM")

    def measure(self, spec: dict[str, Any], partial: Path, binary: Any = None) -> None:
        prebuild_bpf_for_vm(spec)
        env = environment.forwarded()
        env["SETUPTOOLS_USE_DISTUTILS"] = FAST_DISTUTILS
        rc = exec_in_vm_slot([sys.executable, "-m", "testbed.trial", "--spec", str(partial / "spec.json"),
                              "--out", str(partial)], cwd=CHECKOUT, env=env)
        if rc in INTERRUPTED_CODES:
            raise TrialInterrupted(f"VM job ended with {rc}")
        if rc != 0:
            raise TrialFailed(f"the measurement in the VM exited {rc}")
        # The analysis can wait; the VM's emulated link, sharing these cores, cannot.
        os.nice(19 - os.nice(0))
