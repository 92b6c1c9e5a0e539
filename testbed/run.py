"""`tcprepro trial`: run one trial of one cell, measure on the right kernel, analyse on the host.

Where the measurement runs is decided per cell by testbed/placement.py: on the host when its
kernel has every feature the cell needs, else in the VM lane (pinned Debian kernel). Either way the
host does the analysis and decides validity; a trial whose fidelity checks fail is run again, and
the failed attempts' records are kept under invalid-attempts/.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from configuration import CHECKOUT
from configuration.load import ConfigError, load_workflow
from experiments import load_paper
from testbed import attempts, cleanup, progress, trial_dir, trial_environment
from testbed.placement import CannotRun
from testbed.port_slots import try_slot

log = logging.getLogger("tcprepro.trial")
INTERRUPTED_CODES = {128 + 2, 128 + 15}   # the job ended by SIGINT or SIGTERM
_ATTEMPT_KEEP = ("summary.json", "provenance.json", "trial.log", "spec.json")


# Mininet imports distutils.version; in a venv with setuptools, its _distutils_hack (armed at start-up
# from a .pth, so this must be in the environment before Python starts) loads all of setuptools and
# pkg_resources for it: 0.45 s of a trial process's 0.55 s start on a host, seconds under QEMU TCG.
# The standard library's distutils serves Mininet as well.
FAST_DISTUTILS = "stdlib"


class TrialFailed(RuntimeError):
    pass


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


def _where(cell: Any) -> str:
    if os.environ.get("TCPREPRO_IN_VM") == "1" or os.environ.get("TCPREPRO_IN_UML") == "1":
        return "host"
    from testbed.placement import cell_where
    return cell_where(cell)


@contextlib.contextmanager
def vm_slot(slots: int | None = None, lock_dir: Path | None = None,
            busy: Callable[[int], bool] | None = None) -> Iterator[int]:
    """Hold one of the VM's measurement slots (`vm_lanes` in config/workflow.yaml) while measuring.

    The workflow may run more trials than the VM measures at once: their host-side parts (start-up,
    the analysis) then overlap another trial's measurement instead of idling the VM. An flock, so a
    killed holder frees its slot; `busy(index)` says whether that holder's guest job still measures
    (testbed/shared_vm.py SharedVM.slot_in_use), and the slot is taken only once it has stopped."""
    n = slots or max(1, int(os.environ.get("TCPREPRO_VM_LANES") or load_workflow().get("vm_lanes", 1)))
    lock_dir = lock_dir or CHECKOUT / "results" / ".vm"
    while (slot := try_slot(lock_dir, "measure", n)) is None:
        time.sleep(0.2)
    index, fd = slot
    try:
        while busy is not None and busy(index):
            time.sleep(0.5)
        yield index
    finally:
        os.close(fd)


def exec_in_vm_slot(argv: list[str], cwd: Path, env: dict[str, str], checkout: Path | None = None,
                    slots: int | None = None) -> int:
    """Run argv in the VM lane holding a measurement slot; the job carries the slot's index, so a
    later holder of the slot waits for it even if this process is killed."""
    from testbed.shared_vm import SLOT_ENV, SharedVM
    lane = SharedVM(checkout)
    with vm_slot(slots, lane.state, busy=lane.slot_in_use) as index:
        return lane.exec(argv, cwd, {**env, SLOT_ENV: str(index)})


def prebuild_bpf_for_vm(spec: dict[str, Any], checkout: Path = CHECKOUT) -> list[Any]:
    """Compile on the host, for the VM's pinned kernel, the BPF objects the trial will load there
    (clang under TCG takes half a minute or more per object, here a second), into the cache the
    guest reads (results/.vm/bpf). Best effort: what fails here the guest builds, or fails on, itself."""
    from cc import bpf_build, registry
    from testbed import kernel_btf
    from testbed.vm_kernel import pinned_kernel

    root = (checkout / "results").resolve() / ".vm" / "bpf"
    built = []
    try:
        image = pinned_kernel()
        module_params = spec.get("module_params") or {}
        wanted = {}                 # by kernel name: one per algorithm and parameter set
        for f in (f for f in spec["flows"] if f["kind"] == "bulk"):
            obj = registry.bpf_object_for(f["cc"], image.release, f.get("cc_params"), f.get("cc_impl"),
                                          module_params.get(f["cc"]))
            if obj is not None:
                wanted[obj[1]] = obj
        if wanted:                  # the image's BTF only then: decompressing it takes seconds
            kernel = bpf_build.TargetKernel(image.release, kernel_btf.image_btf(image.path, root))
            built = [bpf_build.build(*obj, kernel, root) for _, obj in sorted(wanted.items())]
    except Exception as exc:        # an optimisation: the guest reports real failures itself
        log.warning("BPF objects not prebuilt on the host (the VM builds them): %s", exc)
    return built


def _measure_in_vm(partial: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k.startswith("TCPREPRO_") and k != "TCPREPRO_VM_ACCEL"}
    env["SETUPTOOLS_USE_DISTUTILS"] = FAST_DISTUTILS
    rc = exec_in_vm_slot([sys.executable, "-m", "testbed.trial", "--spec", str(partial / "spec.json"),
                          "--out", str(partial)], cwd=CHECKOUT, env=env)
    if rc in INTERRUPTED_CODES:
        from testbed.trial import TrialInterrupted
        raise TrialInterrupted(f"VM job ended with {rc}")
    if rc != 0:
        raise TrialFailed(f"the measurement in the VM exited {rc}")


def _measure_in_uml(spec: dict[str, Any], partial: Path) -> None:
    """The measurement as the job of its own UML guest (testbed/uml.py), in virtual time; what the
    guest did with its time goes into provenance beside the measurement's own records."""
    from cc.registry import boot_params
    from testbed import uml
    # The measurement reads everything from spec.json; its environment is fixed, so that nothing of
    # the host's (a TCPREPRO_RUN_DIR, say) changes what the guest does (testbed/uml.py).
    env = {"TCPREPRO_IN_UML": "1", "SETUPTOOLS_USE_DISTUTILS": FAST_DISTUTILS, "PYTHONHASHSEED": "0",
           "PYTHONDONTWRITEBYTECODE": "1"}
    # The cell's built-in algorithm parameters at boot too: some are read only when the algorithm
    # registers (the trial's sysfs check then finds them set).
    # The guest sees the checkout at a fixed place (uml.GUEST_CHECKOUT), whatever the host's path.
    run = uml.run([str(uml.in_guest(Path(sys.executable), CHECKOUT)), "-m", "testbed.trial",
                   "--spec", str(uml.GUEST_SHARE / "spec.json"), "--out", str(uml.GUEST_SHARE)],
                  share=partial, checkout=CHECKOUT, cwd=uml.GUEST_CHECKOUT, env=env, seed=spec["variation"]["seed"],
                  boot_params=boot_params(spec.get("module_params") or {}),
                  # What another machine image's user space would do differently before the
                  # measurement (other draws from the random stream, other files missed, another
                  # set-up length), for the test that shows a trial does not depend on it
                  # (tests/integration/test_uml_trial.py); empty otherwise.
                  prelude=os.environ.get("TCPREPRO_UML_PRELUDE", ""),
                  # Another image's whole user space as the guest's / (the same test, across images).
                  userspace=uml.userspace_from_env())
    if run.rc in INTERRUPTED_CODES:
        from testbed.trial import TrialInterrupted
        raise TrialInterrupted(f"UML job ended with {run.rc}")
    if run.rc != 0:
        raise TrialFailed(f"the measurement in the UML guest exited {run.rc} (console: {partial / uml.CONSOLE})")
    prov_path = partial / "provenance.json"
    prov = json.loads(prov_path.read_text())
    info = run.kernel.info
    prov["virtual_time"] = {"kernel_key": info["key"], "release": info["release"], "hz": info["hz"],
                            "source": f"{info['package']} {info['version']}", "command_line": list(run.command_line),
                            "wall_s": round(run.wall_s, 3), "virtual_s": run.virtual_s,
                            "interrupts": run.interrupts}
    prov["variation"] = spec["variation"]
    from testbed.trial import tool_versions  # the guest ran the host's own binaries
    prov["tools"] = tool_versions()
    prov_path.write_text(json.dumps(prov, indent=2))


