"""Build a trial's summary.json from its raw files (docs/trial-format.md).

Generic on purpose: it knows flow kinds (bulk, voip) and the bottleneck qdisc, not papers. A
paper adds its own metrics by merging into `metrics`; every key there is aggregated by the cell
rule, so per-flow numbers appear twice: in `flows` (for people) and flattened as
`<flow id>.<name>` (for aggregation).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics as m
from analysis import parsers as p
from analysis import validate
from analysis.numbers import number

SUMMARY_SCHEMA = "tcprepro.summary/1"
# The Collateral Damage paper counts queue-full events over 60 s in the middle of each trial.
QUEUE_EVENT_WINDOW_S = 60.0

Number = float | int


@dataclass
class _Acc:
    """What the summariser collects while it walks the raw files."""

    metrics: dict[str, Number] = field(default_factory=dict)
    flows: list[dict[str, Any]] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def put(self, name: str, value: Any) -> None:
        """Record a metric unless it is missing or not finite (summary metrics are numbers)."""
        if value is None or isinstance(value, bool):
            return
        if isinstance(value, float | np.floating) and not np.isfinite(value):
            return
        self.metrics[name] = int(value) if isinstance(value, int | np.integer) else float(value)


def summarize_trial(trial_dir: Path | str) -> dict[str, Any]:
    """summary.json content of one trial directory (spec.json and provenance.json required)."""
    d = Path(trial_dir)
    spec = json.loads((d / "spec.json").read_text())
    acc = _Acc()
    prov = _load_provenance(d, acc)
    _check_fidelity(prov, acc)
    unfinished = prov.get("unfinished_transfers") or {}
    for fid in unfinished.get("flows", []):
        acc.invalid.append(f"{fid}: fixed-size transfer not done by the cell's bound of "
                           f"{unfinished['bound_s']:.0f} s (stopped there)")
    port_base = prov.get("port_base")
    probe = _load_probe(d, acc)
    bulk = [f for f in spec.get("flows", []) if f.get("kind") == "bulk"]
    voip = [f for f in spec.get("flows", []) if f.get("kind") == "voip"]
    tcptrace = _load_tcptraces(d, {int(f.get("pair", 0)) for f in bulk}, acc)
    window = measurement_window(spec, prov)
    _summarize_bulk(d, bulk, port_base, tcptrace, probe, acc, window[0], prov.get("realtime_minus_monotonic_s"),
                    prov.get("endpoints"))
    _summarize_voip(d, voip, acc, window)
    _summarize_qdisc(d, spec, prov, acc, window)
    return summary_document(spec, acc.invalid, acc.warnings, acc.metrics, acc.flows,
                            {k: v for k, v in (prov.get("timing") or {}).items() if number(v)})


def summary_document(spec: dict[str, Any], invalid: list[str], warnings: list[str], metrics: dict[str, Any],
                     flows: list[dict[str, Any]], timing: dict[str, float]) -> dict[str, Any]:
    """summary.json's layout (analysis/schemas/summary.schema.json), for measured and simulated
    trials alike: valid exactly when no check made the trial invalid."""
    return {
        "schema": SUMMARY_SCHEMA,
        "paper": spec["paper"],
        "cell": spec["cell"],
        "trial": int(spec["trial"]),
        "profile": spec.get("profile"),
        "valid": not invalid,
        "invalid_reasons": invalid,
        "warnings": warnings,
        "metrics": metrics,
        "flows": flows,
        "timing": timing,
    }


def write_summary(trial_dir: Path | str) -> Path:
    """Summarise, validate against the schema and write `<trial_dir>/summary.json`."""
    doc = summarize_trial(trial_dir)
    validate(doc, "summary")
    out = Path(trial_dir) / "summary.json"
    out.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    return out


# ------------------------------------------------------------------------------------------


def measurement_window(spec: dict[str, Any], prov: dict[str, Any]) -> tuple[float | None, float | None]:
    """[t0, t0 + duration]: the nominal trial. What generators do while starting and exiting falls
    outside it (under QEMU TCG their CPU bursts can stall the emulated link for a moment)."""
    t0, duration = prov.get("t0_monotonic"), spec.get("duration_s")
    if number(t0) and number(duration):
        return float(t0), float(t0) + float(duration)
    return None, None


def voip_in_window(log: p.VoipLog, window: tuple[float | None, float | None]) -> tuple[pd.DataFrame, int]:
    """Packets whose send slot lies in the window, and how many slots the sender had there
    (slot = schedule_start + seq * interval, so lost packets are placed too)."""
    t_from, t_to = window
    start, interval = log.meta.get("schedule_start"), log.meta.get("interval_ms")
    if t_from is None or t_to is None or not number(start) or not number(interval):
        return log.packets, log.sent
    slots = float(start) + np.arange(log.sent) * float(interval) / 1000.0
    inside = (slots >= t_from) & (slots <= t_to)
    pk = log.packets
    pk_slots = float(start) + pk["seq"].to_numpy() * float(interval) / 1000.0
    return pk[(pk_slots >= t_from) & (pk_slots <= t_to)], int(inside.sum())


def _load_provenance(d: Path, acc: _Acc) -> dict[str, Any]:
    path = d / "provenance.json"
    if not path.exists():
        acc.invalid.append("missing provenance.json")
        return {}
    return json.loads(path.read_text())


def _check_fidelity(prov: dict[str, Any], acc: _Acc) -> None:
    """A failed check (pass false) invalidates the trial; one not measured (pass null) is a warning."""
    for chk in prov.get("fidelity", []):
        if chk.get("pass") is None:
            acc.warnings.append(fidelity_line(chk))
        elif chk["pass"] is False:
            acc.invalid.append(fidelity_line(chk))


def fidelity_line(chk: dict[str, Any]) -> str:
    """What a summary says of a check that failed (an invalid reason) or was not measured (a
    warning); every such line starts with `fidelity <name>:`."""
    if chk.get("pass") is None:
        note = f" ({chk['note']})" if chk.get("note") else ""
        return f"fidelity {chk.get('name')}: not measured{note}"
    tol = chk.get("tolerance")
    tol = tol if isinstance(tol, str) else f"± {tol}"
    return (f"fidelity {chk.get('name')}: measured {chk.get('measured')} {chk.get('unit', '')}, "
            f"configured {chk.get('configured')} {tol}").rstrip()


def _load_probe(d: Path, acc: _Acc) -> pd.DataFrame | None:
    path = d / "tcp_probe.trace"
    if not path.exists():
        acc.invalid.append("missing tcp_probe.trace")
        return None
    tr = p.read_tcp_probe(path)
    acc.put("tcp_probe_lost_records", tr.lost_records)
    if tr.lost_records:
        acc.warnings.append(f"tcp_probe ring buffer lost {tr.lost_records} events")
    if tr.unparsed_lines:
        acc.warnings.append(f"tcp_probe.trace: {tr.unparsed_lines} lines not understood")
    return tr.frame


def _load_tcptraces(d: Path, pairs: set[int], acc: _Acc) -> dict[int, list[p.TcptraceConnection]]:
    out = {}
    for pair in sorted(pairs):
        path = d / f"tcptrace-s{pair}.txt"
        if path.exists():
            out[pair] = p.read_tcptrace(path)
        else:
            acc.invalid.append(f"missing {path.name}")
    return out


def _flow_port(flow: dict[str, Any], bulk_index: int, port_base: int | None) -> int | None:
    """Destination port of a flow: port_base + port_offset (bulk i defaults to offset 1 + i)."""
    if port_base is None:
        return None
    return int(port_base) + int(flow.get("port_offset", 1 + bulk_index))


def _summarize_bulk(
    d: Path,
    flows: list[dict[str, Any]],
    port_base: int | None,
    tcptrace: dict[int, list[p.TcptraceConnection]],
    probe: pd.DataFrame | None,
    acc: _Acc,
    t0: float | None = None,
    offset: float | None = None,
    endpoints: dict[str, Any] | None = None,
) -> None:
    endpoints = endpoints or {}
    goodput: list[float] = []
    retrans: list[int] = []
    rexmt: list[int] = []
    for i, f in enumerate(flows):
        fid = f["id"]
        rec: dict[str, Any] = {"id": fid, "kind": "bulk", "cc": f.get("cc")}
        port = _flow_port(f, i, port_base)
        rec["port"] = port
        fixed = bool(f.get("bytes"))
        # iperf2 for fixed-size flows, and for timed ones where the trial chose it (bulk_generator)
        iperf2 = fixed or (d / f"iperf2-{fid}-client.csv").exists()
        ip = None if iperf2 else _load_iperf(d, fid, acc)
        sports = ip.local_ports if ip and ip.local_ports else None
        if iperf2:
            server = _load_iperf2(d, fid, "server", acc)
            client = _load_iperf2(d, fid, "client", acc)
            if server is not None:
                rec["bytes_received"] = server.bytes
            if client is not None and client.local_port:
                sports = [client.local_port]
        if ip is not None:
            rec["retransmits"] = ip.retransmits
            rec["bytes_received"] = ip.bytes_received
            if ip.retransmits is not None:
                retrans.append(ip.retransmits)
        conns = tcptrace.get(int(f.get("pair", 0)))
        if conns is not None and port is not None:
            gp = m.goodput_from_tcptrace(conns, [port], sports)
            if not gp:
                acc.invalid.append(f"{fid}: no tcptrace connection to port {port}")
            else:
                rec["goodput_kbit_s"] = sum(g.goodput_kbit_s for g in gp)
                rec["rexmt_data_pkts"] = sum(g.rexmt_pkts for g in gp)
                rexmt.append(rec["rexmt_data_pkts"])
        elif ip is not None and m.iperf_goodput_kbit_s(ip) is not None:
            rec["goodput_kbit_s"] = m.iperf_goodput_kbit_s(ip)
            acc.warnings.append(f"{fid}: goodput from iperf3 (no tcptrace match)")
        if "goodput_kbit_s" in rec:
            goodput.append(rec["goodput_kbit_s"])
        if probe is not None and port is not None:
            flow_probe = m.probe_for_flow(probe, port, sports)
            rec.update(m.probe_stats(flow_probe))
        if fixed and t0 is not None and port is not None:
            rec["completion_time_s"] = _completion(d, f, port, t0, offset, endpoints.get(fid, {}).get("receiver"))
        if f.get("bytes") and rec.get("completion_time_s") is None:
            acc.invalid.append(f"{fid}: fixed-size transfer of {f['bytes']} bytes did not complete")
        for k in ("goodput_kbit_s", "retransmits", "rexmt_data_pkts", "completion_time_s", "srtt_median_ms",
                  "congestion_events", "cwnd_range_rel", "cwnd_cv", "cwnd_max"):
            acc.put(f"{fid}.{k}", rec.get(k))
        acc.flows.append(rec)
    if flows:
        # Aggregate goodput: the sum of per-flow rates (each over its own lifetime), as Table 1.
        if goodput:
            acc.put("goodput_kbit_s", sum(goodput))
            acc.put("goodput_kbyte_s", sum(goodput) / 8)
        if retrans:
            acc.put("retransmits", sum(retrans))
        if rexmt:
            acc.put("rexmt_data_pkts", sum(rexmt))


def _completion(d: Path, f: dict[str, Any], port: int, t0: float, offset: float | None,
                receiver: str | None) -> float | None:
    """Completion of a fixed-size flow from its sender's capture (pcap/s<pair>.pcap)."""
    pcap = d / "pcap" / f"s{int(f.get('pair', 0))}.pcap"
    if offset is None or receiver is None or not pcap.exists():
        return None
    acks = p.read_acks(pcap, receiver, port)
    acks["t"] = acks["t"] - offset
    return m.completion_time_from_acks(acks, int(f["bytes"]), t0 + float(f.get("start_s", 0)))


