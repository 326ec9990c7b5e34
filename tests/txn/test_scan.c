/*
 * test_scan.c - row-range and column-range scans merged with the
 * transaction's buffer, checked against hand-built expectations and against
 * a model over random operations.
 */
#include "testutil.h"
#include "txn/admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define B(s) MRTX_CSTR(s)

static const char *const FAMS[] = { "a", "b", "c" };
#define NFAM 3

/* ------------------------------------------------------------- the model */

typedef struct mcell {
	uint8_t row[8];
	size_t rlen;
	int fid;
	uint8_t q[3];
	size_t qlen;
	char val[24];
} mcell;

typedef struct model {
	mcell *c;
	size_t n, cap;
} model;

static int bcmp_(const void *a, size_t an, const void *b, size_t bn)
{
	size_t n = an < bn ? an : bn;
	int c = n ? memcmp(a, b, n) : 0;

	return c ? c : (an < bn ? -1 : an > bn);
}

static int mcell_cmp(const void *x, const void *y)
{
	const mcell *a = x, *b = y;
	int c = bcmp_(a->row, a->rlen, b->row, b->rlen);

	if (c)
		return c;
	if (a->fid != b->fid)
		return a->fid < b->fid ? -1 : 1;
	return bcmp_(a->q, a->qlen, b->q, b->qlen);
}

static mcell *model_find(model *m, const mcell *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (mcell_cmp(&m->c[i], key) == 0)
			return &m->c[i];
	return NULL;
}

static void model_put(model *m, const mcell *c)
{
	mcell *e = model_find(m, c);

	if (e) {
		*e = *c;
		return;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->c = realloc(m->c, m->cap * sizeof(*m->c));
		assert_non_null(m->c);
	}
	m->c[m->n++] = *c;
	qsort(m->c, m->n, sizeof(*m->c), mcell_cmp);
}

static void model_del(model *m, const mcell *key)
{
	mcell *e = model_find(m, key);

	if (e) {
		*e = m->c[--m->n];
		qsort(m->c, m->n, sizeof(*m->c), mcell_cmp);
	}
}

static void model_del_row(model *m, const uint8_t *row, size_t rlen)
{
	size_t k = 0;

	for (size_t i = 0; i < m->n; i++)
		if (bcmp_(m->c[i].row, m->c[i].rlen, row, rlen) != 0)
			m->c[k++] = m->c[i];
	m->n = k;
}

static model model_copy(const model *m)
{
	model r = { NULL, m->n, m->n + 1 };

	r.c = malloc(r.cap * sizeof(*r.c));
	assert_non_null(r.c);
	if (m->n)
		memcpy(r.c, m->c, m->n * sizeof(*m->c));
	return r;
}

/* ------------------------------------------------------------ scanning */

typedef struct got {
	mcell *c;
	size_t n;
} got;

static int scan_collect(mrtx_txn *txn, const mrtx_scan_spec *sp, got *out)
{
	mrtx_scanner *s;
	mrtx_cell c;
	int rc;

	out->n = 0;
	out->c = NULL;
	if ((rc = mrtx_scan_open(txn, sp, &s)))
		return rc;
	while ((rc = mrtx_scan_next(s, &c)) == MRTX_OK) {
		mcell *e;
		int fid = -1;

		out->c = realloc(out->c, (out->n + 1) * sizeof(*out->c));
		assert_non_null(out->c);
		e = &out->c[out->n++];
		memset(e, 0, sizeof(*e));
		assert_true(c.row.size <= sizeof(e->row));
		assert_true(c.qualifier.size <= sizeof(e->q));
		assert_true(c.value.size < sizeof(e->val));
		memcpy(e->row, c.row.data, c.row.size);
		e->rlen = c.row.size;
		for (int i = 0; i < NFAM; i++)
			if (strcmp(c.family, FAMS[i]) == 0)
				fid = i;
		assert_true(fid >= 0);
		e->fid = fid;
		if (c.qualifier.size)
			memcpy(e->q, c.qualifier.data, c.qualifier.size);
		e->qlen = c.qualifier.size;
		memcpy(e->val, c.value.data, c.value.size);
	}
	mrtx_scan_close(s);
	return rc == MRTX_NOTFOUND ? 0 : rc;
}

