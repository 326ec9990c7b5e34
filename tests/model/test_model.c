/*
 * test_model.c - model-based randomized test of the whole public API
 * against the in-memory reference model of tests/model/model_ref.c.
 *
 * Up to three transactions are open at once, driven interleaved from one
 * thread: gets, puts, deletes, row deletes, forward / reverse / limited /
 * column-range scans stopped early or read to the end, index scans and
 * lookups, commits, aborts, mrtx_run, error probes (tests/model/model_probe.c),
 * plus a reopen of the store, a table creation, a writer stalled in its
 * commit (MRTX_ELOCKED) at random points, and (tests/model/model_world.c) index
 * declarations from ops 300, 900, 1500 and a full map (MRTX_EFULL) at op
 * 2600; the model derives each index table from its source table (row key
 * = bytes(value) . bytes(row)).
 * Rows, qualifiers and values are binary (0x00, 0x01, 'a', 0xFF, prefixes
 * of each other), with keys at and one byte past the documented limit.
 *
 * The oracle.  Every transaction logs its buffered writes and what it
 * observed (each get, each scanned cell in order and whether the scan
 * ended, each index hit).  When mrtx_commit returns MRTX_OK, every
 * observation is re-evaluated against the model's committed state at that
 * moment plus the transaction's own writes made before the observation;
 * any difference is a serializability violation.  MRTX_CONFLICT (at commit,
 * or from a read) is only allowed if some transaction committed a write
 * (or an index was declared) since the transaction began.  While nothing
 * has committed since begin, each read is also checked at once
 * (read-your-writes).  Every return code must be documented for its
 * function in mrtx.h and, where the model can tell, be the exact one; every
 * documented error code is provoked.  The whole store is compared with the
 * model periodically, after a reopen and at the end.
 *
 * Environment:
 *   MRTX_MODEL_SEEDS="1,2,7-9"  seeds to run (default 1-6)
 *   MRTX_MODEL_OPS=N            operations per seed (default 3000)
 *   MRTX_MODEL_STOP=1           stop at the first violation (default: go on,
 *                               report each kind once per seed, fail at end)
 *   MRTX_MODEL_TRACE=1          print every operation
 * A shorter MRTX_MODEL_OPS replays a prefix of a longer run of the same seed.
 * CI: 6 seeds x 3000 ops, about 6 s (10 s under ASan+UBSan).  Long run, about
 * 9 minutes:  MRTX_MODEL_SEEDS=1-500 MRTX_MODEL_OPS=5000 build/tests/test_model
 */
#include "testutil.h"
#include "model_world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------- the world */

struct world W;

static const char *const CATS[] = { "serializability", "read-your-writes", "spurious-conflict",
	"undocumented-code", "wrong-code", "store-content", "index-content", "unexpected", NULL };

void tr(const char *fmt, ...)
{
	char *line = W.ring[W.ringpos++ % 48];
	int k = snprintf(line, 200, "op %ld: ", W.op);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line + k, (size_t)(200 - k), fmt, ap);
	va_end(ap);
	if (W.trace)
		fprintf(stderr, "  %s\n", line);
}

void viol(const char *cat, const char *fmt, ...)
{
	char msg[1024] = "";
	int ci = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	while (CATS[ci] && strcmp(CATS[ci], cat) != 0)
		ci++;
	W.viol++;
	W.cat_seen[ci]++;
	for (int i = 0; i < W.nkinds; i++)
		if (strncmp(W.kinds[i], msg, 40) == 0 && !W.stop)
			return; /* each kind reported once per seed */
	if (W.nkinds < 64)
		memcpy(W.kinds[W.nkinds++], msg, 40); /* msg is 1024 bytes, the kind NUL-padded */
	fprintf(stderr, "MODEL VIOLATION [%s] seed %lu op %ld: %s\n  (mrtx_errmsg: %s)\n  last "
	        "operations:\n", cat, W.seed, W.op, msg, mrtx_errmsg());
	for (int i = 0; i < 48; i++) {
		const char *l = W.ring[(W.ringpos + i) % 48];

		if (*l)
			fprintf(stderr, "    %s\n", l);
	}
	if (W.stop)
		fail_msg("seed %lu op %ld: [%s] %s", W.seed, W.op, cat, msg);
}

