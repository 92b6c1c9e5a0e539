"""`tcprepro trial`: run one trial of one cell, measure on the right kernel, analyse on the host.

Where the measurement runs is the cell's lane (testbed/lane/), placed by testbed/placement.py:
the virtual-time UML guest, this kernel, or the VM (pinned Debian kernel); a simulated paper's model
runs on the host. Either way the host does the analysis and decides validity; a real-time trial whose
fidelity checks fail is run again, and the failed attempts' records are kept under invalid-attempts/.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from configuration import environment
from configuration.load import ConfigError, load_workflow
from experiments import load_paper
from testbed import attempts, cleanup, progress, trial_dir, trial_environment
from testbed import lane as lanes
from testbed.interrupt import TrialInterrupted, install_signal_handlers
from testbed.lane import Lane
from testbed.placement import CannotRun, cell_lane

log = logging.getLogger("tcprepro.trial")
_ATTEMPT_KEEP = ("summary.json", "provenance.json", "trial.log", "spec.json")


def partial_path(final_dir: Path) -> Path:
    return final_dir.with_name(final_dir.name + ".partial")


def failed_log_path(final_dir: Path) -> Path:
    return final_dir.with_name(final_dir.name + ".failed.log")


def scheduler_job() -> dict[str, str] | None:
    """The cluster job this trial ran in (SLURM sets these in every job's environment), for its
    provenance; None outside one."""
    if not os.environ.get("SLURM_JOB_ID"):
        return None
    return {"scheduler": "slurm", "job_id": os.environ["SLURM_JOB_ID"],
            "node": os.environ.get("SLURMD_NODENAME", ""), "cluster": os.environ.get("SLURM_CLUSTER_NAME", "")}


def run_attempt(spec: dict[str, Any], final_dir: Path, lane: Lane, binary: Any = None,
                may_replace: trial_dir.Fingerprint | None = None) -> dict[str, Any]:
    """One attempt: a fresh .partial directory, the lane's measurement (or simulation, with the
    model's `binary`) and host-side analysis; its rename replaces only the folder `may_replace`
    names (testbed/trial_dir.py)."""
    partial = partial_path(final_dir)
    trial_dir.clear_partial(partial)
    partial.mkdir(parents=True)
    cleanup.claim(partial)
    (partial / "spec.json").write_text(json.dumps(spec, indent=2))
    try:
        return lane.attempt(spec, partial, final_dir, binary, may_replace)
    except trial_dir.TakenMeanwhile:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    except BaseException:
        # The result is discarded; its log is kept beside it, where the user will look.
        if (partial / "trial.log").exists():
            shutil.move(partial / "trial.log", failed_log_path(final_dir))
        shutil.rmtree(partial, ignore_errors=True)
        raise


def run_with_retries(spec: dict[str, Any], final_dir: Path, lane: Lane, max_attempts: int,
                     binary: Any = None, may_replace: trial_dir.Fingerprint | None = None) -> dict[str, Any]:
    """Up to `max_attempts` attempts until one is valid. Attempts of earlier runs of this trial
    (testbed/attempts.py) come first in invalid-attempts/ and in the count; if the last attempt is
    invalid on a real-time lane, all of them are kept for the next run to carry in. The first
    attempt replaces only the folder `may_replace` names, a later one the attempt before it."""
    earlier = attempts.earlier_attempts(final_dir)
    archived: list[Path] = []
    for attempt in range(1, max_attempts + 1):
        summary = run_attempt(spec, final_dir, lane, binary, may_replace)
        may_replace = trial_dir.fingerprint(final_dir)
        if summary["valid"] or attempt == max_attempts:
            break
        keep = final_dir.parent / f".{final_dir.name}-invalid-{attempt}"
        shutil.rmtree(keep, ignore_errors=True)
        keep.mkdir()
        for name in _ATTEMPT_KEEP:
            if (final_dir / name).exists():
                shutil.copy2(final_dir / name, keep / name)
        archived.append(keep)
        print(f"attempt {attempt} invalid ({'; '.join(summary['invalid_reasons'])}): running it again",
              file=sys.stderr)
    if archived or earlier:
        dest = final_dir / "invalid-attempts"
        dest.mkdir(exist_ok=True)
        for i, keep in enumerate(earlier, 1):
            shutil.copytree(keep, dest / str(i))
        for i, keep in enumerate(archived, len(earlier) + 1):
            keep.rename(dest / str(i))
    summary["attempt"] = len(earlier) + len(archived) + 1
    summary["invalid_attempts"] = len(earlier) + len(archived)
    summary["earlier_attempts"] = len(earlier)
    summary["retry_next_run"] = attempts.to_retry(summary["valid"], lane)
    (final_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    prov_path = final_dir / "provenance.json"
    if prov_path.exists():
        prov = json.loads(prov_path.read_text())
        prov["attempts"] = {"total": summary["attempt"], "this_run": len(archived) + 1, "earlier_runs": len(earlier)}
        if job := scheduler_job():
            prov["scheduler_job"] = job
        prov_path.write_text(json.dumps(prov, indent=2))
    if summary["retry_next_run"]:
        attempts.keep_for_retry(final_dir)
    else:
        attempts.forget(final_dir)
    return summary


def _measure(args: argparse.Namespace, spec: dict[str, Any], lane: Lane, n_attempts: int,
             binary: Any = None) -> tuple[int, dict[str, Any] | None]:
    """run_with_retries holding the trial's lock, with an interrupt or a failure turned into its exit
    status and one clear line (the details are in the trial's log). A trial another run finished
    while this one waited for the lock, or measured, is kept: exit 0, nothing measured or replaced.
    One that was there when this run started (args.found, testbed/trial_dir.py) is replaced."""
    out = args.out.resolve()
    try:
        with trial_dir.exclusive(out):
            there = trial_dir.fingerprint(out)
            if there is not None and there != args.found:
                raise trial_dir.TakenMeanwhile("finished by another run while this one waited for it: kept it, "
                                               "measured nothing")
            return 0, run_with_retries(spec, out, lane, n_attempts, binary, there)
    except trial_dir.TakenMeanwhile as exc:
        print(f"trial {args.out}: {exc}")
        return 0, None
    except trial_dir.Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2, None
    except TrialInterrupted as exc:
        print(f"interrupted ({exc}): trial {args.out} removed, nothing left behind", file=sys.stderr)
        return 130, None
    except Exception as exc:
        print(f"error: trial {args.out} failed: {exc}\n  log: {failed_log_path(out)}", file=sys.stderr)
        return 1, None


def max_attempts(given: int | None) -> int:
    """How often a failing real-time trial is measured: --max-attempts, else $TCPREPRO_MAX_ATTEMPTS
    (the workflow's config), else config/workflow.yaml's max_attempts; at least 1."""
    if given is not None:
        value, source = str(given), "--max-attempts"
    elif given_env := environment.get("TCPREPRO_MAX_ATTEMPTS"):
        value, source = given_env, "TCPREPRO_MAX_ATTEMPTS"
    else:
        value, source = str(load_workflow()["max_attempts"]), "config/workflow.yaml max_attempts"
    if not value.lstrip("-").isdigit() or int(value) < 1:
        raise ConfigError(f"{source}: {value!r} is not a number of attempts; give an integer of at least 1")
    return int(value)


def parse_module_params(text: str) -> dict[str, dict[str, int]]:
    """'htcp.use_adaptive_backoff=1,htcp.use_rtt_scaling=0' as {cc: {param: value}} (integers)."""
    out: dict[str, dict[str, int]] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = item.partition("=")
        cc, dot, param = key.partition(".")
        if not (sep and dot and cc and param and value.lstrip("-").isdigit()):
            raise ValueError(f"{item!r}: write <congestion control>.<parameter>=<integer>")
        out.setdefault(cc, {})[param] = int(value)
    return out


def finish_spec(spec: dict[str, Any], lane: Lane) -> dict[str, Any]:
    """A measured trial's spec as its lane measures it (the virtual-time lane's seeded variation),
    with the run's overrides and the lane placement chose (`lane`: where, not what, so no field of
    staleness, analysis/staleness.py); a ValueError names a bad override. What spec.json holds."""
    spec = {**lane.prepare(spec), "lane": lane.name}
    # A run may ask the kernel implementations for other parameters than the registry's and the
    # cell's own (scenario.module_params): the workflow key module_params, e.g.
    # htcp.use_adaptive_backoff=1 (the lanes' cross-validation runs the references' H-TCP), reaches
    # the trial as TCPREPRO_MODULE_PARAMS; the spec carries them, so the trial is stale against the config.
    if given := environment.get("TCPREPRO_MODULE_PARAMS"):
        try:
            override = parse_module_params(given)
        except ValueError as exc:
            raise ValueError(f"TCPREPRO_MODULE_PARAMS: {exc}") from None
        merged = {cc: dict(p) for cc, p in (spec.get("module_params") or {}).items()}
        for cc, params in override.items():
            merged.setdefault(cc, {}).update(params)
        spec["module_params"] = merged
    # The workflow's key bulk_generator (the lanes' cross-validation measures both) reaches the
    # trial as TCPREPRO_BULK_GENERATOR over config/workflow.yaml's; the trial's spec says which ran.
    # A cell that names its own (an open choice's alternative, configuration/choices.py) keeps it.
    own = (spec.get("scenario") or {}).get("bulk_generator")
    if (generator := environment.get("TCPREPRO_BULK_GENERATOR")) and not own:
        spec["bulk_generator"] = generator
        if spec["bulk_generator"] not in ("iperf2", "iperf3"):
            raise ValueError(f"TCPREPRO_BULK_GENERATOR={spec['bulk_generator']!r}: use iperf2 or iperf3")
    return spec


def _report_done(args: argparse.Namespace, summary: dict[str, Any], head: str, wall: float,
                 traffic_s: float) -> None:
    """The trial's one-line outcome, then the workflow's progress line when this trial updates it."""
    print(head + f", valid={summary['valid']}"
          + (f" ({'; '.join(summary['invalid_reasons'])})" if not summary["valid"] else ""))
    out = args.out.resolve()
    line = progress.record_done(out.parents[2], str(out), wall, traffic_s)
    if line:
        print(line)


def simulate_main(args: argparse.Namespace, spec: dict[str, Any]) -> int:
    """A simulated trial: the model binary (built or reused) on the host; no kernel, VM or root.
    A deterministic simulation gives the same result when rerun, so it gets one attempt."""
    # The model's build and adapters (numpy): a simulated trial's own, not a measured one's.
    from sim import build
    from testbed.simulate import model_name

    install_signal_handlers()
    try:
        binary = build.ensure(model_name(spec["scenario"]))
    except build.BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except TrialInterrupted as exc:
        print(f"interrupted ({exc}) while building the model: nothing written", file=sys.stderr)
        return 130
    out = args.out.resolve()
    for stale in out.parent.glob("*.partial"):       # this cell's trials whose runner was killed
        if cleanup.owner_alive(stale) is False:
            shutil.rmtree(stale, ignore_errors=True)
    t0 = time.monotonic()
    spec = {**spec, "lane": lanes.SIMULATED.name}
    code, summary = _measure(args, spec, lanes.SIMULATED, lanes.SIMULATED.attempts(1), binary)
    if summary is None:
        return code
    wall = time.monotonic() - t0
    derived = json.loads((out / "provenance.json").read_text()).get("derived")
    what = (f"the run of {derived['from']}, proven to be this trial's (not simulated again)" if derived
            else f"simulated {spec['duration_s']} s ({binary.path.name}, RNG run {spec['trial']})")
    _report_done(args, summary, f"trial {args.out}: {what} in {wall:.1f} s", wall, 0.0)
    return 0


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    try:
        cfg = load_paper(args.paper)
        spec = cfg.trial_spec(args.cell, args.trial, args.profile)
        # Before anything is built, swept or deleted: --out must be this trial's own folder, absent
        # or a finished trial of this trial, which the run then replaces (testbed/trial_dir.py).
        args.found = trial_dir.fingerprint(trial_dir.check_out(args.out, spec))
        trial_environment.check()
    except (ConfigError, trial_dir.Refused, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if cfg.simulated:
        return simulate_main(args, spec)
    try:
        lane = cell_lane(cfg.any_cell(args.cell))
    except CannotRun as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    if not lane.on_cluster and scheduler_job():
        print(f"error: {args.paper}/{args.cell} would be measured on the {lane.name} lane inside cluster job "
              f"{os.environ['SLURM_JOB_ID']}; a cluster runs measured trials on the virtual-time lane only "
              "(the VM lane's bookkeeping is per machine, the host lane needs root). Fix: run the workflow "
              "with the cluster profile (it sets the lane), or TCPREPRO_KERNEL=uml", file=sys.stderr)
        return 2
    if lane.needs_root and os.geteuid() != 0:
        print("error: a trial on the host kernel or in the VM builds network namespaces and qdiscs: run it as "
              "root, or on the virtual-time lane (TCPREPRO_KERNEL=uml), which needs no root", file=sys.stderr)
        return 2
    try:
        spec = finish_spec(spec, lane)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if refused := lane.refuse(args.out):
        print(f"error: {refused}", file=sys.stderr)
        return 2
    if notice := lane.notice(spec):
        print(notice, file=sys.stderr)

    install_signal_handlers()
    # A guest's kernel state dies with its guest: on that lane only half-written trials can be stale.
    cleanup.sweep(quiet=True, kernel_state=lane.sweeps_kernel)
    try:
        n_attempts = lane.attempts(max_attempts(args.max_attempts))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    code, summary = _measure(args, spec, lane, n_attempts)
    if summary is None:
        return code
    kernel, timing = summary["kernel"], summary["timing"]
    _report_done(args, summary, f"trial {args.out}: kernel {kernel['release']} ({kernel['where']}), set-up "
                 f"{timing.get('setup_s', 0):.2f} s + tear-down {timing.get('teardown_s', 0):.2f} s",
                 time.monotonic() - t0, 0.0 if lane.per_core else timing.get("traffic_s", 0.0))
    return 0
