"""The 802.11b claims judged on hand-made cells over the configured matrix: each comparison's
direction, the trials' noise, the conditions the paper states that were not run, the verdict."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.wlan.claims import Cells, judge_claims
from experiments import load_paper

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


def ratios(spread: float, **by_cell: float) -> dict[str, dict[str, Any]]:
    """Cells holding only a down/up ratio, by cell id."""
    return {cid: cell(spread, ratio_down_up=r) for cid, r in by_cell.items()}


def test_scheduler_balances_needs_about_one_at_its_headline() -> None:
    """About 1:1 is [1/1.225, 1.225] (nearer 1:1 than 2:3): every Fig 6/7 cell at M_t > 5 inside it
    and each Fig 7 scenario nearer 1:1 at M_t = 8 than at 1 reproduces the claim; dl2-ul2 at Q = 100,
    M_t = 6 (a headline) at 0.78, a trial range of 0.02, fails it alone."""
    cells = {}
    for scen in ("dl1-ul1", "dl2-ul2", "dl4-ul4"):
        for q in ((100,) if scen == "dl1-ul1" else (50, 100, 200)):
            for mt in (6, 7, 8):          # every cell its own runs (identical ones would count once)
                cells[f"{scen}-dataack-q{q}-mt{mt}"] = cell(0.02, ratio_down_up=1.0 + len(cells) / 1000)
        cells[f"{scen}-dataack-q100-mt1"] = cell(0.02, ratio_down_up=1.5)
    v = run("scheduler_balances", cells)
    assert v.verdict == "reproduced" and v.counts == {"held": 24, "failed": 0, "indistinguishable": 0, "missing": 0}
    cells["dl2-ul2-dataack-q100-mt6"] = cell(0.02, ratio_down_up=0.78)
    v = run("scheduler_balances", cells)
    assert v.verdict == "not reproduced" and v.counts["held"] == 23
    assert v.failed == ["dl2-ul2, Q = 100, M_t = 6: ratio 0.78 (about 1:1: 0.816 to 1.225) [margin -0.0363 against "
                        "noise 0.02] (headline)"]


def test_dl1ul1_numbers_are_about_the_papers_to_its_printed_tens() -> None:
    """'About 370 (250, 120)', printed to the tens: each number within 5 pkt/s of the paper's. 372/251/121
    with trial ranges of 2 hold; a total of 378 is 3 outside against a range of 2: the headline (the
    overall goodput) fails and the claim is not reproduced, whatever the split."""
    def dl1(total: float) -> dict[str, dict[str, Any]]:
        return {"dl1-ul1-fifo-q100-mt1": cell(2.0, total_goodput_pkts_s=total, down_goodput_pkts_s=251,
                                              up_goodput_pkts_s=121)}
    v = run("dl1ul1_mt1_numbers", dl1(372))
    assert v.verdict == "reproduced" and v.counts["held"] == 4
    assert v.held[0] == ("dl1-ul1, M_t = 1, overall: 372 pkt/s vs the paper's about 370 (365 to 375) [margin +3 pkt/s "
                         "against noise 2] (headline)")
    worse = run("dl1ul1_mt1_numbers", dl1(378))
    assert worse.verdict == "not reproduced" and worse.counts == {"held": 3, "failed": 1, "indistinguishable": 0,
                                                                  "missing": 0}
    assert run("dl1ul1_mt1_numbers", {}).verdict == "not evaluated"


def test_monotone_steps_inside_the_noise_do_not_count_and_identical_runs_count_once() -> None:
    """The uplink loss falls monotonically: the fall from M_t = 1 to 8 (the headline) and two steps
    hold, a step down by less than the trials' range is within the noise, not a hold; M_t 6, 7 and 8
    give one run, so the steps 6 -> 7 and 7 -> 8 are one comparison."""
    losses = {1: 0.07, 2: 0.02, 3: 0.004, 4: 0.003, 5: 0.0025, 6: 0.002, 7: 0.002, 8: 0.002}
    cells = {f"dl4-ul4-fifo-q100-mt{mt}": cell(0.002, up_loss_prob=x) for mt, x in losses.items()}
    v = run("uplink_loss_falls_with_mt", cells)
    assert v.counts["held"] == 3 and v.counts["indistinguishable"] == 4
    assert v.counts["missing"] == 32                                     # the other four AP buffers
    assert any("(counted once: the runs of dl4-ul4, Q = 100, M_t 7 -> 8 are identical" in line
               for line in v.indistinguishable)
    assert v.verdict == "partly"            # more held than failed; the noise and the unrun buffers keep it there


def test_reversal_needs_every_m_t_of_the_matrix() -> None:
    ratio = {1: 2.0, 2: 1.5, 3: 1.2, 4: 0.8, 5: 0.7, 6: 0.6, 7: 0.55, 8: 0.5}
    cells = ratios(0.05, **{f"dl1-ul1-fifo-q100-mt{mt}": r for mt, r in ratio.items()})
    assert run("dl1ul1_reverses_above_3", cells).verdict == "reproduced"
    del cells["dl1-ul1-fifo-q100-mt8"]
    partial = run("dl1ul1_reverses_above_3", cells)
    assert partial.verdict == "partly" and partial.missing == ["dl1-ul1, Q = 100, M_t = 8: ratio - (paper: uplink "
                                                               "ahead, below 1): not measured"]
    cells["dl1-ul1-fifo-q100-mt3"] = cell(0.05, ratio_down_up=0.55)       # the uplink already ahead at M_t = 3
    early = run("dl1ul1_reverses_above_3", cells)
    assert early.failed[0].startswith("dl1-ul1, Q = 100, M_t = 3: ratio 0.55")
    assert early.verdict == "not reproduced"                               # the reversal is the headline


def test_identical_runs_of_wlan_cells_count_once() -> None:
    """cell.json-shaped cells: M_t 6, 7 and 8 with the same trial values to the last digit are one
    comparison, headline kept (M_t = 8's); a twin that differs in one trial's last digit is its own."""
    def cell_json(values: list[float]) -> dict[str, Any]:
        return {"n_valid": 5, "metrics": {"ratio_down_up": {
            "trials": [1, 2, 3, 4, 5], "values": values, "n": 5, "mean": sorted(values)[2],
            "min": min(values), "max": max(values)}}}
    low = [0.5051, 0.5062, 0.5048, 0.5070, 0.5055]
    cells = {f"dl1-ul1-fifo-q100-mt{mt}": cell_json([r + 0.001 * k for k in range(5)])
             for mt, r in ((1, 2.0), (2, 1.5), (3, 1.1), (4, 0.7), (5, 0.6))}
    cells |= {f"dl1-ul1-fifo-q100-mt{mt}": cell_json(list(low)) for mt in (6, 7, 8)}
    v = run("dl1ul1_unbalanced", cells)
    assert v.counts == {"held": 4, "failed": 0, "indistinguishable": 0, "missing": 0}    # M_t 1, 4, 5, 6 (= 7 = 8)
    merged = [line for line in v.held if line.startswith("dl1-ul1, Q = 100, M_t = 6")]
    assert len(merged) == 1 and merged[0].endswith("(headline)")
    assert ("(counted once: the runs of dl1-ul1, Q = 100, M_t = 7, dl1-ul1, Q = 100, M_t = 8 are identical to the "
            "last digit)") in merged[0]
    cells["dl1-ul1-fifo-q100-mt8"] = cell_json([*low[:4], 0.5056])
    assert run("dl1ul1_unbalanced", cells).counts["held"] == 5


def test_unbalanced_dl1ul1_is_outside_about_one() -> None:
    """dl1-ul1 unbalanced: above the band at M_t = 1, below it past the reversal; 0.9 is about 1:1."""
    ratio = {1: 2.08, 2: 1.0, 3: 1.0, 4: 0.6, 5: 0.55, 6: 0.52, 7: 0.9, 8: 0.51}
    v = run("dl1ul1_unbalanced", ratios(0.02, **{f"dl1-ul1-fifo-q100-mt{mt}": r for mt, r in ratio.items()}))
    assert len(v.held) == 5 and [line.split(":")[0] for line in v.failed] == ["dl1-ul1, Q = 100, M_t = 7"]
    assert v.verdict == "partly"                              # M_t 2 and 3 are no condition of the claim


def test_scheduler_no_help_judges_fairness_not_the_direction() -> None:
    """Issue 50: where FIFO's downlink leads, 1.88 -> 1.09 with the scheduler is far fairer (|log|
    0.63 -> 0.09, more than log 1.225 = 0.20): the claim that it does not increase fairness fails,
    though the downlink is still ahead. 1.88 -> 1.80 holds. A cell where FIFO's uplink leads is no
    condition; a cell the paper names where FIFO's downlink does not lead is missing."""
    cells = ratios(0.05, **{"dl4-ul4-fifo-q100-mt1": 1.88, "dl4-ul4-dataack-q100-mt1": 1.09,
                            "dl2-ul2-fifo-q100-mt4": 0.5, "dl2-ul2-dataack-q100-mt4": 1.0,
                            "dl4-ul4-fifo-q10-mt1": 0.6, "dl4-ul4-dataack-q10-mt1": 0.9})
    v = run("scheduler_no_help_where_downlink_leads", cells)
    assert v.verdict == "not reproduced" and [line.split(":")[0] for line in v.failed] == ["dl4-ul4, Q = 100, M_t = 1"]
    assert not any(line.startswith("dl2-ul2") for o in ("held", "failed", "indistinguishable", "missing")
                   for line in getattr(v, o))
    assert any(line.startswith("dl4-ul4, Q = 10, M_t = 1") and "FIFO's downlink does not lead" in line
               for line in v.missing)
    cells["dl4-ul4-dataack-q100-mt1"] = cell(0.05, ratio_down_up=1.80)
    assert run("scheduler_no_help_where_downlink_leads", cells).held[0].startswith("dl4-ul4, Q = 100, M_t = 1")


