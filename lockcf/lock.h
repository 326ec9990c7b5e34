/*
 * lock.h - the lock record (DESIGN §4): one per row, in the table's lock
 * family, doubling as the row's version.
 *
 * State machine (each arrow is one conditional single-row write whose
 * condition is the exact bytes last read; where it is performed):
 *
 *     (absent)/STABLE --prewrite--> PREWRITTEN           txn/commit_two_phase.c  step 1
 *     PREWRITTEN --heartbeat----> PREWRITTEN (primary;   txn/heartbeat.c  refresh
 *                                 a later expiry only)
 *     PREWRITTEN --commit point--> COMMITTED  (primary)  txn/commit_two_phase.c  step 3
 *     PREWRITTEN --abort--------> ABORTED    (primary)   recovery/recovery.c  abort_primary,
 *                                                        recovery/sweep.c  batch_abort
 *     PREWRITTEN --apply/drop---> STABLE     (secondary) txn/tail.c (step 4), recovery/
 *     PREWRITTEN --rollback-----> previous STABLE/absent txn/commit_two_phase.c  commit_rollback
 *     COMMITTED  --release------> STABLE     (primary)   txn/tail.c (step 5), recovery/
 *     ABORTED    --release------> STABLE     (primary)   recovery/
 *     STABLE     --fence--------> STABLE'                recovery/recovery.c  resolve_orphan
 *     (absent)/STABLE --one-row commit--> STABLE         txn/commit_one_row.c
 *     (absent)/STABLE --one-phase commit-> STABLE        txn/commit_atomic.c
 *
 * lock_transition_ok() encodes the arrows; debug builds assert it.
 *
 * Encoding (little-endian, version 1):
 *   u8 version | u8 state | u8 flags | u8[8] store tag | u8[16] txn id | u64 commit_ts
 *   STABLE ends here.  Otherwise:
 *   u64 expiry_ms | u8[16] owner boot id | u32 owner pid | u64 owner start time
 *   u8[16] prev txn id | u64 prev commit_ts        (the STABLE lock to restore on abort;
 *                                                   flag LOCK_F_PREV_ABSENT: there was none;
 *                                                   an all-zero id: it was not read -- a
 *                                                   blind prewrite, txn/commit_plan.c
 *                                                   plan_blind -- and prev
 *                                                   commit_ts bounds its commit_ts from
 *                                                   above; restored as STABLE(zero id, it))
 *   if flag LOCK_F_SECONDARY: u16 table len, table, u16 row len, row   (primary pointer)
 *   else: u32 count, count x (u16 table len, table, u16 row len, row)  (secondaries)
 *   u32 redo count, count x (u8 kind, u8 fid, u16 qual len, qual, u32 value len, value)
 * Every length is bounds-checked on decode; anything malformed or trailing
 * bytes is MRTX_ECORRUPT.
 */
#ifndef MRTX_LOCK_H
#define MRTX_LOCK_H

#include "../storage/store.h"

#define LOCK_VERSION 1
#define LOCK_TXNID_SIZE 16
#define LOCK_TAG_SIZE 8
/* Where a record's commit_ts lies (u64 LE), in every state: a store that
 * stamps a commit point writes it there (store_op.stamp_off). */
#define LOCK_COMMIT_TS_OFF (3u + LOCK_TAG_SIZE + LOCK_TXNID_SIZE)

typedef enum {
	LOCK_STABLE = 0,
	LOCK_PREWRITTEN = 1,
	LOCK_COMMITTED = 2,
	LOCK_ABORTED = 3
} lock_state;

#define LOCK_F_SECONDARY 0x01u
#define LOCK_F_PREV_ABSENT 0x02u

typedef struct lock_owner {
	uint8_t boot_id[16];
	uint32_t pid;
	uint64_t start_time; /* /proc/<pid>/stat field 22, clock ticks since boot */
} lock_owner;

typedef struct lock_ref {
	mrtx_bytes table; /* table name, not NUL-terminated */
	mrtx_bytes row;
} lock_ref;

typedef struct lock_rec {
	uint8_t state;
	uint8_t flags;
	uint8_t tag[LOCK_TAG_SIZE];
	uint8_t txn[LOCK_TXNID_SIZE];
	uint64_t commit_ts;
	/* non-STABLE only: */
	uint64_t expiry_ms;
	lock_owner owner;
	uint8_t prev_txn[LOCK_TXNID_SIZE];
	uint64_t prev_commit_ts;
	lock_ref primary;        /* if flags & LOCK_F_SECONDARY */
	lock_ref *secondaries;   /* otherwise */
	size_t nsecondaries;
	store_mut *redo;
	size_t nredo;
} lock_rec;

