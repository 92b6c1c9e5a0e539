# tcprepro workflow: trials -> cells (-> tables, figures, report as the papers land).
# Run `snakemake --cores all` (profile from config/workflow.yaml) or `make quick|reproduce|smoke`.
import sys
from pathlib import Path

from tcprepro.config import load_paper

configfile: "config/workflow.yaml"

PROFILE = config["profile"]
RESULTS = Path(config["results"]) / PROFILE
PAPERS = {name: load_paper(name) for name in config["papers"]}   # validated before anything runs
PY = sys.executable


def trial_dirs(paper, cell=None):
    cfg = PAPERS[paper]
    n = cfg.profile(PROFILE)["trials"]
    cells = [c.cell_id for c in cfg.cells(PROFILE)] if cell is None else [cell]
    return [str(RESULTS / paper / c / f"trial-{k}") for c in cells for k in range(1, n + 1)]


def cell_files(paper):
    return [str(RESULTS / paper / c.cell_id / "cell.json") for c in PAPERS[paper].cells(PROFILE)]


onstart:
    from testbed.progress import write_plan
    todo = [{"dir": str(Path(d).resolve()), "duration_s": PAPERS[p].profile(PROFILE)["duration_s"]}
            for p in PAPERS for d in trial_dirs(p) if not Path(d, "summary.json").exists()]
    print(f"[plan] profile {PROFILE}: " + write_plan(RESULTS, todo, workflow.cores), file=sys.stderr)

onsuccess:
    shell(f"{PY} -m tcprepro vm stop --quiet")

onerror:
    shell(f"{PY} -m tcprepro vm stop --quiet")


rule all:
    input: [f for p in PAPERS for f in cell_files(p)]


rule trial:
    output: directory(str(RESULTS / "{paper}" / "{cell}" / "trial-{k}"))
    wildcard_constraints: k=r"\d+"
    resources: trial_lanes=1
    shell:
        "{PY} -m tcprepro trial --paper {wildcards.paper} --cell {wildcards.cell} "
        "--trial {wildcards.k} --profile " + PROFILE + " --out {output}"


rule cell:
    input: lambda w: trial_dirs(w.paper, w.cell)
    output: str(RESULTS / "{paper}" / "{cell}" / "cell.json")
    run:
        from analysis.aggregate import write_cell
        expected = PAPERS[wildcards.paper].profile(PROFILE)["trials"]
        write_cell(Path(output[0]).parent, expected_trials=expected, trial_dirs=list(input))