def test_unchanged_uplink_loss_is_a_relative_band_that_can_fail() -> None:
    """Issue 50: an absolute band of one point could not fail where the losses are a fraction of a
    percent. Relative to FIFO's, 0.10 % against 0.50 % is a change (failed), 0.51 % is not (held)."""
    cells = {"dl4-ul4-fifo-q100-mt4": cell(0.0002, up_loss_prob=0.005),
             "dl4-ul4-dataack-q100-mt4": cell(0.0002, up_loss_prob=0.001)}
    v = run("scheduler_keeps_uplink_loss", cells)
    assert [line.split(":")[0] for line in v.failed] == ["dl4-ul4, Q = 100, M_t = 4"]
    cells["dl4-ul4-dataack-q100-mt4"] = cell(0.0002, up_loss_prob=0.0051)
    kept = run("scheduler_keeps_uplink_loss", cells)
    assert [line.split(":")[0] for line in kept.held] == ["dl4-ul4, Q = 100, M_t = 4"]


def test_influence_of_m_t_and_q_must_exceed_about_the_same() -> None:
    """The ratio 'influenced significantly': 1.3 against 0.1 over M_t holds; 1.0 against 1.1 over Q
    (|log| 0.095, within log 1.225) fails."""
    cells = ratios(0.02, **{"dl2-ul2-fifo-q100-mt1": 1.3, "dl2-ul2-fifo-q100-mt8": 0.1,
                            "dl2-ul2-fifo-q10-mt1": 1.0, "dl2-ul2-fifo-q200-mt1": 1.1})
    v = run("ratio_depends_on_mt_and_q", cells)
    assert [line.split(":")[0] for line in v.held] == ["dl2-ul2, Q = 100, M_t 1 vs 8"]
    assert [line.split(":")[0] for line in v.failed] == ["dl2-ul2, M_t = 1, Q 10 vs 200"]
    assert v.verdict == "not reproduced"


