/*
 * rados_store.h - the RADOS backend's implementation of the storage seam
 * (store.h): rados_store_X is store_X for a RADOS store (the table in
 * rados_backend.c),
 * called by the dispatch in storage/store.c.  Same contracts as store.h,
 * with these differences:
 *   - store_read_locks and store_scan_rows read each row consistently
 *     (lock and cells from one state of its tablet object) but different
 *     rows at different moments; nothing above the seam relies on more.
 *   - store_op.cond.pred is not called: store_cond.below is evaluated on
 *     the OSD instead, as one omap_cmp LT guard (STORE_CAP_COND).
 *   - store_op.check_gen is checked against the generation kept in the
 *     row's tablet object (see store.h), in the same compound op.
 *   - A timeout is MRTX_EUNKNOWN as an op result (the op may or may not
 *     have been applied) and MRTX_ESTORE as the call's return.
 */
#ifndef MRTX_RADOS_STORE_H
#define MRTX_RADOS_STORE_H

#include "storage/store.h"

int rados_store_open(store **out, const char *addr, const store_opts *opts);
/* store_upgrade of a RADOS store (rados_upgrade.c). */
int rados_store_upgrade(const char *addr, store_upgrade_ts_fn row_ts,
                        void (*lock_order)(const void *lock, size_t size, uint8_t *out),
                        uint64_t *cells, int *was);
void rados_store_close(store *st);
const char *rados_store_path(const store *st);
const uint8_t *rados_store_id(const store *st);
int rados_store_create_table(store *st, const char *name, const char *const *families,
                             size_t nfamilies, const store_policy *pol, const mrtx_bytes *splits,
                             size_t nsplits);
int rados_store_table_find(store *st, const char *name, const store_table **out);
int rados_store_tables_list(store *st, const store_table ***out, size_t *count);
/* fencing (rados_fence.c) */
int rados_store_fence(store *st, const uint8_t *owner, int expired, size_t *fenced,
                      size_t *denied);
int rados_store_fence_dead(store *st, int (*dead)(const uint8_t *owner, void *arg), void *arg,
                           size_t *fenced, size_t *denied);
/* a family's version policy (rados_meta.c) */
int rados_store_alter_family(store *st, const store_table *t, unsigned fid,
                             const store_policy *pol);
/* schema changes (rados_ddl.c) */
int rados_store_add_family(store *st, const store_table *t, const char *family);
int rados_store_table_freeze(store *st, const store_table *t, int on, uint64_t *token);
int rados_store_table_clear(store *st, const store_table *t, int drop, uint64_t token);
int rados_store_table_held(store *st, const store_table *t, int *held);
int rados_store_table_refresh(store *st);
int rados_store_read_row(store *st, const store_table *t, mrtx_bytes row,
                         const store_filter *f, mrtx_arena *a, store_row *out);
int rados_store_read_locks(store *st, const store_rowref *refs, size_t n, mrtx_arena *a,
                           store_row *out);
int rados_store_scan_rows(store *st, const store_table *t, const store_range *r, int reverse,
                          const store_filter *f, size_t max_rows, mrtx_arena *a,
                          store_row **rows, size_t *nrows, int *more);
int rados_store_write_rows(store *st, store_op *ops, size_t n);
int rados_store_atomic_ok(store *st, const store_rowref *rows, size_t n, size_t nchecks);
int rados_store_write_atomic(store *st, store_op *ops, size_t n, store_rcheck *checks,
                             size_t nchecks, int *applied);
int rados_store_ts_next(store *st, uint64_t floor, uint64_t *out);
int rados_store_ts_known(store *st, uint64_t *out);
int rados_store_ts_start(store *st, uint64_t *out);
int rados_store_ts_snapshot(store *st, const store_snap_set *set, uint64_t until_us,
                            uint64_t *out);
void rados_store_ts_learn(store *st, uint64_t ts);
int rados_store_ts_now(store *st, uint64_t *out);
int rados_store_gc_mark(store *st, uint64_t safe, int end);
int rados_store_trim_row(store *st, const store_table *t, mrtx_bytes row, uint64_t safe);
int rados_store_push(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                     uint64_t ts);
int rados_store_snap_publish(store *st, uint64_t ts, uint64_t until_us);
int rados_store_snap_oldest(store *st, uint64_t now_us, uint64_t *oldest);
int rados_store_gc_step(store *st, const store_table *t, uint8_t *row, size_t *rowlen,
                        uint64_t safe, size_t max_rows, int *done, uint64_t *collected);
int rados_store_gc_cursor(store *st, uint64_t *safe, char *table, uint8_t *row, size_t *rowlen,
                          int *table_done);
/*
 * Split the tablet of t holding row `at` into two at `at`, online
 * (rados_split.c).  Writes past a tablet's bound (the address's
 * split_rows) do this on their own; tests and tools call it directly.
 * @return MRTX_OK; MRTX_EINVAL (empty or over-long row); MRTX_EEXIST (a
 *   tablet starts at `at`); MRTX_CONFLICT (the tablet was being split by
 *   someone else: that split is finished, this one not made);
 *   MRTX_EREADONLY; MRTX_ESTORE, MRTX_ECORRUPT, MRTX_ENOMEM.
 */
int rados_store_split(store *st, const store_table *t, mrtx_bytes at);
/* The number of tablets of t as this handle knows them (not re-read). */
size_t rados_store_tablets(store *st, const store_table *t);
/* Splits this handle finished (its own or others' it completed). */
unsigned long rados_store_splits(store *st);
void rados_store_counters_get(store *st, store_counters *out);
int rados_store_get_info(store *st, store_info *out);
int rados_store_meta_get(store *st, const char *key, mrtx_arena *a, mrtx_bytes *out);
int rados_store_meta_put_new(store *st, const char *key, mrtx_bytes value,
                             const store_table *const *on, size_t non, const uint64_t *gen);
int rados_store_meta_change(store *st, const char *const *del, size_t ndel,
                            const char *put_key, mrtx_bytes put_value);
int rados_store_meta_list(store *st, const char *prefix, mrtx_arena *a,
                          int (*fn)(const char *key, mrtx_bytes value, void *payload),
                          void *payload, uint64_t *gen);

#endif
