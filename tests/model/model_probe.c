/*
 * model_probe.c - the error probes of tests/model/test_model.c: one bad call of
 * the public API at a time (NULL handles and arguments, empty and oversized
 * rows, keys and values one past the limits, unknown tables, families and
 * indexes, conflicting declarations, a scanner outliving its transaction),
 * each checked against the exact code mrtx.h documents for it.
 */
#include "model_ref.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int stop_cb(const char *name, void *p)
{
	(void)name;
	(void)p;
	return 5;
}

static int istop_cb(const mrtx_index_spec *s, void *p)
{
	(void)s;
	(void)p;
	return 3;
}

static int run_cb(mrtx_txn *txn, void *p)
{
	(void)txn;
	(void)p;
	return 0;
}

static int nohit_cb(const mrtx_index_hit *h, void *p)
{
	(void)h;
	(void)p;
	return 0;
}

/* One bad call, chosen at random, with the exact code it must return.  A
 * failed call leaves the transaction as it was, so probes use an open one. */
void model_probe(mrtx_db *db, const char *path, mrtx_txn *h, int nidx, int p)
{
	static const char *const dup[] = { "f", "f" }, *const bad[] = { "x y" };
	static const char *many[256];
	static uint8_t *huge; /* MRTX_MAX_VALUE + 1 bytes, allocated once */
	mrtx_txn *tmp = NULL;
	mrtx_bytes v, row = MRTX_CSTR("r");
	mrtx_scanner *s = NULL;
	mrtx_scan_spec sp;
	mrtx_cell c;
	mrtx_index_spec is;
	mrtx_column cols[MIDX_MAXCL];
	mrtx_key k;
	char name[80];
	const char *const *fl;
	size_t n;
	uint8_t big[600];

	memset(big, 'a', sizeof(big));
	memset(&sp, 0, sizeof(sp));
	sp.table = "ta";
	for (int i = 0; i < 256; i++)
		many[i] = TABS[1].fams[i % 3];
#define P(fn, call, want) check_rc(fn, (call), C(want), "probe " #call)
	switch (p) {
	case 0: P(F_GET, mrtx_get(NULL, "ta", row, "f", row, &v), MRTX_EINVAL); break;
	case 1: P(F_GET, mrtx_get(h, NULL, row, "f", row, &v), MRTX_EINVAL); break;
	case 2: P(F_GET, mrtx_get(h, "nope", row, "f", row, &v), MRTX_ENOTABLE); break;
	case 3: P(F_GET, mrtx_get(h, "ta", row, "h", row, &v), MRTX_ENOFAMILY); break;
	case 4: P(F_GET, mrtx_get(h, "ta", row, NULL, row, &v), MRTX_EINVAL); break;
	case 5: P(F_GET, mrtx_get(h, "ta", row, "f", row, NULL), MRTX_EINVAL); break;
	case 6: P(F_GET, mrtx_get(h, "ta", MRTX_BYTES("", 0), "f", row, &v), MRTX_EINVAL); break;
	case 7: P(F_GET, mrtx_get(h, "ta", MRTX_BYTES(big, MRTX_MAX_ROW + 1), "f", row, &v), MRTX_ETOOBIG); break;
	case 8: P(F_GET, mrtx_get(h, "ta", row, "f", MRTX_BYTES(NULL, 3), &v), MRTX_EINVAL); break;
	case 9: P(F_PUT, mrtx_put(NULL, "ta", row, "f", row, row), MRTX_EINVAL); break;
	case 10:
		if (!huge && !(huge = calloc(1, MRTX_MAX_VALUE + 1)))
			abort();
		P(F_PUT, mrtx_put(h, "tb", row, "f", row, MRTX_BYTES(huge, MRTX_MAX_VALUE + 1)),
		  MRTX_ETOOBIG);
		break;
	case 11: P(F_PUT, mrtx_put(h, "tb", row, "f", row, MRTX_BYTES(NULL, 5)), MRTX_EINVAL); break;
	case 12: P(F_PUT, mrtx_put(h, "tb", row, "zz", row, row), MRTX_ENOFAMILY); break;
	case 13: P(F_PUT, mrtx_delete(h, "nope", row, "f", row), MRTX_ENOTABLE); break;
	case 14: P(F_PUT, mrtx_put(h, "tb", MRTX_BYTES(big, 500), "f", MRTX_BYTES(big, 7), row), MRTX_ETOOBIG); break;
	case 15: P(F_DELROW, mrtx_delete_row(h, "tb", MRTX_BYTES("", 0)), MRTX_EINVAL); break;
	case 16: P(F_DELROW, mrtx_delete_row(h, NULL, row), MRTX_EINVAL); break;
	case 17: P(F_DELROW, mrtx_delete_row(h, "tb", MRTX_BYTES(big, MRTX_MAX_ROW + 1)), MRTX_ETOOBIG); break;
	case 18: P(F_SOPEN, mrtx_scan_open(h, NULL, &s), MRTX_EINVAL); break;
	case 19: P(F_SOPEN, mrtx_scan_open(h, &sp, NULL), MRTX_EINVAL); break;
	case 20: sp.qual_start = row; P(F_SOPEN, mrtx_scan_open(h, &sp, &s), MRTX_EINVAL); break;
	case 21: sp.family = "h"; P(F_SOPEN, mrtx_scan_open(h, &sp, &s), MRTX_ENOFAMILY); break;
	case 22: sp.start = MRTX_BYTES(big, MRTX_MAX_ROW + 1); P(F_SOPEN, mrtx_scan_open(h, &sp, &s), MRTX_ETOOBIG); break;
	case 23: sp.family = "f"; sp.qual_end = MRTX_BYTES(big, MRTX_MAX_KEY + 1); P(F_SOPEN, mrtx_scan_open(h, &sp, &s), MRTX_ETOOBIG); break;
	case 24: sp.end = MRTX_BYTES(NULL, 2); P(F_SOPEN, mrtx_scan_open(h, &sp, &s), MRTX_EINVAL); break;
	case 25: sp.table = "nope"; P(F_SOPEN, mrtx_scan_open(h, &sp, &s), MRTX_ENOTABLE); break;
	case 26: P(F_SNEXT, mrtx_scan_next(NULL, &c), MRTX_EINVAL); break;
	case 27: { /* a scanner outliving its transaction */
		mrtx_txn *x;

		if (mrtx_begin(db, &x))
			abort();
		if (P(F_SOPEN, mrtx_scan_open(x, &sp, &s), 0)) {
			P(F_SNEXT, mrtx_scan_next(s, NULL), MRTX_EINVAL);
			mrtx_abort(x);
			P(F_SNEXT, mrtx_scan_next(s, &c), MRTX_EBADTXN);
		} else {
			mrtx_abort(x);
		}
		mrtx_scan_close(s);
		s = NULL;
		break;
	}
	case 28: P(F_COMMIT, mrtx_commit(NULL), MRTX_EINVAL); break;
	case 29: P(F_BEGIN, mrtx_begin(NULL, &tmp), MRTX_EINVAL); break;
	case 30: P(F_BEGIN, mrtx_begin(db, NULL), MRTX_EINVAL); break;
	case 31: P(F_TTL, mrtx_txn_set_lock_ttl(h, 0), MRTX_EINVAL); P(F_TTL, mrtx_txn_set_lock_ttl(NULL, 9), MRTX_EINVAL); break;
	case 32:
		P(F_CTABLE, mrtx_create_table(NULL, "tz", TABS[2].fams, 1), MRTX_EINVAL);
		P(F_CTABLE, mrtx_create_table(db, "t/z", TABS[2].fams, 1), MRTX_EINVAL);
		P(F_CTABLE, mrtx_create_table(db, "tz", TABS[2].fams, 0), MRTX_EINVAL);
		P(F_CTABLE, mrtx_create_table(db, "tz", dup, 2), MRTX_EINVAL);
		P(F_CTABLE, mrtx_create_table(db, "tz", bad, 1), MRTX_EINVAL);
		break;
	case 33:
		memset(name, 'n', MRTX_MAX_NAME + 1);
		name[MRTX_MAX_NAME + 1] = '\0';
		P(F_CTABLE, mrtx_create_table(db, name, TABS[2].fams, 1), MRTX_ETOOBIG);
		P(F_CTABLE, mrtx_create_table(db, "tz", many, 256), MRTX_ETOOBIG);
		P(F_CTABLE, mrtx_create_table(db, "ta", TABS[1].fams, 3), MRTX_EEXIST);
		P(F_CTABLE, mrtx_create_table(db, "ta", TABS[0].fams, 2), 0);
		break;
	case 34:
		P(F_FAMS, mrtx_table_families(db, "ta", NULL, &n), MRTX_EINVAL);
		P(F_FAMS, mrtx_table_families(db, "nope", &fl, &n), MRTX_ENOTABLE);
		P(F_TABLES, mrtx_tables(NULL, stop_cb, NULL), MRTX_EINVAL);
		if (mrtx_tables(db, stop_cb, NULL) != 5)
			viol("wrong-code", "mrtx_tables does not return fn's nonzero value");
		break;
	case 35:
		P(F_ISCAN, mrtx_index_scan(h, "nope", row, row, 0, 0, nohit_cb, NULL), MRTX_EINVAL);
		P(F_ISCAN, mrtx_index_lookup(h, "nope", row, nohit_cb, NULL), MRTX_EINVAL);
		P(F_ISCAN, mrtx_index_scan(h, "by_f", row, row, 0, 0, NULL, NULL), MRTX_EINVAL);
		P(F_INDEXES, mrtx_indexes(NULL, istop_cb, NULL), MRTX_EINVAL);
		if (mrtx_indexes(db, istop_cb, NULL) != (nidx ? 3 : 0))
			viol("wrong-code", "mrtx_indexes does not return fn's nonzero value");
		break;
	case 36:
		P(F_RUN, mrtx_run(NULL, run_cb, NULL, 1), MRTX_EINVAL);
		P(F_RUN, mrtx_run(db, NULL, NULL, 1), MRTX_EINVAL);
		P(F_FP, mrtx_failpoints_set("no.such.point=exit"), MRTX_EINVAL);
		P(F_FP, mrtx_failpoints_set("commit.after_point=explode"), MRTX_EINVAL);
		break;
	case 37:
		P(F_KEY, mrtx_key_bytes(NULL, row), MRTX_EINVAL);
		mrtx_key_init(&k);
		P(F_KEY, mrtx_key_bytes(&k, MRTX_BYTES(big, MRTX_MAX_KEY)), MRTX_ETOOBIG);
		P(F_KEY, mrtx_key_bytes(&k, row), MRTX_ETOOBIG); /* sticky */
		break;
	case 38: case 39: case 40: case 41: case 42: { /* bad index declarations */
		int d = (int)rnd(NIDX);

		is = spec_of(d, cols);
		if (p == 38)
			is.version = 99;
		else if (p == 39)
			is.table = "nope";
		else if (p == 40)
			is.family = "zz";
		else if (p == 41)
			is.index_table = is.table;
		else
			is.ncluster = 33;
		P(F_CINDEX, mrtx_create_index(db, &is), p == 39 ? MRTX_ENOTABLE : p == 40 ? MRTX_ENOFAMILY : MRTX_EINVAL);
		if (d < nidx) { /* a declared name with another spec / its table for another */
			is = spec_of(d, cols);
			is.qualifier = MRTX_CSTR("other");
			P(F_CINDEX, mrtx_create_index(db, &is), MRTX_EEXIST);
			is = spec_of(d, cols);
			is.name = "other";
			P(F_CINDEX, mrtx_create_index(db, &is), MRTX_EINVAL);
		}
		P(F_CINDEX, mrtx_create_index(NULL, &is), MRTX_EINVAL);
		break;
	}
	default: { /* the open transaction is unharmed by the failures above */
		mrtx_options o = MRTX_OPTIONS_INIT;
		mrtx_db *db2 = NULL;

		P(F_OPEN, mrtx_open(NULL, path, NULL), MRTX_EINVAL);
		P(F_OPEN, mrtx_open(&db2, NULL, NULL), MRTX_EINVAL);
		o.version = 99;
		P(F_OPEN, mrtx_open(&db2, path, &o), MRTX_EINVAL);
		if (tu_rados()) {
			/* no data file, no shared environment: any options open */
			if (P(F_OPEN, mrtx_open(&db2, path, NULL), 0))
				mrtx_close(db2);
			db2 = NULL;
		} else {
			snprintf(name, sizeof(name), "%s/data.mdb", path);
			P(F_OPEN, mrtx_open(&db2, name, NULL), MRTX_ENOTSTORE);
			if (db2)
				mrtx_close(db2);
			db2 = NULL;
			/* the same store again: one shared environment, whose
			 * durability (the model's MRTX_NOSYNC) a second open may
			 * not change */
			P(F_OPEN, mrtx_open(&db2, path, NULL), MRTX_EINVAL);
		}
		o = (mrtx_options)MRTX_OPTIONS_INIT;
		o.durability = MRTX_NOSYNC;
		if (P(F_OPEN, mrtx_open(&db2, path, &o), 0))
			mrtx_close(db2);
		break;
	}
	}
#undef P
	if (s)
		mrtx_scan_close(s);
}

