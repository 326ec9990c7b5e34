/*
 * test_script.c - the line language of `mrtx txn` and `mrtx shell`
 * (tools/cli/script.c): words, quoting, escapes, and the errors for bad
 * syntax.  Pure parsing: no store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "tools/cli/script.h"

/* Parse s, which must succeed. */
static script_cmd parse_ok(const char *s)
{
	char err[160];
	script_cmd c;
	int rc = script_parse_line(s, strlen(s), &c, err, sizeof(err));

	if (rc != 0)
		fail_msg("'%s': rc %d: %s", s, rc, err);
	return c;
}

/* Parse s, which must fail with a message containing want. */
static void parse_bad(const char *s, const char *want)
{
	char err[160];
	script_cmd c;
	int rc = script_parse_line(s, strlen(s), &c, err, sizeof(err));

	if (rc != -1)
		fail_msg("'%s': rc %d, want -1", s, rc);
	if (!strstr(err, want))
		fail_msg("'%s': message '%s' lacks '%s'", s, err, want);
}

static void bytes_eq(mrtx_bytes b, const char *want, size_t n)
{
	assert_int_equal(b.size, n);
	assert_memory_equal(b.data, want, n);
}

#define BYTES_EQ(b, lit) bytes_eq((b), (lit), sizeof(lit) - 1)

static void test_plain(void **state)
{
	script_cmd c = parse_ok("put acct alice bal:v 90");

	(void)state;
	assert_int_equal(c.op, SCRIPT_PUT);
	assert_string_equal(c.table, "acct");
	BYTES_EQ(c.row, "alice");
	assert_string_equal(c.family, "bal");
	BYTES_EQ(c.qualifier, "v");
	BYTES_EQ(c.value, "90");
	script_cmd_free(&c);
	c = parse_ok(" \tget  acct\talice   bal:v \r");
	assert_int_equal(c.op, SCRIPT_GET);
	BYTES_EQ(c.row, "alice");
	BYTES_EQ(c.qualifier, "v");
	script_cmd_free(&c);
	c = parse_ok("scan acct");
	assert_int_equal(c.op, SCRIPT_SCAN);
	assert_int_equal(c.start.size, 0);
	assert_int_equal(c.end.size, 0);
	assert_int_equal(c.versions, 0);
	assert_int_equal(c.ts_range, 0);
	script_cmd_free(&c);
	c = parse_ok("scan acct a b --reverse --limit 2 --family f --versions 3 --time-range 5 9");
	assert_int_equal(c.versions, 3);
	assert_int_equal(c.ts_range, 1);
	assert_int_equal(c.ts_lo, 5);
	assert_int_equal(c.ts_hi, 9);
	assert_int_equal(c.limit, 2);
	script_cmd_free(&c);
	parse_bad("scan acct --time-range 9 5", "START 0 or more and END above it");
	parse_bad("scan acct --time-range 9", "needs START and END");
	parse_bad("scan acct --versions 0", "1 to 4294967295");
	c = parse_ok("abort");
	assert_int_equal(c.op, SCRIPT_ABORT);
	script_cmd_free(&c);
}

static void test_blank_and_comment(void **state)
{
	const char *lines[] = { "", "   ", "\t", "# put x", "  # 'unterminated", "\r" };
	script_cmd c;

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		c = parse_ok(lines[i]);
		assert_int_equal(c.op, SCRIPT_NONE);
		script_cmd_free(&c);
	}
	/* a '#' that does not start the line is an ordinary byte */
	c = parse_ok("put t r f:q #x");
	BYTES_EQ(c.value, "#x");
	script_cmd_free(&c);
}

static void test_double_quotes(void **state)
{
	script_cmd c = parse_ok("put t \"two words\" f:q \"a \\\"b\\\" \\\\ \\x41\"");

	(void)state;
	BYTES_EQ(c.row, "two words");
	BYTES_EQ(c.value, "a \"b\" \\ A");
	script_cmd_free(&c);
	/* a single quote inside double quotes is an ordinary byte */
	c = parse_ok("put t r f:q \"it's\"");
	BYTES_EQ(c.value, "it's");
	script_cmd_free(&c);
	/* \x22 decodes to a quote that does not end the quoted part */
	c = parse_ok("put t r f:q \"a\\x22 b\"");
	BYTES_EQ(c.value, "a\" b");
	script_cmd_free(&c);
}

static void test_single_quotes(void **state)
{
	/* no escapes at all inside single quotes */
	script_cmd c = parse_ok("put t 'a b' f:q '\\x41\\n\\\"'");

	(void)state;
	BYTES_EQ(c.row, "a b");
	BYTES_EQ(c.value, "\\x41\\n\\\"");
	script_cmd_free(&c);
	c = parse_ok("put t r f:q 'say \"hi\"'");
	BYTES_EQ(c.value, "say \"hi\"");
	script_cmd_free(&c);
}

