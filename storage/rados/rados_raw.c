/*
 * rados_raw.c - plain guarded RADOS row writes for `mrtx bench`, and the
 * removal of a benchmark's objects (rados_raw.h).
 */
#include "storage/rados/rados_raw.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/rados/rados_int.h"

#define RAW_MAX_ROWS 1024u
#define RAW_VALUE_SIZE 16u

struct rraw {
	rconn *conn;
};

int rraw_open(rraw **out, const char *uri)
{
	raddr a;
	rraw *r;
	int rc;

	if (!out || !uri)
		return mrtx__seterr(MRTX_EINVAL, "rraw_open: NULL argument");
	*out = NULL;
	if ((rc = raddr_parse(&a, uri)))
		return rc;
	if (!(r = mrtx__calloc(1, sizeof(*r)))) {
		raddr_free(&a);
		return mrtx__seterr(MRTX_ENOMEM, "rados: out of memory");
	}
	rc = rconn_open(&r->conn, &a, NULL);
	raddr_free(&a);
	if (rc) {
		mrtx__free(r);
		return rc;
	}
	*out = r;
	return MRTX_OK;
}

void rraw_close(rraw *r)
{
	if (!r)
		return;
	rconn_close(r->conn);
	mrtx__free(r);
}

int rraw_put_rows(rraw *r, const char *const *oids, const mrtx_bytes *rows, size_t n,
                  int cells)
{
	static const uint8_t value[RAW_VALUE_SIZE] = "vvvvvvvvvvvvvvvv";
	size_t lk = 1 + RKEY_MAX, ck = RCELL_MAX, ng, nc = (size_t)cells;
	size_t *grp = NULL, *order, *start, *count;
	rwrite *w = NULL;
	rguard *g = NULL;
	rkv *kv = NULL;
	uint8_t *keys = NULL;
	int rc = MRTX_OK;

	if (!r || !oids || !rows || n == 0 || n > RAW_MAX_ROWS || cells <= 0 ||
	    nc > RAW_MAX_ROWS)
		return mrtx__seterr(MRTX_EINVAL, "rraw_put_rows: bad argument");
	for (size_t i = 0; i < n; i++)
		if (!oids[i] || !rows[i].data || rows[i].size == 0 || rows[i].size > MRTX_MAX_ROW)
			return mrtx__seterr(MRTX_EINVAL, "rraw_put_rows: bad row %zu", i);
	grp = mrtx__calloc(4 * n, sizeof(*grp));
	w = mrtx__calloc(n, sizeof(*w));
	g = mrtx__calloc(n, sizeof(*g));
	kv = mrtx__calloc(n * nc, sizeof(*kv));
	keys = mrtx__malloc(n * (lk + nc * ck));
	if (!grp || !w || !g || !kv || !keys) {
		rc = mrtx__seterr(MRTX_ENOMEM, "rados: out of memory");
		goto out;
	}
	/* Rows of one object share one compound op, one guard per row, as a
	 * program using librados directly would write them (and as mrtx does). */
	order = grp + n;
	start = order + n;
	count = start + n;
	ng = rados_group_by_oid(oids, n, grp, order, start, count);
	for (size_t j = 0; j < ng; j++)
		w[j] = (rwrite){ .oid = oids[order[start[j]]], .create = 1, .guards = &g[start[j]],
		                 .nguards = count[j], .sets = &kv[start[j] * nc],
		                 .nsets = count[j] * nc };
	for (size_t slot = 0; slot < n; slot++) {
		size_t i = order[slot];
		uint8_t *k = keys + i * (lk + nc * ck), *c = k + lk;

		g[slot] = (rguard){ { k, rados_lock_key(k, rows[i]) }, { "", 0 },
		                    LIBRADOS_CMPXATTR_OP_EQ, 0 };
		for (size_t q = 0; q < nc; q++, c += ck) {
			char qual[16];
			int qn = snprintf(qual, sizeof(qual), "q%zu", q);
			size_t pn = rados_cell_prefix(c, rows[i]);

			c[pn] = 1; /* family 0 */
			pn += 1 + rqual_put(c + pn + 1, (const uint8_t *)qual, (size_t)qn);
			kv[slot * nc + q] = (rkv){ { c, pn }, { value, sizeof(value) } };
		}
	}
	rc = rconn_write(r->conn, w, ng);
	if (rc == RCONN_TIMEDOUT)
		rc = MRTX_ESTORE;
	for (size_t j = 0; rc == MRTX_OK && j < ng; j++)
		if (w[j].result == -ECANCELED)
			rc = mrtx__seterr(MRTX_CONFLICT, "raw write on %s: a guard was false", w[j].oid);
out:
	mrtx__free(grp);
	mrtx__free(w);
	mrtx__free(g);
	mrtx__free(kv);
	mrtx__free(keys);
	return rc;
}

