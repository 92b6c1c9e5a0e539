/* SPDX-License-Identifier: GPL-2.0 */
/* TCP-LEDBAT (RFC 6817) and the decrease schemes of Kuehlewind & Fisches, "Evaluation of Different
 * Decrease Schemes for LEDBAT Congestion Control" (EUNICE 2011, with its erratum): the algorithm,
 * written once from those two specifications.  Two thin wrappers turn it into a congestion control:
 *   cc/bpf/ledbat.bpf.c     a BPF struct_ops object, built against a running kernel's BTF;
 *   cc/ledbat/tcp_ledbat.c  a built-in kernel congestion control (the UML lane's kernel, which has
 *                           no BPF JIT and so no struct_ops).
 * A wrapper defines, before including this file, how to reach the socket from its environment:
 *   LEDBAT_TCP_SK(sk), LEDBAT_CA_PRIV(sk)  the tcp_sock and the private state (icsk_ca_priv);
 *   LEDBAT_CWND_LIMITED(tp)                tp->is_cwnd_limited (a bitfield: BPF reads it by CO-RE);
 *   LEDBAT_UNROLL                          a loop-unrolling pragma, or nothing.
 * It calls ledbat_on_init, ledbat_on_pkts_acked, ledbat_on_cong_avoid, ledbat_on_ssthresh and
 * ledbat_on_undo_cwnd from the congestion-control operations of the same names.
 *
 * Every variant is this algorithm compiled with its parameters as integer macros and its own kernel
 * name; the variants and their parameters are listed once, in config/congestion_controls.yaml
 * (BPF: bpf_ledbat, bpf_ledbat_min1, ...; built into the UML kernel: ledbat, ledbat_min1, ...):
 *   ledbat       DECREASE=0                   standard linear controller (RFC 6817)
 *   ledbat_min1  DECREASE=1                   linear, >= 1 packet per RTT decrease (paper 3.2)
 *   ledbat_md2   DECREASE=2 CURRENT_FILTER=2  MD-NF2: beta 0.6, min of the last two samples
 *   ledbat_md1   DECREASE=2 CURRENT_FILTER=1  MD-NF1: beta 0.6, no filter (no delayed ACKs)
 *   ledbat_mdv   DECREASE=3 CURRENT_FILTER=1  MDvar: beta 1 - TARGET/current_RTT, then -3 pkts
 *
 * Parameters, all integers.  "RFC alg" = RFC 6817's complete sender algorithm (pseudo-code),
 * "RFC params" = its parameter-value section, "paper" = Kuehlewind & Fisches 2011.
 *   name             unit   default  meaning (source)
 *   TARGET_MS        ms          25  target queuing delay (RFC alg/params: MUST be <= 100 ms;
 *                                    paper 5.1 uses 25 ms).
 *   GAIN_UP          -            1  numerator of the increase GAIN (RFC alg/params: GAIN MUST be
 *                                    <= 1, so cwnd never grows faster than one packet per RTT).
 *   GAIN_DOWN        -      GAIN_UP  numerator of the decrease GAIN of DECREASE=0 (RFC 6817 allows
 *                                    a different decrease gain; the standard scheme uses the same).
 *   GAIN_DEN         -            1  common denominator: GAIN = GAIN_UP/GAIN_DEN (GAIN_DOWN alike).
 *   DECREASE         -            0  scheme when off_target < 0 (queuing_delay > TARGET):
 *                                    0 linear, the increase law with GAIN_DOWN (RFC alg);
 *                                    1 linear with GAIN = TARGET*DEC_N: per ACK
 *                                      cwnd -= DEC_N * (qd - TARGET)[ms] * acked/cwnd, so >= DEC_N
 *                                      packets per RTT once qd >= TARGET + 1 ms (paper 3.2,
 *                                      "GAIN = TARGET * N");
 *                                    2 multiplicative, cwnd = BETA_PERMILLE/1000 * cwnd, at most
 *                                      once per RTT (paper 3.2, after Carofiglio et al.);
 *                                    3 MDvar, cwnd = (1 - TARGET/current_RTT) * cwnd
 *                                      - MDVAR_SUB_PKTS, at most once per RTT (paper 3.2 and
 *                                      its erratum).
 *   DEC_N            packets      1  DECREASE=1: packets per RTT per ms of excess delay ("N" of
 *                                    paper 3.2: simultaneously starting standard TCP flows).
 *   BETA_PERMILLE    1/1000     600  DECREASE=2: the fixed beta (paper 5.2: 0.6).
 *   MDVAR_SUB_PKTS   packets      3  DECREASE=3: subtracted after the multiplication (paper 3.2).
 *   CURRENT_FILTER   samples      1  length of the current-delay filter, FILTER = min (RFC alg and
 *                                    its noise-filtering discussion; paper 5.2: MD-NF2 uses "the
 *                                    minimum of the last two samples").
 *   BASE_HISTORY     minutes     10  one-minute base-delay minima kept (RFC alg/params).  The state
 *                                    must fit 104 bytes: BASE_HISTORY + CURRENT_FILTER <= 14.
 *   ALLOWED_INCREASE packets      1  cwnd may not grow past flight size + this (RFC alg/params).
 *   MIN_CWND         packets      2  floor of cwnd after any decrease (RFC alg/params).
 *   INIT_CWND        packets      2  cwnd set at init (RFC alg/params: <= 2).
 *   SLOW_START       0/1          0  0: no slow start, the linear controller from the first ACK
 *                                    (RFC 6817 leaves start-up to the implementer; paper fig. 1:
 *                                    the flow "increases its rate slowly"); 1: standard slow start
 *                                    (cwnd += acked) until queuing_delay > TARGET/2 or the first
 *                                    loss, then LEDBAT.
 *
 * Delay measurement (paper section 4).  On every ACK that advances snd_una the one-way delay is
 * OWD = TSval - TSecr of that ACK (tp->rx_opt.rcv_tsval - tp->rx_opt.rcv_tsecr), 1 ms resolution.
 * Sender and receiver clocks differ by an unknown constant (Linux randomises a per-connection TS
 * offset), so each sample is kept relative to the first one, rel = (s32)(OWD - OWD_first), and
 * only differences are used: queuing_delay = min(current filter) - min(base history), >= 0.
 * Samples are skipped when TSecr is 0 (no valid echo), when the ACK acknowledges no new data (dup
 * ACKs echo the TSval of an old segment, RFC 7323), and when (TSval, TSecr) equals the previous
 * sample's pair (the same measurement again, or an ACK without the option, whose stale values
 * remain).  The window update itself runs on every ACK with the latest estimate.  Without any
 * valid sample (timestamps off) queuing_delay counts as 0: the flow then grows one packet per RTT
 * and halves on loss, like Reno in congestion avoidance.
 *
 * Base history: BASE_HISTORY buckets, base[BASE_HISTORY-1] is the minimum of the current minute
 * (minute = tcp_mstamp / 60 s, the sender's clock); when the minute changes the oldest bucket is
 * dropped and a new one opened with the sample (RFC alg, update_base_delay).  Current filter:
 * the last CURRENT_FILTER samples, FILTER = min.
 *
 * Window update (per ACK in cong_avoid, in packets; the RFC works in bytes, cwnd/MSS the same):
 *   off_target = (TARGET - qd)/TARGET, delta = GAIN * off_target * acked / cwnd.
 * Fixed point: cwnd = tp->snd_cwnd + acc/2^16, acc a signed fraction kept in (-1, 1) packet
 * (LEDBAT_FP_SHIFT = 16); delta is computed once per ACK in u64 as
 *   |delta| = GAIN_x * |TARGET - qd| * acked * 2^16 / (GAIN_DEN * TARGET * cwnd)
 * (unsigned division only; the sign is handled separately because clang 14 BPF has no signed
 * division); whole packets move into snd_cwnd and the remainder stays in acc.
 * Increases happen only when the kernel marks the flow cwnd-limited (tp->is_cwnd_limited) and
 * are capped at max(cwnd, flightsize + ALLOWED_INCREASE), flightsize being the larger of the
 * flight before this ACK (packets_out + acked: the RFC's "flightsize" before bytes_newly_acked is
 * subtracted) and the kernel's max_packets_out (the largest flight of the current window, what
 * its own cwnd validation uses).  The window's maximum, not only the instantaneous flight: when
 * ACKs arrive in a batch that the sender answers after the last one, the flight before each
 * later ACK of the batch is short of cwnd, and a cap there discards the fraction of a packet
 * accumulated over the round trip (where ACKs come in batches, as under QEMU TCG, a flow capped on
 * the instantaneous flight stalls well short of TARGET; docs/measurements.md).
 * The cap only stops growth; it never shrinks cwnd (the RFC's min() would also shrink an
 * application-limited window; that is left to the kernel's cwnd validation).
 *
 * Multiplicative decreases (DECREASE 2, 3) happen at most once per RTT: after one, further
 * decreases are ignored until one smoothed RTT (srtt at the time of the decrease, >= 1 ms) has
 * passed, since the first RTT's samples still show the old queue.  Increases go on meanwhile.
 *   DECREASE=2: cwnd = floor(cwnd * BETA_PERMILLE / 1000).
 *   DECREASE=3: cwnd = floor(cwnd * min_RTT / (min_RTT + TARGET)) - MDVAR_SUB_PKTS, i.e.
 *     (1 - TARGET/current_RTT) * cwnd - 3 with current_RTT = min_RTT + TARGET.  The paper takes
 *     current_RTT ~= 2*base_delay + TARGET with synchronised clocks; our OWD carries an unknown
 *     clock offset, so 2*base_delay is replaced by the sender's own minimum RTT: the smallest
 *     rtt_us sample of pkts_acked, kept over the current and the previous block of BASE_HISTORY
 *     minutes (so it ages out like the base delay); srtt before the first sample.  All in usec.
 * Multiplicative decreases clear acc; every decrease is floored at MIN_CWND.
 *
 * Loss (ssthresh op): ssthresh = max(cwnd/2, MIN_CWND) (RFC alg, data loss; the kernel's recovery
 * applies it at most once per RTT and brings cwnd down to it).  RTO: the kernel sets cwnd to 1,
 * the next ACK lifts it to MIN_CWND (RFC alg: cwnd = max(cwnd, MIN_CWND) on every ACK).
 * undo_cwnd restores max(cwnd, cwnd before the loss).  With SLOW_START=0 ssthresh is never
 * consulted for growth, so it does not cap LEDBAT's linear growth.
 *
 * Notes.  init sets cwnd = INIT_CWND, also when the CC is switched on an established socket.
 * TSval is assumed to tick in ms (Linux default; a route with the 6.7+ "tcp_usec_ts" feature would
 * make the delays 1000x too large).  With delayed ACKs an ACK for two segments echoes the first
 * one's TSval, adding the inter-arrival gap (and, when the delayed-ACK timer fires, much more) to
 * that sample; the paper disables delayed ACKs for MD-NF1 and MDvar (route option quickack 1).
 *
 * Kernel fields used (present in Linux 6.1 and 6.18): snd_cwnd, snd_ssthresh, srtt_us, tcp_mstamp,
 * rx_opt.rcv_tsval, rx_opt.rcv_tsecr, packets_out, max_packets_out, is_cwnd_limited, icsk_ca_priv.
 */
