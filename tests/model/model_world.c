/*
 * model_world.c - the rarer operations of tests/model/test_model.c: reopening the
 * store, declaring tables and indexes (with the backfill's documented
 * failure), filling the map until MRTX_EFULL, a writer stalled in its
 * commit (MRTX_ELOCKED), and comparing the whole store with the model.
 */
#include "testutil.h"
#include "model_world.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Close every transaction, reopen the store, compare everything. */
void op_reopen(void)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	int rc;

	W.n_reopen++;
	while (W.nopen) {
		if (rnd(2))
			op_commit(W.nopen - 1);
		else {
			tr("t%d abort", W.open[W.nopen - 1]->id);
			mrtx_abort(W.open[W.nopen - 1]->h);
			drop_txn(W.nopen - 1);
		}
	}
	tr("reopen");
	mrtx_close(W.db);
	W.db = NULL;
	o.durability = MRTX_NOSYNC;
	o.map_size = W.filled ? 0 : MAP_SMALL; /* 0: the default, 1 GiB, grows the map */
	rc = mrtx_open(&W.db, W.path, &o);
	check_rc(F_OPEN, rc, C(0), "reopen");
	assert_int_equal(rc, 0);
	verify_all("after reopen");
}

/* Fill the map (the store is opened with a small one): a commit fails with
 * MRTX_EFULL and writes nothing; a reopen with a larger map_size goes on. */
void op_fill(void)
{
	const size_t n = 1u << 20;
	uint8_t *big = malloc(n);
	int rc = 0;

	assert_non_null(big);
	W.filled = 1;
	for (int i = 0; i < 64 && rc != MRTX_EFULL; i++) {
		char row[16];
		mrtx_txn *txn;
		cell c;

		memset(big, 'A' + i % 26, n);
		c = (cell){ 1, 0, bs_dup(row, (size_t)snprintf(row, sizeof(row), "fill%02d", i)),
			    bs_dup("fill", 4), bs_dup(big, n) };
		assert_int_equal(mrtx_begin(W.db, &txn), 0);
		rc = mrtx_put(txn, "tb", MB(c.row), "f", MB(c.q), MB(c.v));
		check_rc(F_PUT, rc, C(0), "fill put");
		rc = mrtx_commit(txn);
		tr("fill %d: 1 MiB -> %s", i, mrtx_strerror(rc));
		check_rc(F_COMMIT, rc, C(0) | C(MRTX_EFULL), "filling the map");
		if (rc == 0) {
			cv_put(&W.data, &c);
			W.events++;
		}
	}
	free(big);
	if (rc != MRTX_EFULL)
		viol("unexpected", "64 MiB into a map of %u bytes and no MRTX_EFULL", MAP_SMALL);
	W.n_full += rc == MRTX_EFULL;
	verify_all("after MRTX_EFULL"); /* nothing lost, nothing half-written */
	op_reopen();
	for (size_t i = 0; i < W.data.n; i++) { /* make room again */
		cell c = W.data.c[i];
		mrtx_txn *txn;

		if (c.tab != 1 || c.row.n != 6 || memcmp(c.row.p, "fill", 4) != 0)
			continue;
		assert_int_equal(mrtx_begin(W.db, &txn), 0);
		check_rc(F_DELROW, mrtx_delete_row(txn, "tb", MB(c.row)), C(0), "unfill");
		check_rc(F_COMMIT, mrtx_commit(txn), C(0), "unfill commit");
		cv_del_row(&W.data, 1, c.row);
		W.events++;
		i--;
	}
}

/* A writer stalled after its prewrite (a failpoint, in a second thread)
 * holds live locks: readers get MRTX_ELOCKED, or values that are either
 * committed ones or, once it went on, its own; never anything else. */
struct stall {
	mrtx_txn *h;
	int rc;
	atomic_int done;
};

static void *stall_main(void *p)
{
	struct stall *x = p;

	x->rc = mrtx_commit(x->h);
	atomic_store(&x->done, 1);
	return NULL;
}

