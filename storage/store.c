/*
 * store.c - the storage seam's front: find the backend of an address, make
 * the checks every backend shares (a read-only store writes nothing; an
 * operation outside the store's capabilities is MRTX_ENOTSUP or its
 * documented default), then call the store's table of operations
 * (storage/backend.h); the parts of the seam that are the same for every
 * backend (family lookup, key limits); and the store-call fault hook that
 * tests arm.
 */
#include "backend.h"
#include "store_test.h"
#include "keyenc.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

/* The backends this mrtx was built with: the first whose scheme starts an
 * address opens it; the one without a scheme opens every other address. */
static const store_backend *const backends[] = {
#ifdef MRTX_HAVE_RADOS
	&rados_backend,
#endif
	&lmdb_backend,
};

#define BE(st) (((const store_head *)(const void *)(st))->be)

static const store_backend *backend_of(const char *path)
{
	const store_backend *dir = NULL;

	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		const char *s = backends[i]->scheme;

		if (backends[i]->version != STORE_BACKEND_VERSION)
			continue; /* (a table of another shape: not called) */
		if (!s)
			dir = backends[i];
		else if (strncmp(path, s, strlen(s)) == 0)
			return backends[i];
	}
	return dir;
}

/* An address of a backend this mrtx was built without (RADOS): the error,
 * else 0. */
static int unbuilt(const char *path)
{
#ifdef MRTX_HAVE_RADOS
	(void)path;
	return 0;
#else
	if (strncmp(path, "rados://", 8) != 0)
		return 0;
	return mrtx__seterr(MRTX_EINVAL, "%s: this mrtx was built without RADOS support "
	                    "(librados-dev was not found at build time)", path);
#endif
}

int store_open(store **out, const char *path, const store_opts *opts)
{
	const store_backend *be = backend_of(path);
	int rc;

	*out = NULL;
	if ((rc = unbuilt(path)) || !be)
		return rc ? rc : mrtx__seterr(MRTX_EINVAL, "%s: no backend opens it", path);
	/* (the backend sets the store's head: its table and caps) */
	return be->open(out, path, opts);
}

int store_upgrade(const char *path, store_upgrade_ts_fn row_ts,
                  void (*lock_order)(const void *lock, size_t size, uint8_t *out),
                  uint64_t *cells, int *was)
{
	const store_backend *be = backend_of(path);
	int rc;

	*cells = 0;
	*was = 0;
	if ((rc = unbuilt(path)) || !be)
		return rc ? rc : mrtx__seterr(MRTX_EINVAL, "%s: no backend opens it", path);
	return be->upgrade(path, row_ts, lock_order, cells, was);
}

int store_check_file(const char *path, const store_file_opts *o, store_file_stats *stats)
{
	const store_backend *be = backend_of(path);

	if (strncmp(path, "rados://", 8) == 0 || !be || !be->check_file) {
		memset(stats, 0, sizeof(*stats));
		stats->meta = -1;
		return mrtx__seterr(MRTX_ENOTSUP, "%s: a RADOS store has no file to check page by "
		                    "page (the deep check is LMDB's)", path);
	}
	return be->check_file(path, o, stats);
}

void store_close(store *st)
{
	if (st)
		BE(st)->close(st);
}

const char *store_path(const store *st)
{
	return BE(st)->path(st);
}

const uint8_t *store_id(const store *st)
{
	return BE(st)->id(st);
}

/* The guard of every write entry point: a read-only store writes nothing. */
static int refuse_write(const store *st, const char *what)
{
	return mrtx__seterr(MRTX_EREADONLY, "store %s is open read-only: %s is a write",
	                    store_path(st), what);
}

/* What a store without the capability cannot do (the schema changes:
 * LMDB's alone). */
static int lacks(const store *st, const char *what)
{
	return mrtx__seterr(MRTX_ENOTSUP, "%s: %s is not supported on a %s store (LMDB only)",
	                    store_path(st), what, BE(st)->title);
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
	int rc;

	/* (first: every message below names the table, and a backend may
	 * build keys from the name as it sets up) */
	if ((rc = store_check_table_spec(name, families, nfamilies)))
		return rc;
	if (store_read_only(st))
		return refuse_write(st, "creating a table");
	if (one_version_each(pol, nfamilies))
		pol = NULL;
	if (pol && !store_has(st, STORE_CAP_VERSIONS))
		return mrtx__seterr(MRTX_ENOTSUP, "%s: a %s store keeps one version of each cell: "
		                    "table '%s' cannot keep more", store_path(st), BE(st)->title,
		                    name);
	return BE(st)->create_table(st, name, families, nfamilies, pol, splits, nsplits);
}

