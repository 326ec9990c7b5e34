/*
 * simrados_op.c - write and read ops of the simulated cluster: their steps
 * freed, added and copied; a write checked whole, then applied; a read run
 * into its iterators (simrados_int.h).
 */
#include "storage/sim/simrados_int.h"

#include <rados/librados.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- ops */

static void step_free(sstep *s)
{
	free(s->key.p);
	free(s->val.p);
	free(s->after.p);
	free(s->prefix.p);
	for (size_t i = 0; i < s->nkv; i++) {
		free(s->kv[i].k.p);
		free(s->kv[i].v.p);
	}
	free(s->kv);
}

void simr__sop_free(sop *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->n; i++)
		step_free(&o->s[i]);
	free(o->s);
	free(o);
}

sstep *simr__sop_add(sop *o, int kind)
{
	sstep *s;

	if (o->oom)
		return NULL;
	if (o->n == o->cap) {
		size_t nc = o->cap ? 2 * o->cap : 8;
		sstep *na = realloc(o->s, nc * sizeof(*na));

		if (!na) {
			o->oom = 1;
			return NULL;
		}
		o->s = na;
		o->cap = nc;
	}
	s = &o->s[o->n++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	return s;
}

/* A deep copy of a write op (a held op outlives its caller's). */
sop *simr__sop_dup(const sop *o)
{
	sop *c = calloc(1, sizeof(*c));

	if (!c || !(c->s = calloc(o->n ? o->n : 1, sizeof(*c->s)))) {
		free(c);
		return NULL;
	}
	c->cap = o->n ? o->n : 1;
	for (size_t i = 0; i < o->n; i++) {
		const sstep *s = &o->s[i];
		sstep *d = &c->s[c->n++];
		int bad = 0;

		*d = *s;
		d->key.p = d->val.p = d->after.p = d->prefix.p = NULL;
		d->kv = NULL;
		d->nkv = 0;
		if (s->key.p)
			bad |= simr__sbuf_set(&d->key, s->key.p, s->key.n);
		if (s->val.p)
			bad |= simr__sbuf_set(&d->val, s->val.p, s->val.n);
		if (s->nkv && !bad) {
			if (!(d->kv = calloc(s->nkv, sizeof(*d->kv))))
				bad = 1;
			for (size_t j = 0; !bad && j < s->nkv; j++, d->nkv++)
				if (simr__sbuf_set(&d->kv[j].k, s->kv[j].k.p, s->kv[j].k.n) ||
				    (s->kv[j].v.p && simr__sbuf_set(&d->kv[j].v, s->kv[j].v.p, s->kv[j].v.n)))
					bad = 1;
		}
		if (bad) {
			simr__sop_free(c);
			return NULL;
		}
	}
	return c;
}

/* The value key k would have in object o (missing: NULL) after steps
 * s[0..upto) of an op: *present 0 when absent. */
static sbuf lookup(const sobj *o, const sstep *s, size_t upto, const sbuf *k, int *present)
{
	sbuf none = { "", 0 };

	for (size_t i = upto; i-- > 0;) {
		const sstep *t = &s[i];

		if (t->kind == ST_REMOVE)
			break;
		if (t->kind == ST_SET)
			for (size_t j = t->nkv; j-- > 0;)
				if (simr__kcmp(&t->kv[j].k, k) == 0) {
					*present = 1;
					return t->kv[j].v;
				}
		if (t->kind == ST_RMKEYS)
			for (size_t j = 0; j < t->nkv; j++)
				if (simr__kcmp(&t->kv[j].k, k) == 0)
					goto absent;
		if (t->kind == ST_RMRANGE && simr__kcmp(k, &t->key) >= 0 && simr__kcmp(k, &t->val) < 0)
			goto absent;
	}
	for (size_t i = upto; i-- > 0;)
		if (s[i].kind == ST_REMOVE)
			goto absent;
	if (o) {
		const skv *e = simr__omap_find(&o->m, k->p, k->n);

		if (e) {
			*present = 1;
			return e->v;
		}
	}
absent:
	*present = 0;
	return none;
}

/* Check op's steps against the object as the earlier steps leave it: 0, or
 * the first failing step's error (its index in *bad). */
static int write_check(const sobj *o, const sop *op, size_t *bad)
{
	int exists = o != NULL;

	for (size_t i = 0; i < op->n; i++) {
		const sstep *s = &op->s[i];
		int r = 0, present, c;
		sbuf v;

		switch (s->kind) {
		case ST_CREATE:
			if (s->excl && exists)
				r = -EEXIST;
			exists = 1;
			break;
		case ST_CMP:
			if (!exists) {
				r = -ENOENT;
				break;
			}
			v = lookup(o, op->s, i, &s->key, &present);
			c = simr__kcmp(&v, &s->val);
			if (s->cmp == LIBRADOS_CMPXATTR_OP_EQ)
				r = c == 0 ? 0 : -ECANCELED;
			else if (s->cmp == LIBRADOS_CMPXATTR_OP_LT)
				r = c < 0 ? 0 : -ECANCELED;
			else if (s->cmp == LIBRADOS_CMPXATTR_OP_GT)
				r = c > 0 ? 0 : -ECANCELED;
			else
				r = -EINVAL;
			break;
		case ST_SET:
			exists = 1;
			break;
		case ST_RMKEYS:
		case ST_RMRANGE:
			if (!exists)
				r = -ENOENT;
			break;
		case ST_REMOVE:
			if (!exists)
				r = -ENOENT;
			exists = 0;
			break;
		default:
			r = -EOPNOTSUPP;
			break;
		}
		if (r) {
			*bad = i;
			return r;
		}
	}
	return 0;
}

/* Run write op on pool's object oid; prvals are set when `reply`. */
int simr__write_apply(spool *p, const char *oid, const sop *op, int reply)
{
	sobj *o;
	size_t bad = 0;
	int r;

	if (!p)
		return -ENOENT;
	if (op->oom)
		return -ENOMEM;
	o = simr__obj_find(p, oid);
	r = write_check(o, op, &bad);
	for (size_t i = 0; reply && i < op->n; i++)
		if (op->s[i].prval)
			*op->s[i].prval = r && i == bad ? r : 0;
	if (r)
		return r;
	for (size_t i = 0; i < op->n; i++) {
		const sstep *s = &op->s[i];

		if ((s->kind == ST_CREATE || s->kind == ST_SET) && !o && !(o = simr__obj_add(p, oid)))
			return -ENOMEM; /* (the op is half applied: out of memory in a test) */
		if (s->kind == ST_SET) {
			for (size_t j = 0; j < s->nkv; j++)
				if (simr__omap_set(&o->m, &s->kv[j].k, &s->kv[j].v))
					return -ENOMEM;
		} else if (s->kind == ST_RMKEYS) {
			for (size_t j = 0; j < s->nkv; j++) {
				size_t at = simr__omap_bound(&o->m, s->kv[j].k.p, s->kv[j].k.n, 0);

				if (at < o->m.n && simr__kcmp(&o->m.a[at].k, &s->kv[j].k) == 0)
					simr__omap_cut(&o->m, at, at + 1);
			}
		} else if (s->kind == ST_RMRANGE) {
			size_t from = simr__omap_bound(&o->m, s->key.p, s->key.n, 0),
			       to = simr__omap_bound(&o->m, s->val.p, s->val.n, 0);

			simr__omap_cut(&o->m, from, to);
		} else if (s->kind == ST_REMOVE) {
			simr__obj_remove(p, oid);
			o = NULL;
		}
	}
	return 0;
}

static int iter_push(siter *it, const skv *e)
{
	if ((it->n & (it->n - 1)) == 0 || it->n == 0) { /* grow at 0, 1, 2, 4, ... */
		skv *na = realloc(it->a, (it->n ? 2 * it->n : 1) * sizeof(*na));

		if (!na)
			return -ENOMEM;
		it->a = na;
	}
	if (simr__sbuf_set(&it->a[it->n].k, e->k.p, e->k.n))
		return -ENOMEM;
	if (simr__sbuf_set(&it->a[it->n].v, e->v.p, e->v.n)) {
		free(it->a[it->n].k.p);
		return -ENOMEM;
	}
	it->n++;
	return 0;
}

static int get_vals(const sobj *o, const sstep *s)
{
	const omap *m = &o->m;
	uint64_t max = s->max < SIMR_MAX_OMAP_ENTRIES ? s->max : SIMR_MAX_OMAP_ENTRIES;
	size_t i = simr__kcmp(&s->prefix, &s->after) > 0 ? simr__omap_bound(m, s->prefix.p, s->prefix.n, 0) :
	           simr__omap_bound(m, s->after.p, s->after.n, 1);
	uint64_t num = 0;
	int more = 0;

	for (; i < m->n; i++, num++) {
		const skv *e = &m->a[i];

		if (e->k.n < s->prefix.n || memcmp(e->k.p, s->prefix.p, s->prefix.n) != 0)
			break;
		if (num >= max) {
			more = 1;
			break;
		}
		if (iter_push(s->it, e))
			return -ENOMEM;
	}
	if (s->pmore)
		*s->pmore = (unsigned char)more;
	return 0;
}

static int get_keys(const sobj *o, const sstep *s)
{
	/* the OSD answers in key order, each key once */
	for (size_t i = 0; i < o->m.n; i++)
		for (size_t j = 0; j < s->nkv; j++)
			if (simr__kcmp(&o->m.a[i].k, &s->kv[j].k) == 0) {
				if (iter_push(s->it, &o->m.a[i]))
					return -ENOMEM;
				break;
			}
	return 0;
}

int simr__read_apply(spool *p, const char *oid, const sop *op)
{
	const sobj *o;

	if (!p || !(o = simr__obj_find(p, oid)))
		return -ENOENT;
	if (op->oom)
		return -ENOMEM;
	for (size_t i = 0; i < op->n; i++) {
		const sstep *s = &op->s[i];
		int r = s->kind == ST_GETVALS ? get_vals(o, s) : get_keys(o, s);

		if (s->prval)
			*s->prval = r;
		if (r)
			return r;
	}
	return 0;
}
