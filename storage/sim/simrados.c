/*
 * simrados.c - an in-memory, deterministic stand-in for the librados C
 * functions that storage/rados/ calls (control: simrados.h).
 *
 * The model.  One process-wide cluster of pools (made by simr_pool_create);
 * a pool holds objects by name; an object exists or not and carries an omap,
 * a map of byte strings sorted by memcmp order, a shorter prefix first (as
 * Ceph's std::string keys).  A write op is a list of steps kept in the order
 * they were added, run as Ceph's OSD runs them: create (EXCLUSIVE on an
 * existing object: -EEXIST), omap_cmp2 (EQ, LT, GT of the stored value
 * against the given one, a missing key comparing as the empty value; false:
 * -ECANCELED; on a missing object: -ENOENT; another operator: -EINVAL),
 * omap_set2 (creates the object), omap_rm_keys2 and omap_rm_range2 [begin,
 * end) (-ENOENT on a missing object), exec (-EOPNOTSUPP: no object classes).
 * The first failing step fails the whole op, its prval gets the error, and
 * nothing of the op is applied: steps are first checked against the object
 * as the earlier steps of the same op would leave it, then applied.  A read
 * op on a missing object returns -ENOENT and leaves its iterators empty,
 * its prvals and *pmore untouched.  omap_get_vals2 follows the OSD:
 * lower_bound(filter_prefix) when the prefix sorts after start_after, else
 * upper_bound(start_after) (so the empty key is never listed), at most
 * min(max_return, 1024) pairs, *pmore = 1 when a further key matching the
 * prefix was left out.  Object listing is in name (strcmp) order, a
 * snapshot taken at rados_nobjects_list_open.
 *
 * Time and faults belong to the hook (simrados.h): without one, every op
 * applies at submission and its completion is complete at once.  With one,
 * each op is applied, applied with its reply lost, dropped, or held in a
 * queue the scheduler drains in any order it likes, except that ops of one
 * client (rados_t) on one object leave in submission order.  A held write
 * is a private copy of the op, so the caller may give up (its wait times
 * out) and free the op while the copy may still be applied later.  There
 * is no clock and no randomness here.
 *
 * NOT simulated: replication, placement groups, OSD or monitor failures
 * other than what the hook decides per op; object data, xattrs, versions
 * (assert_version), snapshots, watch/notify, namespaces and locators
 * (listing gives no key or namespace); rados_write_op_exec and object
 * classes (-EOPNOTSUPP); completion callbacks (a non-NULL cb_complete is
 * refused with -EOPNOTSUPP); size limits (osd_max_write_size,
 * osd_max_omap_bytes_per_request); Ceph's hash order of listings; the conf
 * file (rados_conf_read_file succeeds for any path, mon_host defaults to
 * "sim"); authentication.  Reads are never held: a read sees the objects as
 * they are at its submission, even when a write of the same client on the
 * same object is still held (Ceph would order them).  rados_remove is
 * submitted and waited for like an aio write.
 */
#include "storage/sim/simrados.h"

#include <rados/librados.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SIMR_MAX_OMAP_ENTRIES 1024 /* osd_max_omap_entries_per_request */

/* ------------------------------------------------------------- strings */

typedef struct sbuf {
	char *p;
	size_t n;
} sbuf;

typedef struct skv {
	sbuf k, v;
} skv;

static int sbuf_set(sbuf *b, const char *p, size_t n)
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

static int kcmp(const sbuf *a, const sbuf *b) { return bcmp_(a->p, a->n, b->p, b->n); }

/* ---------------------------------------------------------------- omap */

typedef struct omap {
	skv *a;
	size_t n, cap;
} omap;

/* The index of the first key >= k (or > k when `after`). */
static size_t omap_bound(const omap *m, const char *k, size_t kn, int after)
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

static const skv *omap_find(const omap *m, const char *k, size_t kn)
{
	size_t i = omap_bound(m, k, kn, 0);

	return i < m->n && bcmp_(m->a[i].k.p, m->a[i].k.n, k, kn) == 0 ? &m->a[i] : NULL;
}

