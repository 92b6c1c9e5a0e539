"""Collateral Damage: Tables 1-2, Figures 1-5 and the claim verdicts, from results/<profile>/collateral.

`python -m figures.collateral --profile full` writes everything to figures/collateral/<profile>/.
"""

# Figure 2's trial (the paper's: one H-TCP flow at 100 ms RTT); the workflow runs it in every
# profile whose cells include it, even when `--config cells=...` selects others.
FIG2_CELL = "htcp-rtt100-f1"