def _load_iperf2(d: Path, fid: str, side: str, acc: _Acc) -> p.Iperf2Report | None:
    path = d / f"iperf2-{fid}-{side}.csv"
    report = p.read_iperf2_csv(path) if path.exists() else None
    if report is None:
        acc.invalid.append(f"{fid}: no iperf2 {side} report ({path.name})")
    return report


def _load_iperf(d: Path, fid: str, acc: _Acc) -> p.IperfResult | None:
    path = d / f"iperf-{fid}.json"
    if not path.exists():
        acc.invalid.append(f"missing {path.name}")
        return None
    ip = p.read_iperf(path)
    if ip.error:
        acc.invalid.append(f"{fid}: iperf3 error: {ip.error}")
    return ip


def _summarize_voip(d: Path, flows: list[dict[str, Any]], acc: _Acc,
                    window: tuple[float | None, float | None] = (None, None)) -> None:
    owd: list[pd.Series] = []
    sent = lost = 0
    for f in flows:
        fid = f["id"]
        csv, js = d / f"voip-{fid}.csv", d / f"voip-{fid}.json"
        if not (csv.exists() and js.exists()):
            acc.invalid.append(f"missing voip-{fid}.csv/.json")
            continue
        log = p.read_voip(csv, js)
        packets, sent_in = voip_in_window(log, window)
        stats = m.owd_stats(packets["owd_ms"])
        loss = (sent_in - int(stats["count"] or 0)) / sent_in if sent_in else None
        rec = {"id": fid, "kind": "voip", "sent": sent_in, "received": stats["count"], "loss_frac": loss}
        rec |= {f"owd_{k}_ms": v for k, v in stats.items() if k != "count"}
        acc.flows.append(rec)
        if log.sent == 0:
            acc.invalid.append(f"{fid}: no packets sent")
        owd.append(packets["owd_ms"])
        sent += sent_in
        lost += max(0, sent_in - int(stats["count"] or 0))
        acc.put(f"{fid}.owd_median_ms", stats["median"])
        acc.put(f"{fid}.loss_frac", loss)
    if not owd:
        return
    pooled = m.owd_stats(pd.concat(owd, ignore_index=True))
    for k, v in pooled.items():
        if k != "count":
            acc.put(f"owd_{k}_ms", v)
    acc.put("voip_sent", sent)
    acc.put("voip_lost", lost)
    acc.put("voip_loss_frac", lost / sent if sent else None)


