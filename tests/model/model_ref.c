/* model_ref.c - see model_ref.h. */
#include "model_ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ pool */

typedef struct pblock {
	struct pblock *next;
	size_t used, cap;
	_Alignas(16) uint8_t data[];
} pblock;

static pblock *pool;
static const uint8_t empty_byte[1];

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "model: out of memory\n");
		abort();
	}
	return p;
}

bs bs_dup(const void *p, size_t n)
{
	uint8_t *d;

	if (n == 0)
		return (bs){ empty_byte, 0 };
	if (!pool || pool->cap - pool->used < n) {
		size_t cap = n > 65536 ? n : 65536;
		pblock *b = xmalloc(sizeof(*b) + cap);

		b->next = pool;
		b->used = 0;
		b->cap = cap;
		pool = b;
	}
	d = pool->data + pool->used;
	pool->used += n;
	memcpy(d, p, n);
	return (bs){ d, n };
}

void pool_free_all(void)
{
	while (pool) {
		pblock *n = pool->next;

		free(pool);
		pool = n;
	}
}

int bs_cmp(bs a, bs b)
{
	size_t n = a.n < b.n ? a.n : b.n;
	int c = n ? memcmp(a.p, b.p, n) : 0;

	return c ? (c < 0 ? -1 : 1) : (a.n < b.n ? -1 : a.n > b.n);
}

int bs_eq(bs a, bs b)
{
	return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

size_t bs_nuls(bs a)
{
	size_t k = 0;

	for (size_t i = 0; i < a.n; i++)
		k += a.p[i] == 0;
	return k;
}

const char *bs_show(bs a)
{
	static char bufs[16][200];
	static int which;
	char *b = bufs[which++ & 15];
	size_t k = 0, i;

	b[k++] = '"';
	for (i = 0; i < a.n && i < 24; i++) {
		uint8_t c = a.p[i];

		if (c > ' ' && c < 127 && c != '\\' && c != '"')
			b[k++] = (char)c;
		else
			k += (size_t)snprintf(b + k, 200 - k, "\\x%02x", c);
	}
	b[k++] = '"';
	if (i < a.n)
		k += (size_t)snprintf(b + k, 200 - k, "..(%zu bytes, %zu NULs)", a.n, bs_nuls(a));
	b[k] = '\0';
	return b;
}

/* ----------------------------------------------------------------- cells */

int cell_key_cmp(const cell *a, const cell *b)
{
	int c;

	if (a->tab != b->tab)
		return a->tab < b->tab ? -1 : 1;
	if ((c = bs_cmp(a->row, b->row)))
		return c;
	if (a->fid != b->fid)
		return a->fid < b->fid ? -1 : 1;
	return bs_cmp(a->q, b->q);
}

static int cell_qcmp(const void *x, const void *y)
{
	return cell_key_cmp(x, y);
}

void cv_push(cellv *v, const cell *c)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 32;
		v->c = realloc(v->c, v->cap * sizeof(*v->c));
		if (!v->c)
			abort();
	}
	v->c[v->n++] = *c;
}

void cv_copy(cellv *dst, const cellv *src)
{
	dst->n = dst->cap = src->n;
	dst->c = xmalloc((src->n ? src->n : 1) * sizeof(cell));
	if (src->n)
		memcpy(dst->c, src->c, src->n * sizeof(cell));
	dst->cap = src->n ? src->n : 1;
}

void cv_free(cellv *v)
{
	free(v->c);
	v->c = NULL;
	v->n = v->cap = 0;
}

void cv_sort(cellv *v)
{
	if (v->n > 1)
		qsort(v->c, v->n, sizeof(cell), cell_qcmp);
}

