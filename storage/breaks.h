/*
 * breaks.h - switches that disable one protocol safeguard each, for the
 * simulator to prove it can fail (`mrtx-sim --break NAME`).
 *
 * All off (0) in every normal run: nothing in the library sets them, and
 * each costs one relaxed load where it is tested.  A run with one on is
 * expected to break an invariant the simulator checks; it never touches a
 * store that matters.
 *
 *   name        safeguard switched off                      where
 *   reads       commit-time validation of the rows read     txn/validate.c
 *   ranges      commit-time validation of scanned ranges    txn/validate.c,
 *                                                           txn/commit_atomic.c
 *   primary     recovery reading the primary to decide a    recovery/recovery.c
 *               secondary (it is rolled back instead)
 *   point       the commit point's guard (the primary still commit_two_phase.c
 *               holds this transaction's prewrite)
 *   snapshot    a snapshot's fresh timestamp reservation    txn/snapread.c
 *               (the handle's last known value instead)
 */
#ifndef MRTX_BREAKS_H
#define MRTX_BREAKS_H

#include <stdatomic.h>

enum {
	MRTX_BREAK_READS = 1u << 0,
	MRTX_BREAK_RANGES = 1u << 1,
	MRTX_BREAK_PRIMARY = 1u << 2,
	MRTX_BREAK_POINT = 1u << 3,
	MRTX_BREAK_SNAPSHOT = 1u << 4,
};

extern _Atomic unsigned mrtx__breaks;

/* Is safeguard b switched off? */
static inline int mrtx__broken(unsigned b)
{
	return (atomic_load_explicit(&mrtx__breaks, memory_order_relaxed) & b) != 0;
}

/* The switch called name ("reads", ...), or 0 when there is none. */
unsigned mrtx__break_of(const char *name);

#endif
