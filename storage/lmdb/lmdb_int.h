/*
 * lmdb_int.h - internals shared by the LMDB backend's files (lmdb_*.c):
 * the only files that include <lmdb.h>.
 */
#ifndef MRTX_LMDB_INT_H
#define MRTX_LMDB_INT_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/types.h>

#include "storage/keyenc.h"
#include "storage/store.h"
#include "storage/store_test.h"
#include "storage/versions.h"
#include "storage/lmdb/lmdb_seal.h"
#include "storage/lmdb/lmdb_span.h"
#include "storage/lmdb/lmdb_store.h"

/* Store format.  2: one DBI per table, lock records beside the cells.
 * 3: every table and the metadata in LMDB's one unnamed database, each
 * table under its own 2-byte key prefix (lmdb_meta.c).  4: cell versions
 * (lmdb_cell.c).  5: the count of unsettled lock records
 * (lmdb_unsettled.c), which every writer keeps.  6: a checksum on every
 * data record (lmdb_seal.h).  7: on every metadata record too, the format
 * record's included (8 bytes; earlier formats' is a bare u32).  8: the
 * format record also keeps a tally of the other metadata records (a count
 * and a digest, 20 bytes, lmdb_mcount.c), so a metadata record lost whole,
 * or an older copy of one, is damage the open sees, not a default or an
 * old value it reads. */
#define META_FORMAT 8u
/* The format that sealed the metadata without counting it. */
#define FORMAT_META_SEALED 7u
/* The last format without sealed metadata: data sealed, metadata bare. */
#define FORMAT_DATA_SEALED 6u
/* The format number of a store `mrtx upgrade` is converting (lmdb_upgrade.c):
 * no open but the upgrade's own accepts them.  UPGRADING: cells get their
 * version headers (from format 3), a pass an earlier release began;
 * HEADERS: the same pass begun by this one; SEALING: data records get
 * their seals (the metadata gets its own in the pass's last write).  Their
 * format records, like the metadata beside them, are bare. */
#define FORMAT_UPGRADING 0x80000004u
#define FORMAT_HEADERS 0x80000005u
#define FORMAT_SEALING 0x80000006u
#define FORMAT_IN_HEADER_PASS(f) ((f) == FORMAT_UPGRADING || (f) == FORMAT_HEADERS)
#define TPFX STORE_KEY_PREFIX /* bytes of a table's key prefix */
#define KP_FIRST 0x0100u /* first table prefix; keys below it are metadata */
#define DEFAULT_MAP ((size_t)1 << 30)
#define READ_POOL 8 /* reset read transactions kept for renewal */

/* A read transaction with a cursor on the store's database, both pooled
 * (lmdb_env.c).  slot is the pool's allocation that carries them. */
typedef struct lmdb_rtxn {
	MDB_txn *txn;
	MDB_cursor *cur;
	struct lmdb_rtxn *slot;
	unsigned forks;  /* a view's: lmdb_forks() when it opened */
	uint64_t ts;     /* a view's snapshot timestamp (0: unknown) */
	int settled;     /* a view's: it holds no unsettled lock record
	                    (lmdb_unsettled.c; 0: some, or not known) */
	int inexact;     /* a view's: it may hold commits newer than its id
	                    (view_exact failed every try, lmdb_view.c) */
} lmdb_rtxn;

/* Forks of this process so far (counted in the child): a view opened before
 * a fork holds the parent's reader slot, which the child must not touch. */
unsigned lmdb_forks(void);

/* A caller of store_write_rows waiting for (or acting as) the group leader. */
typedef struct wreq {
	store_op *ops;
	size_t n;
	store_rcheck *checks; /* atomic requests (store_write_atomic) */
	size_t nchecks;
	int atomic;
	int applied;          /* out: an atomic request's writes were applied */
	int durable;
	int rc;
	int taken;            /* a leader took it from the queue */
	int done;
	struct wreq *next;
} wreq;

/* A table of an LMDB store: the seam's store_table first (a store_table
 * of this backend is one of these: LT), then what only LMDB keeps. */
