/*
 * lmdb_backend.c - the LMDB backend's table of operations (storage/
 * backend.h): each entry is lmdb_store_X (lmdb_store.h), adapted where the
 * seam's view is LMDB's read transaction.
 */
#include "storage/backend.h"
#include "storage/lmdb/lmdb_store.h"

#define RTXN(v) ((struct lmdb_rtxn *)(void *)(v))

static int create_table(store *st, const char *name, const char *const *families,
                        size_t nfamilies, const store_policy *pol, const mrtx_bytes *splits,
                        size_t nsplits)
{
	(void)splits; /* one B-tree: nothing to split */
	(void)nsplits;
	return lmdb_store_create_table(st, name, families, nfamilies, pol);
}

static int view_open(store *st, store_view **out)
{
	struct lmdb_rtxn *v;
	int rc = lmdb_store_view_open(st, &v);

	*out = rc ? NULL : (store_view *)(void *)v;
	return rc;
}

static void view_close(store *st, store_view *v)
{
	lmdb_store_view_close(st, RTXN(v));
}

static uint64_t view_ts(const store_view *v)
{
	return lmdb_store_view_ts((const struct lmdb_rtxn *)(const void *)v);
}

static uint64_t view_point(const store_view *v)
{
	return lmdb_view_txnid((const struct lmdb_rtxn *)(const void *)v);
}

static int read_row(store *st, store_view *v, const store_table *t, mrtx_bytes row,
                    const store_filter *f, mrtx_arena *a, store_row *out)
{
	return lmdb_store_read_row(st, RTXN(v), t, row, f, a, out);
}

static int read_locks(store *st, store_view *v, const store_rowref *refs, size_t n,
                      mrtx_arena *a, store_row *out)
{
	return lmdb_store_read_locks(st, RTXN(v), refs, n, a, out);
}

static int scan_rows(store *st, store_view *v, const store_table *t, const store_range *r,
                     int reverse, const store_filter *f, size_t max_rows, mrtx_arena *a,
                     store_row **rows, size_t *nrows, int *more)
{
	return lmdb_store_scan_rows(st, RTXN(v), t, r, reverse, f, max_rows, a, rows, nrows,
	                            more);
}

static int meta_get(store *st, store_view *v, const char *key, mrtx_arena *a, mrtx_bytes *out)
{
	return lmdb_store_meta_get(st, RTXN(v), key, a, out);
}

const store_backend lmdb_backend = {
	.version = STORE_BACKEND_VERSION,
	.name = "lmdb",
	.title = "LMDB",
	.scheme = NULL,
	.open = lmdb_store_open,
	.upgrade = lmdb_upgrade,
	.check_file = lmdb_store_check_file,
	.close = lmdb_store_close,
	.path = lmdb_store_path,
	.id = lmdb_store_id,
	.create_table = create_table,
	.table_find = lmdb_store_table_find,
	.tables_list = lmdb_store_tables_list,
	.add_family = lmdb_store_add_family,
	.table_freeze = lmdb_store_table_freeze,
	.table_clear = lmdb_store_table_clear,
	.drop_family = lmdb_store_drop_family,
	.alter_family = lmdb_store_alter_family,
	.table_refresh = lmdb_store_table_refresh,
	.view_open = view_open,
	.view_close = view_close,
	.view_ts = view_ts,
	.view_point = view_point,
	.sync_visible = lmdb_store_sync_visible,
	.read_row = read_row,
	.read_locks = read_locks,
	.scan_rows = scan_rows,
	.write_rows = lmdb_store_write_rows,
	.write_atomic = lmdb_store_write_atomic,
	.gc_mark = lmdb_store_gc_mark,
	.gc_step = lmdb_store_gc_step,
	.gc_cursor = lmdb_store_gc_cursor,
	.trim_row = NULL,
	.push = NULL,
	.snap_publish = NULL,
	.snap_oldest = NULL,
	.ts_next = lmdb_store_ts_next,
	.ts_known = lmdb_store_ts_known,
	.ts_learn = lmdb_store_ts_learn,
	.ts_snapshot = NULL,
	.ts_start = NULL,
	.ts_now = NULL,
	.meta_get = meta_get,
	.meta_put_new = lmdb_store_meta_put_new,
	.meta_change = lmdb_store_meta_change,
	.meta_list = lmdb_store_meta_list,
	.counters_get = lmdb_store_counters_get,
	.get_info = lmdb_store_get_info,
	.copy = lmdb_store_copy,
	.sync = lmdb_store_sync,
	.unsettled_verify = lmdb_store_unsettled_verify,
};
