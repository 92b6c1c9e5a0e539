"""LEDBAT decrease schemes (Kühlewind, Fisches 2011): Figures 1-6, the completion times and the claim
verdicts.

One package per paper, the same modules in each: run (the loaded results), metrics (numbers the
engine does not compute), claims (every claim's verdict), tables, plots, verdict (verdict.md).
`python -m analysis.ledbat --profile P` draws them from results/<P>/ledbat into figures/ledbat/<P>/.
"""
