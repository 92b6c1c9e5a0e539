"""Westwood+ vs CUBIC (Gerhard, Girardi 2012): Figures 1 and 5-11, the throughput table, the loss and
delay sweeps and the claim verdicts.

One package per paper, the same modules in each: run (the loaded results), metrics (numbers the
engine does not compute), claims (every claim's verdict), tables, plots, verdict (verdict.md).
`python -m analysis.westwood --profile P` draws them from results/<P>/westwood into figures/westwood/<P>/.
"""