def test_loss_causes_read_where_the_data_was_lost() -> None:
    """dl4-ul4, Q = 100: the uplink's loss mainly collisions (0.04 of 0.05: a share of 0.8), the
    downlink's collisions falling and its AP-buffer losses rising from M_t = 1 to 8."""
    cells = {"dl4-ul4-fifo-q100-mt1": cell(0.002, up_loss_mac=0.04, up_loss_prob=0.05, down_loss_mac=0.03,
                                           down_loss_ap_queue=0.01),
             "dl4-ul4-fifo-q100-mt8": cell(0.002, up_loss_prob=0.004, down_loss_mac=0.0, down_loss_ap_queue=0.2)}
    cells["dl4-ul4-fifo-q100-mt8"]["metrics"] |= cell(0.0, up_loss_mac=0.0)["metrics"]     # no collision loss at all
    v = run("loss_causes", cells)
    assert [line.split(":")[0] for line in v.held] == ["dl4-ul4, Q = 100, M_t = 1", "dl4-ul4, Q = 100, M_t 1 -> 8",
                                                       "dl4-ul4, Q = 100, M_t 1 -> 8"]
    assert [line.split(":")[0] for line in v.failed] == ["dl4-ul4, Q = 100, M_t = 8"]     # its loss is not collisions


