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

	/* documented index row key = bytes(v).bytes(row): a row (<= 506 bytes)
	 * whose cells "r" and "c".n (2 bytes) must fit the cell key rule */
	return size <= 506 && size + nuls + 5 + 2 <= 511;
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
