"""The committed raw trials: data/<profile>/<paper>/<cell>/trial-<k>.tar.xz, one per finished trial.

A paper whose config names an `archive` folder (a reference measured on a new lane beside the old
one's) keeps them in <archive>/<profile>/<paper>/ instead; `paper_dir` says where.

A full run takes hours to days of VM time; its trials are the evidence behind the committed figures,
and a machine that restarts empty must not lose them. `pack` copies every finished trial directory
of results/<profile>/ into data/<profile>/ (raw traces included, so a changed analysis can re-read
them); `restore` puts them back, after which Snakemake runs only what is missing and regenerates
the figures from all of it. Each paper's MANIFEST.json holds the SHA-256 of every file of every
trial: `restore` checks what it unpacks against it, and `pack` uses it to see a trial that was run
again (the archive is replaced, not kept beside a different trial of the same name).

Archives are deterministic (sorted members, the files' own mtimes, no owner names): packing the same
trial twice gives the same bytes, so git sees no change. tcp_probe traces and qdisc samples are stored
in lossless column forms (archive/stored_forms.py) that compress 2-3 times smaller; archives
written before them restore as they are. An open choice's twin of a measured paper is archived
compactly (archive/compact.py): its files but the raw traces, and the values its claims read of them;
the manifest lists what the archive holds. A twin archived whole before stays whole.
"""
from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import re
import shutil
import tarfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis import claims_input
from archive import compact, stored_forms
from configuration import CHECKOUT
from configuration.load import CELL_ID
from experiments import load_paper

DATA = CHECKOUT / "data"
RESULTS = CHECKOUT / "results"
MANIFEST = "MANIFEST.json"
SUFFIX = ".tar.xz"
# Bookkeeping of the writer and of Snakemake, and analysis caches rewritten whenever their analysis
# changes (analysis/ledbat/metrics.py CACHE): not the trial. An archive written while a name was not
# yet skipped keeps that file and is not repacked for it.
SKIP = {".snakemake_timestamp", ".owner", "ledbat-metrics.json"}
# A manifest's key names one trial of one cell; nothing else is joined to a folder.
KEY = re.compile(rf"({CELL_ID.pattern})/trial-[1-9][0-9]*")


class ArchiveError(RuntimeError):
    """An archive that cannot be trusted or written: the message names the file and the fix."""


@dataclass
class Outcome:
    """What one pack or restore did, trial by trial ("cell/trial-k")."""

    done: list[str] = field(default_factory=list)
    compact: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept_local: list[str] = field(default_factory=list)
    not_in_config: list[str] = field(default_factory=list)
    aggregated: list[str] = field(default_factory=list)

    def render(self, verb: str) -> str:
        parts = [f"{len(self.done)} {verb}"]
        if self.compact:
            parts.append(f"{len(self.compact)} of them archived compactly (what their claims read, not "
                         "their raw traces: archive/compact.py)")
        if self.replaced:
            parts.append(f"{len(self.replaced)} replaced (run again since): {', '.join(self.replaced)}")
        parts.append(f"{len(self.unchanged)} already there")
        if self.kept_local:
            parts.append(f"{len(self.kept_local)} kept as they are in results/ (they differ from the archive; "
                         f"`archive pack` would replace the archived ones): {', '.join(self.kept_local)}")
        if self.not_in_config:
            parts.append(f"{len(self.not_in_config)} left out: their cells are not in the paper's config "
                         f"({', '.join(sorted({k.split('/')[0] for k in self.not_in_config}))})")
        if self.aggregated:
            parts.append(f"{len(self.aggregated)} cells aggregated (their cell.json)")
        return "; ".join(parts)


def paper_dir(profile: str, paper: str, data: Path | None = None) -> Path:
    """Where a paper's archived trials of a profile are: under `data` when given (a run elsewhere),
    else under the paper's `archive` folder (config/<paper>.yaml; data/ when it names none)."""
    if data is None:
        named = Path(load_paper(paper).data.get("archive", "data"))
        data = DATA.joinpath(*named.parts[1:])
    return data / profile / paper


