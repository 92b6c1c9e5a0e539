"""archive/compact.py on real committed trials: an open choice's twin packs without its raw traces, a
few KB instead of hundreds, and restores to a folder the workflow treats as finished, whose claims
the analysis reads from claims-input.json exactly as it reads them from the raw traces; a reference
trial, and a twin archived whole before, stay whole; a tampered compact archive is refused.

Fixtures are committed archives of data/ restored through archive.trials (the project's own path),
the smallest that carry each paper's raw-derived claims: Westwood+'s test-1 twins (cwnd range, three
trials each so that a claim is judged), a LEDBAT 30-MB transfer (its per-trial metrics), a
Collateral Damage H-TCP cell (its NewReno-mode share and the UDP OWD band densities).
"""
from __future__ import annotations

import io
import json
import lzma
import shutil
import tarfile
from pathlib import Path

import pytest

from analysis import claims_input, robustness
from analysis.aggregate import aggregate_cell, write_cell
from archive import compact
from archive import trials as arc
from testbed import attempts, trial_dir

WESTWOOD = [f"{cc}-t1+switch.ovs/trial-{k}" for cc in ("cubic", "westwood") for k in (1, 2, 3)]
LEDBAT = ["ledbat-rtt40-n2-30mb+switch.ovs/trial-1"]
COLLATERAL = ["htcp-rtt100-f1+switch.ovs/trial-5"]


def committed(paper: str, keys: list[str], data: Path) -> dict[str, dict[str, str]]:
    """The committed archives of `keys` copied into `data` with their manifest entries."""
    src, dst = arc.paper_dir("full", paper), data / "full" / paper
    manifest = arc._read_manifest(src)
    for key in keys:
        (dst / key).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / (key + arc.SUFFIX), dst / (key + arc.SUFFIX))
    entries = {k: manifest[k] for k in keys}
    (dst / arc.MANIFEST).write_text(json.dumps(entries))
    return entries


class Forms:
    """One paper's twins whole (restored from data/), packed again (compact) and restored compact."""

    def __init__(self, root: Path, paper: str, keys: list[str]) -> None:
        self.paper, self.keys = paper, keys
        self.committed = committed(paper, keys, root / "data")
        arc.restore("full", [paper], root / "whole", root / "data")
        self.packed = arc.pack("full", [paper], root / "whole", root / "packed")[paper]
        arc.restore("full", [paper], root / "compact", root / "packed")
        self.root = root

    def trial(self, form: str, key: str) -> Path:
        return self.root / form / "full" / self.paper / key

    def archive(self, where: str, key: str) -> Path:
        return self.root / where / "full" / self.paper / (key + arc.SUFFIX)

    def overlay(self, form: str) -> Path:
        """The twins' cells aggregated and linked under their reference cells' ids, as
        analysis/robustness.py judges them under the alternative."""
        dest = self.root / f"overlay-{form}"
        dest.mkdir(exist_ok=True)
        for cell in sorted({k.split("/")[0] for k in self.keys}):
            folder = self.root / form / "full" / self.paper / cell
            write_cell(folder, 5)
            link = dest / cell.split("+")[0]
            if not link.exists():
                link.symlink_to(folder, target_is_directory=True)
        return dest

    def verdicts(self, form: str) -> dict[str, tuple[str, set[str]]]:
        return robustness.verdicts_in(self.paper, "full", self.overlay(form))

    def cells(self, form: str) -> dict[str, dict]:
        import importlib
        run_mod = importlib.import_module(f"analysis.{self.paper}.run")
        return run_mod.Run.load("full", self.overlay(form), self.root / f"out-{form}").cells


@pytest.fixture(scope="module")
def westwood(tmp_path_factory: pytest.TempPathFactory) -> Forms:
    return Forms(tmp_path_factory.mktemp("westwood"), "westwood", WESTWOOD)


@pytest.fixture(scope="module")
def ledbat(tmp_path_factory: pytest.TempPathFactory) -> Forms:
    return Forms(tmp_path_factory.mktemp("ledbat"), "ledbat", LEDBAT)


@pytest.fixture(scope="module")
def collateral(tmp_path_factory: pytest.TempPathFactory) -> Forms:
    return Forms(tmp_path_factory.mktemp("collateral"), "collateral", COLLATERAL)


def members(archive: Path) -> list[str]:
    with tarfile.open(archive) as tar:
        return sorted(m.name for m in tar.getmembers())