/* What the model says the scan returns. */
static void model_scan(const model *m, const mrtx_scan_spec *sp, got *out)
{
	size_t nrows = 0;
	const uint8_t *lastrow = NULL;
	size_t lastlen = 0;
	int fid = -1;

	if (sp->family)
		for (int i = 0; i < NFAM; i++)
			if (strcmp(sp->family, FAMS[i]) == 0)
				fid = i;
	out->c = malloc((m->n + 1) * sizeof(*out->c));
	out->n = 0;
	assert_non_null(out->c);
	for (size_t k = 0; k < m->n; k++) {
		/* forward order of rows, or reverse order of rows with cells ascending */
		const mcell *e;
		size_t i = k;

		if (sp->reverse) {
			/* walk rows from the end: find the start of the k-th row group from the end */
			break;
		}
		e = &m->c[i];
		if (sp->start.size && bcmp_(e->row, e->rlen, sp->start.data, sp->start.size) < 0)
			continue;
		if (sp->end.size && bcmp_(e->row, e->rlen, sp->end.data, sp->end.size) >= 0)
			continue;
		if (fid >= 0 && e->fid != fid)
			continue;
		if (sp->qual_start.size &&
		    bcmp_(e->q, e->qlen, sp->qual_start.data, sp->qual_start.size) < 0)
			continue;
		if (sp->qual_end.size && bcmp_(e->q, e->qlen, sp->qual_end.data, sp->qual_end.size) >= 0)
			continue;
		if (!lastrow || bcmp_(lastrow, lastlen, e->row, e->rlen) != 0) {
			if (sp->limit_rows && nrows == sp->limit_rows)
				break;
			nrows++;
			lastrow = e->row;
			lastlen = e->rlen;
		}
		out->c[out->n++] = *e;
	}
	if (!sp->reverse)
		return;
	/* Reverse: rows descending, cells inside a row ascending. */
	{
		size_t end = m->n;

		while (end > 0) {
			size_t beg = end - 1, before = out->n;

			while (beg > 0 && bcmp_(m->c[beg - 1].row, m->c[beg - 1].rlen, m->c[end - 1].row,
			                        m->c[end - 1].rlen) == 0)
				beg--;
			for (size_t i = beg; i < end; i++) {
				const mcell *e = &m->c[i];

				if (sp->start.size &&
				    bcmp_(e->row, e->rlen, sp->start.data, sp->start.size) < 0)
					continue;
				if (sp->end.size && bcmp_(e->row, e->rlen, sp->end.data, sp->end.size) >= 0)
					continue;
				if (fid >= 0 && e->fid != fid)
					continue;
				if (sp->qual_start.size &&
				    bcmp_(e->q, e->qlen, sp->qual_start.data, sp->qual_start.size) < 0)
					continue;
				if (sp->qual_end.size &&
				    bcmp_(e->q, e->qlen, sp->qual_end.data, sp->qual_end.size) >= 0)
					continue;
				if (out->n == before) {
					if (sp->limit_rows && nrows == sp->limit_rows)
						return;
					nrows++;
				}
				out->c[out->n++] = *e;
			}
			end = beg;
		}
	}
}

static void hex(char *buf, size_t bufsz, const uint8_t *p, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 3 < bufsz; i++)
		k += (size_t)snprintf(buf + k, bufsz - k, "%02x", p[i]);
	buf[k] = '\0';
}

static void print_cells(const char *what, const got *g)
{
	fprintf(stderr, "  %s (%zu):\n", what, g->n);
	for (size_t i = 0; i < g->n; i++) {
		char r[16], q[16];

		hex(r, sizeof(r), g->c[i].row, g->c[i].rlen);
		hex(q, sizeof(q), g->c[i].q, g->c[i].qlen);
		fprintf(stderr, "    row %s %s:%s = %s\n", r, FAMS[g->c[i].fid], q, g->c[i].val);
	}
}

static void describe_spec(const mrtx_scan_spec *sp)
{
	char s[16], e[16], qs[16], qe[16];

	hex(s, sizeof(s), sp->start.data, sp->start.size);
	hex(e, sizeof(e), sp->end.data, sp->end.size);
	hex(qs, sizeof(qs), sp->qual_start.data, sp->qual_start.size);
	hex(qe, sizeof(qe), sp->qual_end.data, sp->qual_end.size);
	fprintf(stderr, "scan [%s, %s) family %s q[%s, %s) reverse %d limit %zu\n", s, e,
	        sp->family ? sp->family : "*", qs, qe, sp->reverse, sp->limit_rows);
}

