"""Per-trial metrics: pure functions of the frames and records `analysis.parsers` returns.

Units follow the papers: rates in kbit/s (1 kbit = 1000 bit) and KB/s (1 KB = 1000 bytes, the
Collateral Damage paper's Table 1), delays in ms, times in s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.epochs import congestion_events
from analysis.parsers import IperfResult, TcptraceConnection, VoipLog

# A saturation rate needs this much time (pooled over saturated runs) before it means anything:
# 1 s at the 10 ms sampling interval is 100 intervals, enough to average out per-sample jitter of
# the qdisc counters (they advance in bursts of whole packets).
MIN_SATURATED_S = 1.0
MIN_RUN = 3             # saturated intervals in a row before they count (saturation_rate_kbit)

# ------------------------------------------------------------------------------------------
# VoIP one-way delay and loss
# ------------------------------------------------------------------------------------------


def owd_stats(owd_ms: pd.Series | Iterable[float]) -> dict[str, float | int | None]:
    """Distribution of received packets' one-way delay; lost packets are not in it (as the paper).

    std is the sample standard deviation (ddof=1); percentiles interpolate linearly.
    """
    a = np.asarray(pd.Series(owd_ms, dtype=float).dropna(), dtype=float)
    if a.size == 0:
        return {k: None for k in ("median", "mean", "std", "p5", "p95", "min", "max")} | {"count": 0}
    return {
        "median": float(np.median(a)),
        "mean": float(a.mean()),
        "std": float(a.std(ddof=1)) if a.size > 1 else None,
        "p5": float(np.percentile(a, 5)),
        "p95": float(np.percentile(a, 95)),
        "min": float(a.min()),
        "max": float(a.max()),
        "count": int(a.size),
    }


def loss_fraction(voip: VoipLog) -> float | None:
    """Packets sent but never received, as a fraction of those sent (None if nothing was sent)."""
    if voip.sent <= 0:
        return None
    received = int(voip.packets["seq"].nunique())
    return max(0, voip.sent - received) / voip.sent


# ------------------------------------------------------------------------------------------
# Bottleneck qdisc
# ------------------------------------------------------------------------------------------


def role_samples(
    qdisc_df: pd.DataFrame, role: str, t_from: float | None = None, t_to: float | None = None
) -> pd.DataFrame:
    """One role's samples in time order, optionally windowed; one device per role is expected."""
    q = qdisc_df[qdisc_df["role"] == role]
    if t_from is not None:
        q = q[q["t"] >= t_from]
    if t_to is not None:
        q = q[q["t"] <= t_to]
    devs = q["dev"].unique()
    if len(devs) > 1:
        raise ValueError(f"role {role!r} has samples from several devices: {list(devs)}")
    return q.sort_values("t", kind="stable")


def _in_runs(flags: np.ndarray, n: int) -> np.ndarray:
    """flags, kept only where they stand in a run of at least n consecutive True."""
    out = np.zeros_like(flags)
    edges = np.flatnonzero(np.diff(np.r_[0, flags.astype(np.int8), 0]))
    for start, end in zip(edges[::2], edges[1::2], strict=True):
        if end - start >= n:
            out[start:end] = True
    return out


def saturation_rate_kbit(
    qdisc_df: pd.DataFrame,
    role: str,
    min_saturated_s: float = MIN_SATURATED_S,
    t_from: float | None = None,
    t_to: float | None = None,
    rate_kbit: float | None = None,
) -> float | None:
    """Rate the bottleneck drained at while its queue was non-empty, in kbit/s of the bytes
    the qdisc counts (IP bytes under the testbed's size table).

    Only intervals whose both end samples show backlog > 0 count (a run of k backlogged samples
    gives k-1 intervals); Δsent_bytes·8/Δt is pooled over all of them. This is the link rate the
    shaper really delivered, to compare with the configured one. None below `min_saturated_s`.
    Intervals where the counter went backwards (qdisc replaced) are skipped.

    Given the nominal `rate_kbit`, an interval counts only if its start backlog alone could keep
    the link busy for a typical interval (backlog >= rate x the median interval): a queue that
    empties and refills between two samples (a delay-based sender draining it) would otherwise read
    as a slow link. The bar is the median, not the interval's own length: sample times jitter (7-14
    ms around 10 ms under QEMU TCG) while the bytes sent in an interval come in whole packets, so a
    bar that rises with the interval's own length admits short-stamped intervals more readily, and
    where the queue seldom holds a full interval's bytes (CUBIC at 5 % loss) the pooled rate read
    1-2 % above the shaper's (10226 against a whole-trial 9985 kbit/s).

    Given the nominal rate, an interval also counts only inside a run of at least MIN_RUN such
    intervals: where backlogs are brief (5 % loss with 1 ms each way added, on UML's exact 10-ms
    samples) the first interval after the queue forms carries the shaper's saved burst, and the
    pooled rate read 0.8-1.2 % fast (10083-10120 kbit/s), 0.1-0.2 % off in runs of three or more.
    Over the committed Westwood+ and Collateral trials the two rules agree to the last digit.
    """
    drained = saturated_drain(qdisc_df, role, min_saturated_s, t_from, t_to, rate_kbit)
    return None if drained is None else drained[0] * 8 / drained[1] / 1000


