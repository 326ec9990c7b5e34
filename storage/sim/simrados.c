/*
 * simrados.c - an in-memory, deterministic stand-in for the librados C
 * functions that storage/rados/ calls (control: simrados.h).
 * This file holds the cluster's state, the held queue, the control API,
 * submission and completions; simrados_int.h lists the other files.
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
 * client (rados_t) on one object leave in submission order, reads and
 * writes alike (as a Ceph client's ops on one object reach its primary
 * OSD).  A held write is a private copy of the op, so the caller may give
 * up (its wait times out) and free the op while the copy may still be
 * applied later.  A read is held, or applied, or dropped; a held read sees
 * the objects as they are when it is released, which is how a read that
 * was sent before another client's write can still see that write.  Its
 * outputs are the caller's, so a held read whose caller gives up waiting
 * (or releases its completion) is dropped: unlike a write, nothing of it
 * could be seen later.  There is no clock and no randomness here.
 *
 * NOT simulated: replication, placement groups, OSD or monitor failures
 * other than what the hook decides per op; object data, xattrs, versions
 * (assert_version), snapshots, watch/notify, namespaces and locators
 * (listing gives no key or namespace); rados_write_op_exec and object
 * classes (-EOPNOTSUPP); completion callbacks (a non-NULL cb_complete is
 * refused with -EOPNOTSUPP); size limits (osd_max_write_size,
 * osd_max_omap_bytes_per_request); Ceph's hash order of listings; the conf
 * file (rados_conf_read_file succeeds for any path, mon_host defaults to
 * "sim"); authentication.  rados_remove is submitted and waited for like
 * an aio write.
 */
#include "storage/sim/simrados.h"
#include "storage/sim/simrados_int.h"
#include "storage/rados/dl/radosdl.h"

#include <rados/librados.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- the cluster */

pthread_mutex_t simr__mu = PTHREAD_MUTEX_INITIALIZER;
static spool **pools;
static size_t npools;
static uint64_t next_pool_id = 1; /* never reset: an old ioctx never finds a new pool */
static uint64_t next_op_id;
uint64_t simr__next_client_id;
static simr_hook hook;
static int have_hook;
static pend *held_head, *held_tail;

spool *simr__pool_by_name(const char *name)
{
	for (size_t i = 0; i < npools; i++)
		if (strcmp(pools[i]->name, name) == 0)
			return pools[i];
	return NULL;
}

spool *simr__pool_by_id(uint64_t id)
{
	for (size_t i = 0; i < npools; i++)
		if (pools[i]->id == id)
			return pools[i];
	return NULL;
}
static void complete(scomp *c, int ret)
{
	if (c) {
		c->done = 1;
		c->ret = ret;
		c->p = NULL;
	}
}

static void pend_free(pend *p)
{
	if (!p->read)
		simr__sop_free(p->op);
	free(p->pool);
	free(p->oid);
	free(p);
}

/* Apply held op p (unlinked) with fate, complete its waiter, free it.  A
 * read applies only for a caller still waiting (its outputs are the
 * caller's); its reply is never lost, only dropped. */
