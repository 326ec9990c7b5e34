/*
 * rados_int.h - internals shared by the RADOS backend's files.
 *
 * Layout (RADOS layout format 4: cells keep versions, a cell key ending in
 * vt(ts) and its value starting with a flags byte, rados_cell.c; lock
 * values lead with their order key; commit points are stamped by the
 * oracle, rados_ts.c).  The runtime reads and writes format 4 alone:
 * mrtx_open refuses formats 1 to 3 and "U" (an upgrade under way), naming
 * `mrtx upgrade`, and what the older formats were is known only to the
 * upgrade that converts them (rados_upgrade.c).  A store NAME in pool POOL
 * is a set of objects whose names start with NAME:
 *
 *   NAME.meta       omap: "format" -> "4" ("U" mid-upgrade), "id" -> 16 random bytes,
 *                   "gen" -> u64 BE (metadata generation), "next" -> u32 BE
 *                   (next table id), "t/<table>" -> table record (below),
 *                   "p/<table>" -> its families' version policies
 *                   (storage/versions.h; absent: one version each),
 *                   "f/<table>" -> a drop or truncate under way (rados_ddl.c),
 *                   "z/<id>" -> the record of a table dropped or truncated
 *                   whose old tablets' rows are not removed yet,
 *                   "upgrade" -> the upgrade's record while format is "U",
 *                   and the opaque records of store_meta_* under their keys
 *   NAME.<id>.<seq> one tablet of table <id> (hex), a row range [start,
 *                   next tablet's start), holding in its omap:
 *       0x01 'G'                      the index-declaration generation
 *                                     every row write checks, as eight
 *                                     7-bit digits (rgen_put)
 *       0x01 'S'                      the tablet's state (absent: open;
 *                                     'U': filled by a split, not yet
 *                                     open; 'X' ...: retired by a split,
 *                                     see rados_split.c; 'D' + token:
 *                                     closed by a drop or truncate, for
 *                                     good, see rados_ddl.c)
 *       0x01 'F'                      a drop's or truncate's freeze mark
 *                                     (its 8-byte token, rados_ddl.c): no
 *                                     row write that takes a new lock
 *                                     applies while it is there
 *       0x01 'T'                      the collection mark (rados_gc.c)
 *       0x01 'V'                      an upgrade's progress (only while
 *                                     the store is at "U")
 *       0x01 'W'                      the one-phase mark: the stamp of
 *                                     the last atomic commit that landed
 *                                     here (rados_write.c, store_seen)
 *       0x02 . rkey(row)              the row's lock record (never empty);
 *                                     after its 11-byte order key
 *                                     (store_opts.lock_order), so that a
 *                                     one-row commit's "no lock, or STABLE
 *                                     before ts" (store_cond.below) is one
 *                                     omap_cmp LT guard
 *       0x03 . rkey(row) . fid+1 . rkey(qualifier) . vt(ts)
 *                                     a cell's version, newest first
 *       0x04 . rkey_desc(row)         "" : the row in descending order, for
 *                                     reverse scans (omap iterates forward only)
 *       0x05 . rkey(row)              the row's push mark, rgen digits
 *                                     (rados_write.c, store_push):
 *                                     a reader's snapshot + 1; a commit
 *                                     point of the row is stamped at or
 *                                     above it, and removes it
 *       0x06 . rkey(row)              the stamp of the last atomic commit
 *                                     that wrote the row, rgen digits
 *                                     (store_seen)
 *
 * rkey/rqual (radoskey.h) never emit 0x00, because librados takes the
 * start_after and filter_prefix of a listing as C strings.  A row's lock
 * and cells live in one object, so one compound op (guarded by omap_cmp on
 * the lock key) writes a row atomically, and one read op reads it from one
 * state.  Rows of one tablet share an op when a phase writes several.
 *
 * Table record: u32 id | u8 nfamilies | (u8 len, name) each | u32 ntablets
 * | (u32 seq, u16 len, start row) each, tablets in row order, the first
 * starting at the empty row.  A table can be pre-split at creation, and a
 * tablet is split online (rados_split.c) into two new tablets with new
 * seqs, taken from the meta key "seq.<id>" (u32 BE: the next free seq;
 * absent until the table's first split).  A seq is never used twice.
 */
#ifndef MRTX_RADOS_INT_H
#define MRTX_RADOS_INT_H

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>