def finished_trials(paper_results: Path) -> Iterator[Path]:
    """Trial directories the runner has finalised: renamed from .partial, with their summary."""
    for d in sorted(paper_results.glob("*/trial-*")):
        if d.is_dir() and not d.name.endswith(".partial") and d.name[6:].isdigit() and (d / "summary.json").exists():
            yield d


def trial_files(trial: Path) -> list[str]:
    """The trial's files as sorted relative POSIX paths (invalid-attempts/<n>/ holds earlier attempts)."""
    files = sorted(p.relative_to(trial).as_posix() for p in trial.rglob("*") if p.is_file() and p.name not in SKIP)
    odd = [p.name for p in trial.rglob("*") if not p.is_file() and not p.is_dir()]
    if odd:
        raise ArchiveError(f"{trial}: holds more than files and folders ({', '.join(odd)})")
    return files


def digests(trial: Path) -> dict[str, str]:
    return {name: _sha256((trial / name).read_bytes()) for name in trial_files(trial)}


def _kept(listed: dict[str, str] | None) -> dict[str, str] | None:
    """A manifest entry without the files archiving now skips (what `digests` of the trial gives)."""
    return None if listed is None else {n: d for n, d in listed.items() if n.rsplit("/", 1)[-1] not in SKIP}


def _newest(trial: Path) -> float:
    return max((trial / name).stat().st_mtime for name in trial_files(trial))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _key(trial: Path) -> str:
    return f"{trial.parent.name}/{trial.name}"


def _read_manifest(paper_data: Path) -> dict[str, dict[str, str]]:
    path = paper_data / MANIFEST
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ArchiveError(f"{path}: not valid JSON ({exc}); restore it with `git checkout -- {path}`") from exc


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def tar_bytes(trial: Path, files: dict[str, bytes] | None = None) -> bytes:
    """The trial's files (or `files`, {name: bytes}: a compact twin's, archive/compact.py) as a
    deterministic xz-compressed tar (members: files only, relative paths; a file the trial folder
    lacks takes its summary's mtime).

    tcp_probe traces and qdisc samples go in as their lossless column forms (archive/stored_forms.py,
    member name + ".columns"); every other file as it is.
    """
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files) if files is not None else trial_files(trial):
            p = trial / name
            body = p.read_bytes() if files is None else files[name]
            form = stored_forms.to_form(name, body)
            info = tarfile.TarInfo(name if form is None else name + stored_forms.SUFFIX)
            info.size = len(body if form is None else form)
            info.mtime = int((p if p.exists() else trial / "summary.json").stat().st_mtime)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(body if form is None else form))
    return lzma.compress(raw.getvalue(), preset=9 | lzma.PRESET_EXTREME)