def _summarize_qdisc(d: Path, spec: dict[str, Any], prov: dict[str, Any], acc: _Acc,
                     window: tuple[float | None, float | None] = (None, None)) -> None:
    path = d / "qdisc.csv"
    if not path.exists():
        acc.invalid.append("missing qdisc.csv")
        return
    q = p.read_qdisc(path)
    if q.empty:
        acc.invalid.append("qdisc.csv has no samples")
        return
    t0 = prov.get("t0_monotonic")
    t0 = float(t0) if number(t0) else float(q["t"].min())
    duration = float(spec.get("duration_s") or (q["t"].max() - t0))
    w = min(QUEUE_EVENT_WINDOW_S, duration)
    mid_from, mid_to = t0 + (duration - w) / 2, t0 + (duration + w) / 2
    for role in sorted(q["role"].unique()):
        pre = f"q_{role}_"
        for k, v in m.queue_stats(q, role, *window).items():
            if k != "samples":
                acc.put(pre + k, v)
        acc.put(pre + "full_events", m.queue_full_events(q, role, *window).count)
        acc.put(pre + "full_events_per_min", m.queue_full_events(q, role, mid_from, mid_to).per_minute)
        acc.put(pre + "saturation_rate_kbit", m.saturation_rate_kbit(q, role, t_from=window[0], t_to=window[1]))
