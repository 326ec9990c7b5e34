/*
 * store.h - the storage seam (DESIGN §3).
 *
 * Everything above storage/ sees only this interface.  It offers
 * single-row atomicity and nothing more: store_write_rows applies each op
 * atomically or not at all, and ops in one call are independent (any subset
 * may fail its condition).  The LMDB backend happens to run one call as one
 * write transaction, which makes a protocol phase cost one fsync, but no
 * caller may rely on more than per-row atomicity.
 *
 * Reads: store_read_row and each row of store_scan_rows are consistent (lock
 * and cells from one snapshot); store_read_locks reads many rows' locks from
 * one snapshot.
 *
 * Memory: every result is copied into the caller's arena, except the
 * qualifiers and values of the cells a scan through a view returns
 * (store_scan_rows_in with v): on LMDB they may point into the view's
 * pages, valid until store_view_close (the scanner's cells are valid until
 * its transaction ends, and the transaction holds its view until then).
 */
#ifndef MRTX_STORE_H
#define MRTX_STORE_H

#include "common.h"

typedef struct store store;

/*
 * Backends: a store address that starts with "rados://" is a RADOS store
 * (storage/rados/), anything else an LMDB directory (storage/lmdb/).  Each
 * backend's store begins with a store_head, which names the backend's table
 * of operations (storage/backend.h) and what the store can do; store.c
 * calls the table.  Code above the seam asks for capabilities, never for a
 * backend.
 */
typedef struct store_backend store_backend;

/* What a store can do (store_caps): set by its backend at open. */
enum {
	/* store_view_open: one snapshot of the whole store, for many reads
	 * (LMDB: a read transaction); without it, each read is its own */
	STORE_CAP_VIEWS = 1u << 0,
	/* store_write_atomic: writes to many rows applied atomically, so that
	 * a transaction can commit in one phase (DESIGN §5.3; LMDB, batched) */
	STORE_CAP_ATOMIC = 1u << 1,
	/* store_write_rows evaluates a STORE_IF_BELOW condition itself (LMDB;
	 * RADOS, whose lock values carry their order key); without it the
	 * caller reads the lock instead */
	STORE_CAP_COND = 1u << 2,
	/* cell versions kept and commits stamped (DESIGN §9: LMDB; RADOS);
	 * without it store_filter.at and .versions are ignored and policies
	 * other than one version refused */
	STORE_CAP_VERSIONS = 1u << 3,
	/* every write of a cell drops what its family's policy no longer keeps
	 * (LMDB); without it the writer asks, store_trim_row (RADOS: a write
	 * never reads) */
	STORE_CAP_TRIMS_ON_WRITE = 1u << 4,
	/* schema changes: store_add_family, store_table_freeze and _clear */
	STORE_CAP_SCHEMA = 1u << 5,
	/* a local file: store_copy, store_sync, store_check_file */
	STORE_CAP_FILES = 1u << 6,
	/* timestamps from an oracle shared by hosts, whose readers push a
	 * live writer's commit (store_push) and publish their snapshots
	 * (store_snap_publish) instead of waiting (RADOS) */
	STORE_CAP_ORACLE = 1u << 7,
	/* every call is a network round trip (RADOS): a commit's tail goes to
	 * the handle's worker instead of running inline (txn/tail.c) */
	STORE_CAP_REMOTE = 1u << 8,
	/* STORE_MUT_RESTORE: a cell's versions written at timestamps of their
	 * own */
	STORE_CAP_RESTORE = 1u << 9,
};

typedef struct store_head {
	const store_backend *be;
	unsigned caps;  /* STORE_CAP_* (set by the backend at open) */
	int read_only;  /* opened with store_opts.read_only (set by the backend) */
	_Atomic long long clock_offset_us; /* test hook (store__clock_offset):
	                                    * added to this handle's wall clock */
} store_head;

static inline unsigned store_caps(const store *st)
{
	return ((const store_head *)(const void *)st)->caps;
}

/* Can st do every one of caps? */
static inline int store_has(const store *st, unsigned caps)
{
	return (store_caps(st) & caps) == caps;
}

/* This handle's wall clock, µs (mrtx__now_us plus its test offset).  It
 * seeds the timestamp source and measures durations (lock expiry, leases);
 * it decides no order (DESIGN §9.1). */
static inline uint64_t store_now_us(const store *st)
{
	long long off = atomic_load_explicit(&((store_head *)(void *)(uintptr_t)st)->clock_offset_us,
	                                     memory_order_relaxed);
	uint64_t t = mrtx__now_us();

	return off >= 0 || (uint64_t)-off < t ? t + (uint64_t)off : 1;
}

/* Was st opened read-only?  Then store_write_rows, store_create_table and
 * store_meta_put_new fail with MRTX_EREADONLY (store.c), and the backend
 * never writes: no creation at open, no metadata, nothing. */
static inline int store_read_only(const store *st)
{
	return ((const store_head *)(const void *)st)->read_only;
}

/*
 * A table, resolved once (owned by the store, freed by store_close).  Its
 * name, id and key prefix never change.  Two things may, both published
 * atomically so that lock-free readers see either value:
 *  - families only grow (store_add_family): families[i] is written before
 *    nfamilies moves past i, and the array has room for MRTX_MAX_FAMILIES;
 *  - state: STORE_T_LIVE, STORE_T_FROZEN (a drop or truncate is settling
 *    the table: no new lock may be taken in it), STORE_T_GONE (dropped: this
 *    object is dead; the name may name a newer table object).
 */
enum { STORE_T_LIVE = 0, STORE_T_FROZEN = 1, STORE_T_GONE = 2 };

/* A family's version policy (mrtx_family_spec, DESIGN §9): keep at most
 * max_versions (>= 1) versions of a cell; of those, drop the ones older
 * than ttl_ms (0: never) except the newest min_versions. */
typedef struct store_policy {
	uint32_t max_versions, min_versions;
	uint64_t ttl_ms;
} store_policy;
/* Families 0..n-1's policies (later families keep one version).  A policy
 * change (store_alter_family) publishes a whole new set; the set it
 * replaces stays valid (on the new one's older list) until the table is
 * freed, so a lock-free reader never meets freed memory. */
typedef struct store_polset {
	size_t n;
	struct store_polset *older;
	store_policy p[];
} store_polset;
/* The names of a table's families that are not dropped, in family order
 * (store_table.live); a replaced list stays valid until the table is
 * freed, as policy sets do. */
