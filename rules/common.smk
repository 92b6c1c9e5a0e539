# Helpers of every rule (the cells a run selects, where each trial runs, the inputs of trials,
# cells and figures), the code digests that rerun the aggregation when its code changes, and the
# trials a run's plan lists.
from configuration import environment, folders
from testbed import lane as lanes
from testbed import placement

# Where a run writes and removes its outputs: never /, $HOME, a system folder, nor a folder holding
# files that are not this project's (configuration/folders.py; a link is judged by where it points).
try:
    folders.check(config, Path.cwd(), "the workflow config (config/workflow.yaml, the profile's config: or --config)")
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None


def start_writing():
    """When a run starts (not a dry run): claim the results folder's profile for this checkout (another
    checkout's run there at the same time is refused) and mark the folders it writes as ours."""
    try:
        folders.claim(RESULTS, Path.cwd())
    except ConfigError as exc:
        raise WorkflowError(str(exc)) from None
    folders.mark("results", Path(config["results"]))
    folders.mark("figures", FIGURES)

# `--config cells='*-rtt50-*,htcp-rtt100-f1'` runs only the cells matching these globs.
ONLY = [g.strip() for g in str(config.get("cells") or "").split(",") if g.strip()]


def selected_cells(paper):
    cells = [c.cell_id for c in PAPERS[paper].cells(PROFILE)]
    return [c for c in cells if not ONLY or any(fnmatch(c, g) for g in ONLY)]


if ONLY and not any(selected_cells(p) for p in PAPERS):
    raise WorkflowError(f"--config cells={config['cells']}: no cell of profile {PROFILE} matches; cells are "
                        + ", ".join(c.cell_id for p in PAPERS for c in PAPERS[p].cells(PROFILE)))


# `--config robustness='*'` (globs over <choice>.<alternative>) measures the cells each selected
# alternative of an open choice needs and judges every claim under it (rule robustness).
ROBUST = [g.strip() for g in str(config.get("robustness") or "").split(",") if g.strip()]


def alternatives_of(paper):
    return [a for a in PAPERS[paper].alternatives if any(fnmatch(a.key, g) for g in ROBUST)]


if ROBUST and not any(alternatives_of(p) for p in PAPERS):
    raise WorkflowError(f"--config robustness={config['robustness']}: no open choice's alternative matches; they are "
                        + ", ".join(a.key for p in PAPERS for a in PAPERS[p].alternatives))


@cache
def stand_in_cells(paper):
    """The cells the selected alternatives put in place of selected cells, beyond the selection:
    their twins, and matrix cells the profile does not run; not those of cells no claim reads
    (an alternative's `unread`)."""
    selected = set(selected_cells(paper))
    out = []
    for alt in alternatives_of(paper):
        out += [s for ref, s in alt.twins.items()
                if ref in selected and ref not in alt.unread and s not in selected and s not in out]
    return out


def trial_dirs(paper, cell=None):
    n = PAPERS[paper].profile(PROFILE)["trials"]
    cells = selected_cells(paper) if cell is None else [cell]
    return [str(RESULTS / paper / c / f"trial-{k}") for c in cells for k in range(1, n + 1)]


def cell_files(paper):
    return [str(RESULTS / paper / c / "cell.json") for c in selected_cells(paper) + stand_in_cells(paper)]


def planned_trial_files(paper):
    """Every planned trial, a target of its own: Snakemake looks below an up-to-date output only
    through its record of the job that wrote it, so a cell.json it has no record of (restored from
    data/ by `archive restore`, or a fresh clone's) would hide the trials a larger profile adds, and
    they would never run."""
    return [t for c in selected_cells(paper) + stand_in_cells(paper) for t in trial_dirs(paper, c)]


def cluster_lane():
    """On a cluster (a remote executor such as `--workflow-profile profiles/slurm`) every measured
    trial runs on the virtual-time lane: one unprivileged process per job, no machine-wide state. The
    VM lane keeps its lock and PIDs for one machine and the host lane needs root (docs/cluster.md).
    Called once, before the papers are placed; set in the environment, the lane reaches every job
    (sbatch exports it). Note: Snakemake 9 includes the Snakefile before it sets its executor plugin
    (snakemake/api.py), so whether this sees a cluster executor at load needs checking (issue 54)."""
    if not workflow.non_local_exec:
        return
    forced = (environment.get("TCPREPRO_KERNEL") or "uml").strip().lower() or "uml"
    if forced not in (lanes.UML.name, "auto"):
        raise WorkflowError(f"TCPREPRO_KERNEL={forced}: a cluster runs measured trials on the virtual-time lane "
                            "only (the VM lane's bookkeeping is per machine, the host lane needs root). "
                            "Fix: unset TCPREPRO_KERNEL or set it to uml")
    os.environ[environment.JOB["kernel"]] = lanes.UML.name       # the job protocol (configuration/environment.py)