void op_stall(void)
{
	mt *t = calloc(1, sizeof(*t));
	struct stall x = { NULL, 0, 0 };
	pthread_t th;
	int rc, hit = 0, shortttl = (int)rnd(2);
	cellv fin;

	assert_non_null(t);
	assert_int_equal(mrtx_begin(W.db, &t->h), 0);
	t->id = ++W.next_id;
	mt_reset(t);
	mrtx_txn_set_lock_ttl(t->h, shortttl ? 100 : 60000); /* readers roll a short one back */
	for (int i = 0; i < 30 && t->nops < 3 && !t->doomed; i++)
		op_write(t, MOP_PUT);
	W.n_stall++;
	check_rc(F_FP, mrtx_failpoints_set("commit.after_prewrite=sleep:300@1"), C(0), "arm");
	x.h = t->h;
	assert_int_equal(pthread_create(&th, NULL, stall_main, &x), 0);
	for (int i = 0; i < 400 && !hit && !atomic_load(&x.done); i++) {
		hit = mrtx_failpoint_hits("commit.after_prewrite") > 0;
		if (!hit)
			nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
	}
	tr("t%d stalled in its commit (%zu writes): %s", t->id, t->nops, hit ? "yes" : "no");
	view_of(&fin, t, t->nops); /* what it writes, if it went on */
	for (size_t i = 0; hit && i < t->nops; i++) {
		const cell *c = &t->ops[i].c, *m = cv_find(&W.data, c->tab, c->row, c->fid, c->q);
		const cell *f = cv_find(&fin, c->tab, c->row, c->fid, c->q);
		mrtx_txn *r;
		mrtx_bytes v;
		bs got;

		assert_int_equal(mrtx_begin(W.db, &r), 0);
		rc = mrtx_get(r, TABS[c->tab].name, MB(c->row), TABS[c->tab].fams[c->fid], MB(c->q), &v);
		tr("  get %s %s during the stall -> %s", TABS[c->tab].name, bs_show(c->row),
		   mrtx_strerror(rc));
		check_rc(F_GET, rc, C(0) | C(MRTX_NOTFOUND) | C(MRTX_ELOCKED), "get during a stall");
		W.n_locked += rc == MRTX_ELOCKED;
		got = rc == 0 ? bs_dup(v.data, v.size) : bs_dup("", 0);
		if ((rc == 0 && !(m && bs_eq(m->v, got)) && !(f && bs_eq(f->v, got))) ||
		    (rc == MRTX_NOTFOUND && m && f))
			viol("serializability", "a get during t%d's stalled commit read %s, neither the "
			     "committed value %s nor t%d's", t->id, rc ? "NOTFOUND" : bs_show(got),
			     m ? bs_show(m->v) : "NOTFOUND", t->id);
		mrtx_abort(r);
	}
	cv_free(&fin);
	pthread_join(th, NULL);
	check_rc(F_FP, mrtx_failpoints_set(NULL), C(0), "disarm");
	tr("t%d commit after the stall -> %s", t->id, mrtx_strerror(x.rc));
	check_rc(F_COMMIT, x.rc, C(0) | C(MRTX_CONFLICT), "stalled commit");
	if (x.rc == MRTX_CONFLICT && W.events == t->begin_event && !(shortttl && hit))
		viol("spurious-conflict", "t%d's stalled commit failed with nothing else committing", t->id);
	if (x.rc == 0)
		committed(t, "committed after a stall");
	mt_free(t);
}

/* The source cells a backfill cannot index (key over the limits), or whose
 * row cannot hold a copied column's key. */
static int unindexable(const cell *c, int d)
{
	if (c->tab != IDX[d].tab || c->fid != IDX[d].fid || !bs_eq(c->q, IDX[d].q))
		return 0;
	if (!idx_fits(c->v, c->row))
		return 2;
	for (int j = 0; j < IDX[d].ncl; j++)
		if (key_rc(c->row, IDX[d].clq[j].n))
			return 1;
	return 0;
}