typedef struct store_names {
	size_t n;
	uint64_t dropped[4];  /* the dropped bits it was built for */
	struct store_names *older;
	const char *name[];
} store_names;

/* A dropped family's name in a table record (no family name holds '/'). */
#define STORE_DROPPED_NAME "/"

typedef struct store_table {
	const char *name;
	_Atomic size_t nfamilies;
	const char *const *families;
	unsigned id;   /* index in the store, stable while open */
	uint64_t ident; /* the table's identity, never another table's in the
	                   store's life (LMDB: its key prefix; RADOS: its
	                   record's id, which a truncate renews) */
	void *be;      /* a backend's per-table state where it keeps it apart
	                  (RADOS: its tablets; LMDB extends the struct) */
	_Atomic int state;  /* STORE_T_*; kept by LMDB (RADOS: always LIVE) */
	_Atomic(store_polset *) pols; /* NULL: one version each */
	/* families dropped (store_drop_family): bit fid; a family id is never
	 * reused, its bit never cleared.  live: the other names, once any is
	 * dropped (NULL: none is). */
	_Atomic uint64_t dropped[4];
	_Atomic(store_names *) live;
} store_table;

/* Was family fid of t dropped? */
static inline int store_family_dropped(const store_table *t, unsigned fid)
{
	return fid < 256 &&
	       (atomic_load_explicit(&((store_table *)(uintptr_t)t)->dropped[fid >> 6],
	                             memory_order_acquire) >> (fid & 63)) & 1;
}

/* Family fid's version policy. */
static inline store_policy store_table_policy(const store_table *t, unsigned fid)
{
	store_policy one = { 1, 0, 0 };
	const store_polset *s = atomic_load_explicit(&((store_table *)(uintptr_t)t)->pols,
	                                             memory_order_acquire);

	return s && fid < s->n ? s->p[fid] : one;
}

/* A lock owner's bytes: boot id (16), pid (u32 BE), start time (u64 BE). */
#define STORE_OWNER_SIZE 28u

typedef struct store_opts {
	int durability;     /* MRTX_SYNC, MRTX_NOMETASYNC, MRTX_NOSYNC */
	size_t map_size;    /* 0 = keep the file's, at least 1 GiB */
	unsigned file_mode; /* 0 = 0600 */
	int unbatched;      /* each op of store_write_rows is its own write txn */
	int read_only;      /* open for reading only; create nothing (MRTX_ENOTSTORE
	                       if there is no store); map_size is ignored */
	int create;         /* mrtx_options.create: where no store exists, whether
	                       to make one (MRTX_CREATE_DEFAULT: a backend of
	                       local files does, one of remote addresses does
	                       not) or fail with MRTX_ENOTSTORE */
	/* The lock record's order key (STORE_ORDER_SIZE bytes into out): the
	 * layer above knows the record, the store only compares keys
	 * (store_cond.below).  Required to open a RADOS store for writing
	 * (MRTX_EINVAL without); LMDB ignores it. */
	void (*lock_order)(const void *lock, size_t size, uint8_t *out);
	/* This process as lock records name their owner (boot id, pid BE,
	 * start time BE): a RADOS writer registers its client address under it,
	 * so that a resolver can fence it (store_fence). */
	uint8_t owner[STORE_OWNER_SIZE];
	int has_owner;
} store_opts;

/* Size of a lock record's order key (store_opts.lock_order). */
#define STORE_ORDER_SIZE 11u

/* path: an LMDB directory, or rados://POOL/NAME[?conf=PATH][&user=ID]. */
int store_open(store **out, const char *path, const store_opts *opts);
void store_close(store *st);
const char *store_path(const store *st);
/* Random id of the store, fixed at creation. */
const uint8_t *store_id(const store *st);

/* splits: rows (strictly increasing, valid row keys, checked by the caller)
 * where tablets start beside the first one; backends without tablets
 * (LMDB) ignore them. */
/* pol: each family's version policy (NULL: one version each; checked by
 * the caller); a store without STORE_CAP_VERSIONS refuses any other with
 * MRTX_ENOTSUP.  Creating a table that exists with the same families and
 * policies succeeds; other families or policies: MRTX_EEXIST. */
int store_create_table(store *st, const char *name, const char *const *families,
                       size_t nfamilies, const store_policy *pol, const mrtx_bytes *splits,
                       size_t nsplits);
/* MRTX_ENOTABLE if missing (re-reads metadata: another process may have made it). */
int store_table_find(store *st, const char *name, const store_table **out);
/* MRTX_ENOFAMILY if t has no such family, also after one refresh (a family
 * another handle or process added is found); when the refresh found t
 * gone, store_table_gone's error instead. */
int store_family_find(store *st, const store_table *t, const char *family, uint8_t *fid);
/* If t is GONE (dropped or truncated since it was loaded): MRTX_ENOTABLE
 * when its name is missing now, else MRTX_CONFLICT (another table has the
 * name: the caller's transaction ran on the old one), message set; else 0. */
int store_table_gone(store *st, const store_table *t);
/* Every table, in name order (one dropped while the list is made is left
 * out). */
int store_tables_list(store *st, const store_table ***out, size_t *count);

