"""The 802.11b claims judged on hand-made cells over the configured matrix: each comparison's
direction, the trials' noise, the conditions the paper states that were not run, the verdict."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.wlan.claims import Cells, judge_claims
from tcprepro.config import load_paper

CFG = load_paper("wlan")
PARAMS = {cid: c.params for cid, c in CFG.cells_by_id.items()}
CLAIMS = {c["id"]: c for c in CFG.data["reference"]["claims"]}


def cell(spread: float = 0.0, **metrics: float) -> dict[str, Any]:
    """Five trials per metric around its value: trimmed mean the value, min-max range `spread`."""
    def agg(v: float) -> dict[str, Any]:
        values = [v - spread / 2, v - spread / 4, v, v + spread / 4, v + spread / 2]
        return {"trials": [1, 2, 3, 4, 5], "values": values, "mean": v, "min": min(values), "max": max(values)}
    return {"n_valid": 5, "metrics": {k: agg(v) for k, v in metrics.items()}}


def results(tmp_path: Path, cells: dict[str, dict[str, Any]]) -> tuple[Path, Any]:
    """The cells written as a full-profile results folder, and the analysis' Run over it."""
    from analysis.wlan.run import Run

    root = tmp_path / "results"
    for cid, c in cells.items():
        (root / cid).mkdir(parents=True)
        (root / cid / "cell.json").write_text(json.dumps(c))
    return root, Run.load("full", root, tmp_path / "out")


def without(root: Path, word: str) -> Any:
    """The Run over `root` once every cell whose id holds `word` is gone (drawn into a new folder)."""
    from analysis.wlan.run import Run

    for cell_json in root.glob(f"*{word}*/cell.json"):
        cell_json.unlink()
    return Run.load("full", root, root.parent / f"out-without-{word}")


def run(claim_id: str, cells: dict[str, dict[str, Any]]) -> Any:
    return judge_claims(Cells.from_cells(cells, PARAMS), {**CFG.data["reference"], "claims": [CLAIMS[claim_id]]},
                    "full")[0]


def test_scheduler_balances_one_in_seven_is_not_reproduced() -> None:
    """Issue 29: 3 of 21 comparisons held (dl1-ul1 at M_t 6-8), the rest outside the 1:1 band:
    failures outnumber holds, not partly."""
    ratios = {"dl1-ul1-dataack-q100": (0.78, 0.02), "dl2-ul2-dataack-q50": (0.37, 0.05),
              "dl2-ul2-dataack-q100": (0.47, 0.12), "dl2-ul2-dataack-q200": (0.67, 0.15),
              "dl4-ul4-dataack-q50": (0.25, 0.15), "dl4-ul4-dataack-q100": (0.29, 0.04),
              "dl4-ul4-dataack-q200": (0.52, 0.14)}
    cells = {f"{k}-mt{mt}": cell(spread, ratio_down_up=r) for k, (r, spread) in ratios.items() for mt in (6, 7, 8)}
    cells |= {"dl2-ul2-dataack-q10-mt8": cell(0.05, ratio_down_up=1.0),           # Q = 10: not in the claim
              "dl2-ul2-dataack-q100-mt4": cell(0.05, ratio_down_up=1.0)}          # M_t = 4: not in the claim
    v = run("scheduler_balances", cells)
    assert v.verdict == "not reproduced"
    assert v.counts == {"held": 3, "failed": 15, "indistinguishable": 3, "missing": 0}
    assert all(line.startswith("dl1-ul1") for line in v.held)
    assert all(line.startswith("dl2-ul2, Q = 200") for line in v.indistinguishable)   # 0.08 under, noise 0.15
    assert "ACK queue" in v.why


def test_dl1ul1_total_just_over_the_band_of_the_papers_value_is_not_held() -> None:
    """Issue 29: the total 426 against "about 370" held inside +-15 % only because the tolerance was
    taken relative to max(ours, paper); relative to the paper's value it is outside."""
    cells = {"dl1-ul1-fifo-q100-mt1": cell(2.0, total_goodput_pkts_s=425.8, down_goodput_pkts_s=235.5,
                                           up_goodput_pkts_s=190.5)}
    v = run("dl1ul1_mt1_numbers", cells)
    assert v.verdict == "not reproduced"                                # 2 held, 2 failed
    assert [line.split(":")[0] for line in v.failed] == ["dl1-ul1, M_t = 1, overall", "dl1-ul1, M_t = 1, uplink"]
    assert "425.8 pkt/s vs the paper's 370 (within 10 %)" in v.failed[0]
    assert run("dl1ul1_mt1_numbers", {}).verdict == "not evaluated"