static int cmp_names(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

int rraw_list_prefix(rraw *r, const char *prefix, char ***out, size_t *nout)
{
	rados_list_ctx_t ctx;
	char **names = NULL;
	size_t n = 0, cap = 0, plen;
	const char *entry;
	int rc = MRTX_OK, e;

	if (!r || !prefix || !*prefix || !out || !nout)
		return mrtx__seterr(MRTX_EINVAL, "rraw_list_prefix: bad argument");
	*out = NULL;
	*nout = 0;
	plen = strlen(prefix);
	if ((e = rados_nobjects_list_open(rconn_ioctx(r->conn), &ctx)) < 0)
		return mrtx__seterr(MRTX_ESTORE, "rados: cannot list pool %s: %s",
		                    rconn_pool(r->conn), strerror(-e));
	while ((e = rados_nobjects_list_next(ctx, &entry, NULL, NULL)) == 0) {
		if (strncmp(entry, prefix, plen) != 0)
			continue;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			char **nn = realloc(names, nc * sizeof(*nn));

			if (!nn) {
				rc = mrtx__seterr(MRTX_ENOMEM, "rados: out of memory");
				break;
			}
			names = nn;
			cap = nc;
		}
		if (!(names[n] = strdup(entry))) {
			rc = mrtx__seterr(MRTX_ENOMEM, "rados: out of memory");
			break;
		}
		n++;
	}
	rados_nobjects_list_close(ctx);
	if (rc == MRTX_OK && e != -ENOENT)
		rc = rconn_error(r->conn, e, "list", "(pool)");
	if (rc) {
		for (size_t i = 0; i < n; i++)
			free(names[i]);
		free(names);
		return rc == RCONN_TIMEDOUT ? MRTX_ESTORE : rc;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	*out = names;
	*nout = n;
	return MRTX_OK;
}

int rraw_remove_prefix(rraw *r, const char *prefix, unsigned long *removed)
{
	char **names;
	size_t n;
	int rc, e;

	if (!r || !prefix || !*prefix || !removed)
		return mrtx__seterr(MRTX_EINVAL, "rraw_remove_prefix: bad argument");
	*removed = 0;
	if ((rc = rraw_list_prefix(r, prefix, &names, &n)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (rc == MRTX_OK) {
			e = rados_remove(rconn_ioctx(r->conn), names[i]);
			if (e == 0)
				++*removed;
			else if (e != -ENOENT)
				rc = rconn_error(r->conn, e, "remove", names[i]);
		}
		free(names[i]);
	}
	free(names);
	return rc == RCONN_TIMEDOUT ? MRTX_ESTORE : rc;
}

int rraw_omap_read_all(rraw *r, const char *oid, unsigned long *keys)
{
	mrtx_arena a;
	mrtx_bytes after = MRTX_BYTES(NULL, 0);
	int rc = MRTX_OK;

	if (!r || !oid || !keys)
		return mrtx__seterr(MRTX_EINVAL, "rraw_omap_read_all: bad argument");
	*keys = 0;
	arena_init(&a);
	for (;;) {
		rget g;
		rread rd;

		memset(&g, 0, sizeof(g));
		memset(&rd, 0, sizeof(rd));
		g.start_after = after;
		g.max = RAW_MAX_ROWS;
		rd.oid = oid;
		rd.gets = &g;
		rd.ngets = 1;
		if ((rc = rconn_read(r->conn, &rd, 1, &a)))
			break;
		*keys += g.nkvs;
		if (!g.more || !g.nkvs)
			break;
		after = g.kvs[g.nkvs - 1].key;
	}
	arena_free(&a);
	return rc == RCONN_TIMEDOUT ? MRTX_ESTORE : rc;
}
