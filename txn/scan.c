/*
 * scan.c - row-range scans merged with the transaction's buffered writes.
 *
 * The scanner walks two sorted sequences in step: the store's rows (fetched
 * in batches from the lock family, each row's lock and cells consistent)
 * and the buffered rows of the same table.  Batches come from the
 * transaction's view (snapread.c), where a stored row whose lock is not
 * STABLE is decided; on a store without views it is resolved (recovery)
 * and re-read before use.  Every stored row
 * passed over, visible or not, extends the range recorded for phantom
 * validation at commit (txn_validate): only what the scan actually covered
 * is validated, so stopping early does not conflict with later inserts.
 *
 * A scan observes every row it passes over, absent ones included: a row of
 * the covered range that the store did not return was absent.  Those
 * observations are kept as the covered extent itself (txn_in_scanned_range)
 * and they meet the transaction's other observations both ways:
 *   - a row first read after a scan covered it compares against "absent"
 *     (txn_observe), so a row inserted meanwhile dooms the transaction;
 *   - a row read present before a scan covers it and skips it contradicts
 *     the scan (cover_gap), and dooms it too.
 * Commit then validates the same per-row observations.
 *
 * Errors: MRTX_ELOCKED leaves the scanner where it was (the next call
 * retries the row); any other error is final for the scanner: every later
 * mrtx_scan_next returns it again, never a clean end.
 */
#include "txn_int.h"
#include "storage/versions.h"

#include <stdlib.h>
#include <string.h>

#define SCAN_BATCH 128

struct mrtx_scanner {
	mrtx_txn *txn;          /* NULL once the transaction ended */
	mrtx_scanner *sibling;  /* txn's open scanners */
	const store_table *t;
	scan_range *range;
	store_filter f;
	int current;            /* the table is newer than the transaction's view:
	                           batches read without it (and validated) */
	size_t limit, nrows_out;
	/* store side */
	store_row *batch;
	size_t nbatch, bi;
	int more;
	store_range next;
	/* current row's cells, and each one's commit timestamp (0: this
	 * transaction's own write); the arrays are the scanner's, reused row
	 * after row (mrtx_scan_next hands out copies of the cells) */
	mrtx_cell *cells;
	uint64_t *cts;
	size_t ncells, ci, ccap;
	int started;            /* mrtx_scan_next was called */
	uint64_t last_ts;       /* the timestamp of the cell returned last */
	int done;
	int err;                /* a failed step's error, returned from then on */
};

static int in_bounds(const scan_range *r, mrtx_bytes row)
{
	store_range rg = { r->start, 0, r->end };

	return !store_range_before(&rg, row) && !store_range_past(&rg, row);
}

/* The extent a range has covered so far: [lo, hi) with lo_excl = 0. */
static void range_extent(const scan_range *r, mrtx_bytes *lo, mrtx_bytes *hi,
                         int *hi_incl)
{
	*lo = r->start;
	*hi = r->end;
	*hi_incl = 0;
	if (r->exhausted)
		return;
	if (!r->reverse) {
		*hi = r->last;
		*hi_incl = 1;
	} else {
		*lo = r->last;
	}
}

/* Is row in the extent covered by a range of txn other than skip? */
static int in_scanned_range_but(const mrtx_txn *txn, const scan_range *skip,
                                const store_table *t, mrtx_bytes row)
{
	for (size_t i = 0; i < txn->nranges; i++) {
		const scan_range *r = txn->ranges[i];
		mrtx_bytes lo, hi;
		int incl;

		if (r == skip || r->t != t || (!r->exhausted && !r->any))
			continue;
		range_extent(r, &lo, &hi, &incl);
		if (lo.size && bytes_cmp(row, lo) < 0)
			continue;
		if (hi.size && (incl ? bytes_cmp(row, hi) > 0 : bytes_cmp(row, hi) >= 0))
			continue;
		return 1;
	}
	return 0;
}

int txn_in_scanned_range(const mrtx_txn *txn, const store_table *t, mrtx_bytes row)
{
	return in_scanned_range_but(txn, NULL, t, row);
}