static void test_adjacent_parts(void **state)
{
	script_cmd c = parse_ok("put t r cf:\"a b\" 'it'\\''s'");

	(void)state;
	assert_string_equal(c.family, "cf");
	BYTES_EQ(c.qualifier, "a b");
	BYTES_EQ(c.value, "it's");
	script_cmd_free(&c);
	c = parse_ok("put t r f:q 'it''s'");
	BYTES_EQ(c.value, "its");
	script_cmd_free(&c);
	c = parse_ok("put t x\"y\"'z'w f:'' a\"\"b");
	BYTES_EQ(c.row, "xyzw");
	BYTES_EQ(c.qualifier, "");
	BYTES_EQ(c.value, "ab");
	script_cmd_free(&c);
	/* quoted parts may hold the ':' of a column: split after decoding */
	c = parse_ok("get t r 'f:q:r'");
	assert_string_equal(c.family, "f");
	BYTES_EQ(c.qualifier, "q:r");
	script_cmd_free(&c);
}

static void test_empty_words(void **state)
{
	script_cmd c = parse_ok("put t r f:q \"\"");

	(void)state;
	BYTES_EQ(c.value, "");
	script_cmd_free(&c);
	c = parse_ok("put t r f:q ''");
	BYTES_EQ(c.value, "");
	script_cmd_free(&c);
	c = parse_ok("scan t '' b");
	BYTES_EQ(c.start, "");
	BYTES_EQ(c.end, "b");
	script_cmd_free(&c);
	parse_bad("get t '' f:q", "row must not be empty");
	parse_bad("get \"\" r f:q", "table must be a non-empty name");
	parse_bad("get t r '':q", "family must be a non-empty name");
}

static void test_unquoted_escapes(void **state)
{
	script_cmd c = parse_ok("put t a\\ b f:q \\\"x\\'\\\\\\x00\\\ty");

	(void)state;
	BYTES_EQ(c.row, "a b");
	BYTES_EQ(c.value, "\"x'\\\0\ty");
	script_cmd_free(&c);
	parse_bad("put t r f:q a\\nb", "bad escape at column 14");
	parse_bad("put t r f:q a\\x4", "bad escape");
	parse_bad("put t r f:q a\\", "bad escape");
	/* in double quotes \' and backslash-space are not escapes */
	parse_bad("put t r f:q \"\\'\"", "bad escape at column 14 (in double quotes");
	parse_bad("put t r f:q \"a\\ b\"", "in double quotes");
}

static void test_unterminated(void **state)
{
	(void)state;
	parse_bad("put t r f:q \"abc", "unterminated double quote (opened at column 13)");
	parse_bad("put t r f:q 'abc", "unterminated single quote (opened at column 13)");
	parse_bad("put t r f:q it's", "unterminated single quote (opened at column 15)");
	parse_bad("put t r f:q \"a\\\"", "unterminated double quote");
	parse_bad("put t r f:q ab\"c", "unterminated double quote");
	/* a quote hides the blanks and '#' that follow it */
	parse_bad("get t 'r f:q", "unterminated single quote");
}

static void test_command_words(void **state)
{
	script_cmd c = parse_ok("\"get\" t r f:q");

	(void)state;
	assert_int_equal(c.op, SCRIPT_GET);
	script_cmd_free(&c);
	parse_bad("GET t r f:q", "unknown command");
	parse_bad("frob", "unknown command");
	parse_bad("get t", "usage: get TABLE ROW [FAMILY:QUALIFIER]");
	parse_bad("get t r fq", "column 'fq' is not FAMILY:QUALIFIER");
	parse_bad("put t r f:q a b", "usage: put TABLE ROW FAMILY:QUALIFIER VALUE");
	parse_bad("scan t a b c d e f g h i j k l m n o", "too many arguments");
	parse_bad("abort now", "usage: abort");
}

/* NUL bytes may sit inside a line; names refuse them. */
static void test_nul_bytes(void **state)
{
	static const char line[] = "put t 'a\0b' f:q \"\0\"";
	static const char badname[] = "get t\0x r f:q";
	char err[160];
	script_cmd c;

	(void)state;
	assert_int_equal(script_parse_line(line, sizeof(line) - 1, &c, err, sizeof(err)), 0);
	bytes_eq(c.row, "a\0b", 3);
	bytes_eq(c.value, "\0", 1);
	script_cmd_free(&c);
	assert_int_equal(script_parse_line(badname, sizeof(badname) - 1, &c, err, sizeof(err)),
	                 -1);
	assert_non_null(strstr(err, "without NUL"));
}

