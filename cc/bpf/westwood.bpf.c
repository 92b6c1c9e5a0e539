// SPDX-License-Identifier: GPL-2.0-only
/* TCP Westwood+ as a BPF struct_ops congestion control, written from Gerhard & Girardi, "Experimental
 * analysis of the TCP Westwood+ and TCP CUBIC congestion control algorithms" (Univ. Trento 2012),
 * section 1 "TCP Westwood+" and section 5 (virtual samples after Grieco & Mascolo):
 *
 *   - window increase: Reno (kernel kfunc tcp_reno_cong_avoid: slow start, then +1 packet per RTT);
 *   - bandwidth estimate BWE: one sample per RTT, b_k = D_k / Delta_k, D_k = data delivered during
 *     the sample (tp->delivered delta x mss_cache, so SACKed / dup-acked data counts), Delta_k = time
 *     the sample spans (>= one srtt), filtered with the report's discrete time-varying low-pass
 *     filter (Tustin):
 *         bwe_k = (2tau - Delta_k)/(2tau + Delta_k) * bwe_{k-1} + Delta_k/(2tau + Delta_k) * (b_k + b_{k-1});
 *     when Delta_k > tau/4 the interval is split into n = ceil(Delta_k / (tau/4)) virtual samples of
 *     length Delta_k/n and value b_k (Nyquist, report line ~277); the first sample sets bwe = b_k;
 *   - 3 DUPACKs (the ssthresh op): ssthresh = max(2, BWE * RTTmin / MSS); when the recovery ends
 *     cwnd = ssthresh (CA_EVENT_COMPLETE_CWR);
 *   - coarse timeout (the ssthresh op in tcp_enter_loss, then CA_EVENT_LOSS): ssthresh as above,
 *     cwnd = 1 (the kernel sets cwnd = packets in flight + 1 = 1 after an RTO marks all lost; the
 *     LOSS event re-asserts our ssthresh);
 *   - before any bandwidth estimate or RTT sample exists: Reno's max(cwnd/2, 2);
 *   - undo: kernel kfunc tcp_reno_undo_cwnd.
 * RTTmin = smallest RTT sample seen (pkts_acked sample->rtt_us > 0), never expired.
 *
 * Parameters (integer -D macros; defaults below):
 *   TAU_MS          ms, default 500. tau of the low-pass filter (report section 5: "tau = 0.5 s").
 *   VSAMPLE_MAX     count, default 64. Cap on the number of virtual samples one real sample is split
 *                   into (n = ceil(Delta_k/(tau/4)) <= VSAMPLE_MAX, a bounded loop for the verifier).
 *                   With tau = 500 ms the cap binds only for Delta_k > 8 s; then each virtual sample
 *                   is longer than tau/4, and if it reaches 2tau the filter simply takes bwe = b_k
 *                   (the Tustin coefficient (2tau - Delta)/(2tau + Delta) would go negative).
 *   SAMPLE_MIN_MS   ms, default 0. Lower bound on Delta_k besides one srtt. 0 = exactly one RTT as the
 *                   report says (the Linux module uses 50 ms here; set 50 to imitate it).
 *
 * Fixed point / units (no floating point in BPF):
 *   - bandwidth (b_k, b_{k-1}, BWE) in bytes per second, u64; time in usec;
 *   - the filter step is computed as ((2tau - d) * bwe + d * (b_k + b_{k-1}) + (2tau + d)/2) / (2tau + d)
 *     in u64 with rounding (2tau, d in usec). Products stay < 2^64 for rates up to 100 Gbit/s and
 *     tau up to ~10 min. Rounding keeps the truncation bias below one byte/s per step.
 *   - ssthresh = BWE * RTTmin_us / (10^6 * mss_cache), in packets.
 */
#include "tcprepro_cc.h"

#ifndef TAU_MS
#define TAU_MS 500
#endif
#ifndef VSAMPLE_MAX
#define VSAMPLE_MAX 64
#endif
#ifndef SAMPLE_MIN_MS
#define SAMPLE_MIN_MS 0
#endif

