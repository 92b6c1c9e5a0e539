"""Per-trial fidelity checks: is the emulated path the one the config asked for?

Recorded in provenance.json; any failed check makes the trial invalid. Queue limit and shaper rate
must be exactly as configured; the measured path within the tolerances of its lane (Tolerances).
"""
from __future__ import annotations

import contextlib
import itertools
import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed import shaping

# The drain rate in any 0.5 s the queue stayed backlogged: catches a stalled emulator (timers firing
# late under QEMU TCG when the guest's CPU is busy) that the whole-trial average would hide.
WINDOW_S = 0.5


@dataclass(frozen=True)
class Tolerances:
    """How close a lane's emulated path must come to its config.

    Real time (host kernel, VM): base RTT within 0.5 ms, the papers' own emulator accuracy (dummynet
    at kern.hz=2000), and with no delay added at most 1 ms, a LAN's round trip; bottleneck rate at
    saturation within 2 %; no 0.5-s stretch of a backlogged queue more than 5 % slow.
    Virtual time (UML): timers fire exactly and the stack takes no time, so only measurement
    granularity is left: 0.05 ms of RTT (ping prints microseconds); per 0.5 s, two packets (the
    byte counter moves in whole packets, and a window can lose one at each edge), of the time the
    window's queue counted as backlogged (which may be less than 0.5 s); and 1 % of rate
    at saturation, the bias of its pooled measurement where the queue seldom holds more than one
    sampling interval's bytes (an interval that sent a packet less is likelier to end backlogged,
    so to count: 0.53 % low at 5 % loss, Westwood+ Test 3).
    """

    rtt_ms: float
    zero_delay_floor_ms: float
    rate: float
    window_rate: float | None            # None: two packets per window (window_rate_tolerance)

    def window_rate_tolerance(self, rate_kbit: float, span_s: float = WINDOW_S) -> float:
        """The fraction of the rate a window may fall short by, where the queue was backlogged for
        `span_s` of it: two packets' bits of what that time carries at the rate, where the lane's
        bar is in packets."""
        if self.window_rate is not None:
            return self.window_rate
        return 2 * shaping.MTU * 8 / (rate_kbit * 1000 * span_s)


REAL_TIME = Tolerances(rtt_ms=0.5, zero_delay_floor_ms=1.0, rate=0.02, window_rate=0.05)
VIRTUAL_TIME = Tolerances(rtt_ms=0.05, zero_delay_floor_ms=0.05, rate=0.01, window_rate=None)


# A measured lane's tolerances, by the name placement records in the spec (`lane`, testbed/run.py):
# a table rather than testbed/lane's objects, whose modules the guest's measuring process would import.
BY_LANE = {"uml": VIRTUAL_TIME, "host": REAL_TIME, "vm": REAL_TIME}


def tolerances(lane: str) -> Tolerances:
    """The tolerances of the measured lane `lane` (a KeyError for any other name)."""
    return BY_LANE[lane]


RTT_TOLERANCE_MS = REAL_TIME.rtt_ms


def check(name: str, configured: Any, measured: Any, tolerance: Any, unit: str, ok: bool | None,
          note: str = "") -> dict[str, Any]:
    out = {"name": name, "configured": configured, "measured": measured, "tolerance": tolerance,
           "unit": unit, "pass": ok}
    if note:
        out["note"] = note
    return out


@dataclass(frozen=True)
class IdlePing:
    """Pings on the idle path: the median RTT (its base RTT), and the shortest gap between two
    replies (a sender keeping its interval spaces them by it; one that stops pacing does not)."""

    median_ms: float
    min_gap_ms: float | None


def idle_ping(node: Any, ip: str, count: int = 20, interval: float = 0.01) -> IdlePing:
    """The median, not the minimum: under QEMU TCG the stack's own latency varies by ±0.5 ms from
    ping to ping, and the minimum of a few pings follows the luckiest one."""
    out = node.cmd(f"ping -n -D -c {count} -i {interval} -W 2 {ip}")
    rtts = sorted(float(x) for x in re.findall(r"time=([\d.]+) ms", out))
    if len(rtts) < count // 2:
        raise RuntimeError(f"{node.name}: ping {ip}: {len(rtts)} of {count} replies: {out.strip()[-300:]}")
    mid = len(rtts) // 2
    stamps = [float(x) for x in re.findall(r"^\[(\d+\.\d+)\].*time=", out, flags=re.M)]
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    return IdlePing(rtts[mid] if len(rtts) % 2 else (rtts[mid - 1] + rtts[mid]) / 2,
                    round(min(gaps) * 1000, 3) if gaps else None)