/* Scan and compare with the model; fails the test with a dump on mismatch. */
static void check_scan(mrtx_txn *txn, const model *m, const mrtx_scan_spec *sp)
{
	got g, want;
	int ok;

	assert_int_equal(scan_collect(txn, sp, &g), 0);
	model_scan(m, sp, &want);
	ok = g.n == want.n;
	for (size_t i = 0; ok && i < g.n; i++)
		ok = mcell_cmp(&g.c[i], &want.c[i]) == 0 && strcmp(g.c[i].val, want.c[i].val) == 0;
	if (!ok) {
		describe_spec(sp);
		print_cells("got", &g);
		print_cells("want", &want);
	}
	free(g.c);
	free(want.c);
	assert_true(ok);
}

/* ------------------------------------------------------------- fixture */

typedef struct fx {
	mrtx_db *db;
	char *path;
} fx;

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));

	if (!f || !(f->db = tu_open_fresh("scan", &f->path, NULL)))
		return -1;
	if (mrtx_create_table(f->db, "s", FAMS, NFAM) || tu_table(f->db, "before", "a", NULL) ||
	    tu_table(f->db, "zafter", "a", NULL))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;

	mrtx_close(f->db);
	tu_rmrf(f->path);
	free(f->path);
	free(f);
	return 0;
}

static void mc(mcell *c, const void *row, size_t rlen, int fid, const void *q, size_t qlen,
               const char *val)
{
	memset(c, 0, sizeof(*c));
	memcpy(c->row, row, rlen);
	c->rlen = rlen;
	c->fid = fid;
	if (qlen)
		memcpy(c->q, q, qlen);
	c->qlen = qlen;
	snprintf(c->val, sizeof(c->val), "%s", val);
}

static int txn_put(mrtx_txn *txn, model *m, const mcell *c)
{
	int rc = mrtx_put(txn, "s", MRTX_BYTES(c->row, c->rlen), FAMS[c->fid],
	                  MRTX_BYTES(c->q, c->qlen), MRTX_CSTR(c->val));

	if (rc == 0 && m)
		model_put(m, c);
	return rc;
}

static void all_specs(mrtx_txn *txn, const model *m, const mrtx_bytes *bounds, size_t nb,
                      const mrtx_bytes *qb, size_t nqb)
{
	mrtx_scan_spec sp;

	for (size_t s = 0; s < nb; s++)
		for (size_t e = 0; e < nb; e++)
			for (int rev = 0; rev < 2; rev++)
				for (size_t lim = 0; lim < 4; lim++) {
					memset(&sp, 0, sizeof(sp));
					sp.table = "s";
					sp.start = bounds[s];
					sp.end = bounds[e];
					sp.reverse = rev;
					sp.limit_rows = lim;
					check_scan(txn, m, &sp);
					for (int fid = 0; fid < NFAM; fid++) {
						sp.family = FAMS[fid];
						sp.qual_start = sp.qual_end = MRTX_BYTES(NULL, 0);
						check_scan(txn, m, &sp);
						for (size_t a = 0; a < nqb; a++)
							for (size_t b = 0; b < nqb; b++) {
								sp.qual_start = qb[a];
								sp.qual_end = qb[b];
								check_scan(txn, m, &sp);
							}
					}
				}
}

/* Buffered puts, deletes and delete_row over stored rows with 0x00/0xff
 * bytes and empty qualifiers, scanned every way. */
