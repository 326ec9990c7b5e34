/*
 * simrados_handles.c - the simulated cluster's librados handles: clusters
 * and pool contexts, building write and read ops, omap iterators, object
 * listing (simrados_int.h).
 */
#include "storage/sim/simrados_int.h"

#include <rados/librados.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	pthread_mutex_lock(&simr__mu);
	c->id = ++simr__next_client_id;
	pthread_mutex_unlock(&simr__mu);
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

/* Fencing is not simulated: a client has an address (its number), and a
 * blocklist request is refused as a key without the capability is. */
int rados_getaddrs(rados_t cluster, char **addrs)
{
	sclient *c = cluster;
	char buf[64];

	if (!c || !addrs)
		return -EINVAL;
	snprintf(buf, sizeof(buf), "sim:0/%llu", (unsigned long long)c->id);
	return (*addrs = strdup(buf)) ? 0 : -ENOMEM;
}

int rados_blocklist_add(rados_t cluster, char *client_address, uint32_t expire_seconds)
{
	(void)cluster;
	(void)client_address;
	(void)expire_seconds;
	return -EOPNOTSUPP;
}

int rados_wait_for_latest_osdmap(rados_t cluster)
{
	(void)cluster;
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
	pthread_mutex_lock(&simr__mu);
	if ((p = simr__pool_by_name(pool_name)))
		io->pool_id = p->id;
	else
		r = -ENOENT;
	pthread_mutex_unlock(&simr__mu);
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
void rados_release_write_op(rados_write_op_t write_op) { simr__sop_free(write_op); }

void rados_write_op_create(rados_write_op_t write_op, int exclusive, const char *category)
{
	sstep *s = simr__sop_add(write_op, ST_CREATE);

	(void)category;
	if (s)
		s->excl = exclusive == LIBRADOS_CREATE_EXCLUSIVE;
}

void rados_write_op_omap_cmp2(rados_write_op_t write_op, const char *key,
                              uint8_t comparison_operator, const char *val, size_t key_len,
                              size_t val_len, int *prval)
{
	sop *o = write_op;
	sstep *s = simr__sop_add(o, ST_CMP);

	if (!s)
		return;
	s->cmp = comparison_operator;
	s->prval = prval;
	if (simr__sbuf_set(&s->key, key, key_len) || simr__sbuf_set(&s->val, val, val_len))
		o->oom = 1;
}

static void add_kvs(sop *o, int kind, char const *const *keys, char const *const *vals,
                    const size_t *key_lens, const size_t *val_lens, size_t n)
{
	sstep *s = simr__sop_add(o, kind);

	if (!s)
		return;
	if (n && !(s->kv = calloc(n, sizeof(*s->kv)))) {
		o->oom = 1;
		return;
	}
	for (size_t i = 0; i < n; i++, s->nkv++)
		if (simr__sbuf_set(&s->kv[i].k, keys[i], key_lens[i]) ||
		    (vals && simr__sbuf_set(&s->kv[i].v, vals[i], val_lens[i]))) {
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
	sstep *s = simr__sop_add(o, ST_RMRANGE);

	if (s && (simr__sbuf_set(&s->key, key_begin, key_begin_len) ||
	          simr__sbuf_set(&s->val, key_end, key_end_len)))
		o->oom = 1;
}

void rados_write_op_exec(rados_write_op_t write_op, const char *cls, const char *method,
                         const char *in_buf, size_t in_len, int *prval)
{
	sstep *s = simr__sop_add(write_op, ST_EXEC);

	(void)cls; (void)method; (void)in_buf; (void)in_len;
	if (s)
		s->prval = prval;
}

/* ------------------------------------------------------------ read ops */

rados_read_op_t rados_create_read_op(void) { return calloc(1, sizeof(sop)); }
void rados_release_read_op(rados_read_op_t read_op) { simr__sop_free(read_op); }

/* As librados: the iterator exists from here on, empty until the op runs,
 * and the caller frees it with rados_omap_get_end. */
static sstep *read_step(sop *o, int kind, rados_omap_iter_t *iter, int *prval)
{
	siter *it = calloc(1, sizeof(*it));
	sstep *s = it ? simr__sop_add(o, kind) : NULL;

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
	return simr__sbuf_set(b, s, strlen(s));
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
		if (simr__sbuf_set(&s->kv[i].k, keys[i], key_lens[i])) {
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

/* ------------------------------------------------------------- listing */

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
	pthread_mutex_lock(&simr__mu);
	if (!(p = simr__pool_by_id(s->pool_id)))
		r = -ENOENT;
	else if (p->n && !(l->names = calloc(p->n, sizeof(*l->names))))
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < p->n; i++, l->n++)
		if (!(l->names[i] = strdup(p->o[i]->name)))
			r = -ENOMEM;
	pthread_mutex_unlock(&simr__mu);
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
