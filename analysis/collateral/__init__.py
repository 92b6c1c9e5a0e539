"""Collateral Damage (Stewart, Armitage, Huebner 2009): Tables 1-2, Figures 1-5 and the claim verdicts.

One package per paper, the same modules in each: run (the loaded results), metrics (numbers the
engine does not compute), claims (every claim's verdict), tables, plots, verdict (verdict.md).
`python -m analysis.collateral --profile P` draws them from results/<P>/collateral into figures/collateral/<P>/.
"""