/* rc must be documented for fn, and be want (a mask of codes) when given. */
int check_rc(int fn, int rc, unsigned want, const char *what)
{
	unsigned bit = (rc == 0 || (rc >= MRTX_NOTFOUND && rc <= MRTX_EREADONLY)) ? C(rc) : 0;

	if (!(bit & DOC[fn])) {
		viol("undocumented-code", "%s (%s) returned %d (%s), not documented for it", FNAME[fn],
		     what, rc, mrtx_strerror(rc));
		return 0;
	}
	if (!(bit & want)) {
		viol("wrong-code", "%s (%s) returned %s", FNAME[fn], what, mrtx_strerror(rc));
		return 0;
	}
	return 1;
}

/* ------------------------------------------------------------ model views */

/* committed data + t's first k writes, with the derived index tables */
void view_of(cellv *out, const mt *t, size_t k)
{
	cv_copy(out, &W.data);
	for (size_t i = 0; t && i < k; i++)
		cv_apply(out, &t->ops[i]);
	derive_indexes(out, IDX, W.nidx);
}

/* Before a read: until the transaction has observed something, the read
 * about to run may be the one that opens its view (snapread.c). */
static void note_snapshot(mt *t)
{
	if (t->nob || t->doomed)
		return;
	if (t->shave)
		cv_free(&t->sdata);
	cv_copy(&t->sdata, &W.data);
	t->snidx = W.nidx;
	t->shave = 1;
}

/* Do all of t's observations hold in its snapshot?  (A read-only
 * transaction reads one snapshot -- LMDB's view, a RADOS store's live
 * snapshot -- and commits without validation.) */
static int holds_at_snapshot(const mt *t)
{
	char why[1024];
	cellv v = { 0 };
	int ok = 1;

	if (!t->shave || t->nops)
		return 0;
	cv_copy(&v, &t->sdata);
	derive_indexes(&v, IDX, t->snidx);
	for (size_t i = 0; ok && i < t->nob; i++)
		ok = obs_holds(&t->ob[i], &v, why, sizeof(why));
	cv_free(&v);
	return ok;
}

/* Record an observation; check it at once when nothing committed since begin. */
static void observe(mt *t, obs *o)
{
	char why[1024];

	o->k = t->nops;
	if (W.events == t->begin_event) {
		cellv v;

		view_of(&v, t, t->nops);
		if (!obs_holds(o, &v, why, sizeof(why)))
			viol("read-your-writes", "txn %d (nothing committed since it began): %s", t->id,
			     why);
		cv_free(&v);
	}
	if (t->nob == t->cob) {
		t->cob = t->cob ? 2 * t->cob : 8;
		t->ob = realloc(t->ob, t->cob * sizeof(*t->ob));
		assert_non_null(t->ob);
	}
	t->ob[t->nob++] = *o;
}

static void log_op(mt *t, int kind, const cell *c)
{
	if (t->nops == t->cops) {
		t->cops = t->cops ? 2 * t->cops : 8;
		t->ops = realloc(t->ops, t->cops * sizeof(*t->ops));
		assert_non_null(t->ops);
	}
	t->ops[t->nops].kind = kind;
	t->ops[t->nops++].c = *c;
}

/* Values returned by mrtx_get stay valid until the transaction ends. */
void check_lifetimes(const mt *t)
{
	for (size_t i = 0; i < t->nob; i++)
		if (t->ob[i].raw && t->ob[i].g.v.n && memcmp(t->ob[i].raw, t->ob[i].g.v.p, t->ob[i].g.v.n))
			viol("unexpected", "txn %d: the value of get %zu changed before the transaction "
			     "ended", t->id, i);
}

void mt_reset(mt *t)
{
	for (size_t i = 0; i < t->nob; i++) {
		cv_free(&t->ob[i].got);
		free(t->ob[i].hits);
	}
	if (t->shave)
		cv_free(&t->sdata);
	t->shave = 0;
	t->nob = t->nops = 0;
	t->doomed = 0;
	t->snap = -1;
	t->begin_event = W.events;
}

void mt_free(mt *t)
{
	mt_reset(t);
	free(t->ops);
	free(t->ob);
	free(t);
}

/* A CONFLICT from a read or a write: legitimate only after another commit. */
void got_conflict(mt *t, const char *what)
{
	if (W.events == t->begin_event)
		viol("spurious-conflict", "txn %d: %s returned MRTX_CONFLICT but nothing committed "
		     "since it began%s", t->id, what, t->scanfail ? " (it had a scan that failed "
		     "and then reported its end)" : "");
	t->doomed = 1;
}

/* ------------------------------------------------------------- operations */

