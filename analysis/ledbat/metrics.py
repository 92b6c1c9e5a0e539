"""LEDBAT decrease schemes (Kühlewind, Fisches 2011): what the figures plot and the claims judge.

Per trial, on the trial's clock (0 = the first flow's start):
- per-flow rate: bytes the receiver acknowledged per 1-s bin (snd_una of the sender's socket in
  tcp:tcp_probe, which fires on every ACK), i.e. goodput as the sender sees it;
- queueing delay: the bottleneck qdisc's backlog (sampled every 10 ms) over the link rate, the
  delay a packet joining the queue would wait; not RTT minus base RTT, which mixes in the
  receiver's delayed-ACK timer and the stack's own latency under QEMU TCG;
- completion: when the last byte of each fixed-size transfer was acknowledged (summary.json, from
  the sender's capture), as a time since the first flow's start, the way the paper quotes them;
- mean sum rate (the paper's Fig 5): every flow's bytes over the time from the first start to the
  last completion; link utilisation: that over the bottleneck rate (headers cap it at 1448/1514);
- Jain's index per bin (`jain_mean`): per 1-s bin over the flows active in the whole bin, averaged
  over the bins where two or more were: how evenly the link is divided from second to second,
  which flows that alternate (do not synchronise) lower;
- the share of the bandwidth (`jain_share`): Jain's index of the bytes each flow moved over a
  phase, a run of bins with one set of two or more active flows (it changes at each start and
  completion), averaged over the phases weighted by their length: whether the flows got the same
  share over the time they ran together, what the paper's completion times measure and what it
  keeps apart from synchronising (MD-NF2 "does not perfectly divide the bandwidth but
  approximately gives each flow an equal share"); `restart_jain`: the same over the first phase
  that a completion opens after every flow has started (the flows left when the dominating one
  finished, section 5.2);
- the first flow's mean rate over its lone phase (`lone_rate_mbit_s`: how fast it increases);
  the queue's median while the first two LEDBAT flows both run, over the second half of that time
  (`both_queue_p50_ms`: what a late-comer adds on top of the first flow's queue);
- shares: the late-comer's (second flow's) share of the two first flows' rate while both run; in
  Fig 6, the LEDBAT flow's share of the link while the TCP flow runs;
- time under half the link: the 1-s bins, from the first start to the last completion, in which
  all flows together moved less than half the bottleneck rate (a flow locked at a window of 2-3
  packets by delayed ACKs shows here, figures/crossval/crossval.md).
- per arrival k (flow k joins, k >= 2): Jain's index of the bytes the flows moved over the last
  ARRIVAL_SETTLED_S before the next flow joins (after the last arrival: as long after it as the
  flows are apart), i.e. whether the flows reached an equal share before the next one disturbed
  them (the paper's Fig 4 reading);
  and the queue's minimum over the first ARRIVAL_SETTLED_S after the arrival: the newcomer's first
  seconds of base-delay samples are exact when it reaches zero (the late-comer's advantage needs
  a queue that does not drain).
The cell's trimmed mean of each is what the tables and claims read (`ledbat_cells`).
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import claims_input
from analysis.aggregate import trimmed_stats
from analysis.metrics import probe_for_flow
from analysis.parsers import read_qdisc, read_tcp_probe

BIN_S = 1.0
# LEDBAT's share against TCP (Fig 6) is read over the second half of the time both run: the first
# half holds the TCP flow's start-up, in which any sender keeps most of the link for a while.
SETTLED = 0.5
# The window in which an arrival is read: the last seconds before the next flow joins, and the
# newcomer's first seconds (a third of the paper's 15-s spacing).
ARRIVAL_SETTLED_S = 5.0
SEQ_SPACE = 1 << 32
# Payload per packet at a 1500-byte MTU with TCP timestamps (1448 of 1500 bytes): the most the
# testbed's bottleneck can carry as goodput, since its shaper counts IP bytes as dummynet did
# (testbed/shaping.py: the size table drops the Ethernet header).
GOODPUT_CEILING = 1448 / 1500
CACHE = "ledbat-metrics.json"
# The cache is valid for this module's code only: a change of how metrics are computed recomputes
# them without anyone remembering to bump a version.
CACHE_VERSION = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


@dataclass
class Flow:
    """One transfer of a trial: who, when (s since the first start) and its rate per bin."""

    id: str
    cc: str
    start_s: float
    bytes: int
    done_s: float | None            # last byte acknowledged, s since the first flow's start
    rate_mbit: np.ndarray           # Mbit/s per bin (bin k covers [k, k+1) x BIN_S)


@dataclass
class TrialSeries:
    trial: Path
    rate_kbit: float                # bottleneck rate
    flows: list[Flow]
    queue_t: np.ndarray             # s since the first start
    queue_ms: np.ndarray            # forward bottleneck backlog / rate


# ---------------------------------------------------------------------------------------------
# Series from raw samples
# ---------------------------------------------------------------------------------------------

def acked_bytes(snd_una: np.ndarray) -> np.ndarray:
    """Bytes acknowledged since the first sample, from 32-bit snd_una values (wraps unrolled;
    snd_una never moves back, so any apparent step back is a wrap)."""
    una = np.asarray(snd_una, dtype=np.int64)
    if len(una) == 0:
        return np.zeros(0)
    steps = np.diff(una) % SEQ_SPACE
    return np.concatenate([[0], np.cumsum(steps)]).astype(float)


def rate_series(t: np.ndarray, snd_una: np.ndarray, n_bins: int, bin_s: float = BIN_S) -> np.ndarray:
    """Mbit/s per bin: bytes acknowledged between consecutive samples, credited to the bin of the
    later sample. `t` in seconds on the trial's clock (0 = first start); samples outside
    [0, n_bins x bin_s) are dropped."""
    t = np.asarray(t, dtype=float)
    out = np.zeros(n_bins)
    if len(t) < 2:
        return out
    gained = np.diff(acked_bytes(snd_una))
    idx = np.floor(t[1:] / bin_s).astype(int)
    ok = (idx >= 0) & (idx < n_bins)
    np.add.at(out, idx[ok], gained[ok])
    return out * 8 / bin_s / 1e6


def queue_delay_ms(backlog_bytes: np.ndarray, rate_kbit: float) -> np.ndarray:
    """How long the backlog takes to drain at the bottleneck rate."""
    return np.asarray(backlog_bytes, dtype=float) * 8 / float(rate_kbit)


def completion_times(flows: list[dict[str, Any]], completion_s: dict[str, float | None]) -> dict[str, float | None]:
    """{flow id: s since the first flow's start when its last byte was acknowledged}; `completion_s`
    is summary.json's per-flow completion_time_s (since the flow's own start)."""
    t_first = min(float(f["start_s"]) for f in flows)
    out = {}
    for f in flows:
        c = completion_s.get(f["id"])
        out[f["id"]] = None if c is None else float(f["start_s"]) - t_first + float(c)
    return out


# ---------------------------------------------------------------------------------------------
# Metrics from series
# ---------------------------------------------------------------------------------------------

def active_bins(flow: Flow, n_bins: int, bin_s: float = BIN_S) -> np.ndarray:
    """Bins the flow spans whole: started by the bin's start, not done before its end."""
    k = np.arange(n_bins)
    end = flow.done_s if flow.done_s is not None else math.inf
    return (k * bin_s >= flow.start_s) & ((k + 1) * bin_s <= end)