static int omap_set(omap *m, const sbuf *k, const sbuf *v)
{
	size_t i = omap_bound(m, k->p, k->n, 0);
	sbuf nv;

	if (sbuf_set(&nv, v->p, v->n))
		return -ENOMEM;
	if (i < m->n && kcmp(&m->a[i].k, k) == 0) {
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
	if (sbuf_set(&m->a[i].k, k->p, k->n)) {
		memmove(&m->a[i], &m->a[i + 1], (m->n - i) * sizeof(*m->a));
		free(nv.p);
		return -ENOMEM;
	}
	m->a[i].v = nv;
	m->n++;
	return 0;
}

/* Remove the keys in [from, to) by index. */
static void omap_cut(omap *m, size_t from, size_t to)
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

static void omap_free(omap *m)
{
	omap_cut(m, 0, m->n);
	free(m->a);
	m->a = NULL;
	m->cap = 0;
}

/* --------------------------------------------------- pools and objects */

typedef struct sobj {
	char *name;
	omap m;
} sobj;

typedef struct spool {
	uint64_t id;
	char *name;
	sobj **o; /* sorted by strcmp of name */
	size_t n, cap;
} spool;

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

static sobj *obj_find(const spool *p, const char *name)
{
	size_t i = pool_bound(p, name);

	return i < p->n && strcmp(p->o[i]->name, name) == 0 ? p->o[i] : NULL;
}

static sobj *obj_add(spool *p, const char *name)
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

static void obj_remove(spool *p, const char *name)
{
	size_t i = pool_bound(p, name);

	if (i >= p->n || strcmp(p->o[i]->name, name) != 0)
		return;
	omap_free(&p->o[i]->m);
	free(p->o[i]->name);
	free(p->o[i]);
	memmove(&p->o[i], &p->o[i + 1], (p->n - i - 1) * sizeof(*p->o));
	p->n--;
}

/* ------------------------------------------------------ ops and handles */

enum { ST_CREATE, ST_CMP, ST_SET, ST_RMKEYS, ST_RMRANGE, ST_EXEC, ST_REMOVE, ST_GETVALS,
       ST_GETKEYS };

typedef struct siter {
	skv *a;
	size_t n, pos;
} siter;

typedef struct sstep {
	int kind;
	int excl;           /* ST_CREATE */
	uint8_t cmp;        /* ST_CMP */
	sbuf key, val;      /* ST_CMP; ST_RMRANGE's begin and end */
	skv *kv;            /* ST_SET, ST_RMKEYS, ST_GETKEYS (keys only) */
	size_t nkv;
	int *prval;         /* ST_CMP, ST_EXEC, ST_GET* */
	sbuf after, prefix; /* ST_GETVALS, as C strings */
	uint64_t max;
	siter *it;          /* ST_GET*: owned by the caller */
	unsigned char *pmore;
} sstep;

typedef struct sop {
	sstep *s;
	size_t n, cap;
	int oom; /* a step could not be recorded: the op fails with -ENOMEM */
} sop;

typedef struct sclient {
	uint64_t id;
	int connected;
	char mon_host[256];
} sclient;

typedef struct sio {
	uint64_t client, pool_id;
	char *pool;
} sio;

typedef struct scomp scomp;

/* An op in flight: a held write (a private copy of its op). */
typedef struct pend {
	uint64_t id, client, pool_id;
	char *pool, *oid;
	sop *op;
	simr_fate fate;   /* as chosen at submission */
	scomp *comp;      /* NULL once its caller gave up */
	struct pend *next;
} pend;

struct scomp {
	int done, ret;
	pend *p;
};

typedef struct slist {
	char **names;
	size_t n, pos;
} slist;

/* --------------------------------------------------------- the cluster */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static spool **pools;
static size_t npools;
static uint64_t next_pool_id = 1; /* never reset: an old ioctx never finds a new pool */
static uint64_t next_op_id, next_client_id;
static simr_hook hook;
static int have_hook;
static pend *held_head, *held_tail;

static spool *pool_by_name(const char *name)
{
	for (size_t i = 0; i < npools; i++)
		if (strcmp(pools[i]->name, name) == 0)
			return pools[i];
	return NULL;
}

static spool *pool_by_id(uint64_t id)
{
	for (size_t i = 0; i < npools; i++)
		if (pools[i]->id == id)
			return pools[i];
	return NULL;
}

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

static void sop_free(sop *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->n; i++)
		step_free(&o->s[i]);
	free(o->s);
	free(o);
}