#if TAU_MS < 4
#error "TAU_MS must be >= 4"
#endif
#if VSAMPLE_MAX < 1 || VSAMPLE_MAX > 1024
#error "VSAMPLE_MAX must be in 1..1024"
#endif
#if SAMPLE_MIN_MS < 0
#error "SAMPLE_MIN_MS must be >= 0"
#endif

#define WW_TAU_US ((__u64)TAU_MS * TRP_USEC_PER_MSEC)
#define WW_VSAMPLE_US (WW_TAU_US / 4)

/* flags */
#define WW_F_HAVE_BWE 0x1     /* bwe holds a filtered estimate */
#define WW_F_REDUCED 0x2      /* our ssthresh op reduced the window outside Loss: end at ssthresh */

struct westwood {
	__u64 sample_start_us; /* start of the sample in progress */
	__u64 bwe;             /* filtered bandwidth estimate, bytes/s */
	__u64 b_prev;          /* last real sample b_{k-1}, bytes/s */
	__u32 start_delivered; /* tp->delivered at sample_start_us */
	__u32 rtt_min_us;      /* smallest RTT sample seen, 0 = none yet */
	__u8 flags;
};

_Static_assert(sizeof(struct westwood) <= 104, "Westwood+ state must fit icsk_ca_priv");

static __always_inline struct westwood *ww_ca(struct sock *sk)
{
	return (struct westwood *)TRP_CA_PRIV(sk);
}

SEC("struct_ops/ww_init")
void BPF_PROG(ww_init, struct sock *sk)
{
	struct tcp_sock *tp = trp_tcp_sk(sk);
	struct westwood *ca = ww_ca(sk);

	ca->sample_start_us = trp_now_us();
	ca->start_delivered = tp->delivered;
	ca->bwe = 0;
	ca->b_prev = 0;
	ca->rtt_min_us = 0;
	ca->flags = 0;
}

/* One filter step of length d usec (0 < d < 2tau) with new sample b. */
static __always_inline __u64 ww_filter_step(__u64 bwe, __u64 b, __u64 b_prev, __u64 d)
{
	__u64 den = 2 * WW_TAU_US + d;

	return ((2 * WW_TAU_US - d) * bwe + d * (b + b_prev) + den / 2) / den;
}

/* Feed the real sample b (bytes/s) spanning dt usec into the filter. */
static __always_inline void ww_update(struct westwood *ca, __u64 b, __u64 dt)
{
	__u64 n, d, bwe, b_prev;
	__u32 i;

	if (!(ca->flags & WW_F_HAVE_BWE)) {
		ca->bwe = b;
		ca->b_prev = b;
		ca->flags |= WW_F_HAVE_BWE;
		return;
	}
	/* n = ceil(dt / (tau/4)) virtual samples of length dt/n and value b */
	n = (dt + WW_VSAMPLE_US - 1) / WW_VSAMPLE_US;
	if (n < 1)
		n = 1;
	if (n > VSAMPLE_MAX)
		n = VSAMPLE_MAX;
	d = dt / n;
	if (!d)
		d = 1;
	if (d >= 2 * WW_TAU_US) {
		/* a virtual sample reaching 2tau: the filter's memory is gone */
		ca->bwe = b;
		ca->b_prev = b;
		return;
	}
	bwe = ca->bwe;
	b_prev = ca->b_prev;
	for (i = 0; i < VSAMPLE_MAX; i++) {
		if (i >= n)
			break;
		bwe = ww_filter_step(bwe, b, b_prev, d);
		b_prev = b;
	}
	ca->bwe = bwe;
	ca->b_prev = b;
}

