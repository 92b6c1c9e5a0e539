"""Collateral Damage analysis on hand-made inputs: aggregate goodput and retransmissions over
several flows, tables beside the paper, claim verdicts, and Figure 2's epoch finder."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analysis.collateral import Cells, evaluate, pearson
from analysis.compare import build_table, to_csv, to_markdown
from analysis.epochs import congestion_events, epochs
from analysis.summarize import summarize_trial
from figures.collateral.fig2_epochs import middle_epochs
from tests.unit.test_analysis_summarize import DATA, make_trial, spec

CLAIMS = {c["id"]: c for c in [
    {"id": "cubic_most_latency", "text": "c"}, {"id": "htcp_below_newreno_1_2", "text": "h"},
    {"id": "goodput_same", "text": "g", "tolerance_pct": 3}, {"id": "more_retransmissions", "text": "r"},
    {"id": "full_events_track_retransmissions", "text": "q", "min_correlation": 0.8}]}


def agg(mean: float, std: float | None = None) -> dict[str, Any]:
    return {"mean": mean, "std": std, "min": mean, "max": mean, "n": 5, "method": "trimmed"}


def cell(n_valid: int = 5, **metrics: float) -> dict[str, Any]:
    return {"n_valid": n_valid, "expected_trials": 5, "complete": n_valid == 5, "trials": list(range(1, n_valid + 1)),
            "metrics": {k: agg(v) for k, v in metrics.items()}}


def params(cc: str, rtt: int, flows: int) -> dict[str, Any]:
    return {"cc": cc, "rtt_ms": rtt, "flows": flows}


def _two_flow_tcptrace() -> str:
    """The real fixture's data connection, twice, with hand-set ports, bytes and retransmissions."""
    text = (DATA / "tcptrace_real.txt").read_text()
    block = text[text.index("TCP connection 2:"):]
    out = [text[:text.index("TCP connection 1:")]]
    for i, (sport, dport, nbytes, rexmt) in enumerate([(40001, 20001, 2_000_000, 4), (40002, 20002, 1_000_000, 9)]):
        b = block.replace("TCP connection 2:", f"TCP connection {i + 1}:")
        b = b.replace("10.200.1.1:40124", f"10.200.1.1:{sport}").replace("10.200.2.1:20001", f"10.200.2.1:{dport}")
        b = re.sub(r"unique bytes sent:\s+4860973", f"unique bytes sent: {nbytes:9d}", b)
        b = re.sub(r"rexmt data pkts:\s+6 ", f"rexmt data pkts: {rexmt:11d} ", b)
        out.append(b if b.endswith("\n") else b + "\n")
    return "".join(out)


def test_aggregate_goodput_and_retransmissions_sum_over_flows(tmp_path: Path) -> None:
    flows = [{"id": f"bulk{i}", "kind": "bulk", "pair": 0, "cc": "cubic", "start_s": 0, "bytes": None,
              "port_offset": i + 1} for i in range(2)]
    d = make_trial(tmp_path, sp=spec(flows=flows))
    (d / "iperf-bulk0.json").unlink()                     # goodput from tcptrace only, as the paper
    (d / "tcptrace-s0.txt").write_text(_two_flow_tcptrace())
    m = summarize_trial(d)["metrics"]
    elapsed = 4.083901
    assert m["bulk0.goodput_kbit_s"] == pytest.approx(2_000_000 * 8 / elapsed / 1000)
    assert m["bulk1.goodput_kbit_s"] == pytest.approx(1_000_000 * 8 / elapsed / 1000)
    assert m["goodput_kbyte_s"] == pytest.approx(3_000_000 / elapsed / 1000)     # KB = 1000 bytes
    assert (m["bulk0.rexmt_data_pkts"], m["bulk1.rexmt_data_pkts"], m["rexmt_data_pkts"]) == (4, 9, 13)


def test_table_beside_the_paper() -> None:
    spec_t = {"title": "T1", "columns": {"mean": {"metric": "goodput_kbyte_s", "stat": "mean"},
                                         "std": {"metric": "goodput_kbyte_s", "stat": "std"}},
              "values": {"newreno-rtt50-f1": [111.8, 0.01], "cubic-rtt50-f1": [111.9, 0.04]}}
    cells = {"newreno-rtt50-f1": {"n_valid": 5, "expected_trials": 5,
                                  "metrics": {"goodput_kbyte_s": agg(110.8, 0.03)}}}
    t = build_table("table1", spec_t, cells, {"newreno-rtt50-f1": params("newreno", 50, 1),
                                                 "cubic-rtt50-f1": params("cubic", 50, 1)})
    reno, cubic = t.rows
    assert reno.diff("mean") == pytest.approx(-1.0) and reno.diff_pct("mean") == pytest.approx(-100 / 111.8)
    assert reno.diff("std") == pytest.approx(0.02)
    assert cubic.measured == {"mean": None, "std": None} and cubic.diff("mean") is None
    md = to_markdown(t)
    assert "| newreno | 50 | 1 | 5/5 | 110.8 | 111.8 | -1.0 | 0.03 | 0.01 | +0.02 |" in md   # paper's decimals
    assert "| cubic | 50 | 1 | not run | - | 111.9 |" in md
    assert to_csv(t).splitlines()[1].startswith("newreno-rtt50-f1,newreno,50,1,5,110.8000,111.8000,-1.0000")


