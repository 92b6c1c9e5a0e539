"""The virtual-time lane: each trial the job of its own User-Mode Linux guest (testbed/uml.py).

The guest's clock advances only when it is idle, so a trial is CPU work from start to end (a core
each) and repeats to the last byte: it is measured once. What makes the trials of a cell differ is
seeded (testbed/variation.py); the guest's kernel and time go into provenance as `virtual_time`.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cc.registry import boot_params
from configuration import CHECKOUT, environment
from testbed import uml as runner
from testbed import variation
from testbed.interrupt import TrialInterrupted
from testbed.lane.base import FAST_DISTUTILS, INTERRUPTED_CODES, Lane, TrialFailed, lacking

if TYPE_CHECKING:
    from testbed.placement import Survey


class UmlLane(Lane):
    name = "uml"
    where = "uml"
    measures = "Linux 6.1 with time travel in a User-Mode Linux guest, in virtual time"
    phrase = "on the virtual-time lane (UML)"
    per_core = True
    deterministic = True
    cluster_mem = "uml"
    needs_root = False
    on_cluster = True
    sweeps_kernel = False

    def lacks(self, survey: Survey, need: Iterable[str]) -> list[str]:
        if not survey.uml_release:
            return ["uml:kernel"]
        return sorted({*(c.name for c in survey.uml_runner if not c.ok), *lacking(survey.uml, need)})

    def prepare(self, spec: dict[str, Any]) -> dict[str, Any]:
        return variation.apply(spec)

    def measure(self, spec: dict[str, Any], partial: Path, binary: Any = None) -> None:
        """The measurement as the job of its own UML guest, in virtual time; what the guest did with
        its time goes into provenance beside the measurement's own records."""
        # The measurement reads everything from spec.json; its environment is fixed, so that nothing
        # of the host's (a TCPREPRO_RUN_DIR, say) changes what the guest does (testbed/uml.py).
        env = {"TCPREPRO_IN_UML": "1", "SETUPTOOLS_USE_DISTUTILS": FAST_DISTUTILS, "PYTHONHASHSEED": "0",
               "PYTHONDONTWRITEBYTECODE": "1"}
        # The cell's built-in algorithm parameters at boot too: some are read only when the algorithm
        # registers (the trial's sysfs check then finds them set).
        # The guest sees the checkout at a fixed place (runner.GUEST_CHECKOUT), whatever the host's path.
        run = runner.run([str(runner.in_guest(Path(sys.executable), CHECKOUT)), "-m", "testbed.trial",
                          "--spec", str(runner.GUEST_SHARE / "spec.json"), "--out", str(runner.GUEST_SHARE)],
                         share=partial, checkout=CHECKOUT, cwd=runner.GUEST_CHECKOUT, env=env,
                         seed=spec["variation"]["seed"], boot_params=boot_params(spec.get("module_params") or {}),
                         # What another machine image's user space would do differently before the
                         # measurement (other draws from the random stream, other files missed, another
                         # set-up length), for the test that shows a trial does not depend on it
                         # (tests/integration/test_uml_trial.py); empty otherwise.
                         prelude=environment.get("TCPREPRO_UML_PRELUDE") or "",
                         # Another image's whole user space as the guest's / (the same test, across images).
                         userspace=runner.userspace_from_env())
        if run.rc in INTERRUPTED_CODES:
            raise TrialInterrupted(f"UML job ended with {run.rc}")
        if run.rc != 0:
            raise TrialFailed(f"the measurement in the UML guest exited {run.rc} (console: {partial / runner.CONSOLE})")
        prov_path = partial / "provenance.json"
        prov = json.loads(prov_path.read_text())
        info = run.kernel.info
        prov["virtual_time"] = {"kernel_key": info["key"], "release": info["release"], "hz": info["hz"],
                                "source": f"{info['package']} {info['version']}",
                                "command_line": list(run.command_line), "wall_s": round(run.wall_s, 3),
                                "virtual_s": run.virtual_s, "host_cpu_s": run.host_cpu_s,
                                "interrupts": run.interrupts}
        prov["variation"] = spec["variation"]
        from testbed.trial import tool_versions  # the guest ran the host's own binaries (Mininet: deferred)
        prov["tools"] = tool_versions()
        prov_path.write_text(json.dumps(prov, indent=2))