/*
 * Schema changes (DESIGN §3.4), LMDB and RADOS.  On RADOS the clear is
 * a chain of one-object steps around one atomic switch of the table's
 * record (storage/rados/rados_ddl.c): a clear that fails part-way leaves
 * the table closed (reads MRTX_ELOCKED, writes MRTX_CONFLICT) until a drop
 * or truncate of it runs again, which finishes it.
 *
 * store_add_family: append a family to t's record (MRTX_EEXIST if it has
 *   it, MRTX_ETOOBIG at MRTX_MAX_FAMILIES, MRTX_ENOTABLE if t is gone).
 * store_table_freeze: mark t FROZEN (on = 1) or LIVE again (on = 0) in its
 *   record: from the write that freezes it on, every op that would take a
 *   new lock in t (store_op.acquire) fails with MRTX_CONFLICT, in every
 *   process, while ops on locks already there still apply.  The mark
 *   carries its owner's random token: on = 1 makes a new one (taking the
 *   mark over from a drop that failed or died) and returns it in *token;
 *   on = 0 lifts the mark only if it still carries *token (else another
 *   caller owns it: nothing is done, 0 is returned).
 * store_table_clear: in one write, check that t's mark still carries token
 *   (MRTX_ELOCKED otherwise: another drop or truncate ran in between, so
 *   locks may have been taken since this caller's settle began; nothing is
 *   removed), delete every key of t and then either its record (drop = 1:
 *   the name is free; t is GONE) or only its mark (drop = 0: truncate, the
 *   same table, empty and LIVE).
 * store_table_refresh: re-read the records of every table this store has
 *   attached (families, state, policies), if any schema change happened
 *   since the last refresh.  Table lookups and reads do it on their own.
 * store_drop_family: as store_table_clear for one family: in one write,
 *   check that t's mark still carries token (MRTX_ELOCKED otherwise),
 *   delete every cell and older version of family fid, mark the family
 *   dropped in t's record (its id is never reused; its name is free) and
 *   lift the mark.  MRTX_ENOFAMILY if it was dropped already, MRTX_EINVAL
 *   if it is t's last family.  NULL in a backend without it: MRTX_ENOTSUP.
 *   From then on an op that would take a new lock (store_op.acquire) and
 *   writes a cell of the family fails with MRTX_CONFLICT, and other ops'
 *   mutations of it are skipped.
 * store_alter_family: replace family fid's version policy (pol checked by
 *   the caller) in t's record of policies, bumping the table generation as
 *   the other changes do; a FROZEN table may be altered.  NULL in a
 *   backend without it: MRTX_ENOTSUP.
 */
int store_add_family(store *st, const store_table *t, const char *family);
/* store_table_freeze(on = 1) took over a drop or truncate that had closed
 * the table already (RADOS): its locks were settled before, so the caller
 * goes on to store_table_clear. */
#define STORE_FREEZE_CLOSED 1
int store_table_freeze(store *st, const store_table *t, int on, uint64_t *token);
int store_table_clear(store *st, const store_table *t, int drop, uint64_t token);
/* Has a drop or truncate closed t (RADOS: every tablet shut, the switch
 * not yet made, e.g. a call cut short)?  Such a table holds no lock that
 * is not settled: the call settled every lock in it before the close, and
 * no write lands in it after.  *closed: 1 or 0; 0 or the read's error. */
int store_table_closed(store *st, const store_table *t, int *closed);
/* Is t held by a drop or truncate (of it or of one of its families) that
 * has not finished, one cut short included?  *held: 0; STORE_HELD_FROZEN
 * (no new lock may be taken in it: a commit that would take one fails with
 * MRTX_CONFLICT); STORE_HELD_CLOSED (RADOS: closed too, reads wait and
 * fail with MRTX_ELOCKED).  Reads t's records afresh.  0 or the read's
 * error. */
enum { STORE_HELD_FROZEN = 1, STORE_HELD_CLOSED = 2 };
int store_table_held(store *st, const store_table *t, int *held);
int store_table_refresh(store *st);
int store_alter_family(store *st, const store_table *t, unsigned fid, const store_policy *pol);
int store_drop_family(store *st, const store_table *t, unsigned fid, uint64_t token);
/* Can st drop a family (store_drop_family is more than its refusal)? */
int store_drops_families(const store *st);
/* t's families that are not dropped: *names (owned by the store, valid
 * while it is open) and their count. */
void store_table_live(const store_table *t, const char *const **names, size_t *n);
/* Mark the families of bits (bit fid) dropped in t, and rebuild t's list
 * of live names when the dropped ones or the families changed since it
 * was built; callers serialise it per table.  MRTX_ENOMEM. */
int store_table_mark_dropped(store_table *t, const uint64_t bits_in[4]);
/* Free t's policy sets and lists of live names (the current ones and
 * every replaced one). */
void store_table_free_policies(store_table *t);

/* Bytes before enc(row) in an LMDB key (the table prefix): part of the key
 * limit every backend enforces (store_check_key). */
#define STORE_KEY_PREFIX 2u
/* What a cell's older version adds to its key (LMDB, format 4: 0xFF, u16
 * qualifier length, u64 ~ts; storage/lmdb/lmdb_cell.c): part of the limit. */
#define STORE_VERSION_KEY 11u

/* Validate one table or family name; what is "table" or "family" for the
 * message (MRTX_EINVAL, MRTX_ETOOBIG). */
int store_check_name(const char *what, const char *s);
/* Validate a table's name and family list (MRTX_EINVAL, MRTX_ETOOBIG). */
int store_check_table_spec(const char *name, const char *const *families, size_t n);

/* Validate row and qualifier sizes against the key limit (MRTX_ETOOBIG/EINVAL). */
int store_check_key(const store_table *t, mrtx_bytes row, size_t qual_size);

/* ---- reads ---- */

typedef struct store_filter {
	uint64_t at;         /* LMDB: read the versions stamped at or below at
	                        (0: the store as the read sees it) */
	uint32_t versions;   /* LMDB: up to this many versions of each cell,
	                        newest first (0 or 1: one) */
	int family;          /* -1: every family */
	mrtx_bytes qs, qe;   /* qualifier range [qs, qe) inside family; size 0 = open */
	int qual_exact;      /* only the cell whose qualifier is qs (store_read_row
	                        only; the cell's qual then points at qs's bytes) */
	int lock_only;       /* no cells at all */
	int live;            /* with at: a running transaction's snapshot
	                        (DESIGN §9): a version's rank under its family's
	                        policy counts the versions at or below at only,
	                        as the store held them then, and a version the
	                        TTL drops reads as absent.  Without it (a past
	                        snapshot, mrtx_begin_at) the rank counts every
	                        version the read finds, so a past read shows
	                        nothing the policy drops now (MRTX_ESNAPSHOT) */
	int lazy_lock;       /* with qual_exact, read through a view: the row's
	                        lock record may be left unread when the view
	                        holds no unsettled one (LMDB; store_row.lock_lazy) */
	struct store_seen *seen; /* with at: what this reader saw of the
	                        store's one-object commits (store_seen) */
} store_filter;

#define STORE_FILTER_ALL { 0, 0, -1, { NULL, 0 }, { NULL, 0 }, 0, 0, 0, 0, NULL }