def _cells(owd: dict[str, float], rexmt: dict[str, float], events: dict[str, float],
           goodput: dict[str, float] | None = None) -> Cells:
    cells, prm = {}, {}
    for cc in ("newreno", "htcp", "cubic"):
        for flows in (1, 2):
            cid = f"{cc}-rtt50-f{flows}"
            cells[cid] = cell(owd_median_ms=owd[cc] + flows, owd_mean_ms=owd[cc] + flows,
                              rexmt_data_pkts=rexmt[cc] * flows, q_forward_full_events_per_min=events[cc] * flows,
                              goodput_kbyte_s=(goodput or {}).get(cc, 112.0))
            prm[cid] = params(cc, 50, flows)
    return Cells.from_cells(cells, prm)


def test_claims_reproduced() -> None:
    cells = _cells({"newreno": 400, "htcp": 360, "cubic": 460}, {"newreno": 20, "htcp": 40, "cubic": 50},
                   {"newreno": 2, "htcp": 4, "cubic": 5})
    verdicts = {v.claim: v for v in evaluate(list(CLAIMS.values()), cells)}
    assert {k: v.verdict for k, v in verdicts.items()} == dict.fromkeys(CLAIMS, "reproduced")
    assert "50 ms, 1 flow: CUBIC 461.0 vs NewReno 401.0 ms median" in verdicts["cubic_most_latency"].held


def test_claims_not_reproduced_and_partly() -> None:
    cells = _cells({"newreno": 400, "htcp": 420, "cubic": 410}, {"newreno": 50, "htcp": 40, "cubic": 30},
                   {"newreno": 5, "htcp": 1, "cubic": 3}, goodput={"newreno": 100.0, "htcp": 112.0, "cubic": 112.0})
    v = {x.claim: x for x in evaluate(list(CLAIMS.values()), cells)}
    assert v["cubic_most_latency"].verdict == "partly"        # above NewReno, below H-TCP
    assert v["htcp_below_newreno_1_2"].verdict == "not reproduced"
    assert v["goodput_same"].verdict == "not reproduced" and "spread 11.3 %" in v["goodput_same"].failed[0]
    assert v["more_retransmissions"].verdict == "not reproduced"
    assert v["full_events_track_retransmissions"].verdict in ("reproduced", "not reproduced")


def test_claims_without_cells_are_not_evaluated() -> None:
    v = evaluate([CLAIMS["goodput_same"]], Cells({}))
    assert v[0].verdict == "not evaluated"
    with pytest.raises(ValueError, match="no evaluator"):
        evaluate([{"id": "made_up", "text": "x"}], Cells({}))


def test_pearson() -> None:
    assert pearson([1, 2, 3, 4], [2, 4, 6, 8]) == pytest.approx(1.0)
    assert pearson([1, 2, 3, 4], [8, 6, 4, 2]) == pytest.approx(-1.0)
    assert pearson([1, 2], [1, 2]) is None and pearson([1, 1, 1], [1, 2, 3]) is None


def test_fig2_epochs_from_a_sawtooth() -> None:
    # each epoch: cwnd grows 20 -> 39 by +1 per sample, then a loss takes it down to 20 over five
    # samples (as PRR does over a round trip), not in one step
    cwnd = np.array(([20 + i for i in range(20)] + [36, 32, 28, 24, 20]) * 7, dtype=float)
    t = np.arange(len(cwnd), dtype=float) + np.repeat(15.0 * np.arange(7), 25)   # 40 s per epoch
    events = congestion_events(t, cwnd)
    assert len(events) == 7 and epochs(t, cwnd) == 6
    assert list(np.diff(events)) == [40.0] * 6                      # one event per fall, not five
    assert events[0] == 22.0                                        # at 28 <= 0.8 x 39
    lo, hi = middle_epochs(events)
    assert hi - lo == 120.0 and lo == events[1]
    assert middle_epochs(events[:3]) is None


def test_verdict_report_from_hand_made_results(tmp_path: Path) -> None:
    """figures.collateral end to end on cell.json files alone: tables and verdict, no figures drawn
    that need raw series."""
    from figures.collateral import tables, verdict
    from figures.collateral.common import Run
    root = tmp_path / "results"
    for cid, c in {"newreno-rtt50-f1": cell(owd_median_ms=390, owd_mean_ms=380, owd_std_ms=70, goodput_kbyte_s=111.5),
                   "cubic-rtt50-f1": cell(3, owd_median_ms=450, owd_mean_ms=440, owd_std_ms=35,
                                          goodput_kbyte_s=111.6)}.items():
        (root / cid).mkdir(parents=True)
        (root / cid / "cell.json").write_text(json.dumps(c))
    run = Run.load("test", root, tmp_path / "out")
    written = tables.main(run) + verdict.main(run)
    assert {p.name for p in written} >= {"table1.md", "table2.csv", "verdict.md", "verdicts.json"}
    text = (tmp_path / "out" / "verdict.md").read_text()
    assert "Cells measured: 2 of 18" in text and "cubic-rtt50-f1 (3/5)" in text
    assert "| cubic | 50 | 25 | 1 | 3/5 | 450.0 | 456.2 | -6.2 |" in text