#ifndef TCPREPRO_LEDBAT_H
#define TCPREPRO_LEDBAT_H

#if !defined(LEDBAT_TCP_SK) || !defined(LEDBAT_CA_PRIV) || !defined(LEDBAT_CWND_LIMITED) || !defined(LEDBAT_UNROLL)
#error "include ledbat.h from a wrapper that defines LEDBAT_TCP_SK, LEDBAT_CA_PRIV, LEDBAT_CWND_LIMITED, LEDBAT_UNROLL"
#endif

#define LEDBAT_USEC_PER_MSEC 1000ULL
#define LEDBAT_USEC_PER_SEC 1000000ULL

static __always_inline u32 ledbat_max(u32 a, u32 b) { return a > b ? a : b; }

/* ---- parameters ----------------------------------------------------------------------------- */
#ifndef TARGET_MS
#define TARGET_MS 25
#endif
#ifndef GAIN_UP
#define GAIN_UP 1
#endif
#ifndef GAIN_DOWN
#define GAIN_DOWN GAIN_UP
#endif
#ifndef GAIN_DEN
#define GAIN_DEN 1
#endif
#ifndef DECREASE
#define DECREASE 0
#endif
#ifndef DEC_N
#define DEC_N 1
#endif
#ifndef BETA_PERMILLE
#define BETA_PERMILLE 600
#endif
#ifndef MDVAR_SUB_PKTS
#define MDVAR_SUB_PKTS 3
#endif
#ifndef CURRENT_FILTER
#define CURRENT_FILTER 1
#endif
#ifndef BASE_HISTORY
#define BASE_HISTORY 10
#endif
#ifndef ALLOWED_INCREASE
#define ALLOWED_INCREASE 1
#endif
#ifndef MIN_CWND
#define MIN_CWND 2
#endif
#ifndef INIT_CWND
#define INIT_CWND 2
#endif
#ifndef SLOW_START
#define SLOW_START 0
#endif