@pytest.mark.parametrize("paper", ["westwood", "ledbat", "collateral"])
def test_a_twin_packs_without_its_raw_traces(paper: str, request: pytest.FixtureRequest) -> None:
    forms: Forms = request.getfixturevalue(paper)
    assert sorted(forms.packed.compact) == sorted(forms.packed.done) == sorted(forms.keys)
    for key in forms.keys:
        whole, small = forms.archive("data", key), forms.archive("packed", key)
        names = members(small)
        assert compact.FILE in names and not any(compact.is_raw(n.removesuffix(".columns")) for n in names)
        assert {"spec.json", "provenance.json", "summary.json", "trial.log"} <= set(names)
        assert small.stat().st_size < 8000 < whole.stat().st_size         # e.g. 134 KB -> 6 KB (LEDBAT, 30 MB)
        # what it leaves out is named with the hashes the whole archive's manifest has for it
        doc = json.loads((forms.trial("compact", key) / compact.FILE).read_text())
        raw = {n: d for n, d in forms.committed[key].items() if compact.is_raw(n)}
        assert doc["left_out"] == raw and raw
        # its values are those the analysis computes from the whole trial
        assert doc["values"] == json.loads(claims_input.encode(
            claims_input.document(paper, forms.trial("whole", key), raw)))["values"]


def test_a_restored_compact_twin_is_a_finished_trial(westwood: Forms) -> None:
    key = WESTWOOD[0]
    small, whole = westwood.trial("compact", key), westwood.trial("whole", key)
    spec = json.loads((small / "spec.json").read_text())
    assert trial_dir.is_finished(small, spec)
    assert attempts.retry_key(small) == attempts.retry_key(whole)           # rule trial's params: not rerun
    assert small in list(arc.finished_trials(small.parent.parent))
    whole_cell, compact_cell = (aggregate_cell([westwood.trial(form, k) for k in WESTWOOD[:3]])
                                for form in ("whole", "compact"))
    assert whole_cell == compact_cell                                         # rule cell: the same cell.json
    # restoring and packing again changes nothing
    assert arc.restore("full", ["westwood"], westwood.root / "compact", westwood.root / "packed")[
        "westwood"].unchanged == WESTWOOD
    assert arc.restore("full", ["westwood"], westwood.root / "whole", westwood.root / "packed")[
        "westwood"].unchanged == WESTWOOD                                    # whole folders: their compact form
    again = arc.pack("full", ["westwood"], westwood.root / "compact", westwood.root / "packed")["westwood"]
    assert again.unchanged == WESTWOOD and not again.done and not again.replaced


def test_westwood_judges_a_compact_twin_as_its_whole_trial(westwood: Forms) -> None:
    whole, small = westwood.verdicts("whole"), westwood.verdicts("compact")
    assert whole == small
    assert whole["westwood_oscillates_more"][0] != robustness.NOT_RUN      # reads the cwnd range, judged
    ranges = [c["metrics"]["bulk0.cwnd_range_pkts"] for c in westwood.cells("compact").values()]
    assert ranges == [c["metrics"]["bulk0.cwnd_range_pkts"] for c in westwood.cells("whole").values()]
    assert all(r["n"] == 3 for r in ranges)


def test_ledbat_reads_a_compact_twins_metrics_as_its_whole_trials(ledbat: Forms) -> None:
    assert ledbat.cells("whole") == ledbat.cells("compact")
    assert "jain_share" in ledbat.cells("compact")["ledbat-rtt40-n2-30mb"]["metrics"]
    assert ledbat.verdicts("whole") == ledbat.verdicts("compact")


def test_collateral_reads_a_compact_twins_modes_and_bands_as_its_whole_trials(collateral: Forms) -> None:
    whole, small = collateral.cells("whole"), collateral.cells("compact")
    assert whole == small
    names = set(small["htcp-rtt100-f1"]["metrics"])
    assert any(n.startswith("newreno_mode_share_") for n in names)
    assert any(n.startswith("owd_density_") for n in names)
    assert collateral.verdicts("whole") == collateral.verdicts("compact")


def test_a_reference_trial_and_a_twin_archived_whole_stay_whole(tmp_path: Path) -> None:
    """(A reference trial packed afresh is whole: tests/unit/test_archive.py.)"""
    ref, twin = "cubic-t1/trial-1", WESTWOOD[0]
    entries = committed("westwood", [ref, twin], tmp_path / "data")
    arc.restore("full", ["westwood"], tmp_path / "results", tmp_path / "data")
    before = {k: (tmp_path / "data" / "full" / "westwood" / (k + arc.SUFFIX)).read_bytes() for k in (ref, twin)}
    for f in (tmp_path / "results").rglob("*"):       # newer than their archives: read and hashed again
        f.touch()
    again = arc.pack("full", ["westwood"], tmp_path / "results", tmp_path / "data")["westwood"]
    assert again.unchanged == [ref, twin] and not again.compact
    assert json.loads((tmp_path / "data" / "full" / "westwood" / arc.MANIFEST).read_text()) == entries
    for k, body in before.items():
        assert (tmp_path / "data" / "full" / "westwood" / (k + arc.SUFFIX)).read_bytes() == body