def base_rtt_result(measured: float, configured_ms: float, tol: Tolerances = REAL_TIME) -> dict[str, Any]:
    """The idle path's median RTT, measured with the final delay settings, against the configured RTT.

    A configured 0 ms means "no added delay": nothing can be subtracted from the stack's own
    latency, so the path may take what a switched LAN took in the papers' testbeds, up to the
    lane's zero-delay floor (under QEMU TCG the stack alone takes about 0.6 ms)."""
    if configured_ms == 0:
        return check("base_rtt", 0.0, round(measured, 3), f"+{tol.zero_delay_floor_ms}", "ms",
                     measured <= tol.zero_delay_floor_ms, "no delay added: the path's own latency")
    return check("base_rtt", configured_ms, round(measured, 3), tol.rtt_ms, "ms",
                 abs(measured - configured_ms) <= tol.rtt_ms)


def static_checks(dirs: dict[str, shaping.DirectionSpec], trees: dict[str, Any]) -> list[dict[str, Any]]:
    """What the kernel says it applied, compared with the config, exactly."""
    checks = []
    for d, spec in dirs.items():
        tree = trees[f"{d}/queue"]
        applied = shaping.applied_queue_limit(tree)
        unit, leaf = spec.leaf_limit
        in_service = shaping.MTU if unit == "bytes" else 1
        buffer = spec.limit_bytes if unit == "bytes" else spec.limit_packets
        checks.append(check(f"{d}.queue_limit", buffer, applied[1] + in_service if applied else None, 0, unit,
                            applied == (unit, leaf),
                            f"drop-tail leaf {applied[1] if applied else None} + the packet in transmission"))
        rate = shaping.applied_rate_bit(tree)
        checks.append(check(f"{d}.shaper_rate", spec.rate_kbit, rate / 1000 if rate else None, 0, "kbit/s",
                            rate is not None and abs(rate / 1000 - spec.rate_kbit) < 1e-6))
        burst, want = shaping.applied_burst_bytes(tree), shaping.htb_burst_bytes(spec.rate_kbit)
        checks.append(check(f"{d}.shaper_burst", want, burst, 0, "bytes", burst == want,
                            f"one packet + {shaping.LATE_DEQUEUE_S * 1000:g} ms of tokens"))
        if spec.needs_netem:
            netem = shaping.applied_netem(trees[f"{d}/delay"])
            loss = (netem or {}).get("loss-random", {}).get("loss", 0) * 100 if netem else None
            checks.append(check(f"{d}.loss", spec.loss_pct, loss, 0.001, "%",
                                loss is not None and abs(loss - spec.loss_pct) < 0.001))
    return checks


def packet_size_check(qdisc_csv: Path) -> dict[str, Any]:
    """No queued packet larger than the MTU: segmentation offloads really are off.

    Per sample of the forward bottleneck, backlog bytes over backlog packets; the 90th percentile
    over the run must not exceed the MTU. Not the maximum, nor the 99th percentile: the kernel
    updates the two counters separately, so a read during a dequeue can pair n+1 packets' bytes
    with a count of n (or more: up to 6000 bytes over 1 packet seen). How often grows with the
    dequeue rate: 0.3-1.2 % of busy samples at 10 Mbit/s (Westwood+ full trials), more at
    20 Mbit/s with LEDBAT's short queue, which put the 99th percentile at 1524-1530 bytes and sent
    attempts back (LEDBAT quick runs, 2026-11-22). A GSO super-packet (2-44 segments per skb)
    lifts nearly every sample instead, so the 90th percentile still catches it.
    """
    # deferred: analysis pulls in pandas and numpy, which the measuring process (testbed/trial.py,
    # in the guest) does without; only the checks after the trial need them
    from analysis.metrics import role_samples  # pandas: imported only where the analysis runs
    from analysis.parsers import read_qdisc

    fwd = role_samples(read_qdisc(qdisc_csv), "forward")
    busy = fwd[fwd["backlog_pkts"] > 0]
    if busy.empty:
        return check("queued_packet_size", shaping.MTU, None, 0, "bytes", None, "queue never held a packet")
    sizes = busy["backlog_bytes"] / busy["backlog_pkts"]
    p90, above = float(sizes.quantile(0.90)), float((sizes > shaping.MTU).mean())
    return check("queued_packet_size", shaping.MTU, round(p90, 1), 0, "bytes per queued packet (90th percentile)",
                 p90 <= shaping.MTU,
                 f"{above:.1%} of samples above the MTU; largest {float(sizes.max()):.0f}")


