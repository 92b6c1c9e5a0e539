"""Collateral Damage's printed magnitudes and the statements judged beside them: Tables 1 and 2 as
bands around the paper's numbers, the 100-ms plots "identical" to the 50-ms ones, the UDP loss, the
correlation of queue-full events and retransmissions, H-TCP's time in NewReno mode, and latency
against goodput as a differentiator. Cells are cell.json dicts with five trials' values."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analysis.aggregate import trimmed_stats
from analysis.collateral import modes
from analysis.collateral.claims import CCS, Cells, judge_claims
from experiments import load_paper

CLAIMS = {c["id"]: c for c in load_paper("collateral").data["reference"]["claims"]}


def metric(values: list[float]) -> dict[str, Any]:
    """A cell.json metric: its trials' values with the trimmed statistics analysis/aggregate.py gives."""
    return {"trials": list(range(1, len(values) + 1)), "values": values, **trimmed_stats(values)}


def five(x: float, spread: float) -> list[float]:
    return [x - spread / 2, x - spread / 4, x, x + spread / 4, x + spread / 2]


def cells_of(values: dict[tuple[str, int, int], dict[str, list[float]]]) -> Cells:
    """{(cc, rtt, flows): {metric: five trials' values}} as measured cells."""
    cells, params = {}, {}
    for (cc, rtt, flows), ms in values.items():
        cid = f"{cc}-rtt{rtt}-f{flows}"
        n = len(next(iter(ms.values())))
        cells[cid] = {"n_valid": n, "trials": list(range(1, n + 1)),
                      "metrics": {m: metric(v) for m, v in ms.items()}}
        params[cid] = {"cc": cc, "rtt_ms": rtt, "flows": flows}
    return Cells.from_cells(cells, params)


def judged(claim_id: str, cells: Cells) -> Any:
    return judge_claims([CLAIMS[claim_id]], cells)[0]


def test_table2_medians_are_bands_of_half_the_finest_difference_the_paper_reads() -> None:
    """Table 2's medians: within 5.45 ms of the paper's (half CUBIC's 474.1 to 485.0 ms rise). The
    conclusion's quoted cells are the headline: one of them off makes the claim not reproduced."""
    assert CLAIMS["table2_median"]["bars"]["half_width_ms"]["value"] == 5.45
    paper = {"newreno": 422.8, "htcp": 390.8, "cubic": 474.1}
    on = cells_of({(cc, 50, 2): {"owd_median_ms": five(x + 1.0, 2.0)} for cc, x in paper.items()})
    v = judged("table2_median", on)
    assert v.counts == {"held": 3, "failed": 0, "indistinguishable": 0, "missing": 15}
    assert "OWD median 423.8 ms (paper 422.8, band 417.35 to 428.25)" in v.held[0]
    assert v.verdict == "not evaluated"                       # the five-flow headline cells not measured
    low = cells_of({(cc, 50, 2): {"owd_median_ms": five(x - 20.0, 2.0)} for cc, x in paper.items()})
    v = judged("table2_median", low)
    assert len(v.failed) == 3 and v.verdict == "not reproduced" and v.failed[0].endswith("(headline)")
    edge = cells_of({("cubic", 50, 2): {"owd_median_ms": five(474.1 - 6.0, 4.0)}})   # 0.55 out, noise 4
    assert judged("table2_median", edge).counts["indistinguishable"] == 1


def test_table2_means_and_deviations_read_their_own_columns() -> None:
    cells = cells_of({("newreno", 100, 1): {"owd_mean_ms": five(402.4, 1.0), "owd_std_ms": five(70.0, 1.0)}})
    assert judged("table2_mean", cells).counts["held"] == 1           # the paper's 402.4
    v = judged("table2_deviation", cells)                              # the paper's 81.0: 11 ms off
    assert v.counts["failed"] == 1 and "(paper 81, band 75.55 to 86.45)" in v.failed[0]


def test_table1_goodput_band_is_the_papers_printed_digit_and_twice_its_own_deviation() -> None:
    """50 ms, five flows, CUBIC: the paper's 114.5 KB/s with deviation 0.39: 0.83 either side."""
    inside = cells_of({("cubic", 50, 5): {"goodput_kbyte_s": five(114.0, 0.1)}})
    v = judged("table1_goodput", inside)
    assert v.counts["held"] == 1 and "band 113.67 to 115.33" in v.held[0]
    below = cells_of({("cubic", 50, 5): {"goodput_kbyte_s": five(112.4, 0.1)}})
    assert judged("table1_goodput", below).counts["failed"] == 1


