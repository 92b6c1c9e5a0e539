// SPDX-License-Identifier: GPL-2.0-only
/* The smallest congestion control that exercises the whole BPF path: `doctor` builds it against the
 * running kernel's BTF, registers it, checks the kernel lists it, and unregisters it. It only calls
 * the kernel's own Reno through the kfuncs every algorithm here relies on. */
#include "tcprepro_cc.h"

SEC("struct_ops/probe_init")
void BPF_PROG(probe_init, struct sock *sk)
{
}

SEC("struct_ops/probe_cong_avoid")
void BPF_PROG(probe_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops/probe_ssthresh")
__u32 BPF_PROG(probe_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops/probe_undo_cwnd")
__u32 BPF_PROG(probe_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

TRP_STRUCT_OPS = {
	.init = (void *)probe_init,
	.cong_avoid = (void *)probe_cong_avoid,
	.ssthresh = (void *)probe_ssthresh,
	.undo_cwnd = (void *)probe_undo_cwnd,
	.name = CC_NAME,
};