typedef struct lmdb_table {
	store_table pub;
	unsigned kp;   /* the table's 2-byte key prefix (lmdb_read.c) */
	size_t nfam0;  /* families below nfam0 live in the table's own
	                  allocation; later ones are allocated one by one */
	size_t seen;   /* the transaction id of the snapshot in which this
	                  process first saw the table (0: at open); a view older
	                  than it checks that the table is in it */
} lmdb_table;
#define LT(t) ((lmdb_table *)(void *)(uintptr_t)(t))

/* Table objects one open store can attach: the store's live tables
 * (MRTX_MAX_TABLES) and the dropped ones this process had attached. */
#define TABLES_CAP (2 * MRTX_MAX_TABLES)
/* Slots of the table-name hash: a power of two, over twice TABLES_CAP. */
#define TABLE_SLOTS 2048u
_Static_assert(TABLE_SLOTS >= 2 * TABLES_CAP && (TABLE_SLOTS & (TABLE_SLOTS - 1)) == 0,
               "TABLE_SLOTS must be a power of two above twice TABLES_CAP");

struct store {
	store_head head;    /* the backend's table (lmdb_backend.c) and caps */
	MDB_env *env;
	char *path;
	dev_t dev;
	ino_t ino;
	pid_t pid;
	int refs;
	int unbatched;
	int no_create; /* read-only, or MRTX_CREATE_NEVER: a missing store is
	                  MRTX_ENOTSTORE */
	size_t map_size;
	MDB_dbi dbi;        /* LMDB's unnamed database: everything (format 3) */
	uint8_t id[16];
	pthread_mutex_t mu; /* table creation and DBI opens */
	store_table *tables[TABLES_CAP];
	atomic_size_t ntables; /* entries below are never freed while open */
	/* Name lookup: open addressing, linear probing, never deleted, so a
	 * lock-free reader stops at the first empty slot.  A name's slot holds
	 * its newest table object: a table created after a drop replaces the
	 * GONE one in its slot (under mu). */
	store_table *_Atomic tslot[TABLE_SLOTS];
	/* Schema changes (lmdb_ddl.c): the table generation 0x00 "tgen" that
	 * the table objects' families and states reflect (store_table_refresh),
	 * and the last read snapshot (LMDB txn id) known to have that tgen. */
	_Atomic uint64_t tgen_valid;
	atomic_size_t tchk_txnid;
	uint64_t w_tgen;    /* tgen inside the write txn in progress (w_tgen_ok) */
	int w_tgen_ok;
	atomic_int trefresh; /* a write met a tgen other than tgen_valid */
	atomic_ulong write_calls, write_txns, read_txns;
	atomic_int stale_cleared; /* dead readers' slots cleared (open, store_get_info) */
	int durability;           /* MRTX_SYNC, MRTX_NOMETASYNC, MRTX_NOSYNC */
	int lockless;             /* read-only without lock.mdb (lmdb_env.c) */
	/* read transactions: reset ones wait here to be renewed (lock-free:
	 * a slot is taken with an exchange and filled with a compare-exchange) */
	lmdb_rtxn *_Atomic pool[READ_POOL];
	pthread_mutex_t wmu;      /* held by this process's write txn (lmdb_commit) */
	pthread_mutex_t remap_mu; /* one thread at a time adopts a grown map (lmdb_remap) */
	/* The latch (lmdb_io_latch): errno of a failed sync of data.mdb, or
	 * of a commit LMDB stopped at its meta page.  From then on no commit
	 * past `synced` is known durable, and write txns fail until the store
	 * is reopened.  A commit that failed writing its pages, before any
	 * sync, does not set it (lmdb_commit_io_failed). */
	atomic_int io_failed;
	/* A descriptor of data.mdb of our own, opened before this process's
	 * first write txn (lmdb_txn_begin; -1: could not), whose fdatasync
	 * tells a failed write from a failed sync after a commit fails
	 * (lmdb_commit_io_failed).  Under wmu. */
	int wb_fd;
	int wb_opened;
	/*
	 * The metadata generation without reading it: gen_val was the
	 * generation after committed LMDB txn gen_at.  A write txn whose id is
	 * gen_at + 1 follows it directly (no process committed in between),
	 * so the generation is still gen_val.  Guarded by wmu; the w_* fields
	 * describe the write txn in progress (lmdb_txn_begin, lmdb_commit).
	 */
	uint64_t gen_at, gen_val;
	uint64_t tgen_at, tgen_val; /* the same for the table generation */
	/* Unsettled lock records (lmdb_unsettled.c): the classifier (the
	 * layer above's order key, store_opts.lock_order); the count after
	 * committed LMDB txn uns_at (uns_val; -1: not known), as gen_at; the
	 * write txn in progress's count at its start (w_uns, w_uns_ok) and
	 * what its ops changed (w_udelta).  Guarded by wmu. */
	lmdb_lock_order_fn lock_order;
	uint64_t uns_at;
	int64_t uns_val, w_uns, w_udelta;
	int w_uns_ok;
	/* timestamps (lmdb_ts.c): the shared page, mapped on first use */
	struct lmdb_ts_page *_Atomic ts_page;
	pthread_mutex_t ts_mu;
	char *ts_dir;       /* the store directory's absolute path (NULL: path) */
	/* Durability (lmdb_commit_nowait, lmdb_durable): our last write txn's
	 * id (under wmu); how often other processes committed between ours
	 * (EWMA, 0..1024, under wmu; read racily to decide whether to wait);
	 * every txn up to `synced` is durable by an fdatasync of ours; counts
	 * of commits made durable by a later writer's sync and by our own. */
	uint64_t own_last;
	atomic_uint foreign;
	_Atomic uint64_t synced;
	atomic_ulong piggybacked, own_syncs;
	uint64_t w_id, w_gen;
	int w_gen_ok, w_dirty;
	/* the timestamp ceiling as this process last saw it stored, and as the
	 * write txn in progress raised it (lmdb_ts_stamp; under wmu) */
	uint64_t w_ceil, w_ceil_new;
	/* group commit: queued writers, one leader at a time (lmdb_write.c) */
	pthread_mutex_t gmu;
	pthread_mutex_t vsync_mu; /* lmdb_store_sync_visible: one sync at a time, so
	                            * readers queued behind it find it made */
	pthread_cond_t gcv;
	wreq *gq_head, **gq_tail;
	int leader;
	size_t inflight;     /* requests taken by a leader, not yet done */
	size_t returning;    /* requests done since, whose threads have not
	                        queued again (take_more, lmdb_write.c) */
	uint64_t ret_us;     /* EWMA: how long a writer thread took to queue
	                        its next request after its last returned */
	pthread_cond_t lcv;  /* a request queued (under gmu; CLOCK_MONOTONIC) */
	pthread_cond_t dcv;  /* a commit of this process, or a sync (under gmu;
	                        CLOCK_MONOTONIC): lmdb_durable's waiters */
	store *next;        /* process registry */
	lmdb_span_env span; /* env's map, registered for lmdb_unseal (I27) */
};