@cache
def lanes_of(paper):
    """{cell: lane} (testbed/lane/) of a paper: placed by testbed/placement.py for a measured paper
    (a cell that cannot run stops the workflow here); a simulated paper's cells on the simulated lane."""
    if PAPERS[paper].simulated:
        return {c: lanes.SIMULATED for c in [x.cell_id for x in PAPERS[paper].cells(PROFILE)] + stand_in_cells(paper)}
    try:
        plan = placement.plan(paper, PROFILE, survey=host_survey(), extra=stand_in_cells(paper))
    except (OSError, ValueError, RuntimeError) as exc:
        raise WorkflowError(f"{paper}: cannot place its cells: {exc}") from None
    # A cell that cannot run on its paper's lane stops the workflow before any trial, with the fix:
    # never a silent move to another lane, never a failed trial per cell.
    if not plan.runnable:
        raise WorkflowError(f"[plan] {plan.summary()}")
    return {c.cell_id: c.where for c in plan.cells}


@cache
def host_survey():
    """What this machine's lanes can run (testbed/placement.py) for the congestion controls of the
    workflow's measured papers, taken once."""
    ccs = {n.removeprefix("cc:") for p in PAPERS if not PAPERS[p].simulated
           for c in PAPERS[p].cells_by_id.values() for n in placement.needs(c.scenario) if n.startswith("cc:")}
    return placement.take_survey(ccs=ccs)


def lane(paper, cell):
    return lanes_of(paper).get(cell)


# Every selected paper is placed at load, before any job: one that cannot run on its lane stops here.
cluster_lane()
# The trial jobs take this placement rather than placing again (testbed/placement.py `cell_lane`).
os.environ[placement.PLACED] = placement.for_jobs({p: lanes_of(p) for p in PAPERS if selected_cells(p)})


# The UML lane's kernel, built once per definition (testbed/uml_kernel.py; its cache key is in the
# path). Trials take it as ancient(): a trial already measured is not rerun for a rebuilt kernel
# (its provenance names the kernel it ran on), as for the VM lane's kernel.
# Both binaries are checkpoints. ancient() spares a finished trial only when the binary exists:
# one still to be built would mark every finished trial (restored from data/, say) as updated by
# another job, and Snakemake would measure them all again. A trial's input waits for the checkpoint
# instead, and is known only once the binary is built (ancient(), so the build reruns nothing).
# Relative to the checkout where it lives there (the default), else absolute (TCPREPRO_UML_BUILD
# pointing elsewhere).
_uml_kernel = uml_kernel.kernel_dir() / "linux"
UML_KERNEL = str(_uml_kernel.relative_to(workflow.basedir) if _uml_kernel.is_relative_to(workflow.basedir)
                 else _uml_kernel)


def uml_binary(paper, cell):
    if lane(paper, cell) is not lanes.UML:
        return []
    checkpoints.uml_kernel.get()
    return [ancient(UML_KERNEL)]


def sim_binary(paper):
    """A simulated paper's trials run its model, compiled by rule sim_binary (again when its sources
    change). Trials take it as ancient(), as the UML kernel: a binary built after them (a new cell
    on a machine whose trials came from data/) does not rerun them. Each trial's provenance names
    the model sources it ran; one that ran other sources than the checkout's is stale
    (analysis/report/provenance.py), flagged in its verdict and REPORT.md."""
    if not PAPERS[paper].simulated:
        return []
    m = SIM_MODELS[PAPERS[paper].data["scenario"]["model"]]
    checkpoints.sim_binary.get(dir=m.directory, model=m.name)
    return [ancient(f"build/{m.directory}/{m.name}")]


def trial_priority(paper, cell):
    """Rule trial's priority: a simulated model's adapter may order its runs (sim/wlan/model.py
    `priority`: smaller M_t first, as such a run can prove a larger M_t's run to be its own,
    testbed/proven_runs.py). Only the order changes, never what a trial records."""
    if not PAPERS[paper].simulated:
        return 0
    adapter = sim_adapter(PAPERS[paper].data["scenario"]["model"])
    found = PAPERS[paper].any_cell(cell)
    return adapter.priority(found.scenario) if found is not None and hasattr(adapter, "priority") else 0


def waits_only_for_a_binary(job):
    """A finished trial the DAG lists only because a binary it takes is still to be built: once
    built, the checkpoint's DAG update drops it (its input is ancient), so the plan leaves it out."""
    reason = workflow.dag.reason(job)
    if not reason.updated_input_run or not all(Path(f).exists() for f in job.output):
        return False
    binaries = {UML_KERNEL} | {f"build/{m.directory}/{m.name}" for m in SIM_MODELS.values()}
    other = (reason.updated_input or reason.missing_output or reason.incomplete_output or reason.forced
             or reason.is_provenance_triggered() or reason.unfinished_queue_input)
    return not other and {str(f) for f in reason.updated_input_run} <= binaries


