"""archive.trials: finished trials packed into data/ come back byte for byte; a damaged archive
is refused with the file named and nothing half-restored; a trial run again replaces its archive."""

from __future__ import annotations

import io
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from archive import trials as arc
from configuration import CHECKOUT
from experiments import load_paper
from tcprepro import cli

FIXTURES = Path(__file__).resolve().parents[1] / "data"


def make_trial(results: Path, cell: str, k: int) -> Path:
    """A finished trial directory built from real captured traces (tests/data/*_real.*)."""
    d = results / "full" / "westwood" / cell / f"trial-{k}"
    d.mkdir(parents=True)
    shutil.copy(FIXTURES / "tcp_probe_real.trace", d / "tcp_probe.trace")
    shutil.copy(FIXTURES / "qdisc_real.csv", d / "qdisc.csv")
    shutil.copy(FIXTURES / "iperf_real.json", d / "iperf-bulk0.json")
    (d / "summary.json").write_text(json.dumps({"valid": True, "trial": k}))
    (d / ".snakemake_timestamp").touch()
    return d


def add_invalid_attempt(trial: Path) -> None:
    """What testbed/run.py keeps of an attempt that failed its fidelity checks."""
    (trial / "invalid-attempts" / "1").mkdir(parents=True)
    (trial / "invalid-attempts" / "1" / "summary.json").write_text(json.dumps({"valid": False}))


def test_pack_then_restore_gives_the_same_files(tmp_path: Path) -> None:
    results, data, fresh = tmp_path / "results", tmp_path / "data", tmp_path / "fresh"
    trials = [make_trial(results, "cubic-t1", k) for k in (1, 2)]
    add_invalid_attempt(trials[1])
    (results / "full" / "westwood" / "cubic-t1" / "trial-3.partial").mkdir()   # an unfinished trial
    make_trial(results, "cubic-t9", 1)                                            # a cell the config has not
    make_trial(results, "cubic-t3+loss_direction.data_only", 1)                   # an open choice's twin
    packed = arc.pack("full", ["westwood"], results, data)["westwood"]
    assert packed.done == ["cubic-t1/trial-1", "cubic-t1/trial-2", "cubic-t3+loss_direction.data_only/trial-1"]
    assert packed.not_in_config == ["cubic-t9/trial-1"] and not (data / "full" / "westwood" / "cubic-t9").exists()
    assert "1 left out: their cells are not in the paper's config (cubic-t9)" in packed.render("packed")
    restored = arc.restore("full", ["westwood"], fresh, data)["westwood"]
    assert restored.done == packed.done
    assert (fresh / "full" / "westwood" / "cubic-t3+loss_direction.data_only" / "trial-1" / "summary.json").exists()
    # the twin is archived compactly (tests/unit/test_compact_twins.py), the reference trials whole
    assert packed.compact == ["cubic-t3+loss_direction.data_only/trial-1"]
    assert not (fresh / "full" / "westwood" / "cubic-t3+loss_direction.data_only" / "trial-1" / "qdisc.csv").exists()
    for t in trials:
        back = fresh / "full" / "westwood" / "cubic-t1" / t.name
        names = sorted(p.relative_to(back).as_posix() for p in back.rglob("*") if p.is_file())
        assert names == arc.trial_files(t) and "summary.json" in names and ".snakemake_timestamp" not in names
        assert all((back / n).read_bytes() == (t / n).read_bytes() for n in names)
        assert (back / "qdisc.csv").stat().st_mtime == int((t / "qdisc.csv").stat().st_mtime)
    assert (fresh / "full" / "westwood" / "cubic-t1" / "trial-2" / "invalid-attempts" / "1" / "summary.json").exists()
    assert not list(fresh.rglob("*.partial"))
    # each restored cell is aggregated as the workflow's cell rule would, so an analysis run by hand
    # over the restored tree reads it as measured
    assert restored.aggregated == ["cubic-t1", "cubic-t3+loss_direction.data_only"]
    cell = json.loads((fresh / "full" / "westwood" / "cubic-t1" / "cell.json").read_text())
    assert cell["trials"] == [1, 2] and cell["expected_trials"] == load_paper("westwood").profile("full")["trials"]
    # a second restore touches nothing; a second pack writes nothing
    again = arc.restore("full", ["westwood"], fresh, data)["westwood"]
    assert again.unchanged == packed.done and again.aggregated == []
    assert arc.pack("full", ["westwood"], results, data)["westwood"].unchanged == packed.done