/* Map LMDB's rc to an MRTX code with a message naming the store and step
 * (an errno in its own words; when the latch is set, saying so). */
int lmdb_err(store *st, int rc, const char *step);
/* Why an open found no store and made none (read-only, or asked not to). */
const char *lmdb_no_create_why(const store_opts *o);

/* Failed writes and syncs of data.mdb (lmdb_io.c).  Has a sync failed
 * (the latch, st->io_failed)?  Its errno, else 0. */
int lmdb_io_failed(store *st);
/* A sync of data.mdb failed with err: set the latch (if err is an I/O
 * error, lmdb_is_io_errno). */
void lmdb_io_latch(store *st, int err);
/* An errno of a write or sync (not ENOMEM or EINVAL, which LMDB also
 * returns)? */
int lmdb_is_io_errno(int rc);
/* rc (an I/O errno) of `step` once the latch is set, as lmdb_err. */
int lmdb_latched_err(store *st, int code, int rc, const char *step);
/* What the latch means for the handle, for messages. */
extern const char lmdb_latch_why[];
/* Open st->wb_fd: before the process's first write txn (under st->wmu). */
void lmdb_wb_open(store *st);
/* mdb_txn_commit failed with I/O error rc (under st->wmu): the latch
 * unless its pages' write failed; returns the errno to report (ENOSPC for
 * a short write on a full file system). */
