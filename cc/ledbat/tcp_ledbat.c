// SPDX-License-Identifier: GPL-2.0
/* TCP-LEDBAT and its decrease schemes as a built-in kernel congestion control: a thin wrapper
 * around the algorithm in ledbat.h (which documents it and its parameters), for kernels that cannot
 * load BPF struct_ops (the UML lane's: no BPF JIT).  testbed/uml_kernel.py copies both files into
 * net/ipv4/tcprepro_ledbat/ and compiles this one once per variant of
 * config/congestion_controls.yaml, from a generated file that defines CC_NAME and the variant's
 * parameters as integer macros, then includes this one. */
#include <linux/init.h>
#include <linux/module.h>
#include <net/tcp.h>

#ifndef CC_NAME
#error "build through a variant file that defines CC_NAME and the parameters (testbed/uml_kernel.py)"
#endif

#define LEDBAT_TCP_SK(sk) tcp_sk(sk)
#define LEDBAT_CA_PRIV(sk) inet_csk_ca(sk)
#define LEDBAT_CWND_LIMITED(tp) ((tp)->is_cwnd_limited)
#define LEDBAT_UNROLL
#include "ledbat.h"

static void ledbat_init(struct sock *sk)
{
	ledbat_on_init(sk);
}

static void ledbat_pkts_acked(struct sock *sk, const struct ack_sample *sample)
{
	ledbat_on_pkts_acked(sk, sample);
}

static void ledbat_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	ledbat_on_cong_avoid(sk, ack, acked);
}

static u32 ledbat_ssthresh(struct sock *sk)
{
	return ledbat_on_ssthresh(sk);
}

static u32 ledbat_undo_cwnd(struct sock *sk)
{
	return ledbat_on_undo_cwnd(sk);
}

static struct tcp_congestion_ops ledbat_ops __read_mostly = {
	.init = ledbat_init,
	.pkts_acked = ledbat_pkts_acked,
	.cong_avoid = ledbat_cong_avoid,
	.ssthresh = ledbat_ssthresh,
	.undo_cwnd = ledbat_undo_cwnd,
	.owner = THIS_MODULE,
	.name = CC_NAME,
};

static int __init ledbat_register(void)
{
	BUILD_BUG_ON(sizeof(struct ledbat) > ICSK_CA_PRIV_SIZE);
	return tcp_register_congestion_control(&ledbat_ops);
}

module_init(ledbat_register);
