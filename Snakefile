# tcprepro workflow: trials -> cells (-> tables, figures, report as the papers land).
# Run `snakemake --cores all` (profile from config/workflow.yaml) or `make quick|reproduce|smoke`.
import hashlib
import os
import sys
from fnmatch import fnmatch
from functools import cache
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from sim.build import MODELS as SIM_MODELS
from tcprepro.config import CELL_ID, ConfigError, check_workflow, load_paper
from testbed import attempts, uml_kernel

configfile: "config/workflow.yaml"

# The merged config (this file, the profile's config:, --config) is checked before anything runs:
# check_workflow's one line names the field and the fix; Snakemake's validate then applies the
# schema's defaults.
try:
    check_workflow(config)
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None
validate(config, "config/schema/workflow.schema.yaml")

# Every job's Python starts without setuptools' distutils shim (testbed/run.py says why).
os.environ.setdefault("SETUPTOOLS_USE_DISTUTILS", "stdlib")

# `--config max_attempts=N` reaches each trial through its environment, not its command line: a
# changed command would make Snakemake rerun every finished trial.
os.environ["TCPREPRO_MAX_ATTEMPTS"] = str(config["max_attempts"])

PROFILE = config["profile"]
RESULTS = Path(config["results"]) / PROFILE
LOGS = Path(config["results"]) / "logs" / PROFILE      # each job's own log (Snakemake's log:)
try:                                                       # each validated before anything runs
    PAPERS = {name: load_paper(name) for name in config["papers"]}
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None
PY = sys.executable
# Trials measured at once. A trial's host process mostly waits (on the VM, or on traffic), so trials
# take no cores; they take lanes, which `--resources trial_lanes=N` overrides.
if "trial_lanes" not in workflow.global_resources:
    workflow.register_resource("trial_lanes", int(config["lanes"]))
LANES = int(getattr(workflow.global_resources["trial_lanes"], "value", workflow.global_resources["trial_lanes"]))
# What the plan's estimate assumes: real-time trials share the VM's vm_lanes, the others the cores.
MEASURING = max(1, min(LANES, int(config.get("vm_lanes", LANES))))


# `--config cells='*-rtt50-*,htcp-rtt100-f1'` runs only the cells matching these globs.
ONLY = [g.strip() for g in str(config.get("cells") or "").split(",") if g.strip()]


def selected_cells(paper):
    cells = [c.cell_id for c in PAPERS[paper].cells(PROFILE)]
    return [c for c in cells if not ONLY or any(fnmatch(c, g) for g in ONLY)]


if ONLY and not any(selected_cells(p) for p in PAPERS):
    raise WorkflowError(f"--config cells={config['cells']}: no cell of profile {PROFILE} matches; cells are "
                        + ", ".join(c.cell_id for p in PAPERS for c in PAPERS[p].cells(PROFILE)))


def trial_dirs(paper, cell=None):
    n = PAPERS[paper].profile(PROFILE)["trials"]
    cells = selected_cells(paper) if cell is None else [cell]
    return [str(RESULTS / paper / c / f"trial-{k}") for c in cells for k in range(1, n + 1)]


def cell_files(paper):
    return [str(RESULTS / paper / c / "cell.json") for c in selected_cells(paper)]


@cache
def lanes_of(paper):
    """{cell: lane} of a measured paper (testbed/doctor.py: uml, host or vm; None where it cannot
    run, which its trials then report). Simulated papers run on the host: "sim"."""
    if PAPERS[paper].simulated:
        return {c.cell_id: "sim" for c in PAPERS[paper].cells(PROFILE)}
    from testbed import doctor
    try:
        plan = doctor.plan(paper, PROFILE, survey=SURVEY())
    except Exception as exc:           # placement is the trial's own check too; it will say why
        print(f"[plan] {paper}: placement failed ({exc}); each trial checks again", file=sys.stderr)
        return {}
    return {c.cell_id: c.where for c in plan.cells}


@cache
def SURVEY():
    from testbed import doctor
    ccs = {n.removeprefix("cc:") for p in PAPERS if not PAPERS[p].simulated
           for c in PAPERS[p].cells_by_id.values() for n in doctor.needs(c.scenario) if n.startswith("cc:")}
    return doctor.take_survey(ccs=ccs)


def lane(paper, cell):
    return lanes_of(paper).get(cell)