/* A cell to work on: mostly an existing one (committed or buffered). */
static cell pick_cell(const mt *t, int index_tables)
{
	cell c;

	if (W.data.n && rnd(100) < 35)
		return W.data.c[rnd((uint32_t)W.data.n)];
	if (W.recent[0].row.n && rnd(100) < 20) {
		c = W.recent[rnd(16)];
		return c.row.n ? c : W.recent[0];
	}
	if (t && t->nops && rnd(100) < 15) {
		c = t->ops[rnd((uint32_t)t->nops)].c;
		if (c.fid >= 0 && c.fid < TABS[c.tab].nfam)
			return c;
	}
	c.tab = (int)(rnd(100) < 45 ? 0 : rnd(100) < 80 ? 1 : 2);
	if (index_tables && W.nidx && rnd(10) == 0) { /* an index table's cell */
		int d = (int)rnd((uint32_t)W.nidx);
		size_t m = 0, pick;
		cellv v;

		view_of(&v, NULL, 0);
		for (size_t i = 0; i < v.n; i++)
			m += v.c[i].tab == IDX[d].itab;
		pick = m ? rnd((uint32_t)m) : 0;
		c.tab = IDX[d].itab;
		c.row = rnd_row();
		c.q = rnd(2) ? bs_dup("r", 1) : rnd_qual();
		for (size_t i = 0; i < v.n; i++)
			if (v.c[i].tab == c.tab && pick-- == 0 && rnd(4)) {
				c = v.c[i];
				break;
			}
		cv_free(&v);
		c.fid = 0;
		c.v = bs_dup("", 0);
		return c;
	}
	c.row = rnd_row();
	c.fid = (int)rnd((uint32_t)TABS[c.tab].nfam);
	c.q = rnd_qual();
	if (c.row.n > 250 && rnd(3) == 0) { /* an indexed or copied column of a long row */
		const midx *x = &IDX[rnd(NIDX)];
		int j = (int)rnd((uint32_t)x->ncl + 1);

		if (x->tab == c.tab) {
			c.fid = j < x->ncl ? x->clfid[j] : x->fid;
			c.q = j < x->ncl ? x->clq[j] : x->q;
			c.v = bs_dup("", 0);
			return c;
		}
	}
	if (c.row.n > 250 && rnd(2)) /* a key exactly at, or just past, the limit */
		c.q = rnd_alpha(MRTX_MAX_KEY > c.row.n + bs_nuls(c.row) + 16
		                ? MRTX_MAX_KEY - c.row.n - bs_nuls(c.row) - 16 + rnd(2) : rnd(2));
	c.v = bs_dup("", 0);
	return c;
}

static void op_get(mt *t)
{
	cell c = pick_cell(t, 1);
	mrtx_bytes v = { NULL, 0 };
	int want = W.exists[c.tab] ? key_rc(c.row, c.q.n) : MRTX_ENOTABLE, rc;
	obs o;

	W.n_get++;
	note_snapshot(t);
	rc = mrtx_get(t->h, TABS[c.tab].name, MB(c.row), TABS[c.tab].fams[c.fid], MB(c.q), &v);
	tr("t%d get %s %s %s:%s -> %s %s", t->id, TABS[c.tab].name, bs_show(c.row),
	   TABS[c.tab].fams[c.fid], bs_show(c.q), mrtx_strerror(rc), rc ? "" : bs_show(bs_dup(v.data, v.size)));
	if (t->doomed) {
		check_rc(F_GET, rc, C(MRTX_EBADTXN), "doomed transaction");
		return;
	}
	if (rc == MRTX_CONFLICT) {
		check_rc(F_GET, rc, ANYC, "get");
		got_conflict(t, "mrtx_get");
		return;
	}
	if (!check_rc(F_GET, rc, want ? C(want) : C(0) | C(MRTX_NOTFOUND), "get") || want)
		return;
	memset(&o, 0, sizeof(o));
	o.kind = OBS_GET;
	o.g = c;
	o.found = rc == 0;
	o.g.v = rc == 0 ? bs_dup(v.data, v.size) : bs_dup("", 0);
	o.raw = rc == 0 ? v.data : NULL;
	observe(t, &o);
}

/* The code a put (value != NULL) or delete of c should return, from the
 * documented limits and the documented index rule (an index row key over
 * the limits is MRTX_ETOOBIG). */