Window = tuple[float | None, float | None]


def saturation_rate_check(qdisc_csv: Path, spec: shaping.DirectionSpec,
                          window: Window = (None, None), tol: Tolerances = REAL_TIME) -> dict[str, Any]:
    """Bottleneck rate while its queue was backlogged, against the configured rate (forward)."""
    # deferred: analysis pulls in pandas and numpy, which the measuring process (testbed/trial.py,
    # in the guest) does without; only the checks after the trial need them
    from analysis.metrics import saturation_rate_kbit
    from analysis.parsers import read_qdisc

    measured = saturation_rate_kbit(read_qdisc(qdisc_csv), "forward", t_from=window[0], t_to=window[1],
                                    rate_kbit=spec.rate_kbit)
    if measured is None:
        return check("forward.rate_at_saturation", spec.rate_kbit, None, tol.rate, "kbit/s", None,
                     "not measured: the bottleneck was never saturated long enough")
    return check("forward.rate_at_saturation", spec.rate_kbit, round(measured, 2), tol.rate, "kbit/s",
                 abs(measured / spec.rate_kbit - 1) <= tol.rate)


def worst_window_rate_check(qdisc_csv: Path, spec: shaping.DirectionSpec,
                            window: Window = (None, None), tol: Tolerances = REAL_TIME) -> dict[str, Any]:
    """The 0.5-s stretch of a backlogged bottleneck that fell furthest below its bar, against the
    configured rate. Each window's bar is the lane's tolerance over the time its queue counted as
    backlogged (Tolerances.window_rate_tolerance): a bar in packets read over the whole 0.5 s
    rejected a window backlogged for 0.45 s that carried two packets less than its rate."""
    # deferred: analysis pulls in pandas and numpy, which the measuring process (testbed/trial.py,
    # in the guest) does without; only the checks after the trial need them
    import numpy as np

    from analysis.metrics import role_samples, saturated_drain
    from analysis.parsers import read_qdisc

    fwd = role_samples(read_qdisc(qdisc_csv), "forward")
    t_from = window[0] if window[0] is not None else float(fwd["t"].min())
    t_to = window[1] if window[1] is not None else float(fwd["t"].max())
    # Each window is a slice of the once-sorted samples (t_from <= t <= t_to, as role_samples
    # windows): filtering the whole trace per window costs minutes on a trial of several hundred
    # seconds, four windows a second.
    times = fwd["t"].to_numpy()
    windows = []                    # (fails, fraction short of the bar, rate kbit/s, tolerance, start, span, runs)
    t = t_from
    while t + WINDOW_S <= t_to:
        lo, hi = np.searchsorted(times, t, side="left"), np.searchsorted(times, t + WINDOW_S, side="right")
        drained = saturated_drain(fwd.iloc[lo:hi], "forward", min_saturated_s=WINDOW_S * 0.9,
                                  rate_kbit=spec.rate_kbit)
        if drained is not None:
            sent, span, runs = drained
            tolerance = tol.window_rate_tolerance(spec.rate_kbit, span)
            rate = sent * 8 / span / 1000
            # Within a byte of the bar is on it: the bar's bytes are a product of float sample times.
            fails = spec.rate_kbit * 1000 / 8 * span * (1 - tolerance) - sent > 1
            windows.append((fails, 1 - tolerance - rate / spec.rate_kbit, rate, tolerance, t - t_from, span, runs))
        t += WINDOW_S / 2
    name = "forward.rate_worst_0.5s"
    if not windows:
        return check(name, spec.rate_kbit, None, round(tol.window_rate_tolerance(spec.rate_kbit), 4), "kbit/s",
                     None, "not measured: no 0.5 s stretch with the queue backlogged")
    fails, _, rate, tolerance, at, span, runs = max(windows)
    return check(name, spec.rate_kbit, round(rate, 1), round(tolerance, 4), "kbit/s", not fails,
                 f"slowest stretch against its bar starts at t={at:.1f} s; its queue backlogged {span:.3f} s "
                 f"of it in {runs} run{'s' if runs != 1 else ''}")