def _measure_here(spec: dict[str, Any], partial: Path) -> None:
    from testbed.trial import measure
    measure(spec, partial)


def run_attempt(spec: dict[str, Any], final_dir: Path, where: str, binary: Any = None,
                may_replace: trial_dir.Fingerprint | None = None) -> dict[str, Any]:
    """One attempt: a fresh .partial directory, the measurement (or the simulation: where="sim",
    with the model's `binary`), the host-side analysis; its rename replaces only the folder
    `may_replace` names (testbed/trial_dir.py)."""
    partial = partial_path(final_dir)
    trial_dir.clear_partial(partial)
    partial.mkdir(parents=True)
    cleanup.claim(partial)
    (partial / "spec.json").write_text(json.dumps(spec, indent=2))
    try:
        if where == "sim":
            from testbed import simulate
            simulate.measure(spec, partial, binary)
            return simulate.finalize(partial, final_dir, may_replace)
        from testbed.finalize import finalize
        if where == "vm":
            prebuild_bpf_for_vm(spec)
            _measure_in_vm(partial)
            # The analysis can wait; the VM's emulated link, sharing these cores, cannot.
            os.nice(19 - os.nice(0))
        elif where == "uml":
            _measure_in_uml(spec, partial)
        else:
            _measure_here(spec, partial)
        return finalize(partial, final_dir, may_replace)
    except trial_dir.TakenMeanwhile:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    except BaseException:
        # The result is discarded; its log is kept beside it, where the user will look.
        if (partial / "trial.log").exists():
            shutil.move(partial / "trial.log", failed_log_path(final_dir))
        shutil.rmtree(partial, ignore_errors=True)
        raise