/* Lines of the first version of the language keep their meaning. */
static void test_compatible(void **state)
{
	script_cmd c = parse_ok("put acct \"t\\x202\" bal:x \"q\\x22\"");

	(void)state;
	BYTES_EQ(c.row, "t 2");
	BYTES_EQ(c.value, "q\"");
	script_cmd_free(&c);
	c = parse_ok("put acct r bal:x \"two words\"");
	BYTES_EQ(c.value, "two words");
	script_cmd_free(&c);
	c = parse_ok("put acct r\\\\s bal:\\x01 a\\\\b");
	BYTES_EQ(c.row, "r\\s");
	BYTES_EQ(c.qualifier, "\x01");
	BYTES_EQ(c.value, "a\\b");
	script_cmd_free(&c);
}

static void test_split(void **state)
{
	char err[160];
	script_words w;

	(void)state;
	assert_int_equal(script_split("  begin  ", 9, &w, err, sizeof(err)), 0);
	assert_int_equal(w.n, 1);
	BYTES_EQ(w.w[0], "begin");
	script_words_free(&w);
	assert_int_equal(script_split("'com'mit x\\ y", 13, &w, err, sizeof(err)), 0);
	assert_int_equal(w.n, 2);
	BYTES_EQ(w.w[0], "commit");
	BYTES_EQ(w.w[1], "x y");
	assert_int_equal(((const char *)w.w[1].data)[3], '\0');
	script_words_free(&w);
	assert_int_equal(script_split("# c", 3, &w, err, sizeof(err)), 0);
	assert_int_equal(w.n, 0);
	script_words_free(&w);
	assert_int_equal(script_split("a 'b", 4, &w, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "unterminated single quote"));
	assert_int_equal(script_split("a b c d e f g h i j k l m n o p q", 33, &w, err, sizeof(err)),
	                 -1);
	assert_non_null(strstr(err, "too many"));
	script_words_free(NULL);
	assert_string_equal(script_usage(0), "get TABLE ROW [FAMILY:QUALIFIER]");
	assert_string_equal(script_usage(9), "abort");
	assert_null(script_usage(10));
}

/* get without a column reads the whole row. */
static void test_whole_row(void **state)
{
	script_cmd c = parse_ok("get t 'r 1'");

	(void)state;
	assert_int_equal(c.op, SCRIPT_GET);
	assert_true(c.whole_row);
	BYTES_EQ(c.row, "r 1");
	script_cmd_free(&c);
	c = parse_ok("get t r f:q");
	assert_false(c.whole_row);
	script_cmd_free(&c);
}

/* scan options anywhere after TABLE; quoted or escaped -- is a row. */
static void test_scan_options(void **state)
{
	script_cmd c = parse_ok("scan orders --reverse");

	(void)state;
	assert_int_equal(c.op, SCRIPT_SCAN);
	assert_true(c.reverse);
	assert_int_equal(c.start.size, 0);
	script_cmd_free(&c);
	c = parse_ok("scan t a --limit 3 z --family f");
	BYTES_EQ(c.start, "a");
	BYTES_EQ(c.end, "z");
	assert_int_equal(c.limit, 3);
	assert_string_equal(c.scan_family, "f");
	assert_false(c.reverse);
	script_cmd_free(&c);
	c = parse_ok("scan t '--reverse' \\x2d-x");
	BYTES_EQ(c.start, "--reverse");
	BYTES_EQ(c.end, "--x");
	assert_false(c.reverse);
	script_cmd_free(&c);
	c = parse_ok("scan t --prefix user:");
	BYTES_EQ(c.prefix, "user:");
	assert_int_equal(c.start.size, 0);
	script_cmd_free(&c);
	parse_bad("scan t --bogus", "unknown option --bogus");
	parse_bad("scan t --limit", "--limit needs a value");
	parse_bad("scan t --limit x", "not a count of rows");
	parse_bad("scan t --limit -1", "0 or more");
	parse_bad("scan t a b c", "at most START and END");
	parse_bad("scan t a --prefix p", "--prefix replaces START and END");
	parse_bad("scan t --family ''", "non-empty name");
}

