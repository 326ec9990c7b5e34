/*
 * txn_int.h - transaction internals shared by the txn/ sources.
 *
 * A transaction buffers mutations per row in a red-black tree of rows
 * (ordered by table id, then row bytes), each holding a red-black tree of
 * cell mutations (ordered by family id, then qualifier).  Rows the
 * transaction read carry the lock bytes it saw, which commit validates.
 * Everything a transaction allocates lives in its arena and dies with it.
 */
#ifndef MRTX_TXN_INT_H
#define MRTX_TXN_INT_H

#include <bsd/sys/tree.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "../recovery/recovery.h"

/* The store's index declarations as one process saw them at generation
 * gen (store_meta_list); immutable, shared by reference (index.c). */
typedef struct idx_snap idx_snap;

/* heartbeat.c: the commits whose primary lock the handle's thread keeps
 * unexpired (heartbeat.h), and the thread itself, which runs the tails too */
typedef struct hb_state {
	pthread_mutex_t mu;
	pthread_cond_t cv;     /* the thread's wake-up; a refresh finished */
	pthread_t thread;
	int running, quit;
	pid_t pid;             /* the process the thread runs in */
	int listed;            /* on heartbeat.c's list of handles (for fork) */
	struct mrtx_db *next_db;
	uint64_t wake_ms;      /* when the thread next wakes (UINT64_MAX: idle) */
	struct hb_entry *head;
} hb_state;

/* tail.c: commits past their point whose last two phases a second thread
 * runs (tail.h), started and stopped with the heartbeat's (under hb.mu but
 * buf/room, the thread's own) */
typedef struct tail_state {
	pthread_t thread;
	int running;
	struct tail_job *head, **last; /* queued, oldest first */
	size_t len;
	struct tail_job *rel;          /* secondaries applied; the primary's
	                                * release rides the next pass */
	uint64_t rel_ms;               /* when rel was last empty */
	uint64_t last_ms, gap_ms;      /* the last tail queued; the mean gap
	                                * between tails (tail_due_ms) */
	struct tail_job *busy[128];    /* the pass running (2 TAIL_BATCH) */
	size_t nbusy;
	int hurry;                     /* callers waiting on the queue: no lingering */
	_Atomic size_t pending;        /* queued + running: 0 skips the lock */
	struct tail_trim *trims, **trims_last; /* trims queued (tail_trim) */
	size_t ntrims;
	_Atomic size_t trims_pending;  /* trims queued + running */
	struct store_op *buf;
	size_t room;
} tail_state;

/* snapread.c: the live snapshots of this handle's running transactions
 * (RADOS), when the oldest was last published in the store's registry,
 * and the registry's oldest as last read (and when); a reservation under
 * way stands in list as its floor, pending */
typedef struct snap_registry {
	pthread_mutex_t mu;
	struct txn_snap { uint64_t ts; int pending; } *list;
	size_t n, cap;
	_Atomic uint64_t pub_us, reg_oldest, reg_at_us;
} snap_registry;

struct mrtx_db {
	store *st;
	uint64_t serial;       /* unique among the process's handles, ever (mrtx_open):
	                          a reused transaction object keeps the table it
	                          named last only for the handle of that serial */
	int two_phase;         /* the two_phase knob (txn_test.h): never commit in one phase */
	int no_threads;        /* the no_threads knob (txn_test.h): no heartbeat, inline tails */
	uint32_t lock_ttl_ms;
	uint32_t lock_wait_ms;
	pthread_mutex_t idx_mu;
	idx_snap *idx;         /* cached declarations, or NULL (index.c) */
	hb_state hb;
	tail_state tail;
	snap_registry snaps;
	_Atomic unsigned trim_count; /* commits with writes (txn.c trim_written) */
};

/* One buffered cell mutation; qualifier and value stored inline. */
typedef struct bcell {
	RB_ENTRY(bcell) link;
	uint32_t qlen, vlen;
	uint8_t fid;
	uint8_t kind; /* STORE_MUT_PUT or STORE_MUT_DEL_CELL */
	uint8_t data[];
} bcell;

RB_HEAD(bcell_tree, bcell);