/* First buffered row of t in scan order within the range. */
static trow *buf_first(mrtx_scanner *s)
{
	mrtx_txn *txn = s->txn;
	store_table fake;
	trow key, *r;

	if (!s->range->reverse) {
		key.t = s->t;
		key.row = s->range->start;
		r = txn_rows_nfind(txn, &key);
	} else if (s->range->end.size) {
		key.t = s->t;
		key.row = s->range->end;
		r = txn_rows_nfind(txn, &key);
		r = r ? RB_PREV(trow_tree, &txn->rows, r) : RB_MAX(trow_tree, &txn->rows);
	} else {
		memset(&fake, 0, sizeof(fake));
		fake.id = s->t->id + 1;
		key.t = &fake;
		key.row = MRTX_BYTES(NULL, 0);
		r = txn_rows_nfind(txn, &key);
		r = r ? RB_PREV(trow_tree, &txn->rows, r) : RB_MAX(trow_tree, &txn->rows);
	}
	return r;
}

/* Skip to a buffered row that has mutations and lies in range, or NULL. */
static trow *buf_settle(mrtx_scanner *s, trow *r)
{
	for (; r; r = s->range->reverse ? RB_PREV(trow_tree, &s->txn->rows, r) :
	                                  RB_NEXT(trow_tree, &s->txn->rows, r)) {
		if (r->t != s->t || !in_bounds(s->range, r->row))
			return NULL;
		if (r->mutated)
			return r;
	}
	return NULL;
}

/*
 * The next buffered row in scan order after the scan's position (the last
 * row it passed, or its start), looked up at each step: a write buffered
 * while the scan runs is seen if the scan has not passed its row yet.
 */
static trow *buf_next(mrtx_scanner *s)
{
	const scan_range *r = s->range;
	trow key, *b;

	if (RB_EMPTY(&s->txn->rows))
		return NULL;
	if (!r->any)
		return buf_settle(s, buf_first(s));
	key.t = s->t;
	key.row = r->last;
	b = txn_rows_nfind(s->txn, &key); /* first at or after last */
	if (!r->reverse) {
		if (b && b->t == s->t && bytes_cmp(b->row, r->last) == 0)
			b = b == s->txn->rows_max ? NULL : RB_NEXT(trow_tree, &s->txn->rows, b);
	} else {
		b = b ? RB_PREV(trow_tree, &s->txn->rows, b) : RB_MAX(trow_tree, &s->txn->rows);
	}
	return buf_settle(s, b);
}

int mrtx_scan_open(mrtx_txn *txn, const mrtx_scan_spec *spec, mrtx_scanner **out)
{
	const store_table *t;
	mrtx_scanner *s;
	scan_range *r;
	uint8_t fid = 0;
	int rc;

	mrtx__clearerr();
	TXN_CHECK_SETTLED(txn);
	if (!spec || !out || !spec->table)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_scan_open: spec, spec->table and out are "
		                    "required");
	if ((spec->qual_start.size || spec->qual_end.size) && !spec->family)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_scan_open: a qualifier range needs a family");
	if ((spec->start.size && !spec->start.data) || (spec->end.size && !spec->end.data) ||
	    (spec->qual_start.size && !spec->qual_start.data) ||
	    (spec->qual_end.size && !spec->qual_end.data))
		return mrtx__seterr(MRTX_EINVAL, "mrtx_scan_open: byte string with NULL data");
	if ((rc = store_table_find(txn->db->st, spec->table, &t)))
		return rc;
	if (spec->family && (rc = store_family_find(txn->db->st, t, spec->family, &fid)))
		return rc;
	/* Bounds are compared, never stored: any length up to the limits is a
	 * fine bound, whether or not a cell could have it as its key. */
	if (spec->start.size > MRTX_MAX_ROW || spec->end.size > MRTX_MAX_ROW ||
	    spec->qual_start.size > MRTX_MAX_KEY || spec->qual_end.size > MRTX_MAX_KEY)
		return mrtx__seterr(MRTX_ETOOBIG, "mrtx_scan_open: a row bound is over %u bytes "
		                    "or a qualifier bound over %u bytes", MRTX_MAX_ROW,
		                    MRTX_MAX_KEY);
	if (txn->nranges == txn->cranges) {
		size_t nc = txn->cranges ? txn->cranges * 2 : 4;
		scan_range **nr = mrtx__reallocarray(txn->ranges, nc, sizeof(*nr));

		if (!nr)
			return mrtx__seterr(MRTX_ENOMEM, "out of memory opening a scan");
		txn->ranges = nr;
		txn->cranges = nc;
	}
	if (!(s = mrtx__calloc(1, sizeof(*s))))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory opening a scan");
	if (!(r = arena_alloc(&txn->arena, sizeof(*r)))) {
		mrtx__free(s);
		return MRTX_ENOMEM;
	}
	memset(r, 0, sizeof(*r));
	r->t = t;
	r->reverse = !!spec->reverse;
	r->start = MRTX_BYTES(arena_dup(&txn->arena, spec->start.data, spec->start.size),
	                      spec->start.size);
	r->end = MRTX_BYTES(arena_dup(&txn->arena, spec->end.data, spec->end.size),
	                    spec->end.size);
	s->f.family = spec->family ? fid : -1;
	s->f.at = txn->at; /* (mrtx_begin_at: the versions at its timestamp) */
	s->f.qs = MRTX_BYTES(arena_dup(&txn->arena, spec->qual_start.data, spec->qual_start.size),
	                     spec->qual_start.size);
	s->f.qe = MRTX_BYTES(arena_dup(&txn->arena, spec->qual_end.data, spec->qual_end.size),
	                     spec->qual_end.size);
	if (!r->start.data || !r->end.data || !s->f.qs.data || !s->f.qe.data) {
		mrtx__free(s);
		return MRTX_ENOMEM;
	}
	txn->ranges[txn->nranges++] = r;
	s->txn = txn;
	s->t = t;
	s->range = r;
	s->limit = spec->limit_rows;
	s->more = 1;
	s->next.lo = r->start;
	s->next.hi = r->end;
	s->sibling = txn->scanners;
	txn->scanners = s;
	*out = s;
	return 0;
}