def owd_bound(spec: shaping.DirectionSpec, packet_bytes: int) -> tuple[float, float]:
    """What a VoIP packet can physically see: the path's one-way delay, and at most that plus a full
    buffer drained at the link rate (the buffer holds the packet in transmission and the packet
    itself, as dummynet counts it: 480 ms for 60000 bytes at 1 Mbit/s). For a buffer counted in
    packets, at most every other packet is a full MTU, and this one is `packet_bytes`."""
    if spec.limit_bytes is not None:
        buffer_bytes = spec.limit_bytes
    else:
        buffer_bytes = ((spec.limit_packets or 1) - 1) * shaping.MTU + packet_bytes
    return spec.delay_ms, spec.delay_ms + buffer_bytes * 8 / spec.rate_kbit


def owd_bound_check(trial_dir: Path, flows: list[dict[str, Any]], spec: shaping.DirectionSpec,
                    window: Window = (None, None), applied_delay_ms: float | None = None,
                    tol: Tolerances = REAL_TIME, jitter_ms: float = 0.0) -> dict[str, Any] | None:
    """Every VoIP one-way delay inside the physical bounds, within the lane's RTT accuracy:
    at least the delay netem applied, at most the path's delay plus a full buffer drained at the
    slowest rate the rate check accepts; both widened by the delay jitter a trial added on purpose."""
    # deferred: analysis pulls in pandas and numpy, which the measuring process (testbed/trial.py,
    # in the guest) does without; only the checks after the trial need them
    from analysis.parsers import read_voip
    from analysis.summarize import voip_in_window

    voip = [f for f in flows if f["kind"] == "voip"]
    if not voip:
        return None
    outside, total, lo_seen, hi_seen = 0, 0, float("inf"), float("-inf")
    for f in voip:
        lo, hi = owd_bound(spec, int(f["packet_bytes"]))
        # Below: no packet crosses faster than the delay netem applies. Calibration sets that a
        # little under the configured one-way delay (by the stack's own idle latency, which under
        # QEMU TCG varies from packet to packet), so the first packets, through an empty queue,
        # may see less than the configured delay; the base-RTT check holds calibration to account.
        if applied_delay_ms is not None:
            lo = min(lo, applied_delay_ms)
        lo -= jitter_ms
        # Above: a full buffer drains at the rate the saturation check accepts (within 2 %), so
        # its delay may be that much longer; anything beyond is an emulator that fell behind.
        hi_tol = tol.rtt_ms + (hi - spec.delay_ms) * tol.rate / (1 - tol.rate) + jitter_ms
        log = read_voip(trial_dir / f"voip-{f['id']}.csv", trial_dir / f"voip-{f['id']}.json")
        owd = voip_in_window(log, window)[0]["owd_ms"]
        outside += int(((owd < lo - tol.rtt_ms) | (owd > hi + hi_tol)).sum())
        total += len(owd)
        if len(owd):
            lo_seen, hi_seen = min(lo_seen, float(owd.min())), max(hi_seen, float(owd.max()))
    return check("voip_owd_within_bounds", [round(lo, 2), round(hi, 2)], [round(lo_seen, 2), round(hi_seen, 2)],
                 f"-{tol.rtt_ms:g} / +{hi_tol:.2f}", "ms", outside == 0, f"{outside} of {total} packets outside")


def socket_cc_check(wanted: dict[str, str], seen: dict[str, str | None]) -> dict[str, Any]:
    """Every bulk flow's socket ran the congestion control its config names, as the kernel reports
    it (ss -i once the connection is up); a flow whose socket was not found is named, not passed."""
    wrong = [f"{fid}: {seen.get(fid)} (wanted {cc})" for fid, cc in wanted.items() if seen.get(fid) != cc]
    return check("socket_congestion_control", ", ".join(f"{k}={v}" for k, v in wanted.items()),
                 ", ".join(f"{k}={seen.get(k)}" for k in wanted), None, "name", not wrong,
                 "; ".join(wrong) if wrong else "every flow's socket as configured")


