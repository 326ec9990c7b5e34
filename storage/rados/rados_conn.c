/*
 * rados_conn.c - see rados_conn.h (addresses: rados_addr.c).
 *
 * Every librados object this file creates (cluster, ioctx, completions,
 * ops, omap iterators) is released on every path; an aio that was
 * submitted is always waited for before the memory it writes into
 * (prvals, iterators) goes away.  The timeouts set at open bound every
 * wait, so no call here blocks forever.
 */
#include "rados_conn.h"
#include "dl/radosdl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rconn {
	rados_t cluster;
	rados_ioctx_t io;
	char *pool;
	char *name;
	unsigned timeout_s;
	char where[640]; /* "mon_host ... (conf ..., client.x)" for messages */
};

/* ---------------------------------------------------------- connection */

static int pick_timeout(const raddr *addr, const rconn_opts *opts, unsigned *out)
{
	const char *env = getenv("MRTX_RADOS_TIMEOUT");

	if (addr->timeout_s)
		*out = addr->timeout_s;
	else if (opts && opts->timeout_s)
		*out = opts->timeout_s;
	else if (env && *env)
		return raddr_parse_seconds(env, "MRTX_RADOS_TIMEOUT", out);
	else
		*out = RCONN_DEFAULT_TIMEOUT_S;
	if (*out > RCONN_MAX_TIMEOUT_S)
		return mrtx__seterr(MRTX_EINVAL, "rados: timeout %u s over %u s", *out,
		                    RCONN_MAX_TIMEOUT_S);
	return MRTX_OK;
}

static int conf_set(rconn *c, const char *opt, const char *val)
{
	int r = rados_conf_set(c->cluster, opt, val);

	if (r < 0)
		return mrtx__seterr(MRTX_ESTORE, "rados: cannot set %s = %s: %s", opt, val,
		                    strerror(-r));
	return MRTX_OK;
}