static void test_rmw(void **state)
{
	script_cmd c = parse_ok("incr t r f:q");

	(void)state;
	assert_int_equal(c.op, SCRIPT_INCR);
	assert_int_equal(c.number, 1);
	script_cmd_free(&c);
	c = parse_ok("incr t r f:q -10");
	assert_int_equal(c.number, -10);
	script_cmd_free(&c);
	c = parse_ok("incr t r f:q +9223372036854775807");
	assert_int_equal(c.number, INT64_MAX);
	script_cmd_free(&c);
	c = parse_ok("incr t r f:q -9223372036854775808");
	assert_true(c.number == INT64_MIN);
	script_cmd_free(&c);
	parse_bad("incr t r f:q 9223372036854775808", "outside the signed 64-bit range");
	parse_bad("incr t r f:q 1x", "not a decimal integer");
	parse_bad("incr t r f:q ''", "not a decimal integer");
	c = parse_ok("append t r f:q ' tail'");
	assert_int_equal(c.op, SCRIPT_APPEND);
	BYTES_EQ(c.value, " tail");
	script_cmd_free(&c);
	c = parse_ok("check-and-put t r f:q old new");
	assert_int_equal(c.op, SCRIPT_CHECK_AND_PUT);
	assert_false(c.absent);
	BYTES_EQ(c.expected, "old");
	BYTES_EQ(c.value, "new");
	script_cmd_free(&c);
	c = parse_ok("check-and-put t r f:q --absent new");
	assert_true(c.absent);
	script_cmd_free(&c);
	c = parse_ok("check-and-put t r f:q '--absent' new");
	assert_false(c.absent);
	BYTES_EQ(c.expected, "--absent");
	script_cmd_free(&c);
	parse_bad("check-and-put t r f:q --other new", "unexpected option --other");
	/* every command refuses an unquoted --word alike, in any place */
	parse_bad("put t r f:q --v", "put: unexpected option --v");
	parse_bad("put t --r f:q v", "put: unexpected option --r");
	parse_bad("get t --r f:q", "get: unexpected option --r");
	parse_bad("get t --r", "get: unexpected option --r");
	parse_bad("delrow t --r", "delrow: unexpected option --r");
	parse_bad("del --t r f:q", "del: unexpected option --t");
	parse_bad("incr t r f:q --1", "incr: unexpected option --1");
	parse_bad("check-and-put t r f:q old --new", "check-and-put: unexpected option --new");
	parse_bad("check t r f:q --present", "check: unexpected option --present");
	c = parse_ok("put t '--r' f:q \\x2d-v");
	BYTES_EQ(c.row, "--r");
	BYTES_EQ(c.value, "--v");
	script_cmd_free(&c);
	c = parse_ok("check t r f:q >= 10");
	assert_int_equal(c.op, SCRIPT_CHECK);
	assert_int_equal(c.cmp, SCRIPT_CMP_GE);
	assert_int_equal(c.number, 10);
	script_cmd_free(&c);
	c = parse_ok("check t r f:q absent");
	assert_int_equal(c.cmp, SCRIPT_CMP_ABSENT);
	script_cmd_free(&c);
	parse_bad("check t r f:q => 10", "unknown test '=>'");
	parse_bad("check t r f:q >=", "needs a number");
	parse_bad("check t r f:q present 1", "takes nothing after it");
}

static void test_parse_i64(void **state)
{
	int64_t v;

	(void)state;
	assert_int_equal(script_parse_i64("42", 2, 0, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(script_parse_i64("+42", 3, 0, &v), -1); /* stored values: no '+' */
	assert_int_equal(script_parse_i64("-0", 2, 0, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(script_parse_i64("-", 1, 0, &v), -1);
	assert_int_equal(script_parse_i64(" 1", 2, 0, &v), -1);
	assert_int_equal(script_parse_i64("99999999999999999999", 20, 0, &v), -2);
	assert_int_equal(script_parse_i64("-9223372036854775809", 20, 0, &v), -2);
	assert_int_equal(script_parse_i64("99999999999999999999x", 21, 0, &v), -1);
	assert_int_equal(script_parse_i64("000000000000000000000007", 24, 0, &v), 0);
	assert_int_equal(v, 7);
}

/* A tiny error buffer truncates but stays NUL-terminated. */
static void test_small_err(void **state)
{
	char err[8];
	script_cmd c;

	(void)state;
	memset(err, 'X', sizeof(err));
	assert_int_equal(script_parse_line("put 'x", 6, &c, err, sizeof(err)), -1);
	assert_non_null(memchr(err, '\0', sizeof(err)));
	assert_string_equal(err, "untermi");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_blank_and_comment),
		cmocka_unit_test(test_double_quotes),
		cmocka_unit_test(test_single_quotes),
		cmocka_unit_test(test_adjacent_parts),
		cmocka_unit_test(test_empty_words),
		cmocka_unit_test(test_unquoted_escapes),
		cmocka_unit_test(test_unterminated),
		cmocka_unit_test(test_command_words),
		cmocka_unit_test(test_nul_bytes),
		cmocka_unit_test(test_compatible),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_small_err),
		cmocka_unit_test(test_whole_row),
		cmocka_unit_test(test_scan_options),
		cmocka_unit_test(test_rmw),
		cmocka_unit_test(test_parse_i64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