def test_table1_deviation_is_judged_by_the_sampling_spread_of_three_trials() -> None:
    """The paper's 0.39 KB/s: ours within a factor sqrt(39) either way (and its printed half-digit);
    a deviation has no trial range of its own, so the band alone decides; two trials give none."""
    def cell(values: list[float]) -> Cells:
        return cells_of({("cubic", 50, 5): {"goodput_kbyte_s": values}})

    v = judged("table1_deviation", cell([112.0, 112.1, 112.2, 112.3, 112.4]))      # 0.1 of the kept three
    assert v.counts["held"] == 1 and "goodput deviation 0.100 KB/s (paper 0.39, band 0.0616 to 2.467)" in v.held[0]
    flat = judged("table1_deviation", cell([112.0, 112.001, 112.002, 112.003, 112.004]))
    assert flat.counts["failed"] == 1                                              # 0.001: trials far more alike
    two = cells_of({("cubic", 50, 5): {"goodput_kbyte_s": [112.0, 112.2]}})
    assert judged("table1_deviation", two).counts["missing"] == 18


def test_identical_plots_allow_the_papers_own_largest_shift_between_the_rtts() -> None:
    """'Plots for 100ms looked identical': each median within 31.6 ms and mean within 24.5 ms of the
    50-ms one (the paper's largest shifts, CUBIC with one flow)."""
    cells = cells_of({("cubic", 50, 1): {"owd_median_ms": five(426.0, 2.0), "owd_mean_ms": five(424.0, 2.0)},
                      ("cubic", 100, 1): {"owd_median_ms": five(444.0, 2.0), "owd_mean_ms": five(454.0, 2.0)}})
    v = judged("rtt100_plots_identical", cells)
    assert v.counts == {"held": 1, "failed": 1, "indistinguishable": 0, "missing": 16}
    assert v.held[0].startswith("CUBIC, 1 flow: median") and "shift 30.0 (identical: within 24.5)" in v.failed[0]


def test_udp_loss_against_the_standard_error_bar() -> None:
    """Below 0.057 % of the packets (beyond the trials' spread) is statistically insignificant; a loss
    the trials scatter across the bar is within the noise."""
    assert CLAIMS["udp_loss_insignificant"]["bars"]["max_loss_pct"]["value"] == 0.057
    cells = cells_of({("newreno", 50, 1): {"voip_loss_frac": [0.0, 0.0, 0.000111, 0.000111, 0.0]},
                      ("htcp", 50, 2): {"voip_loss_frac": [0.0008, 0.0009, 0.0008, 0.0007, 0.0008]},
                      ("cubic", 50, 5): {"voip_loss_frac": [0.0, 0.0002, 0.0004, 0.0006, 0.0010]}})
    v = judged("udp_loss_insignificant", cells)
    assert v.counts == {"held": 1, "failed": 1, "indistinguishable": 1, "missing": 15}
    assert "50 ms, 2 flows, H-TCP: UDP packets lost 0.0800 %" in v.failed[0]


def _events_rexmt(events: dict[tuple[str, int], float], rexmt_per_event: dict[str, float],
                  spread: float = 2.0) -> Cells:
    return cells_of({(cc, 50, n): {"q_forward_full_events_per_min": five(e, spread),
                                   "rexmt_data_pkts": five(e * rexmt_per_event[cc], spread)}
                     for (cc, n), e in events.items()})


EVENTS = {("newreno", 1): 14.0, ("htcp", 1): 105.0, ("cubic", 1): 45.0, ("newreno", 2): 33.0,
          ("htcp", 2): 157.0, ("cubic", 2): 67.0, ("newreno", 5): 130.0, ("htcp", 5): 226.0, ("cubic", 5): 175.0}


def test_events_and_retransmissions_closely_correlated_over_each_rtts_cells() -> None:
    """Pearson's r over the nine cells of one RTT, once per trial number: at or above 0.8 holds. The
    100-ms half not run is missing; retransmissions that fall as events rise fail."""
    v = judged("events_track_retransmissions", _events_rexmt(EVENTS, dict.fromkeys(CCS, 4.0)))
    assert v.counts == {"held": 1, "failed": 0, "indistinguishable": 0, "missing": 1}
    assert "over the 9 cells: 1.000 (bar 0.8)" in v.held[0]
    inverse = {k: 300.0 - e for k, e in EVENTS.items()}
    cells = cells_of({(cc, 50, n): {"q_forward_full_events_per_min": five(EVENTS[(cc, n)], 2.0),
                                    "rexmt_data_pkts": five(inverse[(cc, n)], 2.0)} for cc, n in EVENTS})
    assert judged("events_track_retransmissions", cells).counts["failed"] == 1
    some = {k: e for k, e in EVENTS.items() if k != ("cubic", 5)}
    assert "not every cell measured" in judged("events_track_retransmissions",
                                               _events_rexmt(some, dict.fromkeys(CCS, 4.0))).missing[0]