static sstep *sop_add(sop *o, int kind)
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
static sop *sop_dup(const sop *o)
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
			bad |= sbuf_set(&d->key, s->key.p, s->key.n);
		if (s->val.p)
			bad |= sbuf_set(&d->val, s->val.p, s->val.n);
		if (s->nkv && !bad) {
			if (!(d->kv = calloc(s->nkv, sizeof(*d->kv))))
				bad = 1;
			for (size_t j = 0; !bad && j < s->nkv; j++, d->nkv++)
				if (sbuf_set(&d->kv[j].k, s->kv[j].k.p, s->kv[j].k.n) ||
				    (s->kv[j].v.p && sbuf_set(&d->kv[j].v, s->kv[j].v.p, s->kv[j].v.n)))
					bad = 1;
		}
		if (bad) {
			sop_free(c);
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
				if (kcmp(&t->kv[j].k, k) == 0) {
					*present = 1;
					return t->kv[j].v;
				}
		if (t->kind == ST_RMKEYS)
			for (size_t j = 0; j < t->nkv; j++)
				if (kcmp(&t->kv[j].k, k) == 0)
					goto absent;
		if (t->kind == ST_RMRANGE && kcmp(k, &t->key) >= 0 && kcmp(k, &t->val) < 0)
			goto absent;
	}
	for (size_t i = upto; i-- > 0;)
		if (s[i].kind == ST_REMOVE)
			goto absent;
	if (o) {
		const skv *e = omap_find(&o->m, k->p, k->n);

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
			c = kcmp(&v, &s->val);
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
static int write_apply(spool *p, const char *oid, const sop *op, int reply)
{
	sobj *o;
	size_t bad = 0;
	int r;

	if (!p)
		return -ENOENT;
	if (op->oom)
		return -ENOMEM;
	o = obj_find(p, oid);
	r = write_check(o, op, &bad);
	for (size_t i = 0; reply && i < op->n; i++)
		if (op->s[i].prval)
			*op->s[i].prval = r && i == bad ? r : 0;
	if (r)
		return r;
	for (size_t i = 0; i < op->n; i++) {
		const sstep *s = &op->s[i];

		if ((s->kind == ST_CREATE || s->kind == ST_SET) && !o && !(o = obj_add(p, oid)))
			return -ENOMEM; /* (the op is half applied: out of memory in a test) */
		if (s->kind == ST_SET) {
			for (size_t j = 0; j < s->nkv; j++)
				if (omap_set(&o->m, &s->kv[j].k, &s->kv[j].v))
					return -ENOMEM;
		} else if (s->kind == ST_RMKEYS) {
			for (size_t j = 0; j < s->nkv; j++) {
				size_t at = omap_bound(&o->m, s->kv[j].k.p, s->kv[j].k.n, 0);

				if (at < o->m.n && kcmp(&o->m.a[at].k, &s->kv[j].k) == 0)
					omap_cut(&o->m, at, at + 1);
			}
		} else if (s->kind == ST_RMRANGE) {
			size_t from = omap_bound(&o->m, s->key.p, s->key.n, 0),
			       to = omap_bound(&o->m, s->val.p, s->val.n, 0);

			omap_cut(&o->m, from, to);
		} else if (s->kind == ST_REMOVE) {
			obj_remove(p, oid);
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
	if (sbuf_set(&it->a[it->n].k, e->k.p, e->k.n))
		return -ENOMEM;
	if (sbuf_set(&it->a[it->n].v, e->v.p, e->v.n)) {
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
	size_t i = kcmp(&s->prefix, &s->after) > 0 ? omap_bound(m, s->prefix.p, s->prefix.n, 0) :
	           omap_bound(m, s->after.p, s->after.n, 1);
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
			if (kcmp(&o->m.a[i].k, &s->kv[j].k) == 0) {
				if (iter_push(s->it, &o->m.a[i]))
					return -ENOMEM;
				break;
			}
	return 0;
}

static int read_apply(spool *p, const char *oid, const sop *op)
{
	const sobj *o;

	if (!p || !(o = obj_find(p, oid)))
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

static void complete(scomp *c, int ret)
{
	if (c) {
		c->done = 1;
		c->ret = ret;
		c->p = NULL;
	}
}

/* Apply held op p (unlinked) with fate, complete its waiter, free it. */
static void pend_run(pend *p, simr_fate fate)
{
	int r = -ETIMEDOUT;

	if (fate != SIMR_DROP)
		r = write_apply(pool_by_id(p->pool_id), p->oid, p->op, p->comp && fate == SIMR_APPLY);
	complete(p->comp, fate == SIMR_APPLY ? r : -ETIMEDOUT);
	sop_free(p->op);
	free(p->pool);
	free(p->oid);
	free(p);
}

static int same_queue(const pend *a, uint64_t client, uint64_t pool_id, const char *oid)
{
	return a->client == client && a->pool_id == pool_id && strcmp(a->oid, oid) == 0;
}

static pend *held_first(uint64_t client, uint64_t pool_id, const char *oid)
{
	for (pend *q = held_head; q; q = q->next)
		if (same_queue(q, client, pool_id, oid))
			return q;
	return NULL;
}

static void held_unlink(pend *p)
{
	pend **pp = &held_head, *prev = NULL;

	while (*pp && *pp != p) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (!*pp)
		return;
	*pp = p->next;
	if (held_tail == p)
		held_tail = prev;
	p->next = NULL;
}

static void held_append(pend *p)
{
	p->next = NULL;
	if (held_tail)
		held_tail->next = p;
	else
		held_head = p;
	held_tail = p;
}

/* ------------------------------------------------------- control (API) */

static void cluster_free(void)
{
	for (size_t i = 0; i < npools; i++) {
		spool *p = pools[i];

		for (size_t j = 0; j < p->n; j++) {
			omap_free(&p->o[j]->m);
			free(p->o[j]->name);
			free(p->o[j]);
		}
		free(p->o);
		free(p->name);
		free(p);
	}
	free(pools);
	pools = NULL;
	npools = 0;
	while (held_head) {
		pend *p = held_head;

		held_unlink(p);
		complete(p->comp, -ETIMEDOUT);
		sop_free(p->op);
		free(p->pool);
		free(p->oid);
		free(p);
	}
}

void simr_reset(void)
{
	pthread_mutex_lock(&mu);
	cluster_free();
	next_op_id = next_client_id = 0;
	have_hook = 0;
	memset(&hook, 0, sizeof(hook));
	pthread_mutex_unlock(&mu);
}

int simr_pool_create(const char *name)
{
	spool *p = NULL, **np;
	int r = 0;

	if (!name || !*name)
		return -EINVAL;
	pthread_mutex_lock(&mu);
	if (pool_by_name(name))
		r = -EEXIST;
	else if (!(np = realloc(pools, (npools + 1) * sizeof(*np))))
		r = -ENOMEM;
	else if (pools = np, !(p = calloc(1, sizeof(*p))) || !(p->name = strdup(name))) {
		free(p);
		r = -ENOMEM;
	} else {
		p->id = next_pool_id++;
		pools[npools++] = p;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

void simr_set_hook(const simr_hook *h)
{
	pthread_mutex_lock(&mu);
	have_hook = h != NULL;
	if (h)
		hook = *h;
	else
		memset(&hook, 0, sizeof(hook));
	pthread_mutex_unlock(&mu);
}

int simr_release(uint64_t id, simr_fate fate)
{
	pend *p, *q;

	if (fate != SIMR_APPLY && fate != SIMR_LOSE_REPLY && fate != SIMR_DROP)
		return -EINVAL;
	pthread_mutex_lock(&mu);
	for (p = held_head; p && p->id != id; p = p->next)
		;
	if (!p) {
		pthread_mutex_unlock(&mu);
		return -ENOENT;
	}
	/* the ones ahead of it in its client's queue on its object, then it */
	while ((q = held_first(p->client, p->pool_id, p->oid)) != p) {
		held_unlink(q);
		pend_run(q, q->fate == SIMR_HOLD ? SIMR_APPLY : q->fate);
	}
	{
		uint64_t client = p->client, pool_id = p->pool_id;
		char *oid = strdup(p->oid);

		held_unlink(p);
		pend_run(p, fate);
		/* then those behind it that were held only to keep the order */
		while (oid && (q = held_first(client, pool_id, oid)) && q->fate != SIMR_HOLD) {
			held_unlink(q);
			pend_run(q, q->fate);
		}
		free(oid);
	}
	pthread_mutex_unlock(&mu);
	return 0;
}

size_t simr_held(uint64_t *ids, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&mu);
	for (pend *p = held_head; p; p = p->next, n++)
		if (ids && n < max)
			ids[n] = p->id;
	pthread_mutex_unlock(&mu);
	return n;
}

/* ---------------------------------------------------- cluster handles */

int rados_create2(rados_t *pcluster, const char *const clustername, const char *const name,
                  uint64_t flags)
{
	sclient *c;

	(void)clustername; (void)name; (void)flags;
	if (!pcluster)
		return -EINVAL;
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	strcpy(c->mon_host, "sim");
	pthread_mutex_lock(&mu);
	c->id = ++next_client_id;
	pthread_mutex_unlock(&mu);
	*pcluster = c;
	return 0;
}

int rados_conf_read_file(rados_t cluster, const char *path)
{
	(void)path;
	return cluster ? 0 : -EINVAL;
}

int rados_conf_parse_env(rados_t cluster, const char *var)
{
	(void)var;
	return cluster ? 0 : -EINVAL;
}

int rados_conf_set(rados_t cluster, const char *option, const char *value)
{
	sclient *c = cluster;

	if (!c || !option || !value)
		return -EINVAL;
	if (strcmp(option, "mon_host") == 0) {
		if (strlen(value) >= sizeof(c->mon_host))
			return -ENAMETOOLONG;
		strcpy(c->mon_host, value);
	}
	return 0; /* every other option is accepted and has no effect */
}

int rados_conf_get(rados_t cluster, const char *option, char *buf, size_t len)
{
	sclient *c = cluster;

	if (!c || !option || !buf)
		return -EINVAL;
	if (strcmp(option, "mon_host") != 0)
		return -ENOENT;
	if (strlen(c->mon_host) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, c->mon_host);
	return 0;
}

int rados_connect(rados_t cluster)
{
	sclient *c = cluster;

	if (!c)
		return -EINVAL;
	if (c->connected)
		return -EISCONN;
	c->connected = 1;
	return 0;
}

void rados_shutdown(rados_t cluster)
{
	free(cluster); /* its held ops stay in flight: they own their copies */
}

int rados_ioctx_create(rados_t cluster, const char *pool_name, rados_ioctx_t *ioctx)
{
	sclient *c = cluster;
	spool *p;
	sio *io;
	int r = 0;

	if (!c || !pool_name || !ioctx)
		return -EINVAL;
	if (!c->connected)
		return -ENOTCONN;
	if (!(io = calloc(1, sizeof(*io))) || !(io->pool = strdup(pool_name))) {
		free(io);
		return -ENOMEM;
	}
	pthread_mutex_lock(&mu);
	if ((p = pool_by_name(pool_name)))
		io->pool_id = p->id;
	else
		r = -ENOENT;
	pthread_mutex_unlock(&mu);
	if (r) {
		free(io->pool);
		free(io);
		return r;
	}
	io->client = c->id;
	*ioctx = io;
	return 0;
}

void rados_ioctx_destroy(rados_ioctx_t io)
{
	sio *s = io;

	if (s) {
		free(s->pool);
		free(s);
	}
}

/* ----------------------------------------------------------- write ops */

rados_write_op_t rados_create_write_op(void) { return calloc(1, sizeof(sop)); }
void rados_release_write_op(rados_write_op_t write_op) { sop_free(write_op); }

void rados_write_op_create(rados_write_op_t write_op, int exclusive, const char *category)
{
	sstep *s = sop_add(write_op, ST_CREATE);

	(void)category;
	if (s)
		s->excl = exclusive == LIBRADOS_CREATE_EXCLUSIVE;
}

void rados_write_op_omap_cmp2(rados_write_op_t write_op, const char *key,
                              uint8_t comparison_operator, const char *val, size_t key_len,
                              size_t val_len, int *prval)
{
	sop *o = write_op;
	sstep *s = sop_add(o, ST_CMP);

	if (!s)
		return;
	s->cmp = comparison_operator;
	s->prval = prval;
	if (sbuf_set(&s->key, key, key_len) || sbuf_set(&s->val, val, val_len))
		o->oom = 1;
}

static void add_kvs(sop *o, int kind, char const *const *keys, char const *const *vals,
                    const size_t *key_lens, const size_t *val_lens, size_t n)
{
	sstep *s = sop_add(o, kind);

	if (!s)
		return;
	if (n && !(s->kv = calloc(n, sizeof(*s->kv)))) {
		o->oom = 1;
		return;
	}
	for (size_t i = 0; i < n; i++, s->nkv++)
		if (sbuf_set(&s->kv[i].k, keys[i], key_lens[i]) ||
		    (vals && sbuf_set(&s->kv[i].v, vals[i], val_lens[i]))) {
			o->oom = 1;
			return;
		}
}

void rados_write_op_omap_set2(rados_write_op_t write_op, char const *const *keys,
                              char const *const *vals, const size_t *key_lens,
                              const size_t *val_lens, size_t num)
{
	add_kvs(write_op, ST_SET, keys, vals, key_lens, val_lens, num);
}

void rados_write_op_omap_rm_keys2(rados_write_op_t write_op, char const *const *keys,
                                  const size_t *key_lens, size_t keys_len)
{
	add_kvs(write_op, ST_RMKEYS, keys, NULL, key_lens, NULL, keys_len);
}

void rados_write_op_omap_rm_range2(rados_write_op_t write_op, const char *key_begin,
                                   size_t key_begin_len, const char *key_end,
                                   size_t key_end_len)
{
	sop *o = write_op;
	sstep *s = sop_add(o, ST_RMRANGE);

	if (s && (sbuf_set(&s->key, key_begin, key_begin_len) ||
	          sbuf_set(&s->val, key_end, key_end_len)))
		o->oom = 1;
}

void rados_write_op_exec(rados_write_op_t write_op, const char *cls, const char *method,
                         const char *in_buf, size_t in_len, int *prval)
{
	sstep *s = sop_add(write_op, ST_EXEC);

	(void)cls; (void)method; (void)in_buf; (void)in_len;
	if (s)
		s->prval = prval;
}

/* ------------------------------------------------------------ read ops */

rados_read_op_t rados_create_read_op(void) { return calloc(1, sizeof(sop)); }
void rados_release_read_op(rados_read_op_t read_op) { sop_free(read_op); }

/* As librados: the iterator exists from here on, empty until the op runs,
 * and the caller frees it with rados_omap_get_end. */
static sstep *read_step(sop *o, int kind, rados_omap_iter_t *iter, int *prval)
{
	siter *it = calloc(1, sizeof(*it));
	sstep *s = it ? sop_add(o, kind) : NULL;

	if (!s)
		o->oom = 1;
	else {
		s->it = it;
		s->prval = prval;
	}
	*iter = it;
	return s;
}

static int cstr_set(sbuf *b, const char *s)
{
	s = s ? s : "";
	return sbuf_set(b, s, strlen(s));
}

void rados_read_op_omap_get_vals2(rados_read_op_t read_op, const char *start_after,
                                  const char *filter_prefix, uint64_t max_return,
                                  rados_omap_iter_t *iter, unsigned char *pmore, int *prval)
{
	sop *o = read_op;
	sstep *s = read_step(o, ST_GETVALS, iter, prval);

	if (!s)
		return;
	s->max = max_return;
	s->pmore = pmore;
	if (cstr_set(&s->after, start_after) || cstr_set(&s->prefix, filter_prefix))
		o->oom = 1;
}

void rados_read_op_omap_get_vals_by_keys2(rados_read_op_t read_op, char const *const *keys,
                                          size_t num_keys, const size_t *key_lens,
                                          rados_omap_iter_t *iter, int *prval)
{
	sop *o = read_op;
	sstep *s = read_step(o, ST_GETKEYS, iter, prval);

	if (!s)
		return;
	if (num_keys && !(s->kv = calloc(num_keys, sizeof(*s->kv)))) {
		o->oom = 1;
		return;
	}
	for (size_t i = 0; i < num_keys; i++, s->nkv++)
		if (sbuf_set(&s->kv[i].k, keys[i], key_lens[i])) {
			o->oom = 1;
			return;
		}
}

int rados_omap_get_next2(rados_omap_iter_t iter, char **key, char **val, size_t *key_len,
                         size_t *val_len)
{
	siter *it = iter;

	if (!it)
		return -EINVAL;
	if (it->pos >= it->n) {
		if (key)
			*key = NULL;
		if (val)
			*val = NULL;
		if (key_len)
			*key_len = 0;
		if (val_len)
			*val_len = 0;
		return 0;
	}
	if (key)
		*key = it->a[it->pos].k.p;
	if (val)
		*val = it->a[it->pos].v.p;
	if (key_len)
		*key_len = it->a[it->pos].k.n;
	if (val_len)
		*val_len = it->a[it->pos].v.n;
	it->pos++;
	return 0;
}

unsigned int rados_omap_iter_size(rados_omap_iter_t iter)
{
	return iter ? (unsigned)((siter *)iter)->n : 0;
}

void rados_omap_get_end(rados_omap_iter_t iter)
{
	siter *it = iter;

	if (!it)
		return;
	for (size_t i = 0; i < it->n; i++) {
		free(it->a[i].k.p);
		free(it->a[i].v.p);
	}
	free(it->a);
	free(it);
}

/* ---------------------------------------------------------- completions */

int rados_aio_create_completion2(void *cb_arg, rados_callback_t cb_complete,
                                 rados_completion_t *pc)
{
	scomp *c;

	(void)cb_arg;
	if (!pc)
		return -EINVAL;
	if (cb_complete)
		return -EOPNOTSUPP; /* see the top of the file */
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	*pc = c;
	return 0;
}

/* Submit op (write or read) on io's object oid, completing into c. */
static int submit(sop *op, int write, sio *io, scomp *c, const char *oid)
{
	simr_op_info info;
	simr_hook h;
	simr_fate fate = SIMR_APPLY;
	int use_hook, r;

	if (!op || !io || !c || !oid)
		return -EINVAL;
	pthread_mutex_lock(&mu);
	info.id = ++next_op_id;
	info.client = io->client;
	info.pool = io->pool;
	info.oid = oid;
	info.write = write;
	info.queued = write && held_first(io->client, io->pool_id, oid) != NULL;
	h = hook;
	use_hook = have_hook;
	c->done = 0;
	c->ret = 0;
	c->p = NULL;
	pthread_mutex_unlock(&mu);
	if (use_hook && h.submit)
		fate = h.submit(h.arg, &info);
	if (!write && fate != SIMR_APPLY)
		fate = SIMR_DROP;
	pthread_mutex_lock(&mu);
	if (!write) {
		r = fate == SIMR_DROP ? -ETIMEDOUT : read_apply(pool_by_id(io->pool_id), oid, op);
		complete(c, r);
	} else if (fate == SIMR_HOLD || held_first(io->client, io->pool_id, oid)) {
		pend *p = calloc(1, sizeof(*p));

		if (!p || !(p->op = sop_dup(op)) || !(p->pool = strdup(io->pool)) ||
		    !(p->oid = strdup(oid))) {
			if (p) {
				sop_free(p->op);
				free(p->pool);
			}
			free(p);
			pthread_mutex_unlock(&mu);
			return -ENOMEM;
		}
		p->id = info.id;
		p->client = io->client;
		p->pool_id = io->pool_id;
		p->fate = fate;
		p->comp = c;
		c->p = p;
		held_append(p);
	} else {
		r = fate == SIMR_DROP ? -ETIMEDOUT :
		    write_apply(pool_by_id(io->pool_id), oid, op, fate == SIMR_APPLY);
		complete(c, fate == SIMR_APPLY ? r : -ETIMEDOUT);
	}
	pthread_mutex_unlock(&mu);
	return 0;
}

int rados_aio_write_op_operate(rados_write_op_t write_op, rados_ioctx_t io,
                               rados_completion_t completion, const char *oid, time_t *mtime,
                               int flags)
{
	(void)mtime; (void)flags;
	return submit(write_op, 1, io, completion, oid);
}

int rados_aio_read_op_operate(rados_read_op_t read_op, rados_ioctx_t io,
                              rados_completion_t completion, const char *oid, int flags)
{
	(void)flags;
	return submit(read_op, 0, io, completion, oid);
}

int rados_aio_wait_for_complete(rados_completion_t c)
{
	scomp *s = c;
	simr_op_info info;
	simr_hook h;
	char *pool = NULL, *oid = NULL;
	int use_hook;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&mu);
	if (s->done || !s->p) {
		pthread_mutex_unlock(&mu);
		return 0;
	}
	pool = strdup(s->p->pool);
	oid = strdup(s->p->oid);
	info.id = s->p->id;
	info.client = s->p->client;
	info.pool = pool ? pool : "";
	info.oid = oid ? oid : "";
	info.write = 1;
	info.queued = 0;
	h = hook;
	use_hook = have_hook;
	pthread_mutex_unlock(&mu);
	if (use_hook && h.wait)
		h.wait(h.arg, &info);
	pthread_mutex_lock(&mu);
	if (!s->done) { /* still held: the caller gives up, the op stays queued */
		if (s->p)
			s->p->comp = NULL;
		complete(s, -ETIMEDOUT);
	}
	pthread_mutex_unlock(&mu);
	free(pool);
	free(oid);
	return 0;
}

int rados_aio_get_return_value(rados_completion_t c)
{
	scomp *s = c;
	int r;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&mu);
	r = s->ret;
	pthread_mutex_unlock(&mu);
	return r;
}

void rados_aio_release(rados_completion_t c)
{
	scomp *s = c;

	if (!s)
		return;
	pthread_mutex_lock(&mu);
	if (s->p)
		s->p->comp = NULL;
	pthread_mutex_unlock(&mu);
	free(s);
}

/* ----------------------------------------------------- remove, listing */

int rados_remove(rados_ioctx_t io, const char *oid)
{
	sop *op = rados_create_write_op();
	scomp c = { 0, 0, NULL };
	int r;

	if (!op)
		return -ENOMEM;
	if (!sop_add(op, ST_REMOVE))
		r = -ENOMEM;
	else if ((r = submit(op, 1, io, &c, oid)) == 0) {
		rados_aio_wait_for_complete(&c);
		r = c.ret;
	}
	sop_free(op);
	return r;
}

int rados_nobjects_list_open(rados_ioctx_t io, rados_list_ctx_t *ctx)
{
	sio *s = io;
	slist *l;
	spool *p;
	int r = 0;

	if (!s || !ctx)
		return -EINVAL;
	if (!(l = calloc(1, sizeof(*l))))
		return -ENOMEM;
	pthread_mutex_lock(&mu);
	if (!(p = pool_by_id(s->pool_id)))
		r = -ENOENT;
	else if (p->n && !(l->names = calloc(p->n, sizeof(*l->names))))
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < p->n; i++, l->n++)
		if (!(l->names[i] = strdup(p->o[i]->name)))
			r = -ENOMEM;
	pthread_mutex_unlock(&mu);
	if (r) {
		rados_nobjects_list_close(l);
		return r;
	}
	*ctx = l;
	return 0;
}

int rados_nobjects_list_next(rados_list_ctx_t ctx, const char **entry, const char **key,
                             const char **nspace)
{
	slist *l = ctx;

	if (!l)
		return -EINVAL;
	if (l->pos >= l->n)
		return -ENOENT;
	if (entry)
		*entry = l->names[l->pos];
	if (key)
		*key = NULL;
	if (nspace)
		*nspace = "";
	l->pos++;
	return 0;
}

void rados_nobjects_list_close(rados_list_ctx_t ctx)
{
	slist *l = ctx;

	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	free(l);
}