#include "storage/store.h"
#include "storage/store_test.h"
#include "storage/rados/rados_conn.h"
#include "storage/rados/radoskey.h"
#include "storage/rados/rados_store.h"

/* the format this mrtx reads and writes */
#define RFORMAT_VERSIONS "4"
/* a store `mrtx upgrade` is converting (rados_upgrade.c): nothing else
 * opens it, nor does a release from before it (they took one digit) */
#define RFORMAT_UPGRADING "U"
/* the oldest format: "1" up to RFORMAT_VERSIONS are mrtx stores, and the
 * ones below RFORMAT_VERSIONS are refused, naming `mrtx upgrade` */
#define RFORMAT_OLDEST "1"
#define RK_GEN_0 0x01u
/* NAME.meta "n/<table>" -> u64 BE: the timestamp a table of that name was
 * dropped at (rados_ddl.c), until a table is created under the name again
 * with its tablets' collection marks there (rados_store_create_table). */
#define RADOS_DROPPED_PREFIX "n/"
#define RK_LOCK 0x02u
#define RK_CELL 0x03u
#define RK_DESC 0x04u
#define RK_PUSH 0x05u
#define RK_ONEPC 0x06u
/* max pairs one listing returns (osd_max_omap_entries_per_request) */
#define RLIST_MAX 1024u
/* rkey of a row: at most 2 bytes per byte + terminator */
#define RKEY_MAX (2u * MRTX_MAX_ROW + 2u)
/* a cell key: tag, rkey(row), fid, rkey(qualifier), vt(ts) */
#define RVT_SIZE 9u
#define RCELL_MAX (1u + RKEY_MAX + 1u + 2u * MRTX_MAX_KEY + 2u + RVT_SIZE)
#define ROID_MAX (RADDR_MAX_NAME + 32u)

typedef struct rtablet {
	uint32_t seq;
	mrtx_bytes start; /* first row (empty for the first tablet) */
	char oid[ROID_MAX];
} rtablet;

/* A table's tablet map, immutable once published; a newer one replaces it
 * (atomically) after a split, and the old one stays allocated until the
 * store is closed, so a pointer into it never dangles. */
typedef struct rtmap {
	struct rtmap *older; /* the maps it replaced */
	size_t n;
	rtablet t[]; /* in row order; their starts point into this block */
} rtmap;

/* A family added while the table was open (store_add_family): its name. */
struct rfam {
	struct rfam *next;
	char name[];
};

typedef struct rtable {
	_Atomic(rtmap *) map;
	uint32_t id;
	struct rfam *added; /* names of families added since the load (freed
	                       at close, with the table) */
} rtable;

typedef struct rts_wait rts_wait;

/* Owners a handle remembers having fenced (more are fenced again). */
#define RFENCED_MAX 64

typedef struct rstore {
	store_head head; /* the backend's table (rados_backend.c) and caps */
	rconn *conn;
	int unbatched;   /* every op of store_write_rows its own call */
	char *addr;      /* the address it was opened with */
	char *name;      /* object name prefix */
	char meta_oid[ROID_MAX];
	uint8_t id[16];
	pthread_mutex_t mu; /* tables */
	store_table **tables;
	size_t ntables, ctables;
	atomic_ulong write_calls, write_txns, read_txns;
	uint32_t split_rows; /* a tablet is split past this many rows; 0: never */
	void (*lock_order)(const void *lock, size_t size, uint8_t *out);
	atomic_ulong splits; /* splits this handle finished (tests, stats) */
	/* forward scans (rados_read.c): cell keys per row seen in the last
	 * page, times 16 (0: none seen yet), to size the next page's cell
	 * listing; a hint only */
	atomic_uint scan_cpr16;
	/* timestamps (rados_ts.c): callers queued for the next batch, whether
	 * one is in flight, the last value this handle knows NAME.ts holds */
	char ts_oid[ROID_MAX];
	pthread_mutex_t ts_mu;
	pthread_cond_t ts_cv;
	rts_wait *ts_queue, **ts_tail;
	int ts_busy, ts_known;
	uint64_t ts_last;
	_Atomic uint64_t ts_hint; /* the highest value of the oracle this
	                             handle knows: reserved, or learnt from a
	                             commit it saw (store_ts_known) */
	/* the registry of running snapshots (rados_snaps.c): NAME.snaps, and
	 * this handle's key there (made at its first publication) */
	char snaps_oid[ROID_MAX];
	char snap_key[64];
	/* fencing (rados_fence.c): NAME.clients, this handle's entry there,
	 * the owners it fenced already */
	char clients_oid[ROID_MAX];
	char *client_key;
	uint8_t fenced[RFENCED_MAX][STORE_OWNER_SIZE];
	size_t nfenced;
} rstore;