int rconn_open(rconn **out, const raddr *addr, const rconn_opts *opts)
{
	char client[RADDR_MAX_NAME + 8], mons[256] = "", num[16];
	const char *conf = NULL, *env = getenv("CEPH_CONF");
	rconn *c = NULL;
	int rc, r, conf_missing = 0;

	if (!out || !addr || !addr->pool || !addr->name)
		return mrtx__seterr(MRTX_EINVAL, "rconn_open: NULL argument");
	*out = NULL;
	if ((rc = radosdl_load()))
		return rc;
	if (!(c = mrtx__calloc(1, sizeof(*c))))
		return mrtx__seterr(MRTX_ENOMEM, "rados: out of memory");
	if ((rc = pick_timeout(addr, opts, &c->timeout_s)))
		goto fail;
	if (!(c->pool = mrtx__strdup(addr->pool)) || !(c->name = mrtx__strdup(addr->name))) {
		rc = mrtx__seterr(MRTX_ENOMEM, "rados: out of memory");
		goto fail;
	}
	snprintf(client, sizeof(client), "client.%s", addr->user ? addr->user : "admin");
	if ((r = rados_create2(&c->cluster, "ceph", client, 0)) < 0) {
		c->cluster = NULL;
		rc = mrtx__seterr(r == -ENOMEM ? MRTX_ENOMEM : MRTX_ESTORE,
		                  "rados: cannot create a cluster handle for %s: %s", client,
		                  strerror(-r));
		goto fail;
	}
	/* A library stays quiet on stderr (librados prints monclient errors
	 * there); set first, so the conf file or CEPH_ARGS can turn it back on. */
	if ((rc = conf_set(c, "log_to_stderr", "false")) ||
	    (rc = conf_set(c, "err_to_stderr", "false")))
		goto fail;
	conf = addr->conf ? addr->conf : env && *env ? env : NULL;
	if ((r = rados_conf_read_file(c->cluster, conf)) < 0) {
		if (conf) {
			rc = mrtx__seterr(MRTX_ESTORE, "rados: cannot read Ceph conf %s%s: %s", conf,
			                  addr->conf ? "" : " ($CEPH_CONF)", strerror(-r));
			goto fail;
		}
		conf_missing = 1; /* CEPH_ARGS may still name the monitors */
	}
	if ((r = rados_conf_parse_env(c->cluster, NULL)) < 0) {
		rc = mrtx__seterr(MRTX_ESTORE, "rados: bad CEPH_ARGS: %s", strerror(-r));
		goto fail;
	}
	snprintf(num, sizeof(num), "%u", c->timeout_s);
	if ((rc = conf_set(c, "client_mount_timeout", num)) ||
	    (rc = conf_set(c, "rados_mon_op_timeout", num)) ||
	    (rc = conf_set(c, "rados_osd_op_timeout", num)))
		goto fail;
	if (rados_conf_get(c->cluster, "mon_host", mons, sizeof(mons)) < 0)
		mons[0] = '\0';
	snprintf(c->where, sizeof(c->where), "mon_host %s (conf %.200s, %s)",
	         mons[0] ? mons : "(none)",
	         conf ? conf : conf_missing ? "none found" : "default search", client);
	if (!mons[0]) {
		rc = mrtx__seterr(MRTX_ESTORE,
		                  "rados: no monitors configured: %s; give ?conf=PATH in the "
		                  "address or set CEPH_CONF", c->where);
		goto fail;
	}
	if ((r = rados_connect(c->cluster)) < 0) {
		const char *why = r == -ETIMEDOUT ? "monitors unreachable" :
		                  r == -EACCES || r == -EPERM ? "authentication refused" :
		                  r == -ENOENT ? "no monitor reachable, or no keyring for the user" :
		                  "connect failed";

		rc = mrtx__seterr(MRTX_ESTORE,
		                  "rados: cannot connect to the cluster at %s within %u s: %s "
		                  "(%s)", c->where, c->timeout_s, why, strerror(-r));
		rados_shutdown(c->cluster);
		c->cluster = NULL;
		goto fail;
	}
	if ((r = rados_ioctx_create(c->cluster, c->pool, &c->io)) < 0) {
		c->io = NULL;
		if (r == -ENOENT)
			rc = mrtx__seterr(MRTX_ENOTSTORE, "rados: pool %s does not exist (cluster at %s)",
			                  c->pool, c->where);
		else
			rc = mrtx__seterr(MRTX_ESTORE, "rados: cannot open pool %s at %s: %s", c->pool,
			                  c->where, strerror(-r));
		goto fail;
	}
	*out = c;
	return MRTX_OK;
fail:
	rconn_close(c);
	return rc;
}

void rconn_close(rconn *c)
{
	if (!c)
		return;
	if (c->io)
		rados_ioctx_destroy(c->io);
	if (c->cluster)
		rados_shutdown(c->cluster);
	mrtx__free(c->pool);
	mrtx__free(c->name);
	mrtx__free(c);
}

rados_ioctx_t rconn_ioctx(rconn *c) { return c->io; }
rados_t rconn_cluster(rconn *c) { return c->cluster; }
const char *rconn_pool(const rconn *c) { return c->pool; }
const char *rconn_name(const rconn *c) { return c->name; }
unsigned rconn_timeout_s(const rconn *c) { return c->timeout_s; }

int rconn_error(const rconn *c, int r, const char *what, const char *oid)
{
	int rc;

	switch (r) {
	case 0: return MRTX_OK;
	case -ETIMEDOUT:
		return mrtx__seterr(RCONN_TIMEDOUT,
		                    "rados: %s on object %s in pool %s timed out after %u s "
		                    "(placement group inactive: fewer than min_size OSDs up, or "
		                    "cluster unreachable); it may or may not have been applied",
		                    what, oid, c->pool, c->timeout_s);
	case -ECANCELED: rc = MRTX_CONFLICT; break;
	case -ENOMEM: rc = MRTX_ENOMEM; break;
	case -EMSGSIZE: case -E2BIG: case -EFBIG: rc = MRTX_ETOOBIG; break;
	default: rc = MRTX_ESTORE; break;
	}
	return mrtx__seterr(rc, "rados: %s on object %s in pool %s: %s (%d)", what, oid, c->pool,
	                    strerror(-r), r);
}