int lmdb_commit_io_failed(store *st, int rc);
/* Begin an LMDB transaction (adopting a map grown by another process). */
int lmdb_txn_begin(store *st, unsigned flags, MDB_txn **out);
/* Write transactions: lmdb_txn_begin(st, 0, ...) takes st->wmu, which
 * lmdb_commit or lmdb_wabort releases.  Durable commits are on disk when
 * lmdb_commit returns (per the store's durability). */
int lmdb_commit(store *st, MDB_txn *txn, int durable);
/* lmdb_commit, but a durable commit is not waited for: *need is its txn id
 * (0: nothing to wait for), for lmdb_durable after the caller released
 * whatever it holds; *before (may be NULL) is 1 when the error came before
 * mdb_txn_commit ran (the count of unsettled records failed to go in), so
 * surely nothing was written.  lmdb_durable's busy: other requests of this process
 * are queued or being written (their commit will likely make it durable). */
int lmdb_commit_nowait(store *st, MDB_txn *txn, int durable, uint64_t *need, int *before);
int lmdb_durable(store *st, uint64_t need, int busy);
/* Wake lmdb_durable's waiters (a commit or a sync of this process). */
void lmdb_durable_kick(store *st);
void lmdb_wabort(store *st, MDB_txn *txn);
/* A read transaction and its cursor on st->dbi, from the pool (renewed)
 * or new; give both back with lmdb_rtxn_end, never mdb_txn_abort or
 * mdb_cursor_close. */
int lmdb_rtxn_begin(store *st, lmdb_rtxn *out);
/* Check DIR/data.mdb's meta pages and length before LMDB maps it
 * (lmdb_file.c): 0 (sound, or no file yet); MRTX_ENOTSTORE (empty, or not
 * LMDB's); MRTX_ECORRUPT (damaged or truncated); MRTX_ESTORE (unreadable);
 * MRTX_EINVAL (path too long). */
int lmdb_file_check(const char *dir);
/* Adopt a map another process grew, then again(st, arg) once more: its
 * result, or MRTX_ESTORE (lmdb_env.c). */
int lmdb_remap(store *st, const char *step, int (*again)(store *st, void *arg), void *arg);
void lmdb_rtxn_end(store *st, lmdb_rtxn *r);
/* Read or create the metadata; attach every table (lmdb_meta.c). */
int lmdb_meta_init(store *st);

/* Store-call fault hook (store.h, store__fail_at), errors mapped as LMDB's. */
int lmdb_fault(store *st, const char *step, int write);
#define STORE_FAULT(st, step) \
	(MRTX_UNLIKELY(store__fault_armed) ? lmdb_fault(st, step, 0) : 0)
/* In store_write_rows: may also return STORE_FAULT_APPLIED (store.h). */
#define STORE_FAULT_W(st, step) \
	(MRTX_UNLIKELY(store__fault_armed) ? lmdb_fault(st, step, 1) : 0)

int lmdb_key_cmp(const MDB_val *a, const MDB_val *b);

/* The order of the keys a read walks (lmdb_walk.c).  LMDB_DISORDER: keys
 * out of order around where a read went (a damaged page). */
#define LMDB_DISORDER (-30601)
/* Is k strictly after prev (a walk's step)? */
int lmdb_key_after(const MDB_val *prev, const MDB_val *k);
/* cur landed on the first key at or above target (found; else past the
 * last key): are its neighbours in order around it?  0, LMDB_DISORDER, or
 * LMDB's rc.  Found: the cursor is back where it landed; not found: it is
 * left near the last key (seek again before stepping). */
int lmdb_landing_check(MDB_cursor *cur, const MDB_val *target, int found);
/* MDB_SET_RANGE to *k (lmdb_cget), the landing checked: LMDB's rc,
 * LMDB_BADSUM or LMDB_DISORDER. */
int lmdb_seek(MDB_cursor *cur, MDB_val *k, MDB_val *v);
/* MDB_NEXT or MDB_PREV (lmdb_cget) from the key in *k, which the cursor
 * stands on: LMDB's rc, LMDB_BADSUM, or LMDB_DISORDER when the key met is
 * not strictly beyond it. */
