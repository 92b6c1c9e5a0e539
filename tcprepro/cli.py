"""`python -m tcprepro <command>`: one entry point for every command a user or a rule runs.

A command is one decorated function: `@command(name, help, arg(...), ...)` declares its arguments,
and the function gets the parsed namespace and returns the exit status. Handlers import their
module lazily, so `--help` and unrelated commands do not pay for (or break on) it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Handler = Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class Arg:
    flags: tuple[str, ...]
    options: dict[str, Any]


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    args: tuple[Arg, ...]
    run: Handler


COMMANDS: dict[str, Command] = {}


def arg(*flags: str, **options: Any) -> Arg:
    """One argparse argument, as `parser.add_argument(*flags, **options)` would take it."""
    return Arg(flags, options)


def _jobs(text: str) -> int:
    """--jobs: a positive number, or `all` for one per core."""
    if text == "all":
        return os.cpu_count() or 1
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a positive number of jobs, or `all`")
    return int(text)


def command(name: str, help: str, *args: Arg) -> Callable[[Handler], Handler]:
    """Register `fn` as the subcommand `name`."""
    def register(fn: Handler) -> Handler:
        COMMANDS[name] = Command(name, help, args, fn)
        return fn
    return register


@command("doctor", "what this kernel and the pinned VM kernel can run, where each paper runs, and fixes",
         arg("--paper", action="append", metavar="P", help="a paper in config/ (repeatable; default: all)"),
         arg("--profile", default="quick", help="which profile's cells to place (default: quick)"),
         arg("--refresh", action="store_true", help="re-probe the kernel, not this boot's cached results"),
         arg("--json", action="store_true", help="machine-readable output"))
def doctor(ns: argparse.Namespace) -> int:
    # deferred, as every handler's: the config loader pulls in jsonschema, which --help does without
    from configuration.load import ConfigError
    from testbed import doctor as doc

    try:
        return doc.main(ns.paper, ns.profile, ns.refresh, ns.json)
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


@command("trial", "run one trial of one cell on the lane `doctor` places it on (virtual-time UML guest, this "
         "kernel, or the VM), or in the ns-3 model for a simulated paper",
         arg("--paper", required=True, help="a paper in config/ (config/<paper>.yaml)"),
         arg("--cell", required=True, help="a cell id of that paper's matrix"),
         arg("--trial", type=int, required=True, help="the trial number, from 1 (it seeds the trial's variation)"),
         arg("--profile", default="quick", choices=["smoke", "quick", "full"],
             help="whose trial length (default: quick)"),
         arg("--out", type=Path, required=True, help="the trial directory to write"),
         arg("--max-attempts", type=int, default=None,
             help="runs of a trial whose fidelity checks fail (default: $TCPREPRO_MAX_ATTEMPTS, "
                  "else config/workflow.yaml)"))
def trial(ns: argparse.Namespace) -> int:
    # deferred: the trial's machinery (Mininet on the host lane), which --help does without
    from testbed.run import main as run_trial
    return run_trial(ns)


@command("cleanup", "remove what killed trials left behind (tracefs instances, partial trial directories)",
         arg("--results", type=Path, default=None, metavar="DIR",
             help="the results folder of the runs (the workflow's `results=`; default: results/)"))
def cleanup(ns: argparse.Namespace) -> int:
    # deferred: the testbed, which --help does without
    from testbed.cleanup import sweep
    if ns.results is not None and not ns.results.is_dir():
        print(f"error: --results {ns.results}: no such folder", file=sys.stderr)
        return 2
    sweep(ns.results)
    return 0


@command("recheck", "evaluate a post-trial fidelity check again on finished trials, after its code was "
         "corrected: a trial whose verdict of it changes records the new result, keeps the old under `rechecked`, "
         "and its validity follows (testbed/recheck.py)",
         arg("check", help="the check's name as trials record it (forward.rate_worst_0.5s)"),
         arg("--paper", action="append", metavar="P", help="a paper in config/ (repeatable; default: all)"),
         arg("--profile", choices=["smoke", "quick", "full"], default="full", help="whose trials (default: full)"),
         arg("--results", type=Path, default=None, metavar="DIR", help="the results folder (default: results/)"))
def recheck(ns: argparse.Namespace) -> int:
    # deferred: the config loader and the checks (pandas), which --help does without
    from archive.trials import RESULTS, finished_trials
    from configuration.load import paper_names
    from tcprepro.version import describe
    from testbed import recheck as rc

    names = ns.paper or paper_names()
    unknown = [n for n in names if n not in paper_names()]
    if unknown or ns.check not in rc.RECHECKS:
        print(f"error: --paper {unknown[0]!r}: not a paper; known papers: {', '.join(paper_names())}" if unknown
              else f"error: {ns.check!r} cannot be evaluated again; these can: {', '.join(rc.RECHECKS)}",
              file=sys.stderr)
        return 2
    root = (ns.results or RESULTS) / ns.profile
    by = f"tcprepro recheck, {describe()}"
    unreadable: list[rc.RawFilesMissing] = []
    for paper in names:
        changes, missing = rc.recheck_all(finished_trials(root / paper), ns.check, by)
        print(f"{paper}: {len(changes)} trial{'s' if len(changes) != 1 else ''} changed")
        for c in changes:
            print(f"  {c.render(root)}")
        unreadable += missing
    for exc in unreadable:
        print(f"error: {exc}", file=sys.stderr)
    if unreadable:
        print(f"error: {len(unreadable)} trial{'s' if len(unreadable) != 1 else ''} not evaluated again: "
              "they keep the check as measured", file=sys.stderr)
    return 1 if unreadable else 0


@command("vm", "the VM lane: status, or stop it",
         arg("action", choices=["status", "stop"], help="status: the running VM and its jobs; stop: power it off"),
         arg("--quiet", action="store_true", help="print nothing when stopping"),
         arg("--if-idle", action="store_true", help="stop only if no job runs (another workflow may use it)"))
def vm(ns: argparse.Namespace) -> int:
    # deferred: the VM lane's code, which --help does without
    from testbed import vm as lane
    if ns.action == "stop":
        stopped = lane.stop(if_idle=ns.if_idle)
        if not ns.quiet:
            print("VM stopped" if stopped else "no VM stopped")
        return 0
    return lane.main(["status"])


@command("diff", "compare two result sets of one paper (figures/<paper>/<profile>/, or `paper` for its own "
         "numbers): numbers that moved beyond their tolerance, claims whose verdict changed (exit 1), and "
         "either side built from trials the paper's config no longer describes (stale)",
         arg("a", help="a result set directory"), arg("b", help="another result set directory, or `paper`"),
         arg("--strict", action="store_true", help="exit 1 also when a number moved"),
         arg("--json", action="store_true", help="machine-readable output (the same exit status)"))
def diff(ns: argparse.Namespace) -> int:

    # deferred: the analysis and the config loader (jsonschema), which --help does without
    from analysis import resultset
    from analysis.report.against_reference import compare
    from configuration.load import ConfigError

    try:
        result = compare(ns.a, ns.b)
    except (resultset.ResultSetError, ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if ns.json:
        print(json.dumps(result.to_json(), indent=2, allow_nan=False))
    else:
        print(result.render(), end="")
    return result.exit_code(ns.strict)


@command("archive", "the committed raw trials (data/<profile>/<paper>/): pack finished trials of results/ "
         "into it, restore them into results/, or show how much of each paper's run it holds",
         arg("action", choices=["pack", "restore", "status"],
             help="pack: finished trials into data/; restore: data/ into results/; status: what data/ holds"),
         arg("--profile", default="full", choices=["smoke", "quick", "full"],
             help="whose trials (default: full, the reference runs)"),
         arg("--paper", action="append", metavar="P",
             help="a paper in config/ (repeatable; default: all)"),
         arg("--results", type=Path, default=None, metavar="DIR",
             help="the results folder of the run (default: results/; a run elsewhere, e.g. a new lane's "
                  "reference under way: results/uml)"),
         arg("--data", type=Path, default=None, metavar="DIR",
             help="the archive folder (default: each paper's, config/<paper>.yaml `archive`, else data/)"),
         arg("--jobs", type=_jobs, default=1, metavar="N",
             help="restore: trials unpacked at once, a number or `all` (one per core), fewer when the "
                  "memory available cannot hold that many: one may take 7 GB (default: 1)"),
         arg("--json", action="store_true", help="machine-readable output of status (the same exit status)"),
         arg("--second-sample", action="store_true",
             help="the reference cells' second sample (other trial seeds, docs/robustness.md): its results "
                  "and archive are the second-sample/ folders under the usual ones; pack archives it compactly"))
def archive(ns: argparse.Namespace) -> int:

    # deferred: the archive and the config loader (jsonschema), which --help does without
    from archive import trials as arc
    from configuration import SECOND_SAMPLE
    from configuration.load import ConfigError, paper_names
    from experiments import load_paper

    try:
        names = ns.paper or paper_names()
        unknown = [n for n in names if n not in paper_names()]
        if unknown:     # a name, never a path: it is joined to the archive and results folders
            raise ConfigError(f"--paper {unknown[0]!r}: not a paper; known papers: {', '.join(paper_names())}")
        papers = {n: load_paper(n) for n in names}
        roots = {"results": (ns.results or arc.RESULTS).absolute(), "data": ns.data and ns.data.absolute()}
        if ns.second_sample:
            roots = {"results": roots["results"] / SECOND_SAMPLE,
                     "data": (roots["data"] or arc.DATA) / SECOND_SAMPLE}
            if ns.action == "restore" and not ns.paper:   # the papers that have one
                papers = {n: p for n, p in papers.items()
                          if (arc.paper_dir(ns.profile, n, roots["data"]) / arc.MANIFEST).is_file()}
        if ns.action != "pack" and roots["data"] and not roots["data"].is_dir():
            raise arc.ArchiveError(f"--data {ns.data}: no such folder, nothing to {ns.action}")
        if ns.json and ns.action != "status":
            raise arc.ArchiveError(f"--json: `archive status` only, not `archive {ns.action}`")
        if ns.jobs != 1 and ns.action != "restore":
            raise arc.ArchiveError(f"--jobs: `archive restore` only, not `archive {ns.action}`")
        if ns.action == "status":
            expected = {n: ([c.cell_id for c in p.cells(ns.profile)], p.profile(ns.profile)["trials"])
                        for n, p in papers.items()}
            counts = arc.status_counts(ns.profile, expected, data=roots["data"])
            print(json.dumps({"profile": ns.profile, "papers": counts}, indent=2) if ns.json
                  else arc.render_status(counts))
            return 0
        jobs = arc.affordable_jobs(ns.jobs)
        if jobs < ns.jobs:
            print(f"restore: {jobs} jobs, not {ns.jobs}: one unpack may hold up to "
                  f"{arc.UNPACK_PEAK_BYTES >> 30} GB and this machine has memory for {jobs} at once", file=sys.stderr)
        done = (arc.pack(ns.profile, papers, **roots, compact_all=ns.second_sample) if ns.action == "pack"
                else arc.restore(ns.profile, papers, **roots, jobs=jobs))
        for paper, outcome in done.items():
            print(f"{paper}: {outcome.render('packed' if ns.action == 'pack' else 'restored')}")
        return 0
    except (arc.ArchiveError, ConfigError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


@command("equivalence", "whether a simulation model's current sources still give what its archived trials "
         "recorded: rerun a cover of them (every value of every scenario field) and compare field by field",
         arg("paper", help="a simulated paper (its config names the model)"),
         arg("--results", type=Path, default=None, metavar="DIR", help="its trials (default results/full/<paper>)"),
         arg("--record", action="store_true",
             help="on success, record the sources' equivalence (sim/<dir>/equivalent_sources.yaml)"))
def equivalence(ns: argparse.Namespace) -> int:
    # deferred: the config loader (jsonschema) and the model builder, which --help does without
    from configuration.load import ConfigError
    from experiments import load_paper
    from sim import equivalence as eq

    try:
        cfg = load_paper(ns.paper)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not cfg.simulated:
        print(f"error: {ns.paper} is a measured paper; only simulated trials record model sources", file=sys.stderr)
        return 2
    return eq.run(ns.paper, cfg.data["scenario"]["model"], ns.results, ns.record)


@command("check-config", "check config files before a run: a paper's config/<paper>.yaml, or a file for "
         "`snakemake --configfile` (Snakemake reports its YAML errors without the line: this names it)",
         arg("files", nargs="+", type=Path, metavar="FILE", help="YAML files to check"))
def check_config(ns: argparse.Namespace) -> int:
    # deferred: the config loader pulls in jsonschema, which --help does without
    from configuration.load import ConfigError
    from experiments import check_config_file

    status = 0
    for path in ns.files:
        try:
            print(f"ok: {check_config_file(path)}")
        except (ConfigError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 2
    return status


class VersionAction(argparse.Action):
    """`--version`, computed only when asked for (it may run git)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        # deferred: it may run git, only when --version is asked for
        from tcprepro.version import describe
        print(describe())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tcprepro", description="tcprepro: one entry point for every command "
                                     "a user or a workflow rule runs (also `python -m tcprepro`)")
    parser.add_argument("--version", action=VersionAction,
                        help="the version, and the git commit of this checkout (', modified' when it has changes)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for cmd in COMMANDS.values():
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        for a in cmd.args:
            p.add_argument(*a.flags, **a.options)
        p.set_defaults(run=cmd.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    return ns.run(ns)