def jain_index(values: np.ndarray) -> float | None:
    """(sum x)^2 / (n sum x^2): 1 when all get the same, 1/n when one gets everything."""
    x = np.asarray(values, dtype=float)
    sq = float((x * x).sum())
    return float(x.sum() ** 2 / (len(x) * sq)) if len(x) and sq > 0 else None


def mean_jain(flows: list[Flow], bin_s: float = BIN_S) -> float | None:
    """Jain's index per bin over the flows active in it, averaged over bins with two or more."""
    if len(flows) < 2:
        return None
    n = min(len(f.rate_mbit) for f in flows)
    rates = np.array([f.rate_mbit[:n] for f in flows])
    active = np.array([active_bins(f, n, bin_s) for f in flows])
    indices = [jain_index(rates[active[:, k], k]) for k in range(n) if active[:, k].sum() >= 2]
    values = [v for v in indices if v is not None]
    return float(np.mean(values)) if values else None


def phases(flows: list[Flow], bin_s: float = BIN_S) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """Runs of consecutive bins in which one set of two or more flows is active (indices into
    `flows`, the bins), in time order: the set changes at every start and completion."""
    if len(flows) < 2:
        return []
    n = min(len(f.rate_mbit) for f in flows)
    active = np.array([active_bins(f, n, bin_s) for f in flows])
    out: list[tuple[tuple[int, ...], list[int]]] = []
    for k in range(n):
        key = tuple(int(j) for j in np.flatnonzero(active[:, k]))
        if out and out[-1][0] == key and out[-1][1][-1] == k - 1:
            out[-1][1].append(k)
        else:
            out.append((key, [k]))
    return [(key, np.array(bins)) for key, bins in out if len(key) >= 2]


