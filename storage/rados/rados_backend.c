/*
 * rados_backend.c - the RADOS backend's table of operations (storage/
 * backend.h): each entry is rados_store_X (rados_store.h).  No view spans
 * objects (DESIGN §9): the read entries take the seam's view argument,
 * always NULL here, and read each from its own objects.
 */
#include "storage/backend.h"
#include "storage/rados/rados_store.h"

static int read_row(store *st, store_view *v, const store_table *t, mrtx_bytes row,
                    const store_filter *f, mrtx_arena *a, store_row *out)
{
	(void)v;
	return rados_store_read_row(st, t, row, f, a, out);
}

static int read_locks(store *st, store_view *v, const store_rowref *refs, size_t n,
                      mrtx_arena *a, store_row *out)
{
	(void)v;
	return rados_store_read_locks(st, refs, n, a, out);
}

static int scan_rows(store *st, store_view *v, const store_table *t, const store_range *r,
                     int reverse, const store_filter *f, size_t max_rows, mrtx_arena *a,
                     store_row **rows, size_t *nrows, int *more)
{
	(void)v;
	return rados_store_scan_rows(st, t, r, reverse, f, max_rows, a, rows, nrows, more);
}

static int meta_get(store *st, store_view *v, const char *key, mrtx_arena *a, mrtx_bytes *out)
{
	(void)v;
	return rados_store_meta_get(st, key, a, out);
}

const store_backend rados_backend = {
	.version = STORE_BACKEND_VERSION,
	.name = "rados",
	.title = "RADOS",
	.scheme = "rados://",
	.open = rados_store_open,
	.upgrade = rados_store_upgrade,
	.check_file = NULL,
	.close = rados_store_close,
	.path = rados_store_path,
	.id = rados_store_id,
	.create_table = rados_store_create_table,
	.table_find = rados_store_table_find,
	.tables_list = rados_store_tables_list,
	.add_family = rados_store_add_family,
	.table_freeze = rados_store_table_freeze,
	.table_clear = rados_store_table_clear,
	.table_held = rados_store_table_held,
	.drop_family = NULL,
	.alter_family = rados_store_alter_family,
	.table_refresh = rados_store_table_refresh,
	.view_open = NULL,
	.view_close = NULL,
	.view_ts = NULL,
	.view_point = NULL,
	.sync_visible = NULL,
	.read_row = read_row,
	.read_locks = read_locks,
	.scan_rows = scan_rows,
	.write_rows = rados_store_write_rows,
	.atomic_ok = rados_store_atomic_ok,
	.write_atomic = rados_store_write_atomic,
	.gc_mark = rados_store_gc_mark,
	.gc_step = rados_store_gc_step,
	.gc_cursor = rados_store_gc_cursor,
	.trim_row = rados_store_trim_row,
	.push = rados_store_push,
	.snap_publish = rados_store_snap_publish,
	.snap_oldest = rados_store_snap_oldest,
	.fence = rados_store_fence,
	.fence_dead = rados_store_fence_dead,
	.ts_next = rados_store_ts_next,
	.ts_known = rados_store_ts_known,
	.ts_learn = rados_store_ts_learn,
	.ts_snapshot = rados_store_ts_snapshot,
	.ts_start = rados_store_ts_start,
	.ts_now = rados_store_ts_now,
	.meta_get = meta_get,
	.meta_put_new = rados_store_meta_put_new,
	.meta_change = rados_store_meta_change,
	.meta_list = rados_store_meta_list,
	.counters_get = rados_store_counters_get,
	.get_info = rados_store_get_info,
	.copy = NULL,
	.sync = NULL,
	.unsettled_verify = NULL,
};
