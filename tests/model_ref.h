/*
 * model_ref.h - the in-memory reference model behind tests/test_model.c:
 * immutable pooled byte strings, sorted cell maps keyed (table, row, family
 * id, qualifier), buffered mutations, scans and derived secondary indexes,
 * written from the documentation in include/mrtx.h (not from the library).
 */
#ifndef MRTX_MODEL_REF_H
#define MRTX_MODEL_REF_H

#include <stddef.h>
#include <stdint.h>

/* An immutable byte string; data lives in the pool until pool_free_all. */
typedef struct bs {
	const uint8_t *p;
	size_t n;
} bs;

bs bs_dup(const void *p, size_t n);
void pool_free_all(void);
int bs_cmp(bs a, bs b);          /* memcmp order, a prefix first */
int bs_eq(bs a, bs b);
size_t bs_nuls(bs a);
/* printable form for messages (static rotating buffers) */
const char *bs_show(bs a);

typedef struct cell {
	int tab, fid;
	bs row, q, v;
} cell;

/* A map of cells sorted by (tab, row, fid, q), or a plain list (scan results). */
typedef struct cellv {
	cell *c;
	size_t n, cap;
} cellv;

int cell_key_cmp(const cell *a, const cell *b);
void cv_push(cellv *v, const cell *c);
void cv_copy(cellv *dst, const cellv *src);
void cv_free(cellv *v);
void cv_sort(cellv *v);
const cell *cv_find(const cellv *v, int tab, bs row, int fid, bs q);
void cv_put(cellv *v, const cell *c);
void cv_del(cellv *v, int tab, bs row, int fid, bs q);
void cv_del_row(cellv *v, int tab, bs row);

enum { MOP_PUT = 1, MOP_DEL, MOP_DELROW };
typedef struct mop {
	int kind;
	cell c; /* MOP_DELROW: tab and row only */
} mop;

void cv_apply(cellv *v, const mop *op);

/* A scan as mrtx_scan_spec describes it; fid -1 = every family. */
typedef struct mscan {
	int tab;
	bs start, end;
	int fid;
	bs qs, qe;
	int reverse;
	size_t limit;
} mscan;

/* The cells the scan returns over view, in scan order (rows descending with
 * reverse, cells ascending within a row); limit counts returned rows. */
void cv_scan(const cellv *view, const mscan *sp, cellv *out);

/* A secondary index declaration (mrtx_index_spec), by table / family ids. */
#define MIDX_MAXCL 3
typedef struct midx {
	const char *name;
	int tab, fid;
	bs q;
	int itab;
	int ncl;
	int clfid[MIDX_MAXCL];
	bs clq[MIDX_MAXCL];
} midx;

/* mrtx_key_bytes(v) . mrtx_key_bytes(row), and whether it fits an index
 * row key (<= MRTX_MAX_ROW, and the "c"+n cell key <= MRTX_MAX_KEY). */
bs idx_keyb(bs v, bs row);
int idx_fits(bs v, bs row);
/* The escaped form of one component (mrtx_key_bytes). */
bs key_bytes1(bs v);

/* Append the index tables' cells derived from the data cells of view
 * (for every source cell whose key fits) and re-sort. */
void derive_indexes(cellv *view, const midx *ix, int nidx);

typedef struct mhit {
	bs v, row;
	int ncells;
	int cfid[MIDX_MAXCL];
	bs cq[MIDX_MAXCL], cv[MIDX_MAXCL];
} mhit;

/* The hits of mrtx_index_scan (lookup = 0) or mrtx_index_lookup (lookup = 1,
 * value vs) over the data cells of view. */
size_t idx_hits(const cellv *view, const midx *ix, int lookup, bs vs, bs ve, int reverse,
                size_t limit, mhit **out);

#endif
