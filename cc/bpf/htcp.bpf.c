// SPDX-License-Identifier: GPL-2.0-only
/* H-TCP as a BPF struct_ops congestion control, written from draft-leith-tcp-htcp-06
 * ("H-TCP: TCP Congestion Control for High Bandwidth-Delay Product Paths", D. Leith, 2008), in the
 * configuration the "Collateral Damage" paper (Stewart, Armitage, Huebner 2009, section 3) ran:
 * adaptive backoff and adaptive reset off, RTT scaling on.
 *
 *   - slow start while cwnd < ssthresh (kernel kfunc tcp_slow_start);
 *   - congestion avoidance: per ACK cwnd += 2(1-beta) * alpha(Delta) * acked / cwnd, i.e.
 *     2(1-beta)*alpha packets per RTT, only while the flow is cwnd-limited;
 *       Delta = time since the last congestion event (connection start counts as one),
 *       alpha(Delta) = 1                                         for Delta <= Delta_L,
 *       alpha(Delta) = 1 + 10(Delta-Delta_L) + ((Delta-Delta_L)/2)^2   for Delta > Delta_L  (seconds);
 *     RTT scaling: alpha <- max(alpha * RTT_min/RTT_ref, 1), applied to alpha(Delta) in the
 *     high-speed mode only, so the first Delta_L after an event is exactly Reno (1 packet per RTT
 *     at beta = 0.5) whatever the RTT, as the paper describes H-TCP ("mimics NewReno cwnd growth for
 *     the first second after congestion"); with RTT_min <= RTT_ref the two readings coincide anyway;
 *   - congestion event (the ssthresh op: fast retransmit, ECN CWR, RTO):
 *     ssthresh = max(beta * cwnd, 2), Delta restarts; a timeout (set_state TCP_CA_Loss or
 *     cwnd_event CA_EVENT_LOSS) restarts Delta as well (also for back-to-back RTOs, where the kernel
 *     does not call ssthresh again);
 *   - undo (spurious loss): cwnd back to the window before the event, and the Delta epoch back to
 *     the one before the event.
 *
 * Parameters (integer -D macros; defaults below):
 *   DELTA_L_MS             ms, default 1000. Delta_L: length of the Reno-like (low-speed) mode after
 *                          a congestion event (draft: Delta_L = 1 s).
 *   BETA_PERMILLE          1/1000, default 500. Fixed backoff factor beta (adaptive backoff off, as the
 *                          paper ran it: Linux use_bandwidth_switch=0 and no RTT-ratio beta).
 *                          Valid 1..999. The increase is 2(1-beta)*alpha per RTT (= alpha at 500).
 *   RTT_SCALING            0/1, default 1. RTT scaling of alpha (draft; the paper left it on).
 *   RTT_REF_MS             ms, default 100. RTT_ref of the RTT scaling.
 *   RTT_SCALE_MIN_PERMILLE 1/1000, default 100. Lower bound of the scale factor RTT_min/RTT_ref.
 *   RTT_SCALE_MAX_PERMILLE 1/1000, default 2000. Upper bound of the scale factor RTT_min/RTT_ref.
 *                          The draft leaves the bound open; 0.1..2 (RTT_min clamped to 10..200 ms
 *                          for RTT_ref = 100 ms) is, to our knowledge, the range the Linux module the
 *                          paper ran allows for the same factor. The lower bound only matters once
 *                          alpha > 10 (alpha >= 1 is enforced anyway).
 *   DELTA_FROM_RECOVERY_END 0/1, default 0. 0: Delta restarts at the congestion event itself (when
 *                          the ssthresh op runs / the RTO fires), as the draft words it. 1: Delta
 *                          restarts again when the sender returns to TCP_CA_Open after the recovery
 *                          (as we understand it, the Linux module with the last_cong fix the paper
 *                          cites as [28] counts the epoch from there; on a 1 Mbit/s path with a full
 *                          60 KB queue recovery takes ~0.5 s, so this shifts the parabola by about
 *                          one RTT).
 *
 * Fixed point (no floating point in BPF):
 *   - alpha (and the per-RTT increase 2(1-beta)alpha) in units of 1/1024 packet (HTCP_FP_SHIFT 10);
 *     Delta - Delta_L is taken in ms, so alpha_fp = 1024 + 1024*10*d_ms/1000 + 1024*d_ms^2/(4*10^6);
 *     d_ms is capped at 2^24 ms (~4.7 h) and alpha_fp at 2^31 (2M packets per RTT) so every product
 *     stays inside 64 bits; neither cap is reachable in the project's experiments.
 *   - the per-ACK increase alpha_fp*acked is accumulated in a u64 (units 1/1024 packet); cwnd grows by
 *     one packet per cwnd*1024 accumulated, so fractional increments are not lost.
 *   - RTT scale factor in 1/1000 (RTT_min_us / RTT_REF_MS).
 *
 * RTT_min: smallest RTT sample seen (pkts_acked sample->rtt_us > 0); before any sample, srtt.
 * Time: bpf_ktime_get_ns() (the clock tcp_mstamp is taken from), kept in usec.
 */
