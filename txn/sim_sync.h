/*
 * sim_sync.h - the thread calls of the heartbeat and the tail (heartbeat.c,
 * tail.c) and of their waiters on hb.cv, routed to the simulator's hooks
 * (storage/sim_hooks.h) while one runs, else straight to pthreads.
 */
#ifndef MRTX_SIM_SYNC_H
#define MRTX_SIM_SYNC_H

#include "storage/common.h"
#include "storage/sim_hooks.h"

#include <pthread.h>
#include <time.h>

static inline int sync_spawn(pthread_t *th, void *(*fn)(void *), void *arg)
{
	if (MRTX_UNLIKELY(mrtx__sim_on()))
		return mrtx__sim_on()->spawn(th, fn, arg);
	return pthread_create(th, NULL, fn, arg);
}

static inline void sync_join(pthread_t th)
{
	if (MRTX_UNLIKELY(mrtx__sim_on()))
		mrtx__sim_on()->join(th);
	else
		pthread_join(th, NULL);
}

static inline void sync_wait(pthread_cond_t *cv, pthread_mutex_t *mu)
{
	if (MRTX_UNLIKELY(mrtx__sim_on()))
		mrtx__sim_on()->cond_wait(cv, mu);
	else
		pthread_cond_wait(cv, mu);
}

/* Wait at most ms milliseconds (cv runs on CLOCK_MONOTONIC). */
static inline void sync_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t ms)
{
	struct timespec ts;
	uint64_t ns;

	if (MRTX_UNLIKELY(mrtx__sim_on())) {
		(void)mrtx__sim_on()->cond_timedwait(cv, mu, mrtx__mono_us() + ms * 1000u);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns = (uint64_t)ts.tv_nsec + ms * 1000000u;
	ts.tv_sec += (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	pthread_cond_timedwait(cv, mu, &ts);
}

static inline void sync_broadcast(pthread_cond_t *cv)
{
	if (MRTX_UNLIKELY(mrtx__sim_on()))
		mrtx__sim_on()->cond_broadcast(cv);
	else
		pthread_cond_broadcast(cv);
}

#endif