/* First index whose key is >= key. */
static size_t lower(const cellv *v, const cell *key)
{
	size_t lo = 0, hi = v->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cell_key_cmp(&v->c[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const cell *cv_find(const cellv *v, int tab, bs row, int fid, bs q)
{
	cell key = { tab, fid, row, q, { NULL, 0 } };
	size_t i = lower(v, &key);

	return i < v->n && cell_key_cmp(&v->c[i], &key) == 0 ? &v->c[i] : NULL;
}

void cv_put(cellv *v, const cell *c)
{
	size_t i = lower(v, c);

	if (i < v->n && cell_key_cmp(&v->c[i], c) == 0) {
		v->c[i].v = c->v;
		return;
	}
	cv_push(v, c); /* grow */
	memmove(&v->c[i + 1], &v->c[i], (v->n - 1 - i) * sizeof(cell));
	v->c[i] = *c;
}

void cv_del(cellv *v, int tab, bs row, int fid, bs q)
{
	cell key = { tab, fid, row, q, { NULL, 0 } };
	size_t i = lower(v, &key);

	if (i < v->n && cell_key_cmp(&v->c[i], &key) == 0) {
		memmove(&v->c[i], &v->c[i + 1], (v->n - i - 1) * sizeof(cell));
		v->n--;
	}
}

void cv_del_row(cellv *v, int tab, bs row)
{
	size_t k = 0;

	for (size_t i = 0; i < v->n; i++)
		if (v->c[i].tab != tab || !bs_eq(v->c[i].row, row))
			v->c[k++] = v->c[i];
	v->n = k;
}

void cv_apply(cellv *v, const mop *op)
{
	if (op->kind == MOP_PUT)
		cv_put(v, &op->c);
	else if (op->kind == MOP_DEL)
		cv_del(v, op->c.tab, op->c.row, op->c.fid, op->c.q);
	else
		cv_del_row(v, op->c.tab, op->c.row);
}

/* ------------------------------------------------------------------ scan */

static int cell_matches(const mscan *sp, const cell *e)
{
	if (e->tab != sp->tab)
		return 0;
	if (sp->start.n && bs_cmp(e->row, sp->start) < 0)
		return 0;
	if (sp->end.n && bs_cmp(e->row, sp->end) >= 0)
		return 0;
	if (sp->fid >= 0 && e->fid != sp->fid)
		return 0;
	if (sp->fid >= 0 && sp->qs.n && bs_cmp(e->q, sp->qs) < 0)
		return 0;
	if (sp->fid >= 0 && sp->qe.n && bs_cmp(e->q, sp->qe) >= 0)
		return 0;
	return 1;
}

void cv_scan(const cellv *view, const mscan *sp, cellv *out)
{
	size_t nrows = 0, i = 0;

	out->n = 0;
	/* row groups [beg, end) in ascending order; visit them either way */
	if (!sp->reverse) {
		while (i < view->n) {
			size_t beg = i, before = out->n;

			while (i < view->n && view->c[i].tab == view->c[beg].tab &&
			       bs_eq(view->c[i].row, view->c[beg].row))
				i++;
			for (size_t j = beg; j < i; j++)
				if (cell_matches(sp, &view->c[j])) {
					if (out->n == before && sp->limit && nrows == sp->limit)
						return;
					if (out->n == before)
						nrows++;
					cv_push(out, &view->c[j]);
				}
		}
		return;
	}
	i = view->n;
	while (i > 0) {
		size_t end = i, beg = i - 1, before = out->n;

		while (beg > 0 && view->c[beg - 1].tab == view->c[end - 1].tab &&
		       bs_eq(view->c[beg - 1].row, view->c[end - 1].row))
			beg--;
		for (size_t j = beg; j < end; j++)
			if (cell_matches(sp, &view->c[j])) {
				if (out->n == before && sp->limit && nrows == sp->limit)
					return;
				if (out->n == before)
					nrows++;
				cv_push(out, &view->c[j]);
			}
		i = beg;
	}
}

/* ---------------------------------------------------------------- index */

static size_t esc(uint8_t *out, bs v)
{
	size_t k = 0;

	for (size_t i = 0; i < v.n; i++) {
		out[k++] = v.p[i];
		if (v.p[i] == 0)
			out[k++] = 0xFF;
	}
	out[k++] = 0x00;
	out[k++] = 0x01;
	return k;
}

bs key_bytes1(bs v)
{
	uint8_t *b = xmalloc(2 * v.n + 2);
	bs r = bs_dup(b, esc(b, v));

	free(b);
	return r;
}

bs idx_keyb(bs v, bs row)
{
	uint8_t *b = xmalloc(2 * (v.n + row.n) + 4);
	size_t k = esc(b, v);
	bs r;

	k += esc(b + k, row);
	r = bs_dup(b, k);
	free(b);
	return r;
}

int idx_fits(bs v, bs row)
{
	size_t size = v.n + bs_nuls(v) + 2 + row.n + bs_nuls(row) + 2;
	size_t nuls = bs_nuls(v) + bs_nuls(row) + 2;

	/* documented index row key = bytes(v).bytes(row): a row (<= 495 bytes)
	 * whose cells "r" and "c".n (2 bytes) must fit the cell key rule */
	return size <= 495 && size + nuls + 16 + 2 <= 511;
}

static const uint8_t q_ref[1] = { 'r' };

void derive_indexes(cellv *view, const midx *ix, int nidx)
{
	cellv add = { 0 };

	for (int d = 0; d < nidx; d++)
		for (size_t i = 0; i < view->n; i++) {
			const cell *s = &view->c[i];
			cell ic;
			bs key;

			if (s->tab != ix[d].tab || s->fid != ix[d].fid || !bs_eq(s->q, ix[d].q) ||
			    !idx_fits(s->v, s->row))
				continue;
			key = idx_keyb(s->v, s->row);
			ic = (cell){ ix[d].itab, 0, key, { q_ref, 1 }, s->row };
			cv_push(&add, &ic);
			for (int j = 0; j < ix[d].ncl; j++) {
				const cell *c = cv_find(view, s->tab, s->row, ix[d].clfid[j], ix[d].clq[j]);
				uint8_t q[2] = { 'c', (uint8_t)j };

				if (!c)
					continue;
				ic = (cell){ ix[d].itab, 0, key, bs_dup(q, 2), c->v };
				cv_push(&add, &ic);
			}
		}
	for (size_t i = 0; i < add.n; i++)
		cv_push(view, &add.c[i]);
	cv_free(&add);
	cv_sort(view);
}

static int hit_cmp(const void *x, const void *y)
{
	const mhit *a = x, *b = y;
	int c = bs_cmp(a->v, b->v);

	/* (value, row) order equals the order of the escaped key */
	return c ? c : bs_cmp(a->row, b->row);
}

size_t idx_hits(const cellv *view, const midx *ix, int lookup, bs vs, bs ve, int reverse,
                size_t limit, mhit **out)
{
	mhit *h = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < view->n; i++) {
		const cell *s = &view->c[i];
		mhit x;

		if (s->tab != ix->tab || s->fid != ix->fid || !bs_eq(s->q, ix->q) ||
		    !idx_fits(s->v, s->row))
			continue;
		if (lookup ? !bs_eq(s->v, vs)
		           : ((vs.n && bs_cmp(s->v, vs) < 0) || (ve.n && bs_cmp(s->v, ve) >= 0)))
			continue;
		memset(&x, 0, sizeof(x));
		x.v = s->v;
		x.row = s->row;
		for (int j = 0; j < ix->ncl; j++) {
			const cell *c = cv_find(view, s->tab, s->row, ix->clfid[j], ix->clq[j]);

			if (c) {
				x.cfid[x.ncells] = ix->clfid[j];
				x.cq[x.ncells] = ix->clq[j];
				x.cv[x.ncells++] = c->v;
			}
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			h = realloc(h, cap * sizeof(*h));
			if (!h)
				abort();
		}
		h[n++] = x;
	}
	if (n > 1)
		qsort(h, n, sizeof(*h), hit_cmp);
	if (reverse)
		for (size_t i = 0; i < n / 2; i++) {
			mhit t = h[i];

			h[i] = h[n - 1 - i];
			h[n - 1 - i] = t;
		}
	if (limit && n > limit)
		n = limit;
	*out = h;
	return n;
}

/* ---------------------------------------------------------------- schema */

static const char *const FAM_A[] = { "f", "g" };
static const char *const FAM_B[] = { "f", "g", "h" };
static const char *const FAM_C[] = { "f" };
static const char *const FAM_I[] = { MRTX_INDEX_FAMILY };
const mtab TABS[NTAB] = { { "ta", FAM_A, 2 },  { "tb", FAM_B, 3 },  { "tc", FAM_C, 1 },
	                     { "ix0", FAM_I, 1 }, { "ix1", FAM_I, 1 }, { "ix2", FAM_I, 1 } };
/* by_f: ta f:"a"; by_g: ta g:"\0\xff" copying f:"" and g:"\0" (copy keys shorter than the
 * source key); by_h: tb h:"\0" copying g:Q40 (a key so much longer than the source's that
 * a row can be short enough to index and too long to hold the copy) and h:"\0" itself */
#define Q40 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
const midx IDX[NIDX] = {
	{ "by_f", 0, 0, { (const uint8_t *)"a", 1 }, 3, 0, { 0 }, { { NULL, 0 } } },
	{ "by_g", 0, 1, { (const uint8_t *)"\0\xff", 2 }, 4, 2, { 0, 1 },
	  { { (const uint8_t *)"", 0 }, { (const uint8_t *)"\0", 1 } } },
	{ "by_h", 1, 2, { (const uint8_t *)"\0", 1 }, 5, 2, { 1, 2 },
	  { { (const uint8_t *)Q40, 40 }, { (const uint8_t *)"\0", 1 } } },
};


mrtx_index_spec spec_of(int d, mrtx_column *cols)
{
	for (int j = 0; j < IDX[d].ncl; j++)
		cols[j] = (mrtx_column){ TABS[IDX[d].tab].fams[IDX[d].clfid[j]], MB(IDX[d].clq[j]) };
	return (mrtx_index_spec){ MRTX_INDEX_SPEC_VERSION, IDX[d].name, TABS[IDX[d].tab].name,
		                  TABS[IDX[d].tab].fams[IDX[d].fid], MB(IDX[d].q),
		                  TABS[IDX[d].itab].name, IDX[d].ncl ? cols : NULL,
		                  (size_t)IDX[d].ncl };
}


/* ---------------------------------------------------------- documented codes */

const char *const FNAME[NF] = { "mrtx_open", "mrtx_create_table", "mrtx_table_families",
	"mrtx_tables", "mrtx_begin", "mrtx_txn_set_lock_ttl", "mrtx_get", "mrtx_put/delete",
	"mrtx_delete_row", "mrtx_commit", "mrtx_scan_open", "mrtx_scan_next", "mrtx_run",
	"mrtx_create_index", "mrtx_index_scan/lookup", "mrtx_indexes", "mrtx_failpoints_set",
	"mrtx_key_*" };
const unsigned DOC[NF] = {
	[F_OPEN] = C(0) | C(MRTX_EINVAL) | C(MRTX_ENOTSTORE) | C(MRTX_ECORRUPT) | C(MRTX_ESTORE) |
	           C(MRTX_ENOMEM),
	[F_CTABLE] = C(0) | C(MRTX_EINVAL) | C(MRTX_ETOOBIG) | C(MRTX_EEXIST) | C(MRTX_EFULL) |
	             C(MRTX_ESTORE) | C(MRTX_ENOMEM),
	[F_FAMS] = C(0) | C(MRTX_EINVAL) | C(MRTX_ENOTABLE) | C(MRTX_ESTORE),
	[F_TABLES] = C(0) | C(MRTX_EINVAL) | C(MRTX_ESTORE),
	[F_BEGIN] = C(0) | C(MRTX_EINVAL) | C(MRTX_ENOMEM),
	[F_TTL] = C(0) | C(MRTX_EINVAL),
	[F_GET] = C(0) | C(MRTX_NOTFOUND) | C(MRTX_ELOCKED) | C(MRTX_CONFLICT) | C(MRTX_EINVAL) |
	          C(MRTX_ETOOBIG) | C(MRTX_ENOTABLE) | C(MRTX_ENOFAMILY) | C(MRTX_ECORRUPT) |
	          C(MRTX_ESTORE) | C(MRTX_ENOMEM) | C(MRTX_EBADTXN) | C(MRTX_ESNAPSHOT),
	/* + the errors of index maintenance's reads (mrtx_get's) */
	[F_PUT] = C(0) | C(MRTX_EINVAL) | C(MRTX_ETOOBIG) | C(MRTX_ENOTABLE) | C(MRTX_ENOFAMILY) |
	          C(MRTX_ENOMEM) | C(MRTX_EBADTXN) | C(MRTX_CONFLICT) | C(MRTX_ELOCKED) |
	          C(MRTX_ECORRUPT) | C(MRTX_ESTORE),
	[F_DELROW] = C(0) | C(MRTX_EINVAL) | C(MRTX_ETOOBIG) | C(MRTX_ENOTABLE) | C(MRTX_ENOMEM) |
	             C(MRTX_EBADTXN) | C(MRTX_CONFLICT) | C(MRTX_ELOCKED) | C(MRTX_ECORRUPT) |
	             C(MRTX_ESTORE),
	[F_COMMIT] = C(0) | C(MRTX_CONFLICT) | C(MRTX_ELOCKED) | C(MRTX_EUNKNOWN) | C(MRTX_ESTORE) |
	             C(MRTX_EFULL) | C(MRTX_ECORRUPT) | C(MRTX_ENOMEM) | C(MRTX_EBADTXN) |
	             C(MRTX_EINVAL),
	[F_SOPEN] = C(0) | C(MRTX_EINVAL) | C(MRTX_ENOTABLE) | C(MRTX_ENOFAMILY) | C(MRTX_ETOOBIG) |
	            C(MRTX_ENOMEM) | C(MRTX_EBADTXN),
	/* EBADTXN: mrtx_scan_close's note; EINVAL (NULL scanner or cell) is only
	 * the general convention, not in mrtx_scan_next's list (reported) */
	[F_SNEXT] = C(0) | C(MRTX_NOTFOUND) | C(MRTX_ELOCKED) | C(MRTX_CONFLICT) | C(MRTX_ECORRUPT) |
	            C(MRTX_ESTORE) | C(MRTX_ENOMEM) | C(MRTX_EBADTXN) | C(MRTX_EINVAL),
	[F_RUN] = ANYC,
	[F_CINDEX] = C(0) | C(MRTX_EINVAL) | C(MRTX_ENOTABLE) | C(MRTX_ENOFAMILY) | C(MRTX_EEXIST) |
	             C(MRTX_ETOOBIG) | C(MRTX_EFULL) | C(MRTX_ESTORE) | C(MRTX_ENOMEM) |
	             C(MRTX_ELOCKED) | C(MRTX_CONFLICT) | C(MRTX_ECORRUPT),
	/* errors of mrtx_scan_open / mrtx_scan_next too */
	[F_ISCAN] = C(0) | C(MRTX_EINVAL) | C(MRTX_ECORRUPT) | C(MRTX_NOTFOUND) | C(MRTX_ELOCKED) |
	            C(MRTX_CONFLICT) | C(MRTX_ENOTABLE) | C(MRTX_ENOFAMILY) | C(MRTX_ETOOBIG) |
	            C(MRTX_ENOMEM) | C(MRTX_EBADTXN) | C(MRTX_ESTORE),
	[F_INDEXES] = C(0) | C(MRTX_EINVAL) | C(MRTX_ECORRUPT) | C(MRTX_ESTORE) | C(MRTX_ENOMEM),
	[F_FP] = C(0) | C(MRTX_EINVAL),
	[F_KEY] = C(0) | C(MRTX_EINVAL) | C(MRTX_ETOOBIG),
};


int key_rc(bs row, size_t ql)
{
	if (!row.n)
		return MRTX_EINVAL;
	if (row.n > MRTX_MAX_ROW || row.n + bs_nuls(row) + 16 + ql > MRTX_MAX_KEY)
		return MRTX_ETOOBIG;
	return 0;
}


/* ------------------------------------------------------------ generators */

static uint64_t rng_state;
static bs longrows[8];

void rng_seed(uint64_t seed)
{
	rng_state = seed * 0x9E3779B97F4A7C15ull + 0x1234567;
	memset(longrows, 0, sizeof(longrows));
}

uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return n ? (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32) % n : 0;
}

int chance(unsigned permille)
{
	return rnd(1000) < permille;
}

static const uint8_t ALPHA[] = { 0x00, 0x01, 'a', 0xFF };
bs rnd_alpha(size_t n)
{
	uint8_t b[512];

	for (size_t i = 0; i < n; i++)
		b[i] = ALPHA[rnd(4)];
	return bs_dup(b, n);
}

/* A row whose cell key with a qualifier of ql bytes is exactly at the limit
 * (past = 0) or one byte past it (past = 1); a few NULs, mostly 'a'. */
bs limit_row(size_t ql, int past)
{
	uint8_t b[520];
	size_t z, r;

	do {
		z = rnd(3) ? rnd(6) : rnd(120);
		r = 495 + (size_t)past - ql - z;
	} while (ql + z > 494 || r < z || r < 1);
	memset(b, 'a', r);
	for (size_t i = 0; i < z; i++) {
		size_t at = rnd((uint32_t)r);

		while (b[at] == 0)
			at = (at + 1) % r;
		b[at] = 0;
	}
	if (r > 2)
		b[r - 1] = ALPHA[1 + rnd(3)];
	return bs_dup(b, r);
}

bs rnd_row(void)
{
	if (chance(30)) {
		int i = (int)rnd(8);

		if (!longrows[i].n || rnd(2))
			longrows[i] = limit_row(rnd(4) ? rnd(3) : rnd(48), (int)rnd(2));
		return longrows[i];
	}
	if (rnd(4) == 0) /* rows never written before: phantoms */
		return rnd_alpha(4 + rnd(2));
	return rnd_alpha(1 + rnd(3) - (rnd(3) == 0 ? 0 : rnd(2)));
}

static const char *const SPECIALQ[] = { "", "a", "\0", "aa", "\0\xff", Q40 };
static const size_t SPECIALQN[] = { 0, 1, 1, 2, 2, 40 };
bs rnd_qual(void)
{
	if (rnd(5) == 0) {
		int i = (int)rnd(6);

		return bs_dup(SPECIALQ[i], SPECIALQN[i]);
	}
	if (chance(10))
		return rnd_alpha(200 + rnd(306));
	return rnd_alpha(rnd(4) + (rnd(4) == 0));
}

bs rnd_value(long serial)
{
	char b[32];
	uint32_t w = rnd(1000);

	if (w < 450)
		return bs_dup(b, (size_t)snprintf(b, sizeof(b), "v%ld", serial));
	if (w < 850)
		return rnd_alpha(rnd(3));
	if (w < 960)
		return rnd_alpha(3 + rnd(38));
	if (w < 997)
		return rnd_alpha(200 + rnd(300));
	{
		size_t n = 70000 + rnd(1000);
		uint8_t *p = malloc(n);
		bs r;

		if (!p)
			abort();
		memset(p, 'a' + (int)rnd(3), n);
		r = bs_dup(p, n);
		free(p);
		return r;
	}
}


/* ----------------------------------------------------------- observations */

int fid_of(int tab, const char *fam)
{
	for (int i = 0; fam && i < TABS[tab].nfam; i++)
		if (strcmp(TABS[tab].fams[i], fam) == 0)
			return i;
	return -1;
}

int cell_same(const cell *a, const cell *b)
{
	return cell_key_cmp(a, b) == 0 && bs_eq(a->v, b->v);
}

static int hit_same(const mhit *a, const mhit *b)
{
	if (!bs_eq(a->v, b->v) || !bs_eq(a->row, b->row) || a->ncells != b->ncells)
		return 0;
	for (int i = 0; i < a->ncells; i++)
		if (a->cfid[i] != b->cfid[i] || !bs_eq(a->cq[i], b->cq[i]) || !bs_eq(a->cv[i], b->cv[i]))
			return 0;
	return 1;
}

/* Does o hold on view?  why receives the first difference. */
int obs_holds(const obs *o, const cellv *view, char *why, size_t wn)
{
	if (o->kind == OBS_GET) {
		const cell *c = cv_find(view, o->g.tab, o->g.row, o->g.fid, o->g.q);

		if (!!c == o->found && (!c || bs_eq(c->v, o->g.v)))
			return 1;
		snprintf(why, wn, "get %s %s %s:%s saw %s, the model has %s", TABS[o->g.tab].name,
		         bs_show(o->g.row), TABS[o->g.tab].fams[o->g.fid], bs_show(o->g.q),
		         o->found ? bs_show(o->g.v) : "NOTFOUND", c ? bs_show(c->v) : "NOTFOUND");
		return 0;
	}
	if (o->kind == OBS_SCAN) {
		cellv want = { 0 };
		size_t i;
		int ok;

		cv_scan(view, &o->sp, &want);
		for (i = 0; i < o->got.n && i < want.n && cell_same(&o->got.c[i], &want.c[i]); i++)
			;
		ok = i == o->got.n && (!o->ended || i == want.n);
		if (!ok)
			snprintf(why, wn, "scan %s [%s, %s) fam %d q[%s, %s) rev %d limit %zu %s: got %zu "
			         "cells, model %zu, first difference at %zu: got %s/%s=%s model %s/%s=%s",
			         TABS[o->sp.tab].name, bs_show(o->sp.start), bs_show(o->sp.end), o->sp.fid,
			         bs_show(o->sp.qs), bs_show(o->sp.qe), o->sp.reverse, o->sp.limit,
			         o->ended ? "to the end" : "stopped early", o->got.n, want.n, i,
			         i < o->got.n ? bs_show(o->got.c[i].row) : "-",
			         i < o->got.n ? bs_show(o->got.c[i].q) : "-",
			         i < o->got.n ? bs_show(o->got.c[i].v) : "-",
			         i < want.n ? bs_show(want.c[i].row) : "-",
			         i < want.n ? bs_show(want.c[i].q) : "-",
			         i < want.n ? bs_show(want.c[i].v) : "-");
		cv_free(&want);
		return ok;
	}
	{
		mhit *h;
		size_t n = idx_hits(view, &IDX[o->ix], o->lookup, o->vs, o->ve, o->reverse, o->limit,
		                    &h), i;
		int ok;

		for (i = 0; i < o->nhits && i < n && hit_same(&o->hits[i], &h[i]); i++)
			;
		ok = i == o->nhits && (!o->ended || i == n);
		if (!ok)
			snprintf(why, wn, "index %s %s [%s, %s) rev %d limit %zu: got %zu hits, model %zu, "
			         "first difference at %zu: got %s/%s model %s/%s", IDX[o->ix].name,
			         o->lookup ? "lookup" : "scan", bs_show(o->vs), bs_show(o->ve), o->reverse,
			         o->limit, o->nhits, n, i, i < o->nhits ? bs_show(o->hits[i].v) : "-",
			         i < o->nhits ? bs_show(o->hits[i].row) : "-", i < n ? bs_show(h[i].v) : "-",
			         i < n ? bs_show(h[i].row) : "-");
		free(h);
		return ok;
	}
}

