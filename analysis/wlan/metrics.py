"""802.11b fairness paper: one simulated trial's metrics, from the model's raw counters (wlan.json).

Pure functions on the raw dict, so each number can be checked by hand. The paper's definitions:
goodput is "the throughput at TCP layer, excluding retransmitted packets" (bytes delivered in order
to the receiving application, in packets of one segment's payload, over the metric window); the
goodput ratio is the overall downlink goodput over the overall uplink goodput; the loss
probability is "estimated exploiting TCP packet retransmissions": retransmitted DATA segments over
DATA segments sent. The model also says where DATA was lost (AP buffer, MAC retry limit, the
sender's own interface queue), which the paper could only infer.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analysis.numbers import finite
from analysis.summarize import summary_document

DIRECTIONS = ("down", "up")
CLASSES = ("data", "ack", "other")
# The model's own derived numbers are recomputed here; a larger disagreement is a bug, reported.
AGREEMENT = 1e-6


def goodput_pkts_s(rx_bytes: float, window_s: float, segment_bytes: int) -> float:
    """Packets of one full segment's payload per second."""
    return rx_bytes / segment_bytes / window_s


def goodput_kbit_s(rx_bytes: float, window_s: float) -> float:
    return rx_bytes * 8 / 1000 / window_s


def ratio(down: float, up: float) -> float | None:
    """Downlink over uplink goodput; None when the uplink delivered nothing (the ratio is unbounded)."""
    return down / up if up > 0 else None


def loss_probability(retransmitted: int, sent: int) -> float | None:
    """Retransmitted DATA segments over DATA segments sent; None when nothing was sent."""
    return retransmitted / sent if sent > 0 else None