def pack(profile: str, papers: Iterable[str], results: Path = RESULTS, data: Path | None = None,
         compact_all: bool = False) -> dict[str, Outcome]:
    """Archive every finished trial of these papers not yet archived as it is now, the open choices'
    twins' too (configuration/choices.py); a trial of a cell the paper's config no longer has (an
    investigation narrowed) stays out of data/. `compact_all`: every trial compactly, as a twin is (a
    second sample of the reference, measured only for the robustness verdicts)."""
    out: dict[str, Outcome] = {}
    for paper in papers:
        src, dst = results / profile / paper, paper_dir(profile, paper, data)
        manifest, outcome = _read_manifest(dst), Outcome()
        cfg = load_paper(paper)
        cells = set(cfg.cells_by_id) | set(cfg.twins_by_id)
        for trial in finished_trials(src):
            key, target = _key(trial), dst / trial.parent.name / (trial.name + SUFFIX)
            if trial.parent.name not in cells:
                outcome.not_in_config.append(key)
                continue
            # a finished trial does not change: only one written after its archive is read and hashed
            if key in manifest and target.exists() and target.stat().st_mtime >= _newest(trial):
                outcome.unchanged.append(key)
                continue
            listed, now, files = _kept(manifest.get(key)), digests(trial), None
            if listed == now and target.exists():     # as archived (whole, or a compact twin restored)
                outcome.unchanged.append(key)
                continue
            if compact.applies(paper, trial.parent.name) or (compact_all and paper in compact.PAPERS):
                files = _compact_files(paper, trial)
                now = now if files is None else {n: _sha256(b) for n, b in files.items()}
                if listed == now and target.exists():
                    outcome.unchanged.append(key)
                    continue
            (outcome.replaced if key in manifest else outcome.done).append(key)
            if files is not None:
                outcome.compact.append(key)
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(target, tar_bytes(trial, files))
            manifest[key] = now
            # written after each trial: an interrupted pack leaves a manifest that matches its archives
            _write_atomically(dst / MANIFEST, (json.dumps(dict(sorted(manifest.items())), indent=1) + "\n").encode())
        out[paper] = outcome
    return out


def _compact_files(paper: str, trial: Path) -> dict[str, bytes] | None:
    """compact.files of a trial, a failure to compute its claims input named with the trial."""
    try:
        return compact.files(paper, trial, trial_files(trial))
    except (claims_input.ClaimsInputError, OSError, KeyError, ValueError) as exc:
        raise ArchiveError(f"{trial}: its claims input (archive/compact.py) cannot be computed ({exc!r}); nothing "
                           "packed for it. Fix: check the trial (its trial.log), or measure it again") from exc


def _as_archived(paper: str, trial: Path, listed: dict[str, str] | None) -> bool:
    """Whether a trial folder is the trial an archive holds: its files, or, for a compact archive, the
    compact form of its files."""
    if listed is None:
        return False
    if digests(trial) == listed:
        return True
    if not compact.is_compact(listed) or paper not in compact.PAPERS:
        return False
    try:
        files = _compact_files(paper, trial)
    except ArchiveError:
        return False
    return files is not None and {n: _sha256(b) for n, b in files.items()} == listed


def _checked_claims_input(archive: Path, key: str, body: bytes) -> None:
    """A compact archive's claims-input.json names its trial and holds values (its hash matched)."""
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    cell, _, trial = key.partition("/")
    ok = isinstance(doc, dict) and doc.get("schema") == claims_input.SCHEMA and isinstance(doc.get("values"), dict)
    if not ok or doc.get("cell") != cell or f"trial-{doc.get('trial')}" != trial:
        raise ArchiveError(f"{archive}: its {compact.FILE} is not the {claims_input.SCHEMA} document of {key}; "
                           f"restore the archive and its manifest with `git checkout -- {archive} "
                           f"{archive.parent.parent / MANIFEST}`, or measure the trial again")


def _unpack(archive: Path, expected: dict[str, str], into: Path, key: str) -> None:
    """Extract trial `key`'s archive into `into` (created), checking every file against the manifest."""
    try:
        with tarfile.open(archive, mode="r:xz") as tar:
            members = tar.getmembers()
            names = sorted(stored_forms.member_file(m.name) for m in members)
            if compact.is_compact(expected) and not compact.is_compact(names):
                raise ArchiveError(f"{archive}: a compact twin's archive without its {compact.FILE} (the values its "
                                   "claims read; its manifest lists it): its claims cannot be judged. Fix: `git "
                                   f"checkout -- {archive}`, or measure the trial again")
            if names != sorted(expected):
                raise ArchiveError(f"{archive}: holds {names}, its manifest lists {sorted(expected)}")
            into.mkdir(parents=True)
            for m in members:
                parts = m.name.split("/")
                if not m.isfile() or m.name.startswith("/") or ".." in parts or "" in parts:
                    raise ArchiveError(f"{archive}: member {m.name!r} is not a file inside the trial")
                fh = tar.extractfile(m)
                assert fh is not None
                body, name = fh.read(), stored_forms.member_file(m.name)
                body = stored_forms.from_form(m.name, body)
                if _sha256(body) != expected[name]:
                    raise ArchiveError(f"{archive}: {name} does not match its SHA-256 in the manifest; restore it "
                                       f"with `git checkout -- {archive}`")
                if name == compact.FILE:
                    _checked_claims_input(archive, key, body)
                dest = into / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(body)
                os.utime(dest, (m.mtime, m.mtime))
    except (tarfile.TarError, lzma.LZMAError, EOFError, *stored_forms.ERRORS) as exc:
        raise ArchiveError(f"{archive}: unreadable ({exc}); restore it with `git checkout -- {archive}`") from exc