static void pend_run(pend *p, simr_fate fate)
{
	int r = -ETIMEDOUT;

	if (p->read) {
		if (fate != SIMR_DROP && p->comp)
			r = simr__read_apply(simr__pool_by_id(p->pool_id), p->oid, p->op);
		complete(p->comp, fate == SIMR_DROP ? -ETIMEDOUT : r);
	} else {
		if (fate != SIMR_DROP)
			r = simr__write_apply(simr__pool_by_id(p->pool_id), p->oid, p->op,
			                      p->comp && fate == SIMR_APPLY);
		complete(p->comp, fate == SIMR_APPLY ? r : -ETIMEDOUT);
	}
	pend_free(p);
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

/* Held op p, first of its queue, leaves with fate; then the ops behind it
 * that were held only to keep the order follow (simr__mu held). */
static void held_leave(pend *p, simr_fate fate)
{
	uint64_t client = p->client, pool_id = p->pool_id;
	char *oid = strdup(p->oid);
	pend *q;

	held_unlink(p);
	pend_run(p, fate);
	while (oid && (q = held_first(client, pool_id, oid)) && q->fate != SIMR_HOLD) {
		held_unlink(q);
		pend_run(q, q->fate);
	}
	free(oid);
}

/* The caller of held read p stops waiting for it: it is dropped, and when
 * it was first in its queue the ops behind it move on (simr__mu held). */
static void read_forget(pend *p)
{
	p->comp = NULL;
	if (held_first(p->client, p->pool_id, p->oid) == p) {
		held_leave(p, SIMR_DROP);
	} else {
		held_unlink(p);
		pend_free(p);
	}
}

/* The caller of held op p (may be NULL) no longer waits for it: a read is
 * dropped, a write stays queued with no one to tell (simr__mu held). */
static void caller_gone(pend *p)
{
	if (p && p->read)
		read_forget(p);
	else if (p)
		p->comp = NULL;
}

/* ------------------------------------------------------- control (API) */

static void cluster_free(void)
{
	for (size_t i = 0; i < npools; i++) {
		spool *p = pools[i];

		for (size_t j = 0; j < p->n; j++) {
			simr__omap_free(&p->o[j]->m);
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
		pend_free(p);
	}
}

void simr_reset(void)
{
	pthread_mutex_lock(&simr__mu);
	cluster_free();
	next_op_id = simr__next_client_id = 0;
	have_hook = 0;
	memset(&hook, 0, sizeof(hook));
	pthread_mutex_unlock(&simr__mu);
}

int simr_pool_create(const char *name)
{
	spool *p = NULL, **np;
	int r = 0;

	if (!name || !*name)
		return -EINVAL;
	pthread_mutex_lock(&simr__mu);
	if (simr__pool_by_name(name))
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
	pthread_mutex_unlock(&simr__mu);
	return r;
}

void simr_set_hook(const simr_hook *h)
{
	pthread_mutex_lock(&simr__mu);
	have_hook = h != NULL;
	if (h)
		hook = *h;
	else
		memset(&hook, 0, sizeof(hook));
	pthread_mutex_unlock(&simr__mu);
}

int simr_release(uint64_t id, simr_fate fate)
{
	pend *p, *q;

	if (fate != SIMR_APPLY && fate != SIMR_LOSE_REPLY && fate != SIMR_DROP)
		return -EINVAL;
	pthread_mutex_lock(&simr__mu);
	for (p = held_head; p && p->id != id; p = p->next)
		;
	if (!p) {
		pthread_mutex_unlock(&simr__mu);
		return -ENOENT;
	}
	/* the ones ahead of it in its client's queue on its object, then it */
	while ((q = held_first(p->client, p->pool_id, p->oid)) != p) {
		held_unlink(q);
		pend_run(q, q->fate == SIMR_HOLD ? SIMR_APPLY : q->fate);
	}
	held_leave(p, fate);
	pthread_mutex_unlock(&simr__mu);
	return 0;
}

size_t simr_held(uint64_t *ids, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&simr__mu);
	for (pend *p = held_head; p; p = p->next, n++)
		if (ids && n < max)
			ids[n] = p->id;
	pthread_mutex_unlock(&simr__mu);
	return n;
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
	pthread_mutex_lock(&simr__mu);
	info.id = ++next_op_id;
	info.client = io->client;
	info.pool = io->pool;
	info.oid = oid;
	info.write = write;
	info.queued = held_first(io->client, io->pool_id, oid) != NULL;
	h = hook;
	use_hook = have_hook;
	c->done = 0;
	c->ret = 0;
	c->p = NULL;
	pthread_mutex_unlock(&simr__mu);
	if (use_hook && h.submit)
		fate = h.submit(h.arg, &info);
	if (!write && fate == SIMR_LOSE_REPLY)
		fate = SIMR_DROP; /* a read has no effect to keep */
	pthread_mutex_lock(&simr__mu);
	if (fate == SIMR_HOLD || held_first(io->client, io->pool_id, oid)) {
		pend *p = calloc(1, sizeof(*p));

		if (!p || !(p->pool = strdup(io->pool)) || !(p->oid = strdup(oid)) ||
		    (write && !(p->op = simr__sop_dup(op)))) {
			if (p) {
				free(p->pool);
				free(p->oid);
			}
			free(p);
			pthread_mutex_unlock(&simr__mu);
			return -ENOMEM;
		}
		if (!write)
			p->op = op; /* borrowed: see read_forget */
		p->read = !write;
		p->id = info.id;
		p->client = io->client;
		p->pool_id = io->pool_id;
		p->fate = fate;
		p->comp = c;
		c->p = p;
		held_append(p);
	} else if (!write) {
		r = fate == SIMR_DROP ? -ETIMEDOUT :
		    simr__read_apply(simr__pool_by_id(io->pool_id), oid, op);
		complete(c, r);
	} else {
		r = fate == SIMR_DROP ? -ETIMEDOUT :
		    simr__write_apply(simr__pool_by_id(io->pool_id), oid, op, fate == SIMR_APPLY);
		complete(c, fate == SIMR_APPLY ? r : -ETIMEDOUT);
	}
	pthread_mutex_unlock(&simr__mu);
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
	pthread_mutex_lock(&simr__mu);
	if (s->done || !s->p) {
		pthread_mutex_unlock(&simr__mu);
		return 0;
	}
	pool = strdup(s->p->pool);
	oid = strdup(s->p->oid);
	info.id = s->p->id;
	info.client = s->p->client;
	info.pool = pool ? pool : "";
	info.oid = oid ? oid : "";
	info.write = !s->p->read;
	info.queued = 0;
	h = hook;
	use_hook = have_hook;
	pthread_mutex_unlock(&simr__mu);
	if (use_hook && h.wait)
		h.wait(h.arg, &info);
	pthread_mutex_lock(&simr__mu);
	if (!s->done) { /* still held: the caller gives up; a write stays queued */
		caller_gone(s->p);
		complete(s, -ETIMEDOUT);
	}
	pthread_mutex_unlock(&simr__mu);
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
	pthread_mutex_lock(&simr__mu);
	r = s->ret;
	pthread_mutex_unlock(&simr__mu);
	return r;
}

void rados_aio_release(rados_completion_t c)
{
	scomp *s = c;

	if (!s)
		return;
	pthread_mutex_lock(&simr__mu);
	caller_gone(s->p);
	pthread_mutex_unlock(&simr__mu);
	free(s);
}

/* -------------------------------------------------------------- remove */

int rados_remove(rados_ioctx_t io, const char *oid)
{
	sop *op = rados_create_write_op();
	scomp c = { 0, 0, NULL };
	int r;

	if (!op)
		return -ENOMEM;
	if (!simr__sop_add(op, ST_REMOVE))
		r = -ENOMEM;
	else if ((r = submit(op, 1, io, &c, oid)) == 0) {
		rados_aio_wait_for_complete(&c);
		r = c.ret;
	}
	simr__sop_free(op);
	return r;
}

/* The real backend loads librados here (storage/rados/dl/radosdl.c); the
 * simulated cluster's functions are linked in. */
int radosdl_load(void)
{
	return MRTX_OK;
}