def test_monotone_steps_inside_the_noise_do_not_count() -> None:
    """The uplink loss falls monotonically: a step down by less than the trials' range is within the
    noise, not a hold (no slack of our own)."""
    losses = {1: 0.07, 2: 0.02, 3: 0.004, 4: 0.003, 5: 0.0025, 6: 0.002, 7: 0.002, 8: 0.002}
    cells = {f"dl4-ul4-fifo-q100-mt{mt}": cell(0.002, up_loss_prob=x) for mt, x in losses.items()}
    v = run("uplink_loss_falls_with_mt", cells)
    assert v.counts["held"] == 2 and v.counts["indistinguishable"] == 5
    assert v.counts["missing"] == 28                                     # the other four AP buffers
    assert v.verdict == "partly"            # more held than failed; the noise and the unrun buffers keep it there


def test_reversal_needs_every_m_t_of_the_matrix() -> None:
    ratios = {1: 2.0, 2: 1.5, 3: 1.2, 4: 0.8, 5: 0.7, 6: 0.6, 7: 0.55, 8: 0.5}
    cells = {f"dl1-ul1-fifo-q100-mt{mt}": cell(0.05, ratio_down_up=r) for mt, r in ratios.items()}
    assert run("dl1ul1_reverses_above_3", cells).verdict == "reproduced"
    del cells["dl1-ul1-fifo-q100-mt8"]
    partial = run("dl1ul1_reverses_above_3", cells)
    assert partial.verdict == "partly" and partial.missing == ["dl1-ul1, Q = 100, M_t = 8: ratio - (paper: uplink "
                                                               "ahead, below 1): not measured"]
    cells["dl1-ul1-fifo-q100-mt3"] = cell(0.05, ratio_down_up=0.55)       # the uplink already ahead at M_t = 3
    assert run("dl1ul1_reverses_above_3", cells).failed[0].startswith("dl1-ul1, Q = 100, M_t = 3: ratio 0.55")


def test_adaptive_scheduler_is_beyond_the_paper() -> None:
    good = {f"dl4-ul1-{v}-q100-mt{mt}": cell(0.05, ratio_down_up=r) for mt in (4, 5, 6, 7, 8)
            for v, r in (("fifo", 0.5), ("dataack", 0.8), ("adaptive", 3.8))}
    v = run("adaptive_tracks_flow_ratio", good)
    assert v.beyond and v.counts["held"] == 15 and v.counts["missing"] == 15    # dl1-ul4 not run
    bad = {**good, "dl4-ul1-adaptive-q100-mt8": cell(0.05, ratio_down_up=0.5)}
    assert run("adaptive_tracks_flow_ratio", bad).failed


def test_every_claim_reads_the_configured_matrix() -> None:
    """With nothing run, every claim of the paper is not evaluated, each of its conditions missing."""
    v = judge_claims(Cells.from_cells({}, PARAMS), CFG.data["reference"], "full")
    assert {x.verdict for x in v} == {"not evaluated"} and all(x.missing for x in v)
    assert {x.claim for x in v if x.beyond} == {"adaptive_tracks_flow_ratio"}


def test_mt2_investigation_judges_each_setting_by_the_claims_comparisons(tmp_path: Path) -> None:
    """analysis/wlan/investigation_mt2.py on hand-made cells: a setting under which the ratio rises
    from M_t = 1 to 2 at every (scenario, Q), more with the larger Q, has the claim's pattern; the
    model as configured (falling) does not; the section and figure need a setting besides the
    model as configured."""
    from analysis.wlan import investigation_mt2 as inv

    ratios = {"fifo": {25: (1.1, 0.3), 100: (1.3, 1.1)}, "fifo-fer5": {25: (0.8, 1.0), 100: (0.9, 1.6)}}
    cells = {f"{scen}-{v}-q{q}-mt{mt}": cell(0.05, ratio_down_up=r[mt - 1], down_goodput_pkts_s=200 * r[mt - 1],
                                              up_goodput_pkts_s=200.0)
             for scen in ("dl2-ul2", "dl4-ul4") for v, by_q in ratios.items() for q, r in by_q.items() for mt in (1, 2)}
    root, run = results(tmp_path, cells)
    found = {s.variant: s for s in inv.settings(run)}
    assert list(found) == ["fifo", "fifo-fer5"]
    assert [c.outcome for c in found["fifo"].steps] == ["failed", "failed", "failed", "failed"]
    assert found["fifo-fer5"].count("held") == len(found["fifo-fer5"].comparisons) == 6
    text = "\n".join(inv.section(run))
    assert "The claim's pattern holds under FIFO, 5 % channel frame errors." in text
    assert "| FIFO, 5 % channel frame errors | dl4-ul4 | 100 | 0.90 | 1.60 | 180 -> 320 | 200 -> 200 | held |" in text
    assert [p.name for p in inv.fig_mt2(run)] == ["investigation_mt2.png", "investigation_mt2.pdf"]
    bare = without(root, "fer5")
    assert inv.section(bare) == [] and inv.fig_mt2(bare) == []


