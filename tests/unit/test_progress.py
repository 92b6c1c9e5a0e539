"""testbed.progress: the plan's forecast and the running estimate count measured trials per lane
and simulated ones (which take a core, no lane) per core, each with its own measured overhead."""

from __future__ import annotations

import json
from pathlib import Path

from testbed import progress


def trials(tmp: Path, measured: int, simulated: int) -> list[dict]:
    out = [{"dir": str(tmp / f"m{k}"), "duration_s": 60, "per_core": False} for k in range(measured)]
    return out + [{"dir": str(tmp / f"s{k}"), "duration_s": 0, "per_core": True} for k in range(simulated)]


def test_the_forecast_names_each_kind(tmp_path: Path) -> None:
    line = progress.write_plan(tmp_path, trials(tmp_path, 2, 6), lanes=1, cores=2)
    assert line.startswith("8 trials to run, 2.0 min of traffic; about 2.3 min with 1 lanes; "
                           "6 on cores (simulated or virtual time), 2 at a time")
    only_sim = progress.write_plan(tmp_path, trials(tmp_path, 0, 1), lanes=1, cores=2)
    assert only_sim.startswith("1 trials to run; 1 on cores (simulated or virtual time), 1 at a time")
    assert "traffic" not in only_sim
    assert json.loads(progress.plan_path(tmp_path).read_text())["cores"] == 1


def test_the_estimate_divides_simulated_trials_by_cores(tmp_path: Path) -> None:
    progress.write_plan(tmp_path, trials(tmp_path, 2, 5), lanes=1, cores=2)
    # a simulated trial took 20 s: the other four take 2 x 20 s on two cores; the two measured
    # trials borrow that overhead until one is measured: 2 x (60 + 20) s on one lane
    line = progress.record_done(tmp_path, str(tmp_path / "s0"), wall_s=20, traffic_s=0)
    assert line == f"[progress] 1/7 trials done, about {(40 + 160) / 60:.1f} min left"
    # a measured trial took 90 s (30 s over its traffic): its kind now has its own overhead
    line = progress.record_done(tmp_path, str(tmp_path / "m0"), wall_s=90, traffic_s=60)
    assert line == f"[progress] 2/7 trials done, about {(40 + 90) / 60:.1f} min left"


def test_without_a_plan_there_is_no_estimate(tmp_path: Path) -> None:
    assert progress.record_done(tmp_path, str(tmp_path / "x"), 1, 0) is None


def test_bounded_trials_are_estimated_by_the_share_of_their_bound_they_took(tmp_path: Path) -> None:
    """Fixed-size transfers end before their bound: after one took half of it, the rest count half."""
    plan = [{"dir": str(tmp_path / f"b{k}"), "duration_s": 300, "per_core": False, "bounded": True}
            for k in range(3)]
    line = progress.write_plan(tmp_path, plan, lanes=1)
    assert line.startswith("3 trials to run, 15.0 min of traffic at most;")
    line = progress.record_done(tmp_path, str(tmp_path / "b0"), wall_s=170, traffic_s=150)
    assert line == f"[progress] 1/3 trials done, about {2 * (150 + 20) / 60:.1f} min left"


def test_the_run_summary_counts_each_papers_trials_and_their_span(tmp_path: Path, monkeypatch) -> None:
    """What a run measured, per paper: trials, summed wall time, first start and last end."""
    dirs = {p: [tmp_path / p / "cell" / f"trial-{k}" for k in (1, 2)] for p in ("ledbat", "wlan")}
    progress.write_plan(tmp_path, [{"dir": str(d), "duration_s": 0, "per_core": True}
                                   for ds in dirs.values() for d in ds], lanes=1, cores=2)
    start = json.loads(progress.plan_path(tmp_path).read_text())["created"]
    ends = iter([start + 100, start + 3700, start + 50, start + 60])
    monkeypatch.setattr(progress.time, "time", lambda: next(ends))
    for d, wall in zip([*dirs["ledbat"], *dirs["wlan"]], [90, 3510, 50, 10], strict=True):
        progress.record_done(tmp_path, str(d), wall_s=wall, traffic_s=0)
    assert progress.run_summary(tmp_path) == [
        "[timing] ledbat: 2 trials measured, 1:00:00 of trial wall time summed, from 0:00:10 to 1:01:40 of this run",
        "[timing] wlan: 2 trials measured, 0:01:00 of trial wall time summed, from 0:00:00 to 0:01:00 of this run"]


def test_a_run_that_measured_nothing_has_no_summary(tmp_path: Path) -> None:
    assert progress.run_summary(tmp_path) == []
    progress.write_plan(tmp_path, [], lanes=1, cores=2)
    assert progress.run_summary(tmp_path) == []