def job_runtime_min(paper, cell):
    """Minutes a cluster job gets for one trial: config `cluster` scales the cell's duration (or
    bound). A real-time trial may be measured max_attempts times."""
    c = config["cluster"]
    seconds = PAPERS[paper].duration_s(cell, PROFILE) * c["wall_s_per_virtual_s"]
    if not per_core(paper, cell):
        seconds *= config["max_attempts"]
    return c["runtime_floor_min"] + math.ceil(seconds / 60)


def job_mem_mb(paper, cell):
    return (lane(paper, cell) or lanes.UML).mem_mb(config["cluster"])


def per_core(paper, cell):
    """Simulated and virtual-time trials are CPU work from start to end: one core each, no trial
    slot. A real-time trial mostly waits (on the VM, or on traffic): no core, one slot (the
    resource `trial_lanes`)."""
    where = lane(paper, cell)
    return where is not None and where.per_core


def planned_trials():
    """The trial jobs this run starts, as the plan lists them. Snakemake's DAG decides, not the folders:
    it also reruns a finished trial whose job it marks incomplete (a runner that finished after
    Snakemake itself was killed) or whose retry key changed (testbed/attempts.py). A simulated or
    virtual-time trial has no real-time traffic: its wall time is what the progress log measures.
    A cell may set its own duration (fixed-size transfers: the bound, an overestimate): "bounded"."""
    trials = []
    for job in workflow.dag.needrun_jobs():
        if job.rule.name != "trial" or waits_only_for_a_binary(job):
            continue
        paper, cell = job.wildcards.paper, job.wildcards.cell
        sim = per_core(paper, cell)
        trials.append({"dir": str(Path(job.output[0]).resolve()), "per_core": sim,
                       "duration_s": 0 if sim else PAPERS[paper].duration_s(cell, PROFILE),
                       "bounded": "duration_s" in PAPERS[paper].any_cell(cell).scenario})
    return sorted(trials, key=lambda t: t["dir"])


# A paper's analysis package (analysis/<paper>/__main__.py) draws its tables, figures and verdict
# into config `figures` (default figures/, the docker image's /repro/figures), so that folder can be
# a mount.
ANALYSIS_CODE = Path(workflow.basedir) / "analysis"
FIGURES = Path(config.get("figures") or "figures")


def figure_trials(paper):
    """Trial 1 of each cell the paper's config names under figure_trials, when the profile has it."""
    in_profile = {c.cell_id for c in PAPERS[paper].cells(PROFILE)}
    return [str(RESULTS / paper / c / "trial-1") for c in PAPERS[paper].figure_trials if c in in_profile]


# Papers with an analysis package (analysis/<paper>/__main__.py): the small test papers have none.
FIGURED = [p for p in PAPERS if (ANALYSIS_CODE / p / "__main__.py").exists()]


def figure_inputs(paper):
    """A paper's figures read its cells, and the trials its config names under figure_trials."""
    return cell_files(paper) + figure_trials(paper)


def lane_inputs(paper):
    """What the robustness judging reads of the lanes (analysis/robustness_lane.py): the
    cross-validation's config and its committed snapshots of the paper's cells on each lane."""
    base = Path(workflow.basedir)
    return [str(base / "config" / "crossval.yaml")] + sorted(str(p) for p in base.glob(f"data/crossval/*/{paper}.json"))


def robustness_file(paper):
    """The paper's verdicts under its open choices' alternatives: made by rule robustness when the
    run selects alternatives, else read when one exists (a committed reference's), as ancient():
    a checkout's file times say nothing of its age."""
    path = FIGURES / paper / f"{PROFILE}-robustness.json"
    return [str(path)] if ROBUST else [ancient(str(path))] if path.exists() else []


REPORT = FIGURES / ("REPORT.md" if PROFILE == "full" else f"REPORT-{PROFILE}.md")
HTML_REPORT = FIGURES / f"report-{PROFILE}.html"


def figure_dir(paper):
    return str(FIGURES / paper / PROFILE)


# What a cell or a paper's figures are made with besides their inputs: the analysis code (a paper's
# figures also the report code they are drawn and judged with, analysis/report/) and the paper's
# config. Given as a rule parameter, a change of it reruns the rule (Snakemake's params trigger,
# which compares with what it recorded when it made the output; an output it has no record of, such
# as committed reference figures in a fresh clone, is left alone).
CODE = {"cell": ["analysis/*.py"], "figures": ["analysis/*.py", "analysis/report/*.py", "analysis/{paper}/*.py"]}


@cache
def code_digest(paper, step):
    base = Path(workflow.basedir)
    files = sorted({f for g in CODE[step] for f in base.glob(g.format(paper=paper))}) + [PAPERS[paper].path]
    h = hashlib.sha256()
    for f in files:
        h.update(b"%b\0%b\0" % (f.name.encode(), f.read_bytes()))
    return h.hexdigest()[:16]