static int write_want(mt *t, const cell *c, const bs *value)
{
	int rc;

	if (!W.exists[c->tab])
		return MRTX_ENOTABLE;
	if ((rc = key_rc(c->row, c->q.n)))
		return rc;
	for (int d = 0; value && d < t->snap; d++) {
		const cell *old;
		cellv v;

		if (IDX[d].tab != c->tab || IDX[d].fid != c->fid || !bs_eq(IDX[d].q, c->q) ||
		    idx_fits(*value, c->row))
			continue;
		view_of(&v, t, t->nops);
		old = cv_find(&v, c->tab, c->row, c->fid, c->q);
		rc = !old || !bs_eq(old->v, *value) ? MRTX_ETOOBIG : 0;
		cv_free(&v);
		if (rc)
			return rc;
	}
	return 0;
}

void op_write(mt *t, int kind)
{
	cell c = pick_cell(t, 0);
	int want, rc;

	W.n_put++;
	if (!t->doomed && t->snap < 0)
		t->snap = W.nidx; /* declarations are taken by the first write */
	if (kind == MOP_PUT)
		c.v = rnd_value(W.op);
	if (kind == MOP_DELROW)
		want = !W.exists[c.tab] ? MRTX_ENOTABLE : key_rc(c.row, 0);
	else
		want = write_want(t, &c, kind == MOP_PUT ? &c.v : NULL);
	if (t->doomed)
		want = MRTX_EBADTXN;
	if (kind == MOP_PUT)
		rc = mrtx_put(t->h, TABS[c.tab].name, MB(c.row), TABS[c.tab].fams[c.fid], MB(c.q), MB(c.v));
	else if (kind == MOP_DEL)
		rc = mrtx_delete(t->h, TABS[c.tab].name, MB(c.row), TABS[c.tab].fams[c.fid], MB(c.q));
	else
		rc = mrtx_delete_row(t->h, TABS[c.tab].name, MB(c.row));
	tr("t%d %s %s %s %s:%s = %s -> %s", t->id, kind == MOP_PUT ? "put" : kind == MOP_DEL ? "del" : "delrow",
	   TABS[c.tab].name, bs_show(c.row), TABS[c.tab].fams[c.fid], bs_show(c.q),
	   kind == MOP_PUT ? bs_show(c.v) : "", mrtx_strerror(rc));
	if (rc == MRTX_CONFLICT && !t->doomed) {
		/* index maintenance reads the old value; its conflict dooms */
		check_rc(kind == MOP_DELROW ? F_DELROW : F_PUT, rc, ANYC, TABS[c.tab].name);
		got_conflict(t, "a write (index maintenance read)");
		return;
	}
	check_rc(kind == MOP_DELROW ? F_DELROW : F_PUT, rc, C(want),
	         t->doomed ? "after the transaction was doomed" : TABS[c.tab].name);
	if (rc == 0 && !t->doomed)
		log_op(t, kind, &c);
}

static bs rnd_bound(int rowb)
{
	if (rnd(100) < 55)
		return bs_dup("", 0);
	if (chance(15)) /* at the limits: a row of 495 / 496, a qualifier of 511 / 512 */
		return rnd_alpha((rowb ? MRTX_MAX_ROW : MRTX_MAX_KEY) + (size_t)rnd(2) - rnd(2) * 60);
	return rnd_alpha(1 + rnd(3));
}