int lmdb_step(MDB_cursor *cur, MDB_val *k, MDB_val *v, MDB_cursor_op op);
/* MDB_PREV from the key the cursor stands on, or MDB_LAST (lmdb_cget),
 * the key met checked to be the one a search for it finds, with the key it
 * came from (or none, after MDB_LAST) next after it: LMDB's rc,
 * LMDB_BADSUM, or LMDB_DISORDER (a damaged page pointer). */
int lmdb_step_back(MDB_cursor *cur, MDB_val *k, MDB_val *v, MDB_cursor_op op);
/* Hold the process's registry of open stores (no open or close in this
 * process meanwhile); MRTX_ELOCKED (released) if path is open here. */
int lmdb_registry_lock(const char *path);
void lmdb_registry_unlock(void);
/* Unmap the timestamp page (store_destroy). */
void lmdb_ts_detach(store *st);
/* Map the timestamp page if not yet (writable handles do it at open: every
 * write txn records its snapshot timestamp there). */
int lmdb_ts_attach(store *st);
/* A commit's timestamp, taken inside write txn txn (lmdb_ts.c). */
int lmdb_ts_stamp(store *st, MDB_txn *txn, uint64_t floor, uint64_t *out);
/* Record write txn txn's snapshot timestamp (just before its commit), and
 * whether the store holds an unsettled lock record after it (unsettled:
 * 1, or not known). */
void lmdb_ts_record(store *st, MDB_txn *txn, int unsettled);
/* The snapshot timestamp of read txn rtxn: 0 with *out set; 1 when the
 * page does not have it (the view lagged too far behind: take a newer);
 * *out = 0 and 0 when the store has no page. */
int lmdb_ts_of_view(store *st, MDB_txn *rtxn, uint64_t *out, int *settled);
/* Did the process that recorded txnid's ring entry (lmdb_ts_record) die?
 * 1 only when provably: no such process, or another one with its pid; 0
 * when alive, unknown (another entry recorded since, a writer that
 * records no writer) or this process. */
int lmdb_ts_writer_dead(store *st, uint64_t txnid);

/* a[0..n) == b[0..n), inline: the read path compares short keys often. */
static inline int bytes_eq(const void *a, const void *b, size_t n)
{
	const uint8_t *p = a, *q = b;
	uint64_t x, y;
	size_t i = 0;

	if (n < 8) {
		for (; i < n; i++)
			if (p[i] != q[i])
				return 0;
		return 1;
	}
	for (; i + 8 <= n; i += 8) {
		memcpy(&x, p + i, 8);
		memcpy(&y, q + i, 8);
		if (x != y)
			return 0;
	}
	if (i == n)
		return 1;
	memcpy(&x, p + n - 8, 8); /* the tail, overlapping bytes known equal */
	memcpy(&y, q + n - 8, 8);
	return x == y;
}


/* The metadata generation: 0x00 "gen" -> u64 LE, absent = 0 (lmdb_meta.c). */
#define GEN_KEY "\0gen"
#define GEN_KEY_LEN 4u
/* Read it with cursor cur (MRTX_ECORRUPT if malformed; LMDB rc otherwise). */
int lmdb_gen_read(MDB_cursor *cur, uint64_t *gen);
/* The table generation: 0x00 "tgen" -> u64 LE, absent = 0; bumped by
 * every schema change of an existing table (lmdb_ddl.c). */
#define TGEN_KEY "\0tgen"
#define TGEN_KEY_LEN 5u
int lmdb_u64_read(MDB_cursor *cur, const char *key, size_t klen, uint64_t *out);
/* Raise the collection safe point (STORE_GC_SAFE_KEY) to safe in txn, if
 * below (lmdb_cell.c); an LMDB code. */
int lmdb_gc_safe_raise(store *st, MDB_txn *txn, uint64_t safe);
/* A tally of metadata records (format 8, lmdb_mcount.c): how many, and
 * the sum mod 2^64 of each one's hash (lmdb_mtally_hash). */
typedef struct lmdb_mtally {
	uint32_t n;
	uint64_t sum;
} lmdb_mtally;
/* Format 8's format record payload: u32 format, u32 n, u64 sum (LE). */
#define LMDB_FORMAT_LEN 16u
/* The part of the record at key k, whose stored (sealed) value is raw,
 * in a tally's sum: a mix of its seal and its key's length. */