def phase_jain(flows: list[Flow], members: tuple[int, ...], bins: np.ndarray) -> float | None:
    """Jain's index of the bytes the member flows moved over the bins (their share of the bandwidth)."""
    return jain_index(np.array([flows[j].rate_mbit[bins].sum() for j in members]))


def jain_share(flows: list[Flow], bin_s: float = BIN_S) -> float | None:
    """Jain's index of each phase's bytes per flow, averaged over the phases weighted by length."""
    found = [(v, len(bins)) for members, bins in phases(flows, bin_s)
             if (v := phase_jain(flows, members, bins)) is not None]
    weight = sum(w for _, w in found)
    return float(sum(v * w for v, w in found) / weight) if weight else None


def restart_jain(flows: list[Flow], bin_s: float = BIN_S) -> float | None:
    """Jain's index of the bytes over the first phase that a completion opens once every flow has
    started: the flows left when one finished (section 5.2: flows that "restart after the currently
    dominating flow finished")."""
    last_start = max((f.start_s for f in flows), default=0.0)
    ends = sorted(f.done_s for f in flows if f.done_s is not None and f.done_s > last_start)
    if not ends:
        return None
    for members, bins in phases(flows, bin_s):
        if (bins[0] + 1) * bin_s > ends[0]:         # the first bin the completed flow does not span
            return phase_jain(flows, members, bins)
    return None


def share_while_both(a: Flow, b: Flow, bin_s: float = BIN_S, settled: float = 0.0) -> float | None:
    """a's share of a + b, over the bins where both are active (bytes, not a mean of ratios);
    `settled` > 0 leaves out that fraction of those bins at their start (a newcomer's start-up
    and the other's reaction to it)."""
    n = min(len(a.rate_mbit), len(b.rate_mbit))
    both = active_bins(a, n, bin_s) & active_bins(b, n, bin_s)
    idx = np.flatnonzero(both)
    both[idx[: int(len(idx) * settled)]] = False
    total = float(a.rate_mbit[:n][both].sum() + b.rate_mbit[:n][both].sum())
    return float(a.rate_mbit[:n][both].sum()) / total if total > 0 else None


def sum_rate_mbit(flows: list[Flow]) -> float | None:
    """The paper's Fig 5 mean sum rate: all bytes over first start to last completion."""
    done = [f.done_s for f in flows if f.done_s is not None]
    if not flows or len(done) < len(flows):
        return None
    span = max(done) - min(f.start_s for f in flows)
    return sum(f.bytes for f in flows) * 8 / span / 1e6 if span > 0 else None


def underused_s(s: TrialSeries, bin_s: float = BIN_S) -> float | None:
    """Seconds (whole bins) from the first start to the last completion in which all flows
    together moved less than half the bottleneck rate."""
    done = [f.done_s for f in s.flows if f.done_s is not None]
    if not s.flows or len(done) < len(s.flows):
        return None
    n = min(len(f.rate_mbit) for f in s.flows)
    whole = math.floor(max(done) / bin_s)
    total = np.sum([f.rate_mbit[:n] for f in s.flows], axis=0)[: min(n, whole)]
    return float((total < s.rate_kbit / 1000 / 2).sum() * bin_s)


def lone_queue_ms(s: TrialSeries) -> tuple[float, float, float] | None:
    """10th, 50th, 90th percentile of the queueing delay while the first flow runs alone, over
    the second half of that phase (after its ramp): where LEDBAT holds the queue and how much it
    jitters, i.e. what a late-comer's first delay samples see."""
    if len(s.flows) < 2:
        return None
    end = sorted(f.start_s for f in s.flows)[1]
    m = (s.queue_t >= end / 2) & (s.queue_t < end)
    if not m.any():
        return None
    p10, p50, p90 = np.percentile(s.queue_ms[m], [10, 50, 90])
    return float(p10), float(p50), float(p90)


def lone_rate_mbit(s: TrialSeries, bin_s: float = BIN_S) -> float | None:
    """The first flow's mean rate over the whole bins before the second flow starts."""
    if len(s.flows) < 2:
        return None
    first = min(s.flows, key=lambda f: f.start_s)
    second = sorted(f.start_s for f in s.flows)[1]
    bins = np.arange(math.ceil(first.start_s / bin_s), math.floor(second / bin_s))
    bins = bins[bins < len(first.rate_mbit)]
    return float(first.rate_mbit[bins].mean()) if len(bins) else None


