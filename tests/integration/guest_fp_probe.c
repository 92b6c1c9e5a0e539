/*
 * Run inside a UML guest by tests/integration/test_uml_clock.py: each of two threads, and a forked
 * child, holds its own value in a vector register across the stops that make the UML kernel read
 * and write a process's FP state (kernel/uml/patches/0009): a system call that switches to the other
 * thread of the same host process (a blocking read of a pipe the other thread writes: the two take
 * turns), a page fault on a fresh page (the fault-report stub), and a signal whose handler does
 * floating-point work and clears the register. Exits 1 and says where if a value came back other,
 * or if the threads did not take turns (then nothing was tested).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 2000
#define PAGE 4096

static volatile double handler_sum;
static volatile unsigned long last_holder, alternations;

static void on_usr1(int sig)
{
	double x = sig;

	for (int i = 0; i < 64; i++)
		x = x * 1.000001 + 0.25;
	handler_sum += x;
	asm volatile("pxor %%xmm8, %%xmm8" ::: "xmm8");	/* the handler's own use of the register */
}

static int hold(unsigned long value, int in_fd, int out_fd)
{
	char token = 't';

	char *pages = mmap(NULL, (size_t)ROUNDS * PAGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long pid = getpid();

	if (pages == MAP_FAILED)
		return 2;
	for (int i = 0; i < ROUNDS; i++) {
		unsigned long out;

		asm volatile("movq %[in], %%xmm8\n\t"
			     "mov $1, %%eax\n\t"		/* write(out_fd, &token, 1) */
			     "mov %[out_fd], %%edi\n\t"
			     "mov %[token], %%rsi\n\t"
			     "mov $1, %%edx\n\t"
			     "syscall\n\t"
			     "mov $0, %%eax\n\t"		/* read(in_fd, ...): the other thread's turn */
			     "mov %[in_fd], %%edi\n\t"
			     "mov %[token], %%rsi\n\t"
			     "mov $1, %%edx\n\t"
			     "syscall\n\t"
			     "movb $1, (%[page])\n\t"		/* a fault on a fresh page */
			     "mov $62, %%eax\n\t"		/* kill(pid, SIGUSR1): the handler runs */
			     "mov %[pid], %%rdi\n\t"
			     "mov $10, %%esi\n\t"
			     "syscall\n\t"
			     "movq %%xmm8, %[out]"
			     : [out] "=r" (out)
			     : [in] "r" (value), [page] "r" (pages + (size_t)i * PAGE), [pid] "r" (pid),
			       [in_fd] "r" (in_fd), [out_fd] "r" (out_fd), [token] "r" (&token)
			     : "rax", "rcx", "r11", "rdi", "rsi", "rdx", "xmm8", "memory");
		if (out != value) {	/* _exit: the other thread must not wait for a turn */
			fprintf(stderr, "round %d: xmm8 held %#lx, came back %#lx\n", i, value, out);
			_exit(1);
		}
		if (last_holder != value) {
			last_holder = value;
			alternations++;
		}
	}
	return 0;
}

static int a_to_b[2], b_to_a[2];

static void *thread_main(void *arg)
{
	return (void *)(long)hold((unsigned long)arg, a_to_b[0], b_to_a[1]);
}

int main(void)
{
	pthread_t other;
	void *other_rc;
	int status, rc;
	pid_t child;

	signal(SIGUSR1, on_usr1);
	child = fork();
	if (child == 0) {
		int self[2];

		if (pipe(self))
			_exit(2);
		_exit(hold(0x1111222233334444UL, self[0], self[1]));
	}
	if (pipe(a_to_b) || pipe(b_to_a))
		return 2;
	if (pthread_create(&other, NULL, thread_main, (void *)0x5555666677778888UL))
		return 2;
	rc = hold(0x9999aaaabbbbccccUL, b_to_a[0], a_to_b[1]);
	pthread_join(other, &other_rc);
	waitpid(child, &status, 0);
	if (rc || other_rc || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "main %d, thread %ld, child %#x\n", rc, (long)other_rc, status);
		return 1;
	}
	if (alternations < ROUNDS) {		/* the two threads must have taken turns */
		fprintf(stderr, "the threads took %lu turns in %d rounds: nothing was tested\n",
			alternations, ROUNDS);
		return 1;
	}
	printf("ok\n");
	return 0;
}
