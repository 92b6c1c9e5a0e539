"""configuration/choices.py: an open choice's alternative changes exactly the cells it names, in
exactly what it names; equal cells are reused; an alternative that changes nothing, or claims
silence against silence without favouring, is refused by name."""
from pathlib import Path

import pytest
import yaml

from configuration import choices
from configuration.load import ConfigError
from experiments import load_paper
from tests.unit.test_config import write_variant

CONFIG = Path(__file__).resolve().parents[2] / "config"


def flat(value, prefix=""):
    if isinstance(value, dict):
        return {k: v for key, sub in value.items() for k, v in flat(sub, f"{prefix}.{key}").items()}
    if isinstance(value, list):
        return {k: v for i, sub in enumerate(value) for k, v in flat(sub, f"{prefix}[{i}]").items()}
    return {prefix: value}


def changed(a: dict, b: dict) -> set[str]:
    fa, fb = flat(a), flat(b)
    return {k for k in fa.keys() | fb.keys() if fa.get(k) != fb.get(k)}


def alternative(cfg, key):
    return next(a for a in cfg.alternatives if a.key == key)


@pytest.mark.parametrize("paper", ["collateral", "ledbat", "westwood", "wlan"])
def test_each_alternative_changes_exactly_the_cells_it_names_and_only_its_setting(paper):
    """Every touched cell's stand-in differs from it where the alternative says and nowhere else;
    every cell it does not select has no stand-in."""
    cfg = load_paper(paper)
    data = yaml.safe_load((CONFIG / f"{paper}.yaml").read_text())
    assert cfg.alternatives
    for choice in data["reference"]["choices"]:
        for alt in choice.get("alternatives", []):
            found = alternative(cfg, f"{choice['id']}.{alt['id']}")
            sel = alt["cells"]
            expected = (set(cfg.matrix_cells) if sel == "matrix" else
                        {c.cell_id for c in cfg.cells_by_id.values()
                         if all(c.params.get(k) in v for k, v in sel.items())})
            assert set(found.twins) == expected, found.key
            for ref, stand_in in found.twins.items():
                cell = cfg.cells_by_id[ref]
                other = cfg.any_cell(stand_in)
                assert other is not None and other.scenario != cell.scenario, (found.key, ref)
                diff = changed(cell.scenario, other.scenario)
                allowed = {f".{k}" for k in alt.get("scenario", {})} | set(flat(alt.get("scenario", {})))
                placeholders = {p for p in alt.get("set", {})}
                for path in diff:
                    template = flat(data["scenario"]).get(path, "")
                    assert (path in allowed or any(path.startswith(a) for a in allowed)
                            or any(f"${{{p}}}" in str(template) for p in placeholders)), (found.key, ref, path)


def test_a_twin_equal_to_a_cell_the_matrix_runs_is_that_cell():
    """Collateral's dummynet queue at 50 ms is the CUBIC investigation's cell; at 100 ms it is new."""
    cfg = load_paper("collateral")
    dn = alternative(cfg, "queue_accounting.dummynet")
    assert dn.twins["cubic-rtt50-f2"] == "cubic-dnqueue-rtt50-f2"
    assert dn.twins["cubic-rtt100-f2"] == choices.twin_id("cubic-rtt100-f2", "queue_accounting", "dummynet")
    assert dn.twins["cubic-rtt100-f2"] in cfg.twins_by_id and dn.twins["cubic-rtt100-f2"] not in cfg.cells_by_id
    backoff = alternative(cfg, "htcp_backoff.linux_module")
    assert backoff.twins == {c: c.replace("htcp-", "htcp-adaptive-") for c in backoff.twins}


def test_a_twin_runs_its_alternative_and_no_profile_runs_it():
    cfg = load_paper("collateral")
    twin = choices.twin_id("newreno-rtt100-f5", "bulk_generator", "iperf3")
    spec = cfg.trial_spec(twin, 2, "full")
    assert spec["cell"] == twin and spec["bulk_generator"] == "iperf3"
    assert cfg.trial_spec("newreno-rtt100-f5", 2, "full")["bulk_generator"] == "iperf2"
    longer = cfg.trial_spec(choices.twin_id("newreno-rtt100-f5", "trial_length", "s360"), 1, "full")
    assert longer["duration_s"] == 360
    for profile in ("smoke", "quick", "full"):
        assert not {c.cell_id for c in cfg.cells(profile)} & set(cfg.twins_by_id)


def test_an_alternative_that_changes_nothing_is_refused(tmp_path):
    def same_queue(data):
        data["reference"]["choices"][0]["alternatives"][0]["set"] = {"queue_bytes": 60000}
    with pytest.raises(ConfigError, match=r"alternatives\[0\]: changes nothing in cell newreno-rtt50-f1"):
        load_paper(write_variant(tmp_path, same_queue))


def test_an_unknown_parameter_or_an_empty_selection_is_refused(tmp_path):
    def unknown(data):
        data["reference"]["choices"][0]["alternatives"][0]["cells"] = {"colour": ["red"]}
    with pytest.raises(ConfigError, match=r"cells: no matrix parameter 'colour'"):
        load_paper(write_variant(tmp_path, unknown))

    def empty(data):
        data["reference"]["choices"][0]["alternatives"][0]["cells"] = {"variant": ["bbr"]}
    with pytest.raises(ConfigError, match=r"selects no cell"):
        load_paper(write_variant(tmp_path, empty))


def test_silence_against_silence_must_be_favoured(tmp_path):
    def unfavoured(data):
        choice = data["reference"]["choices"][0]
        choice["paper"] = choices.SILENT
        choice["alternatives"][0].update(paper=choices.SILENT, favoured=False)
    with pytest.raises(ConfigError, match=r"favoured: false, but the paper is silent on both"):
        load_paper(write_variant(tmp_path, unfavoured))


def test_an_alternative_without_its_paper_words_is_refused_by_the_schema(tmp_path):
    def no_words(data):
        del data["reference"]["choices"][0]["alternatives"][0]["paper"]
    with pytest.raises(ConfigError, match=r"'paper' is a required property"):
        load_paper(write_variant(tmp_path, no_words))


def test_cells_no_claim_reads_stay_touched_but_are_named_unread():
    """wlan's ACK-queue sensitivity cells keep their twins under every alternative (a claim that came
    to read one would be "not evaluated" there), and are named unread, so the workflow skips them."""
    cfg = load_paper("wlan")
    ackq = {c for c, cell in cfg.cells_by_id.items() if cell.params.get("variant") == "dataack-ackq1000"}
    assert len(ackq) == 16
    for alt in cfg.alternatives:
        assert alt.unread == ackq and ackq <= set(alt.twins), alt.key


def test_unread_cells_the_alternative_does_not_touch_are_refused(tmp_path):
    def stray(data):
        data["reference"]["choices"][0]["alternatives"][0]["unread"] = {
            "cells": {"variant": ["cubic", "cubic-beta08"]}, "why": "none reads them"}
    with pytest.raises(ConfigError, match=r"unread.cells: selects cubic-beta08-rtt50-f1 and 2 more, which the "
                                          r"alternative does not touch"):
        load_paper(write_variant(tmp_path, stray))

    def no_reason(data):
        data["reference"]["choices"][0]["alternatives"][0]["unread"] = {"cells": {"variant": ["cubic"]}}
    with pytest.raises(ConfigError, match=r"'why' is a required property"):
        load_paper(write_variant(tmp_path, no_reason))
