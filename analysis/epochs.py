"""Congestion epochs from a cwnd series (tcp:tcp_probe), whatever the kernel's loss recovery does.

Linux lowers cwnd over a round trip during recovery (Proportional Rate Reduction), not in one step,
so a congestion event is not one sample's fall. An event here: cwnd falls to FALL of its highest
value since it last grew back, counted once; the next event needs cwnd to have grown from its
trough by 1/FALL again. tcp_probe's ssthresh field cannot serve: outside recovery the
tracepoint prints max(ssthresh, 3/4 cwnd).
"""
from __future__ import annotations

import numpy as np

FALL = 0.8


def congestion_events(t: np.ndarray, cwnd: np.ndarray, fall: float = FALL) -> np.ndarray:
    """Times of congestion events: the first sample at or below `fall` x the peak since cwnd last
    grew back; after an event cwnd must climb to trough / `fall` before the next one can count."""
    events = []
    armed, peak, trough = True, -np.inf, np.inf
    for ti, w in zip(t, cwnd, strict=True):
        if armed:
            peak = max(peak, w)
            if w <= fall * peak:
                events.append(ti)
                armed, trough = False, w
        else:
            trough = min(trough, w)
            if w >= trough / fall and w > trough:
                armed, peak = True, w
    return np.asarray(events, dtype=float)


def epochs(t: np.ndarray, cwnd: np.ndarray) -> int:
    """Complete congestion epochs (event to event) in the series."""
    return max(0, len(congestion_events(t, cwnd)) - 1)


def backoff_depths(t: np.ndarray, cwnd: np.ndarray) -> list[float]:
    """Per congestion event: cwnd's trough before the next event over its peak since the previous
    one, whatever recovery does in between (0.5 for a backoff to half; H-TCP's adaptive backoff
    allows up to 0.8, whose falls this module counts too: FALL is 0.8)."""
    events = congestion_events(t, cwnd)
    bounds = [-np.inf, *events, np.inf]
    out = []
    for i, te in enumerate(events):
        before = cwnd[(t >= bounds[i]) & (t <= te)]
        after = cwnd[(t >= te) & (t < bounds[i + 2])]
        if before.max() > 0:
            out.append(float(after.min() / before.max()))
    return out
