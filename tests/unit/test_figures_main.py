"""`python -m analysis.<paper>` on results whose trials are not aggregated yet (just restored)."""
from __future__ import annotations

from pathlib import Path

from analysis.ledbat.__main__ import main


def test_restored_trials_without_cell_json_are_refused_and_nothing_is_drawn(tmp_path: Path, capsys) -> None:
    results, out = tmp_path / "results", tmp_path / "figures"
    (results / "ledbat-rtt40-n2-30mb" / "trial-1").mkdir(parents=True)
    assert main(["--profile", "smoke", "--results", str(results), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "1 cell of profile smoke" in err and "has trials but no cell.json" in err
    assert "ledbat-rtt40-n2-30mb" in err and "snakemake" in err
    assert not (out / "verdict.md").exists()


def test_a_trial_still_under_way_does_not_count_as_unaggregated(tmp_path: Path) -> None:
    results, out = tmp_path / "results", tmp_path / "figures"
    (results / "ledbat-rtt40-n2-30mb" / "trial-1.partial").mkdir(parents=True)
    assert main(["--profile", "smoke", "--results", str(results), "--out", str(out)]) == 0
    assert (out / "verdict.md").exists()


def test_a_profile_outside_the_config_is_drawn_from_what_it_has(tmp_path: Path) -> None:
    """A test's own profile name (the VM lane's figures from one trial) has no cell list to check."""
    from analysis.collateral.__main__ import main as collateral_main

    results, out = tmp_path / "results", tmp_path / "figures"
    (results / "cubic-rtt50-f1" / "trial-1").mkdir(parents=True)
    assert collateral_main(["--profile", "test", "--results", str(results), "--out", str(out)]) == 0