/*
 * A snapshot reader's memory of the atomic commits it may have read half
 * of (DESIGN §5.3, RADOS): a store whose store_write_atomic lands all of a
 * commit in one object, stamped before the write, keeps in that object the
 * stamp of the last such commit (its mark, rising in landing order).  A
 * read at a timestamp with f->seen notes, per row range it read from, the
 * lowest mark it met there; a row read later from that range whose newest
 * version at or below f->at is above that mark, while the mark has moved,
 * may come from a commit that landed after an earlier read of the range
 * (which then showed the commit's other rows without it): the store sets
 * late, and the reader must not use what it read (the transaction fails
 * with MRTX_CONFLICT and is retried).  Zeroed by the owner; freed with
 * store_seen_free.  Other stores leave it untouched.
 */
typedef struct store_seen_range {
	const void *table;   /* the store_table */
	uint8_t *lo, *hi;    /* [lo, hi) (hi NULL: to the end); mrtx__malloc */
	size_t lon, hin;
	uint64_t mark;
} store_seen_range;

typedef struct store_seen {
	store_seen_range *v;
	size_t n, cap;
	int late;
} store_seen;

void store_seen_free(store_seen *s);

typedef struct store_cell {
	uint8_t fid;
	mrtx_bytes qual, value;
	uint64_t ts;  /* the version's commit timestamp (STORE_CAP_VERSIONS;
	                 0 elsewhere) */
} store_cell;

typedef struct store_row {
	mrtx_bytes row;
	int has_lock;
	mrtx_bytes lock;
	store_cell *cells;
	size_t ncells;
	uint64_t vmax;  /* a read at a timestamp of a store that lists versions
	                   (RADOS): the newest version, deletions included, at
	                   or below it among the cells the read covered (0:
	                   none, or not known) -- a live snapshot tells a commit
	                   at or below it that landed after its first read */
	int lock_lazy;  /* the lock record was not read (store_filter.lazy_lock):
	                   has_lock and lock say nothing; the view vouches that
	                   the record, if any, is settled -- read it from the
	                   same view (store_read_locks_in) when it matters */
} store_row;

int store_read_row(store *st, const store_table *t, mrtx_bytes row,
                   const store_filter *f, mrtx_arena *a, store_row *out);

typedef struct store_rowref {
	const store_table *table;
	mrtx_bytes row;
} store_rowref;

/* Locks of n rows from one snapshot: out[i].has_lock/.lock (no cells). */
int store_read_locks(store *st, const store_rowref *refs, size_t n, mrtx_arena *a,
                     store_row *out);

typedef struct store_range {
	mrtx_bytes lo;  /* size 0 = unbounded */
	int lo_excl;    /* lo itself excluded */
	mrtx_bytes hi;  /* exclusive; size 0 = unbounded */
} store_range;

/* Does row sort before r begins (below lo, or lo itself when lo_excl)? */
static inline int store_range_before(const store_range *r, mrtx_bytes row)
{
	int c;

	if (!r->lo.size)
		return 0;
	c = cmp_bytes(row.data, row.size, r->lo.data, r->lo.size);
	return r->lo_excl ? c <= 0 : c < 0;
}

/* Does row sort at or past r's end (hi is exclusive)? */
static inline int store_range_past(const store_range *r, mrtx_bytes row)
{
	return r->hi.size && cmp_bytes(row.data, row.size, r->hi.data, r->hi.size) >= 0;
}

/*
 * Rows that have a lock record in range, in order (descending if reverse),
 * at most max_rows (0 = all), from one snapshot.  Every row ever written by
 * a transaction has a lock record, so this visits every row with data.
 * *more is set when rows may remain after the last one returned.  On
 * error *rows is NULL and *nrows 0.
 */
int store_scan_rows(store *st, const store_table *t, const store_range *r,
                    int reverse, const store_filter *f, size_t max_rows,
                    mrtx_arena *a, store_row **rows, size_t *nrows, int *more);

/*
 * Visit every row of t that has a lock record, in row order, in batches of
 * up to `batch` rows, each batch from one snapshot.  fn gets the batch and
 * its arena (freed when fn returns); a nonzero return stops the walk and is
 * returned.
 */
typedef int (*store_batch_fn)(const store_table *t, store_row *rows, size_t n, mrtx_arena *a,
                              void *payload);
int store_walk(store *st, const store_table *t, const store_filter *f, size_t batch,
               store_batch_fn fn, void *payload);

/* ---- views ---- */

/*
 * A view is the store as of one instant, for any number of reads: a
 * transaction's snapshot (DESIGN §9).  LMDB: one read transaction held
 * open until store_view_close, so the pages it sees stay allocated as long
 * (LMDB's rule for any reader), and one reader slot is taken.  RADOS: no
 * snapshot spans objects, so store_view_open returns MRTX_ENOTSUP and the
 * caller reads with v = NULL, each row consistent on its own.
 * A view is used by one thread at a time.  The _in reads take a view, or
 * NULL for a fresh snapshot per call (the calls above are those with
 * NULL).  A read through a view of a table created after it opened (even
 * under the name of one dropped since) returns STORE_NOT_IN_VIEW, which
 * never leaves the library: the caller reads the table without the view
 * and validates (txn/snapread.c).  One dropped since is MRTX_ENOTABLE.
 * store_view_open returns 0, MRTX_ENOTSUP, MRTX_ENOMEM or a store error
 * (LMDB's reader table full: MRTX_ESTORE).
 */
typedef struct store_view store_view;
#define STORE_NOT_IN_VIEW (-31989)
int store_view_open(store *st, store_view **out);
void store_view_close(store *st, store_view *v); /* v may be NULL */
/* store_view_open for a caller that needs the view's timestamp: a view
 * whose timestamp is unknown (writers kept landing commits while it was
 * pinned) is taken again, up to 16 times.  The view returned may still
 * have timestamp 0 (no timestamp page, or every try unpinned).  Returns
 * as store_view_open. */
int store_view_open_ts(store *st, store_view **out);
/* The view's snapshot timestamp: every commit stamped at or below it is in
 * the view, none above (store_op.stamp).  0: unknown (v NULL; an LMDB
 * store read without its timestamp page, on a read-only file system; a
 * view writers kept from being pinned to its id). */
uint64_t store_view_ts(const store *st, const store_view *v);
int store_read_row_in(store *st, store_view *v, const store_table *t, mrtx_bytes row,
                      const store_filter *f, mrtx_arena *a, store_row *out);
