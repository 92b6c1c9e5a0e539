"""One simulated trial: run the scenario's ns-3 model with the cell's knobs and the trial index as
its RNG run, then write the standard trial layout (docs/trial-format.md).

The model's adapter (sim/build.py names it, e.g. sim/wlan/model.py) gives the command line, the raw
counters' file the model writes into <trial>.partial, the consistency checks provenance.json
records beside the binary, command line and RNG run, and summary.json's metrics. testbed/run.py owns
the .partial directory, its rename and the clean-up on failure or interrupt, exactly as for measured
trials. No kernel feature, VM or root is involved.
"""
from __future__ import annotations

import json
import logging
import platform
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from analysis import require_valid
from analysis.wlan import metrics as wlan_metrics
from configuration import CHECKOUT
from sim import build
from testbed import cleanup, proven_runs, trial_dir

log = logging.getLogger("tcprepro.trial")


def model_name(scenario: dict[str, Any]) -> str:
    """The sim/build.py model a scenario runs (its `model` field names the binary)."""
    return str(scenario["model"])


def measure(spec: dict[str, Any], partial: Path, binary: build.Binary) -> dict[str, Any]:
    """Run the model into `partial`; write provenance.json; return it. Interrupts kill the model."""
    handler = logging.FileHandler(partial / "trial.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        return _measure(spec, partial, binary)
    finally:
        log.removeHandler(handler)
        handler.close()


def _measure(spec: dict[str, Any], partial: Path, binary: build.Binary) -> dict[str, Any]:
    model = build.adapter(model_name(spec["scenario"]))
    # The model runs in the trial's folder and writes there (--out=.): ns-3's CommandLine reads a
    # string value only up to its first space, so a path on its command line would be cut short at a
    # space in the results folder's name, and the model would write outside it.
    argv = model.command(binary.path, spec, Path("."))
    log.info("trial %s/%s/%d: %s (in %s)", spec["paper"], spec["cell"], spec["trial"], " ".join(argv), partial)
    t0 = time.monotonic()
    proven = proven_runs.find(spec, partial, binary.sha256, model)
    if proven is not None:
        raw, derived = proven_runs.take(proven, spec, partial, model)
        log.info("not simulated: the run of %s is this trial's (%s)", derived["from"], derived["proof"])
        return _provenance(spec, partial, binary, model, argv, raw, time.monotonic() - t0, derived)
    # The model dies with this runner, whatever ends it (setpriv: parent-death signal).
    proc = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=partial)
    try:
        output, _ = proc.communicate()
    except BaseException:
        proc.kill()
        proc.wait()
        log.error("simulation stopped: the trial was interrupted")
        raise
    elapsed = time.monotonic() - t0
    for line in output.strip().splitlines():
        log.info("model: %s", line)
    if proc.returncode != 0:
        raise RuntimeError(f"{binary.path.name} exited {proc.returncode}: {output.strip()[-500:]}")
    raw = build.read_output(partial / model.RAW)
    prov = _provenance(spec, partial, binary, model, argv, raw, elapsed)
    log.info("simulated %s s in %.1f s of wall time", spec["duration_s"], elapsed)
    return prov


def _provenance(spec: dict[str, Any], partial: Path, binary: build.Binary, model: ModuleType, argv: list[str],
                raw: dict[str, Any], elapsed: float, derived: dict[str, Any] | None = None) -> dict[str, Any]:
    """provenance.json of a simulated trial, written into `partial`. A derived trial's timing has no
    simulator run: its run is the one `derived` names."""
    final_dir = partial.with_name(partial.name.removesuffix(".partial"))
    argv_final = [a if not a.startswith("--out=") else f"--out={final_dir}" for a in argv]
    prov = {
        "schema": "tcprepro.provenance/1",
        "kind": "simulation",
        "kernel": {"release": platform.release(), "where": "host", "accel": None},
        "paper": spec["paper"], "cell": spec["cell"], "trial": spec["trial"],
        "config_sha256": spec.get("config_sha256"),
        "simulator": {"name": "ns-3", "version": f"ns-3 {raw.get('ns3_version')}", **binary.provenance()},
        "command": [str(Path(argv_final[0]).relative_to(CHECKOUT)), *argv_final[1:]],
        "rng": {"seed": int(spec["scenario"]["seed"]), "run": int(spec["trial"])},
        "tools": {"python": platform.python_version(), "compiler": binary.compiler},
        "fidelity": model.checks(spec, raw),
        "timing": {"simulation_s": round(elapsed, 3),
                   "simulator_run_s": None if derived else raw.get("wall_clock_s")},
        **({"derived": derived} if derived else {}),
    }
    (partial / "provenance.json").write_text(json.dumps(prov, indent=2))
    return prov


# summary.json of a simulated trial per model: its paper's metrics (analysis/), which the model's
# adapter under sim/ does not import, as the simulator adapters sit below analysis.
SUMMARIES: dict[str, Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], dict[str, Any]]] = {
    "wlan_dcf": wlan_metrics.summarize,
}

def finalize(partial: Path, final_dir: Path, may_replace: trial_dir.Fingerprint | None = None) -> dict[str, Any]:
    """summary.json from the model's raw counters and provenance.json, validated; then the rename
    into place, replacing only the folder `may_replace` names there (testbed/trial_dir.py)."""
    prov = json.loads((partial / "provenance.json").read_text())
    require_valid(prov, "provenance")
    spec = json.loads((partial / "spec.json").read_text())
    name = model_name(spec["scenario"])
    model = build.adapter(name)
    summary = SUMMARIES[name](spec, build.read_output(partial / model.RAW), prov)
    require_valid(summary, "summary")
    (partial / "summary.json").write_text(json.dumps(summary, indent=2))
    (partial / cleanup.OWNER_FILE).unlink(missing_ok=True)
    trial_dir.install(partial, final_dir, may_replace)
    return summary