/* ------------------------------------------------------ batched aio ops */

/* Pointer and length arrays for the *2 calls, sized for the largest op of
 * a batch and reused (librados copies keys and values when an op is
 * built). */
typedef struct scratch {
	const char **k, **v;
	size_t *kl, *vl;
} scratch;

static int scratch_init(scratch *s, size_t n)
{
	n = n ? n : 1;
	s->k = mrtx__calloc(n, sizeof(*s->k));
	s->v = mrtx__calloc(n, sizeof(*s->v));
	s->kl = mrtx__calloc(n, sizeof(*s->kl));
	s->vl = mrtx__calloc(n, sizeof(*s->vl));
	if (!s->k || !s->v || !s->kl || !s->vl)
		return mrtx__seterr(MRTX_ENOMEM, "rados: out of memory (batch of %zu)", n);
	return MRTX_OK;
}

static void scratch_free(scratch *s)
{
	mrtx__free(s->k);
	mrtx__free(s->v);
	mrtx__free(s->kl);
	mrtx__free(s->vl);
}

static void build_write(rados_write_op_t op, rwrite *w, scratch *s)
{
	if (w->create)
		rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
	for (size_t j = 0; j < w->nguards; j++) {
		rguard *g = &w->guards[j];

		g->result = 0;
		rados_write_op_omap_cmp2(op, (const char *)g->key.data, g->op,
		                         (const char *)g->value.data, g->key.size, g->value.size,
		                         &g->result);
	}
	for (size_t j = 0; j < w->nexecs; j++) {
		rexec *e = &w->execs[j];

		e->result = 0;
		rados_write_op_exec(op, e->cls, e->method, (const char *)e->in.data, e->in.size,
		                    &e->result);
	}
	if (w->rm_to.size)
		rados_write_op_omap_rm_range2(op, (const char *)w->rm_from.data, w->rm_from.size,
		                              (const char *)w->rm_to.data, w->rm_to.size);
	if (w->nsets) {
		for (size_t j = 0; j < w->nsets; j++) {
			s->k[j] = (const char *)w->sets[j].key.data;
			s->kl[j] = w->sets[j].key.size;
			s->v[j] = (const char *)w->sets[j].value.data;
			s->vl[j] = w->sets[j].value.size;
		}
		rados_write_op_omap_set2(op, s->k, s->v, s->kl, s->vl, w->nsets);
	}
	if (w->nrms) {
		for (size_t j = 0; j < w->nrms; j++) {
			s->k[j] = (const char *)w->rms[j].data;
			s->kl[j] = w->rms[j].size;
		}
		rados_write_op_omap_rm_keys2(op, s->k, s->kl, w->nrms);
	}
}