static void op_scan(mt *t)
{
	mrtx_scan_spec sp;
	mrtx_scanner *s = NULL;
	mrtx_cell mc;
	size_t stop = rnd(5) == 0 ? rnd(6) : SIZE_MAX;
	unsigned want = C(0);
	obs o;
	int rc, errs = 0;

	W.n_scan++;
	note_snapshot(t);
	memset(&o, 0, sizeof(o));
	o.kind = OBS_SCAN;
	o.sp.tab = W.nidx && rnd(8) == 0 ? IDX[rnd((uint32_t)W.nidx)].itab : (int)rnd(NDATA);
	o.sp.start = rnd_bound(1);
	o.sp.end = rnd_bound(1);
	o.sp.fid = rnd(2) ? (int)rnd((uint32_t)TABS[o.sp.tab].nfam) : -1;
	if (o.sp.fid >= 0) {
		o.sp.qs = rnd_bound(0);
		o.sp.qe = rnd_bound(0);
	}
	o.sp.reverse = (int)rnd(2);
	o.sp.limit = rnd(3) ? 0 : 1 + rnd(3);
	sp = (mrtx_scan_spec){ TABS[o.sp.tab].name, MB(o.sp.start), MB(o.sp.end),
		               o.sp.fid >= 0 ? TABS[o.sp.tab].fams[o.sp.fid] : NULL, MB(o.sp.qs),
		               MB(o.sp.qe), o.sp.reverse, o.sp.limit };
	if (!W.exists[o.sp.tab])
		want = C(MRTX_ENOTABLE);
	else if (o.sp.start.n > MRTX_MAX_ROW || o.sp.end.n > MRTX_MAX_ROW || o.sp.qs.n > MRTX_MAX_KEY ||
	         o.sp.qe.n > MRTX_MAX_KEY)
		want = C(MRTX_ETOOBIG);
	else if (o.sp.qs.n > MRTX_MAX_KEY - 17 || o.sp.qe.n > MRTX_MAX_KEY - 17)
		want = C(0) | C(MRTX_ETOOBIG); /* over the qualifier limit: either reading */
	if (t->doomed)
		want = C(MRTX_EBADTXN);
	rc = mrtx_scan_open(t->h, &sp, &s);
	tr("t%d scan %s [%s, %s) fam %d q[%s, %s) rev %d limit %zu stop %zu -> %s", t->id,
	   sp.table, bs_show(o.sp.start), bs_show(o.sp.end), o.sp.fid, bs_show(o.sp.qs),
	   bs_show(o.sp.qe), o.sp.reverse, o.sp.limit, stop, mrtx_strerror(rc));
	if (!check_rc(F_SOPEN, rc, want, "scan_open") || rc)
		return;
	while (o.got.n < stop && ((rc = mrtx_scan_next(s, &mc)) == 0 ||
	                          (rc != MRTX_NOTFOUND && rc != MRTX_CONFLICT && !errs++))) {
		if (rc) { /* read on after a failure: the rest must still be right */
			check_rc(F_SNEXT, rc, 0, "scan_next");
			t->scanfail = 1;
			tr("t%d   ... %s after %zu cells; reading on", t->id, mrtx_strerror(rc), o.got.n);
			continue;
		}
		cell c = { o.sp.tab, fid_of(o.sp.tab, mc.family), bs_dup(mc.row.data, mc.row.size),
			   bs_dup(mc.qualifier.data, mc.qualifier.size),
			   bs_dup(mc.value.data, mc.value.size) };

		if (c.fid < 0) {
			viol("unexpected", "scan returned family %s", mc.family ? mc.family : "NULL");
			break;
		}
		cv_push(&o.got, &c);
	}
	o.ended = rc == MRTX_NOTFOUND;
	tr("t%d   ... %zu cells, %s", t->id, o.got.n, o.got.n == stop ? "stopped" : mrtx_strerror(rc));
	if (o.ended) { /* the end stays the end */
		rc = mrtx_scan_next(s, &mc);
		check_rc(F_SNEXT, rc, C(MRTX_NOTFOUND), "scan_next after the end");
	}
	mrtx_scan_close(s);
	if (o.got.n == stop || o.ended) {
		observe(t, &o);
		return;
	}
	check_rc(F_SNEXT, rc, C(MRTX_CONFLICT), "scan_next");
	if (rc == MRTX_CONFLICT)
		got_conflict(t, "mrtx_scan_next");
	cv_free(&o.got);
}

int hit_cb(const mrtx_index_hit *h, void *p)
{
	struct hitctx *x = p;
	obs *o = x->o;
	mhit m;

	if (o->nhits == x->stop)
		return 99;
	memset(&m, 0, sizeof(m));
	m.v = bs_dup(h->value.data, h->value.size);
	m.row = bs_dup(h->row.data, h->row.size);
	for (size_t i = 0; i < h->ncells && i < MIDX_MAXCL; i++) {
		m.cfid[i] = fid_of(IDX[o->ix].tab, h->cells[i].family);
		m.cq[i] = bs_dup(h->cells[i].qualifier.data, h->cells[i].qualifier.size);
		m.cv[i] = bs_dup(h->cells[i].value.data, h->cells[i].value.size);
		x->bad |= !bs_eq(bs_dup(h->cells[i].row.data, h->cells[i].row.size), m.row);
	}
	m.ncells = (int)h->ncells;
	x->bad |= h->ncells > MIDX_MAXCL;
	o->hits = realloc(o->hits, (o->nhits + 1) * sizeof(mhit));
	assert_non_null(o->hits);
	o->hits[o->nhits++] = m;
	return 0;
}

