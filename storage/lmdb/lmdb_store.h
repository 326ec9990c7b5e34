/*
 * lmdb_store.h - the LMDB backend's implementation of the storage seam
 * (store.h): each lmdb_store_X is store_X for an LMDB store (the table in
 * lmdb_backend.c),
 * called by the dispatch in storage/store.c.  Same contracts as store.h.
 */
#ifndef MRTX_LMDB_STORE_H
#define MRTX_LMDB_STORE_H

#include "storage/store.h"
#include "storage/store_file.h"

int lmdb_store_open(store **out, const char *path, const store_opts *opts);
void lmdb_store_close(store *st);
const char *lmdb_store_path(const store *st);
const uint8_t *lmdb_store_id(const store *st);
int lmdb_store_create_table(store *st, const char *name, const char *const *families,
                            size_t nfamilies, const store_policy *pol);
int lmdb_store_table_find(store *st, const char *name, const store_table **out);
int lmdb_store_add_family(store *st, const store_table *t, const char *family);
int lmdb_store_table_freeze(store *st, const store_table *t, int on, uint64_t *token);
int lmdb_store_table_clear(store *st, const store_table *t, int drop, uint64_t token);
int lmdb_store_table_refresh(store *st);
int lmdb_store_drop_family(store *st, const store_table *t, unsigned fid, uint64_t token);
int lmdb_store_alter_family(store *st, const store_table *t, unsigned fid,
                            const store_policy *pol);
int lmdb_store_tables_list(store *st, const store_table ***out, size_t *count);
/* Reads: view is a read transaction held open (store_view_open), or NULL
 * (each call takes one of the pool's). */
struct lmdb_rtxn;
int lmdb_store_view_open(store *st, struct lmdb_rtxn **out);
void lmdb_store_view_close(store *st, struct lmdb_rtxn *v);
uint64_t lmdb_store_view_ts(const struct lmdb_rtxn *v);
/* The LMDB transaction id of view v (the newest commit it holds); 0 when
 * the view may hold newer ones than its id says. */
uint64_t lmdb_view_txnid(const struct lmdb_rtxn *v);
int lmdb_store_read_row(store *st, struct lmdb_rtxn *view, const store_table *t,
                        mrtx_bytes row, const store_filter *f, mrtx_arena *a, store_row *out);
int lmdb_store_read_locks(store *st, struct lmdb_rtxn *view, const store_rowref *refs,
                          size_t n, mrtx_arena *a, store_row *out);
int lmdb_store_scan_rows(store *st, struct lmdb_rtxn *view, const store_table *t,
                         const store_range *r, int reverse, const store_filter *f,
                         size_t max_rows, mrtx_arena *a, store_row **rows, size_t *nrows,
                         int *more);
int lmdb_store_write_rows(store *st, store_op *ops, size_t n);
int lmdb_store_write_atomic(store *st, store_op *ops, size_t n, store_rcheck *checks,
                            size_t nchecks, int *applied);
void lmdb_store_counters_get(store *st, store_counters *out);
int lmdb_store_get_info(store *st, store_info *out);
int lmdb_store_meta_get(store *st, struct lmdb_rtxn *view, const char *key, mrtx_arena *a,
                        mrtx_bytes *out);
int lmdb_store_meta_put_new(store *st, const char *key, mrtx_bytes value,
                            const store_table *const *on, size_t non, const uint64_t *gen);
int lmdb_store_meta_change(store *st, const char *const *del, size_t ndel,
                           const char *put_key, mrtx_bytes put_value);
int lmdb_store_meta_list(store *st, const char *prefix, mrtx_arena *a,
                         int (*fn)(const char *key, mrtx_bytes value, void *payload),
                         void *payload, uint64_t *gen);
int lmdb_store_copy(store *st, const char *dir);
int lmdb_store_sync(store *st);
int lmdb_store_sync_visible(store *st, uint64_t need);
int lmdb_store_unsettled_verify(store *st);
int lmdb_store_ts_next(store *st, uint64_t floor, uint64_t *out);
int lmdb_store_ts_known(store *st, uint64_t *out);
void lmdb_store_ts_learn(store *st, uint64_t ts);

/* Convert the format-3 store in directory path to format 4
 * (lmdb_upgrade.c); row_ts gives the version of a row's cells from its lock
 * record: 0 (STABLE), 1 (a transaction in flight) or -1 (malformed).
 * *cells: cells converted; *was: the format found (4: nothing to do). */
typedef int (*lmdb_upgrade_ts_fn)(const void *lock, size_t n, uint64_t *ts);
/* store_opts.lock_order's type: a lock record's order key. */
typedef void (*lmdb_lock_order_fn)(const void *lock, size_t size, uint8_t *out);
int lmdb_upgrade(const char *path, lmdb_upgrade_ts_fn row_ts, lmdb_lock_order_fn lock_order,
                 uint64_t *cells, int *was);

/* store_check_file for an LMDB store (lmdb_deep.c). */
int lmdb_store_check_file(const char *path, const store_file_opts *o, store_file_stats *st);

/* Collection (lmdb_cell.c; store_gc_* in store.h). */
int lmdb_store_gc_step(store *st, const store_table *t, uint8_t *row, size_t *rowlen,
                       uint64_t safe, size_t max_rows, int *done, uint64_t *collected);
int lmdb_store_gc_cursor(store *st, uint64_t *safe, char *table, uint8_t *row,
                         size_t *rowlen, int *table_done);
int lmdb_store_gc_mark(store *st, uint64_t safe, int end);

#endif