int rconn_write_ops(rconn *c, rados_write_op_t const *ops, const char *const *oids,
                    int *results, size_t n)
{
	rados_completion_t *comp;
	size_t i;
	int rc = MRTX_OK;

	if (!c || (n && (!ops || !oids || !results)))
		return mrtx__seterr(MRTX_EINVAL, "rconn_write_ops: NULL argument");
	for (i = 0; i < n; i++) {
		results[i] = -ENOMEM; /* until submitted */
		if (!ops[i] || !oids[i])
			return mrtx__seterr(MRTX_EINVAL, "rconn_write_ops: op %zu: NULL op or object", i);
	}
	if (n == 0)
		return MRTX_OK;
	if (!(comp = mrtx__calloc(n, sizeof(*comp))))
		return mrtx__seterr(MRTX_ENOMEM, "rados: out of memory (batch of %zu writes)", n);
	for (i = 0; i < n; i++) {
		int r = rados_aio_create_completion2(NULL, NULL, &comp[i]);

		if (r < 0) {
			comp[i] = NULL;
			rc = mrtx__seterr(MRTX_ENOMEM, "rados: cannot create a completion: %s",
			                  strerror(-r));
			break;
		}
		r = rados_aio_write_op_operate(ops[i], c->io, comp[i], oids[i], NULL,
		                               LIBRADOS_OPERATION_NOFLAG);
		if (r < 0) { /* not submitted: its completion never fires */
			results[i] = r;
			rados_aio_release(comp[i]);
			comp[i] = NULL;
		}
	}
	for (i = 0; i < n; i++)
		if (comp[i]) {
			rados_aio_wait_for_complete(comp[i]);
			results[i] = rados_aio_get_return_value(comp[i]);
			rados_aio_release(comp[i]);
		}
	mrtx__free(comp);
	if (rc == MRTX_OK)
		for (i = 0; i < n; i++)
			if (results[i] != 0 && results[i] != -ECANCELED)
				return rconn_error(c, results[i], "write", oids[i]);
	return rc;
}

int rconn_write(rconn *c, rwrite *w, size_t n)
{
	rados_write_op_t *ops = NULL;
	const char **oids = NULL;
	int *results = NULL;
	scratch s = { 0 };
	size_t widest = 0, i;
	int rc = MRTX_OK;

	if (!c || (n && !w))
		return mrtx__seterr(MRTX_EINVAL, "rconn_write: NULL argument");
	for (i = 0; i < n; i++) {
		w[i].result = -ENOMEM; /* until submitted */
		if (!w[i].oid)
			return mrtx__seterr(MRTX_EINVAL, "rconn_write: op %zu has no object", i);
		widest = MRTX_MAX(widest, MRTX_MAX(w[i].nsets, w[i].nrms));
	}
	if (n == 0)
		return MRTX_OK;
	ops = mrtx__calloc(n, sizeof(*ops));
	oids = mrtx__calloc(n, sizeof(*oids));
	results = mrtx__calloc(n, sizeof(*results));
	if (!ops || !oids || !results || scratch_init(&s, widest)) {
		rc = mrtx__seterr(MRTX_ENOMEM, "rados: out of memory (batch of %zu writes)", n);
		goto done;
	}
	for (i = 0; i < n; i++) {
		if (!(ops[i] = rados_create_write_op())) {
			rc = mrtx__seterr(MRTX_ENOMEM, "rados: out of memory (write op)");
			goto done;
		}
		build_write(ops[i], &w[i], &s);
		oids[i] = w[i].oid;
	}
	rc = rconn_write_ops(c, ops, oids, results, n);
	for (i = 0; i < n; i++)
		w[i].result = results[i];
done:
	for (i = 0; ops && i < n; i++)
		if (ops[i])
			rados_release_write_op(ops[i]);
	scratch_free(&s);
	mrtx__free(ops);
	mrtx__free(oids);
	mrtx__free(results);
	return rc;
}

/* Per-read state librados writes into while the op is in flight. */
typedef struct rslot {
	rados_read_op_t op;
	rados_completion_t comp;
	rados_omap_iter_t keys_it;
	int keys_prval;
	size_t first_get; /* index into the flat get arrays */
} rslot;

/* Copy an iterator's pairs into the arena; frees the iterator. */
static int drain(rados_omap_iter_t it, mrtx_arena *a, rkv **kvs, size_t *nkvs)
{
	unsigned cnt = rados_omap_iter_size(it);
	char *k, *v;
	size_t kl, vl, m = 0;
	int rc = MRTX_OK;

	*kvs = NULL;
	*nkvs = 0;
	if (cnt && !(*kvs = arena_alloc(a, (size_t)cnt * sizeof(rkv))))
		rc = MRTX_ENOMEM;
	while (rc == MRTX_OK && m < cnt && rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k) {
		uint8_t *kp = arena_dup(a, k, kl), *vp = arena_dup(a, v, vl);

		if (!kp || !vp) {
			rc = MRTX_ENOMEM;
			break;
		}
		(*kvs)[m].key = MRTX_BYTES(kp, kl);
		(*kvs)[m].value = MRTX_BYTES(vp, vl);
		m++;
	}
	*nkvs = m;
	rados_omap_get_end(it);
	return rc;
}

