"""What makes the five trials of a cell differ on the virtual-time lane.

In virtual time a trial is a function of its inputs: run again, it repeats to the last packet. The
papers' testbeds differed from trial to trial through timing noise (interrupts, scheduling, clock
drift) that virtual time does not have. Its stand-in here is seeded and recorded:

- the seed of trial k of a cell: the first 8 bytes of SHA-256("<paper>/<cell>/<k>"), so the same
  trial number gives the same trial and no two trials share one;
- every bulk flow starts up to one base RTT (at least 1 ms) after its configured time, and every VoIP
  flow up to one packet interval after it, uniformly (Python's random.Random(seed)): the phase of the
  flows against one another and against the probe stream, which is what timing noise varies. The
  span stops short of the next later configured start, so flows configured to start in an order
  keep it (LEDBAT's Figure 6 read as "20 ms after", with a 40-ms base RTT); flows configured to
  start together are in no order and keep the whole span;
- every packet's delay at each netem delay stage deviates by up to JITTER_MS either side of the
  configured delay, uniformly, order kept (netem's rate mode): the accuracy the papers' emulators
  had (dummynet at kern.hz=2000 ticks every 0.5 ms), at most ±0.5 ms of round trip, the tolerance of
  the real-time lanes' base-RTT check; the base RTT is measured before it is added;
- the guest kernel gets the seed on its command line, which its random pool mixes in, and once the
  trial's network exists the kernel's random state is rekeyed from that command line alone
  (testbed/trial.py, rekey_guest_random): everything the kernel randomises (netem's losses and
  jitter, initial sequence numbers, ports) follows the seed too, whatever machine image the guest's
  user space comes from.
"""
from __future__ import annotations

import copy
import hashlib
import random
from typing import Any

SOURCE = ("seeded start offsets: bulk flows U[0, base RTT), VoIP flows U[0, interval), each at most up to the "
          "next later configured start; per-packet netem delay jitter U[-0.25, 0.25] ms, order kept; the guest "
          "kernel's random pool seeded by the command line")


def seed_for(paper: str, cell: str, trial: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{paper}/{cell}/{trial}".encode()).digest()[:8], "big")


def base_rtt_ms(spec: dict[str, Any]) -> float:
    bottleneck = spec["scenario"]["bottleneck"]
    return float(bottleneck["forward"].get("delay_ms") or 0) + float(bottleneck["reverse"].get("delay_ms") or 0)


JITTER_MS = 0.25            # each way, either side of the delay


def apply(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with its flows' start times offset by the trial's seed, and the record of it under
    spec["variation"] (seed, source, each flow's offset in ms)."""
    seed = seed_for(spec["paper"], spec["cell"], int(spec["trial"]))
    rng = random.Random(seed)
    out = copy.deepcopy(spec)
    bulk_span_ms = max(1.0, base_rtt_ms(spec))
    starts = sorted({float(f["start_s"]) for f in out["flows"]})
    offsets = {}
    for flow in out["flows"]:
        span_ms = bulk_span_ms if flow["kind"] == "bulk" else float(flow["interval_ms"])
        later = [t for t in starts if t > float(flow["start_s"])]
        if later:
            span_ms = min(span_ms, (later[0] - float(flow["start_s"])) * 1000.0)
        offset_ms = rng.uniform(0.0, span_ms)
        flow["start_s_configured"] = flow["start_s"]
        flow["start_s"] = round(float(flow["start_s"]) + offset_ms / 1000.0, 6)
        offsets[flow["id"]] = round(offset_ms, 3)
    out["variation"] = {"seed": seed, "source": SOURCE, "start_offsets_ms": offsets, "jitter_ms": JITTER_MS}
    return out