void mrtx_scan_close(mrtx_scanner *s)
{
	if (!s)
		return;
	if (s->txn) {
		mrtx_scanner **pp = &s->txn->scanners;

		while (*pp && *pp != s)
			pp = &(*pp)->sibling;
		if (*pp)
			*pp = s->sibling;
	}
	mrtx__free(s->cells);
	mrtx__free(s->cts);
	mrtx__free(s);
}

static int fetch_batch(mrtx_scanner *s)
{
	mrtx_txn *txn = s->txn;
	store_view *v;
	int rc;

	if ((rc = txn_view_get(txn, &v)))
		return rc;
	if (txn->snap_live && !s->current) { /* (fixed by the transaction's first read) */
		s->f.at = txn->snap_ts;
		s->f.live = 1;
	}
	if (s->f.at && !s->f.seen && (rc = txn_seen_use(txn, &s->f)))
		return rc;
	rc = store_scan_rows_in(txn->db->st, s->current ? NULL : v, s->t, &s->next,
	                        s->range->reverse, &s->f, SCAN_BATCH, &txn->arena, &s->batch,
	                        &s->nbatch, &s->more);
	if (rc == STORE_NOT_IN_VIEW && txn->at)
		return mrtx__seterr(MRTX_ENOTABLE, "table '%s' did not exist at timestamp %llu",
		                    s->t->name, (unsigned long long)txn->at);
	if (rc == STORE_NOT_IN_VIEW) {
		/* a table created after the view: read it as it is now, and
		 * validate at commit (snapread.c) */
		txn->must_validate = 1;
		s->current = 1;
		rc = store_scan_rows_in(txn->db->st, NULL, s->t, &s->next, s->range->reverse,
		                        &s->f, SCAN_BATCH, &txn->arena, &s->batch, &s->nbatch,
		                        &s->more);
	}
	if (rc || (rc = txn_seen_late(txn)))
		return rc;
	txn->view_used = 1;
	s->bi = 0;
	if (s->nbatch) {
		mrtx_bytes last = s->batch[s->nbatch - 1].row;

		if (!s->range->reverse) {
			s->next.lo = last;
			s->next.lo_excl = 1;
		} else {
			s->next.hi = last;
		}
	} else {
		s->more = 0;
	}
	return 0;
}

/*
 * Deferred observations.  A row a scan consumes is an observation (its
 * lock, or absent) the transaction's row tree must hold for everything
 * that compares against it later: point reads, other scans' gaps, commit's
 * validation.  Inserting every row of a long scan costs more than reading
 * it, and a read-only snapshot transaction (LMDB's view) never compares
 * them.  So a scan reading the view keeps the rows it consumes in its
 * range's pend list instead, when nothing could compare against them yet:
 * the row is STABLE, not in the tree (past its largest or smallest row, in
 * scan order) and in no range scanned before.  Every other entry point
 * (TXN_CHECK_SETTLED), another scanner's mrtx_scan_next, and a commit that
 * validates or writes put them into the tree first, exactly as the scan
 * would have (txn_observe_at on a fresh row, which this one is: nothing
 * else touched the tree meanwhile).  Meanwhile the scan's own steps look
 * only beyond its last row, where no pending row lies.
 */