def saturated_drain(
    qdisc_df: pd.DataFrame,
    role: str,
    min_saturated_s: float = MIN_SATURATED_S,
    t_from: float | None = None,
    t_to: float | None = None,
    rate_kbit: float | None = None,
) -> tuple[float, float, int] | None:
    """(bytes sent, seconds, runs) over the intervals saturation_rate_kbit counts: its rate is the
    first over the second; `runs` is how many separate stretches of counted intervals they form.
    None below `min_saturated_s`."""
    q = role_samples(qdisc_df, role, t_from, t_to)
    if len(q) < 2:
        return None
    backlog = q["backlog_bytes"].to_numpy()
    busy = backlog > 0
    dt = np.diff(q["t"].to_numpy())
    dsent = np.diff(q["sent_bytes"].to_numpy())
    ok = busy[1:] & busy[:-1] & (dt > 0) & (dsent >= 0)
    if rate_kbit is not None:
        ok &= backlog[:-1] >= rate_kbit * 1000 / 8 * float(np.median(dt))
        ok = _in_runs(ok, MIN_RUN)
    span = float(dt[ok].sum())
    if span < min_saturated_s or span <= 0:
        return None
    runs = int(np.count_nonzero(np.diff(ok.astype(np.int8), prepend=0) == 1))
    return float(dsent[ok].sum()), span, runs


def queue_stats(
    qdisc_df: pd.DataFrame, role: str, t_from: float | None = None, t_to: float | None = None
) -> dict[str, float | int | None]:
    """Backlog mean/max (bytes, packets) over the samples and drops counted in the window.

    Means are per sample (samples are evenly spaced). Drops sum the counter's increases, so a
    reset counter does not make them negative.
    """
    q = role_samples(qdisc_df, role, t_from, t_to)
    if q.empty:
        return {"backlog_bytes_mean": None, "backlog_bytes_max": None, "backlog_pkts_mean": None,
                "backlog_pkts_max": None, "drops": 0, "samples": 0}
    d = np.diff(q["drops"].to_numpy())
    return {
        "backlog_bytes_mean": float(q["backlog_bytes"].mean()),
        "backlog_bytes_max": int(q["backlog_bytes"].max()),
        "backlog_pkts_mean": float(q["backlog_pkts"].mean()),
        "backlog_pkts_max": int(q["backlog_pkts"].max()),
        "drops": int(d[d > 0].sum()),
        "samples": len(q),
    }


@dataclass
class QueueFullEvents:
    """Queue-full episodes seen in a window of qdisc samples."""

    count: int
    window_s: float
    per_minute: float | None  # None when the window has no duration


def queue_full_events(
    qdisc_df: pd.DataFrame, role: str, t_from: float | None = None, t_to: float | None = None
) -> QueueFullEvents:
    """Count queue-full events: maximal runs of sampling intervals in which the drop counter rose.

    The Collateral Damage paper's event is one episode of a full drop-tail queue dropping until it
    can accept again. At 10 ms sampling an episode that keeps dropping across several samples is
    one run, hence one event; a single interval without a new drop ends the episode, so two
    bursts separated by a quiet sample are two events. Only intervals with both ends inside
    [t_from, t_to] are considered; `window_s` is the span of the samples used.
    """
    q = role_samples(qdisc_df, role, t_from, t_to)
    if len(q) < 2:
        return QueueFullEvents(count=0, window_s=0.0, per_minute=None)
    rising = np.diff(q["drops"].to_numpy()) > 0
    starts = rising & ~np.concatenate(([False], rising[:-1]))
    count = int(starts.sum())
    t = q["t"].to_numpy()
    window = float(t[-1] - t[0])
    return QueueFullEvents(count=count, window_s=window, per_minute=count * 60 / window if window > 0 else None)


# ------------------------------------------------------------------------------------------
# TCP flows
# ------------------------------------------------------------------------------------------


@dataclass
class ConnGoodput:
    """Goodput of one tcptrace connection in its data direction (the one with more unique bytes)."""

    index: int
    sender: str  # "host:port"
    receiver: str
    unique_bytes: int
    elapsed_s: float
    goodput_kbit_s: float
    goodput_kbyte_s: float
    data_pkts: int
    rexmt_pkts: int
    rexmt_bytes: int