uint64_t lmdb_mtally_hash(const MDB_val *k, const MDB_val *raw);
/* Add the record at k (stored value raw) to *t. */
void lmdb_mtally_add(lmdb_mtally *t, const MDB_val *k, const MDB_val *raw);
/* The format record (0x00 "format"), read raw (lmdb_mcount.c): a bare u32
 * LE, formats 3 to 6 and the upgrade's marks (*sealed = 0), or one with
 * its seal (*sealed = 1): format 7's u32, format 8's u32 and the tally of
 * the other metadata records (into *tally; may be NULL; left as it was
 * for other formats), or a later format's u32 and what it adds.  0,
 * MDB_NOTFOUND, LMDB_BADSUM (a seal that does not match), MRTX_ECORRUPT
 * (a length no format has), or LMDB's rc. */
int lmdb_format_get(MDB_txn *txn, MDB_dbi dbi, uint32_t *fmt, int *sealed,
                    lmdb_mtally *tally);
/* The same from its payload (unsealed when sealed): 0 or MRTX_ECORRUPT. */
int lmdb_format_parse(uint32_t fmt, int sealed, const MDB_val *payload, lmdb_mtally *tally);
/* Write format 8's record, sealed, with tally *t. */
int lmdb_format_put(MDB_txn *txn, MDB_dbi dbi, const lmdb_mtally *t);
/* Move the stored tally (a record added or deleted, delta; one's hash
 * taken out, minus, another's put in, plus; by lmdb_put and lmdb_del):
 * 0, LMDB_METACOUNT (the count past its bounds), LMDB_BADFORMAT (the
 * format record malformed), LMDB_BADSUM (its seal does not match), or
 * LMDB's rc.  A
 * store whose format record is not format 8's (being made, or upgraded:
 * the upgrade tallies at its end) keeps none. */
int lmdb_mtally_move(MDB_txn *txn, MDB_dbi dbi, int delta, uint64_t minus, uint64_t plus);
/* The metadata records do not match the format record's count of them (a
 * record lost whole, or one more than was written), or its digest (an
 * older copy of one read in its place). */
#define LMDB_METACOUNT (-30602)
#define LMDB_METADIGEST (-30603)
/* The format record of a format-8 store is malformed (a length or format
 * number no tally has): met in a walk or when the tally moves. */
#define LMDB_BADFORMAT (-30604)
/* What one of mrtx's own damage codes (LMDB_BADSUM, LMDB_DISORDER,
 * LMDB_METACOUNT, LMDB_METADIGEST, LMDB_BADFORMAT) found, in words, and
 * *why it may be so ("" or " (...)"); NULL for any other rc.  Static
 * strings (lmdb_env.c). */
const char *lmdb_damage_what(int rc, const char **why);
/* Walk every metadata record (format 8) with cursor cur, in key order:
 * each one's seal checked, each key strictly after the one before, and
 * fn (may be NULL) called with each unsealed; the key after the last in
 * order with it too (a first byte damaged ends the walk early); and the
 * records but the format's as the format record tallies them.  A lookup
 * by key cannot tell a record whose key was damaged, or a node lost from
 * its page, from one never written (a table's policies would read as the
 * defaults), nor an older copy of a record from the record: its seal,
 * which covers the key, and the tally can.  0, LMDB_BADSUM,
 * LMDB_DISORDER, LMDB_METACOUNT, LMDB_METADIGEST, LMDB_BADFORMAT, LMDB's
 * rc or fn's. */
int lmdb_meta_walk(MDB_cursor *cur, int (*fn)(const MDB_val *k, const MDB_val *v, void *arg),
                   void *arg);

/* ---- cells and versions (lmdb_cell.c; format 4) ---- */

#define CELL_HDR 9u          /* a current cell's value: u64 LE ts | u8 flags | value */
void lmdb_cell_hdr(uint8_t *out, uint64_t ts, uint8_t flags);
/* A current cell's value: MRTX_ECORRUPT (no message) when too short. */
int lmdb_cell_decode(const MDB_val *v, uint64_t *ts, uint8_t *flags, mrtx_bytes *value);
/* key[0..plen) = P . enc(row): append 0xFF . fid . u16 len . qual (a
 * history key without its ~ts); returns the length. */