int store_read_locks_in(store *st, store_view *v, const store_rowref *refs, size_t n,
                        mrtx_arena *a, store_row *out);
int store_scan_rows_in(store *st, store_view *v, const store_table *t, const store_range *r,
                       int reverse, const store_filter *f, size_t max_rows, mrtx_arena *a,
                       store_row **rows, size_t *nrows, int *more);

/* ---- writes ---- */

enum store_mut_kind {
	STORE_MUT_PUT = 1,
	STORE_MUT_DEL_CELL = 2,
	STORE_MUT_DEL_FAMILY = 3,
	STORE_MUT_DEL_ROW = 4,
	/* STORE_CAP_RESTORE only, never in a lock record: put value as the
	 * version at ts (a restore, mrtx_restore_versions).  An op whose first
	 * mutation is one requires the cell (fid, qual of that first one) to
	 * have no stored version at all, current or older (the condition's
	 * part: op result MRTX_EEXIST); its restores of that cell come oldest
	 * first, each written as a put at its ts under the family's policy. */
	STORE_MUT_RESTORE = 5
};

typedef struct store_mut {
	uint8_t kind;
	uint8_t fid;
	mrtx_bytes qual, value;
	uint64_t ts;    /* STORE_MUT_RESTORE's; else unused */
} store_mut;

/*
 * What a conditional write requires of its row's lock record.  Exact (the
 * default of a zeroed op): no lock record (absent), or exactly the bytes
 * lock.  Below (kind STORE_IF_BELOW): no lock record, or one whose order
 * key (store_opts.lock_order) sorts below the STORE_ORDER_SIZE bytes
 * below.  The caller gives the condition both ways and each backend
 * evaluates the form it can, inside the write: pred(current lock or NULL,
 * its size, arg) != 0 as a predicate next to the data (LMDB: in the write
 * transaction; it must be pure and quick), below as bytes to compare
 * (RADOS: an omap_cmp LT on the OSD).  Only a store with STORE_CAP_COND
 * takes a below op; for another the caller reads the lock and writes an
 * exact one.
 */
enum store_cond_kind { STORE_IF_EXACT = 0, STORE_IF_BELOW = 1 };
typedef struct store_cond {
	enum store_cond_kind kind;
	int absent;        /* exact: no lock record ... */
	mrtx_bytes lock;   /* ... or exactly these bytes */
	mrtx_bytes below;  /* below: the order key's bound */
	int (*pred)(const void *lock, size_t size, void *arg);
	void *arg;
} store_cond;

typedef struct store_op {
	const store_table *table;
	mrtx_bytes row;
	store_cond cond;        /* the condition on the row's lock record */
	int delete_lock;        /* result: lock record removed ... */
	mrtx_bytes new_lock;    /* ... or set to these bytes */
	const store_mut *muts;  /* applied in order */
	size_t nmuts;
	uint64_t ts;            /* the version the cells are written at --
	                           their transaction's commit timestamp; a
	                           stamped op's are written at its stamp */
	int durable;            /* this write is a commit point: on disk (per the
	                           store's durability) before the call returns;
	                           other writes may be made durable later */
	int acquire;            /* set by lockio_write_rows: the op takes a new
	                           lock (absent or STABLE -> PREWRITTEN, or a
	                           one-row commit); refused in a FROZEN table */
	int check_only;         /* store_write_atomic only: the condition is
	                           checked and nothing of this row written */
	int check_gen;          /* condition too: the metadata generation is
	                           still gen (store_meta_list) ... */
	uint64_t gen;
	/* A commit point's timestamp, taken by the store: at least
	 * stamp_floor, written into new_lock's 8 bytes at stamp_off (u64 LE)
	 * and returned in stamped (set only when the op applied).  LMDB takes
	 * it inside the write: above every timestamp of a write the store
	 * applied before, below every one of a later write, and the same for
	 * every op of one store_write_atomic, so stamps follow commit order
	 * and a view's timestamp (store_view_ts) separates the commits it
	 * holds from those it does not.  RADOS takes it from its oracle just
	 * before sending the write (after every other write of the commit, so
	 * every lock of a two-phase commit is in place before its timestamp
	 * exists); STORE_STAMP_ONE_ROW marks a one-row commit that read no
	 * other row: stamped from the oracle the same way, but it writes no
	 * lock a reader could push (store_push). */
	int stamp;
	uint32_t stamp_off;
	uint64_t stamp_floor;
	uint64_t stamped;       /* out */
	int result;             /* out: 0 applied, MRTX_CONFLICT condition
	                           failed, STORE_GEN_CHANGED the generation
	                           moved, MRTX_EUNKNOWN the store failed in a
	                           way that may or may not have applied it (a
	                           failed LMDB commit; a lost reply), other
	                           error: surely not applied */
	int was_unsettled;      /* not the caller's: LMDB's note, between its
	                           check of the condition and its write, that
	                           the record met was unsettled */
} store_op;

/* store_op.stamp of a one-row commit that read no other row. */
#define STORE_STAMP_ONE_ROW 2

/* store_op.result when check_gen failed; never leaves the library. */
#define STORE_GEN_CHANGED (-31990)

/*
 * Apply ops; each atomically or not at all.  Returns 0 when every op has
 * result 0 or MRTX_CONFLICT, else the first error (per-op results say which
 * ops were applied).  Unbatched stores run one write transaction per op and
 * hit the store.after_row_write failpoint after each.
 */
int store_write_rows(store *st, store_op *ops, size_t n);

/*
 * One-phase writes (DESIGN §5.3).  A store that can apply writes to many
 * rows atomically (STORE_CAP_ATOMIC: LMDB, batched: one write transaction)
 * offers store_write_atomic for any commit; RADOS offers it for a commit
 * whose rows all live in one object (store_atomic_ok); others (unbatched
 * LMDB) do not, and callers use per-row writes (store_write_rows) and the
 * two-phase protocol.
 */

/*
 * Can one store_write_atomic take a commit that writes or checks the rows
 * rows[0..n) and has nchecks range checks?  1 yes, 0 no.  STORE_CAP_ATOMIC:
 * always; RADOS: when every row lies in one tablet and nchecks is 0 (an
 * omap guard cannot assert that no row appeared in a range); else never.
 * A yes is a hint: the map may change before the write, which then returns
 * STORE_NOT_ATOMIC.
 */
int store_atomic_ok(store *st, const store_rowref *rows, size_t n, size_t nchecks);