_Static_assert(TARGET_MS > 0 && TARGET_MS <= 100000, "TARGET_MS must be in (0, 100000] (RFC 6817: <= 100 ms)");
_Static_assert(GAIN_DEN > 0 && GAIN_UP >= 0 && GAIN_UP <= GAIN_DEN,
	       "RFC 6817: the increase GAIN must be <= 1 (GAIN_UP <= GAIN_DEN)");
_Static_assert(GAIN_DOWN >= 0, "GAIN_DOWN must be >= 0");
_Static_assert(DECREASE >= 0 && DECREASE <= 3, "DECREASE is 0, 1, 2 or 3");
_Static_assert(DEC_N >= 1, "DEC_N must be >= 1");
_Static_assert(BETA_PERMILLE > 0 && BETA_PERMILLE < 1000, "BETA_PERMILLE must be in (0, 1000)");
_Static_assert(MDVAR_SUB_PKTS >= 0, "MDVAR_SUB_PKTS must be >= 0");
_Static_assert(CURRENT_FILTER >= 1, "CURRENT_FILTER must be >= 1");
_Static_assert(BASE_HISTORY >= 1, "BASE_HISTORY must be >= 1");
_Static_assert(ALLOWED_INCREASE >= 0, "ALLOWED_INCREASE must be >= 0");
_Static_assert(MIN_CWND >= 1 && INIT_CWND >= 1, "MIN_CWND and INIT_CWND must be >= 1");
_Static_assert(SLOW_START == 0 || SLOW_START == 1, "SLOW_START is 0 or 1");