def both_queue_ms(s: TrialSeries, ledbat: list[Flow]) -> float | None:
    """The queue's median over the second half of the time the first two LEDBAT flows both run
    (until one completes or a third joins)."""
    if len(ledbat) < 2:
        return None
    a, b = sorted(ledbat, key=lambda f: f.start_s)[:2]
    ends = [d for d in (a.done_s, b.done_s) if d is not None] + [f.start_s for f in ledbat if f.start_s > b.start_s]
    if not ends:
        return None
    start, end = b.start_s, min(ends)
    m = (s.queue_t >= start + (end - start) / 2) & (s.queue_t < end)
    return float(np.median(s.queue_ms[m])) if m.any() else None


def arrival_metrics(flows: list[Flow], s: TrialSeries, bin_s: float = BIN_S) -> dict[str, float]:
    """Per arrival k >= 2 of staggered flows: `arrival<k>_jain`, Jain's index of the bytes of the
    flows active through the last ARRIVAL_SETTLED_S before the next start (after the last start: the
    same spacing after it), and `arrival<k>_queue_min_ms`, the queue's minimum over the first
    ARRIVAL_SETTLED_S after the start."""
    starts = sorted(f.start_s for f in flows)
    if len(starts) < 2:
        return {}
    n = min(len(f.rate_mbit) for f in flows)
    rates = np.array([f.rate_mbit[:n] for f in flows])
    active = np.array([active_bins(f, n, bin_s) for f in flows])
    out = {}
    for k in range(2, len(starts) + 1):
        start = starts[k - 1]
        end = starts[k] if k < len(starts) else start + (start - starts[k - 2])
        bins = np.arange(max(0, math.ceil((end - ARRIVAL_SETTLED_S) / bin_s)), min(n, math.floor(end / bin_s)))
        throughout = active[:, bins].all(axis=1) if len(bins) else np.zeros(len(flows), dtype=bool)
        if throughout.sum() >= 2 and (v := jain_index(rates[throughout][:, bins].sum(axis=1))) is not None:
            out[f"arrival{k}_jain"] = v
        first = (s.queue_t >= start) & (s.queue_t < start + ARRIVAL_SETTLED_S)
        if first.any():
            out[f"arrival{k}_queue_min_ms"] = float(s.queue_ms[first].min())
    return out


def trial_metrics(s: TrialSeries) -> dict[str, float]:
    """The per-trial numbers the cells aggregate (names as in summary.json: <flow>.<metric>)."""
    out: dict[str, float | None] = {}
    ledbat = [f for f in s.flows if f.cc.startswith("ledbat")]
    cross = [f for f in s.flows if not f.cc.startswith("ledbat")]
    for f in s.flows:
        out[f"{f.id}.done_s"] = f.done_s
    done = [f.done_s for f in s.flows]
    out["last_done_s"] = max(done) if done and None not in done else None     # type: ignore[type-var]
    out["sum_rate_mbit_s"] = sum_rate_mbit(s.flows)
    if out["sum_rate_mbit_s"] is not None:
        out["utilisation"] = out["sum_rate_mbit_s"] / (s.rate_kbit / 1000)
    out["jain_mean"] = mean_jain(ledbat)
    out["jain_share"] = jain_share(ledbat)
    out["restart_jain"] = restart_jain(ledbat)
    out["lone_rate_mbit_s"] = lone_rate_mbit(s)
    out["both_queue_p50_ms"] = both_queue_ms(s, ledbat)
    out["underused_s"] = underused_s(s)
    if len(ledbat) >= 2:
        out["late_share"] = share_while_both(ledbat[1], ledbat[0])
        first, second = ledbat[0].done_s, ledbat[1].done_s
        if first is not None and second is not None:
            out["late_finishes_first"] = float(second < first)
    lone = lone_queue_ms(s)
    if lone is not None:
        out["lone_queue_p10_ms"], out["lone_queue_p50_ms"], out["lone_queue_p90_ms"] = lone
    if not cross:
        out.update(arrival_metrics(ledbat, s))
    if ledbat and cross:
        # Fig 6: whether LEDBAT yields shows once the TCP flow is up to speed, not while it ramps
        out["ledbat_share_vs_tcp"] = share_while_both(ledbat[0], cross[0], settled=SETTLED)
    return {k: float(v) for k, v in out.items() if v is not None and math.isfinite(v)}


# ---------------------------------------------------------------------------------------------
# Reading a trial
# ---------------------------------------------------------------------------------------------

