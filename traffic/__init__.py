"""Traffic generators of our own: the VoIP-like UDP probe flow (voip.py). Bulk TCP flows and cross
traffic are iperf2 or iperf3, the papers' own tools, which testbed/trial.py starts."""