def test_newreno_mode_share_of_an_epoch_is_its_first_window() -> None:
    """An epoch of T seconds spends min(T, 1 s) in NewReno mode; shares pool every flow's epochs."""
    assert modes.mode_share([[0.0, 4.0, 8.0]], 1.0) == pytest.approx(0.25)
    assert modes.mode_share([[0.0, 4.0], [0.0, 0.5, 2.5]], 1.0) == pytest.approx((1 + 0.5 + 1) / 6.5)
    assert modes.mode_share([[3.0]], 1.0) is None and modes.mode_share([], 1.0) is None
    assert modes.metric_name(1.0) == "newreno_mode_share_1s"
    assert modes.claim_windows([CLAIMS["htcp_newreno_mode_share"]]) == [1.0]


def test_newreno_mode_share_only_for_htcp_cells_from_their_cwnd_traces(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Merged into the H-TCP cells' metrics per trial (the events faked here), other cells untouched."""
    for cid in ("htcp-rtt50-f1", "cubic-rtt50-f1"):
        for k in (1, 2, 3):
            d = tmp_path / cid / f"trial-{k}"
            d.mkdir(parents=True)
            (d / "provenance.json").write_text("{}")
            (d / "tcp_probe.trace").write_text("")
    monkeypatch.setattr(modes, "flow_events", lambda trial: ((0.0, 2.0, 4.0),))
    cells = {cid: {"n_valid": 3, "trials": [1, 2, 3], "metrics": {}} for cid in ("htcp-rtt50-f1", "cubic-rtt50-f1")}
    params = {"htcp-rtt50-f1": {"cc": "htcp"}, "cubic-rtt50-f1": {"cc": "cubic"}}
    out = modes.with_mode_share(tmp_path, cells, [1.0], params)
    assert out["htcp-rtt50-f1"]["metrics"]["newreno_mode_share_1s"]["values"] == [0.5, 0.5, 0.5]
    assert out["cubic-rtt50-f1"]["metrics"] == {}


def test_htcp_newreno_mode_share_rises_with_flows() -> None:
    share = {1: 0.24, 2: 0.30, 5: 0.36}
    cells = cells_of({("htcp", 50, n): {"newreno_mode_share_1s": five(s, 0.01)} for n, s in share.items()})
    v = judged("htcp_newreno_mode_share", cells)
    assert v.counts == {"held": 2, "failed": 0, "indistinguishable": 0, "missing": 2}
    assert "time within 1 s of a congestion event 30.0 % with 2 flows vs 24.0 % with 1" in v.held[0]


def test_latency_differentiates_more_than_goodput() -> None:
    """The three algorithms' spread in OWD median and deviation, in % of their mean, against their
    spread in goodput: 20 % against 0.1 % holds; equal goodput and equal delays are within the noise."""
    owd = {"newreno": 400.0, "htcp": 360.0, "cubic": 440.0}
    std = {"newreno": 75.0, "htcp": 70.0, "cubic": 40.0}
    cells = cells_of({(cc, 50, 1): {"owd_median_ms": five(owd[cc], 2.0), "owd_std_ms": five(std[cc], 1.0),
                                    "goodput_kbyte_s": five(111.7 + 0.1 * (cc == "cubic"), 0.01)} for cc in CCS})
    v = judged("latency_differentiates_more", cells)
    assert v.counts == {"held": 2, "failed": 0, "indistinguishable": 0, "missing": 10}
    assert "spread in OWD median 20.0 % of their mean vs in goodput 0.09 %" in v.held[0]
    same = cells_of({(cc, 50, 1): {"owd_median_ms": five(400.0, 2.0), "owd_std_ms": five(70.0, 1.0),
                                   "goodput_kbyte_s": five(111.7, 0.01)} for cc in CCS})
    assert judged("latency_differentiates_more", same).counts["indistinguishable"] == 2
