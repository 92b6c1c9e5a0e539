# Tables, figures, verdicts and the report of every paper.

# Every table, figure and verdict of one paper: figures/<paper>/<profile>/ (analysis/<paper>/__main__.py),
# regenerated whole (Snakemake empties a directory output first, so no stale figure survives).
rule figures:
    input: lambda w: figure_inputs(w.paper) + robustness_file(w.paper)
    output: directory(str(FIGURES / "{paper}" / PROFILE))
    wildcard_constraints: paper="|".join(FIGURED) or "(?!)"
    params: out=lambda w: FIGURES / w.paper / PROFILE, results=lambda w: RESULTS / w.paper,
            code=lambda w: code_digest(w.paper, "figures"), profile=PROFILE
    log: str(LOGS / "figures-{paper}.log")
    resources: mem_mb=config["cluster"]["mem_mb"]["figures"], runtime=60
    shell:
        "{PY:q} -m analysis.{wildcards.paper} --profile {params.profile:q} --results {params.results:q} "
        "--out {params.out:q} 2> {log:q}"


# Every paper's result set of this profile in one document (analysis/report/report.py).
rule report:
    input: [figure_dir(p) for p in FIGURED], [f for p in FIGURED for f in robustness_file(p)]
    output: str(REPORT)
    params: profile=PROFILE, figures=FIGURES
    log: str(LOGS / "report.log")
    shell: "{PY:q} -m analysis.report.report --profile {params.profile:q} --figures {params.figures:q} 2> {log:q}"


# The same as one page a reviewer opens in a browser, figures embedded (analysis/report/html_report.py says
# why it is not Snakemake's --report): from the result sets of the papers that ran.
rule html_report:
    input: [figure_dir(p) for p in FIGURED], str(REPORT)
    output: str(HTML_REPORT)
    params: profile=PROFILE, figures=FIGURES
    log: str(LOGS / "html-report.log")
    shell:
        "{PY:q} -m analysis.report.html_report --profile {params.profile:q} --figures {params.figures:q} "
        "--out {output:q} 2> {log:q}"


# Every claim of a paper judged under each alternative of its open choices whose cells are measured
# (analysis/robustness.py), beside its figure folder; verdict.md and REPORT.md show the table. Only
# when the run selects alternatives (`--config robustness=...`): otherwise a committed file is read.
if ROBUST:
    rule robustness:
        input: lambda w: cell_files(w.paper) + lane_inputs(w.paper)
        output: str(FIGURES / "{paper}" / f"{PROFILE}-robustness.json")
        wildcard_constraints: paper="|".join(FIGURED) or "(?!)"
        params: results=lambda w: RESULTS / w.paper, code=lambda w: code_digest(w.paper, "figures"), profile=PROFILE
        log: str(LOGS / "robustness-{paper}.log")
        resources: mem_mb=config["cluster"]["mem_mb"]["figures"], runtime=120
        shell:
            "{PY:q} -m analysis.robustness --paper {wildcards.paper:q} --profile {params.profile:q} "
            "--results {params.results:q} --out {output:q} 2> {log:q}"