/* A C string copy of b in the arena ("" for size 0); 0x00 inside is refused. */
static int cstr(mrtx_arena *a, mrtx_bytes b, const char *what, const char **out)
{
	char *s;

	if (b.size && memchr(b.data, 0, b.size))
		return mrtx__seterr(MRTX_EINVAL, "rconn_read: %s holds a 0x00 byte (omap listing "
		                    "takes C strings; encode keys with radoskey.h)", what);
	if (!(s = arena_alloc(a, b.size + 1)))
		return MRTX_ENOMEM;
	if (b.size)
		memcpy(s, b.data, b.size);
	s[b.size] = '\0';
	*out = s;
	return MRTX_OK;
}

int rconn_read(rconn *c, rread *r, size_t n, mrtx_arena *a)
{
	rslot *sl = NULL;
	rados_omap_iter_t *get_it = NULL;
	unsigned char *more = NULL;
	const char **sa = NULL, **pf = NULL;
	size_t ngets = 0, widest = 0, i, j, g;
	scratch s = { 0 };
	int rc = MRTX_OK;

	if (!c || !a || (n && !r))
		return mrtx__seterr(MRTX_EINVAL, "rconn_read: NULL argument");
	for (i = 0; i < n; i++) {
		r[i].result = -ENOMEM;
		r[i].kvs = NULL;
		r[i].nkvs = 0;
		if (!r[i].oid)
			return mrtx__seterr(MRTX_EINVAL, "rconn_read: read %zu has no object", i);
		ngets += r[i].ngets;
		widest = MRTX_MAX(widest, r[i].nkeys);
	}
	if (n == 0)
		return MRTX_OK;
	sl = mrtx__calloc(n, sizeof(*sl));
	get_it = mrtx__calloc(ngets ? ngets : 1, sizeof(*get_it));
	more = mrtx__calloc(ngets ? ngets : 1, 1);
	sa = mrtx__calloc(ngets ? ngets : 1, sizeof(*sa));
	pf = mrtx__calloc(ngets ? ngets : 1, sizeof(*pf));
	if (!sl || !get_it || !more || !sa || !pf || scratch_init(&s, widest)) {
		rc = mrtx__seterr(MRTX_ENOMEM, "rados: out of memory (batch of %zu reads)", n);
		goto done;
	}
	/* Refuse bad arguments before anything is submitted. */
	for (i = 0, g = 0; i < n; i++)
		for (j = 0; j < r[i].ngets; j++, g++)
			if ((rc = cstr(a, r[i].gets[j].start_after, "start_after", &sa[g])) ||
			    (rc = cstr(a, r[i].gets[j].prefix, "filter_prefix", &pf[g])))
				goto done;
	for (i = 0, g = 0; i < n; i++) {
		rslot *t = &sl[i];
		int e;

		t->first_get = g;
		if (!(t->op = rados_create_read_op())) {
			rc = mrtx__seterr(MRTX_ENOMEM, "rados: out of memory (read op)");
			break;
		}
		for (j = 0; j < r[i].ngets; j++, g++) {
			rget *q = &r[i].gets[j];

			q->result = 0;
			rados_read_op_omap_get_vals2(t->op, sa[g], pf[g], q->max, &get_it[g], &more[g],
			                             &q->result);
		}
		if (r[i].nkeys) {
			for (j = 0; j < r[i].nkeys; j++) {
				s.k[j] = (const char *)r[i].keys[j].data;
				s.kl[j] = r[i].keys[j].size;
			}
			rados_read_op_omap_get_vals_by_keys2(t->op, s.k, r[i].nkeys, s.kl,
			                                      &t->keys_it, &t->keys_prval);
		}
		if ((e = rados_aio_create_completion2(NULL, NULL, &t->comp)) < 0) {
			t->comp = NULL;
			rc = mrtx__seterr(MRTX_ENOMEM, "rados: cannot create a completion: %s",
			                  strerror(-e));
			g = t->first_get + r[i].ngets;
			i++; /* this slot's iterators exist: free them below */
			break;
		}
		e = rados_aio_read_op_operate(t->op, c->io, t->comp, r[i].oid,
		                              LIBRADOS_OPERATION_NOFLAG);
		if (e < 0) {
			r[i].result = e;
			rados_aio_release(t->comp);
			t->comp = NULL;
		}
	}
	/* Wait for every submitted read, then collect and free (slots past the
	 * first unbuilt one have no op and no iterators). */
	for (size_t built = i, k = 0; k < built; k++) {
		rslot *t = &sl[k];

		if (t->comp) {
			rados_aio_wait_for_complete(t->comp);
			r[k].result = rados_aio_get_return_value(t->comp);
			rados_aio_release(t->comp);
		}
		for (j = 0; j < r[k].ngets; j++) {
			rget *q = &r[k].gets[j];
			size_t gi = t->first_get + j;
			int e = drain(get_it[gi], a, &q->kvs, &q->nkvs);

			q->more = more[gi] != 0;
			if (e && rc == MRTX_OK)
				rc = mrtx__seterr(e, "rados: out of memory (omap read results)");
		}
		if (r[k].nkeys && t->keys_it) {
			int e = drain(t->keys_it, a, &r[k].kvs, &r[k].nkvs);

			if (e && rc == MRTX_OK)
				rc = mrtx__seterr(e, "rados: out of memory (omap read results)");
		}
		if (t->op)
			rados_release_read_op(t->op);
	}
	if (rc == MRTX_OK)
		for (i = 0; i < n; i++)
			if (r[i].result != 0 && r[i].result != -ENOENT) {
				rc = rconn_error(c, r[i].result, "read", r[i].oid);
				break;
			}
done:
	scratch_free(&s);
	mrtx__free(sl);
	mrtx__free(get_it);
	mrtx__free(more);
	mrtx__free(sa);
	mrtx__free(pf);
	return rc;
}