def share(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def jain_index(values: Iterable[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all flows get the same, 1/n when one gets all."""
    xs = [float(v) for v in values]
    sq = sum(x * x for x in xs)
    return sum(xs) ** 2 / (len(xs) * sq) if xs and sq > 0 else None


def direction_totals(raw: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per direction, the flows' counters summed: what every per-direction metric derives from."""
    keys = ("rx_bytes", "data_sent", "data_retx", "rto_events", "recovery_events")
    out = {d: {k: 0 for k in (*keys, "flows")} for d in DIRECTIONS}
    for f in raw["flows"]:
        tot = out[f["direction"]]
        tot["flows"] += 1
        for k in keys:
            tot[k] += int(f[k])
    return out


def flow_ids(raw: dict[str, Any]) -> dict[int, str]:
    """The model's flow number (its station) -> our flow id: down1.., up1.. in station order."""
    seen = {d: 0 for d in DIRECTIONS}
    ids = {}
    for f in sorted(raw["flows"], key=lambda f: int(f["station"])):
        seen[f["direction"]] += 1
        ids[int(f["id"])] = f"{f['direction']}{seen[f['direction']]}"
    return ids


def trial_metrics(raw: dict[str, Any]) -> dict[str, float | None]:
    """Every per-trial number the figures and claims read, by name (None: cannot be computed)."""
    window, seg = float(raw["window_s"]), int(raw["tcp_segment_bytes"])
    tot = direction_totals(raw)
    m: dict[str, float | None] = {}
    gp = {d: goodput_pkts_s(tot[d]["rx_bytes"], window, seg) for d in DIRECTIONS}
    for d in DIRECTIONS:
        t = tot[d]
        m[f"{d}_goodput_pkts_s"] = gp[d]
        m[f"{d}_goodput_kbit_s"] = goodput_kbit_s(t["rx_bytes"], window)
        m[f"{d}_loss_prob"] = loss_probability(t["data_retx"], t["data_sent"])
        for k in ("data_sent", "data_retx", "rto_events", "recovery_events"):
            m[f"{d}_{k}"] = t[k]
        per_flow = [goodput_pkts_s(int(f["rx_bytes"]), window, seg) for f in raw["flows"] if f["direction"] == d]
        m[f"{d}_jain"] = jain_index(per_flow)
    m["total_goodput_pkts_s"] = gp["down"] + gp["up"]
    m["total_goodput_kbit_s"] = goodput_kbit_s(tot["down"]["rx_bytes"] + tot["up"]["rx_bytes"], window)
    m["ratio_down_up"] = ratio(gp["down"], gp["up"])
    # Where DATA was lost. At the AP's wireless side every DATA packet is downlink; stations send
    # uplink DATA (downlink receivers send pure ACKs only).
    m["down_loss_ap_queue"] = share(int(raw["ap_qdisc_drop_data"]), tot["down"]["data_sent"])
    m["down_loss_mac"] = share(int(raw["mac_ap_retry_drops_data"]), tot["down"]["data_sent"])
    m["up_loss_mac"] = share(int(raw["mac_sta_retry_drops_data"]), tot["up"]["data_sent"])
    m["up_loss_sta_queue"] = share(int(raw["sta_qdisc_drop_data"]), tot["up"]["data_sent"])
    # The AP's queues: what went where (the scheduler's separation) and what the WRR served.
    for q in ("q1", "q2"):
        for op in ("enq", "deq", "drop"):
            for c in CLASSES:
                m[f"ap_{q}_{op}_{c}"] = int(raw[f"ap_{q}_{op}_{c}"])
    served = sum(int(raw[f"ap_qdisc_deq_{c}"]) for c in CLASSES)
    m["ap_ack_share"] = share(int(raw["ap_qdisc_deq_ack"]), served)
    m["ap_drop_ack"] = int(raw["ap_qdisc_drop_ack"])
    # Cumulative ACKs make a dropped ACK nearly free for the uplink sender: the next one acknowledges
    # its segments too. This share is why an ACK queue that overflows cannot throttle the uplink.
    m["ap_ack_drop_frac"] = share(int(raw["ap_qdisc_drop_ack"]),
                                  int(raw["ap_qdisc_enq_ack"]) + int(raw["ap_qdisc_drop_ack"]))
    m["ap_drop_data"] = int(raw["ap_qdisc_drop_data"])
    m["mac_tx_failed_prob"] = raw.get("mac_tx_failed_prob")
    for x in ("ap", "sta"):
        for k in ("tx_failed", "final_failed", "retry_drops_data", "retry_drops_ack"):
            m[f"mac_{x}_{k}"] = int(raw[f"mac_{x}_{k}"])
    for k in ("adapt_mean_n_down", "adapt_mean_n_up", "adapt_final_data_weight", "adapt_final_ack_weight"):
        if k in raw:
            m[k] = raw[k]
    ids = flow_ids(raw)
    for f in raw["flows"]:
        fid = ids[int(f["id"])]
        m[f"{fid}.goodput_pkts_s"] = goodput_pkts_s(int(f["rx_bytes"]), window, seg)
        m[f"{fid}.loss_prob"] = loss_probability(int(f["data_retx"]), int(f["data_sent"]))
        m[f"{fid}.rto_events"] = int(f["rto_events"])
    return m


def disagreements(raw: dict[str, Any], metrics: dict[str, float | None]) -> list[str]:
    """Where the model's own derived numbers differ from ours (a bug in one of the two)."""
    pairs = [("down_goodput_pkts_s", "down_goodput_pkts_s"), ("up_goodput_pkts_s", "up_goodput_pkts_s"),
             ("ratio_down_up", "ratio_down_up"), ("down_loss_prob", "down_loss_prob"),
             ("up_loss_prob", "up_loss_prob")]
    out = []
    for ours, theirs in pairs:
        a, b = metrics.get(ours), raw.get(theirs)
        if a is None or b is None:
            if (a is None) != (b is None):
                out.append(f"{ours}: ours {a}, the model's {b}")
            continue
        if abs(a - b) > AGREEMENT * max(1.0, abs(a), abs(b)):
            out.append(f"{ours}: ours {a:.6g}, the model's {b:.6g}")
    return out


def summarize(spec: dict[str, Any], raw: dict[str, Any], prov: dict[str, Any]) -> dict[str, Any]:
    """summary.json of a simulated trial (analysis/schemas/summary.schema.json)."""
    metrics = trial_metrics(raw)
    invalid, warnings = [], []
    for chk in prov.get("fidelity", []):
        if chk.get("pass") is False:
            invalid.append(f"check {chk['name']}: measured {chk.get('measured')}, expected {chk.get('configured')}")
        elif chk.get("pass") is None:
            warnings.append(f"check {chk['name']}: not measured ({chk.get('note', '')})")
    warnings += [f"differs from the model's own value: {d}" for d in disagreements(raw, metrics)]
    ids = flow_ids(raw)
    window, seg = float(raw["window_s"]), int(raw["tcp_segment_bytes"])
    flows = []
    for f in sorted(raw["flows"], key=lambda f: int(f["station"])):
        fid = ids[int(f["id"])]
        if int(f["rx_bytes"]) == 0:
            warnings.append(f"{fid} delivered nothing in the metric window (starved)")
        flows.append({"id": fid, "kind": "bulk", "direction": f["direction"], "station": int(f["station"]),
                      "src": f["src"], "dst": f["dst"], "port": int(f["port"]), "start_s": f["start_s"],
                      "rx_bytes": int(f["rx_bytes"]),
                      "goodput_pkts_s": goodput_pkts_s(int(f["rx_bytes"]), window, seg),
                      "goodput_kbit_s": goodput_kbit_s(int(f["rx_bytes"]), window),
                      "data_sent": int(f["data_sent"]), "data_retx": int(f["data_retx"]),
                      "loss_prob": loss_probability(int(f["data_retx"]), int(f["data_sent"])),
                      "rto_events": int(f["rto_events"]), "recovery_events": int(f["recovery_events"])})
    timing = {k: float(v) for k, v in (prov.get("timing") or {}).items() if finite(v) and v >= 0}
    return summary_document(spec, invalid, warnings,
                            {k: (int(v) if isinstance(v, int) else float(v)) for k, v in metrics.items() if finite(v)},
                            flows, timing)
