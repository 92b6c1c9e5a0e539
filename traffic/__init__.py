"""Traffic generators of a trial: bulk TCP, VoIP-like UDP, cross traffic."""
