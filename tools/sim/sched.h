/*
 * sched.h - the deterministic scheduler of `mrtx-sim`.
 *
 * Clients are threads, but exactly one runs at a time: it holds the baton
 * until its next store call (a simrados submit or wait) or sleep, where it
 * yields and a PRNG seeded from the run's seed picks who runs next.  Time
 * is virtual: a global clock the scheduler advances (a store call costs a
 * few hundred simulated microseconds; a sleep parks the client until the
 * clock reaches its wake time), read by each client through its own skew.
 * Faults are drawn from the same PRNG at each store call.  Everything the
 * scheduler decides is written to a trace whose hash names the run: the
 * same seed gives the same trace, byte for byte.
 *
 * One simulation at a time per process (the hooks it installs are global).
 */
#ifndef MRTX_SIM_SCHED_H
#define MRTX_SIM_SCHED_H

#include <stdint.h>
#include <stdio.h>

/* Fault kinds, counted per run. */
enum {
	SIM_F_LOSE,    /* a write applied, its reply lost (-ETIMEDOUT) */
	SIM_F_DROP,    /* a write never applied (-ETIMEDOUT) */
	SIM_F_HOLD,    /* a write held in flight, released later in any order */
	SIM_F_LATE,    /* a held write applied after its client gave up on it */
	SIM_F_DIE,     /* a client dead at a store call */
	SIM_F_SKEW,    /* a client whose wall clock is off */
	SIM_F_ORPHAN,  /* a write held and never released (its client times out
	                  waiting; it arrives only if a later write of its client
	                  to the same object pushes it through) */
	SIM_F_STALL,   /* a client paused before a store call for longer than a
	                  lock's time to live (a stopped process, a long GC) */
	SIM_F_CLOCK,   /* a client's wall clock steps back (up to 0.5 s) or
	                  freezes (up to 2 s of virtual time) */
	SIM_F_RHOLD,   /* a read held in flight, released later in any order:
	                  it sees the store as it is then (a read sent before
	                  another client's write can return that write) */
	SIM_F_RDROP,   /* a read never answered: its client times out waiting */
	SIM_NFAULTS
};

extern const char *const sim_fault_names[SIM_NFAULTS];

/* The rate of each fault per store call (a write, for lose/drop/hold/
 * orphan; a read, for rhold/rdrop), in [0, 1]; skew_ms bounds a client's clock offset (drawn in ±skew_ms once
 * per client, counted when nonzero); release the chance, per scheduling
 * step, that one held op is released. */
typedef struct sim_faults {
	double rate[SIM_NFAULTS];
	double release;
	uint32_t skew_ms;
} sim_faults;

/* Start a run: seed the PRNG, draw the clients' skews, install the hooks
 * (the library's clocks, sleeps and random draws; the cluster's submit
 * and wait).  trace (may be NULL) receives every trace line. */
void sim_start(uint64_t seed, const sim_faults *f, int nclients, FILE *trace);

/* Run body(client, arg) in nclients threads, one at a time, until each has
 * returned or died.  The caller's thread runs nothing meanwhile. */
void sim_run(void (*body)(int client, void *arg), void *arg);

/* After sim_run: release the held writes of live clients (they arrive,
 * late) and drop those of dead ones; advance the clock by us. */
void sim_settle(uint64_t us);

/* 1 in a client's thread (not the caller of sim_start): a handle opened
 * there may run its heartbeat and tail as tasks of the client. */
int sim_in_client(void);

/* In a client: 1 once it has died (it must stop, touching nothing). */
int sim_dead(void);

/* End the run: let the dead clients' threads wind down (every store call
 * of theirs now fails without effect, unrecorded), join them, remove the
 * hooks.  Returns the trace's hash. */
uint64_t sim_finish(void);

/* Add one line to the trace (and its hash): the virtual time and the
 * calling client are prefixed.  Ignored in a dead client. */
void sim_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Faults injected so far in this run, of one kind. */
unsigned long sim_faults_seen(int kind);

/* A draw from the run's PRNG, uniform in [0, n), n > 0: for the workload's
 * choices, in the running client or while none runs. */
uint64_t sim_rand(uint64_t n);

/* The virtual clock, microseconds since the run began. */
uint64_t sim_now(void);

#endif