typedef struct trow {
	RB_ENTRY(trow) link;
	const store_table *t;
	mrtx_bytes row;
	struct bcell_tree cells;
	bcell *cmax;             /* the greatest cell of cells, NULL when empty:
	                            cells put in key order append without a search */
	size_t ncells;
	unsigned read : 1;       /* its lock was observed: validate at commit */
	unsigned lock_known : 1; /* lock/has_lock below are what we saw */
	unsigned has_lock : 1;
	unsigned del_row : 1;    /* delete every stored cell first */
	unsigned mutated : 1;
	unsigned lock_lazy : 1;  /* read through the view, which held no unsettled
	                            lock record, without reading the row's lock
	                            (store_row.lock_lazy): lock_known is 0, and
	                            txn_fetch_lazy reads it from the view */
	unsigned stale : 1;      /* a live snapshot's read found it committed
	                            above the snapshot (txn->snap_stale): what
	                            it held then was read, whether it was a row
	                            then is not known, and no later look at it
	                            contradicts the first */
	mrtx_bytes lock;
	uint64_t start_ts;       /* the transaction's start_ts at this row's first
	                            write: a blind write conflicts with a commit
	                            stamped above it (DESIGN §9.1, I15) */
	unsigned started : 1;
	/* commit scratch */
	mrtx_bytes prewrite;     /* our PREWRITTEN bytes once written */
} trow;

RB_HEAD(trow_tree, trow);

/* A fence this transaction's own settling wrote (recover_resolve_fenced):
 * the row's lock went from was (had 0: no record) to now, its cells
 * untouched.  Kept in the order written, for txn_fences_apply. */
typedef struct txn_fence {
	struct txn_fence *next;
	const store_table *t;
	mrtx_bytes row, was, now;
	int had;
} txn_fence;

/* A scanned row range, validated at commit (phantoms). */
typedef struct scan_range {
	const store_table *t;
	mrtx_bytes start, end; /* the scan's bounds */
	int reverse;
	int exhausted;         /* read to the end of [start,end) */
	int any;               /* some row consumed */
	mrtx_bytes last;       /* last row consumed */
	/* Rows consumed but not yet in the transaction's row tree (scan.c,
	 * deferred observations), as runs of consecutive rows of the scan's
	 * batches (in the arena, untouched once consumed): each row's lock
	 * as the scan saw it. */
	struct scan_obs {
		const store_row *rows;
		size_t n;
	} *pend;
	size_t npend, cpend;
} scan_range;

#define TXN_ARENA0 3840 /* the object is 4 KiB */

struct mrtx_txn {
	mrtx_db *db;
	mrtx_arena arena;
	struct trow_tree rows;
	trow *last_row;        /* the row txn_row found last (rows are never removed) */
	size_t nmutated;
	uint8_t id[LOCK_TXNID_SIZE];
	uint32_t lock_ttl_ms;
	int doom;              /* nonzero: the transaction can never commit (the
	                          error that doomed it); every later call but
	                          commit/abort returns MRTX_EBADTXN, commit
	                          returns MRTX_CONFLICT for a conflict doom */
	scan_range **ranges;
	size_t nranges, cranges;
	struct mrtx_scanner *scanners; /* open ones, detached when the txn ends */
	idx_snap *idx;         /* index declarations, taken by the first write (index.c);
	                          commit makes its writes conditional on their
	                          generation (store_op.check_gen) */
	/* The table and family the last write or read named (resolve_args):
	 * a transaction usually names one table and family many times.  ct is
	 * NULL until then; cfid is ct's family cfam, valid while cfam != 0. */
	const store_table *ct;
	const char *cfam;      /* the family's name in ct (store-owned), or NULL */
	store_view *view;      /* the snapshot every read comes from (snapread.c) */
	uint64_t ct_serial;    /* the serial of the handle ct belongs to */
	uint64_t snap_ts;      /* the view's snapshot timestamp (store_view_ts; 0: none) */
	uint64_t commit_ts;    /* the commit's timestamp, once committed with writes */
	uint64_t start_ts;     /* the source's value at the first write (started):
	                          every row's write-write window starts here */
	uint64_t at;           /* mrtx_begin_at's timestamp: every read is of the
	                          versions at or below it (0: the view as it is) */
	uint8_t cfid;
	uint8_t no_view;       /* the store has no views (RADOS): reads go without */
	uint8_t view_used;     /* a read has returned from view */
	uint8_t must_validate; /* a read met a lock pending in view: a read-only
	                          commit validates as without views */
	uint8_t snap_live;     /* a store without views that keeps versions
	                          (RADOS, format 4): every read is at snap_ts,
	                          taken from the store's oracle by the first
	                          read (snapread.c) */
	uint8_t snap_stale;    /* ... and one met a row committed above snap_ts:
	                          a commit with writes fails (MRTX_CONFLICT) */
	uint8_t lazy;          /* some row's lock is not read yet (trow.lock_lazy) */
	uint8_t started;       /* start_ts is taken (txn.c note_first_write) */
	txn_fence *fences;     /* fences its settling wrote, oldest first */
	/* rows' smallest and largest entries (NULL while empty; rows are never
	 * removed): a scan adds its rows in order past one end, found there
	 * without a descent (txn_row_new, txn_rows_nfind) */
	trow *rows_min, *rows_max;
	scan_range *pend;      /* the range whose observations wait (scan.c) */
	store_seen *seen;      /* what its snapshot reads saw of one-object
	                          commits (store_seen; RADOS; NULL until one) */
	uint8_t fences_lost;   /* a fence was not recorded (out of memory) */
	uint8_t head_pad[7];   /* the padding before arena0, named: a new field moves
	                          head_pad or arena0, which trips mrtx_begin's assertion */
	/* The arena's first chunk, so that a small transaction (a few rows,
	 * its commit's lock records and redo lists included) allocates
	 * nothing: the object itself is reused per thread (mrtx_begin).  Keep
	 * it last: mrtx_begin sets only the fields before it. */
	_Alignas(16) uint8_t arena0[TXN_ARENA0];
};