def test_packing_is_deterministic(tmp_path: Path) -> None:
    trial = make_trial(tmp_path, "cubic-t1", 1)
    assert arc.tar_bytes(trial) == arc.tar_bytes(trial)


def test_a_trial_run_again_replaces_its_archive(tmp_path: Path) -> None:
    results, data = tmp_path / "results", tmp_path / "data"
    trial = make_trial(results, "cubic-t1", 1)
    arc.pack("full", ["westwood"], results, data)
    (trial / "summary.json").write_text(json.dumps({"valid": True, "trial": 1, "attempt": 2}))
    again = arc.pack("full", ["westwood"], results, data)["westwood"]
    assert again.replaced == ["cubic-t1/trial-1"] and not again.done
    manifest = json.loads((data / "full" / "westwood" / arc.MANIFEST).read_text())
    assert manifest["cubic-t1/trial-1"]["summary.json"] == arc.digests(trial)["summary.json"]


def test_a_local_trial_that_differs_is_kept(tmp_path: Path) -> None:
    results, data = tmp_path / "results", tmp_path / "data"
    trial = make_trial(results, "cubic-t1", 1)
    arc.pack("full", ["westwood"], results, data)
    (trial / "summary.json").write_text("{}")
    out = arc.restore("full", ["westwood"], results, data)["westwood"]
    assert out.kept_local == ["cubic-t1/trial-1"] and (trial / "summary.json").read_text() == "{}"


def test_a_damaged_archive_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    results, data, fresh = tmp_path / "results", tmp_path / "data", tmp_path / "fresh"
    make_trial(results, "cubic-t1", 1)
    arc.pack("full", ["westwood"], results, data)
    manifest_path = data / "full" / "westwood" / arc.MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["cubic-t1/trial-1"]["qdisc.csv"] = "0" * 64
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(arc.ArchiveError, match=r"trial-1\.tar\.xz: qdisc\.csv does not match its SHA-256"):
        arc.restore("full", ["westwood"], fresh, data)
    cell = fresh / "full" / "westwood" / "cubic-t1"
    assert not cell.exists() or not any(cell.iterdir())
    (data / "full" / "westwood" / "cubic-t1" / "trial-1.tar.xz").write_bytes(b"not xz")
    with pytest.raises(arc.ArchiveError, match=r"unreadable.*git checkout"):
        arc.restore("full", ["westwood"], fresh, data)


def test_restoring_in_parallel_gives_what_one_at_a_time_gives(tmp_path: Path) -> None:
    results, data = tmp_path / "results", tmp_path / "data"
    for cell, k in [("cubic-t1", 1), ("cubic-t1", 2), ("westwood-t1", 1), ("cubic-t3+loss_direction.data_only", 1)]:
        make_trial(results, cell, k)
    packed = arc.pack("full", ["westwood"], results, data)["westwood"]
    serial = arc.restore("full", ["westwood"], tmp_path / "serial", data)["westwood"]
    parallel = arc.restore("full", ["westwood"], tmp_path / "parallel", data, jobs=3)["westwood"]
    assert serial.done == parallel.done == packed.done
    one, many = (tmp_path / w / "full" / "westwood" for w in ("serial", "parallel"))
    files = sorted(p.relative_to(one).as_posix() for p in one.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(many).as_posix() for p in many.rglob("*") if p.is_file())
    assert all((one / f).read_bytes() == (many / f).read_bytes() for f in files)
    assert arc.restore("full", ["westwood"], tmp_path / "parallel", data, jobs=3)["westwood"].unchanged == packed.done


