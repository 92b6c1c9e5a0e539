"""802.11b metrics on hand-made wlan.json inputs: every expected value is worked out here by hand."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from analysis import validate
from analysis.wlan import metrics as wlan


def flow(fid: int, direction: str, rx_bytes: int, sent: int, retx: int) -> dict[str, Any]:
    return {"id": fid, "direction": direction, "station": fid, "src": "10.0.0.1", "dst": f"10.1.0.{fid + 1}",
            "port": 5000 + fid, "start_s": 1.5, "rx_bytes": rx_bytes, "data_sent": sent, "data_retx": retx,
            "loss_prob": retx / sent if sent else None, "rto_events": 1, "recovery_events": 2,
            "goodput_pkts_s": 0.0, "goodput_kbps": 0.0}


def raw_run() -> dict[str, Any]:
    """Two downlink flows and one uplink flow over a 100-s window, 1000-byte segments.

    down: 3 000 000 + 1 000 000 bytes = 4000 segments in 100 s = 40 pkt/s, 320 kbit/s
    up:   2 000 000 bytes = 2000 segments = 20 pkt/s, 160 kbit/s; ratio 40 / 20 = 2
    down DATA: 4000 + 1000 sent, 40 + 10 retransmitted -> 50 / 5000 = 0.01
    up DATA: 2500 sent, 100 retransmitted -> 0.04
    """
    raw: dict[str, Any] = {
        "window_s": 100.0, "tcp_segment_bytes": 1000,
        "flows": [flow(1, "down", 3_000_000, 4000, 40), flow(2, "down", 1_000_000, 1000, 10),
                  flow(3, "up", 2_000_000, 2500, 100)],
        "down_goodput_pkts_s": 40.0, "up_goodput_pkts_s": 20.0, "ratio_down_up": 2.0,
        "down_loss_prob": 0.01, "up_loss_prob": 0.04,
        "ap_qdisc_enq_data": 5000, "ap_qdisc_deq_data": 4950, "ap_qdisc_drop_data": 25,
        "ap_qdisc_enq_ack": 1000, "ap_qdisc_deq_ack": 1000, "ap_qdisc_drop_ack": 250,
        "ap_qdisc_enq_other": 0, "ap_qdisc_deq_other": 50, "ap_qdisc_drop_other": 0,
        "mac_ap_retry_drops_data": 10, "mac_sta_retry_drops_data": 75, "sta_qdisc_drop_data": 5,
        "mac_tx_failed_prob": 0.05,
    }
    for q, (data, ack) in (("q1", (5000, 0)), ("q2", (0, 1000))):
        for op in ("enq", "deq", "drop"):
            raw[f"ap_{q}_{op}_data"], raw[f"ap_{q}_{op}_ack"], raw[f"ap_{q}_{op}_other"] = data, ack, 0
    for x in ("ap", "sta"):
        for k in ("tx_failed", "final_failed", "retry_drops_ack"):
            raw[f"mac_{x}_{k}"] = 3
    return raw


def test_goodput_ratio_and_loss_by_hand() -> None:
    m = wlan.trial_metrics(raw_run())
    assert m["down_goodput_pkts_s"] == pytest.approx(40.0)
    assert m["up_goodput_pkts_s"] == pytest.approx(20.0)
    assert m["total_goodput_pkts_s"] == pytest.approx(60.0)
    assert m["down_goodput_kbit_s"] == pytest.approx(320.0)
    assert m["up_goodput_kbit_s"] == pytest.approx(160.0)
    assert m["ratio_down_up"] == pytest.approx(2.0)
    assert m["down_loss_prob"] == pytest.approx(0.01)
    assert m["up_loss_prob"] == pytest.approx(0.04)
    # where DATA was lost: 25 / 5000 at the AP buffer, 10 / 5000 at the AP's MAC, 75 / 2500 and
    # 5 / 2500 for the uplink at the stations' MAC and interface queues
    assert m["down_loss_ap_queue"] == pytest.approx(0.005)
    assert m["down_loss_mac"] == pytest.approx(0.002)
    assert m["up_loss_mac"] == pytest.approx(0.03)
    assert m["up_loss_sta_queue"] == pytest.approx(0.002)
    # the AP served 4950 DATA, 1000 ACKs and 50 other: ACK share 1000 / 6000; 250 of 1250 ACKs dropped
    assert m["ap_ack_share"] == pytest.approx(1 / 6)
    assert m["ap_ack_drop_frac"] == pytest.approx(0.2)
    # per flow: 30 and 10 pkt/s down; Jain over the downlink (30 + 10)^2 / (2 (900 + 100)) = 0.8
    assert m["down1.goodput_pkts_s"] == pytest.approx(30.0)
    assert m["down2.goodput_pkts_s"] == pytest.approx(10.0)
    assert m["up1.loss_prob"] == pytest.approx(0.04)
    assert m["down_jain"] == pytest.approx(0.8)
    assert m["up_jain"] == pytest.approx(1.0)


def test_undefined_ratio_and_loss_are_none_not_numbers() -> None:
    assert wlan.ratio(10.0, 0.0) is None
    assert wlan.loss_probability(0, 0) is None
    assert wlan.jain_index([0.0, 0.0]) is None
    raw = raw_run()
    raw["flows"][2]["rx_bytes"] = 0
    m = wlan.trial_metrics(raw)
    assert m["ratio_down_up"] is None and m["up_goodput_pkts_s"] == 0.0


def test_flow_ids_follow_station_order() -> None:
    raw = raw_run()
    raw["flows"].reverse()
    assert wlan.flow_ids(raw) == {1: "down1", 2: "down2", 3: "up1"}


def spec() -> dict[str, Any]:
    return {"paper": "wlan", "cell": "dl2-ul1-fifo-q100-mt1", "trial": 2, "profile": "quick"}


def prov(checks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"fidelity": checks, "timing": {"simulation_s": 3.5, "simulator_run_s": 3.2}}


def check(name: str, ok: bool | None) -> dict[str, Any]:
    return {"name": name, "configured": 3, "measured": 3 if ok else 2, "tolerance": 0, "unit": "", "pass": ok}


def test_summary_is_valid_and_matches_its_schema() -> None:
    s = wlan.summarize(spec(), raw_run(), prov([check("stations_associated", True)]))
    validate(s, "summary")
    assert s["valid"] and s["invalid_reasons"] == [] and s["warnings"] == []
    assert [f["id"] for f in s["flows"]] == ["down1", "down2", "up1"]
    assert s["metrics"]["ratio_down_up"] == pytest.approx(2.0)
    assert s["timing"] == {"simulation_s": 3.5, "simulator_run_s": 3.2}


def test_failed_check_invalidates_and_starved_flow_warns() -> None:
    raw = raw_run()
    raw["flows"][1]["rx_bytes"] = 0
    s = wlan.summarize(spec(), raw, prov([check("stations_associated", False)]))
    validate(s, "summary")
    assert not s["valid"] and "stations_associated" in s["invalid_reasons"][0]
    assert any("down2 delivered nothing" in w for w in s["warnings"])


def test_disagreement_with_the_models_own_numbers_is_reported() -> None:
    raw = copy.deepcopy(raw_run())
    raw["up_goodput_pkts_s"] = 21.0
    s = wlan.summarize(spec(), raw, prov([]))
    assert any("up_goodput_pkts_s" in w for w in s["warnings"])


def test_identical_cells_say_why_only_where_the_retry_limit_never_acted() -> None:
    """A cell equal to one with a lower M_t is explained by the lower cell's trials having no frame
    that used up its attempts; another equal pair (here: another ACK queue) is listed bare, and so
    is an M_t pair whose lower cell did drop frames at its limit."""
    from types import SimpleNamespace

    from analysis.wlan.claims import RETRY_DROPS
    from analysis.wlan.verdict import identical_cells

    def cell(goodput: float, drops: int) -> dict[str, Any]:
        metrics = {k: {"values": [0, 0]} for k in RETRY_DROPS}
        metrics["mac_ap_retry_drops_data"] = {"values": [drops, 0]}
        return {"metrics": {**metrics, "goodput": {"values": [goodput, goodput]}}}

    base = {"scen": "dl1-ul1", "q": 100, "ackq": 100}
    params = {"a-mt5": {**base, "mt": 5}, "a-mt6": {**base, "mt": 6}, "a-mt8": {**base, "mt": 8},
              "b-mt1": {**base, "mt": 1}, "c-mt1": {**base, "ackq": 1000, "mt": 1},
              "d-mt2": {**base, "q": 10, "mt": 2}, "d-mt3": {**base, "q": 10, "mt": 3}}
    cells = {"a-mt5": cell(1.0, 0), "a-mt6": cell(1.0, 0), "a-mt8": cell(1.0, 0), "b-mt1": cell(2.0, 0),
             "c-mt1": cell(2.0, 0), "d-mt2": cell(3.0, 4), "d-mt3": cell(3.0, 4)}
    run = SimpleNamespace(cells=cells, params=params)
    assert identical_cells(run) == ["a-mt6 = a-mt5 (no frame used up its 5 attempts)",
                                    "a-mt8 = a-mt5 (no frame used up its 5 attempts)",
                                    "c-mt1 = b-mt1", "d-mt3 = d-mt2"]