int store_table_find(store *st, const char *name, const store_table **out)
{
	return BE(st)->table_find(st, name, out);
}

int store_add_family(store *st, const store_table *t, const char *family)
{
	if (store_read_only(st))
		return refuse_write(st, "adding a family");
	if (!store_has(st, STORE_CAP_SCHEMA))
		return lacks(st, "adding a family");
	return BE(st)->add_family(st, t, family);
}

int store_table_freeze(store *st, const store_table *t, int on, uint64_t *token)
{
	if (store_read_only(st))
		return refuse_write(st, "dropping or truncating a table");
	if (!store_has(st, STORE_CAP_SCHEMA))
		return lacks(st, "dropping or truncating a table");
	return BE(st)->table_freeze(st, t, on, token);
}

int store_table_clear(store *st, const store_table *t, int drop, uint64_t token)
{
	if (store_read_only(st))
		return refuse_write(st, "dropping or truncating a table");
	if (!store_has(st, STORE_CAP_SCHEMA))
		return lacks(st, "dropping or truncating a table");
	return BE(st)->table_clear(st, t, drop, token);
}

int store_table_closed(store *st, const store_table *t, int *closed)
{
	int held = 0, rc;

	*closed = 0;
	if (!BE(st)->table_held)
		return 0;
	rc = BE(st)->table_held(st, t, &held);
	*closed = held == STORE_HELD_CLOSED;
	return rc;
}

int store_table_held(store *st, const store_table *t, int *held)
{
	int rc;

	*held = 0;
	if (BE(st)->table_held)
		return BE(st)->table_held(st, t, held);
	if ((rc = store_table_refresh(st)))
		return rc;
	if (atomic_load_explicit(&((store_table *)(uintptr_t)t)->state, memory_order_acquire) ==
	    STORE_T_FROZEN)
		*held = STORE_HELD_FROZEN;
	return 0;
}

int store_drop_family(store *st, const store_table *t, unsigned fid, uint64_t token)
{
	if (store_read_only(st))
		return refuse_write(st, "dropping a family");
	if (!store_has(st, STORE_CAP_SCHEMA) || !BE(st)->drop_family)
		return lacks(st, "dropping a family");
	return BE(st)->drop_family(st, t, fid, token);
}

int store_fence(store *st, const uint8_t *owner, int expired, size_t *fenced, size_t *denied)
{
	*fenced = *denied = 0;
	if (store_read_only(st) || !BE(st)->fence)
		return 0;
	return BE(st)->fence(st, owner, expired, fenced, denied);
}

int store_fence_dead(store *st, int (*dead)(const uint8_t *owner, void *arg), void *arg,
                     size_t *fenced, size_t *denied)
{
	*fenced = *denied = 0;
	if (store_read_only(st) || !BE(st)->fence_dead)
		return 0;
	return BE(st)->fence_dead(st, dead, arg, fenced, denied);
}

int store_drops_families(const store *st)
{
	return store_has(st, STORE_CAP_SCHEMA) && BE(st)->drop_family;
}

void store_table_live(const store_table *t, const char *const **names, size_t *n)
{
	const store_names *l = atomic_load_explicit(&((store_table *)(uintptr_t)t)->live,
	                                            memory_order_acquire);

	if (!l) {
		*names = t->families;
		*n = atomic_load(&((store_table *)(uintptr_t)t)->nfamilies);
		return;
	}
	*names = l->name;
	*n = l->n;
}

int store_table_mark_dropped(store_table *t, const uint64_t bits_in[4])
{
	store_names *cur = atomic_load(&t->live), *l;
	uint64_t bits[4];
	size_t live = 0, nfam = atomic_load(&t->nfamilies);
	int any = 0;

	for (unsigned w = 0; w < 4; w++)
		bits[w] = bits_in[w] | atomic_load(&t->dropped[w]);
	for (unsigned w = 0; w < 4; w++)
		any |= bits[w] != 0;
	if (!any)
		return 0;
	if (cur && memcmp(cur->dropped, bits, sizeof(bits)) == 0) {
		size_t had = 0;

		for (size_t i = 0; i < nfam; i++)
			had += !((bits[i >> 6] >> (i & 63)) & 1);
		if (had == cur->n)
			return 0;
	}
	if (!(l = mrtx__calloc(1, sizeof(*l) + nfam * sizeof(l->name[0]))))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory loading table '%s'", t->name);
	for (size_t i = 0; i < nfam; i++)
		if (!((bits[i >> 6] >> (i & 63)) & 1))
			l->name[live++] = t->families[i];
	l->n = live;
	memcpy(l->dropped, bits, sizeof(bits));
	/* the bits first: a name the list leaves out is never found again */
	for (unsigned w = 0; w < 4; w++)
		atomic_fetch_or(&t->dropped[w], bits[w]);
	l->older = cur;
	atomic_store_explicit(&t->live, l, memory_order_release);
	return 0;
}

