/*
 * cmd_data.c - create-table, put, get, del, delrow: each one transaction,
 * run through mrtx_run (so a conflict or a briefly held lock is retried).
 *
 * Reads are printed only after their transaction committed (validated), so
 * what `get` and `scan` print is a serializable snapshot; output is built in
 * memory and thrown away when mrtx_run retries.
 */
#include "cmds.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cellout.h"
#include "keyfmt.h"
#include "util.h"
#include "valio.h"

/* ------------------------------------------------------------ create-table */

/* FAMILY[:VERSIONS[:MIN[:TTL_MS]]] into f (the name cut at the ':'). */
static int family_spec(const char *cmd, char *arg, mrtx_family_spec *f)
{
	char *c = strchr(arg, ':');
	unsigned long long v[3] = { 1, 0, 0 };
	int n = 0;

	memset(f, 0, sizeof(*f));
	f->name = arg;
	if (c) {
		char *p = c + 1, *end;

		*c = '\0';
		for (; n < 3; n++) {
			if (*p < '0' || *p > '9')
				break;
			v[n] = strtoull(p, &end, 10);
			p = end;
			if (*p != ':')
				break;
			p++;
		}
		if (*p || n == 3 || v[0] > UINT32_MAX || v[1] > UINT32_MAX) {
			tool_err(cmd, "family '%s': expected FAMILY:VERSIONS[:MIN[:TTL_MS]] with "
			         "decimal numbers", arg);
			return EXIT_USAGE;
		}
	}
	if (c && v[0] == 0) {
		tool_err(cmd, "family '%s': VERSIONS is 0; a family keeps at least one version "
		         "of each cell (give 1, or leave it out)", arg);
		return EXIT_USAGE;
	}
	if (v[1] > v[0]) {
		tool_err(cmd, "family '%s': MIN %llu is above VERSIONS %llu (the newest MIN versions "
		         "are kept past the TTL, of at most VERSIONS)", arg, v[1], v[0]);
		return EXIT_USAGE;
	}
	f->max_versions = (uint32_t)v[0];
	f->min_versions = (uint32_t)v[1];
	f->ttl_ms = v[2];
	return arg_name(cmd, "family", arg);
}

int cmd_create_table(int argc, char **argv)
{
	static const char usage[] =
		"mrtx create-table STORE TABLE FAMILY[:VERSIONS[:MIN[:TTL_MS]]]...";
	mrtx_family_spec fams[MRTX_MAX_FAMILIES];
	char **pos = argv + 1;
	int npos, help, rc;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, NULL, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Create TABLE with the given column families in the store at STORE\n"
		     "(the store directory is created if missing).  Creating an existing\n"
		     "table with the same families succeeds.  FAMILY:VERSIONS keeps that\n"
		     "many versions of each cell (1 or more, default 1); :MIN and :TTL_MS\n"
		     "drop versions older than TTL_MS milliseconds but the newest MIN (MIN\n"
		     "at most VERSIONS, default 0; TTL_MS default 0: forever).  `mrtx alter`\n"
		     "changes them later (LMDB stores).\n");
	if (npos < 3)
		return tool_usage_err(argv[0], usage, "need STORE, TABLE and at least one FAMILY");
	if (npos - 2 > (int)MRTX_MAX_FAMILIES)
		return tool_usage_err(argv[0], usage, "at most %u families", MRTX_MAX_FAMILIES);
	if ((rc = arg_name(argv[0], "table", pos[1])))
		return rc;
	for (int i = 2; i < npos; i++)
		if ((rc = family_spec(argv[0], pos[i], &fams[i - 2])))
			return rc;
	if ((rc = tool_open(argv[0], pos[0], 1, &db)))
		return rc;
	if ((rc = mrtx_create_table2(db, pos[1], fams, (size_t)(npos - 2))))
		rc = tool_fail(argv[0], NULL, rc);
	mrtx_close(db);
	return rc ? EXIT_FAIL : EXIT_OK;
}

/* --------------------------------------------------- put, get, del, delrow */

enum cell_op { OP_PUT, OP_GET, OP_DEL, OP_DELROW };

typedef struct cell_args {
	enum cell_op op;
	const char *table;
	mrtx_bytes row;
	const char *family;
	mrtx_bytes qual;
	mrtx_bytes value;
	mrtx_key rowkey; /* --key: the row built from its parts */
	char *got;       /* get: malloc'd copy of the value */
	size_t got_size;
} cell_args;