static void test_scan_mixed(void **state)
{
	fx *f = *state;
	model m = { 0 };
	mrtx_txn *txn;
	mcell c;
	static const uint8_t rows[][2] = { { 0x00 }, { 0x00, 0x00 }, { 'a' }, { 'a', 0x00 },
		                           { 'a', 0xff }, { 'b' }, { 0xff }, { 0xff, 0xff } };
	static const size_t rlen[] = { 1, 2, 1, 2, 2, 1, 1, 2 };

	/* rows in the neighbouring tables must never leak into scans of "s" */
	assert_int_equal(tu_put_str(f->db, "before", "a", "a:", "x"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "zafter", "a", "a:", "x"), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	for (size_t i = 0; i < 8; i++) {
		if (i == 5)
			continue; /* 'b' is only ever buffered */
		mc(&c, rows[i], rlen[i], 0, "", 0, "e");
		assert_int_equal(txn_put(txn, &m, &c), 0);
		mc(&c, rows[i], rlen[i], 1, "q", 1, "q");
		assert_int_equal(txn_put(txn, &m, &c), 0);
		mc(&c, rows[i], rlen[i], 1, "\x00", 1, "nul");
		assert_int_equal(txn_put(txn, &m, &c), 0);
		mc(&c, rows[i], rlen[i], 2, "\xff\xff", 2, "ff");
		assert_int_equal(txn_put(txn, &m, &c), 0);
	}
	assert_int_equal(mrtx_commit(txn), MRTX_OK);

	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	/* buffered inserts, in and out of order */
	mc(&c, "b", 1, 1, "z", 1, "B1");
	assert_int_equal(txn_put(txn, &m, &c), 0);
	mc(&c, "b", 1, 0, "", 0, "B0");
	assert_int_equal(txn_put(txn, &m, &c), 0);
	mc(&c, "\x00\x01", 2, 2, "", 0, "new");
	assert_int_equal(txn_put(txn, &m, &c), 0);
	/* overwrite a stored cell */
	mc(&c, "a", 1, 1, "q", 1, "over");
	assert_int_equal(txn_put(txn, &m, &c), 0);
	/* buffered delete hides a stored cell */
	mc(&c, "a\x00", 2, 1, "\x00", 1, "");
	assert_int_equal(mrtx_delete(txn, "s", MRTX_BYTES(c.row, c.rlen), "b",
	                             MRTX_BYTES(c.q, c.qlen)), 0);
	model_del(&m, &c);
	/* delete every cell of a row one by one: the row disappears */
	{
		const uint8_t r[] = { 0xff };
		model tmp = model_copy(&m);

		for (size_t i = 0; i < tmp.n; i++)
			if (tmp.c[i].rlen == 1 && tmp.c[i].row[0] == 0xff) {
				assert_int_equal(mrtx_delete(txn, "s", MRTX_BYTES(r, 1), FAMS[tmp.c[i].fid],
				                             MRTX_BYTES(tmp.c[i].q, tmp.c[i].qlen)), 0);
				model_del(&m, &tmp.c[i]);
			}
		free(tmp.c);
	}
	/* delete_row hides a whole stored row; a later put survives */
	assert_int_equal(mrtx_delete_row(txn, "s", MRTX_BYTES("a\xff", 2)), 0);
	model_del_row(&m, (const uint8_t *)"a\xff", 2);
	assert_int_equal(mrtx_delete_row(txn, "s", MRTX_BYTES("\x00\x00", 2)), 0);
	model_del_row(&m, (const uint8_t *)"\x00\x00", 2);
	mc(&c, "\x00\x00", 2, 2, "k", 1, "after");
	assert_int_equal(txn_put(txn, &m, &c), 0);
	/* delete_row of a row that was only buffered */
	mc(&c, "c", 1, 0, "", 0, "gone");
	assert_int_equal(txn_put(txn, NULL, &c), 0);
	assert_int_equal(mrtx_delete_row(txn, "s", MRTX_BYTES("c", 1)), 0);

	{
		const mrtx_bytes bounds[] = { { NULL, 0 }, { "\x00", 1 }, { "\x00\x00", 2 },
			                      { "a", 1 }, { "a\x00", 2 }, { "b", 1 },
			                      { "\xff", 1 }, { "\xff\xff\xff", 3 } };
		const mrtx_bytes qb[] = { { NULL, 0 }, { "\x00", 1 }, { "q", 1 }, { "\xff", 1 } };

		all_specs(txn, &m, bounds, 8, qb, 4);
	}
	/* spot checks by hand, independent of the model */
	{
		mrtx_scan_spec sp;
		got g;

		memset(&sp, 0, sizeof(sp));
		sp.table = "s";
		sp.family = "a";
		assert_int_equal(scan_collect(txn, &sp, &g), 0);
		/* family a, qualifier "": rows 00, 00 01? (no: c only), a, a00, b, ffff */
		assert_int_equal(g.n, 5);
		assert_int_equal(g.c[0].rlen, 1);
		assert_int_equal(g.c[0].row[0], 0x00);
		assert_int_equal(g.c[3].row[0], 'b');
		assert_string_equal(g.c[3].val, "B0");
		assert_int_equal(g.c[4].rlen, 2);
		assert_int_equal(g.c[4].row[0], 0xff);
		free(g.c);
		sp.reverse = 1;
		sp.limit_rows = 2;
		assert_int_equal(scan_collect(txn, &sp, &g), 0);
		assert_int_equal(g.n, 2);
		assert_int_equal(g.c[0].row[0], 0xff);
		assert_int_equal(g.c[1].row[0], 'b');
		free(g.c);
	}
	assert_int_equal(mrtx_commit(txn), MRTX_OK);

	/* After commit a fresh txn sees exactly the model. */
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	{
		const mrtx_bytes bounds[] = { { NULL, 0 }, { "a", 1 }, { "\xff", 1 } };
		const mrtx_bytes qb[] = { { NULL, 0 }, { "q", 1 } };

		all_specs(txn, &m, bounds, 3, qb, 2);
	}
	mrtx_abort(txn);
	free(m.c);
}

/* ------------------------------------------------------- random model test */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(rng_state >> 33) % n;
}

