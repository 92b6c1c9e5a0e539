/* SPDX-License-Identifier: GPL-2.0-only */
/* Shared declarations for tcprepro's BPF struct_ops congestion controls.
 *
 * Every algorithm here is compiled per kernel against that kernel's own BTF (vmlinux.h is generated
 * by cc/bpf_build.py), so CO-RE relocations fit the running tcp_sock layout.  Each object is built
 * with -DCC_NAME="..." (the name the kernel lists, <= 15 characters) and its parameters as -D
 * macros, so one registered name is one fixed parameter set and provenance can hash the object.
 */
#ifndef TCPREPRO_CC_H
#define TCPREPRO_CC_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#if !defined(CC_NAME) || !defined(OPS_VAR)
#error "build with -DCC_NAME=\"name\" -DOPS_VAR=name (cc/bpf_build.py does)"
#endif

/* The struct_ops map: its variable name equals the kernel name, so `bpftool struct_ops
 * unregister name <name>` and the loader's bookkeeping find it by the name the kernel lists. */
#define TRP_STRUCT_OPS SEC(".struct_ops") struct tcp_congestion_ops OPS_VAR

char _license[] SEC("license") = "GPL";

/* The kernel's own Reno helpers, exported to BPF congestion controls as kfuncs. */
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;

#define TRP_USEC_PER_MSEC 1000ULL
#define TRP_USEC_PER_SEC 1000000ULL

static __always_inline struct tcp_sock *trp_tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *trp_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

/* Per-connection private state lives in icsk_ca_priv (104 bytes on 5.x-6.x kernels). */
#define TRP_CA_PRIV(sk) ((void *)trp_csk(sk)->icsk_ca_priv)

static __always_inline __u32 trp_min(__u32 a, __u32 b) { return a < b ? a : b; }
static __always_inline __u32 trp_max(__u32 a, __u32 b) { return a > b ? a : b; }

/* Monotonic time in usec (the clock tcp_mstamp is taken from). */
static __always_inline __u64 trp_now_us(void)
{
	return bpf_ktime_get_ns() / 1000;
}

/* tcp_sock.snd_cwnd is written directly (allowed for struct_ops congestion controls). */
static __always_inline int trp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

#endif
