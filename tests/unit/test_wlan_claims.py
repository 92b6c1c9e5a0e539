"""The 802.11b claims judged on hand-made cells: each comparison's direction and the verdict."""
from __future__ import annotations

from typing import Any

from analysis.wlan_claims import Cells, evaluate

REFERENCE: dict[str, Any] = {
    "near_one": [0.75, 1.33],
    "tables": {"t": {"columns": {"down": {"metric": "down_goodput_pkts_s", "stat": "mean",
                                          "tolerance": {"rel": 0.15}}},
                     "values": {"dl1-ul1-fifo-q100-mt1": [250]}}},
    "beyond": {"adaptive": {"scenarios": ["dl4-ul1"], "variants": ["fifo", "dataack", "adaptive"], "q": 100}},
    "claims": [],
}


def cell(**metrics: float) -> dict[str, Any]:
    return {"n_valid": 1, "metrics": {k: {"mean": v, "min": v, "max": v} for k, v in metrics.items()}}


def run(claim: dict[str, Any], cells: dict[str, dict[str, Any]], params: dict[str, dict[str, Any]]) -> Any:
    ref = {**REFERENCE, "claims": [claim]}
    return evaluate(Cells.from_cells(cells, params), ref, "full")[0]


def p(scen: str, variant: str, q: int, mt: int) -> tuple[str, dict[str, Any]]:
    down, up = (int(scen[2]), int(scen[-1]))
    return f"{scen}-{variant}-q{q}-mt{mt}", {"scen": scen, "variant": variant, "sched": variant.split("-")[0],
                                             "q": q, "mt": mt, "down": down, "up": up}


def test_scheduler_balances_inside_the_band_only() -> None:
    claim = {"id": "scheduler_balances", "text": "t", "mt_above": 5, "q_min": 50}
    ids = dict([p("dl2-ul2", "dataack", 100, 6), p("dl2-ul2", "dataack", 100, 8), p("dl2-ul2", "dataack", 10, 8),
                p("dl2-ul2", "dataack", 100, 4)])
    cells = {"dl2-ul2-dataack-q100-mt6": cell(ratio_down_up=0.9), "dl2-ul2-dataack-q100-mt8": cell(ratio_down_up=0.5),
             "dl2-ul2-dataack-q10-mt8": cell(ratio_down_up=0.1), "dl2-ul2-dataack-q100-mt4": cell(ratio_down_up=0.1)}
    v = run(claim, cells, ids)
    # Q = 10 and M_t = 4 are outside the claim; 0.9 is inside the band, 0.5 is not
    assert v.verdict == "partly" and len(v.held) == 1 and len(v.failed) == 1
    assert "ratio 0.90" in v.held[0] and "ratio 0.50" in v.failed[0]


def test_dl1ul1_numbers_use_the_tables_tolerance() -> None:
    claim = {"id": "dl1ul1_mt1_numbers", "text": "t", "cell": "dl1-ul1-fifo-q100-mt1"}
    ids = dict([p("dl1-ul1", "fifo", 100, 1)])
    near = run(claim, {"dl1-ul1-fifo-q100-mt1": cell(down_goodput_pkts_s=240, up_goodput_pkts_s=180)}, ids)
    far = run(claim, {"dl1-ul1-fifo-q100-mt1": cell(down_goodput_pkts_s=150, up_goodput_pkts_s=280)}, ids)
    assert near.verdict == "reproduced"            # 240 within 15 % of 250, and downlink ahead
    assert far.verdict == "not reproduced"         # 150 is 40 % off, and the uplink is ahead
    assert run(claim, {}, ids).verdict == "not evaluated"


def test_uplink_loss_must_fall_with_mt() -> None:
    claim = {"id": "uplink_loss_falls_with_mt", "text": "t", "slack": 0.002}
    ids = dict(p("dl4-ul4", "fifo", q, mt) for q in (10, 100) for mt in (1, 2, 4))
    losses = {10: (0.05, 0.02, 0.021), 100: (0.05, 0.02, 0.03)}     # +0.001 is within the slack, +0.01 is not
    cells = {f"dl4-ul4-fifo-q{q}-mt{mt}": cell(up_loss_prob=v) for q, vs in losses.items()
             for mt, v in zip((1, 2, 4), vs, strict=True)}
    v = run(claim, cells, ids)
    assert v.verdict == "partly"
    assert v.held[0].startswith("Q = 10") and "rises at M_t 2->4" in v.failed[0]


def test_adaptive_must_be_near_its_target_and_closer_than_the_others() -> None:
    claim = {"id": "adaptive_tracks_flow_ratio", "text": "t", "mt_above": 3}
    ids = dict(p("dl4-ul1", v, 100, 8) for v in ("fifo", "dataack", "adaptive"))
    good = {"dl4-ul1-fifo-q100-mt8": cell(ratio_down_up=0.5), "dl4-ul1-dataack-q100-mt8": cell(ratio_down_up=1.0),
            "dl4-ul1-adaptive-q100-mt8": cell(ratio_down_up=3.8)}
    assert run(claim, good, ids).verdict == "reproduced"            # target 4: 3.8 is in [3, 5.3]
    bad = {**good, "dl4-ul1-adaptive-q100-mt8": cell(ratio_down_up=1.5)}
    assert run(claim, bad, ids).verdict == "not reproduced"


def test_a_reversal_needs_both_sides_of_mt_3() -> None:
    claim = {"id": "dl1ul1_reverses_above_3", "text": "t", "scenario": "dl1-ul1"}
    ids = dict(p("dl1-ul1", "fifo", 100, mt) for mt in (1, 8))
    one_side = run(claim, {"dl1-ul1-fifo-q100-mt1": cell(ratio_down_up=1.4)}, ids)
    assert one_side.verdict == "not evaluated" and "no point at M_t > 3" in one_side.missing[-1]
    both = {"dl1-ul1-fifo-q100-mt1": cell(ratio_down_up=1.4), "dl1-ul1-fifo-q100-mt8": cell(ratio_down_up=0.5)}
    assert run(claim, both, ids).verdict == "reproduced"
    kept = {**both, "dl1-ul1-fifo-q100-mt8": cell(ratio_down_up=1.2)}        # the downlink stays ahead
    assert run(claim, kept, ids).verdict == "partly"