int txn_scan_settle(mrtx_txn *txn)
{
	scan_range *r = txn->pend;

	if (!r)
		return 0;
	/* (an allocation that fails leaves the list whole: the next call
	 * goes on, skipping the rows already in) */
	for (size_t i = 0; i < r->npend; i++)
		for (size_t j = 0; j < r->pend[i].n; j++) {
			const store_row *o = &r->pend[i].rows[j];
			trow *tr;
			int rc;

			if ((rc = txn_row(txn, r->t, o->row, 1, &tr)))
				return rc;
			if (tr->lock_known)
				continue; /* (inserted by a call that failed later) */
			tr->lock = o->has_lock ? o->lock : MRTX_BYTES(NULL, 0);
			tr->has_lock = !!o->has_lock;
			tr->lock_known = 1;
			tr->read = 1;
		}
	r->npend = 0;
	txn->pend = NULL;
	return 0;
}

/* Can the observation of sr, STABLE, wait in s's pend list? */
static int can_defer(const mrtx_scanner *s, const store_row *sr)
{
	mrtx_txn *txn = s->txn;
	trow key;

	if (!txn->view || s->current || txn->snap_live || (txn->pend && txn->pend != s->range))
		return 0;
	if (!RB_EMPTY(&txn->rows)) {
		key.t = s->t;
		key.row = sr->row;
		if (!s->range->reverse ? trow_cmp(&key, txn->rows_max) <= 0 :
		                         trow_cmp(&key, txn->rows_min) >= 0)
			return 0;
	}
	/* (not s's own range: sr lies beyond the extent it covered so far,
	 * the store returning rows in scan order) */
	return !in_scanned_range_but(txn, s->range, s->t, sr->row);
}

static int defer_obs(mrtx_scanner *s, const store_row *sr)
{
	scan_range *r = s->range;
	struct scan_obs *last = r->npend ? &r->pend[r->npend - 1] : NULL;

	if (last && last->rows + last->n == sr) {
		last->n++; /* (the row after the run's last in the same batch) */
	} else {
		if (!(r->pend = store_arr_grow(&s->txn->arena, r->pend, r->npend, &r->cpend,
		                               sizeof(*r->pend))))
			return MRTX_ENOMEM;
		r->pend[r->npend++] = (struct scan_obs){ sr, 1 };
	}
	s->txn->pend = r;
	return 0;
}

/* Make batch[bi] STABLE (resolving a foreign lock) and record it as seen. */
static int consume_stored(mrtx_scanner *s, store_row *sr)
{
	mrtx_txn *txn = s->txn;
	uint8_t state, id[LOCK_TXNID_SIZE];
	int rc;

	if ((rc = lockio_peek(txn->db->st, s->t, sr->lock, &state, id)))
		return rc;
	/* The batch came from the transaction's view: decide the lock there;
	 * without views, settle it and read the row again. */
	if (state != LOCK_STABLE &&
	    (rc = txn->view && !s->current ? txn_snap_decide(txn, s->t, &s->f, sr) :
	                                     txn_read_row(txn, s->t, sr->row, &s->f, sr)))
		return rc;
	if (state == LOCK_STABLE && can_defer(s, sr))
		rc = defer_obs(s, sr);
	else if ((state != LOCK_STABLE || !(rc = txn_snap_late(txn, s->t, sr))))
		rc = txn_observe(txn, s->t, sr->row, sr->has_lock, sr->lock);
	if (rc)
		return rc;
	s->range->last = sr->row;
	s->range->any = 1;
	return 0;
}

/*
 * Rows of the gap [lo, hi] (bounds of size 0 are open; *_incl say whether a
 * bound itself is in the gap) were absent from the store when the scan
 * passed them.  A row this transaction saw present contradicts that.
 * Keeps I11 (DESIGN §10).
 */
static int check_gap(mrtx_scanner *s, mrtx_bytes lo, int lo_incl, mrtx_bytes hi, int hi_incl)
{
	mrtx_txn *txn = s->txn;
	trow key, *r;

	if (RB_EMPTY(&txn->rows))
		return 0;
	key.t = s->t;
	key.row = lo;
	for (r = txn_rows_nfind(txn, &key); r && r->t == s->t;
	     r = r == txn->rows_max ? NULL : RB_NEXT(trow_tree, &txn->rows, r)) {
		int c;

		if (lo.size && !lo_incl && bytes_cmp(r->row, lo) == 0)
			continue;
		if (hi.size && ((c = bytes_cmp(r->row, hi)) > 0 || (c == 0 && !hi_incl)))
			break;
		if (r->lock_known && r->has_lock && !r->stale) {
			/* (a stale row, read at a live snapshot: it may well have
			 * been absent then) */
			txn->doom = MRTX_CONFLICT;
			return mrtx__seterr(MRTX_CONFLICT, "table '%s': a scan found absent a row "
			                    "this transaction read earlier (a concurrent commit "
			                    "changed it)", s->t->name);
		}
	}
	return 0;
}