/* ---- fixed point and constants ------------------------------------------------------------- */
#define LEDBAT_FP_SHIFT 16			/* acc is in 1/65536 packet */
#define LEDBAT_FP_ONE (1 << LEDBAT_FP_SHIFT)
#define LEDBAT_FP_MAX 0x3fff0000ULL		/* |per-ACK delta| clamp: keeps acc inside s32 */
#define LEDBAT_EMPTY 0x7fffffff			/* an unused delay slot (+infinity) */
#define LEDBAT_USEC_PER_MIN (60ULL * LEDBAT_USEC_PER_SEC)

struct ledbat {
	s32 base[BASE_HISTORY];	/* per-minute minima of rel. OWD, ms; [BASE_HISTORY-1] = this minute */
	s32 cur[CURRENT_FILTER];	/* last rel. OWD samples, ms; [CURRENT_FILTER-1] = newest */
	u32 ref_owd;		/* raw TSval-TSecr of the first sample: the clock-offset reference */
	u32 last_tsval;		/* (TSval, TSecr) of the last sample taken */
	u32 last_tsecr;
	u32 minute;		/* tcp_mstamp / 60 s of base[BASE_HISTORY-1] */
	s32 qdelay_ms;		/* latest queuing delay, ms; -1 before the first sample */
	s32 acc;		/* fractional part of cwnd, 1/2^16 packet, in (-1, 1) packet */
	u32 min_rtt_us[2];	/* minimum RTT sample: [0] this block of BASE_HISTORY minutes, [1] last */
	u32 dec_until_ms;	/* (u32)(tcp_mstamp/1000) before which MD decreases are ignored */
	u32 loss_cwnd;		/* cwnd when the last loss was signalled (undo) */
	u16 rtt_block;		/* minute / BASE_HISTORY of min_rtt_us[0] */
	u8 have_ref;		/* a sample was taken (ref_owd, minute, last_* valid) */
	u8 in_ss;		/* SLOW_START=1 and start-up slow start not yet left */
	u8 dec_hold;		/* dec_until_ms is valid */
};

