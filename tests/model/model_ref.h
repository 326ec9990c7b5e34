/*
 * model_ref.h - the in-memory reference model behind tests/model/test_model.c:
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

/* ------------------------------------------- the schema of tests/model/test_model.c */

#include "mrtx.h"

#define MB(b) MRTX_BYTES((b).p, (b).n)

typedef struct mtab {
	const char *name;
	const char *const *fams;
	int nfam;
} mtab;
#define NTAB 6
#define NDATA 3 /* tables 0..2 hold data; 3.. are index tables */
#define NIDX 3
extern const mtab TABS[NTAB];
extern const midx IDX[NIDX];
/* The mrtx_index_spec of IDX[d] (cols: room for its copied columns). */
mrtx_index_spec spec_of(int d, mrtx_column *cols);
int fid_of(int tab, const char *fam); /* -1: not a family of tab */

/* ------------------------------------------------ documented return codes */

enum { F_OPEN, F_CTABLE, F_FAMS, F_TABLES, F_BEGIN, F_TTL, F_GET, F_PUT, F_DELROW,
       F_COMMIT, F_SOPEN, F_SNEXT, F_RUN, F_CINDEX, F_ISCAN, F_INDEXES, F_FP, F_KEY, NF };
extern const char *const FNAME[NF];
/* the codes mrtx.h lists for each function, as masks of C(code) */
extern const unsigned DOC[NF];
#define C(x) (1u << ((x) == 0 ? 0 : (x) + 31001))
#define ANYC 0xFFFFu
/* The key rule of mrtx.h: MRTX_EINVAL / MRTX_ETOOBIG / 0 for a cell key. */
int key_rc(bs row, size_t ql);

/* ------------------------------------------------------------- generators */

void rng_seed(uint64_t seed); /* also forgets the long rows */
uint32_t rnd(uint32_t n);      /* 0 .. n-1 */
int chance(unsigned permille);
bs rnd_alpha(size_t n);        /* n bytes of 0x00, 0x01, 'a', 0xFF */
/* A row whose key with a qualifier of ql bytes is at the limit (past 0) or one past. */
bs limit_row(size_t ql, int past);
bs rnd_row(void);
bs rnd_qual(void);
bs rnd_value(long serial);

/* ----------------------------------------------------------- observations */

enum { OBS_GET = 1, OBS_SCAN, OBS_ISCAN };
typedef struct obs {
	int kind;
	size_t k; /* the transaction's writes made before it */
	cell g;   /* OBS_GET: key, and value when found */
	const void *raw; /* OBS_GET: the value's memory, owned by the transaction */
	int found;
	mscan sp; /* OBS_SCAN */
	cellv got;
	int ended; /* OBS_SCAN: NOTFOUND seen; OBS_ISCAN: returned MRTX_OK */
	int ix, lookup, reverse; /* OBS_ISCAN */
	bs vs, ve;
	size_t limit, nhits;
	mhit *hits;
} obs;


int cell_same(const cell *a, const cell *b);
/* Does o hold on view (committed state + the writes before o)?  why: the
 * first difference. */
int obs_holds(const obs *o, const cellv *view, char *why, size_t wn);

/* ------------------------------- the harness (test_model.c), for the probes */

int check_rc(int fn, int rc, unsigned want, const char *what);
void viol(const char *cat, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define NPROBES 44
/* Bad call number p (0 .. NPROBES-1), with its exact code (model_probe.c);
 * h is an open transaction the failures must leave as it was. */
void model_probe(mrtx_db *db, const char *path, mrtx_txn *h, int nidx, int p);

#endif