int store_alter_family(store *st, const store_table *t, unsigned fid, const store_policy *pol)
{
	if (store_read_only(st))
		return refuse_write(st, "changing a family's versions");
	if (!store_has(st, STORE_CAP_SCHEMA) || !BE(st)->alter_family)
		return lacks(st, "changing a family's versions");
	return BE(st)->alter_family(st, t, fid, pol);
}

int store_table_refresh(store *st)
{
	/* (without schema changes, nothing to refresh) */
	return store_has(st, STORE_CAP_SCHEMA) ? BE(st)->table_refresh(st) : 0;
}

int store_tables_list(store *st, const store_table ***out, size_t *count)
{
	return BE(st)->tables_list(st, out, count);
}

int store_view_open(store *st, store_view **out)
{
	*out = NULL;
	if (!store_has(st, STORE_CAP_VIEWS))
		return MRTX_ENOTSUP; /* no snapshot spans objects (DESIGN §9) */
	return BE(st)->view_open(st, out);
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

uint64_t store_view_ts(const store *st, const store_view *v)
{
	return v ? BE(st)->view_ts(v) : 0;
}

void store_view_close(store *st, store_view *v)
{
	if (v)
		BE(st)->view_close(st, v);
}

uint64_t store_view_point(store *st, const store_view *v)
{
	return v ? BE(st)->view_point(v) : 0;
}

int store_sync_visible(store *st, uint64_t point)
{
	return store_has(st, STORE_CAP_VIEWS) ? BE(st)->sync_visible(st, point) : 0;
}

int store_gc_mark(store *st, uint64_t safe, int end)
{
	if (store_read_only(st))
		return refuse_write(st, "collecting versions");
	return BE(st)->gc_mark(st, safe, end);
}

int store_gc_step(store *st, const store_table *t, uint8_t *row, size_t *rowlen, uint64_t safe,
                  size_t max_rows, int *done, uint64_t *collected)
{
	if (store_read_only(st))
		return refuse_write(st, "collecting versions");
	return BE(st)->gc_step(st, t, row, rowlen, safe, max_rows, done, collected);
}

int store_gc_cursor(store *st, uint64_t *safe, char *table, uint8_t *row, size_t *rowlen,
                    int *table_done)
{
	return BE(st)->gc_cursor(st, safe, table, row, rowlen, table_done);
}

int store_trim_row(store *st, const store_table *t, mrtx_bytes row, uint64_t safe)
{
	if (store_read_only(st))
		return refuse_write(st, "trimming versions");
	/* (a store that trims on every write has nothing left to trim) */
	return store_has(st, STORE_CAP_TRIMS_ON_WRITE) ? 0 : BE(st)->trim_row(st, t, row, safe);
}

int store_push(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes lock, uint64_t ts)
{
	if (store_read_only(st))
		return refuse_write(st, "pushing a lock's commit");
	if (!store_has(st, STORE_CAP_ORACLE))
		return mrtx__seterr(MRTX_ENOTSUP, "%s: pushing a lock's commit is for stores whose "
		                    "readers would wait (RADOS)", store_path(st));
	return BE(st)->push(st, t, row, lock, ts);
}

int store_snap_publish(store *st, uint64_t ts, uint64_t until_us)
{
	return store_has(st, STORE_CAP_ORACLE) ? BE(st)->snap_publish(st, ts, until_us) : 0;
}

int store_snap_oldest(store *st, uint64_t now_us, uint64_t *oldest)
{
	*oldest = UINT64_MAX;
	return store_has(st, STORE_CAP_ORACLE) ? BE(st)->snap_oldest(st, now_us, oldest) : 0;
}

int store_read_row_in(store *st, store_view *v, const store_table *t, mrtx_bytes row,
                      const store_filter *f, mrtx_arena *a, store_row *out)
{
	out->lock_lazy = 0;
	return BE(st)->read_row(st, v, t, row, f, a, out);
}

int store_read_row(store *st, const store_table *t, mrtx_bytes row, const store_filter *f,
                   mrtx_arena *a, store_row *out)
{
	return store_read_row_in(st, NULL, t, row, f, a, out);
}

int store_read_locks_in(store *st, store_view *v, const store_rowref *refs, size_t n,
                        mrtx_arena *a, store_row *out)
{
	return BE(st)->read_locks(st, v, refs, n, a, out);
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
	return BE(st)->scan_rows(st, v, t, r, reverse, f, max_rows, a, rows, nrows, more);
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
	return BE(st)->write_rows(st, ops, n);
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
	if (!BE(st)->write_atomic ||
	    (!store_has(st, STORE_CAP_ATOMIC) && !BE(st)->atomic_ok))
		return mrtx__seterr(MRTX_ENOTSUP, "store %s cannot write several rows "
		                    "atomically", store_path(st));
	return BE(st)->write_atomic(st, ops, n, checks, nchecks, applied);
}

int store_atomic_ok(store *st, const store_rowref *rows, size_t n, size_t nchecks)
{
	if (store_read_only(st) || !BE(st)->write_atomic)
		return 0;
	if (store_has(st, STORE_CAP_ATOMIC))
		return 1;
	return BE(st)->atomic_ok ? BE(st)->atomic_ok(st, rows, n, nchecks) : 0;
}

void store_seen_free(store_seen *s)
{
	for (size_t i = 0; i < s->n; i++) {
		mrtx__free(s->v[i].lo);
		mrtx__free(s->v[i].hi);
	}
	mrtx__free(s->v);
	memset(s, 0, sizeof(*s));
}

void store_counters_get(store *st, store_counters *out)
{
	BE(st)->counters_get(st, out);
}

int store_get_info(store *st, store_info *out)
{
	int rc = BE(st)->get_info(st, out);

	if (rc == 0) {
		out->kind = BE(st)->name;
		out->read_only = store_read_only(st);
	}
	return rc;
}

int store_copy(store *st, const char *dir)
{
	if (!store_has(st, STORE_CAP_FILES))
		return mrtx__seterr(MRTX_EINVAL, "%s: a %s store has no files to copy",
		                    store_path(st), BE(st)->title);
	return BE(st)->copy(st, dir);
}

int store_sync(store *st)
{
	return store_has(st, STORE_CAP_FILES) ? BE(st)->sync(st) : 0;
}

int store_unsettled_verify(store *st)
{
	return BE(st)->unsettled_verify ? BE(st)->unsettled_verify(st) : 0;
}

int store_ts_next(store *st, uint64_t floor, uint64_t *out)
{
	return BE(st)->ts_next(st, floor, out);
}

int store_ts_snapshot(store *st, const store_snap_set *set, uint64_t until_us,
                      uint64_t *out)
{
	int rc;

	if (store_has(st, STORE_CAP_ORACLE))
		return BE(st)->ts_snapshot(st, set, until_us, out);
	/* (one host: the store's own source, entered in the set as taken) */
	if ((rc = BE(st)->ts_next(st, 0, out)) == 0)
		set->enter(set->arg, *out);
	return rc;
}

int store_ts_start(store *st, uint64_t *out)
{
	return store_has(st, STORE_CAP_ORACLE) ? BE(st)->ts_start(st, out) :
	       BE(st)->ts_known(st, out);
}

int store_ts_known(store *st, uint64_t *out)
{
	return BE(st)->ts_known(st, out);
}

void store_ts_learn(store *st, uint64_t ts)
{
	BE(st)->ts_learn(st, ts);
}

void store__clock_offset(store *st, long long us)
{
	atomic_store(&((store_head *)(void *)st)->clock_offset_us, us);
}

_Atomic unsigned long store__syncs;
_Atomic long long store__trim_lag_us = STORE_TRIM_LAG_US;
_Atomic int store__lmdb_inexact_views;

int store_ts_now(store *st, uint64_t *out)
{
	*out = 0;
	if (store_has(st, STORE_CAP_ORACLE))
		return BE(st)->ts_now(st, out);
	return mrtx__seterr(MRTX_ENOTSUP, "%s: an LMDB store's snapshot timestamp is its "
	                    "view's (store_view_ts)", store_path(st));
}

/* Keys "x/<name>" with x a letter other than 't' (minlen 3; a listing's
 * prefix "x/", minlen 2): tables and the fixed records stay the store's. */
static int meta_key_check(const store *st, const char *key, size_t minlen)
{
	size_t n = key ? strlen(key) : 0;

	if (n < minlen || n > MRTX_MAX_NAME + 2 || key[1] != '/' || key[0] == 't' ||
	    key[0] < 'a' || key[0] > 'z')
		return mrtx__seterr(MRTX_EINVAL, "store %s: '%s' is not a metadata record key",
		                    store_path(st), key ? key : "(null)");
	return 0;
}

int store_meta_get_in(store *st, store_view *v, const char *key, mrtx_arena *a,
                      mrtx_bytes *out)
{
	int rc = meta_key_check(st, key, 3);

	return rc ? rc : BE(st)->meta_get(st, v, key, a, out);
}

int store_meta_get(store *st, const char *key, mrtx_arena *a, mrtx_bytes *out)
{
	return store_meta_get_in(st, NULL, key, a, out);
}

int store_meta_put_new(store *st, const char *key, mrtx_bytes value)
{
	int rc;

	if (store_read_only(st))
		return refuse_write(st, "adding a metadata record");
	return (rc = meta_key_check(st, key, 3)) ? rc :
	       BE(st)->meta_put_new(st, key, value, NULL, 0, NULL);
}

int store_meta_put_new_on(store *st, const char *key, mrtx_bytes value,
                          const store_table *const *on, size_t non, const uint64_t *gen)
{
	int rc;

	if (store_read_only(st))
		return refuse_write(st, "adding a metadata record");
	if (non > STORE_META_ON_MAX)
		return mrtx__seterr(MRTX_EINVAL, "a metadata record conditional on %zu tables "
		                    "(at most %d)", non, STORE_META_ON_MAX);
	return (rc = meta_key_check(st, key, 3)) ? rc :
	       BE(st)->meta_put_new(st, key, value, on, non, gen);
}

int store_meta_change(store *st, const char *const *del, size_t ndel, const char *put_key,
                      mrtx_bytes put_value)
{
	int rc;

	if (store_read_only(st))
		return refuse_write(st, "changing metadata records");
	for (size_t i = 0; i < ndel; i++)
		if ((rc = meta_key_check(st, del[i], 3)))
			return rc;
	if (put_key && (rc = meta_key_check(st, put_key, 3)))
		return rc;
	return BE(st)->meta_change(st, del, ndel, put_key, put_value);
}

int store_meta_list(store *st, const char *prefix, mrtx_arena *a,
                    int (*fn)(const char *key, mrtx_bytes value, void *payload), void *payload,
                    uint64_t *gen)
{
	int rc = meta_key_check(st, prefix, 2);

	return rc ? rc : BE(st)->meta_list(st, prefix, a, fn, payload, gen);
}

/* ------------------------------------------------ the same for every backend */

static int family_lookup(const store_table *t, const char *family, uint8_t *fid)
{
	size_t n = t->nfamilies;

	for (size_t i = 0; i < n; i++)
		if (strcmp(t->families[i], family) == 0 && !store_family_dropped(t, (unsigned)i)) {
			*fid = (uint8_t)i;
			return 0;
		}
	return MRTX_ENOFAMILY;
}

int store_family_find(store *st, const store_table *t, const char *family, uint8_t *fid)
{
	int rc;

	if (!family)
		return mrtx__seterr(MRTX_EINVAL, "family is NULL (table '%s')", t->name);
	if (family_lookup(t, family, fid) == 0)
		return 0;
	/* a miss may be a family another handle added (mrtx_add_family):
	 * refresh once before saying no (a refresh that failed says nothing
	 * of the family: its error) */
	if ((rc = store_table_refresh(st)) || family_lookup(t, family, fid) == 0 ||
	    (rc = store_table_gone(st, t)))
		return rc;
	return mrtx__seterr(MRTX_ENOFAMILY, "table '%s' has no family '%.64s'", t->name, family);
}

int store_table_gone(store *st, const store_table *t)
{
	const store_table *now;

	if (atomic_load_explicit(&t->state, memory_order_acquire) != STORE_T_GONE)
		return 0;
	if (store_table_find(st, t->name, &now) == MRTX_ENOTABLE)
		return mrtx__seterr(MRTX_ENOTABLE, "table '%s' was dropped", t->name);
	return mrtx__seterr(MRTX_CONFLICT, "table '%s' was truncated while this transaction "
	                    "ran: run it again", t->name);
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
		return mrtx__seterr(MRTX_EINVAL, "table '%s': a row key is empty (a row is 1 "
		                    "to %u bytes)", t->name, MRTX_MAX_ROW);
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
