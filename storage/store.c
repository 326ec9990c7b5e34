/*
 * store.c - the storage seam's front: dispatch to the backend that holds a
 * store (store_head.kind), the parts of the seam that are the same for
 * every backend (family lookup, key limits), and the store-call fault hook
 * that tests arm.
 *
 * The LMDB branch is a direct call, so link-time optimisation still
 * inlines the embedded store's hot paths; RADOS is compiled in when
 * librados is found (MRTX_HAVE_RADOS).
 */
#include "store.h"
#include "keyenc.h"
#include "lmdb/lmdb_store.h"
#ifdef MRTX_HAVE_RADOS
#include "rados/rados_store.h"
#endif

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#ifdef MRTX_HAVE_RADOS
#define DISPATCH(st, fn, ...)                                                  \
	(store_kind_of(st) == STORE_RADOS ? rados_store_##fn(__VA_ARGS__) :    \
	                                    lmdb_store_##fn(__VA_ARGS__))
#else
#define DISPATCH(st, fn, ...) lmdb_store_##fn(__VA_ARGS__)
#endif

#define RADOS_SCHEME "rados://"

int store_open(store **out, const char *path, const store_opts *opts)
{
	if (strncmp(path, RADOS_SCHEME, strlen(RADOS_SCHEME)) == 0) {
#ifdef MRTX_HAVE_RADOS
		return rados_store_open(out, path, opts);
#else
		return mrtx__seterr(MRTX_EINVAL, "%s: this mrtx was built without RADOS support "
		                    "(librados-dev was not found at build time)", path);
#endif
	}
	return lmdb_store_open(out, path, opts);
}

int store_upgrade(const char *path, store_upgrade_ts_fn row_ts,
                  void (*lock_order)(const void *lock, size_t size, uint8_t *out),
                  uint64_t *cells, int *was)
{
	*cells = 0;
	*was = 0;
	if (strncmp(path, RADOS_SCHEME, strlen(RADOS_SCHEME)) == 0) {
#ifdef MRTX_HAVE_RADOS
		return rados_store_upgrade(path, row_ts, lock_order, cells, was);
#else
		(void)lock_order;
		return mrtx__seterr(MRTX_EINVAL, "%s: this mrtx was built without RADOS support "
		                    "(librados-dev was not found at build time)", path);
#endif
	}
	return lmdb_upgrade(path, row_ts, lock_order, cells, was);
}

int store_check_file(const char *path, const store_file_opts *o, store_file_stats *stats)
{
	if (strncmp(path, RADOS_SCHEME, strlen(RADOS_SCHEME)) == 0) {
		memset(stats, 0, sizeof(*stats));
		stats->meta = -1;
		return mrtx__seterr(MRTX_ENOTSUP, "%s: a RADOS store has no file to check page by "
		                    "page (the deep check is LMDB's)", path);
	}
	return lmdb_store_check_file(path, o, stats);
}

void store_close(store *st)
{
	if (st)
		DISPATCH(st, close, st);
}

const char *store_path(const store *st)
{
	return DISPATCH(st, path, st);
}

int store_is_unbatched(const store *st)
{
	return DISPATCH(st, is_unbatched, st);
}

const uint8_t *store_id(const store *st)
{
	return DISPATCH(st, id, st);
}

int store_supports_cond(const store *st)
{
#ifdef MRTX_HAVE_RADOS
	if (store_kind_of(st) == STORE_RADOS)
		return rados_store_supports_cond(st);
#endif
	return store_kind_of(st) == STORE_LMDB;
}

/* The guard of every write entry point: a read-only store writes nothing. */
static int refuse_write(const store *st, const char *what)
{
	return mrtx__seterr(MRTX_EREADONLY, "store %s is open read-only: %s is a write",
	                    store_path(st), what);
}

/* Is every policy of pol[0..n) "one version" (or pol NULL)? */
static int one_version_each(const store_policy *pol, size_t n)
{
	for (size_t i = 0; pol && i < n; i++)
		if (pol[i].max_versions != 1 || pol[i].min_versions || pol[i].ttl_ms)
			return 0;
	return 1;
}

int store_create_table(store *st, const char *name, const char *const *families,
                       size_t nfamilies, const store_policy *pol, const mrtx_bytes *splits,
                       size_t nsplits)
{
	if (store_read_only(st))
		return refuse_write(st, "creating a table");
	if (one_version_each(pol, nfamilies))
		pol = NULL;
#ifdef MRTX_HAVE_RADOS
	if (store_kind_of(st) == STORE_RADOS)
		return rados_store_create_table(st, name, families, nfamilies, pol, splits, nsplits);
#endif
	(void)splits; /* one B-tree: nothing to split */
	(void)nsplits;
	return lmdb_store_create_table(st, name, families, nfamilies, pol);
}

int store_table_find(store *st, const char *name, const store_table **out)
{
	return DISPATCH(st, table_find, st, name, out);
}

#ifdef MRTX_HAVE_RADOS
#define LMDB_ONLY(st, what)                                                    \
	do {                                                                   \
		if (store_kind_of(st) == STORE_RADOS)                          \
			return mrtx__seterr(MRTX_ENOTSUP, "%s: %s is not supported " \
			                    "on a RADOS store (LMDB only)",    \
			                    store_path(st), what);             \
	} while (0)
#else
#define LMDB_ONLY(st, what) ((void)0)
#endif

int store_add_family(store *st, const store_table *t, const char *family)
{
	if (store_read_only(st))
		return refuse_write(st, "adding a family");
	LMDB_ONLY(st, "adding a family");
	return lmdb_store_add_family(st, t, family);
}

int store_table_freeze(store *st, const store_table *t, int on, uint64_t *token)
{
	if (store_read_only(st))
		return refuse_write(st, "dropping or truncating a table");
	LMDB_ONLY(st, "dropping or truncating a table");
	return lmdb_store_table_freeze(st, t, on, token);
}

int store_table_clear(store *st, const store_table *t, int drop, uint64_t token)
{
	if (store_read_only(st))
		return refuse_write(st, "dropping or truncating a table");
	LMDB_ONLY(st, "dropping or truncating a table");
	return lmdb_store_table_clear(st, t, drop, token);
}

int store_table_refresh(store *st)
{
#ifdef MRTX_HAVE_RADOS
	if (store_kind_of(st) == STORE_RADOS)
		return 0; /* no schema changes on RADOS */
#endif
	return lmdb_store_table_refresh(st);
}

int store_tables_list(store *st, const store_table ***out, size_t *count)
{
	return DISPATCH(st, tables_list, st, out, count);
}

#ifdef MRTX_HAVE_RADOS
#define IS_RADOS(st) (store_kind_of(st) == STORE_RADOS)
#else
#define IS_RADOS(st) 0
#endif

int store_view_open(store *st, store_view **out)
{
	struct lmdb_rtxn *v;
	int rc;

	*out = NULL;
	if (IS_RADOS(st))
		return MRTX_ENOTSUP; /* no snapshot spans objects (DESIGN §9) */
	if ((rc = lmdb_store_view_open(st, &v)))
		return rc;
	*out = (store_view *)(void *)v;
	return 0;
}

int store_view_open_ts(store *st, store_view **out)
{
	int rc = 0;

	/* (a view whose timestamp is unknown because writers kept landing
	 * commits while it was pinned is taken again) */
	for (int tries = 0; tries < 16; tries++) {
		if (tries)
			store_view_close(st, *out);
		if ((rc = store_view_open(st, out)) || store_view_ts(st, *out))
			break;
	}
	return rc;
}

int store_gc_mark(store *st, uint64_t safe, int end)
{
	if (store_read_only(st))
		return refuse_write(st, "collecting versions");
	return DISPATCH(st, gc_mark, st, safe, end);
}

int store_gc_step(store *st, const store_table *t, uint8_t *row, size_t *rowlen, uint64_t safe,
                  size_t max_rows, int *done, uint64_t *collected)
{
	if (store_read_only(st))
		return refuse_write(st, "collecting versions");
	return DISPATCH(st, gc_step, st, t, row, rowlen, safe, max_rows, done, collected);
}

int store_trims_on_write(const store *st)
{
#ifdef MRTX_HAVE_RADOS
	if (IS_RADOS(st))
		return 0;
#endif
	(void)st;
	return 1;
}

int store_trim_row(store *st, const store_table *t, mrtx_bytes row, uint64_t safe)
{
	if (store_read_only(st))
		return refuse_write(st, "trimming versions");
#ifdef MRTX_HAVE_RADOS
	if (IS_RADOS(st))
		return rados_store_trim_row(st, t, row, safe);
#endif
	(void)t;
	(void)row;
	(void)safe;
	return 0;
}

int store_push(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes lock, uint64_t ts)
{
	if (store_read_only(st))
		return refuse_write(st, "pushing a lock's commit");
#ifdef MRTX_HAVE_RADOS
	if (IS_RADOS(st))
		return rados_store_push(st, t, row, lock, ts);
#endif
	(void)t;
	(void)row;
	(void)lock;
	(void)ts;
	return mrtx__seterr(MRTX_ENOTSUP, "%s: pushing a lock's commit is for stores whose "
	                    "readers would wait (RADOS)", store_path(st));
}

int store_snap_publish(store *st, uint64_t ts, uint64_t until_us)
{
#ifdef MRTX_HAVE_RADOS
	if (IS_RADOS(st))
		return rados_store_snap_publish(st, ts, until_us);
#endif
	(void)st;
	(void)ts;
	(void)until_us;
	return 0;
}

int store_snap_oldest(store *st, uint64_t now_us, uint64_t *oldest)
{
	*oldest = UINT64_MAX;
#ifdef MRTX_HAVE_RADOS
	if (IS_RADOS(st))
		return rados_store_snap_oldest(st, now_us, oldest);
#endif
	(void)st;
	(void)now_us;
	return 0;
}

int store_gc_cursor(store *st, uint64_t *safe, char *table, uint8_t *row, size_t *rowlen,
                    int *table_done)
{
	return DISPATCH(st, gc_cursor, st, safe, table, row, rowlen, table_done);
}

uint64_t store_view_ts(const store *st, const store_view *v)
{
	(void)st;
	return v ? lmdb_store_view_ts((const struct lmdb_rtxn *)(const void *)v) : 0;
}

void store_view_close(store *st, store_view *v)
{
	if (v)
		lmdb_store_view_close(st, (struct lmdb_rtxn *)(void *)v);
}

int store_read_row_in(store *st, store_view *v, const store_table *t, mrtx_bytes row,
                      const store_filter *f, mrtx_arena *a, store_row *out)
{
	out->lock_lazy = 0;
#ifdef MRTX_HAVE_RADOS
	if (IS_RADOS(st))
		return rados_store_read_row(st, t, row, f, a, out);
#endif
	return lmdb_store_read_row(st, (struct lmdb_rtxn *)(void *)v, t, row, f, a, out);
}

int store_read_row(store *st, const store_table *t, mrtx_bytes row, const store_filter *f,
                   mrtx_arena *a, store_row *out)
{
	return store_read_row_in(st, NULL, t, row, f, a, out);
}

int store_read_locks_in(store *st, store_view *v, const store_rowref *refs, size_t n,
                        mrtx_arena *a, store_row *out)
{
#ifdef MRTX_HAVE_RADOS
	if (IS_RADOS(st))
		return rados_store_read_locks(st, refs, n, a, out);
#endif
	return lmdb_store_read_locks(st, (struct lmdb_rtxn *)(void *)v, refs, n, a, out);
}

int store_read_locks(store *st, const store_rowref *refs, size_t n, mrtx_arena *a,
                     store_row *out)
{
	return store_read_locks_in(st, NULL, refs, n, a, out);
}

int store_scan_rows_in(store *st, store_view *v, const store_table *t, const store_range *r,
                       int reverse, const store_filter *f, size_t max_rows, mrtx_arena *a,
                       store_row **rows, size_t *nrows, int *more)
{
#ifdef MRTX_HAVE_RADOS
	if (IS_RADOS(st))
		return rados_store_scan_rows(st, t, r, reverse, f, max_rows, a, rows, nrows, more);
#endif
	return lmdb_store_scan_rows(st, (struct lmdb_rtxn *)(void *)v, t, r, reverse, f,
	                            max_rows, a, rows, nrows, more);
}

int store_scan_rows(store *st, const store_table *t, const store_range *r, int reverse,
                    const store_filter *f, size_t max_rows, mrtx_arena *a, store_row **rows,
                    size_t *nrows, int *more)
{
	return store_scan_rows_in(st, NULL, t, r, reverse, f, max_rows, a, rows, nrows, more);
}

int store_write_rows(store *st, store_op *ops, size_t n)
{
	if (store_read_only(st)) {
		for (size_t i = 0; i < n; i++)
			ops[i].result = MRTX_EREADONLY; /* surely not applied */
		return refuse_write(st, "writing rows");
	}
	return DISPATCH(st, write_rows, st, ops, n);
}

int store_supports_atomic(const store *st)
{
	return store_kind_of(st) == STORE_LMDB && !store_is_unbatched(st);
}

int store_write_atomic(store *st, store_op *ops, size_t n, store_rcheck *checks,
                       size_t nchecks, int *applied)
{
	*applied = 0;
	if (store_read_only(st)) {
		for (size_t i = 0; i < n; i++)
			ops[i].result = MRTX_EREADONLY; /* surely not applied */
		return refuse_write(st, "writing rows");
	}
	if (!store_supports_atomic(st))
		return mrtx__seterr(MRTX_ENOTSUP, "store %s cannot write several rows "
		                    "atomically", store_path(st));
	return lmdb_store_write_atomic(st, ops, n, checks, nchecks, applied);
}

void store_counters_get(store *st, store_counters *out)
{
	DISPATCH(st, counters_get, st, out);
}

int store_get_info(store *st, store_info *out)
{
	int rc = DISPATCH(st, get_info, st, out);

	if (rc == 0) {
		out->kind = ((const store_head *)st)->kind == STORE_RADOS ? "rados" : "lmdb";
		out->read_only = store_read_only(st);
	}
	return rc;
}

int store_copy(store *st, const char *dir)
{
	if (store_kind_of(st) != STORE_LMDB)
		return mrtx__seterr(MRTX_EINVAL, "%s: a RADOS store has no files to copy",
		                    store_path(st));
	return lmdb_store_copy(st, dir);
}

int store_sync(store *st)
{
	if (store_kind_of(st) != STORE_LMDB)
		return 0;
	return lmdb_store_sync(st);
}

uint64_t store_view_point(store *st, const store_view *v)
{
	if (store_kind_of(st) != STORE_LMDB || !v)
		return 0;
	return lmdb_view_txnid((const struct lmdb_rtxn *)(const void *)v);
}

int store_sync_visible(store *st, uint64_t point)
{
	if (store_kind_of(st) != STORE_LMDB)
		return 0;
	return lmdb_store_sync_visible(st, point);
}

int store_unsettled_verify(store *st)
{
	if (store_kind_of(st) != STORE_LMDB)
		return 0;
	return lmdb_store_unsettled_verify(st);
}

int store_ts_next(store *st, uint64_t floor, uint64_t *out)
{
	return DISPATCH(st, ts_next, st, floor, out);
}

int store_ts_snapshot(store *st, const store_snap_set *set, uint64_t until_us,
                      uint64_t *out)
{
#ifdef MRTX_HAVE_RADOS
	if (IS_RADOS(st))
		return rados_store_ts_snapshot(st, set, until_us, out);
#endif
	int rc;

	(void)until_us;
	if ((rc = lmdb_store_ts_next(st, 0, out)) == 0)
		set->enter(set->arg, *out);
	return rc;
}

int store_ts_start(store *st, uint64_t *out)
{
#ifdef MRTX_HAVE_RADOS
	if (IS_RADOS(st))
		return rados_store_ts_start(st, out);
#endif
	return lmdb_store_ts_known(st, out);
}

int store_ts_known(store *st, uint64_t *out)
{
	return DISPATCH(st, ts_known, st, out);
}

void store_ts_learn(store *st, uint64_t ts)
{
	DISPATCH(st, ts_learn, st, ts);
}

void store__clock_offset(store *st, long long us)
{
	atomic_store(&((store_head *)(void *)st)->clock_offset_us, us);
}

_Atomic unsigned long store__syncs;
_Atomic long long store__trim_lag_us = STORE_TRIM_LAG_US;
_Atomic int store__rados_old_formats;
_Atomic int store__lmdb_inexact_views;

int store_keeps_versions(const store *st)
{
#ifdef MRTX_HAVE_RADOS
	if (IS_RADOS(st))
		return rados_store_keeps_versions(st);
#endif
	(void)st;
	return 1;
}

int store_ts_now(store *st, uint64_t *out)
{
	*out = 0;
#ifdef MRTX_HAVE_RADOS
	if (IS_RADOS(st))
		return rados_store_ts_now(st, out);
#endif
	return mrtx__seterr(MRTX_ENOTSUP, "%s: an LMDB store's snapshot timestamp is its "
	                    "view's (store_view_ts)", store_path(st));
}

int store_meta_get_in(store *st, store_view *v, const char *key, mrtx_arena *a,
                      mrtx_bytes *out)
{
#ifdef MRTX_HAVE_RADOS
	if (IS_RADOS(st))
		return rados_store_meta_get(st, key, a, out);
#endif
	return lmdb_store_meta_get(st, (struct lmdb_rtxn *)(void *)v, key, a, out);
}

int store_meta_get(store *st, const char *key, mrtx_arena *a, mrtx_bytes *out)
{
	return store_meta_get_in(st, NULL, key, a, out);
}

int store_meta_put_new(store *st, const char *key, mrtx_bytes value)
{
	if (store_read_only(st))
		return refuse_write(st, "adding a metadata record");
	return DISPATCH(st, meta_put_new, st, key, value);
}

int store_meta_list(store *st, const char *prefix, mrtx_arena *a,
                    int (*fn)(const char *key, mrtx_bytes value, void *payload), void *payload,
                    uint64_t *gen)
{
	return DISPATCH(st, meta_list, st, prefix, a, fn, payload, gen);
}

/* ------------------------------------------------ the same for every backend */

static int family_lookup(const store_table *t, const char *family, uint8_t *fid)
{
	size_t n = t->nfamilies;

	for (size_t i = 0; i < n; i++)
		if (strcmp(t->families[i], family) == 0) {
			*fid = (uint8_t)i;
			return 0;
		}
	return MRTX_ENOFAMILY;
}

int store_family_find(store *st, const store_table *t, const char *family, uint8_t *fid)
{
	if (!family)
		return mrtx__seterr(MRTX_EINVAL, "family is NULL (table '%s')", t->name);
	/* a miss may be a family another handle added (mrtx_add_family):
	 * refresh once before saying no */
	if (family_lookup(t, family, fid) == 0 ||
	    (store_table_refresh(st) == 0 && family_lookup(t, family, fid) == 0))
		return 0;
	return mrtx__seterr(MRTX_ENOFAMILY, "table '%s' has no family '%.64s'", t->name, family);
}

int store_check_name(const char *what, const char *s)
{
	size_t n;

	if (!s)
		return mrtx__seterr(MRTX_EINVAL, "%s name is NULL", what);
	n = strlen(s);
	if (n == 0)
		return mrtx__seterr(MRTX_EINVAL, "%s name is empty", what);
	if (n > MRTX_MAX_NAME)
		return mrtx__seterr(MRTX_ETOOBIG, "%s name '%.20s...' is %zu bytes; the limit is %u",
		                    what, s, n, MRTX_MAX_NAME);
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~' || s[i] == '/' || s[i] == ':')
			return mrtx__seterr(MRTX_EINVAL, "%s name '%s' has a character outside "
			                    "printable ASCII or one of space / :", what, s);
	return 0;
}

int store_check_table_spec(const char *name, const char *const *families, size_t n)
{
	int rc;

	if ((rc = store_check_name("table", name)))
		return rc;
	if (!families || n == 0)
		return mrtx__seterr(MRTX_EINVAL, "table '%s' needs at least one family", name);
	if (n > MRTX_MAX_FAMILIES)
		return mrtx__seterr(MRTX_ETOOBIG, "table '%s': %zu families; the limit is %u",
		                    name, n, MRTX_MAX_FAMILIES);
	for (size_t i = 0; i < n; i++) {
		if ((rc = store_check_name("family", families[i])))
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(families[i], families[j]) == 0)
				return mrtx__seterr(MRTX_EINVAL, "table '%s': family '%s' listed twice",
				                    name, families[i]);
	}
	return 0;
}