/* store_write_atomic's answer when the commit no longer fits one atomic
 * write (a split moved its rows apart): nothing written; never leaves the
 * library. */
#define STORE_NOT_ATOMIC (-31989)

/* A range check of store_write_atomic: the rows of table that have a lock
 * record in range (forward, lo_excl honoured) are exactly rows[0..n), in
 * row order, with exactly the lock bytes locks[0..n).  result: out, 0 or
 * MRTX_CONFLICT. */
typedef struct store_rcheck {
	const store_table *table;
	store_range range;
	const mrtx_bytes *rows, *locks;
	size_t n;
	int result;
} store_rcheck;

/*
 * All or nothing, in one store write: every op's condition (as in
 * store_write_rows: the op's cond; check_gen; the
 * table's state) and every range check is evaluated first, against the
 * store as it is inside this write; if all hold, every op is applied (ops
 * with check_only write nothing) and *applied = 1; else nothing is written,
 * *applied = 0, and each failing op's result (MRTX_CONFLICT,
 * STORE_GEN_CHANGED, MRTX_ENOTABLE) and each failing check's result say
 * why (the others are 0).  The write is durable before the call returns if
 * any op has durable set.  Several callers' atomic writes may share one
 * store transaction (group commit); each is still all or nothing, and the
 * conditions of one see the writes of those before it.
 * Returns 0, MRTX_ENOTSUP (no STORE_CAP_ATOMIC, nor an atomic_ok),
 * STORE_NOT_ATOMIC (see store_atomic_ok), MRTX_EREADONLY, MRTX_ENOTABLE (an op's table was dropped: nothing applied), or a store
 * error: nothing applied, unless the ops' results are MRTX_EUNKNOWN (the
 * store failed at its commit: applied or not, nobody knows yet).
 */
int store_write_atomic(store *st, store_op *ops, size_t n, store_rcheck *checks,
                       size_t nchecks, int *applied);

/* ---- accounting and inspection ---- */

/* Store calls and LMDB transactions since open.  Exact while one thread
 * uses the store; pooled reads count with a plain load and store, so reads
 * racing in several threads may lose counts (the write counters never do). */
typedef struct store_counters {
	unsigned long write_calls, write_txns, read_txns;
} store_counters;

void store_counters_get(store *st, store_counters *out);

typedef struct store_info {
	const char *kind;           /* "lmdb" or "rados" (store_get_info sets it);
	                               the fields below are LMDB's, 0 on RADOS */
	size_t map_size, used_bytes, page_size;
	unsigned max_readers;
	unsigned num_readers;       /* read txns holding a snapshot now (pooled,
	                               reset ones hold a slot but no snapshot) */
	int stale_readers_cleared;  /* slots of dead processes this process cleared
	                               (at open and by every store_get_info) */
	int read_only;              /* opened read-only (every backend) */
	int lockless;               /* LMDB, read-only: opened without lock.mdb (not
	                               writable, or a read-only file system), so
	                               writers cannot see this process's readers */
} store_info;

int store_get_info(store *st, store_info *out);

/* ---- backup (mrtx_backup, txn/backup.c) ---- */

/*
 * Write a consistent copy of the store into directory dir, which exists
 * and is empty: LMDB's copy of the environment as of one committed LMDB
 * transaction (compacted when LMDB can), as dir/data.mdb, synced.  The
 * copy's lock records are as they were: settling them is the caller's.
 * Returns 0; MRTX_EINVAL on a backend without files (RADOS) or a path too
 * long; MRTX_EEXIST (dir/data.mdb.partial exists); MRTX_EFULL; MRTX_ESTORE;
 * MRTX_ENOMEM.  Nothing is left in dir on failure.
 */
int store_copy(store *st, const char *dir);
/* Make every write so far durable (LMDB: a forced sync of the environment;
 * RADOS: nothing to do, a write is durable once acknowledged). */
int store_sync(store *st);
/* The state view v holds, as store_sync_visible takes it (LMDB: its
 * transaction id, 0 when the view may hold more than that id's commits;
 * RADOS: 0).  v NULL: 0. */
uint64_t store_view_point(store *st, const store_view *v);
/* Make every committed write of state `point` (store_view_point; 0: every
 * one a reader of st can see now) durable per the store's durability
 * (LMDB, MRTX_SYNC: a commit is visible from its meta page's write, and
 * made durable just after, DESIGN §8; this waits for or makes that flush,
 * and remembers what it made durable, so a later call for the same state
 * syncs nothing.  Other modes, read-only handles and RADOS: nothing to
 * do).  It may take the store's writer lock for a moment: not inside a
 * write of this thread, nor with a view of st open in this thread.
 * Returns 0, or MRTX_ESTORE (the sync failed, or the lock could not be
 * taken), MRTX_EFULL (the map could not grow), MRTX_ENOMEM. */
int store_sync_visible(store *st, uint64_t point);
/* The store's count of unsettled lock records (LMDB format 5:
 * lmdb_unsettled.c) against a recount, from one snapshot: 0, or
 * MRTX_ECORRUPT naming both (also when the count is missing), or
 * MRTX_ESTORE.  Other stores keep no count: 0. */
int store_unsettled_verify(store *st);

/*
 * A timestamp (DESIGN §9): microseconds of the wall clock where the clock
 * allows, at least floor, and above every timestamp any caller of this
 * store -- any thread, process or host -- got from a call that returned
 * before this one began.  Timestamps stay above each other across closes,
 * crashes and reboots (an LMDB store opened MRTX_NOSYNC: only as far as
 * its writes reached the disk, as for its data; an LMDB host without a
 * boot id makes every process's first call raise the ceiling).  LMDB keeps
 * them in DIR/ts.shm (created on first use, mapped shared; never remove it
 * while the store is open) under a ceiling stored in the store, raised by one
 * durable write transaction about once a second (storage/lmdb/lmdb_ts.c);
 * not callable inside a write transaction of the store.  RADOS: one
 * guarded write of the object NAME.ts per batch of concurrent callers
 * (storage/rados/rados_ts.c).  LMDB commits take theirs inside their write
 * instead (store_op.stamp), from the same counter; a timestamp from here
 * names no commit.  Returns 0 (*out set; 0 on any error);
 * MRTX_EINVAL (floor at or above 2^63; LMDB: the store's path too long for
 * the file's); MRTX_EREADONLY (LMDB: a read-only handle reached the
 * ceiling, a writer must raise it; RADOS: every read-only handle);
 * MRTX_ESTORE (LMDB: the file cannot be made or mapped, the ceiling
 * cannot be read, written or synced; RADOS: the cluster failed,
 * two writes timed out, or 64 guarded writes in a row met other handles');
 * MRTX_EFULL; MRTX_ENOMEM; MRTX_ECORRUPT (the stored ceiling or timestamp
 * is malformed; LMDB: DIR/ts.shm belongs to another store).
 */