_Static_assert(sizeof(struct ledbat) <= 104, "struct ledbat must fit in icsk_ca_priv (104 bytes)");

static __always_inline struct ledbat *ledbat_ca(struct sock *sk)
{
	return (struct ledbat *)LEDBAT_CA_PRIV(sk);
}

static __always_inline u32 ledbat_minute(const struct tcp_sock *tp)
{
	return (u32)(tp->tcp_mstamp / LEDBAT_USEC_PER_MIN);
}

static __always_inline int ledbat_cwnd_limited(const struct tcp_sock *tp)
{
	return LEDBAT_CWND_LIMITED(tp);
}

static __always_inline void ledbat_on_init(struct sock *sk)
{
	struct tcp_sock *tp = LEDBAT_TCP_SK(sk);
	struct ledbat *ca = ledbat_ca(sk);
	int i;

LEDBAT_UNROLL
	for (i = 0; i < BASE_HISTORY; i++)
		ca->base[i] = LEDBAT_EMPTY;
LEDBAT_UNROLL
	for (i = 0; i < CURRENT_FILTER; i++)
		ca->cur[i] = LEDBAT_EMPTY;
	ca->ref_owd = 0;
	ca->last_tsval = 0;
	ca->last_tsecr = 0;
	ca->minute = 0;
	ca->qdelay_ms = -1;
	ca->acc = 0;
	ca->min_rtt_us[0] = ~0U;
	ca->min_rtt_us[1] = ~0U;
	ca->dec_until_ms = 0;
	ca->loss_cwnd = 0;
	ca->rtt_block = 0;
	ca->have_ref = 0;
	ca->in_ss = SLOW_START;
	ca->dec_hold = 0;

	tp->snd_cwnd = INIT_CWND;
}

/* Every ACK that passes tcp_ack's checks: RTT sample for min_RTT, OWD sample for the filters. */
static __always_inline void ledbat_on_pkts_acked(struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = LEDBAT_TCP_SK(sk);
	struct ledbat *ca = ledbat_ca(sk);
	u32 now_min = ledbat_minute(tp);
	u32 tsval, tsecr;
	s32 rel, cur_min, base_min;
	s32 rtt = sample->rtt_us;
	int i;

	if (rtt > 0) {
		u16 block = (u16)(now_min / BASE_HISTORY);

		if (block != ca->rtt_block) {
			ca->min_rtt_us[1] = ca->min_rtt_us[0];
			ca->min_rtt_us[0] = (u32)rtt;
			ca->rtt_block = block;
		} else if ((u32)rtt < ca->min_rtt_us[0]) {
			ca->min_rtt_us[0] = (u32)rtt;
		}
	}

	if (!sample->pkts_acked)
		return;
	tsval = tp->rx_opt.rcv_tsval;
	tsecr = tp->rx_opt.rcv_tsecr;
	if (!tsecr)
		return;
	if (ca->have_ref && tsval == ca->last_tsval && tsecr == ca->last_tsecr)
		return;
	ca->last_tsval = tsval;
	ca->last_tsecr = tsecr;

	if (!ca->have_ref) {
		ca->ref_owd = tsval - tsecr;
		ca->minute = now_min;
		ca->have_ref = 1;
	}
	rel = (s32)(tsval - tsecr - ca->ref_owd);
	/* keep clear of the +infinity marker (a 24-day excursion is not a delay) */
	if (rel >= LEDBAT_EMPTY)
		rel = LEDBAT_EMPTY - 1;

	/* base history: a new bucket each minute, else the minimum of this minute (RFC alg) */
	if (now_min != ca->minute) {
LEDBAT_UNROLL
		for (i = 0; i < BASE_HISTORY - 1; i++)
			ca->base[i] = ca->base[i + 1];
		ca->base[BASE_HISTORY - 1] = rel;
		ca->minute = now_min;
	} else if (rel < ca->base[BASE_HISTORY - 1]) {
		ca->base[BASE_HISTORY - 1] = rel;
	}

	/* current-delay filter: the last CURRENT_FILTER samples */
LEDBAT_UNROLL
	for (i = 0; i < CURRENT_FILTER - 1; i++)
		ca->cur[i] = ca->cur[i + 1];
	ca->cur[CURRENT_FILTER - 1] = rel;

	cur_min = LEDBAT_EMPTY;
LEDBAT_UNROLL
	for (i = 0; i < CURRENT_FILTER; i++)
		if (ca->cur[i] < cur_min)
			cur_min = ca->cur[i];
	base_min = LEDBAT_EMPTY;
LEDBAT_UNROLL
	for (i = 0; i < BASE_HISTORY; i++)
		if (ca->base[i] < base_min)
			base_min = ca->base[i];

	/* queuing_delay = FILTER(current_delays) - MIN(base_delays), in s64 against wrap */
	{
		s64 qd = (s64)cur_min - (s64)base_min;

		if (qd < 0)
			qd = 0;
		if (qd > 0x3fffffff)
			qd = 0x3fffffff;
		ca->qdelay_ms = (s32)qd;
	}
}