size_t lmdb_hist_prefix(uint8_t *key, size_t plen, uint8_t fid, mrtx_bytes qual);
/* Parse a history key of the row whose P . enc(row) is plen bytes. */
int lmdb_hist_parse(const uint8_t *k, size_t klen, size_t plen, uint8_t *fid,
                    mrtx_bytes *qual, uint64_t *ts);
/* Put (del = 0) or delete one cell at version ts, keeping the family's
 * policy (history, trimming).  key[0..plen) = P . enc(row), room for
 * MRTX_MAX_KEY + 16 bytes.  LMDB rc. */
/* *have = 1 if the cell (fid, qual) of row has any stored version: its
 * current key or an older one (a tombstone included).  An LMDB rc. */
int lmdb_cell_exists(MDB_cursor *cur, const store_table *t, mrtx_bytes row, uint8_t fid,
                     mrtx_bytes qual, int *have);
int lmdb_cell_write(MDB_cursor *cur, const store_table *t, uint8_t *key, size_t plen,
                    uint8_t fid, mrtx_bytes qual, int del, mrtx_bytes value, uint64_t ts);
/* The versions f asks for (store_filter.at, .versions) of the row whose
 * P . enc(row) is key[0..plen): cells in (family, qualifier) order, each
 * cell's versions newest first; MRTX_ESNAPSHOT when a cell's versions at
 * f->at were collected. */
int lmdb_cell_read_versions(store *st, MDB_cursor *cur, const store_table *t, uint8_t *key,
                            size_t plen, const store_filter *f, mrtx_arena *a,
                            store_row *out);
/* Delete every current cell of the row (fid < 0) or of one family. */
int lmdb_cell_del_range(MDB_cursor *cur, const store_table *t, uint8_t *key, size_t plen,
                        int fid, uint64_t ts);

/* ---- tables (lmdb_meta.c, lmdb_ddl.c) ---- */

/* 0x00 "t/" name into buf (MRTX_MAX_NAME + 4 bytes). */
MDB_val lmdb_table_key(char *buf, const char *name);
/* Parse a table record into a new object (state LIVE or FROZEN). */
int lmdb_table_parse(const char *name, const MDB_val *v, store_table **out);
/* Give t its version policies, read in txn (lmdb_meta.c). */
int lmdb_table_load_policy(store *st, MDB_txn *txn, store_table *t);
/* Parse only the prefix and state of a record (MRTX_ECORRUPT if malformed). */
int lmdb_table_peek(const MDB_val *v, unsigned *kp, int *frozen, size_t *nfam);
/* The families a table record (checked by lmdb_table_peek) marks dropped
 * (STORE_DROPPED_NAME): bit fid of bits. */
void lmdb_table_dropped(const MDB_val *v, uint64_t bits[4]);
/* Free a table object (and the families added to it after parsing). */
void lmdb_table_free(store_table *t);
/* Is the table usable by this op?  0, or the op's result: MRTX_ENOTABLE
 * (gone) or MRTX_CONFLICT (frozen and the op acquires a lock).  Inside
 * the write txn of cur. */
/* Unsettled lock records (lmdb_unsettled.c).  Is this record unsettled
 * (1 also when the store has no classifier)? */
int lmdb_lock_unsettled(const store *st, const void *lock, size_t size);
/* Is (k, v), a key of a table and its value, an unsettled lock record? */
int lmdb_record_unsettled(const store *st, const MDB_val *k, const MDB_val *v);
/* The unsettled lock records of every table, walked with cur (the
 * upgrade's, without a store, classifies with order); LMDB rc. */
int lmdb_unsettled_count(MDB_cursor *cur, lmdb_lock_order_fn order, uint64_t *n);
/* A write txn began (lmdb_txn_begin); its ops note their changes in
 * st->w_udelta. */
void lmdb_unsettled_begin(store *st);
/* Before the commit: put the changed count; *unsettled: the count after
 * this txn is not 0, or not known.  LMDB rc. */