def test_a_damaged_archive_restored_in_parallel_stops_the_run_and_leaves_no_partial(tmp_path: Path) -> None:
    results, data, fresh = tmp_path / "results", tmp_path / "data", tmp_path / "fresh"
    for k in range(1, 7):
        make_trial(results, "cubic-t1", k)
    arc.pack("full", ["westwood"], results, data)
    (data / "full" / "westwood" / "cubic-t1" / "trial-3.tar.xz").write_bytes(b"not xz")
    with pytest.raises(arc.ArchiveError, match=r"trial-3\.tar\.xz: unreadable.*git checkout"):
        arc.restore("full", ["westwood"], fresh, data, jobs=2)
    cell = fresh / "full" / "westwood" / "cubic-t1"
    assert not (cell / "trial-3").exists() and not list(fresh.rglob("*.partial"))
    assert all((t / "summary.json").exists() for t in cell.iterdir())      # what did restore is whole


def test_parallel_restore_takes_no_more_jobs_than_memory_holds_at_their_peak() -> None:
    peak = arc.UNPACK_PEAK_BYTES
    assert arc.affordable_jobs(8, available=3 * peak + peak // 2) == 3
    assert arc.affordable_jobs(2, available=10 * peak) == 2
    assert arc.affordable_jobs(4, available=peak // 2) == 1          # one always runs
    assert 1 <= arc.affordable_jobs(64) <= 64                         # this machine's /proc/meminfo


def test_cli_jobs_is_a_positive_number_or_all_and_for_restore_only() -> None:
    for bad in ("0", "-1", "two"):
        proc = _cli("restore", "--jobs", bad)
        assert proc.returncode == 2 and "a positive number of jobs, or `all`" in proc.stderr
    proc = _cli("status", "--paper", "westwood", "--jobs", "2")
    assert proc.returncode == 2 and "--jobs: `archive restore` only, not `archive status`" in proc.stderr


def test_status_counts_trials_per_cell(tmp_path: Path) -> None:
    results, data = tmp_path / "results", tmp_path / "data"
    for k in (1, 2):
        make_trial(results, "cubic-t1", k)
    arc.pack("full", ["westwood"], results, data)
    got = arc.status("full", {"westwood": (["cubic-t1", "cubic-t2"], 2)}, data)
    assert got == "westwood: 2 of 4 trials archived, 1 of 2 cells complete; not complete: cubic-t2 (0)"


def test_status_json_counts_the_committed_archive_as_the_text_does(capsys: pytest.CaptureFixture[str]) -> None:
    """`archive status --json` on data/: the same numbers as the text, exit 0 either way; JSON is for
    status only (pack and restore refuse it, before they do anything)."""
    def archive(*args: str) -> tuple[int, str, str]:
        status = cli.main(["archive", *args])
        out = capsys.readouterr()
        return status, out.out, out.err

    (status, text, _), (js_status, js, _) = archive("status", "--paper", "westwood"), \
        archive("status", "--paper", "westwood", "--json")
    assert status == js_status == 0
    got = json.loads(js)
    (paper,) = got["papers"]
    assert got["profile"] == "full" and paper["paper"] == "westwood"
    assert text == arc.render_status(got["papers"]) + "\n"
    cfg = load_paper("westwood")
    cells, trials = {c.cell_id for c in cfg.cells("full")}, cfg.profile("full")["trials"]
    manifest = json.loads((Path(paper["archive"]) / arc.MANIFEST).read_text())
    assert paper["trials_archived"] == sum(k.split("/")[0] in cells and int(k.rsplit("-", 1)[1]) <= trials
                                           for k in manifest)
    assert (paper["cells"], paper["trials_expected"]) == (len(cells), len(cells) * trials)
    assert paper["cells_complete"] + len(paper["not_complete"]) == paper["cells"]
    status, out, err = archive("restore", "--paper", "westwood", "--json", "--results", "/nonexistent")
    assert status == 2 and "--json" in err and out == ""


def test_cli_names_an_unknown_paper() -> None:
    proc = subprocess.run([sys.executable, "-m", "tcprepro", "archive", "status", "--paper", "nosuch"],
                          cwd=CHECKOUT, capture_output=True, text=True)
    assert proc.returncode == 2 and "known papers: collateral" in proc.stderr


def test_cli_packs_and_restores_a_run_kept_beside_the_reference(tmp_path: Path) -> None:
    """--results/--data: a reference run under way on another lane keeps its own folders, so the
    committed reference in data/ is untouched until the new one is complete."""
    results, data, fresh = tmp_path / "uml-results", tmp_path / "uml-data", tmp_path / "fresh"
    make_trial(results, "cubic-t1", 1)

    def cli(*args: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "tcprepro", "archive", *args, "--paper", "westwood"],
                              cwd=CHECKOUT, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert "1 packed" in cli("pack", "--results", str(results), "--data", str(data))
    assert (data / "full" / "westwood" / "cubic-t1" / ("trial-1" + arc.SUFFIX)).exists()
    assert cli("status", "--data", str(data)).startswith("westwood: 1 of ")
    (status,) = json.loads(cli("status", "--data", str(data), "--json"))["papers"]
    assert status["trials_archived"] == 1 and status["not_complete"]["cubic-t1"] == 1
    assert "1 restored" in cli("restore", "--results", str(fresh), "--data", str(data))
    assert (fresh / "full" / "westwood" / "cubic-t1" / "trial-1" / "qdisc.csv").exists()


def _members(archive: Path) -> list[str]:
    with tarfile.open(archive, mode="r:xz") as tar:
        return sorted(tar.getnames())


def test_the_probe_trace_is_stored_as_columns_and_restored_as_text(tmp_path: Path) -> None:
    results, data, fresh = tmp_path / "results", tmp_path / "data", tmp_path / "fresh"
    trial = make_trial(results, "cubic-t1", 1)
    odd = trial / "invalid-attempts" / "1"
    odd.mkdir(parents=True)
    (odd / "tcp_probe.trace").write_bytes(b"\xff not text")            # stored as it is
    arc.pack("full", ["westwood"], results, data)
    archive = data / "full" / "westwood" / "cubic-t1" / "trial-1.tar.xz"
    names = _members(archive)
    assert "tcp_probe.trace.columns" in names and "tcp_probe.trace" not in names
    assert "invalid-attempts/1/tcp_probe.trace" in names
    arc.restore("full", ["westwood"], fresh, data)
    back = fresh / "full" / "westwood" / "cubic-t1" / "trial-1"
    assert (back / "tcp_probe.trace").read_bytes() == (trial / "tcp_probe.trace").read_bytes()
    assert (back / "invalid-attempts" / "1" / "tcp_probe.trace").read_bytes() == b"\xff not text"


def _repack(trial: Path, archive: Path, probe_member: tuple[str, bytes] | None) -> None:
    """Write the trial's archive by hand: the trace as plain text, or as this (name, body) member."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name in arc.trial_files(trial):
            body = (trial / name).read_bytes()
            info = tarfile.TarInfo(name)
            if name == "tcp_probe.trace" and probe_member:
                info.name, body = probe_member
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    archive.write_bytes(lzma.compress(raw.getvalue()))


def test_an_archive_with_the_plain_trace_still_restores(tmp_path: Path) -> None:
    """Archives packed before the column form hold tcp_probe.trace as text."""
    results, data, fresh = tmp_path / "results", tmp_path / "data", tmp_path / "fresh"
    trial = make_trial(results, "cubic-t1", 1)
    arc.pack("full", ["westwood"], results, data)
    _repack(trial, data / "full" / "westwood" / "cubic-t1" / "trial-1.tar.xz", None)
    arc.restore("full", ["westwood"], fresh, data)
    back = fresh / "full" / "westwood" / "cubic-t1" / "trial-1" / "tcp_probe.trace"
    assert back.read_bytes() == (trial / "tcp_probe.trace").read_bytes()


def test_a_damaged_column_form_is_refused(tmp_path: Path) -> None:
    results, data, fresh = tmp_path / "results", tmp_path / "data", tmp_path / "fresh"
    trial = make_trial(results, "cubic-t1", 1)
    arc.pack("full", ["westwood"], results, data)
    _repack(trial, data / "full" / "westwood" / "cubic-t1" / "trial-1.tar.xz",
            ("tcp_probe.trace.columns", b"tcprepro-probe-columns 1\n{}\n"))
    with pytest.raises(arc.ArchiveError, match=r"trial-1\.tar\.xz: unreadable.*damaged tcp_probe column form"):
        arc.restore("full", ["westwood"], fresh, data)
    assert not (fresh / "full" / "westwood" / "cubic-t1" / "trial-1").exists()


def test_an_analysis_cache_is_not_archived_and_an_archive_that_holds_one_is_kept(tmp_path: Path) -> None:
    """ledbat-metrics.json is rewritten whenever its analysis changes: packing it would repack every
    LEDBAT trial each time. An archive written before it was skipped keeps it and counts as current."""
    from analysis.ledbat.metrics import CACHE

    assert CACHE in arc.SKIP
    results, data, fresh = tmp_path / "results", tmp_path / "data", tmp_path / "fresh"
    trial = make_trial(results, "cubic-t1", 1)
    (trial / CACHE).write_text('{"version": "a"}\n')
    assert CACHE not in arc.trial_files(trial)
    # an archive from before: the cache inside, listed in the manifest
    dst = data / "full" / "westwood"
    (dst / "cubic-t1").mkdir(parents=True)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name in [*arc.trial_files(trial), CACHE]:
            tar.add(trial / name, arcname=name)
    old = lzma.compress(raw.getvalue())
    (dst / "cubic-t1" / "trial-1.tar.xz").write_bytes(old)
    listed = {**arc.digests(trial), CACHE: arc._sha256((trial / CACHE).read_bytes())}
    (dst / arc.MANIFEST).write_text(json.dumps({"cubic-t1/trial-1": listed}))
    (trial / CACHE).write_text('{"version": "b"}\n')             # the analysis changed since
    assert arc.pack("full", ["westwood"], results, data)["westwood"].unchanged == ["cubic-t1/trial-1"]
    assert (dst / "cubic-t1" / "trial-1.tar.xz").read_bytes() == old
    assert arc.restore("full", ["westwood"], fresh, data)["westwood"].done == ["cubic-t1/trial-1"]
    assert arc.restore("full", ["westwood"], fresh, data)["westwood"].unchanged == ["cubic-t1/trial-1"]


def test_a_paper_s_archive_folder_comes_from_its_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`archive: data/uml` (a reference measured on a new lane beside the old one's) puts the paper's
    trials under data/uml/<profile>/<paper>/; a paper that names none keeps data/<profile>/<paper>/;
    an explicit folder wins over both."""
    papers = tmp_path / "papers"
    papers.mkdir()
    text = (CHECKOUT / "tests" / "data" / "papers" / "wlanshort.yaml").read_text()
    (papers / "wlanshort.yaml").write_text(text)
    (papers / "wlanuml.yaml").write_text(text.replace("paper: wlanshort\n", "paper: wlanuml\narchive: data/uml\n", 1))
    monkeypatch.setenv("TCPREPRO_PAPER_DIR", str(papers))
    monkeypatch.setattr(arc, "DATA", tmp_path / "data")
    assert arc.paper_dir("full", "wlanshort") == tmp_path / "data" / "full" / "wlanshort"
    assert arc.paper_dir("full", "wlanuml") == tmp_path / "data" / "uml" / "full" / "wlanuml"
    assert arc.paper_dir("full", "wlanuml", tmp_path / "else") == tmp_path / "else" / "full" / "wlanuml"


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_manifest_key_that_leaves_the_results_folder_is_refused(tmp_path: Path) -> None:
    """A key is <cell>/trial-<k>: one with `..` (or absolute, or through a link elsewhere) would have
    the restore write, and clear its .restore.partial, outside the results folder."""
    results, data, fresh = tmp_path / "results", tmp_path / "data", tmp_path / "fresh"
    make_trial(results, "cubic-t1", 1)
    arc.pack("full", ["westwood"], results, data)
    src = data / "full" / "westwood"
    manifest = json.loads((src / arc.MANIFEST).read_text())
    key = "../../../x/trial-3"                      # from data/full/westwood and fresh/full/westwood: tmp/x
    (tmp_path / "x").mkdir()
    shutil.copy(src / "cubic-t1" / "trial-1.tar.xz", tmp_path / "x" / "trial-3.tar.xz")
    (tmp_path / "x" / "trial-3.restore.partial").mkdir()
    (tmp_path / "x" / "trial-3.restore.partial" / "keep.txt").write_text("mine")
    (src / arc.MANIFEST).write_text(json.dumps({key: manifest["cubic-t1/trial-1"]}))
    before = _listing(tmp_path / "x")
    with pytest.raises(arc.ArchiveError, match=r"key '\.\./\.\./\.\./x/trial-3' is not <cell>/trial-<k>"):
        arc.restore("full", ["westwood"], fresh, data)
    assert _listing(tmp_path / "x") == before and not fresh.exists()
    for bad in ("/tmp/x/trial-3", "cubic-t1/../../x/trial-3", "cubic-t1/trial-1/..", "cubic-t1/trial-0"):
        (src / arc.MANIFEST).write_text(json.dumps({bad: manifest["cubic-t1/trial-1"]}))
        with pytest.raises(arc.ArchiveError, match="is not <cell>/trial-<k>"):
            arc.restore("full", ["westwood"], fresh, data)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (fresh / "full" / "westwood").mkdir(parents=True)
    (fresh / "full" / "westwood" / "cubic-t1").symlink_to(elsewhere)
    (src / arc.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(arc.ArchiveError, match="is not <cell>/trial-<k> inside"):
        arc.restore("full", ["westwood"], fresh, data)
    assert not any(elsewhere.iterdir())


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tcprepro", "archive", *args], cwd=CHECKOUT, capture_output=True,
                          text=True, env={**os.environ, **env})


def test_cli_takes_paper_names_never_paths(tmp_path: Path) -> None:
    """`--paper ../../x` named a paper config by path and its archive folder outside data/."""
    evil = tmp_path / "evil.yaml"
    evil.write_text((CHECKOUT / "tests" / "data" / "papers" / "wlanshort.yaml").read_text())
    name = os.path.relpath(tmp_path / "evil", CHECKOUT / "config")
    for action in ("status", "restore", "pack"):
        proc = _cli(action, "--paper", name)
        assert proc.returncode == 2 and f"--paper {name!r}: not a paper; known papers: collateral" in proc.stderr
    proc = _cli("status", "--profile", "../x")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_cli_restore_from_a_folder_that_is_not_there_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    proc = _cli("restore", "--paper", "westwood", "--data", str(missing), "--results", str(tmp_path / "r"))
    assert proc.returncode == 2 and f"--data {missing}: no such folder" in proc.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = _cli("restore", "--paper", "westwood", "--data", str(empty), "--results", str(tmp_path / "r"))
    assert proc.returncode == 2 and f"{empty / 'full' / 'westwood'}: no MANIFEST.json" in proc.stderr
    assert not (tmp_path / "r").exists()