def loss_check(direction: str, configured_pct: float, dropped: int, offered: int) -> dict[str, Any]:
    """netem's measured drop fraction against the configured one: within three binomial standard
    deviations (plus 0.1 % for small samples), the spread a fair coin of that bias would show."""
    name = f"{direction}.loss_measured"
    if offered == 0:
        return check(name, configured_pct, None, None, "%", None, "no packets crossed the loss stage")
    p = configured_pct / 100
    tolerance = 100 * (3 * (p * (1 - p) / offered) ** 0.5) + 0.1
    measured = 100 * dropped / offered
    return check(name, configured_pct, round(measured, 3), round(tolerance, 3), "%",
                 abs(measured - configured_pct) <= tolerance, f"{dropped} of {offered} packets dropped")


# LEDBAT's delay samples (TSval - TSecr, less the smallest) against the queue the data met may
# read high by up to two packets' time at the bottleneck (a delayed ACK waits for the second
# segment; the backlog leaves out the packet in transmission) and two 1-ms ticks (the sample's and
# the one its base minimum was lucky by). More than that is delay the emulator adds outside the
# measured queue (netem's timers late under load), which a delay-based sender takes for queueing.
DELAY_SIGNAL_PACKETS = 2
DELAY_SIGNAL_TICKS_MS = 2.0


def delay_signal_check(trial_dir: Path, spec: dict[str, Any], prov: dict[str, Any],
                       forward: shaping.DirectionSpec) -> dict[str, Any] | None:
    """For each delay-based flow (a congestion control with a TARGET), the median of its perceived
    queueing delay less the forward queue its data met, from the sender's capture; the worst flow
    must stay within two packets' time plus two ticks (above). One-sided: a late-comer that
    first sampled a standing queue takes it for base delay and reads low, which is LEDBAT's own
    behaviour (the late-comer advantage), not the emulator's."""
    # deferred: analysis pulls in pandas and numpy, which the measuring process (testbed/trial.py,
    # in the guest) does without; only the checks after the trial need them
    from analysis import tcp_owd
    from cc.registry import target_ms

    delay_based = [f["id"] for f in spec["flows"] if f["kind"] == "bulk" and target_ms(f["cc"]) is not None]
    if not delay_based:
        return None
    tolerance = f"+{round(DELAY_SIGNAL_PACKETS * shaping.MTU * 8 / forward.rate_kbit + DELAY_SIGNAL_TICKS_MS, 2)}"
    name = "delay_signal_excess"
    if not any((trial_dir / "pcap").glob("*.pcap")):
        return check(name, 0.0, None, tolerance, "ms", None, "not measured: no sender capture")
    report = {k: v for k, v in tcp_owd.trial_report(trial_dir, 0.0, float(spec["duration_s"]),
                                                    flows=delay_based).items() if v.get("n")}
    if not report:
        return check(name, 0.0, None, tolerance, "ms", None, "not measured: no ACK of new data with timestamps")
    worst = max(report, key=lambda k: report[k]["excess_p50_ms"])
    measured = round(report[worst]["excess_p50_ms"], 2)
    return check(name, 0.0, measured, tolerance, "ms", measured <= float(tolerance),
                 "median perceived - real queue per flow: "
                 + ", ".join(f"{k} {v['excess_p50_ms']:.2f} ({v['n']} samples)" for k, v in sorted(report.items())))


def pcap_records(pcap: Path) -> int:
    """The packet records in a classic pcap file (tcpdump -w); a record cut short counts as missing.
    Read header by header: a 1000-MB transfer's capture is about 100 MB, beside other trials."""
    size = pcap.stat().st_size
    with pcap.open("rb") as fh:
        magic = fh.read(24)[:4]
        order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        n, pos = 0, 24
        while pos + 16 <= size:
            fh.seek(pos + 8)
            (incl,) = struct.unpack(order + "I", fh.read(4))
            pos += 16 + incl
            if pos > size:
                break
            n += 1
    return n if size >= 24 else 0