int lmdb_unsettled_finish(store *st, MDB_txn *txn, int *unsettled);
/* The txn committed and took its id. */
void lmdb_unsettled_committed(store *st);
/* The stored count (-1: no key, or malformed); LMDB rc. */
int lmdb_unsettled_read(MDB_txn *txn, MDB_dbi dbi, int64_t *out);
int lmdb_unsettled_put(MDB_txn *txn, MDB_dbi dbi, uint64_t n);
/* Does op write a cell of a family its table dropped? */
static inline int lmdb_writes_dropped(const store_op *op)
{
	const store_table *t = op->table;

	if (!(atomic_load_explicit(&((store_table *)(uintptr_t)t)->dropped[0],
	                           memory_order_relaxed) |
	      atomic_load_explicit(&((store_table *)(uintptr_t)t)->dropped[1],
	                           memory_order_relaxed) |
	      atomic_load_explicit(&((store_table *)(uintptr_t)t)->dropped[2],
	                           memory_order_relaxed) |
	      atomic_load_explicit(&((store_table *)(uintptr_t)t)->dropped[3],
	                           memory_order_relaxed)))
		return 0;
	for (size_t i = 0; i < op->nmuts; i++)
		if (op->muts[i].kind != STORE_MUT_DEL_ROW &&
		    store_family_dropped(t, op->muts[i].fid))
			return 1;
	return 0;
}
int lmdb_table_wcheck(store *st, MDB_cursor *cur, const store_op *op);
/* A read at snapshot rt: refresh the table objects if the schema changed;
 * MRTX_ENOTABLE (with a message) if t is gone. */
int lmdb_table_rcheck(store *st, lmdb_rtxn *rt, const store_table *t);
/* The generation inside the current write txn (st->w_gen, read at most
 * once per txn); LMDB rc, or MRTX_ECORRUPT (no message) if malformed. */
int lmdb_wgen(store *st, MDB_cursor *cur, uint64_t *gen);

/* After P . enc(row): the row's lock record (its cells' family ids are
 * below; its older versions follow it, lmdb_cell.c). */
#define LOCK_TAG 0xFFu

/* ---- keys of rows, shared by the reads and the writes (lmdb_read.c) ---- */
/* Does row fit in a key with `extra` bytes after P . enc(row)? */
int lmdb_row_fits(mrtx_bytes row, size_t extra);
/* The row of a data key of this table (into rowbuf) and whether the key is
 * its lock key; MRTX_ECORRUPT when the key does not decode. */
int lmdb_key_row(const MDB_val *k, uint8_t *rowbuf, mrtx_bytes *row, int *is_lock);
/* Seek key for a bound: P . enc(bound), cut to LMDB's key size.  A cut key
 * sorts no later than the whole one, and the scan loop checks every row
 * against the bounds, so positioning only has to be early enough. */
MDB_val lmdb_bound_key(uint8_t *buf, const store_table *t, mrtx_bytes b);
/* Move cur from row R to the next row (forward: past R's lock key and
 * history, walking from where the cursor stands in R, so that every key
 * on the way is seen in order (lmdb_walk.c), or seeking when R has more
 * keys left than a few; reverse: before R's first key); k and v get the
 * key and value met.  An LMDB rc (MDB_NOTFOUND at the end), or
 * MRTX_ECORRUPT. */
int lmdb_step_row(MDB_cursor *cur, const store_table *t, mrtx_bytes row, int reverse,
                  MDB_val *k, MDB_val *v);

/* out = the table's key prefix . enc(row); returns the length. */
static inline size_t tkey_put(uint8_t *out, const store_table *t, mrtx_bytes row)
{
	out[0] = (uint8_t)(LT(t)->kp >> 8);
	out[1] = (uint8_t)LT(t)->kp;
	return TPFX + keyenc_put(out + TPFX, row.data, row.size);
}

static inline int tkey_is(const store_table *t, const void *key, size_t n)
{
	const uint8_t *k = key;

	return n >= TPFX && k[0] == (uint8_t)(LT(t)->kp >> 8) && k[1] == (uint8_t)LT(t)->kp;
}

static inline MDB_val mv(const void *p, size_t n)
{
	MDB_val v = { n, (void *)(uintptr_t)p };
	return v;
}

#endif
