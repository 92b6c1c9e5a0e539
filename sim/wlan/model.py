"""The wlan_dcf model's side of a simulated trial (sim/wlan/README.md): how a scenario becomes its
command line, the flows it numbers, the scenario rules the schema cannot state, the paper's
consistency checks on its raw counters, and the metrics (analysis/wlan/metrics.py). testbed/simulate.py
runs any model through such a module (sim/build.py names it per model)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

RAW = "wlan.json"
# The scenario's fields, in the model's option names (sim/wlan/README.md).
OPTIONS = {"down": "down", "up": "up", "max_tx_attempts": "maxTxAttempts", "ap_queue_pkts": "apQueue",
           "scheduler": "sched", "queue_split": "queueSplit", "ack_queue_pkts": "ackQueue", "tcp": "tcp",
           "mac_queue_pkts": "macQueue", "sta_queue_pkts": "staQueue", "host_queue_pkts": "hostQueue",
           "min_rto_s": "minRto", "delack_timeout_s": "delAckTimeout", "traffic_start_s": "trafficStart",
           "start_jitter_s": "startJitter", "seed": "seed", "frame_error_rate": "frameErrorRate",
           "station_radius_m": "radius", "aifsn": "aifsn"}


def command(binary: Path, spec: dict[str, Any], out: Path) -> list[str]:
    """The model's command line for one trial: every scenario field, the profile's window, the run.
    `out` should be "." with the model run in the output folder: ns-3's CommandLine keeps a string
    value only up to its first space, so a longer path could send the output elsewhere."""
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

    def rec(name: str, configured: Any, measured: Any, ok: bool, unit: str = "", note: str = "",
            tolerance: float = 0) -> dict[str, Any]:
        r = {"name": name, "configured": configured, "measured": measured, "tolerance": tolerance, "unit": unit,
             "pass": bool(ok)}
        return {**r, "note": note} if note else r

    channel = []
    if float(sc.get("frame_error_rate") or 0) > 0:
        # the realised share of full-size frames lost to the channel model, within five standard
        # errors of the configured rate (binomial over the frames received in the window)
        p, seen = float(sc["frame_error_rate"]), int(raw.get("phy_rx_full_frames") or 0)
        lost = int(raw.get("phy_rx_full_frames_channel_lost") or 0)
        share = lost / seen if seen else None
        bound = 5 * (p * (1 - p) / seen) ** 0.5 if seen else 0.0
        channel.append(rec("channel_frame_errors", p, None if share is None else round(share, 5),
                           share is not None and abs(share - p) <= bound, "of full-size frames",
                           "lost to the channel besides collisions; tolerance: 5 standard errors",
                           round(bound, 5)))
    return [
        *channel,
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


# Runs proven equal (testbed/proven_runs.py; sim/wlan/README.md). M_t reaches a run only through
# ns-3 3.37's retry decision, WifiRemoteStationManager::NeedRetransmission (retry count < MaxSsrc, or
# MaxSlrc; the only reader of either), and every "give up" it returns is followed by
# MacTxFinalDataFailed or MacTxFinalRtsFailed, which run_final_failed counts over the whole run. A run
# with none decided "retransmit" every time; under a larger M_t each of those decisions (count <
# M_t) is again "retransmit", so that run is this one, event for event. The association phase uses
# 7 attempts in every cell (M_t applies from trafficStart), so it is the same in both.
M_T_FIELDS = ("maxTxAttempts", "ns3_max_ssrc")


def proving_scenarios(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    """The scenarios whose run, when its raw output shows proof(), is this scenario's run: the same
    with a smaller M_t, the largest first."""
    mt = int(scenario["max_tx_attempts"])
    return [{**scenario, "max_tx_attempts": m} for m in range(mt - 1, 0, -1)]


def proof(raw: dict[str, Any]) -> str | None:
    """The proof a run's raw output gives, as recorded; None when it gives none."""
    if raw.get("run_final_failed") != 0 or not isinstance(raw.get("maxTxAttempts"), int):
        return None
    return (f"run_final_failed = 0 at M_t = {raw['maxTxAttempts']}: no frame was given up in the whole run, so "
            "every retry decision was 'retransmit', as it is under any larger M_t")


def carried_over(raw: dict[str, Any], scenario: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """This scenario's raw output, from the proven run's: the same but for the fields that name M_t
    (the limit set on every station manager is the scenario's); and {field: [before, after]}."""
    mt = int(scenario["max_tx_attempts"])
    rewritten = {k: [raw[k], mt] for k in M_T_FIELDS if k in raw}
    return {**raw, **{k: mt for k in rewritten}}, rewritten


def priority(scenario: dict[str, Any]) -> int:
    """The workflow runs smaller M_t first (rule trial's priority), so that a run which can prove a
    larger M_t's has finished when that one's turn comes."""
    return -int(scenario["max_tx_attempts"])


def flows(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    """The flows as the model numbers them: station k carries flow k, downlink receivers first."""
    down, up = int(scenario["down"]), int(scenario["up"])
    return ([{"id": f"down{i}", "kind": "bulk", "direction": "down", "station": i} for i in range(1, down + 1)]
            + [{"id": f"up{i}", "kind": "bulk", "direction": "up", "station": down + i} for i in range(1, up + 1)])


def problems(scenario: dict[str, Any]) -> list[tuple[str | None, str]]:
    """Rules of a scenario the schema cannot say: (the field at fault, or None for the scenario; what
    is wrong)."""
    out: list[tuple[str | None, str]] = []
    if int(scenario["down"]) + int(scenario["up"]) < 1:
        out.append((None, "down and up are both 0: the WLAN needs at least one flow"))
    if "ack_queue_pkts" in scenario and scenario.get("queue_split", "each") != "each":
        out.append(("ack_queue_pkts", "applies only to queue_split each (shared has one limit)"))
    return out