int bcell_cmp(const bcell *a, const bcell *b);
int trow_cmp(const trow *a, const trow *b);
/* RB_NFIND on txn->rows (the first row at or after key), without a
 * descent when key is at or past the largest row */
trow *txn_rows_nfind(mrtx_txn *txn, const trow *key);
RB_PROTOTYPE(bcell_tree, bcell, link, bcell_cmp)
RB_PROTOTYPE(trow_tree, trow, link, trow_cmp)

/* Find (create=0) or find-or-create the row entry. */
int txn_row(mrtx_txn *txn, const store_table *t, mrtx_bytes row, int create, trow **out);
/* Record that the store showed `lock` (or none) for row; CONFLICT (and doom)
 * if it differs from what this txn saw before.  lock must live in
 * txn->arena (reads put it there); it is kept, not copied. */
/* Put the observations a scan deferred into the row tree (scan.c): every
 * entry point that reads or writes the tree calls it first, but
 * mrtx_scan_next of the scan that deferred them and the commit of a
 * read-only snapshot, which validates nothing. */
int txn_scan_settle(mrtx_txn *txn);
int txn_observe(mrtx_txn *txn, const store_table *t, mrtx_bytes row, int has_lock,
                mrtx_bytes lock);
/* Observe a row read without its lock (store_row.lock_lazy): r is its
 * entry or NULL. */
int txn_observe_lazy(mrtx_txn *txn, trow *r, const store_table *t, mrtx_bytes row);
/* Read, from the view, the lock of every row observed without it (before
 * anything compares locks: validation, a commit). */
int txn_fetch_lazy(mrtx_txn *txn);
/* recover_resolve for a read of this transaction: a fence it writes is
 * remembered (txn->fences). */
int txn_resolve(mrtx_txn *txn, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                const recover_opts *o);
/* Carry every row's observation through the fences the transaction's own
 * settling wrote since (after txn_fetch_lazy, before anything compares
 * locks with the store): such a fence changed the lock, not the row. */
int txn_fences_apply(mrtx_txn *txn);
/* A live snapshot's read of a row (sr, read at snap_ts) found a version at
 * or below the snapshot newer than the row was when first observed: doom
 * the transaction (MRTX_CONFLICT); else 0. */
int txn_snap_late(mrtx_txn *txn, const store_table *t, const store_row *sr);
/* Point f at the transaction's store_seen (made on first use, on a store
 * with an oracle): MRTX_ENOMEM or 0. */
int txn_seen_use(mrtx_txn *txn, store_filter *f);
/* A snapshot read met half of an atomic commit (store_seen.late): doom
 * the transaction, MRTX_CONFLICT; else 0. */
int txn_seen_late(mrtx_txn *txn);
/*
 * A read at snapshot `at` (RADOS: the live one, or mrtx_begin_at's) met
 * sr's PREWRITTEN lock: push its primary above at (store_push) and read
 * past it (snapread.c).
 * 0: sr now shows the row as before the lock; 1: not pushed (no live
 * two-phase commit's PREWRITTEN lock, or its primary is decided: settle it
 * as before); MRTX_CONFLICT: a lock changed, read again; or an error.
 */