# The UML lane's kernel, built once per definition (testbed/uml_kernel.py; its cache key is in the
# path). Trials take it as ancient(): a trial already measured is not rerun for a rebuilt kernel
# (its provenance names the kernel it ran on), as for the VM lane's kernel.
UML_KERNEL = str((uml_kernel.kernel_dir() / "linux").relative_to(Path(workflow.basedir)))


def uml_binary(paper, cell):
    return [ancient(UML_KERNEL)] if lane(paper, cell) == "uml" else []


def sim_binary(paper):
    """A simulated paper's trials run its model, compiled by rule sim_binary (again when its sources change)."""
    if not PAPERS[paper].simulated:
        return []
    m = SIM_MODELS[PAPERS[paper].data["scenario"]["model"]]
    return [f"build/{m.directory}/{m.name}"]


onstart:
    from testbed.progress import scoped_to_targets, write_plan
    # A simulated or virtual-time trial has no real-time traffic: its wall time is what the progress
    # log measures. A cell may set its own duration (fixed-size transfers: the bound, an
    # overestimate): "bounded".
    todo = [{"dir": str(Path(d).resolve()), "per_core": per_core(p, Path(d).parent.name),
             "duration_s": 0 if per_core(p, Path(d).parent.name)
             else PAPERS[p].duration_s(Path(d).parent.name, PROFILE),
             "bounded": "duration_s" in PAPERS[p].cells_by_id[Path(d).parent.name].scenario}
            for p in PAPERS for d in trial_dirs(p) if not Path(d, "summary.json").exists()]
    todo = scoped_to_targets(todo, list(workflow.dag_settings.targets or ()), RESULTS)
    try:
        cores = int(workflow.cores)
    except WorkflowError:       # no --cores given: the estimate assumes one
        cores = 1
    print(f"[plan] profile {PROFILE}: " + write_plan(RESULTS, todo, MEASURING, cores), file=sys.stderr)

# The VM lane is shared by every workflow of this checkout: stop it only if nothing else runs there
# (else its own idle timer powers it off).
onsuccess:
    shell("{PY:q} -m tcprepro vm stop --quiet --if-idle")

onerror:
    shell("{PY:q} -m tcprepro vm stop --quiet --if-idle")


# Figure packages are code (figures/<paper>/__main__.py); what they draw goes to config `figures`
# (default figures/, the docker image's /repro/figures), so that folder can be a mount.
FIGURE_CODE = Path(workflow.basedir) / "figures"
FIGURES = Path(config.get("figures") or "figures")


def fig2_trial():
    """Figure 2 draws one trial of its own cell, run whenever the profile has that cell."""
    from figures.collateral import FIG2_CELL
    in_profile = FIG2_CELL in [c.cell_id for c in PAPERS["collateral"].cells(PROFILE)]
    return [str(RESULTS / "collateral" / FIG2_CELL / "trial-1")] if in_profile else []


# Papers with a figure package (figures/<paper>/__main__.py): the small test papers have none.
FIGURED = [p for p in PAPERS if (FIGURE_CODE / p / "__main__.py").exists()]


def figure_inputs(paper):
    """A paper's figures read its cells, and Collateral Damage's Figure 2 one trial of its own."""
    return cell_files(paper) + (fig2_trial() if paper == "collateral" else [])


REPORT = FIGURES / ("REPORT.md" if PROFILE == "full" else f"REPORT-{PROFILE}.md")

# `snakemake --report report.html` (docker/entrypoint writes figures/report-<profile>.html): every
# figure embedded, grouped by paper, under this description.
report: "docs/report.rst"


def figure_dir(paper):
    return str(FIGURES / paper / PROFILE)


rule all:
    input:
        [f for p in PAPERS for f in cell_files(p)],
        [figure_dir(p) for p in FIGURED],
        [str(REPORT)] if FIGURED else [],


def per_core(paper, cell):
    """Simulated and virtual-time trials are CPU work from start to end: one core each, no lane.
    A real-time trial mostly waits (on the VM, or on traffic): no core, one lane."""
    return lane(paper, cell) in ("sim", "uml")