int store_ts_next(store *st, uint64_t floor, uint64_t *out);
/* The caller's set of running snapshots, kept by the layer above and
 * called by store_ts_snapshot with no store lock held: oldest, its minimum
 * (UINT64_MAX if empty); enter, ts takes the place the caller kept for
 * this reservation (it cannot fail). */
typedef struct store_snap_set {
	uint64_t (*oldest)(void *arg);
	void (*enter)(void *arg, uint64_t ts);
	void *arg;
} store_snap_set;
/* A snapshot's timestamp, as store_ts_next(st, 0, out), entered in set.
 * On RADOS the write that reserves it also records this handle's running
 * snapshots in the registry as min(set's oldest, *out), protected until
 * until_us, so no collector passes the snapshot from its first instant;
 * the set is asked just before that write, and the snapshot entered into
 * it before any later reservation of the handle asks, so every record the
 * handle writes afterwards covers it too.  LMDB: store_ts_next, entered
 * likewise (its snapshots are views).  On error nothing is entered.
 * Errors as store_ts_next. */
int store_ts_snapshot(store *st, const store_snap_set *set, uint64_t until_us,
                      uint64_t *out);

/*
 * A timestamp of the store's own source, without taking one (DESIGN §9.1,
 * I15): at or below the newest the source has handed out when the call
 * returns, and at or above every timestamp this handle took from it, was
 * stamped with, or learnt (store_ts_learn).  LMDB: the shared page's last
 * handed out (exact); RADOS: the highest value of the oracle this handle
 * knows (no round trip).  A blind write's conflict window starts here:
 * every commit stamped at or below it is ordered before the write.
 * Returns 0, or (LMDB) an error of the page's attach as store_ts_next;
 * *out is 0 on error.
 */
int store_ts_known(store *st, uint64_t *out);
/* A transaction's start timestamp (DESIGN §9.1, I15): a value of the store's
 * source at or above the stamp of every commit that returned before the
 * call began, and at or below the source's newest when it returns.  LMDB:
 * store_ts_known (the page is exact; no I/O).  RADOS: one read of the
 * oracle (a round trip; a read-only handle can make it).  Returns 0, or as
 * store_ts_known / store_ts_now. */
int store_ts_start(store *st, uint64_t *out);
/* A committed timestamp this handle has seen (a lock's commit_ts): the
 * next store_ts_known is at least ts.  RADOS: the handle's knowledge of the
 * oracle rises to it (every stamp is the oracle's, so at or below it).
 * LMDB: the page's counter is raised to it when below (a fence written
 * from a prewrite's floor may be above it); best effort, never fails. */
void store_ts_learn(store *st, uint64_t ts);

/*
 * RADOS: the timestamp the store's oracle last handed out (NAME.ts), read
 * without writing: every two-phase commit stamped at or below it had its
 * timestamp (and so all its locks) before this call began, and every one
 * that returned before the call began is stamped at or below it (one-row
 * commits included: theirs is the oracle's too, store_op.stamp).  Returns
 * 0, MRTX_ESTORE, MRTX_ECORRUPT;
 * LMDB: MRTX_ENOTSUP (a view's timestamp is store_view_ts).
 */
int store_ts_now(store *st, uint64_t *out);

/* ---- upgrade ---- */

/*
 * Convert an older store in place (mrtx_upgrade): path as store_open's.
 * row_ts gives the version of a row's cells from its lock record (0; 1: a
 * transaction in flight; -1: malformed); lock_order as store_opts'.  *was:
 * the format found (RADOS: '1'..'4' as a number, LMDB its number).
 */
typedef int (*store_upgrade_ts_fn)(const void *lock, size_t n, uint64_t *ts);
int store_upgrade(const char *path, store_upgrade_ts_fn row_ts,
                  void (*lock_order)(const void *lock, size_t size, uint8_t *out),
                  uint64_t *cells, int *was);

/* ---- opaque metadata records (index declarations, txn/index.c) ---- */

/*
 * Records in the metadata DBI under keys "x/<name>" where x is a letter
 * other than 't' (tables); the value is opaque to the store.  key must be a
 * NUL-terminated string of 3..MRTX_MAX_NAME + 2 bytes.
 *
 * store_meta_get: the value copied into a (MRTX_NOTFOUND if absent).
 * store_meta_put_new: write key = value if absent; 0 also when it exists
 *   with identical bytes; MRTX_EEXIST when it exists with other bytes.
 * store_meta_put_new_on: the same, written only while each of on[0..non)
 *   (at most STORE_META_ON_MAX) is the table of its name and no drop or
 *   truncate of it has begun (the checks and the write are one): else
 *   MRTX_ENOTABLE (dropped), MRTX_CONFLICT (RADOS: truncated, the name's
 *   table is another now) or MRTX_ELOCKED (being dropped or truncated, or
 *   such a call was cut short), and nothing is written.  A record already
 *   there with identical bytes is 0 whatever the tables.  An index
 *   declaration names its source and index tables this way, so that a drop
 *   or truncate of either (which freezes, then checks the declarations) and
 *   the declaration are ordered (txn/index_create.c).  gen (may be NULL):
 *   written only while the metadata generation is still *gen (a listing's,
 *   store_meta_list), else MRTX_CONFLICT and nothing is written, so what
 *   the caller concluded from that listing still holds at the write.
 * store_meta_list: fn(key, value, payload) for every record whose key starts
 *   with prefix, in key order, from one snapshot (values copied into a);
 *   fn's nonzero return stops and is returned.  *gen (may be NULL) gets the
 *   metadata generation of that snapshot: a number that every record
 *   store_meta_put_new adds moves, so a store_op with check_gen fails
 *   (STORE_GEN_CHANGED) if any record was added since the listing.
 * store_meta_change: in one write, delete the records del[0..ndel) that
 *   exist and, when put_key is not NULL, write put_key = put_value
 *   (replacing any); moves the generation as store_meta_put_new does.
 */