def capture_check(trial_dir: Path) -> dict[str, Any] | None:
    """Every sender capture holds every packet tcpdump took, and the kernel dropped none before it:
    the counts tcpdump prints when it stops (pcap/<sender>.log) against the records in its file.
    tcpdump writes through a buffer (no -U: a write per packet is a host round trip on the
    virtual-time lane) and flushes it when it stops; a capture cut short shows here."""
    pcaps = sorted((trial_dir / "pcap").glob("*.pcap"))
    if not pcaps:
        return None
    bad, notes = [], []
    for pcap in pcaps:
        text = pcap.with_suffix(".log").read_text() if pcap.with_suffix(".log").exists() else ""
        captured = re.search(r"(\d+) packets? captured", text)
        dropped = re.search(r"(\d+) packets? dropped by kernel", text)
        records = pcap_records(pcap)
        if captured is None or dropped is None:
            bad.append(pcap.stem)
            notes.append(f"{pcap.stem}: {records} records, tcpdump's counts missing (it did not stop cleanly)")
            continue
        if int(captured[1]) != records or int(dropped[1]):
            bad.append(pcap.stem)
        notes.append(f"{pcap.stem}: {records} records of {captured[1]} captured, {dropped[1]} dropped by kernel")
    return check("capture_complete", 0, len(bad), 0, "captures", not bad, "; ".join(notes))


# Virtual time: how far any timed element of a trial may stray from its plan. Timers fire exactly,
# so anything beyond a millisecond means a process that did not pace itself by the clock (see
# iperf3 and ping in testbed/uml_init and testbed/trial.py).
VIRTUAL_TIME_SLACK_MS = 1.0


def virtual_time_check(trial_dir: Path, spec: dict[str, Any], prov: dict[str, Any]) -> dict[str, Any]:
    """Virtual time advanced as planned for every timed element: the calibration pings kept their
    interval, every VoIP packet left on its 20-ms grid, the queue sampler took every sample on its
    grid, and every bulk flow's SYN left at its planned start. The worst deviation, in ms."""
    # deferred: analysis pulls in pandas and numpy, which the measuring process (testbed/trial.py,
    # in the guest) does without; only the checks after the trial need them
    from analysis.parsers import first_syn_times

    worst: dict[str, float] = {}
    for i, r in enumerate((prov.get("calibration") or {}).get("rounds", [])):
        gap, interval = r.get("ping_min_gap_ms"), r.get("ping_interval_ms")
        if gap is not None and interval:
            worst[f"calibration ping {i + 1}"] = max(0.0, interval - gap)
    for f in (f for f in spec["flows"] if f["kind"] == "voip"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            rep = json.loads((trial_dir / f"voip-{f['id']}.json").read_text())
            worst[f"{f['id']} send grid"] = float(rep["max_late_ms"])
    sampler = _sampler_deviation_ms(trial_dir / "qdisc_sampler.log")
    if sampler is not None:
        worst["qdisc sampler grid"] = sampler
    endpoints = prov.get("endpoints") or {}
    t0: float | None = prov.get("t0_monotonic")
    offset: float | None = prov.get("realtime_minus_monotonic_s")
    pcaps = sorted((trial_dir / "pcap").glob("*.pcap")) if t0 is not None and offset is not None else []
    for pcap in pcaps:
        assert t0 is not None and offset is not None
        syns = first_syn_times(pcap)
        for f in (f for f in spec["flows"] if f["kind"] == "bulk"):
            port = (endpoints.get(f["id"]) or {}).get("port")
            if port in syns:
                worst[f"{f['id']} start"] = abs(syns[port] - offset - (t0 + float(f["start_s"]))) * 1000
    if not worst:
        return check("virtual_time", 0.0, None, VIRTUAL_TIME_SLACK_MS, "ms", None, "no timed element measured")
    name, dev = max(worst.items(), key=lambda kv: kv[1])
    return check("virtual_time", 0.0, round(dev, 3), VIRTUAL_TIME_SLACK_MS, "ms", dev <= VIRTUAL_TIME_SLACK_MS,
                 f"worst: {name}; " + ", ".join(f"{k} {v:.3f}" for k, v in worst.items()))


def _sampler_deviation_ms(log: Path) -> float | None:
    """From the sampler's summary: how far its mean interval strayed, or half an interval if any
    sample came late, a whole one if a slot was skipped."""
    try:
        text = log.read_text()
    except OSError:
        return None
    m = re.search(r"mean interval ([\d.]+) ms \(target ([\d.]+)\), (\d+) late .*?, (\d+) slots skipped", text)
    if not m:
        return None
    mean, target, late, skipped = float(m[1]), float(m[2]), int(m[3]), int(m[4])
    return max(abs(mean - target), target / 2 if late else 0.0, target if skipped else 0.0)