/*
 * The key limits are LMDB's (a cell key P . enc(row) . fid . qualifier fits
 * 511 bytes), and every backend enforces them, so a store's data can move
 * between backends unchanged.
 */
int store_check_key(const store_table *t, mrtx_bytes row, size_t qual_size)
{
	size_t k;

	if (row.size == 0)
		return mrtx__seterr(MRTX_EINVAL, "table '%s': row key is empty", t->name);
	if (!row.data)
		return mrtx__seterr(MRTX_EINVAL, "table '%s': row data is NULL", t->name);
	if (row.size > MRTX_MAX_ROW)
		return mrtx__seterr(MRTX_ETOOBIG, "table '%s': row of %zu bytes; the limit is %u",
		                    t->name, row.size, MRTX_MAX_ROW);
	if (qual_size > MRTX_MAX_KEY)
		return mrtx__seterr(MRTX_ETOOBIG, "table '%s': qualifier of %zu bytes; a whole "
		                    "key is at most %u", t->name, qual_size, MRTX_MAX_KEY);
	/* Fits even if every byte were a NUL (2 * row + 2 + fid): no need to
	 * count them.  Most keys are far below the limit. */
	if (STORE_KEY_PREFIX + 2 * row.size + 3 + STORE_VERSION_KEY + qual_size <= MRTX_MAX_KEY)
		return 0;
	k = STORE_KEY_PREFIX + keyenc_cell_size(row.data, row.size, qual_size) + STORE_VERSION_KEY;
	if (k > MRTX_MAX_KEY)
		return mrtx__seterr(MRTX_ETOOBIG, "table '%s': row of %zu bytes with qualifier of "
		                    "%zu bytes encodes to a %zu-byte key (with a version's 11 "
		                    "bytes); the limit is %u (row + NUL bytes in row + 16 + "
		                    "qualifier)", t->name, row.size, qual_size, k, MRTX_MAX_KEY);
	return 0;
}