#include "tcprepro_cc.h"

#ifndef DELTA_L_MS
#define DELTA_L_MS 1000
#endif
#ifndef BETA_PERMILLE
#define BETA_PERMILLE 500
#endif
#ifndef RTT_SCALING
#define RTT_SCALING 1
#endif
#ifndef RTT_REF_MS
#define RTT_REF_MS 100
#endif
#ifndef RTT_SCALE_MIN_PERMILLE
#define RTT_SCALE_MIN_PERMILLE 100
#endif
#ifndef RTT_SCALE_MAX_PERMILLE
#define RTT_SCALE_MAX_PERMILLE 2000
#endif
#ifndef DELTA_FROM_RECOVERY_END
#define DELTA_FROM_RECOVERY_END 0
#endif

#if BETA_PERMILLE < 1 || BETA_PERMILLE > 999
#error "BETA_PERMILLE must be in 1..999"
#endif
#if DELTA_L_MS < 0 || RTT_REF_MS < 1
#error "DELTA_L_MS must be >= 0 and RTT_REF_MS >= 1"
#endif
#if RTT_SCALE_MIN_PERMILLE < 1 || RTT_SCALE_MAX_PERMILLE < RTT_SCALE_MIN_PERMILLE
#error "need 1 <= RTT_SCALE_MIN_PERMILLE <= RTT_SCALE_MAX_PERMILLE"
#endif

#define HTCP_FP_SHIFT 10
#define HTCP_FP_ONE (1ULL << HTCP_FP_SHIFT)
#define HTCP_D_MS_CAP (1ULL << 24)
#define HTCP_ALPHA_FP_CAP (1ULL << 31)

/* flags */
#define HTCP_F_UNDO_VALID 0x1 /* undo_cwnd/undo_epoch_us hold the state before the last event */
#define HTCP_F_EPOCH_PENDING 0x2 /* DELTA_FROM_RECOVERY_END: restart Delta on the return to Open */

struct htcp {
	__u64 epoch_us;      /* start of the current congestion epoch (last congestion event) */
	__u64 undo_epoch_us; /* epoch_us before the last congestion event, for undo */
	__u64 acc;           /* congestion-avoidance increase accumulator, 1/1024 packet */
	__u32 rtt_min_us;    /* smallest RTT sample seen, 0 = none yet */
	__u32 undo_cwnd;     /* cwnd when the last congestion event started, for undo */
	__u8 ca_state;       /* last TCP_CA_* state passed to set_state */
	__u8 flags;
};

_Static_assert(sizeof(struct htcp) <= 104, "H-TCP state must fit icsk_ca_priv");

