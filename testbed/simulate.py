"""One simulated trial: run the paper's ns-3 model with the cell's knobs and the trial index as its
RNG run, then write the standard trial layout (docs/trial-format.md).

The simulator writes its raw counters (wlan.json) into <trial>.partial; provenance.json records the
model binary, its command line and RNG run and the paper's own consistency checks, summary.json the
metrics (analysis/wlan.py). testbed/run.py owns the .partial directory, its rename and the clean-up
on failure or interrupt, exactly as for measured trials. No kernel feature, VM or root is involved.
"""
from __future__ import annotations

import json
import logging
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from analysis import require_valid
from sim import build
from tcprepro import CHECKOUT
from testbed import cleanup

log = logging.getLogger("tcprepro.trial")
RAW = "wlan.json"
# The scenario's fields, in the model's option names (sim/wlan/README.md).
OPTIONS = {"down": "down", "up": "up", "max_tx_attempts": "maxTxAttempts", "ap_queue_pkts": "apQueue",
           "scheduler": "sched", "queue_split": "queueSplit", "ack_queue_pkts": "ackQueue", "tcp": "tcp",
           "mac_queue_pkts": "macQueue", "sta_queue_pkts": "staQueue", "host_queue_pkts": "hostQueue",
           "min_rto_s": "minRto", "delack_timeout_s": "delAckTimeout", "traffic_start_s": "trafficStart",
           "start_jitter_s": "startJitter", "seed": "seed"}


def model_name(scenario: dict[str, Any]) -> str:
    """The sim/build.py model a scenario runs (its `model` field names the binary)."""
    return str(scenario["model"])


def command(binary: Path, spec: dict[str, Any], out: Path) -> list[str]:
    """The model's command line for one trial: every scenario field, the profile's window, the run."""
    sc = spec["scenario"]
    argv = [str(binary)]
    for field, option in OPTIONS.items():
        if field in sc:
            argv.append(f"--{option}={sc[field]}")
    argv += [f"--dataWeight={sc['weights']['data']}", f"--ackWeight={sc['weights']['ack']}",
             f"--duration={spec['duration_s']}", f"--warmup={spec['warmup_s']}", f"--run={int(spec['trial'])}",
             f"--out={out}"]
    return argv


def checks(spec: dict[str, Any], raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The paper's end-of-run consistency checks (Section II: active stations and connections, the
    rate of every frame on the air, no RTS/CTS) and the model's own invariants, as fidelity records."""
    sc = spec["scenario"]
    stations = int(sc["down"]) + int(sc["up"])
    data_modes = {m.split(":")[0] for x in ("ap", "sta") for m in str(raw.get(f"phy_{x}_data_modes", "")).split(",")
                  if m}
    rts_cts = sum(int(raw.get(f"phy_{x}_tx_{k}", 0)) for x in ("ap", "sta") for k in ("rts", "cts"))
    mac_drops = {k: sum(int(raw.get(f"mac_{x}_{k}_drops", 0)) for x in ("ap", "sta")) for k in ("expired", "enqueue")}
    failed = sum(int(raw.get(f"mac_{x}_tx_failed", 0)) for x in ("ap", "sta"))
    final = sum(int(raw.get(f"mac_{x}_final_failed", 0)) for x in ("ap", "sta"))
    mt = int(sc["max_tx_attempts"])
    window = float(spec["duration_s"]) - float(spec["warmup_s"])

    def rec(name: str, configured: Any, measured: Any, ok: bool, unit: str = "", note: str = "") -> dict[str, Any]:
        r = {"name": name, "configured": configured, "measured": measured, "tolerance": 0, "unit": unit,
             "pass": bool(ok)}
        return {**r, "note": note} if note else r

    return [
        rec("stations_associated", stations, raw.get("stations_associated"),
            raw.get("stations_associated") == stations, "stations", "associated when traffic started"),
        rec("data_frame_rate", "DsssRate11Mbps", ",".join(sorted(data_modes)), data_modes == {"DsssRate11Mbps"},
            note="every unicast data frame on the air, AP and stations (no rate fallback)"),
        rec("rts_cts_frames", 0, rts_cts, rts_cts == 0, "frames"),
        rec("retry_limit", mt, raw.get("ns3_max_ssrc"), raw.get("ns3_max_ssrc") == mt, "attempts",
            "MaxSsrc as set on every station manager"),
        rec("attempts_per_frame", "M_t=1: every failed attempt is final" if mt == 1 else "final <= failed",
            f"failed {failed}, final {final}", final == failed if mt == 1 else final <= failed,
            note="MaxSsrc counts attempts: with one attempt no frame is retransmitted"),
        rec("mac_queue_expired_drops", 0, mac_drops["expired"], mac_drops["expired"] == 0, "MPDUs"),
        rec("mac_queue_overflow_drops", 0, mac_drops["enqueue"], mac_drops["enqueue"] == 0, "MPDUs",
            "flow control keeps packets in the queue discs"),
        rec("metric_window", window, raw.get("window_s"), raw.get("window_s") == window, "s"),
    ]


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
    argv = command(binary.path, spec, partial)
    log.info("trial %s/%s/%d: %s", spec["paper"], spec["cell"], spec["trial"], " ".join(argv))
    t0 = time.monotonic()
    # The model dies with this runner, whatever ends it (setpriv: parent-death signal).
    proc = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
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
    raw = json.loads((partial / RAW).read_text())
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
        "fidelity": checks(spec, raw),
        "timing": {"simulation_s": round(elapsed, 3), "simulator_run_s": raw.get("wall_clock_s")},
    }
    (partial / "provenance.json").write_text(json.dumps(prov, indent=2))
    log.info("simulated %s s in %.1f s of wall time", spec["duration_s"], elapsed)
    return prov



def finalize(partial: Path, final_dir: Path) -> dict[str, Any]:
    """summary.json from wlan.json and provenance.json, validated; then the rename into place."""
    from analysis import wlan

    prov = json.loads((partial / "provenance.json").read_text())
    require_valid(prov, "provenance")
    summary = wlan.summarize(json.loads((partial / "spec.json").read_text()), json.loads((partial / RAW).read_text()),
                             prov)
    require_valid(summary, "summary")
    (partial / "summary.json").write_text(json.dumps(summary, indent=2))
    (partial / cleanup.OWNER_FILE).unlink(missing_ok=True)
    if final_dir.exists():
        shutil.rmtree(final_dir)
    partial.rename(final_dir)
    return summary
