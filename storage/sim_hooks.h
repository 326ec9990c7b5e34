/*
 * sim_hooks.h - the seam through which a deterministic simulator (tools/sim/)
 * owns the library's clocks, sleeps and random numbers.
 *
 * While mrtx__sim is NULL (always, outside the simulator) every call below
 * behaves as before: the real clocks, nanosleep, arc4random, RAND_bytes;
 * the only cost is one load and a predictable branch.  The simulator sets
 * it once, before it opens a handle, and clears it after closing the last
 * (and after its threads are joined): calls in flight never see it change.
 * It is atomic so that reading it races with nothing; each call loads it
 * once (mrtx__sim_on).
 */
#ifndef MRTX_SIM_HOOKS_H
#define MRTX_SIM_HOOKS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mrtx__sim_hooks {
	uint64_t (*now_us)(void);              /* the wall clock (mrtx__now_us) */
	uint64_t (*mono_us)(void);             /* the monotonic clock */
	void (*sleep_us)(uint64_t us);         /* a sleep: the simulator runs others */
	uint32_t (*rand_below)(uint32_t n);    /* uniform in [0, n), n > 0 */
	void (*random_bytes)(void *out, size_t n); /* ids and nonces */
	/* A handle's own threads, the heartbeat and the tail (txn/sim_sync.h),
	 * and their waiters on hb.cv: the simulator runs them as tasks of the
	 * client that spawned them, one participant at a time. */
	int (*spawn)(pthread_t *th, void *(*fn)(void *), void *arg); /* 0 or an errno */
	void (*join)(pthread_t th);
	/* mu held on entry and on return, released meanwhile */
	void (*cond_wait)(pthread_cond_t *cv, pthread_mutex_t *mu);
	/* until a broadcast or the monotonic clock (mono_us) reaches deadline;
	 * 0 or ETIMEDOUT */
	int (*cond_timedwait)(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_us);
	void (*cond_broadcast)(pthread_cond_t *cv);
} mrtx__sim_hooks;

extern _Atomic(const mrtx__sim_hooks *) mrtx__sim;

/* The hooks, or NULL outside a simulation (one relaxed load: the pointer
 * is set before any thread that reads it starts). */
static inline const mrtx__sim_hooks *mrtx__sim_on(void)
{
	return atomic_load_explicit(&mrtx__sim, memory_order_relaxed);
}

/* Fill out[0..n) from the simulator's random_bytes: 1, or 0 when no
 * simulator runs (the caller then draws as it always has). */
int mrtx__sim_random(void *out, size_t n);

#endif