static bs rnd_value_for(int d)
{
	if (rnd(2)) {
		for (size_t i = 0, k = rnd((uint32_t)W.data.n + 1); i < W.data.n; i++) {
			const cell *c = &W.data.c[(i + k) % W.data.n];

			if (c->tab == IDX[d].tab && c->fid == IDX[d].fid && bs_eq(c->q, IDX[d].q))
				return c->v;
		}
	}
	return rnd(5) ? rnd_alpha(rnd(3)) : bs_dup("v", 1);
}

static void op_iscan(mt *t)
{
	struct hitctx x;
	obs o;
	unsigned want = C(0);
	int rc, d = (int)rnd((uint32_t)W.nidx);

	if (W.ibroken[d])
		return;
	W.n_iscan++;
	note_snapshot(t);
	memset(&o, 0, sizeof(o));
	o.kind = OBS_ISCAN;
	o.ix = d;
	o.lookup = rnd(3) == 0;
	o.vs = rnd(3) || o.lookup ? rnd_value_for(d) : bs_dup("", 0);
	o.ve = !o.lookup && rnd(2) ? rnd_value_for(d) : bs_dup("", 0);
	o.reverse = !o.lookup && rnd(2);
	o.limit = !o.lookup && rnd(3) == 0 ? 1 + rnd(3) : 0;
	x = (struct hitctx){ &o, rnd(6) == 0 ? rnd(3) : SIZE_MAX, 0 };
	if (key_bytes1(o.vs).n > MRTX_MAX_ROW || key_bytes1(o.ve).n > MRTX_MAX_ROW)
		want |= C(MRTX_ETOOBIG); /* a bound that is no row key */
	if (t->doomed)
		want = C(MRTX_EBADTXN);
	if (o.lookup)
		rc = mrtx_index_lookup(t->h, IDX[d].name, MB(o.vs), hit_cb, &x);
	else
		rc = mrtx_index_scan(t->h, IDX[d].name, MB(o.vs), MB(o.ve), o.reverse, o.limit, hit_cb, &x);
	tr("t%d index %s %s [%s, %s) rev %d limit %zu stop %zu -> %s, %zu hits", t->id, IDX[d].name,
	   o.lookup ? "lookup" : "scan", bs_show(o.vs), bs_show(o.ve), o.reverse, o.limit, x.stop,
	   rc == 99 ? "stopped" : mrtx_strerror(rc), o.nhits);
	if (x.bad)
		viol("unexpected", "index hit with a cell of another row or too many cells");
	if (rc == 99 || rc == 0) {
		o.ended = rc == 0;
		if (!t->doomed && (want & C(0))) {
			observe(t, &o);
			return;
		}
	}
	if (rc != 99)
		check_rc(F_ISCAN, rc, want | (t->doomed ? 0 : C(MRTX_CONFLICT)), "index scan");
	if (rc == MRTX_CONFLICT && !t->doomed)
		got_conflict(t, "mrtx_index_scan");
	free(o.hits);
}

/* ------------------------------------------------------ commit and friends */

/* Check every observation of a transaction that committed, then apply it. */
void committed(mt *t, const char *what)
{
	char why[1024];
	cellv v = { 0 };
	size_t vk = SIZE_MAX;

	for (size_t i = 0; i < t->nob; i++) {
		if (t->ob[i].k != vk) {
			cv_free(&v);
			view_of(&v, t, vk = t->ob[i].k);
		}
		if (!obs_holds(&t->ob[i], &v, why, sizeof(why)) && !holds_at_snapshot(t)) {
			viol("serializability", "txn %d %s with MRTX_OK, but its observation %zu (after %zu "
			     "of its writes) differs from the committed state: %s", t->id, what, i,
			     t->ob[i].k, why);
			break;
		}
	}
	cv_free(&v);
	for (size_t i = 0; i < t->nops; i++) {
		cv_apply(&W.data, &t->ops[i]);
		W.recent[W.nrecent++ % 16] = t->ops[i].c;
	}
	if (t->nops)
		W.events++;
	W.n_ok++;
}

void drop_txn(int i)
{
	mt_free(W.open[i]);
	W.open[i] = W.open[--W.nopen];
}