def test_streams_investigation_tells_independent_draws_from_the_common_ones(tmp_path: Path) -> None:
    """analysis/wlan/investigation_streams.py on hand-made cells: an own-stream cell whose ratio lies
    outside the common-stream cell's trial range is 'apart', one inside it is not; retry drops of
    the own-stream trials are counted; without the `*-streams` cells there is no section."""
    from analysis.wlan import investigation_streams as inv
    from analysis.wlan.claims import RETRY_DROPS

    def with_drops(c: dict[str, Any], drops: int) -> dict[str, Any]:
        c["metrics"] |= {k: {"values": [drops if k == RETRY_DROPS[0] else 0, 0, 0, 0, 0]} for k in RETRY_DROPS}
        return c

    cells = {}
    for mt in (6, 7, 8):
        cells[f"dl1-ul1-fifo-q100-mt{mt}"] = with_drops(
            cell(0.04, ratio_down_up=0.78, down_goodput_pkts_s=180, up_goodput_pkts_s=230), 0)
        own = 0.95 if mt == 7 else 0.79                   # M_t = 7: 0.17 off against a range of 0.04
        cells[f"dl1-ul1-fifo-streams-q100-mt{mt}"] = with_drops(
            cell(0.04, ratio_down_up=own, down_goodput_pkts_s=180, up_goodput_pkts_s=230), 3 if mt == 6 else 0)
    root, run = results(tmp_path, cells)
    assert inv.pairs(run) == [("dl1-ul1", "fifo", "fifo-streams")]
    text = "\n".join(inv.section(run))
    assert "| dl1-ul1, FIFO | 7 | seed 7 (own) | 180 | 230 | 0.95 | 0 |" in text
    assert "the ratio is 0.79 to 0.95 over M_t 6-8, apart from the common-stream cells in down/up at M_t = 7;" in text
    assert "3 frame(s) of the own-stream trials used up their attempts" in text
    assert [p.name for p in inv.fig_streams(run)] == ["investigation_streams.png", "investigation_streams.pdf"]
    bare = without(root, "streams")
    assert inv.section(bare) == [] and inv.fig_streams(bare) == []


def test_idle_investigation_judges_each_setting_by_the_claims_own_comparisons(tmp_path: Path) -> None:
    """analysis/wlan/investigation_idle.py on hand-made cells: a setting whose numbers fall within
    10 % of the paper's 370/250/120 with the downlink ahead reproduces the claim, one 15 % above does
    not; the direction at M_t 1-4 is read against the paper's (downlink ahead up to M_t = 3); without
    an idle-time cell there is no section and no figure."""
    from analysis.wlan import investigation_idle as inv

    def dl1(down: float, up: float) -> dict[str, Any]:
        c = cell(4.0, down_goodput_pkts_s=down, up_goodput_pkts_s=up, total_goodput_pkts_s=down + up)
        c["metrics"] |= cell(0.04, ratio_down_up=down / up)["metrics"]
        return c

    cells = {"dl1-ul1-fifo-q100-mt1": dl1(236, 191), "dl1-ul1-fifo-aifsn12-q100-mt1": dl1(205, 165),
             "dl1-ul1-fifo-capture-q100-mt1": dl1(295, 141)}
    for mt, (down, up) in enumerate([(252, 121), (230, 180), (200, 210), (150, 260)], start=1):
        cells[f"dl1-ul1-fifo-capture-aifsn12-q100-mt{mt}"] = dl1(down, up)
    for mt in (2, 3, 4):
        cells[f"dl1-ul1-fifo-capture-q100-mt{mt}"] = dl1(200, 250)
    root, run = results(tmp_path, cells)
    found = {s.variant: s for s in inv.sweep(run)}
    assert [(s.base, s.idle_us) for s in found.values()] == [("fifo", 0), ("fifo", 200), ("fifo-capture", 0),
                                                             ("fifo-capture", 200)]
    assert found["fifo-capture-aifsn12"].verdict == "reproduced"
    assert found["fifo-capture"].verdict == "not reproduced" and found["fifo-aifsn12"].verdict != "reproduced"
    text = "\n".join(inv.section(run))
    assert "| capture | 200 | 373 | 252 | 121 | 2.08 | 4 of 4 held | reproduced |" in text
    assert "The claim's numbers hold under capture with 200 us." in text
    assert "Capture, 200 us idle per access, M_t 1, 2, 3, 4: against the paper's direction at M_t = 3" in text
    assert [p.name for p in inv.fig_idle(run)] == ["investigation_idle.png", "investigation_idle.pdf"]
    bare = without(root, "aifsn")
    assert inv.section(bare) == [] and inv.fig_idle(bare) == []