def _checked_keys(manifest: dict[str, dict[str, str]], path: Path, dst: Path) -> None:
    """Refuse a manifest naming anything but <cell>/trial-<k> inside `dst` (an absolute key, `..`, a
    link that leads elsewhere), before anything of it is restored."""
    for key in manifest:
        inside = (dst / key).parent.resolve().is_relative_to(dst.resolve())
        if not KEY.fullmatch(key) or not inside:
            raise ArchiveError(f"{path}: key {key!r} is not <cell>/trial-<k> inside {dst}; nothing restored. Fix: "
                               f"`git checkout -- {path}` restores the committed manifest")


def _source(profile: str, paper: str, data: Path | None) -> tuple[Path, dict[str, dict[str, str]]]:
    """A paper's archive folder and its manifest; an error naming the folder when it has none."""
    src = paper_dir(profile, paper, data)
    if not (src / MANIFEST).is_file():
        raise ArchiveError(f"{src}: no {MANIFEST}, so no archived {profile} trials of {paper}; check --data, "
                           "--profile and --paper")
    return src, _read_manifest(src)


def restore(profile: str, papers: Iterable[str], results: Path = RESULTS,
            data: Path | None = None, jobs: int = 1) -> dict[str, Outcome]:
    """Unpack archived trials that results/ lacks; a trial results/ already holds is left alone.
    `jobs` trials unpack at once (each is its own archive and folder; decompressing one is
    single-threaded: LEDBAT's 65 GB take most of an hour on one core, docs/measurements.md)."""
    out: dict[str, Outcome] = {}
    for paper in papers:
        (src, manifest), dst = _source(profile, paper, data), results / profile / paper
        _checked_keys(manifest, src / MANIFEST, dst)
        outcome, todo = Outcome(), []
        for key, expected in sorted(manifest.items()):
            archive = src / (key + SUFFIX)
            if not archive.exists():
                raise ArchiveError(f"{archive}: listed in {src / MANIFEST} but missing; "
                                   f"`git checkout -- {src}` restores the committed archive")
            final = dst / key
            if final.exists():
                (outcome.unchanged if _as_archived(paper, final, _kept(expected)) else outcome.kept_local).append(key)
                continue
            todo.append((archive, expected, final, key))
        _each(_restore_one, todo, jobs)
        outcome.done.extend(t[3] for t in todo)
        local = _cells(outcome.kept_local)
        outcome.aggregated = _aggregate(dst, _cells(outcome.done) - local, _cells(outcome.unchanged) - local,
                                        load_paper(paper).profile(profile)["trials"])
        out[paper] = outcome
    return out


def _cells(keys: Iterable[str]) -> set[str]:
    return {k.split("/")[0] for k in keys}


