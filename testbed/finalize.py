"""Turn a measured trial directory into a finished one, on the host at native speed.

tcptrace on the sender captures, the fidelity checks that need the whole run (rate at saturation,
queued packet size, a delay-based sender's delay signal against the queue), the summary; then the
atomic rename of <trial>.partial into place.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from analysis import require_valid
from testbed import cleanup, fidelity, shaping, trial_dir


def _tcptrace(out: Path) -> None:
    for pcap in sorted((out / "pcap").glob("*.pcap")):
        proc = subprocess.run(["tcptrace", "-l", "-n", "-r", str(pcap)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"tcptrace {pcap.name} failed: {proc.stderr.strip()[-300:]}")
        (out / f"tcptrace-{pcap.stem}.txt").write_text(proc.stdout)


def finalize(partial: Path, final_dir: Path, may_replace: trial_dir.Fingerprint | None = None) -> dict[str, Any]:
    """Analyse `partial` (raw files + provenance.json), write summary.json, move it to final_dir,
    replacing only the folder `may_replace` names there (testbed/trial_dir.py)."""
    from analysis.summarize import measurement_window, summarize_trial  # pandas: host side only

    spec = json.loads((partial / "spec.json").read_text())
    prov_path = partial / "provenance.json"
    prov = json.loads(prov_path.read_text())
    _tcptrace(partial)
    forward = shaping.DirectionSpec.from_config(spec["scenario"]["bottleneck"]["forward"])
    window = measurement_window(spec, prov)
    qdisc = partial / "qdisc.csv"
    tol = fidelity.tolerances(prov["kernel"]["where"])
    calib = prov.get("calibration") or {}
    checks = [fidelity.saturation_rate_check(qdisc, forward, window, tol),
              fidelity.worst_window_rate_check(qdisc, forward, window, tol),
              fidelity.packet_size_check(qdisc),
              fidelity.owd_bound_check(partial, spec["flows"], forward, window,
                                       calib.get("netem_delay_ms", {}).get("forward"), tol,
                                       float((calib.get("jitter_ms") or {}).get("forward", 0))),
              fidelity.delay_signal_check(partial, spec, prov, forward),
              fidelity.capture_check(partial)]
    if prov["kernel"]["where"] == "uml":
        checks.append(fidelity.virtual_time_check(partial, spec, prov))
    prov["fidelity"] += [c for c in checks if c is not None]
    prov = json.loads(json.dumps(prov, default=str))
    require_valid(prov, "provenance")
    prov_path.write_text(json.dumps(prov, indent=2))
    summary = summarize_trial(partial)      # failed fidelity checks become invalid_reasons here
    summary.update({"timing": prov.get("timing", {}), "kernel": prov["kernel"]})
    require_valid(summary, "summary")
    (partial / "summary.json").write_text(json.dumps(summary, indent=2))
    if not spec["scenario"].get("keep_pcap"):
        shutil.rmtree(partial / "pcap", ignore_errors=True)
    (partial / cleanup.OWNER_FILE).unlink(missing_ok=True)
    trial_dir.install(partial, final_dir, may_replace)
    return summary