def test_scheduler_alleviates_and_slows_the_uplink() -> None:
    """Past the reversal the scheduler's ratio nearer 1:1 than FIFO's; M_t <= 3 is no condition of
    alleviating. The uplink's goodput with the scheduler below FIFO's."""
    cells = ratios(0.02, **{"dl2-ul2-fifo-q100-mt3": 0.5, "dl2-ul2-dataack-q100-mt3": 0.5,
                            "dl2-ul2-fifo-q100-mt8": 0.06, "dl2-ul2-dataack-q100-mt8": 0.47})
    v = run("scheduler_alleviates_unfairness", cells)
    assert [line.split(":")[0] for line in v.held] == ["dl2-ul2, Q = 100, M_t = 8"]
    assert not any("M_t = 3" in line for line in v.missing)
    slow = {"dl4-ul4-fifo-q100-mt8": cell(4.0, up_goodput_pkts_s=470),
            "dl4-ul4-dataack-q100-mt8": cell(4.0, up_goodput_pkts_s=330)}
    assert run("scheduler_slows_uplink_senders", slow).held[0].startswith("dl4-ul4, Q = 100, M_t = 8: uplink 330")


def test_adaptive_scheduler_is_beyond_the_paper() -> None:
    good = {f"dl4-ul1-{v}-q100-mt{mt}": cell(0.05, ratio_down_up=r + 0.01 * mt) for mt in (4, 5, 6, 7, 8)
            for v, r in (("fifo", 0.5), ("dataack", 0.8), ("adaptive", 3.8))}
    v = run("adaptive_tracks_flow_ratio", good)
    assert v.beyond and v.counts["held"] == 15 and v.counts["missing"] == 15    # dl1-ul4 not run
    assert v.verdict == "not evaluated"                                       # its headline (dl1-ul4) not measured
    bad = {**good, "dl4-ul1-adaptive-q100-mt8": cell(0.05, ratio_down_up=0.5)}
    assert run("adaptive_tracks_flow_ratio", bad).failed


def test_every_claim_reads_the_configured_matrix() -> None:
    """With nothing run, every claim of the paper is not evaluated, each of its conditions missing."""
    v = judge_claims(Cells.from_cells({}, PARAMS), CFG.data["reference"], "full")
    assert {x.verdict for x in v} == {"not evaluated"} and all(x.missing for x in v)
    assert {x.claim for x in v if x.beyond} == {"adaptive_tracks_flow_ratio"}


