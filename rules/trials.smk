# Trials (measured or simulated), what they run on (the UML kernel, the ns-3 model), and cells.

rule trial:
    input: lambda w: sim_binary(w.paper) + uml_binary(w.paper, w.cell)
    output: directory(str(RESULTS / "{paper}" / "{cell}" / "trial-{k}"))
    wildcard_constraints: paper="|".join(PAPERS) or "(?!)", cell=CELL_ID.pattern, k=r"\d+"
    threads: lambda w: 1 if per_core(w.paper, w.cell) else 0
    priority: lambda w: trial_priority(w.paper, w.cell)
    # trial_lanes for the local scheduler; mem_mb and runtime (minutes) for a cluster's (config
    # `cluster`: rules/common.smk job_mem_mb, job_runtime_min).
    resources: trial_lanes=lambda w: 0 if per_core(w.paper, w.cell) else 1,
               mem_mb=lambda w: job_mem_mb(w.paper, w.cell), runtime=lambda w: job_runtime_min(w.paper, w.cell)
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


# The binaries trials run on are checkpoints (rules/common.smk uml_binary, sim_binary says why).
# Every core the run has (Snakemake caps threads at --cores); not workflow.cores, which a run
# without --cores (a --report, a --dry-run) cannot evaluate. At most 8: on a cluster the job asks
# for that many CPUs on one node, and the head node's core count says nothing about the nodes'.
checkpoint uml_kernel:
    output: UML_KERNEL
    log: str(LOG_ROOT / "uml_kernel.log")
    message: "Building the virtual-time lane's kernel once (about 5 minutes on 2 cores; log: {log})"
    threads: min(os.cpu_count() or 1, 8)
    resources: mem_mb=config["cluster"]["mem_mb"]["uml_kernel"], runtime=60
    shell: "{PY:q} -m testbed.uml_kernel build --jobs {threads} 2> {log:q}"


# A simulation model of sim/<dir>/, compiled into build/<dir>/ (sim/build.py; reused while up to date).
checkpoint sim_binary:
    input: lambda w: [f"sim/{w.dir}/{src}" for src in SIM_MODELS[w.model].sources]
    output: "build/{dir}/{model}"
    wildcard_constraints: model="|".join(SIM_MODELS) or "(?!)"
    log: str(LOG_ROOT / "sim_binary-{dir}-{model}.log")
    resources: mem_mb=config["cluster"]["mem_mb"]["sim"], runtime=30
    shell: "{PY:q} -m sim.build {wildcards.model:q} 2> {log:q}"


rule cell:
    input: lambda w: trial_dirs(w.paper, w.cell)
    output: str(RESULTS / "{paper}" / "{cell}" / "cell.json")
    params: code=lambda w: code_digest(w.paper, "cell"), expected=lambda w: PAPERS[w.paper].profile(PROFILE)["trials"],
            cell_dir=lambda w: RESULTS / w.paper / w.cell
    log: str(LOGS / "{paper}" / "{cell}" / "cell.log")
    shell: "{PY:q} -m analysis.aggregate --expected {params.expected} {params.cell_dir:q} {input:q} 2> {log:q}"