def _aggregate(dst: Path, restored: set[str], as_archived: set[str], expected: int) -> list[str]:
    """cell.json for each cell that had a trial restored, and for each cell whose trials are all as
    archived but that has none yet (restored before restore wrote them): a restored tree is one the
    analyses read as it is (the workflow's `cell` rule writes the same file; without it a hand-run
    analysis would see no measured cell). A cell with a trial that differs from its archive is the
    workflow's to aggregate."""
    from analysis.aggregate import SummaryError, write_cell  # deferred: the analyses' imports

    done = []
    for cell in sorted(restored | as_archived):
        if cell in restored or not (dst / cell / "cell.json").exists():
            try:
                write_cell(dst / cell, expected)
            except SummaryError as exc:
                raise ArchiveError(f"{dst / cell}: {exc}") from None
            done.append(cell)
    return done


# What one trial's unpack may hold in memory at its peak: the largest trial, LEDBAT's five-flow
# 1000 MB (a 900-MB tcp_probe trace decoded from its columns), took 6.7 GB (docs/measurements.md).
UNPACK_PEAK_BYTES = 7 << 30


def affordable_jobs(jobs: int, available: int | None = None) -> int:
    """`jobs`, or fewer when this machine's available memory (MemAvailable) cannot hold that many
    unpacks at their peak at once; at least 1."""
    if available is None:
        try:
            meminfo = Path("/proc/meminfo").read_text()
            available = int(re.search(r"^MemAvailable:\s+(\d+) kB", meminfo, re.M)[1]) * 1024  # type: ignore[index]
        except (OSError, TypeError):
            return jobs
    return max(1, min(jobs, available // UNPACK_PEAK_BYTES))


def _restore_one(archive: Path, expected: dict[str, str], final: Path, key: str) -> None:
    """One trial unpacked beside its place and renamed into it: a folder under the trial's name is
    always whole."""
    partial = final.with_name(final.name + ".restore.partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        _unpack(archive, expected, partial, key)
        os.replace(partial, final)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _each(fn: Callable[..., None], tasks: list[tuple[Any, ...]], jobs: int) -> None:
    """fn(*task) for every task, `jobs` processes at a time. The first error stops the tasks not
    started and is raised once the running ones have ended (each cleans up after itself)."""
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            fn(*task)
        return
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
        futures = [pool.submit(fn, *task) for task in tasks]
        try:
            for done in as_completed(futures):
                done.result()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def status_counts(profile: str, expected: dict[str, tuple[list[str], int]],
                  data: Path | None = None) -> list[dict[str, Any]]:
    """Per paper: where its archive is, trials archived of its profile's cells x trials, cells
    complete, and each cell not complete with its archived trials."""
    out = []
    for paper, (cells, trials) in expected.items():
        folder = paper_dir(profile, paper, data)
        have = _read_manifest(folder)
        # any trial number: a second sample's are 6-10 (docs/robustness.md)
        counts = {c: min(trials, sum(k.rpartition("/")[0] == c for k in have)) for c in cells}
        out.append({"paper": paper, "archive": str(folder), "trials_archived": sum(counts.values()),
                    "trials_expected": len(cells) * trials, "cells": len(cells),
                    "cells_complete": sum(n == trials for n in counts.values()),
                    "not_complete": {c: n for c, n in counts.items() if n < trials}})
    return out


def render_status(counts: list[dict[str, Any]]) -> str:
    """status_counts as one line per paper, naming up to 8 cells not complete."""
    lines = []
    for p in counts:
        short = [f"{c} ({n})" for c, n in p["not_complete"].items()]
        line = (f"{p['paper']}: {p['trials_archived']} of {p['trials_expected']} trials archived, "
                f"{p['cells_complete']} of {p['cells']} cells complete")
        if short and len(short) < p["cells"]:
            more = f" and {len(short) - 8} more" if len(short) > 8 else ""
            line += f"; not complete: {', '.join(short[:8])}{more}"
        lines.append(line)
    return "\n".join(lines)


def status(profile: str, expected: dict[str, tuple[list[str], int]], data: Path | None = None) -> str:
    """Archived trials of each paper against its profile's cells x trials, naming cells not complete."""
    return render_status(status_counts(profile, expected, data))
