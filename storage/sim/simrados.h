/*
 * simrados.h - control of the simulated RADOS cluster (storage/sim/simrados.c).
 *
 * simrados.c and the files beside it (simrados_int.h lists them) define
 * the librados C functions mrtx's RADOS backend calls, over an in-memory
 * cluster, so that storage/rados/ runs unmodified inside one process (the
 * mrtx_sim_internal library links them instead of librados).
 * This header is what a test or a scheduler uses to set the cluster up and
 * to decide the fate of each operation.  Nothing here reads a clock or draws
 * a random number: given the same calls in the same order, the cluster
 * reaches the same state.
 *
 * Every function here is thread-safe (one lock guards the whole cluster);
 * hooks are called without that lock held, so a hook may call
 * simr_release.
 */
#ifndef MRTX_SIMRADOS_H
#define MRTX_SIMRADOS_H

#include <stddef.h>
#include <stdint.h>

/* Drop the whole simulated cluster: pools, objects, held operations (their
 * completions, if still waited on, return -ETIMEDOUT) and the hook.
 * Operation and client numbers start again from 1.  Handles (rados_t,
 * ioctxs) made before stay valid to release; an ioctx whose pool is gone
 * fails every operation with -ENOENT. */
void simr_reset(void);

/* Create pool `name`.  Returns 0, -EEXIST, -EINVAL (NULL or empty name) or
 * -ENOMEM. */
int simr_pool_create(const char *name);

/* What becomes of one operation, chosen by the hook at submission. */
typedef enum simr_fate {
	SIMR_APPLY = 0,    /* applied now; the completion returns its result */
	SIMR_LOSE_REPLY,   /* applied now; the completion returns -ETIMEDOUT */
	SIMR_DROP,         /* never applied; the completion returns -ETIMEDOUT */
	SIMR_HOLD          /* queued in its client's queue until simr_release (a
	                      read: until then, or until its caller stops
	                      waiting for it, when it is dropped) */
} simr_fate;

/* An operation as the hook sees it; valid during the hook call only. */
typedef struct simr_op_info {
	uint64_t id;       /* the cluster's operation number, 1, 2, ... since simr_reset */
	uint64_t client;   /* the rados_t's number, 1, 2, ... since simr_reset */
	const char *pool;
	const char *oid;
	int write;         /* 1: a write op (or rados_remove); 0: a read op */
	int queued;        /* at submit: 1 when an earlier op of the same client
	                      on the same object is held, so this one is held
	                      behind it whatever the hook returns (its fate
	                      then applies when it reaches the head) */
} simr_op_info;

/*
 * The scheduler's hook.  submit is called for every operation submitted
 * (rados_aio_write_op_operate, rados_aio_read_op_operate, rados_remove) and
 * returns its fate; a read's SIMR_LOSE_REPLY means SIMR_DROP, and a held
 * read sees the objects as they are when it is released.  wait is called
 * when a caller waits for the completion of an operation still held; when
 * it returns and the op is still held, the wait returns -ETIMEDOUT (as a
 * Ceph client whose rados_osd_op_timeout expired) while the op stays
 * queued: a later simr_release may still apply it, as an OSD may apply an
 * op whose client gave up (a read is dropped then: its outputs are gone).  Either function may be NULL (submit NULL:
 * SIMR_APPLY; wait NULL: nothing).  Without a hook every op applies
 * synchronously at submission.
 */
typedef struct simr_hook {
	simr_fate (*submit)(void *arg, const simr_op_info *op);
	void (*wait)(void *arg, const simr_op_info *op);
	void *arg;
} simr_hook;

/* Install *hook (copied), or none with NULL. */
void simr_set_hook(const simr_hook *hook);

/*
 * Release held operation `id` with `fate` (SIMR_APPLY, SIMR_LOSE_REPLY or
 * SIMR_DROP; SIMR_HOLD is -EINVAL).  Held ops of one client on one object
 * leave in submission order: the ones ahead of `id` are released first,
 * each with the fate its hook chose at submission (SIMR_APPLY if that was
 * SIMR_HOLD); after it, the ones behind whose chosen fate was not SIMR_HOLD
 * follow.  Ops of different clients, or on different objects, leave in any
 * order the scheduler picks.  Returns 0, or -ENOENT when no op `id` is held.
 */
int simr_release(uint64_t id, simr_fate fate);

/* The ids of the held ops, oldest first, into ids[0..max); returns how
 * many are held (which may exceed max). */
size_t simr_held(uint64_t *ids, size_t max);

#endif
