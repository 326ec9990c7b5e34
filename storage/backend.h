/*
 * backend.h - what a storage backend provides (DESIGN §3.1): one versioned
 * table of operations, whose address every store of the backend carries in
 * its store_head, and the capability bits of each store it opens.
 *
 * Only store.c (the seam's front) and the backends' tables
 * (storage/lmdb/lmdb_backend.c, storage/rados/rados_backend.c) include this
 * file.  store.c makes the checks every backend shares (a read-only store
 * writes nothing; an operation the store's capabilities lack is
 * MRTX_ENOTSUP or its documented default) and then calls the table, so an
 * operation a backend cannot do may be NULL where its capability bit says
 * so.  A new backend adds one table and one line to store.c's list of
 * backends: no file above storage/ changes.
 *
 * Every operation is the store_X of store.h of the same name, with the
 * same contract; views (store_view) are the backend's own, and only a
 * backend with STORE_CAP_VIEWS ever receives one that is not NULL.
 */
#ifndef MRTX_BACKEND_H
#define MRTX_BACKEND_H

#include "store.h"
#include "store_file.h"

#define STORE_BACKEND_VERSION 1

struct store_backend {
	unsigned version; /* STORE_BACKEND_VERSION */
	const char *name;  /* "lmdb", "rados": store_info.kind */
	const char *title; /* "LMDB", "RADOS": in messages */
	/* the addresses it opens: those starting with scheme (NULL: any other,
	 * a directory) */
	const char *scheme;

	int (*open)(store **out, const char *path, const store_opts *opts);
	int (*upgrade)(const char *path, store_upgrade_ts_fn row_ts,
	               void (*lock_order)(const void *lock, size_t size, uint8_t *out),
	               uint64_t *cells, int *was);
	/* STORE_CAP_FILES (NULL: the address is no file) */
	int (*check_file)(const char *path, const store_file_opts *o, store_file_stats *stats);
	void (*close)(store *st);
	const char *(*path)(const store *st);
	const uint8_t *(*id)(const store *st);

	/* tables (splits: the rows a new table's first tablets start at, for
	 * backends that shard; others ignore them) */
	int (*create_table)(store *st, const char *name, const char *const *families,
	                    size_t nfamilies, const store_policy *pol, const mrtx_bytes *splits,
	                    size_t nsplits);
	int (*table_find)(store *st, const char *name, const store_table **out);
	int (*tables_list)(store *st, const store_table ***out, size_t *count);
	/* STORE_CAP_SCHEMA */
	int (*add_family)(store *st, const store_table *t, const char *family);
	int (*table_freeze)(store *st, const store_table *t, int on, uint64_t *token);
	int (*table_clear)(store *st, const store_table *t, int drop, uint64_t token);
	/* store_table_held; NULL: a drop or truncate is one write, never
	 * seen closed, and a freeze is t->state after a refresh */
	int (*table_held)(store *st, const store_table *t, int *held);
	int (*table_refresh)(store *st);
	/* NULL: families are never dropped (MRTX_ENOTSUP) */
	int (*drop_family)(store *st, const store_table *t, unsigned fid, uint64_t token);
	/* NULL: policies fixed at creation (MRTX_ENOTSUP) */
	int (*alter_family)(store *st, const store_table *t, unsigned fid,
	                    const store_policy *pol);

	/* STORE_CAP_VIEWS */
	int (*view_open)(store *st, store_view **out);
	void (*view_close)(store *st, store_view *v);
	uint64_t (*view_ts)(const store_view *v);
	uint64_t (*view_point)(const store_view *v);
	int (*sync_visible)(store *st, uint64_t point);

	/* reads (v: a view, or NULL) and writes */
	int (*read_row)(store *st, store_view *v, const store_table *t, mrtx_bytes row,
	                const store_filter *f, mrtx_arena *a, store_row *out);
	int (*read_locks)(store *st, store_view *v, const store_rowref *refs, size_t n,
	                  mrtx_arena *a, store_row *out);
	int (*scan_rows)(store *st, store_view *v, const store_table *t, const store_range *r,
	                 int reverse, const store_filter *f, size_t max_rows, mrtx_arena *a,
	                 store_row **rows, size_t *nrows, int *more);
	int (*write_rows)(store *st, store_op *ops, size_t n);
	/* STORE_CAP_ATOMIC, or for the commits atomic_ok takes (NULL: by the
	 * capability) */
	int (*atomic_ok)(store *st, const store_rowref *rows, size_t n, size_t nchecks);
	int (*write_atomic)(store *st, store_op *ops, size_t n, store_rcheck *checks,
	                    size_t nchecks, int *applied);

	/* versions: collection everywhere; trimming a row (unless
	 * STORE_CAP_TRIMS_ON_WRITE); pushes and the registry of running
	 * snapshots (STORE_CAP_ORACLE) */
	int (*gc_mark)(store *st, uint64_t safe, int end);
	int (*gc_step)(store *st, const store_table *t, uint8_t *row, size_t *rowlen,
	               uint64_t safe, size_t max_rows, int *done, uint64_t *collected);
	int (*gc_cursor)(store *st, uint64_t *safe, char *table, uint8_t *row, size_t *rowlen,
	                 int *table_done);
	int (*trim_row)(store *st, const store_table *t, mrtx_bytes row, uint64_t safe);
	int (*push)(store *st, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
	            uint64_t ts);
	int (*snap_publish)(store *st, uint64_t ts, uint64_t until_us);
	int (*snap_oldest)(store *st, uint64_t now_us, uint64_t *oldest);
	/* fencing a dead owner's clients (NULL: nothing to fence, LMDB) */
	int (*fence)(store *st, const uint8_t *owner, int expired, size_t *fenced,
	             size_t *denied);
	int (*fence_dead)(store *st, int (*dead)(const uint8_t *owner, void *arg), void *arg,
	                  size_t *fenced, size_t *denied);

	/* timestamps (ts_snapshot, ts_start, ts_now: NULL unless
	 * STORE_CAP_ORACLE; store.c then derives them from ts_next and
	 * ts_known) */
	int (*ts_next)(store *st, uint64_t floor, uint64_t *out);
	int (*ts_known)(store *st, uint64_t *out);
	void (*ts_learn)(store *st, uint64_t ts);
	int (*ts_snapshot)(store *st, const store_snap_set *set, uint64_t until_us,
	                   uint64_t *out);
	int (*ts_start)(store *st, uint64_t *out);
	int (*ts_now)(store *st, uint64_t *out);

	/* metadata records of the layers above */
	int (*meta_get)(store *st, store_view *v, const char *key, mrtx_arena *a, mrtx_bytes *out);
	int (*meta_put_new)(store *st, const char *key, mrtx_bytes value,
	                    const store_table *const *on, size_t non, const uint64_t *gen);
	int (*meta_change)(store *st, const char *const *del, size_t ndel, const char *put_key,
	                   mrtx_bytes put_value);
	int (*meta_list)(store *st, const char *prefix, mrtx_arena *a,
	                 int (*fn)(const char *key, mrtx_bytes value, void *payload),
	                 void *payload, uint64_t *gen);

	/* the store as a whole; STORE_CAP_FILES: copy and sync; unsettled_verify
	 * NULL: nothing to verify */
	void (*counters_get)(store *st, store_counters *out);
	int (*get_info)(store *st, store_info *out);
	int (*copy)(store *st, const char *dir);
	int (*sync)(store *st);
	int (*unsettled_verify)(store *st);
};

extern const store_backend lmdb_backend;
#ifdef MRTX_HAVE_RADOS
extern const store_backend rados_backend;
#endif

#endif
