/*
 * recovery.h - deciding and carrying out a stale transaction's fate
 * (DESIGN §6): roll forward, roll back, fencing, owner liveness, and the
 * sweep behind `mrtx recover`.
 */
#ifndef MRTX_RECOVERY_H
#define MRTX_RECOVERY_H

#include "../lockcf/lockio.h"

typedef enum {
	RECOVER_NONE = 0,     /* nothing to do (lock already gone or STABLE) */
	RECOVER_FORWARD,      /* committed: rolled forward */
	RECOVER_BACK,         /* aborted (or abandoned): rolled back */
	RECOVER_LIVE,         /* owner alive and lock not expired: left alone */
	RECOVER_ORPHAN        /* secondary whose primary never held it: fenced + rolled back */
} recover_decision;

typedef struct recover_opts {
	uint32_t wait_ms; /* how long to wait for a live lock before MRTX_ELOCKED */
	int force;        /* treat live locks as abandoned (operator's --force) */
	int dry_run;      /* decide only; write nothing */
} recover_opts;

/*
 * Resolve the non-STABLE lock `lock` met on (t, row).  Returns 0 when the
 * row no longer holds that lock (the caller re-reads), MRTX_ELOCKED when its
 * owner is alive and unexpired after waiting up to wait_ms, or an error.
 * *decision (may be NULL) says what was done.  On a read-only store nothing
 * is written: a lock that needs a write to settle is waited for like a live
 * one (up to wait_ms, then MRTX_ELOCKED) unless o->dry_run.
 */
int recover_resolve(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                    const recover_opts *o, recover_decision *decision);

/*
 * A fence that settling wrote (an orphan's primary, recovery.c
 * resolve_orphan): row (t, row) held lock `was` (has_was 0: no record) and
 * now holds `now`, a STABLE record of a fresh txn id, its cells untouched.
 * The write was conditional on `was`, so a reader that saw `was` there and
 * finds `now` has seen no commit of the row in between.  The bytes live
 * only for the call.
 */
typedef void (*recover_fence_fn)(void *arg, const store_table *t, mrtx_bytes row,
                                 int has_was, mrtx_bytes was, mrtx_bytes now);

/* recover_resolve, telling fn (with arg) of every fence it writes. */
int recover_resolve_fenced(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                           const recover_opts *o, recover_decision *decision,
                           recover_fence_fn fn, void *arg);

/*
 * A transaction settled (decision FORWARD, BACK or ORPHAN; in a dry run,
 * decided) on the way to the lock recover_resolve_counted was asked
 * about: the holder of an orphan's primary, settled first.  txn lives only
 * for the call.
 */
typedef void (*recover_settled_fn)(void *arg, const uint8_t txn[LOCK_TXNID_SIZE],
                                   recover_decision decision);

/* recover_resolve_fenced, also telling settled (with settled_arg) of each
 * transaction settled on the way (the sweep counts them). */
int recover_resolve_counted(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                            const recover_opts *o, recover_decision *decision,
                            recover_fence_fn fn, void *arg, recover_settled_fn settled,
                            void *settled_arg);

typedef struct recover_stats {
	unsigned long locks_seen;   /* non-STABLE locks met */
	unsigned long forwarded;    /* transactions rolled forward */
	unsigned long rolled_back;  /* transactions rolled back (incl. orphans) */
	unsigned long skipped_live; /* transactions left because their owner is alive */
	unsigned long errors;
	unsigned long fenced;       /* clients of dead owners blocklisted first (RADOS) */
	unsigned long fence_denied; /* ... that the store's key may not blocklist */
} recover_stats;

typedef void (*recover_progress_fn)(const recover_stats *s, void *payload);

/* Resolve every non-STABLE lock of every table (the `mrtx recover` tool).
 * MRTX_EREADONLY on a read-only store unless o->dry_run. */
int recover_sweep(store *st, const recover_opts *o, recover_stats *stats,
                  recover_progress_fn progress, void *payload);

#endif