static const uint8_t ALPHA[] = { 0x00, 0x01, 'a', 'b', 0xfe, 0xff };

static size_t rnd_bytes(uint8_t *out, size_t maxlen, size_t minlen)
{
	size_t n = minlen + rnd((uint32_t)(maxlen - minlen + 1));

	for (size_t i = 0; i < n; i++)
		out[i] = ALPHA[rnd(sizeof(ALPHA))];
	return n;
}

static void rnd_cell(mcell *c, unsigned serial)
{
	memset(c, 0, sizeof(*c));
	c->rlen = rnd_bytes(c->row, 2, 1);
	c->fid = (int)rnd(NFAM);
	c->qlen = rnd_bytes(c->q, 2, 0);
	snprintf(c->val, sizeof(c->val), "v%u", serial);
}

static void random_ops(mrtx_txn *txn, model *m, int nops, unsigned *serial)
{
	for (int i = 0; i < nops; i++) {
		mcell c;
		uint32_t what = rnd(10);

		rnd_cell(&c, (*serial)++);
		if (what < 6) {
			assert_int_equal(txn_put(txn, m, &c), 0);
		} else if (what < 9) {
			/* delete: half the time an existing cell */
			if (m->n && rnd(2))
				c = m->c[rnd((uint32_t)m->n)];
			assert_int_equal(mrtx_delete(txn, "s", MRTX_BYTES(c.row, c.rlen), FAMS[c.fid],
			                             MRTX_BYTES(c.q, c.qlen)), 0);
			model_del(m, &c);
		} else {
			if (m->n && rnd(2))
				c = m->c[rnd((uint32_t)m->n)];
			assert_int_equal(mrtx_delete_row(txn, "s", MRTX_BYTES(c.row, c.rlen)), 0);
			model_del_row(m, c.row, c.rlen);
		}
	}
}

static void rnd_bound(mrtx_bytes *b, uint8_t *buf)
{
	size_t n = rnd(4) ? rnd_bytes(buf, 3, 1) : 0;

	*b = MRTX_BYTES(n ? buf : NULL, n);
}

static void random_scans(mrtx_txn *txn, const model *m, int nscans)
{
	for (int i = 0; i < nscans; i++) {
		uint8_t s[4], e[4], qs[4], qe[4];
		mrtx_scan_spec sp;

		memset(&sp, 0, sizeof(sp));
		sp.table = "s";
		rnd_bound(&sp.start, s);
		rnd_bound(&sp.end, e);
		sp.reverse = (int)rnd(2);
		sp.limit_rows = rnd(3) ? 0 : 1 + rnd(4);
		if (rnd(2)) {
			sp.family = FAMS[rnd(NFAM)];
			rnd_bound(&sp.qual_start, qs);
			rnd_bound(&sp.qual_end, qe);
		}
		check_scan(txn, m, &sp);
	}
}

/* Every cell of the model, and some absent ones, by mrtx_get. */
static void check_gets(mrtx_txn *txn, const model *m)
{
	mrtx_bytes v;

	for (size_t i = 0; i < m->n; i++) {
		const mcell *c = &m->c[i];

		assert_int_equal(mrtx_get(txn, "s", MRTX_BYTES(c->row, c->rlen), FAMS[c->fid],
		                          MRTX_BYTES(c->q, c->qlen), &v), MRTX_OK);
		assert_int_equal(v.size, strlen(c->val));
		assert_memory_equal(v.data, c->val, v.size);
	}
	for (int i = 0; i < 30; i++) {
		mcell c;
		int rc;

		rnd_cell(&c, 0);
		rc = mrtx_get(txn, "s", MRTX_BYTES(c.row, c.rlen), FAMS[c.fid],
		              MRTX_BYTES(c.q, c.qlen), &v);
		assert_int_equal(rc, model_find((model *)m, &c) ? MRTX_OK : MRTX_NOTFOUND);
	}
}

