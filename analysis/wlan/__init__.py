"""TCP over 802.11b (Vacirca, Cuomo 2006) on ns-3's DCF: Figures 1-8, the dl1-ul1 table, the claim
verdicts and the schedulers beyond the paper.

One package per paper, the same modules in each: run (the loaded results), metrics (numbers the
engine does not compute), claims (every claim's verdict), tables, plots, verdict (verdict.md).
`python -m analysis.wlan --profile P` draws them from results/<P>/wlan into figures/wlan/<P>/.
"""
