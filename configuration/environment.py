"""Every TCPREPRO_* environment variable, in one place, and the one reader of them.

A setting a user chooses is a workflow key (config/workflow.yaml, config/schema/workflow.schema.yaml,
docs/usage.md). What is left in the environment is one of three kinds, listed here with the reason:

- JOB: a workflow key handed to each trial job. A job's command line must not change (Snakemake would
  rerun every finished trial), so the Snakefile passes these keys through the environment
  (`for_jobs`), and `tcprepro trial` reads them back (`get`). Set by hand they override the key for
  one `tcprepro trial`, as before.
- INTERNAL: a protocol between the host and a guest or child process; never a user's setting.
- DEVELOPER: knobs of the test suite, the Makefile and debugging (docs/usage.md lists them).

`get` refuses a name not listed, so a new variable cannot appear without its entry here.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

# workflow key -> the variable that carries it into each trial job
JOB = {
    "kernel": "TCPREPRO_KERNEL",                    # the lane to force: auto, uml, host or vm
    "bulk_generator": "TCPREPRO_BULK_GENERATOR",    # iperf2 or iperf3 for the timed bulk flows
    "module_params": "TCPREPRO_MODULE_PARAMS",      # cc.param=int,... over the kernel algorithms'
    "max_attempts": "TCPREPRO_MAX_ATTEMPTS",        # measurements of a failing real-time trial
    "vm_lanes": "TCPREPRO_VM_LANES",                # real-time trials measuring in the VM at once
}

KEY_WINS = frozenset({"max_attempts"})

INTERNAL = {
    "TCPREPRO_IN_UML": "set in a UML guest's trial process: it measures on its own kernel",
    "TCPREPRO_IN_VM": "set by the VM agent in a guest job: it measures on the guest's kernel",
    "TCPREPRO_VM_KERNEL": "set by the VM agent: the guest kernel's release, for the job",
    "TCPREPRO_VM_ACCEL_USED": "set by the VM agent: kvm or tcg, recorded in the trial's provenance",
    "TCPREPRO_VM_SLOT": "the VM measurement slot a guest job holds (testbed/shared_vm.py)",
    "TCPREPRO_BPF_BUILD": "set by the VM agent: where a guest caches BPF objects (the checkout is read-only there)",
    "TCPREPRO_PLACED": "set by the workflow: the lane it placed each measured cell on, which its trials take",
    "TCPREPRO_RUN_DIR": "lock and state folder (default /run/tcprepro); the tests give each run its own",
    "TCPREPRO_PAPER_DIR": "where papers are looked up (default config/); the tests point it at small papers",
}

DEVELOPER = {
    "TCPREPRO_UML_BUILD": "where the UML kernel is built (default build/uml): share one build between checkouts",
    "TCPREPRO_UML_MEMORY": "a UML guest's memory (default 1G)",
    "TCPREPRO_UML_STALL_S": "seconds a UML guest may go without progress (default 300)",
    "TCPREPRO_UML_DEADLINE_S": "a UML guest's wall-time deadline in seconds (default 6 h)",
    "TCPREPRO_UML_PRELUDE": "shell a UML guest runs before its job (the image-independence test)",
    "TCPREPRO_UML_USERSPACE": "another root tree as a UML guest's / (the image-independence test; root only)",
    "TCPREPRO_VM_ACCEL": "kvm or tcg: skip the VM's accelerator probe",
    "TCPREPRO_VM_CPUS": "the VM's CPUs",
    "TCPREPRO_VM_MEMORY": "the VM's memory",
    "TCPREPRO_VM_IDLE": "seconds the idle VM stays up",
    "TCPREPRO_VM_ORPHAN": "seconds before a guest job without heartbeat is reaped",
    "TCPREPRO_VM_GRACE": "seconds between SIGTERM and SIGKILL of a cancelled guest job",
    "TCPREPRO_VM_BOOT_TIMEOUT": "seconds until the guest agent is ready (default 240)",
    "TCPREPRO_VM_BANNER_TIMEOUT": "seconds until the kernel prints its banner (default 45)",
    "TCPREPRO_SIMULATE_ALL": "1: simulate every run, also one proven to be a finished trial's (testbed/proven_runs.py)",
    "TCPREPRO_REPORT_SCREENSHOTS": "tests/integration/test_report_browser.py writes docs' screenshots there",
}
# docker/entrypoint's own variables (TCPREPRO_PROFILE, TCPREPRO_PAPERS, TCPREPRO_CELLS,
# TCPREPRO_MAX_ATTEMPTS, TCPREPRO_CHECK) are the image's interface, read by that shell script only and
# turned into workflow keys (`--config`) there (docs/usage.md).

KNOWN = frozenset({*JOB.values(), *INTERNAL, *DEVELOPER})


def get(name: str, default: str | None = None) -> str | None:
    """The variable's value, or `default` when unset; a KeyError for a variable not listed here."""
    if name not in KNOWN:
        raise KeyError(f"{name} is not a known TCPREPRO_* variable (configuration/environment.py)")
    return os.environ.get(name, default)


def view() -> dict[str, str]:
    """The listed variables that are set: a mapping for a reader that takes several at once."""
    return {k: os.environ[k] for k in KNOWN if k in os.environ}


def flag(name: str) -> bool:
    """Whether an internal marker such as TCPREPRO_IN_UML is set to 1."""
    return get(name) == "1"


def forwarded() -> dict[str, str]:
    """The variables the host hands a VM guest job: all of ours but the accelerator override, which
    only the host's probe reads."""
    return {k: v for k, v in os.environ.items() if k.startswith("TCPREPRO_") and k != "TCPREPRO_VM_ACCEL"}


def for_jobs(config: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """The JOB variables the workflow sets for its jobs from its merged config. A variable already in
    the caller's environment overrides its key, as it always did (`TCPREPRO_BULK_GENERATOR=iperf3
    snakemake ...`), but for max_attempts, which the workflow always set from its key; an empty
    value sets nothing."""
    out = {}
    for key, name in JOB.items():
        value = config.get(key)
        if environ.get(name) and key not in KEY_WINS:
            out[name] = environ[name]
        elif value is not None and str(value) != "":
            out[name] = str(value)
    return out