static void test_scan_random_model(void **state)
{
	fx *f = *state;
	const char *seed_env = getenv("MRTX_TEST_SEED");
	unsigned serial = 1;
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 20240611;

	for (int round = 0; round < 6; round++) {
		model m = { 0 }, open;
		mrtx_txn *txn;
		char dtag[32];
		char *path = NULL;
		mrtx_db *db;

		rng_state = seed + (uint64_t)round * 7919;
		fprintf(stderr, "random model round %d seed %llu\n", round,
		        (unsigned long long)rng_state);
		snprintf(dtag, sizeof(dtag), "scanrnd%d", round);
		assert_non_null(db = tu_open_fresh(dtag, &path, NULL));
		if (round & 1) {
			/* pre-split: on RADOS the rows spread over four tablets, and
			 * every scan below crosses tablet boundaries */
			static const uint8_t s1[] = { 0x01 }, s2[] = { 0x01, 0x00, 0x02 }, s3[] = { 0x80 };
			const mrtx_bytes splits[] = { { s1, 1 }, { s2, 3 }, { s3, 1 } };

			assert_int_equal(mrtx_create_table_split(db, "s", FAMS, NFAM, splits, 3), 0);
		} else {
			assert_int_equal(mrtx_create_table(db, "s", FAMS, NFAM), 0);
		}
		/* several committed transactions ... */
		for (int t = 0; t < 5; t++) {
			assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
			random_ops(txn, &m, 25, &serial);
			assert_int_equal(mrtx_commit(txn), MRTX_OK);
		}
		/* ... then one open one: its buffer is merged into every scan */
		open = model_copy(&m);
		assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
		random_ops(txn, &open, 20, &serial);
		random_scans(txn, &open, 150);
		check_gets(txn, &open);
		/* more buffered ops after scanning, then scan again */
		random_ops(txn, &open, 10, &serial);
		random_scans(txn, &open, 60);
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
		/* the committed store equals the model */
		assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
		random_scans(txn, &open, 40);
		check_gets(txn, &open);
		mrtx_abort(txn);
		(void)f;
		free(m.c);
		free(open.c);
		mrtx_close(db);
		tu_rmrf(path);
		free(path);
	}
}

/* A scan opened after buffered writes sees them, in order both ways, across
 * more rows than one store batch. */
static void test_scan_after_writes(void **state)
{
	fx *f = *state;
	mrtx_txn *txn;
	mrtx_scan_spec sp;
	got g;

	assert_int_equal(tu_put_str(f->db, "s", "r1", "a:x", "1"), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	memset(&sp, 0, sizeof(sp));
	sp.table = "s";
	assert_int_equal(scan_collect(txn, &sp, &g), 0);
	assert_int_equal(g.n, 1);
	free(g.c);
	assert_int_equal(mrtx_put(txn, "s", B("r0"), "b", B(""), B("0")), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "s", B("r2"), "c", B(""), B("2")), MRTX_OK);
	assert_int_equal(scan_collect(txn, &sp, &g), 0);
	assert_int_equal(g.n, 3);
	assert_memory_equal(g.c[0].row, "r0", 2);
	assert_memory_equal(g.c[2].row, "r2", 2);
	free(g.c);
	sp.reverse = 1;
	assert_int_equal(scan_collect(txn, &sp, &g), 0);
	assert_int_equal(g.n, 3);
	assert_memory_equal(g.c[0].row, "r2", 2);
	assert_memory_equal(g.c[2].row, "r0", 2);
	free(g.c);
	/* many rows: more than one store batch */
	for (int i = 0; i < 300; i++) {
		char row[16];

		snprintf(row, sizeof(row), "m%04d", i);
		if (i % 3 == 0)
			assert_int_equal(mrtx_put(txn, "s", B(row), "a", B(""), B("b")), MRTX_OK);
	}
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	for (int i = 0; i < 300; i++) {
		char row[16];

		snprintf(row, sizeof(row), "m%04d", i);
		if (i % 3 == 1)
			assert_int_equal(mrtx_put(txn, "s", B(row), "a", B(""), B("b")), MRTX_OK);
		if (i % 6 == 0)
			assert_int_equal(mrtx_delete_row(txn, "s", B(row)), MRTX_OK);
	}
	for (int rev = 0; rev < 2; rev++) {
		memset(&sp, 0, sizeof(sp));
		sp.table = "s";
		sp.start = B("m");
		sp.end = B("n");
		sp.reverse = rev;
		assert_int_equal(scan_collect(txn, &sp, &g), 0);
		/* i%3==0 minus i%6==0 (50) + i%3==1 (100) */
		assert_int_equal(g.n, 150);
		for (size_t i = 1; i < g.n; i++)
			assert_true(bcmp_(g.c[i - 1].row, g.c[i - 1].rlen, g.c[i].row, g.c[i].rlen) *
			            (rev ? -1 : 1) < 0);
		free(g.c);
	}
	mrtx_abort(txn);
}