/* ------------------------------------------------------ object classes */

static int put_u32le(mrtx_buf *b, size_t v)
{
	uint8_t le[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	if (v > UINT32_MAX)
		return mrtx__seterr(MRTX_ETOOBIG, "rlua_encode: field of %zu bytes", v);
	return buf_put(b, le, 4);
}

static int put_field(mrtx_buf *b, const void *p, size_t n)
{
	int rc = put_u32le(b, n);

	return rc ? rc : n ? buf_put(b, p, n) : MRTX_OK;
}

int rlua_encode(mrtx_buf *out, const char *script, const char *handler, mrtx_bytes input)
{
	static const uint8_t head[2] = { 1, 1 }; /* struct_v, compat */
	size_t sl = strlen(script), hl = strlen(handler), at;
	int rc;

	if ((rc = buf_put(out, head, 2)))
		return rc;
	at = out->size;
	if ((rc = put_u32le(out, 0)) || (rc = put_field(out, script, sl)) ||
	    (rc = put_field(out, handler, hl)) || (rc = put_field(out, input.data, input.size)))
		return rc;
	{
		size_t len = out->size - at - 4;
		uint8_t le[4] = { (uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
		                  (uint8_t)(len >> 24) };

		if (len > UINT32_MAX)
			return mrtx__seterr(MRTX_ETOOBIG, "rlua_encode: %zu bytes", len);
		memcpy(out->data + at, le, 4);
	}
	return MRTX_OK;
}