/*
 * The scan moves its covered extent on to `to` (inclusive when to_incl:
 * `to` is not a stored row), or to the end of its range (at_end).  The
 * rows in between were absent.
 */
static int cover_gap(mrtx_scanner *s, mrtx_bytes to, int to_incl, int at_end)
{
	const scan_range *r = s->range;
	if (!r->reverse)
		return check_gap(s, r->any ? r->last : r->start, !r->any,
		                 at_end ? r->end : to, at_end ? 0 : to_incl);
	return check_gap(s, at_end ? r->start : to, at_end ? 1 : to_incl,
	                 r->any ? r->last : r->end, 0);
}

static int cell_visible(const mrtx_scanner *s, const bcell *c)
{
	mrtx_bytes q = MRTX_BYTES(c->data, c->qlen);

	if (c->kind != STORE_MUT_PUT)
		return 0;
	if (s->f.family < 0)
		return 1;
	return c->fid == s->f.family && (!s->f.qs.size || bytes_cmp(q, s->f.qs) >= 0) &&
	       (!s->f.qe.size || bytes_cmp(q, s->f.qe) < 0);
}

/* Merge stored cells of sr (may be NULL) with buffered row b (may be NULL). */
static int build_row(mrtx_scanner *s, const store_row *sr, const trow *b)
{
	size_t ns = (sr && !(b && b->del_row)) ? sr->ncells : 0, i = 0, k = 0;
	bcell *c = b ? RB_MIN(bcell_tree, (struct bcell_tree *)&b->cells) : NULL;
	mrtx_bytes row = sr ? sr->row : b->row;

	size_t cap = MRTX_MAX(ns + (b ? b->ncells : 0), 1);
	uint32_t vmax = s->f.versions > 1 ? s->f.versions : 1;

	s->ncells = s->ci = 0;
	if (cap > s->ccap) {
		mrtx_cell *nc = mrtx__reallocarray(s->cells, cap, sizeof(*nc));
		uint64_t *nt;

		if (!nc)
			return mrtx__seterr(MRTX_ENOMEM, "out of memory scanning a row");
		s->cells = nc;
		if (!(nt = mrtx__reallocarray(s->cts, cap, sizeof(*nt))))
			return mrtx__seterr(MRTX_ENOMEM, "out of memory scanning a row");
		s->cts = nt;
		s->ccap = cap;
	}
	while (i < ns || c) {
		const store_cell *sc = i < ns ? &sr->cells[i] : NULL;
		int cmp;

		if (sc && c) {
			cmp = sc->fid != c->fid ? (sc->fid < c->fid ? -1 : 1) :
			      bytes_cmp(sc->qual, MRTX_BYTES(c->data, c->qlen));
		} else {
			cmp = sc ? -1 : 1;
		}
		if (cmp < 0) {
			s->cts[k] = sc->ts;
			s->cells[k++] = (mrtx_cell){ row, s->t->families[sc->fid], sc->qual,
			                             sc->value };
			i++;
			continue;
		}
		if (cell_visible(s, c)) {
			s->cts[k] = 0;
			s->cells[k++] = (mrtx_cell){ row, s->t->families[c->fid],
			                             MRTX_BYTES(c->data, c->qlen),
			                             MRTX_BYTES(c->data + c->qlen, c->vlen) };
		}
		if (cmp == 0) {
			/* the stored versions of the cell this transaction wrote:
			 * a put comes first and keeps the newest vmax - 1 of them
			 * (mrtx_get_versions' rule), a delete none */
			uint32_t kept = c->kind == STORE_MUT_PUT && cell_visible(s, c) ? 1 : 0;
			uint8_t fid = sr->cells[i].fid;
			mrtx_bytes q = sr->cells[i].qual;

			while (i < ns && sr->cells[i].fid == fid &&
			       bytes_cmp(sr->cells[i].qual, q) == 0) {
				if (kept && kept < vmax) {
					s->cts[k] = sr->cells[i].ts;
					s->cells[k++] = (mrtx_cell){ row, s->t->families[fid],
					                             sr->cells[i].qual,
					                             sr->cells[i].value };
					kept++;
				}
				i++;
			}
		}
		c = RB_NEXT(bcell_tree, (struct bcell_tree *)&b->cells, c);
	}
	s->ncells = k;
	return 0;
}