/*
 * Tables share one LMDB database under per-table key prefixes (format 3),
 * created here in the order s, before, zafter.  Every unbounded and
 * bounded scan, both directions, sees its own table's rows only: the
 * metadata sorts before the first table, and an empty table sits between
 * two full ones, then is the last table's neighbour.
 */
static void test_scan_table_bounds(void **state)
{
	static const char *const tabs[] = { "s", "before", "zafter" };
	fx *f = *state;
	mrtx_scan_spec sp;
	mrtx_txn *txn;
	got g;

	for (int round = 0; round < 2; round++) {
		/* round 0: "before" (the middle table) stays empty */
		for (size_t t = 0; t < 3; t++) {
			if (round == 0 && t == 1)
				continue;
			for (int i = 0; i < 5; i++) {
				char row[16], val[16];

				snprintf(row, sizeof(row), "%c%d", 'k' + (int)t, i);
				snprintf(val, sizeof(val), "%s-%d", tabs[t], i);
				assert_int_equal(tu_put_str(f->db, tabs[t], row, "a:", val), MRTX_OK);
			}
		}
		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		for (size_t t = 0; t < 3; t++)
			for (int b = 0; b < 4; b++) {
				size_t want = (round == 0 && t == 1) ? 0 : 5;

				memset(&sp, 0, sizeof(sp));
				sp.table = tabs[t];
				sp.reverse = b & 1;
				if (b & 2) { /* bounds wider than any row of any table */
					sp.start = B("a");
					sp.end = B("zzz");
				}
				assert_int_equal(scan_collect(txn, &sp, &g), 0);
				if (g.n != want)
					fail_msg("table %s, %s%s: %zu rows, want %zu", tabs[t],
					         sp.reverse ? "reverse" : "forward",
					         (b & 2) ? ", bounded" : "", g.n, want);
				for (size_t i = 0; i < g.n; i++)
					assert_int_equal(g.c[i].row[0], 'k' + (int)t);
				free(g.c);
			}
		mrtx_abort(txn);
	}
}

/*
 * A scan's cells stay valid until its transaction ends (mrtx.h), however
 * many rows come after them and whatever other transactions commit
 * meanwhile: keep every cell of a scan over 300 rows, rewrite and delete
 * every row in other transactions (LMDB frees and reuses the pages the
 * scan read), and compare the kept cells with what was stored.
 */
static void test_scan_cells_live_until_end(void **state)
{
	fx *f = *state;
	mrtx_scan_spec sp = { .table = "s", .family = "b" };
	enum { N = 300 };
	mrtx_cell *kept = calloc(N, sizeof(*kept));
	mrtx_scanner *s;
	mrtx_txn *txn, *w;
	mrtx_cell c;
	size_t n = 0;
	int rc;

	assert_non_null(kept);
	for (int i = 0; i < N; i++) {
		char row[16], val[32];

		snprintf(row, sizeof(row), "live%04d", i);
		snprintf(val, sizeof(val), "value-%04d-%s", i, i % 2 ? "odd" : "even");
		assert_int_equal(tu_put_str(f->db, "s", row, "b:q", val), MRTX_OK);
	}
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_OK);
	while ((rc = mrtx_scan_next(s, &c)) == MRTX_OK) {
		assert_true(n < N);
		kept[n++] = c;
	}
	assert_int_equal(rc, MRTX_NOTFOUND);
	assert_int_equal(n, N);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(mrtx_begin(f->db, &w), MRTX_OK);
		for (int i = 0; i < N; i++) {
			char row[16];

			snprintf(row, sizeof(row), "live%04d", i);
			assert_int_equal(round == 2 ?
			                 mrtx_delete_row(w, "s", MRTX_CSTR(row)) :
			                 mrtx_put(w, "s", MRTX_CSTR(row), "b", MRTX_CSTR("q"),
			                          MRTX_CSTR("XXXXXXXXXXXXXXXXXXXXXXXX")), MRTX_OK);
		}
		assert_int_equal(mrtx_commit(w), MRTX_OK);
	}
	for (int i = 0; i < N; i++) {
		char row[16], val[32];

		snprintf(row, sizeof(row), "live%04d", i);
		snprintf(val, sizeof(val), "value-%04d-%s", i, i % 2 ? "odd" : "even");
		assert_int_equal(kept[i].row.size, strlen(row));
		assert_memory_equal(kept[i].row.data, row, strlen(row));
		assert_string_equal(kept[i].family, "b");
		assert_int_equal(kept[i].qualifier.size, 1);
		assert_memory_equal(kept[i].qualifier.data, "q", 1);
		assert_int_equal(kept[i].value.size, strlen(val));
		assert_memory_equal(kept[i].value.data, val, strlen(val));
	}
	mrtx_scan_close(s);
	mrtx_abort(txn);
	free(kept);
}