/* ------------------------------------------------------ fault injection */

/*
 * Test hook (store.h, store__fail_at): while armed, every store call
 * (store_read_row, store_read_locks, store_scan_rows, store_write_rows) is
 * counted and the n-th fails with the armed error before touching the
 * store.  Off, it costs one load and a predicted branch.
 */
atomic_int store__fault_armed;
static atomic_ulong fault_calls, fault_at;
static atomic_int fault_err, fault_from;

static unsigned long fail_arm(unsigned long n, int err, int from)
{
	unsigned long before = atomic_exchange(&fault_calls, 0);

	atomic_store(&fault_err, err ? err : EIO);
	atomic_store(&fault_at, n);
	atomic_store(&fault_from, from);
	atomic_store(&store__fault_armed, n != 0);
	return before;
}

unsigned long store__fail_at(unsigned long n, int err)
{
	return fail_arm(n, err, 0);
}

unsigned long store__fail_from(unsigned long n, int err)
{
	return fail_arm(n, err, 1);
}

int store__fault_hit(int write)
{
	unsigned long n = atomic_fetch_add(&fault_calls, 1) + 1, at = atomic_load(&fault_at);
	int err;

	if (n != at && !(atomic_load(&fault_from) && n > at))
		return 0;
	err = atomic_load(&fault_err);
	if (err == STORE_FAULT_APPLIED && !write)
		return EIO;
	return err;
}