void op_create_index(int d)
{
	mrtx_column cols[MIDX_MAXCL];
	int bad = 0, rc;
	mrtx_index_spec s;

	if (!W.exists[IDX[d].tab] || W.ibroken[d])
		return;
	s = spec_of(d, cols);
	for (size_t i = 0; i < W.data.n; i++)
		bad |= unindexable(&W.data.c[i], d);
	rc = mrtx_create_index(W.db, &s);
	tr("create_index %s (unindexable source cells: %d) -> %s", IDX[d].name, bad, mrtx_strerror(rc));
	/* a value whose index key is over the limits fails the backfill; a
	 * copied column that cannot exist in a long row is simply absent */
	check_rc(F_CINDEX, rc, (bad & 2) ? C(MRTX_ETOOBIG) : C(0), "create_index");
	W.events++;
	W.exists[IDX[d].itab] = 1;
	if (d < W.nidx && rc == 0) { /* a repeated declaration changes nothing */
		verify_all("after a repeated create_index");
		return;
	}
	if (rc) { /* the declaration stays: remove what it cannot index, repeat */
		mrtx_txn *txn;

		assert_int_equal(mrtx_begin(W.db, &txn), 0);
		for (size_t i = 0; i < W.data.n; i++)
			if (unindexable(&W.data.c[i], d)) {
				const cell *c = &W.data.c[i];

				rc = mrtx_delete(txn, TABS[c->tab].name, MB(c->row), TABS[c->tab].fams[c->fid],
				                 MB(c->q));
				check_rc(F_PUT, rc, C(0), "cleanup delete");
				cv_del(&W.data, c->tab, c->row, c->fid, c->q);
				i--;
			}
		rc = mrtx_commit(txn);
		tr("cleanup commit -> %s", mrtx_strerror(rc));
		check_rc(F_COMMIT, rc, C(0), "cleanup commit");
		rc = mrtx_create_index(W.db, &s);
		tr("create_index %s again -> %s", IDX[d].name, mrtx_strerror(rc));
		if (!check_rc(F_CINDEX, rc, C(0), "create_index repeated"))
			W.ibroken[d] = 1;
	}
	W.nidx += d == W.nidx;
	verify_all("after create_index");
}

void op_create_table(void)
{
	static const char *const other[] = { "f", "x" };
	int rc;

	if (W.exists[2] && rnd(2)) {
		rc = mrtx_create_table(W.db, "tc", other, 2);
		tr("create_table tc (other families) -> %s", mrtx_strerror(rc));
		check_rc(F_CTABLE, rc, C(MRTX_EEXIST), "create_table with other families");
		return;
	}
	rc = mrtx_create_table(W.db, "tc", TABS[2].fams, 1);
	tr("create_table tc -> %s", mrtx_strerror(rc));
	check_rc(F_CTABLE, rc, C(0), "create_table");
	W.exists[2] = 1;
}

/* ------------------------------------------------------------- verification */

static int tables_cb(const char *name, void *p)
{
	int *seen = p;

	for (int i = 0; i < NTAB; i++)
		if (strcmp(TABS[i].name, name) == 0)
			seen[i]++;
	return 0;
}

static int indexes_cb(const mrtx_index_spec *s, void *p)
{
	int *seen = p;

	for (int d = 0; d < NIDX; d++)
		if (strcmp(IDX[d].name, s->name) == 0 && strcmp(s->index_table, TABS[IDX[d].itab].name) == 0 &&
		    s->ncluster == (size_t)IDX[d].ncl && s->qualifier.size == IDX[d].q.n)
			seen[d]++;
	return 0;
}