/* Encoded size of r; 0 if a field is over its limit (MRTX_ETOOBIG recorded). */
size_t lock_encoded_size(const lock_rec *r);
/* Encode r into buf (lock_encoded_size bytes, allocated in a). */
int lock_encode(const lock_rec *r, mrtx_arena *a, mrtx_bytes *out);
/*
 * Decode bytes into out.  Variable parts (secondaries, redo) are allocated
 * in a and point into `in` (which must outlive out).  MRTX_ECORRUPT for any
 * malformed input, with a message naming the field.
 */
int lock_decode(lock_rec *out, mrtx_bytes in, mrtx_arena *a);
/* Is r a record of transaction txn? */
static inline int lock_of_txn(const lock_rec *r, const uint8_t txn[LOCK_TXNID_SIZE])
{
	return memcmp(r->txn, txn, LOCK_TXNID_SIZE) == 0;
}
/* Cheap peek at state and txn id without full decode (MRTX_ECORRUPT). */
int lock_peek(mrtx_bytes in, uint8_t *state, uint8_t txn[LOCK_TXNID_SIZE]);
/* 1 if in is a well-formed STABLE record (nothing follows the head) with
 * store tag `tag` and commit_ts < ts; else 0.  Sets no error message. */
int lock_is_stable_before(mrtx_bytes in, const uint8_t tag[LOCK_TAG_SIZE], uint64_t ts);
/* Is in a STABLE record?  Then its commit_ts in *cts.  Sets no error message. */
int lock_stable_ts(mrtx_bytes in, uint64_t *cts);

/*
 * Order keys (store_opts.lock_order, store_cond.below), STORE_ORDER_SIZE
 * bytes, each below 0x80: a STABLE record with no flags sorts as 0x00 and
 * its commit_ts big-endian in ten 7-bit digits, every other record as
 * 0x01 and zeros.  (Below 0x80 because RADOS compares omap values as
 * signed chars: 0x80 sorts before 0x7f there.)  So "no record, or a
 * key below lock_order_below(ts)" is "no record, or a STABLE one committed
 * before ts" -- lock_is_stable_before without its tag test (a record of
 * another store's tag is judged by commit_ts alone, as the reading path
 * judges it) -- a condition a store checks by comparing bytes.
 */
void lock_order_key(const void *lock, size_t size, uint8_t *out);
void lock_order_below(uint64_t ts, uint8_t *out);

/* Does r (not STABLE) restore a lock it never read (a blind prewrite: the
 * zero prev txn id, prev commit_ts an upper bound)? */
int lock_prev_unread(const lock_rec *r);

/* The STABLE record that a PREWRITTEN/ABORTED lock restores on abort. */
void lock_prev_stable(const lock_rec *r, lock_rec *out);

int lock_transition_ok(int from_absent, uint8_t from, uint8_t to);
/* Are a and b the same non-STABLE record but for the expiry (a heartbeat's
 * refresh, txn/heartbeat.h)?  Identical bytes are too. */
int lock_same_but_expiry(mrtx_bytes a, mrtx_bytes b);
/* The expiry field of an encoded non-STABLE record, replaced in place
 * (buf holds such a record: at least lock_expiry_end() bytes). */
void lock_set_expiry(uint8_t *buf, uint64_t expiry_ms);
size_t lock_expiry_end(void);
const char *lock_state_name(uint8_t state);

/* A txn id unique across processes and time: a per-process random salt
 * (OpenSSL RAND_bytes, drawn once per process) mixed with a counter. */
int lock_new_txnid(uint8_t out[LOCK_TXNID_SIZE]);
/* This process as a lock owner (cached). */
const lock_owner *lock_self_owner(void);
/*
 * Is owner provably dead?  1 only if it ran on this boot of this host and
 * its pid is gone, a zombie, or now a different process (start time).
 * 0 when alive or unknown (another host or boot).
 */
int lock_owner_dead(const lock_owner *o);
/* An owner as LOCK_OWNER_BYTES bytes (boot id, pid BE, start time BE: the
 * store's STORE_OWNER_SIZE, which names it to fencing) and back. */
#define LOCK_OWNER_BYTES 28u
void lock_owner_put(const lock_owner *o, uint8_t out[LOCK_OWNER_BYTES]);
void lock_owner_get(const uint8_t in[LOCK_OWNER_BYTES], lock_owner *o);

/* hex of a txn id into out[33] */
void lock_txnid_hex(const uint8_t txn[LOCK_TXNID_SIZE], char out[33]);

#endif
