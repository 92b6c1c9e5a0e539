"""Collateral Damage: Tables 1-2, Figures 1-5 and the claim verdicts, from results/<profile>/collateral.

`python -m figures.collateral --profile full` writes everything to figures/collateral/<profile>/.
"""