def test_mt2_investigation_judges_each_setting_by_the_claims_comparisons(tmp_path: Path) -> None:
    """analysis/wlan/investigation_channel.py on hand-made cells: a setting under which the downlink's
    goodput rises from M_t = 1 to 2 and the uplink's falls at every (scenario, Q), the ratio at
    M_t = 2 higher with the larger Q and above 1, has the claim's pattern; the model as configured
    (the downlink falling) does not; the section and figure need a setting besides it."""
    from analysis.wlan import investigation_channel as inv

    goodputs = {"fifo": {25: (220, 200, 100, 350), 100: (240, 190, 230, 210)},
                "fifo-fer5": {25: (200, 200, 220, 190), 100: (210, 190, 300, 170)}}
    cells = {}
    for scen in ("dl2-ul2", "dl4-ul4"):
        for v, by_q in goodputs.items():
            for q, (d1, u1, d2, u2) in by_q.items():
                for mt, (d, u) in ((1, (d1, u1)), (2, (d2, u2))):
                    c = cell(4.0, down_goodput_pkts_s=d, up_goodput_pkts_s=u)
                    c["metrics"] |= cell(0.05, ratio_down_up=d / u)["metrics"]
                    cells[f"{scen}-{v}-q{q}-mt{mt}"] = c
    root, run = results(tmp_path, cells)
    found = {s.variant: s for s in inv.settings(run)}
    assert list(found) == ["fifo", "fifo-fer5"]
    assert [c.outcome for c in found["fifo"].steps] == ["failed", "failed", "failed", "failed"]
    assert found["fifo-fer5"].count("held") == len(found["fifo-fer5"].comparisons) == 12
    text = "\n".join(inv.section(run))
    assert "The claim's pattern holds under FIFO, 5 % channel frame errors." in text
    assert ("| FIFO, 5 % channel frame errors | dl4-ul4 | 100 | 1.11 | 1.76 | 210 -> 300 | 190 -> 170 | held | held |"
            in text)
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
    """analysis/wlan/investigation_idle.py on hand-made cells: a setting whose numbers are about the
    paper's 370/250/120 (within 5 pkt/s, its printed tens) with the downlink ahead reproduces the
    claim, the others do not; the section calls the sweep a fit, from the claim's config; the
    direction at M_t 1-4 is read against the paper's (downlink ahead up to M_t = 3); without an
    idle-time cell there is no section and no figure."""
    from analysis.wlan import investigation_idle as inv

    def dl1(down: float, up: float) -> dict[str, Any]:
        c = cell(2.0, down_goodput_pkts_s=down, up_goodput_pkts_s=up, total_goodput_pkts_s=down + up)
        c["metrics"] |= cell(0.04, ratio_down_up=down / up)["metrics"]
        return c

    cells = {"dl1-ul1-fifo-q100-mt1": dl1(236, 191), "dl1-ul1-fifo-aifsn12-q100-mt1": dl1(205, 165),
             "dl1-ul1-fifo-capture-q100-mt1": dl1(295, 141)}
    for mt, (down, up) in enumerate([(251, 121), (230, 180), (200, 210), (150, 260)], start=1):
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
    assert "| capture | 200 | 372 | 251 | 121 | 2.07 | 4 of 4 held | reproduced |" in text
    assert "The claim's comparisons all hold under capture with 200 us." in text
    assert "**This is a fit, not an explanation.** Fitted: the stations' distance from the AP" in text
    assert "Against the fitted values: the paper: \"each STA is within the transmission range" in text
    assert "Capture, 200 us idle per access, M_t 1, 2, 3, 4: against the paper's direction at M_t = 3" in text
    assert [p.name for p in inv.fig_idle(run)] == ["investigation_idle.png", "investigation_idle.pdf"]
    bare = without(root, "aifsn")
    assert inv.section(bare) == [] and inv.fig_idle(bare) == []
