"""802.11b uplink/downlink fairness (Vacirca, Cuomo, WONS 2006) on ns-3's DCF: Figures 1-8, the
dl1-ul1 table, the claim verdicts and the adaptive scheduler beyond the paper, from results/<profile>/wlan.

`python -m figures.wlan --profile quick` writes everything to figures/wlan/<profile>/.
"""