SEC("struct_ops/ww_pkts_acked")
void BPF_PROG(ww_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = trp_tcp_sk(sk);
	struct westwood *ca = ww_ca(sk);
	__s32 rtt = sample->rtt_us;
	__u64 now, dt, min_dt, bytes, b;

	if (rtt > 0 && (!ca->rtt_min_us || (__u32)rtt < ca->rtt_min_us))
		ca->rtt_min_us = (__u32)rtt;

	/* one bandwidth sample per RTT */
	now = trp_now_us();
	if (now <= ca->sample_start_us)
		return;
	dt = now - ca->sample_start_us;
	min_dt = tp->srtt_us >> 3;
	if (min_dt < (__u64)SAMPLE_MIN_MS * TRP_USEC_PER_MSEC)
		min_dt = (__u64)SAMPLE_MIN_MS * TRP_USEC_PER_MSEC;
	if (!min_dt || dt < min_dt)
		return;

	bytes = (__u64)(tp->delivered - ca->start_delivered) * tp->mss_cache;
	b = bytes * TRP_USEC_PER_SEC / dt;
	ww_update(ca, b, dt);

	ca->sample_start_us = now;
	ca->start_delivered = tp->delivered;
}

/* max(2, BWE * RTTmin / MSS), or Reno's max(cwnd/2, 2) before an estimate exists */
static __always_inline __u32 ww_bw_ssthresh(struct sock *sk)
{
	struct tcp_sock *tp = trp_tcp_sk(sk);
	struct westwood *ca = ww_ca(sk);
	__u32 mss = tp->mss_cache;
	__u64 w;

	if (!(ca->flags & WW_F_HAVE_BWE) || !ca->rtt_min_us || !mss)
		return trp_max(tp->snd_cwnd >> 1, 2);
	w = ca->bwe * ca->rtt_min_us / (TRP_USEC_PER_SEC * mss);
	if (w > 0xffffffffULL)
		w = 0xffffffffULL;
	return trp_max((__u32)w, 2);
}

SEC("struct_ops/ww_ssthresh")
__u32 BPF_PROG(ww_ssthresh, struct sock *sk)
{
	struct westwood *ca = ww_ca(sk);

	/* tcp_enter_recovery / tcp_enter_cwr / tcp_enter_loss all come here; a timeout is told apart
	 * by the CA_EVENT_LOSS and set_state(TCP_CA_Loss) that follow, which drop the flag again */
	ca->flags |= WW_F_REDUCED;
	return ww_bw_ssthresh(sk);
}

SEC("struct_ops/ww_cong_avoid")
void BPF_PROG(ww_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops/ww_cwnd_event")
void BPF_PROG(ww_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = trp_tcp_sk(sk);
	struct westwood *ca = ww_ca(sk);

	if (ev == CA_EVENT_COMPLETE_CWR) {
		/* recovery over: the window ends at ssthresh (unless the reduction was undone) */
		if ((ca->flags & WW_F_REDUCED) && tp->snd_ssthresh < 0x7fffffff)
			tp->snd_cwnd = trp_min(tp->snd_ssthresh, tp->snd_cwnd_clamp);
		ca->flags &= ~WW_F_REDUCED;
	} else if (ev == CA_EVENT_LOSS) {
		/* coarse timeout: ssthresh from the estimate (the kernel then sets cwnd = 1) */
		tp->snd_ssthresh = ww_bw_ssthresh(sk);
		ca->flags &= ~WW_F_REDUCED;
	}
}

SEC("struct_ops/ww_set_state")
void BPF_PROG(ww_set_state, struct sock *sk, __u8 new_state)
{
	struct westwood *ca = ww_ca(sk);

	/* a timeout is not a fast recovery: cwnd restarts from 1, not ssthresh */
	if (new_state == TCP_CA_Loss)
		ca->flags &= ~WW_F_REDUCED;
}

SEC("struct_ops/ww_undo_cwnd")
__u32 BPF_PROG(ww_undo_cwnd, struct sock *sk)
{
	ww_ca(sk)->flags &= ~WW_F_REDUCED;
	return tcp_reno_undo_cwnd(sk);
}

TRP_STRUCT_OPS = {
	.init = (void *)ww_init,
	.cong_avoid = (void *)ww_cong_avoid,
	.ssthresh = (void *)ww_ssthresh,
	.set_state = (void *)ww_set_state,
	.cwnd_event = (void *)ww_cwnd_event,
	.pkts_acked = (void *)ww_pkts_acked,
	.undo_cwnd = (void *)ww_undo_cwnd,
	.name = CC_NAME,
};
