"""Where a workflow may write: its `results` and `figures` folders (docs/threat-model.md).

Snakemake removes an output before the job that makes it and after a job that failed, so a results
or figures folder that is not this project's would lose whatever sits at an output's path there.
The rule, checked when the workflow loads, on the folder a link points to:
- a path Snakemake and the file system take as written: no control character (a NUL ends it early) and
  no brace (Snakemake reads `{name}` in an output's path as a wildcard), one the file system can look
  up (not too long, no loop of links);
- never `/`, $HOME or this checkout itself, or a system folder or anything inside one (/etc, /usr,
  /proc, ...);
- results not inside figures (a run empties figures/<paper>/<profile>/ before redrawing it), and
  figures not inside results/<profile> (a run removes a trial's folder before measuring it again);
- an existing folder is empty, or already one of ours: marked by a run (MARK: a run marks the
  folders it starts writing), holding what runs write (a profile folder smoke/, quick/, full/ or
  the VM lane's .vm/ of trials; a REPORT*.md or <paper>/<profile>/ of figures), or this checkout's
  results/ (and below) or figures/.

Two checkouts writing one results folder at once would undo each other: each Snakemake locks only
its own checkout's outputs, removes a trial that appeared after it planned the run before running
that trial itself, and removes the outputs of a job that failed. `claim` lets one checkout's runs at
a time write a results folder's profile (any number of runs of that checkout, which Snakemake's own
lock keeps apart): an flock per checkout, held until the run ends, even by kill -9.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
from pathlib import Path

from configuration import CHECKOUT
from configuration.load import PROFILES, ConfigError

MARK = {"results": ".tcprepro-results", "figures": ".tcprepro-figures"}
SYSTEM = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin", "/sys",
          "/usr", "/var")
SCRATCH = ("/var/tmp",)                     # inside a system folder, and meant for users' files
_HELD: list[int] = []                       # claims of this process, open until it exits


def _unusable(value: str) -> str | None:
    """Why the text of a folder's path cannot name it in the workflow's outputs, or None."""
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "holds a control character"
    if "{" in value or "}" in value:
        return "holds a brace, which Snakemake reads in an output's path as a wildcard"
    return None


def _problem(kind: str, path: Path) -> str | None:
    """Why `path` (resolved) may not be the `kind` folder, or None."""
    home = os.environ.get("HOME")
    if path == Path("/"):
        return "is the file system's root"
    if home and path == Path(home).resolve():
        return "is your home folder itself"
    if path == CHECKOUT:
        return "is this checkout itself"
    system = next((s for s in SYSTEM if path.is_relative_to(s)), None)
    if system and not any(path.is_relative_to(s) for s in SCRATCH):
        return f"is inside the system folder {system}"
    if path.exists() and not path.is_dir():
        return "is a file"
    if path.is_dir() and not ours(kind, path):
        entries = sorted(p.name for p in path.iterdir())
        if entries:
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            return f"holds files that are not this project's ({shown})"
    return None


def ours(kind: str, path: Path) -> bool:
    """A folder runs of this project wrote (the module's docstring says how it is told)."""
    own = {k: (CHECKOUT / k).resolve() for k in MARK}
    if (path / MARK[kind]).is_file() or path in own.values():
        return True
    if kind == "results":
        return path.is_relative_to(own["results"]) or any((path / p).is_dir() for p in (*PROFILES, ".vm"))
    return any(path.glob("REPORT*.md")) or any((d / p).is_dir() for d in path.iterdir() if d.is_dir()
                                               for p in PROFILES)


def check(config: dict[str, object], base: Path, source: str) -> None:
    """Refuse a `results` or `figures` value the rule above forbids: ConfigError, one line naming the
    field, the folder it resolves to and the fix. Relative values are taken from `base` (the
    workflow's working directory)."""
    paths = {kind: _checked(kind, str(config.get(kind) or kind), base, source) for kind in ("results", "figures")}
    _check_apart(paths["results"], paths["figures"], source)


def _checked(kind: str, value: str, base: Path, source: str) -> Path:
    """The folder `value` names, where links lead, once the rule allows it; else ConfigError."""
    where = f"{source}: field '{kind}': {value!r}"
    if problem := _unusable(value):
        raise ConfigError(f"{where} {problem}. Fix: give {kind}= a folder named without "
                          "control characters or braces")
    try:
        path = (base / value).resolve()
        problem = _problem(kind, path)
    except (OSError, RuntimeError) as exc:        # too long, unreadable, a loop of links (RuntimeError)
        raise ConfigError(f"{where} cannot be looked up ({getattr(exc, 'strerror', None) or exc}). Fix: give "
                          f"{kind}= a folder this user can reach") from None
    if problem:
        raise ConfigError(f"{where} ({path}) {problem}; a run writes its outputs there and removes them before "
                          f"remaking them. Fix: give {kind}= a new or empty folder, or one a run of this project "
                          "wrote")
    return path


def _check_apart(results: Path, figures: Path, source: str) -> None:
    """Neither folder holds what a run of the other removes (the module's docstring says which)."""
    if results != figures and results.is_relative_to(figures):
        raise ConfigError(f"{source}: field 'results': {results} is inside figures {figures}, whose "
                          "<paper>/<profile>/ folders a run empties before redrawing them. Fix: give results= "
                          "and figures= folders side by side")
    inside = next((p for p in PROFILES if figures.is_relative_to(results / p)), None)
    if inside:
        raise ConfigError(f"{source}: field 'figures': {figures} is inside {results / inside}, whose trial "
                          "folders a run removes before measuring them again. Fix: give results= and figures= "
                          "folders side by side")


def mark(kind: str, folder: Path) -> None:
    """Create the folder a run writes, and mark it as ours unless what it holds says so already (the
    committed figures/ stays as git has it)."""
    folder.mkdir(parents=True, exist_ok=True)
    if not ours(kind, folder.resolve()):
        (folder / MARK[kind]).write_text("written by tcprepro's workflow (configuration/folders.py)\n")


def claim(results_profile: Path, workdir: Path) -> None:
    """Hold this checkout's claim on a results folder's profile for the rest of this process; refuse
    (ConfigError, one line) while another checkout's run holds one."""
    results_profile.mkdir(parents=True, exist_ok=True)
    here = str(workdir.resolve())
    own = results_profile / f".workflow-{hashlib.sha256(here.encode()).hexdigest()[:16]}.lock"
    gate = os.open(results_profile / ".workflows.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(gate, fcntl.LOCK_EX)            # one claim at a time: two starting at once see each other
        for other in sorted(results_profile.glob(".workflow-*.lock")):
            if other != own and (holder := _held_by(other)):
                raise ConfigError(f"{results_profile} is being written by the workflow of another checkout "
                                  f"({holder}); two checkouts' runs in one results folder undo each other's "
                                  "trials. Fix: wait for that run to end, or give this one results=<another "
                                  "folder>")
        fd = os.open(own, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_SH)              # shared: this checkout's other runs may hold it too
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"checkout {here}, pid {os.getpid()}".encode(), 0)
        _HELD.append(fd)
    finally:
        os.close(gate)


def release() -> None:
    """Drop this process's claims (a run's end with its process; tests call this)."""
    while _HELD:
        os.close(_HELD.pop())


def _held_by(lock: Path) -> str | None:
    """Who holds `lock` (what its holder wrote), or None when no live process does."""
    fd = os.open(lock, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 300, 0).decode(errors="replace").strip() or "a live process"
        return None
    finally:
        os.close(fd)
