/*
 * lockio.h - the lock family through the storage seam: decode with the
 * store binding checked, and build the records each transition writes.
 */
#ifndef MRTX_LOCKIO_H
#define MRTX_LOCKIO_H

#include "lock.h"


/* Decode a lock read from st; a record of another store is MRTX_ECORRUPT. */
int lockio_decode(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes in,
                  mrtx_arena *a, lock_rec *out);
/* lock_peek with the store binding checked: a record whose store tag is not
 * st's (copied from another store) is MRTX_ECORRUPT. */
int lockio_peek(store *st, const store_table *t, mrtx_bytes in, uint8_t *state,
                uint8_t txn[LOCK_TXNID_SIZE]);
/* Encode STABLE(txn, commit_ts) for st. */
int lockio_stable(store *st, const uint8_t txn[LOCK_TXNID_SIZE], uint64_t commit_ts,
                  mrtx_arena *a, mrtx_bytes *out);
/* Set op's new lock to what aborting `r` restores (prev STABLE or absent). */
int lockio_restore_prev(store *st, const lock_rec *r, mrtx_arena *a, store_op *op);
/*
 * store_write_rows for lock transitions: every protocol write goes through
 * here.  Debug builds (MRTX_DEBUG) decode each op's expected and new lock
 * and assert that the change is an arrow of lock.h's state machine.
 */
int lockio_write_rows(store *st, store_op *ops, size_t n);
/* store_write_atomic, the same way (ops with check_only take no lock). */
int lockio_write_atomic(store *st, store_op *ops, size_t n, store_rcheck *checks,
                        size_t nchecks, int *applied);
/* Resolve a lock_ref's table (MRTX_ENOTABLE if the lock names a missing
 * table: dropped, or a damaged record; callers decide which). */
int lockio_ref_table(store *st, const lock_ref *ref, const store_table **out);

#endif
