/*
 * simrados_store.c - the simulated cluster's data: byte strings, omaps in
 * key order, pools holding objects in name order (simrados_int.h).
 */
#include "storage/sim/simrados_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- strings */

int simr__sbuf_set(sbuf *b, const char *p, size_t n)
{
	b->n = n;
	if (!(b->p = malloc(n ? n : 1)))
		return -ENOMEM;
	if (n)
		memcpy(b->p, p, n);
	return 0;
}

static int bcmp_(const char *a, size_t an, const char *b, size_t bn)
{
	size_t n = an < bn ? an : bn;
	int c = n ? memcmp(a, b, n) : 0; /* (a or b may be NULL when empty) */

	return c ? c : an < bn ? -1 : an > bn;
}

int simr__kcmp(const sbuf *a, const sbuf *b) { return bcmp_(a->p, a->n, b->p, b->n); }

/* ---------------------------------------------------------------- omap */

/* The index of the first key >= k (or > k when `after`). */
size_t simr__omap_bound(const omap *m, const char *k, size_t kn, int after)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = bcmp_(m->a[mid].k.p, m->a[mid].k.n, k, kn);

		if (c < 0 || (after && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const skv *simr__omap_find(const omap *m, const char *k, size_t kn)
{
	size_t i = simr__omap_bound(m, k, kn, 0);

	return i < m->n && bcmp_(m->a[i].k.p, m->a[i].k.n, k, kn) == 0 ? &m->a[i] : NULL;
}

int simr__omap_set(omap *m, const sbuf *k, const sbuf *v)
{
	size_t i = simr__omap_bound(m, k->p, k->n, 0);
	sbuf nv;

	if (simr__sbuf_set(&nv, v->p, v->n))
		return -ENOMEM;
	if (i < m->n && simr__kcmp(&m->a[i].k, k) == 0) {
		free(m->a[i].v.p);
		m->a[i].v = nv;
		return 0;
	}
	if (m->n == m->cap) {
		size_t nc = m->cap ? 2 * m->cap : 16;
		skv *na = realloc(m->a, nc * sizeof(*na));

		if (!na) {
			free(nv.p);
			return -ENOMEM;
		}
		m->a = na;
		m->cap = nc;
	}
	memmove(&m->a[i + 1], &m->a[i], (m->n - i) * sizeof(*m->a));
	if (simr__sbuf_set(&m->a[i].k, k->p, k->n)) {
		memmove(&m->a[i], &m->a[i + 1], (m->n - i) * sizeof(*m->a));
		free(nv.p);
		return -ENOMEM;
	}
	m->a[i].v = nv;
	m->n++;
	return 0;
}

/* Remove the keys in [from, to) by index. */
void simr__omap_cut(omap *m, size_t from, size_t to)
{
	if (to <= from)
		return;
	for (size_t i = from; i < to; i++) {
		free(m->a[i].k.p);
		free(m->a[i].v.p);
	}
	memmove(&m->a[from], &m->a[to], (m->n - to) * sizeof(*m->a));
	m->n -= to - from;
}

void simr__omap_free(omap *m)
{
	simr__omap_cut(m, 0, m->n);
	free(m->a);
	m->a = NULL;
	m->cap = 0;
}

/* --------------------------------------------------- pools and objects */

static size_t pool_bound(const spool *p, const char *name)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(p->o[mid]->name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

sobj *simr__obj_find(const spool *p, const char *name)
{
	size_t i = pool_bound(p, name);

	return i < p->n && strcmp(p->o[i]->name, name) == 0 ? p->o[i] : NULL;
}

sobj *simr__obj_add(spool *p, const char *name)
{
	size_t i = pool_bound(p, name);
	sobj *o;

	if (p->n == p->cap) {
		size_t nc = p->cap ? 2 * p->cap : 16;
		sobj **na = realloc(p->o, nc * sizeof(*na));

		if (!na)
			return NULL;
		p->o = na;
		p->cap = nc;
	}
	if (!(o = calloc(1, sizeof(*o))) || !(o->name = strdup(name))) {
		free(o);
		return NULL;
	}
	memmove(&p->o[i + 1], &p->o[i], (p->n - i) * sizeof(*p->o));
	p->o[i] = o;
	p->n++;
	return o;
}

void simr__obj_remove(spool *p, const char *name)
{
	size_t i = pool_bound(p, name);

	if (i >= p->n || strcmp(p->o[i]->name, name) != 0)
		return;
	simr__omap_free(&p->o[i]->m);
	free(p->o[i]->name);
	free(p->o[i]);
	memmove(&p->o[i], &p->o[i + 1], (p->n - i - 1) * sizeof(*p->o));
	p->n--;
}
