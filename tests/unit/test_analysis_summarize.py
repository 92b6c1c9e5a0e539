"""analysis.summarize on a trial directory assembled from the real fixtures plus a hand-made VoIP log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis import validate
from analysis.summarize import summarize_trial, write_summary

DATA = Path(__file__).resolve().parents[1] / "data"
T0 = 426.0  # the fixture's traffic was running by then; the qdisc samples start at 426.039


def spec(**over: Any) -> dict[str, Any]:
    s = {
        "paper": "collateral", "cell": "cubic-rtt50-f1", "trial": 2, "profile": "smoke", "duration_s": 4,
        "params": {"cc": "cubic", "rtt_ms": 50, "flows": 1}, "scenario": {},
        "flows": [
            {"id": "bulk0", "kind": "bulk", "pair": 0, "cc": "cubic", "start_s": 0, "bytes": None,
             "port_offset": 1},
            {"id": "voip0", "kind": "voip", "pair": 1, "packet_bytes": 186, "interval_ms": 20,
             "start_s": 0, "port_offset": 50},
        ],
    }
    s.update(over)
    return s


def provenance(fidelity: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "schema": "tcprepro.provenance/1",
        "kernel": {"release": "6.18.44-fc-v657", "where": "host", "accel": None},
        "paper": "collateral", "cell": "cubic-rtt50-f1", "trial": 2,
        "config_sha256": "0" * 64, "port_base": 20000, "t0_monotonic": T0,
        "congestion_controls": {"cubic": {"impl": "builtin", "kernel_name": "cubic", "params": {},
                                          "object_sha256": None}},
        "sysctls": {"net.ipv4.tcp_no_metrics_save": 1},
        "qdiscs": {"r/rout": [{"kind": "htb"}, {"kind": "bfifo", "options": {"limit": 60000}}]},
        "offloads": {"s0/s0e": {"tso": False, "gso": False}},
        "tools": {"iperf3": "3.12", "tcptrace": "6.6.7"},
        "fidelity": fidelity if fidelity is not None else [
            {"name": "bottleneck_rate", "configured": 10000, "measured": 9962, "tolerance": 0.03,
             "unit": "kbit/s", "pass": True}],
        "timing": {"setup_s": 1.2, "teardown_s": 0.4, "traffic_s": 4.0, "note": None},
    }


def make_trial(root: Path, sp: dict[str, Any] | None = None, prov: dict[str, Any] | None = None) -> Path:
    d = root / "trial-2"
    d.mkdir()
    (d / "spec.json").write_text(json.dumps(sp or spec()))
    (d / "provenance.json").write_text(json.dumps(prov or provenance()))
    shutil.copy(DATA / "iperf_real.json", d / "iperf-bulk0.json")
    shutil.copy(DATA / "tcptrace_real.txt", d / "tcptrace-s0.txt")
    shutil.copy(DATA / "tcp_probe_real.trace", d / "tcp_probe.trace")
    shutil.copy(DATA / "qdisc_real.csv", d / "qdisc.csv")
    # 10 sent, seqs 3 and 7 lost, seq 5 duplicated; OWDs 25..95 ms
    rows = [(s, 426.0 + s * 0.02, 0.0, 25.0 + 10 * i) for i, s in enumerate([0, 1, 2, 4, 5, 6, 8, 9])]
    csv = "seq,t_send,t_recv,owd_ms\n" + "".join(f"{s},{ts},{ts + o / 1000},{o}\n" for s, ts, _, o in rows)
    csv += "5,426.1,426.2,999.0\n"
    (d / "voip-voip0.csv").write_text(csv)
    (d / "voip-voip0.json").write_text(json.dumps({"sent": 10, "packet_bytes": 186, "interval_ms": 20}))
    return d


def test_summary_metrics(tmp_path: Path) -> None:
    validate(provenance(), "provenance")
    s = summarize_trial(make_trial(tmp_path))
    validate(s, "summary")
    assert (s["paper"], s["cell"], s["trial"], s["valid"], s["invalid_reasons"]) == (
        "collateral", "cubic-rtt50-f1", 2, True, [])
    m = s["metrics"]
    gp_kbit = 4860973 * 8 / 4.083901 / 1000  # tcptrace data connection only, not the control one
    assert m["goodput_kbit_s"] == pytest.approx(gp_kbit)
    assert m["goodput_kbyte_s"] == pytest.approx(4860973 / 4.083901 / 1000)
    assert m["bulk0.goodput_kbit_s"] == pytest.approx(gp_kbit)
    assert (m["retransmits"], m["rexmt_data_pkts"], m["bulk0.retransmits"]) == (6, 6, 6)
    # VoIP: received OWDs 25, 35, ..., 95 (8 packets); 2 of 10 lost
    assert m["owd_median_ms"] == pytest.approx(60.0) and m["owd_mean_ms"] == pytest.approx(60.0)
    assert (m["owd_min_ms"], m["owd_max_ms"]) == (25.0, 95.0)
    assert m["owd_p95_ms"] == pytest.approx(25 + 0.95 * 7 * 10)
    assert (m["voip_sent"], m["voip_lost"], m["voip_loss_frac"]) == (10, 2, pytest.approx(0.2))
    assert m["voip0.loss_frac"] == pytest.approx(0.2)
    # queue: the fixture's bottleneck dropped 6 packets in 6 separate episodes
    assert (m["q_forward_drops"], m["q_forward_full_events"], m["q_forward_backlog_bytes_max"]) == (6, 6, 59046)
    q = pd.read_csv(DATA / "qdisc_real.csv")
    win = q[(q["t"] >= T0) & (q["t"] <= T0 + 4)]
    assert m["q_forward_full_events_per_min"] == pytest.approx(6 * 60 / (win["t"].max() - win["t"].min()))
    assert m["q_forward_saturation_rate_kbit"] == pytest.approx(10_000, rel=0.02)
    assert m["tcp_probe_lost_records"] == 0
    bulk, voip = s["flows"]
    assert (bulk["id"], bulk["cc"], bulk["port"], bulk["rexmt_data_pkts"]) == ("bulk0", "cubic", 20001, 6)
    assert bulk["cwnd_max"] == 42  # data socket only (port 40124 from iperf3's JSON)
    assert (voip["id"], voip["sent"], voip["received"]) == ("voip0", 10, 8)
    assert s["timing"] == {"setup_s": 1.2, "teardown_s": 0.4, "traffic_s": 4.0}


def test_failed_fidelity_check_invalidates(tmp_path: Path) -> None:
    bad = [{"name": "base_rtt", "configured": 50, "measured": 58.1, "tolerance": 2, "unit": "ms", "pass": False}]
    s = summarize_trial(make_trial(tmp_path, prov=provenance(bad)))
    validate(s, "summary")
    assert s["valid"] is False
    assert s["invalid_reasons"] == ["fidelity base_rtt: measured 58.1 ms, configured 50 ± 2"]
    assert "goodput_kbit_s" in s["metrics"]  # still summarised, for the record


def test_unmeasured_fidelity_check_is_a_warning(tmp_path: Path) -> None:
    unmeasured = [{"name": "forward.rate_at_saturation", "configured": 1000, "measured": None,
                   "tolerance": 0.02, "unit": "kbit/s", "pass": None, "note": "never saturated"}]
    prov = provenance(unmeasured)
    validate(prov, "provenance")
    s = summarize_trial(make_trial(tmp_path, prov=prov))
    assert s["valid"] is True
    assert "fidelity forward.rate_at_saturation: not measured (never saturated)" in s["warnings"]


def test_missing_raw_file_invalidates(tmp_path: Path) -> None:
    d = make_trial(tmp_path)
    (d / "tcptrace-s0.txt").unlink()
    (d / "voip-voip0.csv").unlink()
    s = summarize_trial(d)
    validate(s, "summary")
    assert not s["valid"]
    assert set(s["invalid_reasons"]) == {"missing tcptrace-s0.txt", "missing voip-voip0.csv/.json"}
    # goodput falls back to iperf3's receiver-side number, with a warning
    assert s["metrics"]["goodput_kbit_s"] == pytest.approx(4813152 * 8 / 4.039969 / 1000)
    assert any("iperf3" in w for w in s["warnings"])


def test_wrong_port_offset_finds_no_connection(tmp_path: Path) -> None:
    sp = spec()
    sp["flows"][0]["port_offset"] = 2
    s = summarize_trial(make_trial(tmp_path, sp=sp))
    assert s["invalid_reasons"] == ["bulk0: no tcptrace connection to port 20002"]


def test_write_summary(tmp_path: Path) -> None:
    out = write_summary(make_trial(tmp_path))
    doc = json.loads(out.read_text())
    validate(doc, "summary")
    assert out.name == "summary.json" and doc["metrics"]["retransmits"] == 6