static inline rstore *RS(store *st)
{
	return (rstore *)(void *)st;
}

static inline const rstore *RSC(const store *st)
{
	return (const rstore *)(const void *)st;
}

/* Big-endian integers of the layout's records. */
static inline void rbe32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t rbe32_get(const void *q)
{
	const uint8_t *p = q;

	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void rbe64_put(uint8_t *p, uint64_t v)
{
	rbe32_put(p, (uint32_t)(v >> 32));
	rbe32_put(p + 4, (uint32_t)v);
}

static inline uint64_t rbe64_get(const void *q)
{
	return (uint64_t)rbe32_get(q) << 32 | rbe32_get((const uint8_t *)q + 4);
}

/* The object name of tablet seq of table id (ROID_MAX bytes). */
static inline void rados_tablet_oid(const rstore *rs, uint32_t id, uint32_t seq, char *oid)
{
	snprintf(oid, ROID_MAX, "%s.%x.%x", rs->name, id, seq);
}

/* The table's current tablet map. */
static inline rtmap *rados_map(const store_table *t)
{
	return atomic_load_explicit(&((rtable *)t->be)->map, memory_order_acquire);
}

/*
 * rados_store_open, and with `upgrade` a store of an older format or one
 * whose upgrade was cut short opens too -- for the upgrade alone
 * (rados_upgrade.c), which reads its tables and meta records and writes
 * NAME.meta and NAME.ts only: every other call assumes format 4.  *format:
 * the format record's digit ('1'..'4', 'U').  With `upgrade` an address
 * without a store is MRTX_ENOTSTORE: nothing is created.
 */
int rados_store_open_any(store **out, const char *addr, const store_opts *o, int upgrade,
                         char *format);

/* The tablet of m holding row (binary search on the starts). */
const rtablet *rados_tablet_in(const rtmap *m, mrtx_bytes row);
/* The same in the table's current map. */
const rtablet *rados_tablet_of(const store_table *t, mrtx_bytes row);

/*
 * A read or write met a tablet a split retired (or, writing, one not yet
 * open): internal, never leaves the backend.  The caller settles the table
 * (rados_table_settle) and tries again with the new map.
 */
#define RMOVED (-31981)
/* A commit point's guard found a reader's push mark above its stamp
 * (store_push): internal, stamped again and sent again (rados_write.c). */
#define RPUSHED (-31982)
/* An atomic commit's guard found the tablet's one-phase mark at or above
 * its stamp (a commit stamped later landed first): internal, stamped again
 * and sent again (rados_write.c). */
#define RMARKED (-31983)
/* How often a call tries again after RMOVED before giving up. */
#define RMOVED_TRIES 16

/* The tablet-state key and its values' first bytes. */
extern const uint8_t rados_state_key[2];
#define RSTATE_UNBORN 'U'
#define RSTATE_RETIRED 'X'
#define RSTATE_DROPPED 'D'
/* The freeze-mark key (rados_ddl.c). */
extern const uint8_t rados_freeze_key[2];
/*
 * A tablet of t was closed by a drop or truncate (state 'D'; rados_ddl.c),
 * and rec is t's record as stored now (data NULL: none): what the read or
 * write that met it returns.  MRTX_ENOTABLE (dropped; t is GONE),
 * MRTX_CONFLICT (truncated: the name names a new table now; t is GONE),
 * MRTX_ELOCKED (the drop or truncate is finishing: try again).
 */
int rados_table_closed(rstore *rs, const store_table *t, mrtx_bytes rec);
/* A write of NAME.meta that must land only while t is the table of its
 * name and no drop or truncate of it has begun (store_meta_put_new_on):
 * read the keys rados_table_open_keys names (tk, dk: MRTX_MAX_NAME + 3
 * bytes each), then rados_table_open_guard with their values gives the
 * two guards that keep them so, or the answer (MRTX_ENOTABLE,
 * MRTX_CONFLICT as rados_table_closed; MRTX_ELOCKED: begun; MRTX_ECORRUPT). */
void rados_table_open_keys(const store_table *t, char *tk, char *dk);
int rados_table_open_guard(rstore *rs, const store_table *t, const char *tk, const char *dk,
                           mrtx_bytes rec, mrtx_bytes dv, rguard g[2]);
/* Is tablet oid closed by a drop or truncate (state 'D')?  0 or an error
 * of the read (rados_ddl.c). */
int rados_tablet_dropped(rstore *rs, const char *oid, int *dropped);

/*
 * Bring t's map up to date after RMOVED on tablet oid: re-read the table
 * record; if it still lists oid and oid is retired, the split that retired
 * it is finished first (after waiting a while for its splitter), and a
 * listed tablet not yet open is opened.  rados_split.c.
 */
int rados_table_settle(rstore *rs, const store_table *t, const char *oid);
/* rs->mu, which guards the table cache (rados_meta.c). */
void rados_tables_lock(rstore *rs);
void rados_tables_unlock(rstore *rs);
/* Re-read t's version policies and publish them if they changed
 * (rados_meta.c). */
int rados_table_policies_reload(rstore *rs, const store_table *t);
/* Re-read t's record into a new map (rados_meta.c). */
int rados_table_reload(rstore *rs, const store_table *t);
/* The record of t as stored (v.data NULL when gone), read into a. */
int rados_table_record(rstore *rs, const store_table *t, mrtx_arena *a, mrtx_bytes *v);
/* Parse a table record's tablet list into a new map (rados_meta.c). */
int rados_map_parse(rstore *rs, const char *name, mrtx_bytes rec, rtmap **out);
/* Where a record's tablet list begins (after the families), or 0 when the
 * record is malformed. */
size_t rados_record_tablets_at(mrtx_bytes rec);
/* Read/write NAME.meta (rados_meta.c). */
int rados_meta_read(rstore *rs, const char *const *keys, size_t n, mrtx_arena *a,
                    mrtx_bytes *vals);
int rados_meta_cas(rstore *rs, const char *key, mrtx_bytes expect, mrtx_bytes value,
                   int *applied);
/* Make tablets 1..m->n of table id with collection mark ts and (not 0)
 * generation gen (rados_ddl.c). */
int rados_tablets_make(rstore *rs, const rtmap *m, uint32_t id, uint64_t gen, uint64_t ts);
/* One guarded write of NAME.meta: sets, then removals (*applied: whether
 * every guard held). */
int rados_meta_write(rstore *rs, rguard *g, size_t ng, const rkv *sets, size_t ns,
                     const mrtx_bytes *rms, size_t nrms, int *applied);
/*
 * After a write created rows in tablet oid of t: perhaps (sampled) count
 * its rows and split it when over rs->split_rows.  Never fails the caller:
 * a split that fails is left for the next reader or writer to finish.
 */
void rados_split_maybe(rstore *rs, const store_table *t, const char *oid);
/* Key builders; return the key's size.  buf needs RCELL_MAX bytes. */
/*
 * Group n ops by object so that each object gets one compound op: grp[i]
 * receives op i's group (groups numbered by first appearance), order[] the
 * op indices group by group, start[g] / count[g] where group g's run of
 * order[] begins and how long it is.  Every array holds n entries.
 * Returns the number of groups.
 */
size_t rados_group_by_oid(const char *const *oids, size_t n, size_t *grp, size_t *order,
                          size_t *start, size_t *count);
/* rados_read.c */
size_t rados_lock_key(uint8_t *buf, mrtx_bytes row);
size_t rados_push_key(uint8_t *buf, mrtx_bytes row);
size_t rados_onepc_row_key(uint8_t *buf, mrtx_bytes row); /* 0x06 . rkey(row) */
size_t rados_desc_key(uint8_t *buf, mrtx_bytes row);
size_t rados_cell_prefix(uint8_t *buf, mrtx_bytes row); /* 0x03 . rkey(row) */
/* A lock value as stored: the record after its order key
 * (store_opts.lock_order, set for writing), so that store_cond.below is
 * one omap_cmp LT guard.  Into a; MRTX_ENOMEM. */
int rados_lock_value(const rstore *rs, mrtx_bytes rec, mrtx_arena *a, mrtx_bytes *out);
/* The lock record in a stored value of tablet oid (rados_lock_value's
 * inverse; it points into v); MRTX_ECORRUPT when v is too short. */
int rados_lock_record(const rstore *rs, const char *oid, mrtx_bytes v, mrtx_bytes *out);
/* After RMOVED on tablet oid of t, at a call's attempt-th try: settle the
 * table (rados_table_settle), or MRTX_ESTORE once it kept moving for
 * RMOVED_TRIES tries. */
int rados_moved(rstore *rs, const store_table *t, const char *oid, int attempt);
/* Register this handle's client address for owner in NAME.clients
 * (rados_fence.c); remove it at close. */
int rados_fence_register(rstore *rs, const uint8_t *owner);
void rados_fence_unregister(rstore *rs);
/* The store-call fault hook (store.c) with this backend's error mapping. */
int rados_fault(rstore *rs, const char *step, int write);
#define STORE_FAULT_R(rs, step) \
	(MRTX_UNLIKELY(store__fault_armed) ? rados_fault(rs, step, 0) : 0)
/* The index-declaration generation key. */
extern const uint8_t rados_gen_key[2];
/* A tablet's collection mark (rados_gc.c): the safe point of the
 * last `mrtx gc` that removed versions there, as rgen digits. */
extern const uint8_t rados_collect_key[2];
/* A tablet's one-phase mark (rados_write.c): the stamp of the last atomic
 * commit (store_write_atomic) that landed there, as rgen digits; each such
 * commit is guarded by the mark being below its stamp, so the mark rises
 * in landing order.  Splits copy it to both sides. */
extern const uint8_t rados_onepc_key[2];
/* The mark as stored (rgen digits) as a number; 0: none. */
uint64_t rados_mark_value(mrtx_bytes v);

/*
 * A tablet's generation value: gen as eight 7-bit digits, most significant
 * first, each byte < 0x80.  Row writes and gen_spread compare it with
 * omap_cmp LT, and the OSD compares values as signed chars: plain
 * big-endian bytes order wrongly from 128 on (0x80 sorts below 0x7f), which
 * refused every row write once 127 declarations had been made.  Below 128
 * the two encodings are the same bytes, so tablets written before this
 * encoding read the same.  RGEN_MAX bounds the generation (56 bits).
 */
#define RGEN_MAX ((UINT64_C(1) << 56) - 1)

static inline void rgen_put(uint8_t *p, uint64_t gen)
{
	for (int i = 7; i >= 0; i--, gen >>= 7)
		p[i] = (uint8_t)(gen & 0x7f);
}

/* A registry record (rados_snaps.c): key "s/" + this handle's id, value
 * u64 LE oldest snapshot | u64 LE lease end; buf holds RSNAP_VAL bytes. */
#define RSNAP_VAL 16
rkv rados_snap_record(rstore *rs, uint64_t oldest, uint64_t until_us, uint8_t *buf);
/* The oracle's stored value "ts" (rados_ts.c): 0, or -1 when malformed. */
int rados_ts_decode(mrtx_bytes v, uint64_t *out);

/* ---- cell versions (rados_cell.c) ---- */

struct store_ver;
/* vt(ts): ~ts as nine 7-bit digits plus one (RVT_SIZE bytes, no 0x00). */
void rados_vt_put(uint8_t *p, uint64_t ts);
int rados_vt_get(const uint8_t *p, uint64_t *ts);
/* cp[0..cpn) . fid+1 . rkey(q): a cell's key without its vt; returns the
 * length (out needs RCELL_MAX bytes). */
size_t rados_vcell_prefix(uint8_t *out, const uint8_t *cp, size_t cpn, uint8_t fid,
                          mrtx_bytes q);
/* Parse a version key of the row whose cell prefix is plen bytes: fid,
 * qualifier (decoded into qbuf, room for the key's size) and ts; -1 when
 * malformed. */
int rados_vcell_parse(const uint8_t *k, size_t klen, size_t plen, size_t nfamilies,
                      uint8_t *qbuf, struct store_ver *out);
/* Does mutation m need the row's live cells read first (a deletion of a
 * row or family: a tombstone per live cell)? */
int rados_vmut_needs_pre(const store_mut *m);
/* Add m, written at ts, to compound write w (kb: RCELL_MAX scratch;
 * pre: the row's live cells when rados_vmut_needs_pre).  MRTX_ENOMEM;
 * MRTX_EINVAL (ts 0 or past 2^63: every writer of cells gives one). */
int rados_vmut_add(const store_table *t, rados_write_op_t w, const uint8_t *cp, size_t cpn,
                   const store_mut *m, uint64_t ts, const store_row *pre, uint8_t *kb,
                   mrtx_arena *a);

#endif