def load_series(trial: Path | str, bin_s: float = BIN_S) -> TrialSeries:
    """A finished trial directory's flows and queue, on the trial's clock."""
    d = Path(trial)
    spec = json.loads((d / "spec.json").read_text())
    prov = json.loads((d / "provenance.json").read_text())
    summary = json.loads((d / "summary.json").read_text())
    flows = [f for f in spec["flows"] if f["kind"] == "bulk"]
    t0 = float(prov["t0_monotonic"]) + min(float(f["start_s"]) for f in flows)
    done = completion_times(flows, {r["id"]: r.get("completion_time_s") for r in summary["flows"]})
    probe = read_tcp_probe(d / "tcp_probe.trace").frame
    ends = [v for v in done.values() if v is not None]
    n_bins = math.ceil((max(ends) if ends else float(spec["duration_s"])) / bin_s) + 1
    out = []
    for f in flows:
        fp = probe_for_flow(probe, int(prov["endpoints"][f["id"]]["port"]))
        rate = rate_series(fp["t"].to_numpy(float) - t0, fp["snd_una"].to_numpy(), n_bins, bin_s)
        out.append(Flow(f["id"], f["cc"], float(f["start_s"]), int(f.get("bytes") or 0), done[f["id"]], rate))
    q = read_qdisc(d / "qdisc.csv")
    q = q[q["role"] == "forward"]
    rate_kbit = float(spec["scenario"]["bottleneck"]["forward"]["rate_kbit"])
    return TrialSeries(d, rate_kbit, out, q["t"].to_numpy(float) - t0,
                       queue_delay_ms(q["backlog_bytes"].to_numpy(), rate_kbit))


def trial_metrics_cached(trial: Path) -> dict[str, float]:
    """trial_metrics of a finished trial, kept beside its summary (raw traces take seconds to parse);
    a compact twin's (no raw traces) from its claims-input.json (analysis/claims_input.py), which
    holds what this function gave when the trial was packed."""
    cache, summary = trial / CACHE, trial / "summary.json"
    if cache.exists() and cache.stat().st_mtime >= summary.stat().st_mtime:
        doc = json.loads(cache.read_text())
        if doc.get("version") == CACHE_VERSION:
            return doc["metrics"]
    if not claims_input.has_raw(trial):
        stored = claims_input.stored(trial, "metrics")
        if stored is None:
            raise claims_input.ClaimsInputError(
                f"{trial}: neither {claims_input.RAW_MARK} nor the metrics of a {claims_input.FILE}; restore "
                "the trial from its archive (`make restore`) or measure it again")
        return {k: float(v) for k, v in stored.items()}
    metrics = trial_metrics(load_series(trial))
    cache.write_text(json.dumps({"version": CACHE_VERSION, "metrics": metrics}, indent=1) + "\n")
    return metrics


def aggregate(per_trial: dict[int, dict[str, float]]) -> dict[str, dict[str, Any]]:
    """The papers' statistic per metric over the trials that report it (analysis/aggregate.py)."""
    names = sorted({k for m in per_trial.values() for k in m})
    out = {}
    for name in names:
        pairs = [(k, m[name]) for k, m in sorted(per_trial.items()) if name in m]
        out[name] = {"trials": [k for k, _ in pairs], "values": [v for _, v in pairs],
                     **trimmed_stats([v for _, v in pairs])}
    return out


def ledbat_cells(results: Path, cells: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The cells with this module's per-trial metrics aggregated into their `metrics`."""
    out = {}
    for cell_id, cell in cells.items():
        per_trial = {k: trial_metrics_cached(results / cell_id / f"trial-{k}") for k in cell.get("trials", [])}
        out[cell_id] = {**cell, "metrics": {**cell.get("metrics", {}), **aggregate(per_trial)}}
    return out


def median_trial(results: Path, cell_id: str, cell: dict[str, Any] | None,
                 metric: str = "last_done_s") -> Path | None:
    """The valid trial whose `metric` is nearest the cell's median (the one a figure draws)."""
    if not cell:
        return None
    agg = (cell.get("metrics") or {}).get(metric)
    trials = [results / cell_id / f"trial-{k}" for k in cell.get("trials", [])]
    if not trials:
        return None
    if not agg:
        return trials[0]
    values = dict(zip(agg["trials"], agg["values"], strict=True))
    med = float(pd.Series(list(values.values())).median())
    k = min(values, key=lambda k: (abs(values[k] - med), k))
    return results / cell_id / f"trial-{k}"