/*
 * A forward scan past a row with a long history (more older versions
 * after its lock than the scan walks before it seeks past them) reads the
 * next row as well as any other: every row, its newest value, no error.
 */
static void test_scan_past_long_history(void **state)
{
	static const mrtx_family_spec fams[] = { { "h", 64, 0, 0 } };
	fx *f = *state;
	mrtx_txn *txn;
	mrtx_scanner *s;
	mrtx_cell c;
	int rc;

	assert_int_equal(mrtx_create_table2(f->db, "hist", fams, 1), MRTX_OK);
	for (int i = 0; i < 4; i++)
		for (int w = 0; w < (i % 2 ? 40 : 1); w++) {
			char row[16], val[32];

			snprintf(row, sizeof(row), "r%d", i);
			snprintf(val, sizeof(val), "v%d-%d", i, w);
			assert_int_equal(tu_put_str(f->db, "hist", row, "h:q", val), MRTX_OK);
		}
	for (int fam = 0; fam < 2; fam++) {
		mrtx_scan_spec sp = { .table = "hist", .family = fam ? "h" : NULL };
		int n = 0;

		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_OK);
		while ((rc = mrtx_scan_next(s, &c)) == MRTX_OK) {
			char row[16], val[32];

			snprintf(row, sizeof(row), "r%d", n);
			snprintf(val, sizeof(val), "v%d-%d", n, n % 2 ? 39 : 0);
			assert_int_equal(c.row.size, strlen(row));
			assert_memory_equal(c.row.data, row, strlen(row));
			assert_int_equal(c.value.size, strlen(val));
			assert_memory_equal(c.value.data, val, strlen(val));
			n++;
		}
		assert_int_equal(rc, MRTX_NOTFOUND);
		assert_int_equal(n, 4);
		mrtx_scan_close(s);
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
	}
}

/*
 * A short scan costs its transaction memory in proportion to what it
 * returns: many one-row scans in one transaction (an index lookup each,
 * say) must not each keep a whole batch's array until the transaction
 * ends.  (LMDB: a RADOS scan's reads allocate per tablet page.)
 */
static void test_short_scans_stay_small(void **state)
{
	fx *f = *state;
	enum { ROWS = 200, SCANS = 2000 };
	mrtx_txn *txn;
	size_t before;

	if (tu_rados())
		skip();
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	for (int i = 0; i < ROWS; i++) {
		char row[16];

		snprintf(row, sizeof(row), "m%05d", i);
		assert_int_equal(mrtx_put(txn, "s", B(row), "b", B("q"), B("v")), MRTX_OK);
	}
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	before = admin_txn_mem(txn);
	for (int i = 0; i < SCANS; i++) {
		char lo[16], hi[16];
		mrtx_scan_spec sp = { .table = "s", .family = "b" };
		mrtx_scanner *s;
		mrtx_cell c;
		int rc, n = 0;

		snprintf(lo, sizeof(lo), "m%05d", i % ROWS);
		snprintf(hi, sizeof(hi), "m%05d", i % ROWS + 1);
		sp.start = B(lo);
		sp.end = B(hi);
		assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_OK);
		while ((rc = mrtx_scan_next(s, &c)) == MRTX_OK)
			n++;
		assert_int_equal(rc, MRTX_NOTFOUND);
		assert_int_equal(n, 1);
		mrtx_scan_close(s);
	}
	/* (a batch's whole array of 128 rows is about 9 KiB a scan) */
	print_message("%d one-row scans: %zu bytes of the transaction's memory a scan\n", SCANS,
	              (admin_txn_mem(txn) - before) / SCANS);
	assert_true((admin_txn_mem(txn) - before) / SCANS < 3000);
	mrtx_abort(txn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_scan_mixed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_after_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_random_model, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_table_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_cells_live_until_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_past_long_history, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_scans_stay_small, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