def goodput_from_tcptrace(
    records: Iterable[TcptraceConnection],
    server_ports: Iterable[int] | None = None,
    client_ports: Iterable[int] | None = None,
) -> list[ConnGoodput]:
    """Per-connection goodput = unique bytes / connection lifetime, as tcptrace's throughput.

    `server_ports` keeps connections with one endpoint on those ports (the flow's listening port);
    `client_ports` further keeps only those whose other endpoint uses one of those ports (iperf3's
    data socket, whose local port its JSON reports, excluding the control connection).
    """
    sp = None if server_ports is None else set(server_ports)
    cp = None if client_ports is None else set(client_ports)
    out = []
    for c in records:
        if sp is not None and not ({c.a_port, c.b_port} & sp):
            continue
        if cp is not None and not ({c.a_port, c.b_port} & cp):
            continue
        forward = c.a2b.unique_bytes >= c.b2a.unique_bytes
        d = c.a2b if forward else c.b2a
        a, b = f"{c.a_host}:{c.a_port}", f"{c.b_host}:{c.b_port}"
        rate = d.unique_bytes / c.elapsed_s if c.elapsed_s > 0 else math.nan
        out.append(ConnGoodput(
            index=c.index, sender=a if forward else b, receiver=b if forward else a,
            unique_bytes=d.unique_bytes, elapsed_s=c.elapsed_s,
            goodput_kbit_s=rate * 8 / 1000, goodput_kbyte_s=rate / 1000,
            data_pkts=d.data_pkts, rexmt_pkts=d.rexmt_pkts, rexmt_bytes=d.rexmt_bytes,
        ))
    return out


def iperf_goodput_kbit_s(iperf: IperfResult) -> float | None:
    """Receiver-side goodput from iperf3's own totals (fallback when no tcptrace is available)."""
    if iperf.error or iperf.seconds_received <= 0:
        return None
    return iperf.bytes_received * 8 / iperf.seconds_received / 1000


def completion_time_from_acks(acks: pd.DataFrame, nbytes: int, t_start: float) -> float | None:
    """Seconds from `t_start` until the receiver acknowledged the transfer's last byte.

    Fixed-size flows run iperf2, whose `-n` count includes its header and whose server reads to
    EOF (iperf3 -n ends the test once the bytes are written, dropping data in flight). The ACKs come
    from the sender-side capture: tcp:tcp_probe goes quiet once the sender has closed its socket.
    `acks` holds relative ack numbers (the SYN takes one) and times on `t_start`'s clock.
    """
    done = acks.loc[acks["ack"] >= nbytes + 1, "t"]
    return float(done.iloc[0] - t_start) if len(done) else None


def probe_for_flow(probe: pd.DataFrame, dport: int, sports: Iterable[int] | None = None) -> pd.DataFrame:
    """tcp_probe lines of one flow: its destination port, and its data sockets' source ports."""
    sel = probe[probe["dport"] == dport]
    if sports is not None:
        sel = sel[sel["sport"].isin(list(sports))]
    return sel


def probe_stats(probe: pd.DataFrame) -> dict[str, float | None]:
    """cwnd (segments) and smoothed RTT (ms) summary of one flow's tcp_probe lines, and how cwnd
    oscillates once slow start has ended (`cwnd_oscillation`)."""
    if probe.empty:
        return {"cwnd_mean": None, "cwnd_max": None, "srtt_median_ms": None, "srtt_mean_ms": None,
                **cwnd_oscillation(np.empty(0), np.empty(0))}
    srtt = probe.loc[probe["srtt_us"] > 0, "srtt_us"] / 1000
    return {
        "cwnd_mean": float(probe["snd_cwnd"].mean()),
        "cwnd_max": float(probe["snd_cwnd"].max()),
        "srtt_median_ms": float(srtt.median()) if len(srtt) else None,
        "srtt_mean_ms": float(srtt.mean()) if len(srtt) else None,
        **cwnd_oscillation(probe["t"].to_numpy(float), probe["snd_cwnd"].to_numpy(float)),
    }


def cwnd_oscillation(t: np.ndarray, cwnd: np.ndarray) -> dict[str, float | int | None]:
    """How far cwnd swings around its average, from the first congestion event on (slow start's
    growth from the initial window is no oscillation).

    `cwnd_range_rel` is the Westwood report's measure ("the difference between the highest and the
    lowest value in a single experiment") over the mean, so flows at different windows compare;
    `cwnd_cv` is the standard deviation over the mean. Both None without a congestion event.
    """
    events = congestion_events(t, cwnd) if len(t) else np.empty(0)
    out: dict[str, float | int | None] = {"congestion_events": len(events), "cwnd_range_rel": None,
                                          "cwnd_cv": None}
    if len(events):
        steady = cwnd[t >= events[0]]
        mean = float(steady.mean())
        if mean > 0:
            out["cwnd_range_rel"] = float((steady.max() - steady.min()) / mean)
            out["cwnd_cv"] = float(steady.std() / mean)
    return out