int store_meta_get(store *st, const char *key, mrtx_arena *a, mrtx_bytes *out);
/* store_meta_get through a view (NULL: a fresh snapshot; RADOS: always). */
int store_meta_get_in(store *st, store_view *v, const char *key, mrtx_arena *a,
                      mrtx_bytes *out);
int store_meta_put_new(store *st, const char *key, mrtx_bytes value);
#define STORE_META_ON_MAX 2
int store_meta_put_new_on(store *st, const char *key, mrtx_bytes value,
                          const store_table *const *on, size_t non, const uint64_t *gen);
int store_meta_change(store *st, const char *const *del, size_t ndel, const char *put_key,
                      mrtx_bytes put_value);
int store_meta_list(store *st, const char *prefix, mrtx_arena *a,
                    int (*fn)(const char *key, mrtx_bytes value, void *payload),
                    void *payload, uint64_t *gen);

/* ---- versions: collection, trimming, pushes, running snapshots (DESIGN §9) ---- */

/* The record of the collector's safe point (u64 LE): `mrtx gc` may have
 * collected what a snapshot below it would read (txn/gc.c). */
#define STORE_GC_SAFE_KEY "g/safe"

/*
 * Collection (`mrtx gc`, txn/gc.c).  A run sets
 * the safe point (store_gc_mark(safe, 0): g/safe only rises), then walks
 * each table with store_gc_step: rows from (row, rowlen) on (rowlen 0: the
 * first), at most max_rows, each in one write that drops the versions its
 * family's policy no longer keeps, deleted cells no snapshot at or above
 * safe reads, and everything older than such a deletion; (row, rowlen) is
 * set to where the next step starts, *done when the table is done, and the
 * same write records that place (table, row, safe) as the cursor, which
 * store_gc_cursor reads back (MRTX_NOTFOUND: no run to resume;
 * *table_done: the cursor's table was finished) so that a run cut short
 * resumes; store_gc_mark(0, 1) removes it at the end.  row has room for
 * MRTX_MAX_KEY bytes, table for MRTX_MAX_NAME + 1.
 */
int store_gc_mark(store *st, uint64_t safe, int end);
int store_gc_step(store *st, const store_table *t, uint8_t *row, size_t *rowlen, uint64_t safe,
                  size_t max_rows, int *done, uint64_t *collected);
int store_gc_cursor(store *st, uint64_t *safe, char *table, uint8_t *row, size_t *rowlen,
                    int *table_done);
/*
 * Trimming while writing (DESIGN §9), for stores without
 * STORE_CAP_TRIMS_ON_WRITE.  store_trim_row: one collection step on the single row `row` of t with
 * safe point safe, as store_gc_step does for a row but without a cursor and
 * without moving g/safe (RADOS; LMDB: nothing to do, 0).  Best effort: a
 * row moved by a split meanwhile is left for the next trim.  Returns 0,
 * MRTX_EREADONLY, MRTX_ESTORE, MRTX_ECORRUPT, MRTX_ENOMEM.
 */
int store_trim_row(store *st, const store_table *t, mrtx_bytes row, uint64_t safe);
/*
 * A reader's push (RADOS; DESIGN §9): the row's lock is
 * exactly `lock` (a PREWRITTEN primary, as read) -- then its transaction's
 * commit point, whenever it comes, is stamped at or above ts (a stamped
 * write of the row whose stamp is below the row's push mark is stamped
 * again, store_op.stamp), so a reader at a snapshot below ts can read past
 * the lock without waiting.  The mark only rises; the commit point removes
 * it.  Returns 0 (the mark is at or above ts), MRTX_CONFLICT (the lock is
 * not `lock` any more: read the row again), MRTX_ENOTSUP (LMDB: readers
 * never wait there), MRTX_EREADONLY, MRTX_ESTORE, MRTX_ENOMEM.
 */
int store_push(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes lock, uint64_t ts);
/*
 * The registry of running snapshots (RADOS; rados_snaps.c): collectors
 * keep what they read.  Records live in the oracle's own object, beside
 * its value, so a snapshot is registered by the very write that hands out
 * its timestamp (store_ts_snapshot) and a collector reads the records and
 * the oracle in one read: a snapshot not among the records then is above
 * the oracle's value then (DESIGN §9.6, I19).  store_snap_publish: this
 * handle's oldest running snapshot is ts, protected until until_us (this
 * handle's clock, store_now_us: a duration, the lease); one record per
 * handle, replaced by the next write of it.  store_snap_oldest: the
 * oldest snapshot of every other handle's record whose protection has not
 * ended at now_us, and at most the oracle's value read with the first
 * page of them (UINT64_MAX: no oracle yet and no record); expired records met are
 * removed.  LMDB: its reader table already keeps a snapshot's pages (0,
 * nothing published; oldest UINT64_MAX).  Both return 0, MRTX_ESTORE,
 * MRTX_ENOMEM; oldest also MRTX_ECORRUPT (a malformed record).  A
 * read-only handle publishes nothing.
 */
int store_snap_publish(store *st, uint64_t ts, uint64_t until_us);
/*
 * Fencing (RADOS, storage/rados/rados_fence.c; other stores: nothing to do,
 * 0).  store_fence: blocklist every client registered for owner (a
 * resolver settling a dead or expired owner's lock calls it before its
 * write), wait for the OSD map that holds the blocklist, and forget the
 * entries; once per owner and handle.  expired: the lock expired (else
 * the owner was judged dead by its pid, which holds only in this PID
 * namespace: entries registered from another one are left alone).
 * store_fence_dead: the same for every registered owner dead(owner) says
 * is gone, in this PID namespace (a sweep's first step).
 * *fenced: addresses blocklisted; *denied: addresses the caller's key may
 * not blocklist (the entries stay).  Returns 0, MRTX_ESTORE, MRTX_ENOMEM.
 */
int store_fence(store *st, const uint8_t *owner, int expired, size_t *fenced, size_t *denied);
int store_fence_dead(store *st, int (*dead)(const uint8_t *owner, void *arg), void *arg,
                     size_t *fenced, size_t *denied);
int store_snap_oldest(store *st, uint64_t now_us, uint64_t *oldest);

#endif