static int next_row(mrtx_scanner *s)
{
	int rev = s->range->reverse, rc;

	for (;;) {
		store_row *sr = NULL;
		trow *b = buf_next(s);
		int cmp;

		if (s->bi == s->nbatch && s->more && (rc = fetch_batch(s)))
			return rc;
		if (s->bi < s->nbatch)
			sr = &s->batch[s->bi];
		if (!sr && !b) {
			if ((rc = cover_gap(s, MRTX_BYTES(NULL, 0), 0, 1)))
				return rc;
			s->range->exhausted = 1;
			return MRTX_NOTFOUND;
		}
		/* cmp < 0: the stored row comes first in scan order.  Only the
		 * byte comparison flips for reverse scans: a missing side always
		 * loses (flipping it too took a NULL buffered row). */
		cmp = !sr ? 1 : !b ? -1 : bytes_cmp(sr->row, b->row);
		if (rev && sr && b)
			cmp = -cmp;
		if ((rc = cmp <= 0 ? cover_gap(s, sr->row, 0, 0) : cover_gap(s, b->row, 1, 0)))
			return rc;
		if (cmp <= 0) {
			if ((rc = consume_stored(s, sr)))
				return rc;
			s->bi++;
		}
		if (cmp > 0) {
			/* A buffered row before any stored one: the scan has passed
			 * over the store up to here too (no stored row lies between),
			 * so the validated range must reach it. */
			s->range->last = b->row;
			s->range->any = 1;
		}
		if ((rc = build_row(s, cmp <= 0 ? sr : NULL, cmp >= 0 ? b : NULL)))
			return rc;
		if (s->ncells)
			return 0;
	}
}

void txn_scan_current(mrtx_scanner *s)
{
	s->current = 1;
}

int mrtx_scan_versions(mrtx_scanner *s, uint32_t max)
{
	mrtx__clearerr();
	if (!s || max == 0)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_scan_versions: a scanner and at least one "
		                    "version are required");
	if (!s->txn)
		return mrtx__seterr(MRTX_EBADTXN, "mrtx_scan_versions: the scanner's transaction "
		                    "has ended");
	if (s->started)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_scan_versions: the scan has started "
		                    "(call it before the first mrtx_scan_next)");
	if (max > 1 && !store_has(s->txn->db->st, STORE_CAP_VERSIONS))
		return mrtx__seterr(MRTX_ENOTSUP, "mrtx_scan_versions: store %s keeps one version "
		                    "of each cell (a RADOS store of format 3 or older)",
		                    store_path(s->txn->db->st));
	s->f.versions = max;
	return 0;
}

uint64_t mrtx_scan_ts(const mrtx_scanner *s)
{
	return s ? s->last_ts : 0;
}

void txn_detach_scanners(mrtx_txn *txn)
{
	for (mrtx_scanner *s = txn->scanners; s; s = s->sibling)
		s->txn = NULL;
	txn->scanners = NULL;
}

int mrtx_scan_next(mrtx_scanner *s, mrtx_cell *cell)
{
	int rc;

	mrtx__clearerr();
	if (!s || !cell)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_scan_next: scanner and cell are required");
	if (!s->txn)
		return mrtx__seterr(MRTX_EBADTXN, "mrtx_scan_next: the scanner's transaction "
		                    "has ended; only mrtx_scan_close is allowed");
	TXN_CHECK(s->txn);
	if (s->txn->pend && s->txn->pend != s->range && (rc = txn_scan_settle(s->txn)))
		return rc;
	s->started = 1;
	if (s->err)
		return mrtx__seterr(s->err, "mrtx_scan_next: an earlier call failed (%s); the "
		                    "scan cannot continue", mrtx_strerror(s->err));
	while (s->ci == s->ncells) {
		if (s->done || (s->limit && s->nrows_out == s->limit))
			return MRTX_NOTFOUND;
		rc = next_row(s);
		if (rc == MRTX_NOTFOUND)
			s->done = 1;
		else if (rc && rc != MRTX_ELOCKED)
			s->err = rc;
		if (rc)
			return rc;
		s->nrows_out++;
	}
	s->last_ts = s->cts[s->ci];
	*cell = s->cells[s->ci++];
	return 0;
}
