# tcprepro workflow: trials -> cells -> tables, figures, verdicts, reports (rules/*.smk).
# Run `snakemake --cores all` (profile from config/workflow.yaml) or `make quick|reproduce|smoke`.
#
# `snakemake --lint`: scripts/snakemake_lint.py lists the lints left on purpose, each with its reason;
# `make lint` fails on any other.
import hashlib
import math
import os
import sys
from fnmatch import fnmatch
from functools import cache
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from configuration import environment
from configuration.load import CELL_ID, ConfigError, check_config_args, check_workflow
from experiments import load_paper
from sim.build import MODELS as SIM_MODELS
from sim.build import adapter as sim_adapter
from testbed import attempts, trial_environment, uml_kernel

configfile: "config/workflow.yaml"

# The merged config (this file, the profile's config:, --config) is checked before anything runs:
# check_workflow's one line names the field and the fix, check_config_args a --config value that
# Snakemake's YAML reading changed; Snakemake's validate then applies the schema's defaults.
try:
    check_workflow(config)
    check_config_args(workflow.config_settings.config_args, config)
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None
validate(config, "config/schema/workflow.schema.yaml")
# A profile of ours sets its keys as a config file; one a command-line --configfile replaced, or
# --config contradicts, stops the run here instead of running another profile (the quick one).
from tcprepro.workflow_profile import lost_setting, named_profile

_profile_dir = named_profile(sys.argv, Path.cwd(), Path(workflow.basedir))
if _profile_dir and (_lost := lost_setting(_profile_dir, config)):
    raise WorkflowError(_lost)
# The environment variables a trial reads are checked here too: a bad one stops the run in one line,
# not in a traceback per trial.
try:
    trial_environment.check()
except ValueError as exc:
    raise WorkflowError(str(exc)) from None

# Every job's Python starts without setuptools' distutils shim (testbed/run.py says why).
os.environ.setdefault("SETUPTOOLS_USE_DISTUTILS", "stdlib")

# The keys a trial reads (kernel, bulk_generator, module_params, max_attempts, vm_lanes) reach it
# through its environment, not its command line: a changed command would make Snakemake rerun every
# finished trial (configuration/environment.py JOB). Set here, once, before the papers are placed.
os.environ.update(environment.for_jobs(config, os.environ))

PROFILE = config["profile"]
RESULTS = Path(config["results"]) / PROFILE
LOG_ROOT = Path(config["results"]) / "logs"             # each job's own log (Snakemake's log:)
LOGS = LOG_ROOT / PROFILE
try:                                                       # each validated before anything runs
    PAPERS = {name: load_paper(name) for name in config["papers"]}
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None
PY = sys.executable
# Real-time trials take a trial slot each (rules/trials.smk: resources trial_lanes), capped by the
# profiles' `resources: [trial_lanes=1]` or `--resources trial_lanes=N`; the plan's estimate assumes
# `vm_lanes` of them measure at once.
MEASURING = int(config["vm_lanes"])

include: "rules/common.smk"

# Cheap bookkeeping runs where Snakemake runs, not as cluster jobs.
localrules: all, cell, report, html_report

rule all:
    input:
        [f for p in PAPERS for f in cell_files(p)],
        [t for p in PAPERS for t in planned_trial_files(p)],
        [figure_dir(p) for p in FIGURED],
        [str(REPORT), str(HTML_REPORT)] if FIGURED else [],
        [f for p in FIGURED for f in robustness_file(p)] if ROBUST else [],


include: "rules/trials.smk"
include: "rules/figures.smk"


onstart:
    from testbed.progress import write_plan
    start_writing()
    todo = planned_trials()
    try:
        cores = int(workflow.cores)
    except WorkflowError:       # no --cores given: the estimate assumes one
        cores = 1
    print(f"[plan] profile {PROFILE}: {write_plan(RESULTS, todo, MEASURING, cores)}", file=sys.stderr)

# The VM lane is shared by every workflow of this checkout: stop it only if nothing else runs there
# (else its own idle timer powers it off).
onsuccess:
    from testbed.progress import run_summary
    for line in run_summary(RESULTS):
        print(line, file=sys.stderr)
    shell("{PY:q} -m tcprepro vm stop --quiet --if-idle")

onerror:
    from testbed.progress import run_summary
    for line in run_summary(RESULTS):
        print(line, file=sys.stderr)
    shell("{PY:q} -m tcprepro vm stop --quiet --if-idle")