def rewrite(archive: Path, change: dict[str, bytes | None]) -> None:
    """The archive with members replaced (bytes) or left out (None)."""
    with tarfile.open(archive) as tar:
        kept = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]   # type: ignore[union-attr]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for m, body in kept:
            body = change.get(m.name, body)
            if body is not None:
                m.size = len(body)
                tar.addfile(m, io.BytesIO(body))
    archive.write_bytes(lzma.compress(raw.getvalue()))


def test_a_tampered_compact_archive_is_refused(westwood: Forms, tmp_path: Path) -> None:
    key = WESTWOOD[0]
    data = tmp_path / "data" / "full" / "westwood"
    (data / key).parent.mkdir(parents=True)
    shutil.copy2(westwood.archive("packed", key), data / (key + arc.SUFFIX))
    entry = json.loads((westwood.root / "packed" / "full" / "westwood" / arc.MANIFEST).read_text())[key]
    (data / arc.MANIFEST).write_text(json.dumps({key: entry}))
    doc = json.loads((westwood.trial("compact", key) / compact.FILE).read_text())
    doc["values"]["cwnd_range"] += 1
    rewrite(data / (key + arc.SUFFIX), {compact.FILE: claims_input.encode(doc)})
    with pytest.raises(arc.ArchiveError, match=r"claims-input\.json does not match its SHA-256.*git checkout"):
        arc.restore("full", ["westwood"], tmp_path / "results", tmp_path / "data")
    rewrite(data / (key + arc.SUFFIX), {compact.FILE: None})
    with pytest.raises(arc.ArchiveError, match=r"without its claims-input\.json.*cannot be judged.*git checkout"):
        arc.restore("full", ["westwood"], tmp_path / "results", tmp_path / "data")
    # a claims input of another trial, its manifest changed to match: refused as not this trial's
    doc["trial"] = 2
    body = claims_input.encode(doc)
    shutil.copy2(westwood.archive("packed", key), data / (key + arc.SUFFIX))
    rewrite(data / (key + arc.SUFFIX), {compact.FILE: body})
    (data / arc.MANIFEST).write_text(json.dumps({key: {**entry, compact.FILE: arc._sha256(body)}}))
    with pytest.raises(arc.ArchiveError, match=r"not the tcprepro\.claims-input/1 document of cubic-t1\+switch"):
        arc.restore("full", ["westwood"], tmp_path / "results", tmp_path / "data")
    assert not list((tmp_path / "results").rglob("summary.json"))          # nothing half-restored


def test_a_trial_with_neither_raw_traces_nor_claims_input_is_named(ledbat: Forms, tmp_path: Path) -> None:
    from analysis.ledbat import metrics as lb
    bare = tmp_path / "ledbat-rtt40-n2-30mb+switch.ovs" / "trial-1"
    shutil.copytree(ledbat.trial("compact", LEDBAT[0]), bare)
    (bare / compact.FILE).unlink()
    with pytest.raises(claims_input.ClaimsInputError, match=r"trial-1: neither tcp_probe\.trace nor .*make restore"):
        lb.trial_metrics_cached(bare)