/* The row for messages: its --key form, or escaped.  malloc'd or NULL. */
static char *row_text(const keyfmt *kf, mrtx_bytes row)
{
	char *buf = NULL;
	size_t len;
	FILE *f;

	if (!kf)
		return escape_dup(row.data, row.size, ESC_SPACE);
	if (!(f = open_memstream(&buf, &len)))
		return NULL;
	keyfmt_print(f, kf, row, ESC_SPACE);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int cell_fn(mrtx_txn *txn, void *p)
{
	cell_args *c = p;
	mrtx_bytes v;
	int rc;

	switch (c->op) {
	case OP_PUT:
		return mrtx_put(txn, c->table, c->row, c->family, c->qual, c->value);
	case OP_DEL:
		return mrtx_delete(txn, c->table, c->row, c->family, c->qual);
	case OP_DELROW:
		return mrtx_delete_row(txn, c->table, c->row);
	case OP_GET:
		break;
	}
	if ((rc = mrtx_get(txn, c->table, c->row, c->family, c->qual, &v)))
		return rc;
	free(c->got);
	if (!(c->got = malloc(v.size ? v.size : 1)))
		return MRTX_ENOMEM;
	memcpy(c->got, v.data, v.size);
	c->got_size = v.size;
	return 0;
}

static void get_print(const cell_args *c, const keyfmt *kf, int raw, int json)
{
	if (raw) {
		fwrite(c->got, 1, c->got_size, stdout);
	} else if (json) {
		fputs("{\"row\":", stdout);
		json_data(stdout, c->row.data, c->row.size);
		if (kf) {
			fputs(",\"key\":", stdout);
			keyfmt_json(stdout, kf, c->row);
		}
		fputs(",\"family\":", stdout);
		json_str(stdout, c->family, strlen(c->family));
		fputs(",\"qualifier\":", stdout);
		json_data(stdout, c->qual.data, c->qual.size);
		fputs(",\"value\":", stdout);
		json_data(stdout, c->got, c->got_size);
		fputs("}\n", stdout);
	} else {
		print_escaped(stdout, c->got, c->got_size, 0);
		putchar('\n');
	}
}

/* --at: a commit timestamp (decimal, above 0). */
int arg_ts(const char *cmd, const char *arg, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (arg[0] < '0' || arg[0] > '9' || (v = strtoull(arg, &end, 10), errno) || *end ||
	    v == 0) {
		tool_err(cmd, "--at: '%s' is not a commit timestamp (a decimal number from 1 to "
		         "2^64-1, in microseconds, as get --versions prints them)", arg);
		return EXIT_USAGE;
	}
	*out = v;
	return 0;
}

/* fn in one transaction at a past snapshot (mrtx_begin_at; no retries:
 * it never conflicts). */
int run_at(mrtx_db *db, uint64_t ts, int (*fn)(mrtx_txn *, void *), void *p)
{
	mrtx_txn *txn;
	int rc;

	if ((rc = mrtx_begin_at(db, ts, &txn)))
		return rc;
	if ((rc = fn(txn, p))) {
		mrtx_abort(txn);
		return rc;
	}
	return mrtx_commit(txn);
}

/* get --versions N: each version "TS VALUE" (or a JSON object) a line. */
static int get_versions_print(mrtx_db *db, const cell_args *c, uint64_t at, size_t max,
                              int json)
{
	mrtx_version *v = calloc(max, sizeof(*v));
	mrtx_txn *txn;
	size_t n = 0;
	int rc;

	if (!v)
		return MRTX_ENOMEM;
	if ((rc = at ? mrtx_begin_at(db, at, &txn) : mrtx_begin(db, &txn))) {
		free(v);
		return rc;
	}
	rc = mrtx_get_versions(txn, c->table, c->row, c->family, c->qual, v, max, &n);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (json) {
			printf("{\"ts\":%llu,\"value\":", (unsigned long long)v[i].ts);
			json_data(stdout, v[i].value.data, v[i].value.size);
			fputs("}\n", stdout);
		} else {
			printf("%llu ", (unsigned long long)v[i].ts);
			print_escaped(stdout, v[i].value.data, v[i].value.size, 0);
			putchar('\n');
		}
	}
	mrtx_abort(txn);
	free(v);
	return rc;
}

/* get without FAMILY:QUALIFIER: every cell of the row, printed once its
   transaction committed; MRTX_NOTFOUND when it has none. */
static int get_row_print(mrtx_db *db, const cell_args *c, const keyfmt *kf, int json,
                         uint64_t at, size_t maxv)
{
	unsigned char end[MRTX_MAX_ROW];
	scan_job a;
	int rc;

	memset(&a, 0, sizeof(a));
	row_spec(c->table, c->row, end, &a.spec, &a.out);
	a.out.json = json;
	a.out.key = kf;
	a.out.versions = maxv;
	rc = at ? run_at(db, at, scan_job_fn, &a) : mrtx_run(db, scan_job_fn, &a, 0);
	memout_finish(&a.mem, rc == 0, stdout);
	return rc == 0 && a.out.cells == 0 ? MRTX_NOTFOUND : rc;
}

