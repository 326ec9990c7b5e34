/*
 * test_radosdl.c - librados is loaded when the first RADOS store is opened
 * (storage/rados/dl/radosdl.c), never before.
 *
 * One process, in this order (the load happens once per process):
 *   - an LMDB store is made, written and read, and neither librados nor
 *     libceph-common is mapped afterwards (/proc/self/maps);
 *   - with the loader pointed at a library that does not exist (the test
 *     hook radosdl_set_library), opening a rados:// address fails with
 *     MRTX_ESTORE and a message naming the library, twice alike, and
 *     still nothing of Ceph is mapped;
 *   - the LMDB store still works.
 * Needs no cluster.  A real load is what every other RADOS test does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/rados/dl/radosdl.h"

#define ABSENT "libmrtx-test-absent.so.0"

static char *dir;
static mrtx_db *db;

/* 1 when a mapping of the process names lib */
static int mapped(const char *lib)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, lib) != NULL;
	fclose(f);
	return found;
}

static void test_lmdb_loads_no_ceph(void **state)
{
	char path[4096], buf[64];

	(void)state;
	dir = tu_fsdir("radosdl");
	snprintf(path, sizeof(path), "%s/s", dir);
	assert_non_null(db = tu_open(path, NULL));
	assert_int_equal(tu_table(db, "t", "f", NULL), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "r", "f:q", "v"), MRTX_OK);
	assert_int_equal(tu_get_str(db, "t", "r", "f:q", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "v");
	assert_false(mapped("librados"));
	assert_false(mapped("libceph-common"));
}

static void test_missing_librados(void **state)
{
	mrtx_options o = {.version = MRTX_OPTIONS_VERSION, .create = MRTX_CREATE_NEVER};
	mrtx_db *r = NULL;

	(void)state;
	radosdl_set_library(ABSENT);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(mrtx_open(&r, "rados://mrtx/radosdl?conf=/nonexistent.conf", &o),
		                 MRTX_ESTORE);
		assert_null(r);
		assert_non_null(strstr(mrtx_errmsg(), ABSENT));
		assert_non_null(strstr(mrtx_errmsg(), "cannot load"));
	}
	assert_int_equal(radosdl_load(), MRTX_ESTORE);
	assert_false(mapped("librados"));
	assert_false(mapped("libceph-common"));
}

static void test_lmdb_after(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(tu_put_str(db, "t", "r", "f:q", "w"), MRTX_OK);
	assert_int_equal(tu_get_str(db, "t", "r", "f:q", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "w");
	mrtx_close(db);
	tu_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lmdb_loads_no_ceph),
		cmocka_unit_test(test_missing_librados),
		cmocka_unit_test(test_lmdb_after),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