def test_a_value_computed_by_other_code_is_read_and_said(westwood: Forms, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from analysis.westwood import run as wr
    other = tmp_path / "cubic-t1+switch.ovs" / "trial-1"
    shutil.copytree(westwood.trial("compact", WESTWOOD[0]), other)
    doc = json.loads((other / compact.FILE).read_text())
    doc["computed_by"]["cwnd_range"] = "analysis.westwood.run@0000000000000000"
    (other / compact.FILE).write_text(claims_input.encode(doc).decode())
    assert wr.cwnd_range(other) == doc["values"]["cwnd_range"]
    assert "cwnd_range was computed by analysis.westwood.run@0000000000000000" in capsys.readouterr().err


def test_the_stand_ins_whose_claims_input_other_code_computed_are_found(westwood: Forms, tmp_path: Path) -> None:
    """The robustness file marks a claim that reads such a cell: its verdict there is the packing
    code's reading of traces this checkout does not hold; a whole twin is read with this code."""
    from experiments import load_paper
    alt = next(a for a in load_paper("westwood").alternatives if a.key == "switch.ovs")
    cell = WESTWOOD[0].split("/")[0]
    reference = cell.split("+")[0]
    assert alt.twins[reference] == cell
    for form in ("compact", "whole"):
        shutil.copytree(westwood.trial(form, WESTWOOD[0]).parent, tmp_path / form / cell)
    for form in ("compact", "whole"):
        assert robustness.packed_elsewhere(tmp_path / form, alt, [reference]) == {}
    shutil.copytree(tmp_path / "compact" / cell, tmp_path / "aged" / cell)   # files are read once per process
    trial = tmp_path / "aged" / cell / "trial-2"
    doc = json.loads((trial / compact.FILE).read_text())
    doc["computed_by"]["cwnd_range"] = "analysis.westwood.run@0000000000000000"
    (trial / compact.FILE).write_text(claims_input.encode(doc).decode())
    assert claims_input.computed_elsewhere(trial) == ["cwnd_range"]
    assert claims_input.computed_elsewhere(trial.with_name("trial-1")) == []
    assert robustness.packed_elsewhere(tmp_path / "aged", alt, [reference]) == {reference: f"{cell} (1 trial)"}
    assert claims_input.computed_elsewhere(tmp_path / "whole" / cell / "trial-2") == []


def test_a_check_cannot_be_evaluated_again_on_a_compact_twin_and_says_how_to_measure_it(
        westwood: Forms, tmp_path: Path) -> None:
    """`tcprepro recheck` reads the raw files a compact twin does not keep: it evaluates the whole
    trials, names each compact one with the command that measures it again, changes nothing of it
    and exits non-zero."""
    import subprocess
    import sys
    key = WESTWOOD[0]
    cell = key.split("/")[0]
    results = tmp_path / "results" / "full" / "westwood"
    shutil.copytree(westwood.trial("compact", key), results / cell / "trial-1")
    shutil.copytree(westwood.trial("whole", WESTWOOD[1]), results / cell / "trial-2")
    before = {p.name: p.read_bytes() for p in (results / cell / "trial-1").iterdir()}
    for k in (1, 2):                                                  # both record the check
        prov = json.loads((results / cell / f"trial-{k}" / "provenance.json").read_text())
        assert any(c["name"] == "forward.rate_worst_0.5s" for c in prov["fidelity"])
    run = subprocess.run([sys.executable, "-m", "tcprepro", "recheck", "forward.rate_worst_0.5s", "--paper",
                          "westwood", "--results", str(tmp_path / "results")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "westwood: 0 trials changed" in run.stdout                 # the whole trial was evaluated
    assert f"{cell}/trial-1: a compact twin" in run.stderr and "--trial 1 --profile full --out" in run.stderr
    assert "trial-2" not in run.stderr and "1 trial not evaluated again" in run.stderr
    assert {p.name: p.read_bytes() for p in (results / cell / "trial-1").iterdir()} == before


def test_a_second_sample_packs_compactly_and_restores_as_archived(tmp_path: Path) -> None:
    """A second sample of reference cells (docs/robustness.md) is measured for the robustness
    verdicts only: packed with compact_all its trials leave out the raw traces as a twin's do, and a
    compact trial restored from it is the trial its archive holds (packed again: unchanged)."""
    ref = "cubic-t1/trial-1"
    committed("westwood", [ref], tmp_path / "data")
    arc.restore("full", ["westwood"], tmp_path / "whole", tmp_path / "data")
    packed = arc.pack("full", ["westwood"], tmp_path / "whole", tmp_path / "sample", compact_all=True)["westwood"]
    assert packed.compact == packed.done == [ref]
    names = members(tmp_path / "sample" / "full" / "westwood" / (ref + arc.SUFFIX))
    assert compact.FILE in names and not any(compact.is_raw(n.removesuffix(".columns")) for n in names)
    arc.restore("full", ["westwood"], tmp_path / "compact", tmp_path / "sample")
    assert claims_input.is_compact(tmp_path / "compact" / "full" / "westwood" / ref)
    again = arc.pack("full", ["westwood"], tmp_path / "compact", tmp_path / "sample", compact_all=True)["westwood"]
    assert again.unchanged == [ref] and not again.done
    plain = arc.pack("full", ["westwood"], tmp_path / "whole", tmp_path / "plain")["westwood"]
    assert plain.done == [ref] and not plain.compact                     # without it, a reference trial is whole