void op_commit(int i)
{
	mt *t = W.open[i];
	int rc;

	check_lifetimes(t);
	rc = mrtx_commit(t->h);

	W.n_commit++;
	tr("t%d commit (%zu writes, %zu reads) -> %s", t->id, t->nops, t->nob, mrtx_strerror(rc));
	if (t->doomed)
		check_rc(F_COMMIT, rc, C(MRTX_CONFLICT), "doomed (by a conflict) transaction");
	else if (check_rc(F_COMMIT, rc, C(0) | C(MRTX_CONFLICT), "commit") && rc == MRTX_CONFLICT)
		got_conflict(t, "mrtx_commit");
	if (rc == MRTX_CONFLICT)
		W.n_conflict++;
	/* A two-phase commit (RADOS) that failed after its prewrite rolled its
	 * rows back; a row it wrote blind (never read) cannot get its exact
	 * old lock back, only STABLE(0, bound) (DESIGN §5.2), so a transaction
	 * that read that row sees a change and conflicts: an event. */
	if (rc == MRTX_CONFLICT && t->nops && tu_rados())
		W.events++;
	if (rc == 0)
		committed(t, "committed");
	drop_txn(i);
	if (rc == 0 && ++W.nverify % 25 == 0)
		verify_all("periodic");
}

mt *op_begin(void)
{
	mt *t = calloc(1, sizeof(*t));
	int rc;

	assert_non_null(t);
	rc = mrtx_begin(W.db, &t->h);
	check_rc(F_BEGIN, rc, C(0), "begin");
	assert_int_equal(rc, 0);
	t->id = ++W.next_id;
	mt_reset(t);
	if (rnd(10) == 0)
		check_rc(F_TTL, mrtx_txn_set_lock_ttl(t->h, 1 + rnd(60000)), C(0), "ttl");
	tr("t%d begin", t->id);
	W.open[W.nopen++] = t;
	return t;
}

/* mrtx_run: fn does a few operations through a model transaction. */
struct runctx {
	mt *t;
	int attempts, ret;
};

static int run_fn(mrtx_txn *txn, void *p)
{
	struct runctx *x = p;
	int n = 1 + (int)rnd(4);

	x->attempts++;
	mt_reset(x->t);
	x->t->h = txn;
	for (int i = 0; i < n && !x->t->doomed; i++) {
		uint32_t w = rnd(10);

		if (w < 4)
			op_get(x->t);
		else if (w < 8)
			op_write(x->t, MOP_PUT);
		else if (w < 9)
			op_write(x->t, MOP_DEL);
		else
			op_scan(x->t);
	}
	return x->t->doomed ? MRTX_CONFLICT : x->ret;
}

static void op_run(void)
{
	struct runctx x = { calloc(1, sizeof(mt)), 0, rnd(8) == 0 ? 7 : 0 };
	int rc;

	assert_non_null(x.t);
	W.n_run++;
	x.t->id = ++W.next_id;
	tr("t%d mrtx_run (fn returns %d)", x.t->id, x.ret);
	rc = mrtx_run(W.db, run_fn, &x, 3);
	tr("t%d mrtx_run -> %d after %d attempts", x.t->id, rc, x.attempts);
	if (x.attempts > 1 && W.events == x.t->begin_event)
		viol("spurious-conflict", "mrtx_run retried with nothing else committing%s",
		     x.t->scanfail ? " (a scan of it failed and then reported its end)" : "");
	if (x.ret ? rc != x.ret : rc != 0)
		viol("wrong-code", "mrtx_run returned %d (%s), fn returned %d", rc, mrtx_strerror(rc),
		     x.ret);
	if (rc == 0 && !x.ret)
		committed(x.t, "run by mrtx_run");
	mt_free(x.t);
}

/* ------------------------------------------------------------ error probes */

/* One bad call (model_probe.c), on an open transaction when there is one. */
static void op_probe(void)
{
	int p = (int)rnd(NPROBES);
	mrtx_txn *tmp = NULL;
	mt *t = NULL;

	W.n_probe++;
	for (int i = 0; i < W.nopen; i++)
		if (!W.open[i]->doomed)
			t = W.open[i];
	if (t && p >= 10 && p <= 17 && t->snap < 0)
		t->snap = W.nidx; /* a write call takes the declarations */
	if (!t)
		assert_int_equal(mrtx_begin(W.db, &tmp), 0);
	tr("probe %d on %s", p, t ? "an open txn" : "a fresh txn");
	model_probe(W.db, W.path, t ? t->h : tmp, W.nidx, p);
	mrtx_abort(tmp);
}

/* ---------------------------------------------------------------- driver */