/* |GAIN * off_target * acked / cwnd| in 1/2^16 packet: gain_num * |TARGET - qd| * acked * 2^16 /
 * (GAIN_DEN * TARGET * cwnd), clamped so that acc stays inside s32. */
static __always_inline u64 ledbat_delta(u64 gain_num, u64 dist_ms, u32 acked, u32 cwnd)
{
	u64 den = (u64)GAIN_DEN * TARGET_MS * (u64)(cwnd ? cwnd : 1);
	u64 num, d;

	if (dist_ms > 1000000)		/* 1000 s of delay: far beyond any window (keeps num in u64) */
		dist_ms = 1000000;
	if (acked > 65535)
		acked = 65535;
	num = gain_num * dist_ms * (u64)acked;

	if (num > (LEDBAT_FP_MAX >> LEDBAT_FP_SHIFT) * den)	/* result would exceed the clamp */
		return LEDBAT_FP_MAX;
	d = (num << LEDBAT_FP_SHIFT) / den;
	return d > LEDBAT_FP_MAX ? LEDBAT_FP_MAX : d;
}

static __always_inline u32 ledbat_floor_cwnd(struct ledbat *ca, s64 cwnd)
{
	if (cwnd < MIN_CWND) {
		ca->acc = 0;
		return MIN_CWND;
	}
	return (u32)cwnd;
}

static __always_inline void ledbat_on_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = LEDBAT_TCP_SK(sk);
	struct ledbat *ca = ledbat_ca(sk);
	u32 cwnd = tp->snd_cwnd;
	s32 qd = ca->qdelay_ms;
	s64 next;

	if (qd < 0)
		qd = 0;		/* no delay sample yet (or no timestamps): act as if the queue were empty */
	if (!acked)
		goto floor;

#if SLOW_START
	if (ca->in_ss) {
		if (2 * qd > TARGET_MS) {
			/* leave start-up: from here on the linear controller (and the kernel sees CA) */
			ca->in_ss = 0;
			tp->snd_ssthresh = cwnd;
		} else {
			if (ledbat_cwnd_limited(tp))
				cwnd += acked;
			tp->snd_cwnd = cwnd;
			return;
		}
	}