static __always_inline struct htcp *htcp_ca(struct sock *sk)
{
	return (struct htcp *)TRP_CA_PRIV(sk);
}

/* The kernel's tcp_is_cwnd_limited(): in slow start allow cwnd up to twice what was in flight,
 * otherwise the flag the output path keeps. */
static __always_inline int htcp_cwnd_limited(struct tcp_sock *tp)
{
	if (trp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited) != 0;
}

/* A congestion event (or timeout) starts a new epoch now. */
static __always_inline void htcp_new_epoch(struct htcp *ca, __u64 now)
{
	ca->epoch_us = now;
	ca->acc = 0;
	if (DELTA_FROM_RECOVERY_END)
		ca->flags |= HTCP_F_EPOCH_PENDING;
}

SEC("struct_ops/htcp_init")
void BPF_PROG(htcp_init, struct sock *sk)
{
	struct htcp *ca = htcp_ca(sk);

	ca->epoch_us = trp_now_us();  /* connection start = start of the first epoch */
	ca->undo_epoch_us = ca->epoch_us;
	ca->acc = 0;
	ca->rtt_min_us = 0;
	ca->undo_cwnd = 0;
	ca->ca_state = TCP_CA_Open;
	ca->flags = 0;
}

/* alpha(Delta), times 2(1-beta), RTT-scaled, in 1/1024 packet per RTT. */
static __always_inline __u64 htcp_increase_fp(struct sock *sk, struct htcp *ca)
{
	struct tcp_sock *tp = trp_tcp_sk(sk);
	__u64 now = trp_now_us();
	__u64 delta_us = now > ca->epoch_us ? now - ca->epoch_us : 0;
	__u64 alpha = HTCP_FP_ONE;

	if (delta_us > (__u64)DELTA_L_MS * TRP_USEC_PER_MSEC) {
		__u64 d_ms = (delta_us - (__u64)DELTA_L_MS * TRP_USEC_PER_MSEC) / TRP_USEC_PER_MSEC;

		if (d_ms > HTCP_D_MS_CAP)
			d_ms = HTCP_D_MS_CAP;
		/* 1 + 10 d + (d/2)^2 with d = d_ms/1000 s, times 1024 */
		alpha = HTCP_FP_ONE + (10 * HTCP_FP_ONE * d_ms) / 1000 +
			(HTCP_FP_ONE * d_ms * d_ms) / 4000000;
		if (alpha > HTCP_ALPHA_FP_CAP)
			alpha = HTCP_ALPHA_FP_CAP;

		if (RTT_SCALING) {
			__u32 rtt = ca->rtt_min_us ? ca->rtt_min_us : tp->srtt_us >> 3;

			if (rtt) {
				__u64 scale = rtt / RTT_REF_MS; /* RTT_min/RTT_ref in 1/1000 */

				if (scale < RTT_SCALE_MIN_PERMILLE)
					scale = RTT_SCALE_MIN_PERMILLE;
				if (scale > RTT_SCALE_MAX_PERMILLE)
					scale = RTT_SCALE_MAX_PERMILLE;
				alpha = alpha * scale / 1000;
				if (alpha < HTCP_FP_ONE)
					alpha = HTCP_FP_ONE;
			}
		}
	}
	/* 2(1-beta) alpha; at least 1/1024 packet per RTT, at most 2^31/1024 (so that times acked
	 * it stays inside 64 bits) */
	alpha = alpha * 2 * (1000 - BETA_PERMILLE) / 1000;
	if (alpha > HTCP_ALPHA_FP_CAP)
		alpha = HTCP_ALPHA_FP_CAP;
	return alpha ? alpha : 1;
}