static void run_seed(unsigned long seed, long nops)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	struct timespec t0, t1;
	int rc;

	memset(&W, 0, sizeof(W));
	W.seed = seed;
	rng_seed(seed);
	W.nops = nops;
	W.stop = getenv("MRTX_MODEL_STOP") && atoi(getenv("MRTX_MODEL_STOP"));
	W.trace = getenv("MRTX_MODEL_TRACE") && atoi(getenv("MRTX_MODEL_TRACE"));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	o.durability = MRTX_NOSYNC;
	o.map_size = MAP_SMALL;
	assert_non_null(W.db = tu_open_fresh("model", &W.path, &o));
	rc = mrtx_create_table(W.db, "ta", TABS[0].fams, 2);
	assert_int_equal(rc, 0);
	assert_int_equal(mrtx_create_table(W.db, "tb", TABS[1].fams, 3), 0);
	W.exists[0] = W.exists[1] = 1;
	for (W.op = 1; W.op <= nops; W.op++) {
		uint32_t w = rnd(1000);
		mt *t;

		if (W.op == 2600 && !tu_rados()) /* fixed points, so that a shorter run replays a
						    * longer one; RADOS has no map to fill */
			op_fill();
		if (W.nopen == 0 || (W.nopen < 3 && rnd(100) < 4)) {
			op_begin();
			continue;
		}
		t = W.open[rnd((uint32_t)W.nopen)];
		if (w < 280)
			op_get(t);
		else if (w < 520)
			op_write(t, MOP_PUT);
		else if (w < 590)
			op_write(t, MOP_DEL);
		else if (w < 630)
			op_write(t, MOP_DELROW);
		else if (w < 760)
			op_scan(t);
		else if (w < 800) {
			if (W.nidx)
				op_iscan(t);
		} else if (w < 900) {
			for (int i = 0; i < W.nopen; i++)
				if (W.open[i] == t)
					op_commit(i);
		} else if (w < 930) {
			for (int i = 0; i < W.nopen; i++)
				if (W.open[i] == t) {
					tr("t%d abort", t->id);
					check_lifetimes(t);
					mrtx_abort(t->h);
					drop_txn(i);
					break;
				}
		} else if (w < 945)
			op_run();
		else if (w < 985)
			op_probe();
		else if (w < 988)
			op_reopen();
		else if (w < 989) {
			if (rnd(2))
				op_stall();
		}
		else if (w < 996) {
			if (W.nidx < NIDX && W.op >= 300 + 600 * W.nidx)
				op_create_index(W.nidx); /* from op 300, 900, 1500 on */
			else if (W.nidx && rnd(4) == 0)
				op_create_index((int)rnd((uint32_t)W.nidx)); /* again: idempotent */
		} else
			op_create_table();
	}
	W.op = nops;
	while (W.nopen)
		op_commit(W.nopen - 1);
	verify_all("at the end");
	mrtx_close(W.db);
	tu_rmrf(W.path);
	free(W.path);
	cv_free(&W.data);
	pool_free_all();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "model seed %lu: %ld ops, %ld commits (%ld ok, %ld conflict), %ld mrtx_run, "
	        "%ld gets, %ld writes, %ld scans, %ld index scans, %ld probes, %ld reopens, %d indexes, "
	        "%ld stalls (%ld ELOCKED), %ld EFULL, %ld violations, %.2f s\n", seed, nops, W.n_commit,
	        W.n_ok, W.n_conflict, W.n_run, W.n_get, W.n_put, W.n_scan, W.n_iscan, W.n_probe,
	        W.n_reopen, W.nidx, W.n_stall, W.n_locked, W.n_full, W.viol,
	        (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	for (int i = 0; CATS[i]; i++)
		if (W.cat_seen[i])
			fprintf(stderr, "  seed %lu: %ld x [%s]\n", seed, W.cat_seen[i], CATS[i]);
}

static void test_model(void **state)
{
	const char *env = getenv("MRTX_MODEL_SEEDS"), *ops = getenv("MRTX_MODEL_OPS");
	char buf[1024], *save = NULL;
	long nops = ops ? atol(ops) : 3000, total = 0, nseeds = 0, bad = 0;

	(void)state;
	snprintf(buf, sizeof(buf), "%s", env && *env ? env : "1-6");
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		unsigned long lo = strtoul(tok, NULL, 0), hi = dash ? strtoul(dash + 1, NULL, 0) : lo;

		for (unsigned long s = lo; s <= hi; s++) {
			run_seed(s, nops);
			total += W.viol;
			bad += W.viol != 0;
			nseeds++;
		}
	}
	fprintf(stderr, "model: %ld seeds x %ld ops, %ld with violations, %ld violations\n", nseeds,
	        nops, bad, total);
	if (total)
		fail_msg("%ld model violations in %ld of %ld seeds (see MODEL VIOLATION above)", total,
		         bad, nseeds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