int txn_push_past(mrtx_txn *txn, const store_table *t, uint64_t at, store_row *sr);
/* Read a row resolving foreign locks (wait, recover); the result's lock is STABLE or absent. */
int txn_read_row(mrtx_txn *txn, const store_table *t, mrtx_bytes row,
                 const store_filter *f, store_row *out);
/* Reads from the transaction's view (snapread.c): as txn_read_row, but
 * every read of the transaction sees one snapshot of the store (on a store
 * without views, txn_read_row itself). */
int txn_read_row_snap(mrtx_txn *txn, const store_table *t, mrtx_bytes row,
                      const store_filter *f, store_row *out);
/* Decide a row the transaction's view returned (a scan's) whose lock is
 * not STABLE, as txn_read_row_snap does (never waits). */
int txn_snap_decide(mrtx_txn *txn, const store_table *t, const store_filter *f,
                    store_row *sr);
/* Scanner s reads the store as it is now, not the transaction's snapshot
 * (before its first mrtx_scan_next; the transaction must validate). */
void txn_scan_current(mrtx_scanner *s);
/* A live snapshot (snap_live) ends: the handle stops protecting it. */
void txn_snap_end(mrtx_txn *txn);
/* The highest safe point a collector of db's store may use now: at or below
 * every running snapshot this handle has or the store's registry lists
 * (read at most every store__trim_lag_us / 4, or now if fresh); UINT64_MAX:
 * none. */
uint64_t txn_safe_bound(mrtx_db *db, int fresh);
/* The transaction's view, opened if not yet (*out NULL: the store has none). */
int txn_view_get(mrtx_txn *txn, store_view **out);
/* Close the view (the transaction ends). */
void txn_view_close(mrtx_txn *txn);
/* Is row inside a range this txn has scanned (so "no lock" was observed)? */
int txn_in_scanned_range(const mrtx_txn *txn, const store_table *t, mrtx_bytes row);
/* Build the redo list of a buffered row (arena). */
int txn_row_redo(mrtx_txn *txn, const trow *r, store_mut **out, size_t *n);
/* Validate read-only rows and scanned ranges (commit step 2). */
int txn_validate(mrtx_txn *txn);
int txn_commit_run(mrtx_txn *txn);
/* Buffer a put (value) or cell delete (value NULL) / a row delete without
 * index maintenance: mrtx_put & co. minus the index hooks (index.c writes
 * index rows with these, so index writes never recurse). */
int txn_buffer_cell(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
                    mrtx_bytes qualifier, const mrtx_bytes *value);
int txn_buffer_delete_row(mrtx_txn *txn, const char *table, mrtx_bytes row);
void txn_free(mrtx_txn *txn);
/* Release the transaction's declarations (index.c). */
void idx_snap_release(idx_snap *s);
/* The generation of a transaction's declarations (s not NULL). */
uint64_t idx_snap_gen(const idx_snap *s);
/* Forget the db's cached declarations if they are of generation gen (a
 * conditional write found the store's generation moved), or whatever
 * their generation with IDX_GEN_ANY. */
#define IDX_GEN_ANY UINT64_MAX
void idx_cache_drop(mrtx_db *db, uint64_t gen);
/* rc (MRTX_ENOTABLE from a write or commit), or MRTX_CONFLICT when the
 * transaction's declarations are no longer current (an index was dropped
 * with its table since they were read: the retry must not maintain it). */
int idx_stale_table(mrtx_txn *txn, int rc);
/* Detach open scanners from a transaction that is ending (scan.c). */
void txn_detach_scanners(mrtx_txn *txn);
int bytes_cmp(mrtx_bytes a, mrtx_bytes b);

#define TXN_CHECK(txn)                                                              \
	do {                                                                        \
		if (!(txn))                                                         \
			return mrtx__seterr(MRTX_EINVAL, "transaction handle is NULL"); \
		if ((txn)->doom)                                                    \
			return mrtx__seterr(MRTX_EBADTXN, "transaction already failed "  \
			                    "(%s): only mrtx_commit, which reports " \
			                    "it, or mrtx_abort is allowed",          \
			                    mrtx_strerror((txn)->doom));            \
	} while (0)

/* TXN_CHECK, then the observations a scan deferred into the row tree. */
#define TXN_CHECK_SETTLED(txn)                                                      \
	do {                                                                        \
		int settle_rc_;                                                     \
		TXN_CHECK(txn);                                                     \
		if ((settle_rc_ = txn_scan_settle(txn)))                            \
			return settle_rc_;                                          \
	} while (0)

#endif
