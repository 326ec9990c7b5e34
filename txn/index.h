/*
 * index.h - secondary index maintenance hooks (txn/index.c).
 *
 * mrtx_put / mrtx_delete / mrtx_delete_row run in three steps:
 *
 *   index_plan_*   read the old values the index rows depend on (mrtx_get in
 *                  the same transaction, so the reads are validated at commit)
 *                  and compute the index row changes; nothing is buffered,
 *                  so a failure leaves the transaction as it was
 *   txn_buffer_*   buffer the caller's write
 *   index_apply    buffer the planned index changes with txn_buffer_* (which
 *                  never plans, so index writes do not recurse); a failure
 *                  here dooms the transaction, which can then only abort
 */
#ifndef MRTX_INDEX_H
#define MRTX_INDEX_H

#include "txn_int.h"

typedef struct index_plan index_plan;

/* Plan the index changes of a put (value) or cell delete (value NULL).
 * *out is NULL when no index is affected (or the arguments are bad: the
 * buffering step reports those). */
int index_plan_cell(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
                    mrtx_bytes qual, const mrtx_bytes *value, index_plan **out);
/* Plan the index changes of a row delete. */
int index_plan_delete_row(mrtx_txn *txn, const char *table, mrtx_bytes row,
                          index_plan **out);
/* Buffer a plan (NULL: nothing to do). */
int index_apply(mrtx_txn *txn, index_plan *plan);


/* ---- shared by index.c (maintenance, lookups) and index_create.c ---- */

#define IDX_VERSION 1
#define IDX_MAX_CLUSTER 32
#define IDX_MAX_QUAL 250
#define IDX_BACKFILL_ROWS 256

typedef struct idx_col {
	const char *family;
	mrtx_bytes qual;
} idx_col;

typedef struct idx_decl {
	const char *name, *table, *family, *index_table;
	mrtx_bytes qual;
	size_t ncluster;
	idx_col cluster[IDX_MAX_CLUSTER];
} idx_decl;

struct index_set {
	idx_decl *d;
	size_t n, cap;
};

enum { OP_PUT = 1, OP_DEL_CELL, OP_DEL_ROW };

extern const uint8_t idx_qual_ref[1]; /* "r": the reference cell's qualifier */

int idx_bytes_eq(mrtx_bytes a, mrtx_bytes b);
/* The metadata record of a spec (see index.c for the layout). */
int idx_decl_encode(const mrtx_index_spec *s, mrtx_buf *b);
/* Decode index `name`'s record into a (strings copied); every length checked. */
int idx_decl_decode(const char *name, mrtx_bytes v, mrtx_arena *a, idx_decl *d);
/* Every declaration of the store, into a; *gen (may be NULL) gets the
 * metadata generation they were read at. */
int idx_load_set(store *st, mrtx_arena *a, struct index_set *set, uint64_t *gen);
/* The index row key of (value, row), checked against the index table's
 * limits (MRTX_ETOOBIG), in the transaction's arena. */
int idx_key(mrtx_txn *txn, const idx_decl *d, mrtx_bytes value, mrtx_bytes row,
            mrtx_bytes *out);
/* "c" . u8 j, the qualifier of clustered copy j (NULL data: out of memory). */
mrtx_bytes idx_cluster_qual(mrtx_txn *txn, size_t j);
/* mrtx_get with MRTX_NOTFOUND mapped to *found = 0. */
int idx_get_opt(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
                mrtx_bytes qual, mrtx_bytes *value, int *found);
/* Append an index-table op to a plan (created on first use). */
int idx_plan_add(mrtx_txn *txn, index_plan **pp, int kind, const char *table,
                 mrtx_bytes row, mrtx_bytes qual, mrtx_bytes value);
/* Plan writing the whole index row key: reference and clustered copies read
 * from the source row, column col reading as *colval (may be NULL). */
int idx_plan_build_row(mrtx_txn *txn, index_plan **pp, const idx_decl *d, mrtx_bytes key,
                       mrtx_bytes row, const idx_col *col, const mrtx_bytes *colval);
/* After mrtx_drop_table removed the table (table, ident): delete the
 * records of index drops that stopped before dropping it (index_drop.c). */
int index_drop_finished(mrtx_db *db, const char *table, uint64_t ident);
/* Is t the index table of an index drop that stopped before dropping it?
 * 1 (the index's name into index), 0, or an error. */
int index_drop_holds(mrtx_db *db, const store_table *t, char index[MRTX_MAX_NAME + 1]);
/* An index of name is declared again, into index_table: remove the record
 * of an earlier drop of name that stopped half way, if it names another
 * table (which stays, an ordinary table); one naming index_table is left
 * to index_drop_leftover (index_drop.c). */
int index_drop_forget(mrtx_db *db, const char *name, const char *index_table);
/* Before table becomes an index table: if the record of an index drop that
 * stopped before dropping it holds it, drop it now (the drop's intent) and
 * the records with it; records naming an older table of the name only go
 * (index_drop.c). */
int index_drop_leftover(mrtx_db *db, const char *table);
/* mrtx_drop_table of table if its identity is *ident (ident NULL: any):
 * MRTX_ENOTABLE if the table of that name is another (ddl.c). */
int ddl_drop_table_of(mrtx_db *db, const char *table, const uint64_t *ident);

#endif