#endif

	if (qd <= TARGET_MS) {
		/* off_target >= 0: linear increase, only when cwnd-limited (RFC alg) */
		u32 cap;
		s64 acc;

		if (!ledbat_cwnd_limited(tp))
			goto floor;
		acc = (s64)ca->acc + (s64)ledbat_delta(GAIN_UP, (u64)(TARGET_MS - qd), acked, cwnd);
		next = (s64)cwnd + (acc >> LEDBAT_FP_SHIFT);
		ca->acc = (s32)(acc & (LEDBAT_FP_ONE - 1));
		if (acc < 0) {	/* a negative fraction left from a decrease, still > -1 packet */
			next = cwnd;
			ca->acc = (s32)acc;
		}
		cap = ledbat_max(tp->packets_out + acked, tp->max_packets_out) + ALLOWED_INCREASE;
		if (cap < cwnd)
			cap = cwnd;
		if (next >= (s64)cap) {
			next = cap;
			if (ca->acc > 0)
				ca->acc = 0;
		}
		cwnd = (u32)next;
		goto floor;
	}

	/* off_target < 0: decrease */
#if DECREASE == 0 || DECREASE == 1
	{
#if DECREASE == 0
		u64 gain = GAIN_DOWN;
#else
		u64 gain = (u64)TARGET_MS * DEC_N * GAIN_DEN;	/* GAIN = TARGET * N */
#endif
		u64 d = ledbat_delta(gain, (u64)(qd - TARGET_MS), acked, cwnd);
		s64 acc = (s64)ca->acc - (s64)d;
		u64 whole;

		if (acc > -(s64)LEDBAT_FP_ONE) {
			ca->acc = (s32)acc;
			goto floor;
		}
		whole = (u64)(-acc) >> LEDBAT_FP_SHIFT;
		ca->acc = (s32)(acc + (s64)(whole << LEDBAT_FP_SHIFT));
		next = (s64)cwnd - (s64)whole;
		cwnd = ledbat_floor_cwnd(ca, next);
	}
#else
	{
		u32 now_ms = (u32)(tp->tcp_mstamp / LEDBAT_USEC_PER_MSEC);
		u32 hold_ms;

		if (ca->dec_hold && (s32)(now_ms - ca->dec_until_ms) < 0)
			goto floor;	/* within one RTT of the last decrease */
#if DECREASE == 2
		next = (s64)(((u64)cwnd * BETA_PERMILLE) / 1000);
#else
		{
			u32 min_rtt = ca->min_rtt_us[0] < ca->min_rtt_us[1] ?
				      ca->min_rtt_us[0] : ca->min_rtt_us[1];
			u64 cur_rtt;

			if (min_rtt == ~0U)
				min_rtt = tp->srtt_us >> 3;
			cur_rtt = (u64)min_rtt + TARGET_MS * LEDBAT_USEC_PER_MSEC;
			next = (s64)(((u64)cwnd * min_rtt) / cur_rtt) - MDVAR_SUB_PKTS;
		}
#endif
		ca->acc = 0;
		cwnd = ledbat_floor_cwnd(ca, next);
		hold_ms = (tp->srtt_us >> 3) / 1000;
		if (hold_ms < 1)
			hold_ms = 1;
		ca->dec_until_ms = now_ms + hold_ms;
		ca->dec_hold = 1;
	}
#endif

floor:
	/* RFC alg: cwnd = max(cwnd, MIN_CWND) on every ACK (also lifts the RTO's cwnd of 1) */
	if (cwnd < MIN_CWND)
		cwnd = MIN_CWND;
	tp->snd_cwnd = cwnd;
}

static __always_inline u32 ledbat_on_ssthresh(struct sock *sk)
{
	struct tcp_sock *tp = LEDBAT_TCP_SK(sk);
	struct ledbat *ca = ledbat_ca(sk);
	u32 cwnd = tp->snd_cwnd;

	ca->loss_cwnd = cwnd;
	ca->acc = 0;
	ca->in_ss = 0;		/* start-up slow start ends at the first loss */
	return ledbat_max(cwnd >> 1, MIN_CWND);
}

static __always_inline u32 ledbat_on_undo_cwnd(struct sock *sk)
{
	struct tcp_sock *tp = LEDBAT_TCP_SK(sk);
	struct ledbat *ca = ledbat_ca(sk);

	return ledbat_max(tp->snd_cwnd, ca->loss_cwnd);
}

#endif
