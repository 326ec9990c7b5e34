/*
 * txn_fixture.h - what the transaction tests (test_txn.c, test_txn_commit.c,
 * test_txn_input.c) share: each test gets a fresh store with tables t1
 * (families f and g) and t2 (family f); checks of one cell, of one read
 * in a transaction and of one scan.
 */
#ifndef MRTX_TXN_FIXTURE_H
#define MRTX_TXN_FIXTURE_H

#include "testutil.h"
#include "storage/keyenc.h"
#include "txn/admin_test.h"
#include "storage/lmdb/lmdb_seal.h"

#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define B(s) MRTX_CSTR(s)
#define NONE MRTX_BYTES(NULL, 0)

typedef struct fx {
	mrtx_db *db;
	char *path;
} fx;

static inline int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));

	if (!f || !(f->db = tu_open_fresh("txn", &f->path, NULL)))
		return -1;
	if (tu_table(f->db, "t1", "f", "g", NULL) || tu_table(f->db, "t2", "f", NULL))
		return -1;
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	fx *f = *state;

	mrtx_close(f->db);
	tu_rmrf(f->path);
	free(f->path);
	free(f);
	return 0;
}

static inline void expect_cell(mrtx_db *db, const char *t, const char *row, const char *fam,
                        const char *q, const char *want)
{
	int rc;

	if (!tu_cell_is(db, t, B(row), fam, B(q), want ? B(want) : NONE, &rc))
		fail_msg("%s/%s %s:%s: rc %d (%s), want %s", t, row, fam, q, rc,
		         mrtx_strerror(rc), want ? want : "absent");
}

static inline int get_eq(mrtx_txn *txn, const char *t, const char *row, const char *fam,
                  const char *q, const char *want)
{
	mrtx_bytes v;
	int rc = mrtx_get(txn, t, B(row), fam, B(q), &v);

	if (!want)
		return rc == MRTX_NOTFOUND;
	return rc == MRTX_OK && v.size == strlen(want) && memcmp(v.data, want, v.size) == 0;
}

static inline int scan_count(mrtx_txn *txn, const char *t, const char *start, const char *end,
                      size_t limit, int *rows_out)
{
	mrtx_scan_spec sp;
	mrtx_scanner *s;
	mrtx_cell c;
	int rc, n = 0;

	memset(&sp, 0, sizeof(sp));
	sp.table = t;
	sp.start = B(start);
	sp.end = B(end);
	sp.limit_rows = limit;
	if ((rc = mrtx_scan_open(txn, &sp, &s)))
		return rc;
	while ((rc = mrtx_scan_next(s, &c)) == MRTX_OK)
		n++;
	mrtx_scan_close(s);
	*rows_out = n;
	return rc == MRTX_NOTFOUND ? 0 : rc;
}

#endif