static int run_cell(int argc, char **argv, enum cell_op op, const char *usage,
                    const char *text)
{
	const char *key = NULL, *file = NULL, *cmd = argv[0], *at = NULL, *nver = NULL;
	int raw = 0, json = 0, npos, help, rc, want;
	uint64_t at_ts = 0;
	size_t maxv = 0;
	tool_opt opts[6] = { { "key", 1, &key, NULL } };
	char **pos = argv + 1, *valbuf = NULL;
	keyfmt kf;
	cell_args c;
	mrtx_db *db;

	if (op == OP_PUT) {
		opts[1] = (tool_opt){ "file", 1, &file, NULL };
	} else if (op == OP_GET) {
		opts[1] = (tool_opt){ "raw", 0, NULL, &raw };
		opts[2] = (tool_opt){ "json", 0, NULL, &json };
		opts[3] = (tool_opt){ "at", 1, &at, NULL };
		opts[4] = (tool_opt){ "versions", 1, &nver, NULL };
	}
	if ((rc = args_parse(cmd, usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, text);
	want = op == OP_DELROW ? 3 : op == OP_PUT && !file ? 5 : 4;
	if (op == OP_GET && npos == 3) {
		want = 3; /* the whole row */
		if (raw)
			return tool_usage_err(cmd, usage, "--raw prints one value: give "
			                      "FAMILY:QUALIFIER, or use --json for the whole row");
	}
	if (npos != want && op == OP_GET)
		return tool_usage_err(cmd, usage, "expected 3 or 4 arguments (STORE TABLE ROW, and "
		                      "FAMILY:QUALIFIER for one cell), got %d", npos);
	if (npos != want)
		return tool_usage_err(cmd, usage, "expected %d arguments, got %d%s", want, npos,
		                      op == OP_PUT && file ? " (--file replaces VALUE)" : "");
	if (raw && json)
		return tool_usage_err(cmd, usage, "--raw and --json exclude each other");
	if ((at && (rc = arg_ts(cmd, at, &at_ts))) ||
	    (nver && (rc = arg_size(cmd, "--versions", nver, &maxv))))
		return rc;
	if (nver && (maxv == 0 || raw))
		return tool_usage_err(cmd, usage, maxv ? "--versions and --raw exclude each other" :
		                      "--versions: 0 prints nothing; give 1 or more (1: the "
		                      "newest version)");
	memset(&c, 0, sizeof(c));
	c.op = op;
	if ((key && (rc = keyfmt_parse(cmd, key, &kf))) ||
	    (rc = arg_name(cmd, "table", pos[1])))
		return rc;
	if (key)
		rc = keyfmt_build(cmd, "row", &kf, pos[2], 0, &c.rowkey);
	else
		rc = arg_bytes(cmd, "row", pos[2], &c.row);
	if (rc)
		return rc;
	if (key)
		c.row = MRTX_BYTES(c.rowkey.buf, c.rowkey.size);
	if (op != OP_DELROW && want > 3 && (rc = arg_column(cmd, pos[3], &c.family, &c.qual)))
		return rc;
	if (op == OP_PUT && !file && strcmp(pos[4], "-") != 0 &&
	    (rc = arg_bytes(cmd, "value", pos[4], &c.value)))
		return rc;
	c.table = pos[1];
	if (op == OP_PUT && (file || strcmp(pos[4], "-") == 0)) {
		if ((rc = value_read(cmd, file ? file : "-", &valbuf, &c.value.size)))
			return rc;
		c.value.data = valbuf;
	}
	if ((rc = tool_open(cmd, pos[0], 0, &db))) {
		free(valbuf);
		return rc;
	}
	if (op != OP_GET && (rc = tool_refuse_index_table(cmd, db, c.table))) {
		free(valbuf);
		mrtx_close(db);
		return rc;
	}
	if (op == OP_GET && want == 3)
		rc = get_row_print(db, &c, key ? &kf : NULL, json, at_ts, maxv);
	else if (maxv)
		rc = get_versions_print(db, &c, at_ts, maxv, json);
	else
		rc = at ? run_at(db, at_ts, cell_fn, &c) : mrtx_run(db, cell_fn, &c, 0);
	if (rc == MRTX_NOTFOUND && want == 3) {
		char *r = row_text(key ? &kf : NULL, c.row);

		tool_err(cmd, "%s/%s: not found (the row has no cells)", c.table, r ? r : "?");
		free(r);
		rc = EXIT_FAIL;
	} else if (rc == MRTX_NOTFOUND) {
		char *r = row_text(key ? &kf : NULL, c.row);
		char *q = escape_dup(c.qual.data, c.qual.size, ESC_SPACE);

		tool_err(cmd, "%s/%s %s:%s: not found", c.table, r ? r : "?", c.family, q ? q : "?");
		free(r);
		free(q);
		rc = EXIT_FAIL;
	} else if (rc) {
		rc = tool_fail(cmd, NULL, rc);
	} else if (op == OP_GET && (maxv || want == 3)) {
		rc = stdout_finish(cmd);
	} else if (op == OP_GET) {
		get_print(&c, key ? &kf : NULL, raw, json);
		rc = stdout_finish(cmd);
	}
	free(c.got);
	free(valbuf);
	mrtx_close(db);
	return rc;
}

#define KEY_HELP                                                                   \
	"--key FORMAT gives ROW as the parts of a composite key (mrtx_key_*):\n"        \
	"FORMAT lists the part types, comma-separated (bytes or str, u32, u64, i32,\n"  \
	"i64, rts, salt, fixedN, hashN), and ROW the values, e.g. --key u64,str\n"      \
	"'42,alice' or '(42, \"alice\")' as scan --key prints them (default: ROW\n"  \
	"is the row's bytes).\n"

int cmd_put(int argc, char **argv)
{
	return run_cell(argc, argv, OP_PUT,
	                "mrtx put STORE TABLE ROW FAMILY:QUALIFIER VALUE|- [--file PATH] "
	                "[--key FORMAT]",
	                "Set one cell, in its own transaction.  ROW, QUALIFIER and VALUE\n"
	                "accept \\xNN and \\\\ escapes.  A VALUE of \"-\" reads the value from\n"
	                "standard input, and --file PATH (instead of VALUE) from a file; both\n"
	                "take the bytes as they are, up to MRTX_MAX_VALUE (64 MiB).  The\n"
	                "one-byte value \"-\" is written \\x2d.  Put \"--\" before a VALUE\n"
	                "that is \"-h\" or starts with \"--\".\n" KEY_HELP);
}

int cmd_get(int argc, char **argv)
{
	return run_cell(argc, argv, OP_GET,
	                "mrtx get STORE TABLE ROW [FAMILY:QUALIFIER] [--raw|--json] "
	                "[--key FORMAT] [--versions N] [--at TS]",
	                "Print one cell's value (escaped: bytes outside printable ASCII and\n"
	                "the backslash as \\xNN / \\\\) and a newline.  --raw writes the value's\n"
	                "bytes as they are, without a newline.  --json prints one object:\n"
	                "{\"row\", \"family\", \"qualifier\", \"value\"} (and \"key\", the parts,\n"
	                "with --key), each byte string a JSON string when it is valid UTF-8,\n"
	                "else {\"base64\": \"...\"}.  A missing cell is an error (message on\n"
	                "stderr, nothing on stdout, exit 1).  --versions N prints up to N\n"
	                "versions, newest first, one a line as \"TS VALUE\" (TS: the commit\n"
	                "timestamp it was written at; with --json {\"ts\", \"value\"}), as the\n"
	                "table's family keeps them (create-table FAMILY:VERSIONS[:MIN[:TTL_MS]]).\n"
	                "--versions default: the newest value alone, without TS.  --at TS reads\n"
	                "the store as it was at commit timestamp TS (default: as it is now).\n"
	                "Without FAMILY:QUALIFIER, print every cell of the row, one a line as\n"
	                "FAMILY:QUALIFIER VALUE (escaped as scan prints them; with --versions\n"
	                "FAMILY:QUALIFIER TS VALUE; with --json one object a cell, as scan\n"
	                "--json); a row without cells is an error.\n"
	                KEY_HELP);
}

int cmd_del(int argc, char **argv)
{
	return run_cell(argc, argv, OP_DEL,
	                "mrtx del STORE TABLE ROW FAMILY:QUALIFIER [--key FORMAT]",
	                "Delete one cell, in its own transaction (a missing cell is fine).\n"
	                KEY_HELP);
}

int cmd_delrow(int argc, char **argv)
{
	return run_cell(argc, argv, OP_DELROW, "mrtx delrow STORE TABLE ROW [--key FORMAT]",
	                "Delete every cell of one row, in its own transaction (a missing\n"
	                "row is fine).\n" KEY_HELP);
}
