"""Westwood+ vs CUBIC (Gerhard, Girardi 2012): Figures 1 and 5-11, the throughput table, the loss
and delay sweeps and the claim verdicts, from results/<profile>/westwood.

`python -m figures.westwood --profile full` writes everything to figures/westwood/<profile>/.
"""
