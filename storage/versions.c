/*
 * versions.c - the policy rule and version choice every backend's reads
 * share (versions.h).
 */
#include "storage/versions.h"

#include <string.h>

int store_version_kept(const store_policy *p, size_t i, uint64_t ts, uint64_t now_us)
{
	if (i >= p->max_versions)
		return 0;
	if (!p->ttl_ms || i < p->min_versions)
		return 1;
	return ts + p->ttl_ms * 1000u >= now_us || ts + p->ttl_ms * 1000u < ts;
}

int store_version_order(uint8_t fa, const void *qa, size_t qan, uint64_t ta, int ra,
                        uint8_t fb, const void *qb, size_t qbn, uint64_t tb, int rb)
{
	int c;

	if (fa != fb)
		return fa < fb ? -1 : 1;
	if ((c = cmp_bytes(qa, qan, qb, qbn)))
		return c;
	if (ta != tb)
		return ta > tb ? -1 : 1;
	return ra - rb;
}

void *store_arr_grow(mrtx_arena *a, void *arr, size_t n, size_t *cap, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 8;
	void *p;

	if (n < *cap)
		return arr;
	if (ncap > SIZE_MAX / elem || !(p = arena_alloc(a, ncap * elem)))
		return NULL;
	if (n)
		memcpy(p, arr, n * elem);
	*cap = ncap;
	return p;
}

int store_ver_add(mrtx_arena *a, store_ver **vs, size_t *n, size_t *cap, const store_ver *x)
{
	store_ver *e;

	if (!(*vs = store_arr_grow(a, *vs, *n, cap, sizeof(**vs))))
		return MRTX_ENOMEM;
	e = &(*vs)[(*n)++];
	*e = *x;
	if (!(e->qual.data = arena_dup(a, x->qual.data, x->qual.size)) ||
	    !(e->value.data = arena_dup(a, x->value.data, x->value.size)))
		return MRTX_ENOMEM;
	return 0;
}

/* Keeps I19 (DESIGN §10). */
int store_versions_select(const store_table *t, const store_filter *f, const store_ver *vs,
                          size_t n, mrtx_arena *a, store_row *out)
{
	size_t want = f->versions > 1 ? f->versions : 1, ocap = out->ncells;
	uint64_t now = mrtx__now_us();

	for (size_t i = 0; f->at && i < n; i++) /* (store_row.vmax) */
		if (vs[i].ts <= f->at && vs[i].ts > out->vmax)
			out->vmax = vs[i].ts;

	for (size_t i = 0; i < n;) {
		size_t j = i, shown = 0, seen = 0, r0 = i;
		store_policy p = store_table_policy(t, vs[i].fid);
		int stop = 0, first = 1;

		while (j < n && vs[j].fid == vs[i].fid &&
		       cmp_bytes(vs[j].qual.data, vs[j].qual.size, vs[i].qual.data,
		                 vs[i].qual.size) == 0)
			j++;
		for (size_t x = i; x < j && !stop; x++) {
			store_cell *c;

			if (f->at && vs[x].ts > f->at)
				continue;
			/* (a version's rank counts every version of the cell the read
			 * has, deletions and those above f->at included: as writes and
			 * the collector count it; a running snapshot's (f->live) only
			 * those at or below f->at, as the store held them then) */
			if (first && f->live)
				r0 = x;
			first = 0;
			if (!(vs[x].flags & CELL_DELETED) && !f->live &&
			    !store_version_kept(&p, x - i, vs[x].ts, now) && !seen && f->at)
				/* newer versions or its TTL put it past what the family
				 * keeps: dropped, or about to be */
				return mrtx__seterr(MRTX_ESNAPSHOT, "table '%s': a cell's version at or "
				                    "below timestamp %llu is no longer kept by its "
				                    "family's policy (%u %s, TTL %llu ms): read at "
				                    "a later timestamp, or keep more versions",
				                    t->name, (unsigned long long)f->at, p.max_versions,
				                    p.max_versions == 1 ? "version" : "versions",
				                    (unsigned long long)p.ttl_ms);
			if (vs[x].flags & CELL_DELETED || !store_version_kept(&p, x - r0, vs[x].ts, now)) {
				stop = 1;
				break;
			}
			seen++;
			if (!(out->cells = store_arr_grow(a, out->cells, out->ncells, &ocap,
			                                  sizeof(*c))))
				return MRTX_ENOMEM;
			c = &out->cells[out->ncells++];
			c->fid = vs[x].fid;
			c->qual = vs[x].qual;
			c->value = vs[x].value;
			c->ts = vs[x].ts;
			if (++shown == want)
				stop = 1;
		}
		/* nothing at or below f->at, and older versions were collected:
		 * what the cell held then is not known */
		if (!stop && !seen && f->at && vs[j - 1].flags & CELL_GONE)
			return mrtx__seterr(MRTX_ESNAPSHOT, "table '%s': a cell's versions at or "
			                    "below timestamp %llu were collected (its family keeps "
			                    "%u %s): read at a later timestamp, or keep more "
			                    "versions", t->name, (unsigned long long)f->at,
			                    p.max_versions, p.max_versions == 1 ? "version" :
			                    "versions");
		i = j;
	}
	return 0;
}

void store_policy_put(uint8_t *p, const store_policy *x)
{
	for (unsigned i = 0; i < 4; i++) {
		p[i] = (uint8_t)(x->max_versions >> (8 * i));
		p[4 + i] = (uint8_t)(x->min_versions >> (8 * i));
	}
	for (unsigned i = 0; i < 8; i++)
		p[8 + i] = (uint8_t)(x->ttl_ms >> (8 * i));
}

void store_policy_get(const uint8_t *p, store_policy *x)
{
	memset(x, 0, sizeof(*x));
	for (unsigned i = 0; i < 4; i++) {
		x->max_versions |= (uint32_t)p[i] << (8 * i);
		x->min_versions |= (uint32_t)p[4 + i] << (8 * i);
	}
	for (unsigned i = 0; i < 8; i++)
		x->ttl_ms |= (uint64_t)p[8 + i] << (8 * i);
}

int store_policies_parse(mrtx_bytes v, store_polset **out)
{
	store_polset *s;
	size_t n = v.size / STORE_POL_SIZE;

	*out = NULL;
	if (v.size % STORE_POL_SIZE || n == 0 || n > MRTX_MAX_FAMILIES)
		return MRTX_ECORRUPT;
	if (!(s = mrtx__calloc(1, sizeof(*s) + n * sizeof(s->p[0]))))
		return MRTX_ENOMEM;
	s->n = n;
	for (size_t i = 0; i < n; i++) {
		store_policy_get((const uint8_t *)v.data + i * STORE_POL_SIZE, &s->p[i]);
		if (s->p[i].max_versions == 0 || s->p[i].min_versions > s->p[i].max_versions) {
			mrtx__free(s);
			return MRTX_ECORRUPT;
		}
	}
	*out = s;
	return 0;
}

void store_policies_publish(store_table *t, store_polset *s)
{
	s->older = atomic_load_explicit(&t->pols, memory_order_relaxed);
	atomic_store_explicit(&t->pols, s, memory_order_release);
}

void store_table_free_policies(store_table *t)
{
	store_polset *s = atomic_load(&t->pols);
	store_names *l = atomic_load(&t->live);

	while (l) {
		store_names *o = l->older;

		mrtx__free(l);
		l = o;
	}
	atomic_store(&t->live, NULL);

	while (s) {
		store_polset *o = s->older;

		mrtx__free(s);
		s = o;
	}
	atomic_store(&t->pols, NULL);
}
