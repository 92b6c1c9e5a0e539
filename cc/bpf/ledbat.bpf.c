// SPDX-License-Identifier: GPL-2.0-only
/* TCP-LEDBAT and its decrease schemes as a BPF struct_ops congestion control: a thin wrapper around
 * the algorithm in cc/ledbat/ledbat.h (which documents it and its parameters).  Built per variant
 * by cc/bpf_build.py with -DCC_NAME="..." -DOPS_VAR=... and the variant's parameters as -D integer
 * macros (config/congestion_controls.yaml lists them). */
#include "tcprepro_cc.h"

#define LEDBAT_TCP_SK(sk) trp_tcp_sk(sk)
#define LEDBAT_CA_PRIV(sk) TRP_CA_PRIV(sk)
#define LEDBAT_CWND_LIMITED(tp) BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited)
#define LEDBAT_UNROLL _Pragma("unroll")
#include "ledbat.h"

SEC("struct_ops/ledbat_init")
void BPF_PROG(ledbat_init, struct sock *sk)
{
	ledbat_on_init(sk);
}

SEC("struct_ops/ledbat_pkts_acked")
void BPF_PROG(ledbat_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	ledbat_on_pkts_acked(sk, sample);
}

SEC("struct_ops/ledbat_cong_avoid")
void BPF_PROG(ledbat_cong_avoid, struct sock *sk, u32 ack, u32 acked)
{
	ledbat_on_cong_avoid(sk, ack, acked);
}

SEC("struct_ops/ledbat_ssthresh")
u32 BPF_PROG(ledbat_ssthresh, struct sock *sk)
{
	return ledbat_on_ssthresh(sk);
}

SEC("struct_ops/ledbat_undo_cwnd")
u32 BPF_PROG(ledbat_undo_cwnd, struct sock *sk)
{
	return ledbat_on_undo_cwnd(sk);
}

TRP_STRUCT_OPS = {
	.init = (void *)ledbat_init,
	.pkts_acked = (void *)ledbat_pkts_acked,
	.cong_avoid = (void *)ledbat_cong_avoid,
	.ssthresh = (void *)ledbat_ssthresh,
	.undo_cwnd = (void *)ledbat_undo_cwnd,
	.name = CC_NAME,
};