/* The whole store through a fresh transaction, against the model. */
void verify_all(const char *why)
{
	int seen[NTAB] = { 0 }, iseen[NIDX] = { 0 }, rc;
	mt *t = op_begin();
	cellv view;

	tr("verify (%s)", why);
	view_of(&view, NULL, 0);
	for (int tab = 0; tab < NTAB; tab++)
		for (int rev = 0; rev < 2; rev++) {
			mrtx_scan_spec sp = { TABS[tab].name, { NULL, 0 }, { NULL, 0 }, NULL, { NULL, 0 },
				              { NULL, 0 }, rev, 0 };
			mscan ms = { tab, { NULL, 0 }, { NULL, 0 }, -1, { NULL, 0 }, { NULL, 0 }, rev, 0 };
			cellv want = { 0 };
			mrtx_scanner *s;
			mrtx_cell c;
			size_t i = 0;

			rc = mrtx_scan_open(t->h, &sp, &s);
			if (!check_rc(F_SOPEN, rc, W.exists[tab] ? C(0) : C(MRTX_ENOTABLE), "verify") || rc)
				continue;
			if (tab >= NDATA && W.ibroken[tab - NDATA]) {
				mrtx_scan_close(s);
				continue;
			}
			cv_scan(&view, &ms, &want);
			while ((rc = mrtx_scan_next(s, &c)) == 0) {
				cell g = { tab, fid_of(tab, c.family), bs_dup(c.row.data, c.row.size),
					   bs_dup(c.qualifier.data, c.qualifier.size),
					   bs_dup(c.value.data, c.value.size) };

				if (i >= want.n || !cell_same(&g, &want.c[i])) {
					viol(tab < NDATA ? "store-content" : "index-content",
					     "%s (%s): table %s cell %zu is %s %s:%s = %s, the model has %s %s = %s",
					     why, rev ? "reverse" : "forward", TABS[tab].name, i, bs_show(g.row),
					     c.family, bs_show(g.q), bs_show(g.v),
					     i < want.n ? bs_show(want.c[i].row) : "nothing",
					     i < want.n ? bs_show(want.c[i].q) : "", i < want.n ? bs_show(want.c[i].v) : "");
					break;
				}
				i++;
			}
			if (rc == MRTX_NOTFOUND && i < want.n)
				viol(tab < NDATA ? "store-content" : "index-content",
				     "%s: table %s has %zu cells, the model %zu; first missing %s %s = %s", why,
				     TABS[tab].name, i, want.n, bs_show(want.c[i].row), bs_show(want.c[i].q),
				     bs_show(want.c[i].v));
			else if (rc && rc != MRTX_NOTFOUND)
				check_rc(F_SNEXT, rc, C(MRTX_NOTFOUND), "verify");
			mrtx_scan_close(s);
			cv_free(&want);
		}
	cv_free(&view);
	for (int k = 0; k < 4 * W.nidx; k++) { /* each index whole, then lookups */
		int d = k % W.nidx;
		struct hitctx x;
		obs o;

		if (W.ibroken[d])
			continue;
		memset(&o, 0, sizeof(o));
		o.kind = OBS_ISCAN;
		o.ix = d;
		o.reverse = (int)rnd(2);
		x = (struct hitctx){ &o, SIZE_MAX, 0 };
		if (k < W.nidx) {
			rc = mrtx_index_scan(t->h, IDX[d].name, MRTX_BYTES(NULL, 0), MRTX_BYTES(NULL, 0),
			                     o.reverse, 0, hit_cb, &x);
		} else { /* a value some source row holds, or none */
			const cell *c = W.data.n ? &W.data.c[rnd((uint32_t)W.data.n)] : NULL;

			o.lookup = 1;
			o.reverse = 0;
			o.vs = c && rnd(4) ? c->v : rnd_alpha(rnd(3));
			rc = mrtx_index_lookup(t->h, IDX[d].name, MB(o.vs), hit_cb, &x);
		}
		o.ended = 1;
		if (check_rc(F_ISCAN, rc, C(0) | (key_bytes1(o.vs).n > MRTX_MAX_ROW ? C(MRTX_ETOOBIG) : 0),
		             "verify index scan") && rc == 0) {
			char w[1024];

			view_of(&view, NULL, 0);
			if (!obs_holds(&o, &view, w, sizeof(w)))
				viol("index-content", "%s: %s", why, w);
			cv_free(&view);
		}
		free(o.hits);
	}
	rc = mrtx_commit(t->h); /* read-only: nothing committed in between */
	check_rc(F_COMMIT, rc, C(0), "verify commit");
	W.open[W.nopen - 1]->nob = 0;
	drop_txn(W.nopen - 1);
	check_rc(F_TABLES, mrtx_tables(W.db, tables_cb, seen), C(0), "tables");
	check_rc(F_INDEXES, mrtx_indexes(W.db, indexes_cb, iseen), C(0), "indexes");
	for (int i = 0; i < NTAB; i++)
		if (seen[i] != W.exists[i])
			viol("store-content", "mrtx_tables lists %s %d times", TABS[i].name, seen[i]);
	for (int d = 0; d < NIDX; d++)
		if (iseen[d] != (d < W.nidx))
			viol("store-content", "mrtx_indexes lists %s %d times", IDX[d].name, iseen[d]);
	for (int i = 0; i < NTAB; i++) {
		const char *const *f;
		size_t n;

		rc = mrtx_table_families(W.db, TABS[i].name, &f, &n);
		if (check_rc(F_FAMS, rc, W.exists[i] ? C(0) : C(MRTX_ENOTABLE), "families") && rc == 0 &&
		    (n != (size_t)TABS[i].nfam || strcmp(f[n - 1], TABS[i].fams[n - 1]) != 0))
			viol("store-content", "families of %s", TABS[i].name);
	}
}