rule trial:
    input: lambda w: sim_binary(w.paper) + uml_binary(w.paper, w.cell)
    output: directory(str(RESULTS / "{paper}" / "{cell}" / "trial-{k}"))
    wildcard_constraints: paper="|".join(PAPERS) or "(?!)", cell=CELL_ID.pattern, k=r"\d+"
    threads: lambda w: 1 if per_core(w.paper, w.cell) else 0
    resources: trial_lanes=lambda w: 0 if per_core(w.paper, w.cell) else 1
    # A real-time trial whose last attempt failed its checks is measured again by the next run:
    # this value changes exactly then (testbed/attempts.py), and Snakemake reruns on a changed param.
    params: retry=lambda w: attempts.retry_key(RESULTS / w.paper / w.cell / f"trial-{w.k}"), profile=PROFILE
    # The runner's stderr (its notices, attempts and errors; the trial's own log is trial.log in its
    # folder); its one-line outcome and the progress line stay on the terminal. PY is the venv's
    # interpreter, not a parameter: a checkout moved elsewhere must not rerun every trial.
    log: str(LOGS / "{paper}" / "{cell}" / "trial-{k}.log")
    shell:
        "{PY:q} -m tcprepro trial --paper {wildcards.paper:q} --cell {wildcards.cell:q} "
        "--trial {wildcards.k:q} --profile {params.profile:q} --out {output:q} 2> {log:q}"


# Every core the run has (Snakemake caps threads at --cores); not workflow.cores, which a run
# without --cores (a --report, a --dry-run) cannot evaluate.
rule uml_kernel:
    output: UML_KERNEL
    log: str(Path(config["results"]) / "logs" / "uml_kernel.log")
    message: "Building the virtual-time lane's kernel once (about 5 minutes on 2 cores; log: {log})"
    threads: os.cpu_count() or 1
    shell: "{PY:q} -m testbed.uml_kernel build --jobs {threads} 2> {log:q}"


# A simulation model of sim/<dir>/, compiled into build/<dir>/ (sim/build.py; reused while up to date).
rule sim_binary:
    input: lambda w: [f"sim/{w.dir}/{src}" for src in SIM_MODELS[w.model].sources]
    output: "build/{dir}/{model}"
    wildcard_constraints: model="|".join(SIM_MODELS) or "(?!)"
    log: str(Path(config["results"]) / "logs" / "sim_binary-{dir}-{model}.log")
    shell: "{PY:q} -m sim.build {wildcards.model:q} 2> {log:q}"


# What a cell or a paper's figures are made with besides their inputs: the analysis and figure code
# and the paper's config. Given as a rule parameter, a change of it reruns the rule (Snakemake's
# params trigger, which compares with what it recorded when it made the output; an output it has no
# record of, such as committed reference figures in a fresh clone, is left alone).
CODE = {"cell": ["analysis/*.py"], "figures": ["analysis/*.py", "figures/*.py", "figures/{paper}/**/*.py"]}


@cache
def code_digest(paper, step):
    base = Path(workflow.basedir)
    files = sorted({f for g in CODE[step] for f in base.glob(g.format(paper=paper))}) + [PAPERS[paper].path]
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


rule cell:
    input: lambda w: trial_dirs(w.paper, w.cell)
    output: str(RESULTS / "{paper}" / "{cell}" / "cell.json")
    params: code=lambda w: code_digest(w.paper, "cell")
    run:
        from analysis.aggregate import write_cell
        expected = PAPERS[wildcards.paper].profile(PROFILE)["trials"]
        write_cell(Path(output[0]).parent, expected_trials=expected, trial_dirs=list(input))


# Every table, figure and verdict of one paper: figures/<paper>/<profile>/ (figures/<paper>/__main__.py),
# regenerated whole (Snakemake empties a directory output first, so no stale figure survives).
rule figures:
    input: lambda w: figure_inputs(w.paper)
    output: report(directory(str(FIGURES / "{paper}" / PROFILE)), patterns=["{name}.png"], category="{paper}")
    wildcard_constraints: paper="|".join(FIGURED) or "(?!)"
    params: out=lambda w: FIGURES / w.paper / PROFILE, results=lambda w: RESULTS / w.paper,
            code=lambda w: code_digest(w.paper, "figures")
    log: str(LOGS / "figures-{paper}.log")
    shell: "{PY:q} -m figures.{wildcards.paper} --profile {PROFILE:q} --results {params.results:q} --out {params.out:q} 2> {log:q}"


# Every paper's result set of this profile in one document (figures/report.py).
rule report:
    input: [figure_dir(p) for p in FIGURED]
    output: report(str(REPORT), category="Scorecard and verdicts")
    log: str(LOGS / "report.log")
    shell: "{PY:q} -m figures.report --profile {PROFILE:q} --figures {FIGURES:q} 2> {log:q}"