SEC("struct_ops/htcp_cong_avoid")
void BPF_PROG(htcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = trp_tcp_sk(sk);
	struct htcp *ca = htcp_ca(sk);
	__u64 unit, n;
	__u32 cwnd;

	if (!htcp_cwnd_limited(tp))
		return;

	if (trp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}

	cwnd = tp->snd_cwnd;
	if (!cwnd)
		cwnd = 1;
	ca->acc += htcp_increase_fp(sk, ca) * acked;
	unit = (__u64)cwnd << HTCP_FP_SHIFT;
	if (ca->acc < unit)
		return;
	n = ca->acc / unit;
	ca->acc -= n * unit;
	if ((__u64)cwnd + n >= tp->snd_cwnd_clamp) {
		tp->snd_cwnd = tp->snd_cwnd_clamp;
		ca->acc = 0;
	} else {
		tp->snd_cwnd = cwnd + (__u32)n;
	}
}

SEC("struct_ops/htcp_ssthresh")
__u32 BPF_PROG(htcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = trp_tcp_sk(sk);
	struct htcp *ca = htcp_ca(sk);
	__u32 cwnd = tp->snd_cwnd;

	/* Remember the state before the event for undo, unless this reduction escalates one that is
	 * still in progress (e.g. an RTO during fast recovery): then the state before the first one
	 * is what a spurious-loss undo should restore. */
	if (ca->ca_state < TCP_CA_CWR) {
		ca->undo_cwnd = cwnd;
		ca->undo_epoch_us = ca->epoch_us;
		ca->flags |= HTCP_F_UNDO_VALID;
	}
	htcp_new_epoch(ca, trp_now_us());
	return trp_max((__u32)(((__u64)cwnd * BETA_PERMILLE) / 1000), 2);
}

SEC("struct_ops/htcp_set_state")
void BPF_PROG(htcp_set_state, struct sock *sk, __u8 new_state)
{
	struct htcp *ca = htcp_ca(sk);

	if (new_state == TCP_CA_Loss) {
		/* timeout: a congestion event for Delta (the ssthresh op may not have run, e.g. for a
		 * repeated RTO); the undo state stays as saved by the ssthresh op */
		htcp_new_epoch(ca, trp_now_us());
	} else if (new_state == TCP_CA_Open && (ca->flags & HTCP_F_EPOCH_PENDING)) {
		ca->epoch_us = trp_now_us();
		ca->acc = 0;
		ca->flags &= ~HTCP_F_EPOCH_PENDING;
	}
	ca->ca_state = new_state;
}

SEC("struct_ops/htcp_cwnd_event")
void BPF_PROG(htcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_LOSS)
		htcp_new_epoch(htcp_ca(sk), trp_now_us());
}

SEC("struct_ops/htcp_pkts_acked")
void BPF_PROG(htcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct htcp *ca = htcp_ca(sk);
	__s32 rtt = sample->rtt_us;

	if (rtt > 0 && (!ca->rtt_min_us || (__u32)rtt < ca->rtt_min_us))
		ca->rtt_min_us = (__u32)rtt;
}

SEC("struct_ops/htcp_undo_cwnd")
__u32 BPF_PROG(htcp_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = trp_tcp_sk(sk);
	struct htcp *ca = htcp_ca(sk);

	if (!(ca->flags & HTCP_F_UNDO_VALID))
		return tp->snd_cwnd;
	/* the event was spurious: back to the epoch and the window from before it */
	ca->epoch_us = ca->undo_epoch_us;
	ca->acc = 0;
	ca->flags &= ~(HTCP_F_UNDO_VALID | HTCP_F_EPOCH_PENDING);
	return trp_max(tp->snd_cwnd, ca->undo_cwnd);
}

TRP_STRUCT_OPS = {
	.init = (void *)htcp_init,
	.cong_avoid = (void *)htcp_cong_avoid,
	.ssthresh = (void *)htcp_ssthresh,
	.set_state = (void *)htcp_set_state,
	.cwnd_event = (void *)htcp_cwnd_event,
	.pkts_acked = (void *)htcp_pkts_acked,
	.undo_cwnd = (void *)htcp_undo_cwnd,
	.name = CC_NAME,
};