def run_with_retries(spec: dict[str, Any], final_dir: Path, where: str, max_attempts: int,
                     binary: Any = None, may_replace: trial_dir.Fingerprint | None = None) -> dict[str, Any]:
    """Up to `max_attempts` attempts until one is valid. Attempts of earlier runs of this trial
    (testbed/attempts.py) come first in invalid-attempts/ and in the count; if the last attempt is
    invalid on a real-time lane, all of them are kept for the next run to carry in. The first
    attempt replaces only the folder `may_replace` names, a later one the attempt before it."""
    earlier = attempts.earlier_attempts(final_dir)
    archived: list[Path] = []
    for attempt in range(1, max_attempts + 1):
        summary = run_attempt(spec, final_dir, where, binary, may_replace)
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
    summary["retry_next_run"] = attempts.to_retry(summary["valid"], where)
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


def _measure(args: argparse.Namespace, spec: dict[str, Any], where: str, n_attempts: int,
             binary: Any = None) -> tuple[int, dict[str, Any] | None]:
    """run_with_retries holding the trial's lock, with an interrupt or a failure turned into its exit
    status and one clear line (the details are in the trial's log). A trial another run finished
    while this one waited for the lock, or measured, is kept: exit 0, nothing measured or replaced.
    One that was there when this run started (args.found, testbed/trial_dir.py) is replaced."""
    from testbed.interrupt import TrialInterrupted

    out = args.out.resolve()
    try:
        with trial_dir.exclusive(out):
            there = trial_dir.fingerprint(out)
            if there is not None and there != args.found:
                raise trial_dir.TakenMeanwhile("finished by another run while this one waited for it: kept it, "
                                               "measured nothing")
            return 0, run_with_retries(spec, out, where, n_attempts, binary, there)
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
    elif os.environ.get("TCPREPRO_MAX_ATTEMPTS"):
        value, source = os.environ["TCPREPRO_MAX_ATTEMPTS"], "TCPREPRO_MAX_ATTEMPTS"
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
    from sim import build
    from testbed.interrupt import TrialInterrupted, install_signal_handlers
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
    code, summary = _measure(args, spec, "sim", 1, binary)
    if summary is None:
        return code
    wall = time.monotonic() - t0
    _report_done(args, summary, f"trial {args.out}: simulated {spec['duration_s']} s ({binary.path.name}, "
                 f"RNG run {spec['trial']}) in {wall:.1f} s", wall, 0.0)
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
        where = _where(cfg.cells_by_id[args.cell])
    except CannotRun as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    if where != "uml" and scheduler_job():
        print(f"error: {args.paper}/{args.cell} would be measured on the {where} lane inside cluster job "
              f"{os.environ['SLURM_JOB_ID']}; a cluster runs measured trials on the virtual-time lane only "
              "(the VM lane's bookkeeping is per machine, the host lane needs root). Fix: run the workflow "
              "with the cluster profile (it sets the lane), or TCPREPRO_KERNEL=uml", file=sys.stderr)
        return 2
    if where != "uml" and os.geteuid() != 0:
        print("error: a trial on the host kernel or in the VM builds network namespaces and qdiscs: run it as "
              "root, or on the virtual-time lane (TCPREPRO_KERNEL=uml), which needs no root", file=sys.stderr)
        return 2
    if where == "uml":
        from testbed import variation
        spec = variation.apply(spec)
    # A run may ask the kernel implementations for other parameters than the registry's and the
    # cell's own (scenario.module_params), e.g. TCPREPRO_MODULE_PARAMS=htcp.use_adaptive_backoff=1
    # (the lanes' cross-validation runs the references' H-TCP); the spec carries them, so the trial
    # is stale against the config.
    if os.environ.get("TCPREPRO_MODULE_PARAMS"):
        try:
            override = parse_module_params(os.environ["TCPREPRO_MODULE_PARAMS"])
            merged = {cc: dict(p) for cc, p in (spec.get("module_params") or {}).items()}
            for cc, params in override.items():
                merged.setdefault(cc, {}).update(params)
            spec["module_params"] = merged
        except ValueError as exc:
            print(f"error: TCPREPRO_MODULE_PARAMS: {exc}", file=sys.stderr)
            return 2
    # config/workflow.yaml names the timed flows' generator; this overrides it for one run (the
    # lanes' cross-validation measures both), and the trial's spec says which ran.
    if os.environ.get("TCPREPRO_BULK_GENERATOR"):
        spec["bulk_generator"] = os.environ["TCPREPRO_BULK_GENERATOR"]
        if spec["bulk_generator"] not in ("iperf2", "iperf3"):
            print(f"error: TCPREPRO_BULK_GENERATOR={spec['bulk_generator']!r}: use iperf2 or iperf3", file=sys.stderr)
            return 2
    if where == "vm":
        from testbed.shared_vm import SharedVM
        shared = SharedVM().results
        if not args.out.resolve().is_relative_to(shared):
            # The guest writes its trial where the host reads it only inside the folder it shares.
            print(f"error: {args.out} is outside {shared}, the one results folder the VM shares with "
                  f"this host; fix: keep `results` under it (results=results/<name>), or make "
                  f"results/ a link to where you want them", file=sys.stderr)
            return 2
        print(f"{args.paper}/{args.cell} trial {args.trial}: the host kernel lacks what this cell needs: "
              f"measuring in the VM", file=sys.stderr)

    from testbed.trial import install_signal_handlers
    install_signal_handlers()
    # A guest's kernel state dies with its guest: on that lane only half-written trials can be stale.
    cleanup.sweep(quiet=True, kernel_state=where != "uml")
    try:
        n_attempts = max_attempts(args.max_attempts)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if where == "uml":
        n_attempts = 1          # deterministic: an attempt that failed a check would fail it again
    t0 = time.monotonic()
    code, summary = _measure(args, spec, where, n_attempts)
    if summary is None:
        return code
    kernel, timing = summary["kernel"], summary["timing"]
    _report_done(args, summary, f"trial {args.out}: kernel {kernel['release']} ({kernel['where']}), set-up "
                 f"{timing.get('setup_s', 0):.2f} s + tear-down {timing.get('teardown_s', 0):.2f} s",
                 time.monotonic() - t0, 0.0 if where == "uml" else timing.get("traffic_s", 0.0))
    return 0
