/*
 * test_errmsg.c - what the tool makes of the library's messages
 * (tool_errmsg, tools/cli/util.c): the names of library functions and
 * types are dropped wherever a part of the message starts, a step said
 * twice is said once, and the user's own words (a store directory called
 * store_1, a table name) are left alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mrtx.h"
#include "storage/common.h"
#include "tools/cli/util.h"

/* tool_errmsg of a message the library set */
static const char *said(const char *msg)
{
	mrtx__seterr(MRTX_EINVAL, "%s", msg);
	return tool_errmsg(MRTX_EINVAL);
}

static void test_function_names_dropped(void **state)
{
	(void)state;
	assert_string_equal(said("mrtx_begin_at: timestamp 9 is later than the store's newest "
	                         "commit"),
	                    "timestamp 9 is later than the store's newest commit");
	assert_string_equal(said("mrtx_create_table2: family 'f' would keep at least 3"),
	                    "family 'f' would keep at least 3");
	/* inside a message that quotes another */
	assert_string_equal(said("prewrite: a row changed (mrtx_get: no such cell)"),
	                    "prewrite: a row changed (no such cell)");
	assert_string_equal(said("rados: rconn_read: object x: timed out"),
	                    "rados: object x: timed out");
	assert_string_equal(said("admin_row_lock: table 't': malformed"), "table 't': malformed");
	/* a type's field in parentheses */
	assert_string_equal(said("store s is full; reopen it with a larger map size "
	                         "(mrtx_options.map_size)"),
	                    "store s is full; reopen it with a larger map size");
}

static void test_step_said_once(void **state)
{
	(void)state;
	assert_string_equal(said("commit: commit: store s is open read-only"),
	                    "commit: store s is open read-only");
	assert_string_equal(said("mrtx_commit: commit: a condition failed"),
	                    "commit: a condition failed");
	/* the same word twice is not a prefix said twice */
	assert_string_equal(said("table 't': row 'a': a: b"), "table 't': row 'a': a: b");
}

static void test_user_words_kept(void **state)
{
	char dir[] = "/tmp/mrtx-errmsg.XXXXXX", cwd[4096];

	(void)state;
	/* a table or row named like a function is quoted, and stays */
	assert_string_equal(said("no table 'mrtx_log' in store s"), "no table 'mrtx_log' in store s");
	/* a relative store path that looks like a name */
	assert_non_null(mkdtemp(dir));
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(mkdir("store_1", 0700), 0);
	assert_string_equal(said("store_1: store format record malformed"),
	                    "store_1: store format record malformed");
	assert_string_equal(said("store_2: no such store"), "no such store"); /* not a path */
	assert_int_equal(rmdir("store_1"), 0);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(rmdir(dir), 0);
	/* no detail: the code's own words */
	mrtx__seterr(MRTX_NOTFOUND, "%s", "");
	assert_string_equal(tool_errmsg(MRTX_NOTFOUND), mrtx_strerror(MRTX_NOTFOUND));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_function_names_dropped),
		cmocka_unit_test(test_step_said_once),
		cmocka_unit_test(test_user_words_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
