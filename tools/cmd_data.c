/*
 * cmd_data.c - create-table, put, get, del, scan: each one transaction,
 * run through mrtx_run (so a conflict or a briefly held lock is retried).
 *
 * Reads are printed only after their transaction committed (validated), so
 * what `get` and `scan` print is a serializable snapshot; output is built in
 * memory and thrown away when mrtx_run retries.
 */
#include "cmds.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define HELP(usage, text)                                  \
	do {                                                   \
		printf("usage: %s\n\n%s", usage, text);            \
		return EXIT_OK;                                    \
	} while (0)

/* ------------------------------------------------------------ create-table */

int cmd_create_table(int argc, char **argv)
{
	static const char usage[] = "mrtx create-table STORE TABLE FAMILY...";
	char **pos = argv + 1;
	int npos, help, rc;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, NULL, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Create TABLE with the given column families in the store at STORE\n"
		     "(the store directory is created if missing).  Creating an existing\n"
		     "table with the same families succeeds.\n");
	if (npos < 3)
		return tool_usage_err(argv[0], usage, "need STORE, TABLE and at least one FAMILY");
	for (int i = 1; i < npos; i++)
		if ((rc = arg_name(argv[0], i == 1 ? "table" : "family", pos[i])))
			return rc;
	if ((rc = tool_open(argv[0], pos[0], 1, &db)))
		return rc;
	if ((rc = mrtx_create_table(db, pos[1], (const char *const *)(pos + 2),
	                            (size_t)(npos - 2))))
		rc = tool_fail(argv[0], NULL, rc);
	mrtx_close(db);
	return rc ? EXIT_FAIL : EXIT_OK;
}

/* ---------------------------------------------------------- put, get, del */

typedef struct cell_args {
	const char *table;
	mrtx_bytes row;
	const char *family;
	mrtx_bytes qual;
	mrtx_bytes value;
	int del;
	char *got;      /* get: malloc'd copy of the value */
	size_t got_size;
} cell_args;

/* STORE TABLE ROW FAMILY:QUALIFIER [VALUE] */
static int parse_cell(char **argv, char **pos, int npos, int want, const char *usage,
                      cell_args *c)
{
	int rc;

	memset(c, 0, sizeof(*c));
	if (npos != want)
		return tool_usage_err(argv[0], usage, "expected %d arguments, got %d", want, npos);
	if ((rc = arg_name(argv[0], "table", pos[1])) ||
	    (rc = arg_bytes(argv[0], "row", pos[2], &c->row)) ||
	    (rc = arg_column(argv[0], pos[3], &c->family, &c->qual)))
		return rc;
	if (want == 5 && (rc = arg_bytes(argv[0], "value", pos[4], &c->value)))
		return rc;
	c->table = pos[1];
	return 0;
}

static int write_fn(mrtx_txn *txn, void *p)
{
	cell_args *c = p;

	if (c->del)
		return mrtx_delete(txn, c->table, c->row, c->family, c->qual);
	return mrtx_put(txn, c->table, c->row, c->family, c->qual, c->value);
}

static int get_fn(mrtx_txn *txn, void *p)
{
	cell_args *c = p;
	mrtx_bytes v;
	int rc;

	if ((rc = mrtx_get(txn, c->table, c->row, c->family, c->qual, &v)))
		return rc;
	free(c->got);
	if (!(c->got = malloc(v.size ? v.size : 1)))
		return MRTX_ENOMEM;
	memcpy(c->got, v.data, v.size);
	c->got_size = v.size;
	return 0;
}

static int run_cell(int argc, char **argv, int want, const char *usage, const char *text,
                    int (*fn)(mrtx_txn *, void *), int del)
{
	char **pos = argv + 1;
	int npos, help, rc;
	cell_args c;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, NULL, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, text);
	if ((rc = parse_cell(argv, pos, npos, want, usage, &c)))
		return rc;
	c.del = del;
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	rc = mrtx_run(db, fn, &c, 0);
	if (rc == MRTX_NOTFOUND) {
		char *r = escape_dup(c.row.data, c.row.size, ESC_SPACE);
		char *q = escape_dup(c.qual.data, c.qual.size, ESC_SPACE);

		tool_err(argv[0], "%s/%s %s:%s: not found", c.table, r ? r : "?", c.family,
		         q ? q : "?");
		free(r);
		free(q);
		rc = EXIT_FAIL;
	} else if (rc) {
		rc = tool_fail(argv[0], NULL, rc);
	} else if (fn == get_fn) {
		print_escaped(stdout, c.got, c.got_size, 0);
		putchar('\n');
	}
	free(c.got);
	mrtx_close(db);
	return rc;
}

int cmd_put(int argc, char **argv)
{
	return run_cell(argc, argv, 5, "mrtx put STORE TABLE ROW FAMILY:QUALIFIER VALUE",
	                "Set one cell, in its own transaction.  ROW, QUALIFIER and VALUE\n"
	                "accept \\xNN and \\\\ escapes.  Put \"--\" before a VALUE that is\n"
	                "\"-h\" or starts with \"--\".\n", write_fn, 0);
}

int cmd_get(int argc, char **argv)
{
	return run_cell(argc, argv, 4, "mrtx get STORE TABLE ROW FAMILY:QUALIFIER",
	                "Print one cell's value (escaped: bytes outside printable ASCII and\n"
	                "the backslash as \\xNN / \\\\) and a newline.  A missing cell is an\n"
	                "error (exit 1).\n", get_fn, 0);
}

int cmd_del(int argc, char **argv)
{
	return run_cell(argc, argv, 4, "mrtx del STORE TABLE ROW FAMILY:QUALIFIER",
	                "Delete one cell, in its own transaction (a missing cell is fine).\n",
	                write_fn, 1);
}

/* ----------------------------------------------------------------- scan */

typedef struct scan_args {
	mrtx_scan_spec spec;
	FILE *mem;
	char *buf;
	size_t len;
} scan_args;

int scan_print_cells(mrtx_txn *txn, const mrtx_scan_spec *spec, FILE *f)
{
	mrtx_scanner *s;
	mrtx_cell cell;
	int rc;

	if ((rc = mrtx_scan_open(txn, spec, &s)))
		return rc;
	while ((rc = mrtx_scan_next(s, &cell)) == 0) {
		print_escaped(f, cell.row.data, cell.row.size, ESC_SPACE);
		fprintf(f, " %s:", cell.family);
		print_escaped(f, cell.qualifier.data, cell.qualifier.size, ESC_SPACE);
		putc(' ', f);
		print_escaped(f, cell.value.data, cell.value.size, 0);
		putc('\n', f);
	}
	mrtx_scan_close(s);
	return rc == MRTX_NOTFOUND ? 0 : rc;
}

static int scan_fn(mrtx_txn *txn, void *p)
{
	scan_args *a = p;

	if (a->mem) {
		fclose(a->mem);
		free(a->buf);
		a->buf = NULL;
	}
	if (!(a->mem = open_memstream(&a->buf, &a->len)))
		return MRTX_ENOMEM;
	return scan_print_cells(txn, &a->spec, a->mem);
}

int cmd_scan(int argc, char **argv)
{
	static const char usage[] = "mrtx scan STORE TABLE [--start ROW] [--end ROW] "
	                            "[--family F] [--reverse] [--limit N]";
	const char *start = NULL, *end = NULL, *limit = NULL, *family = NULL;
	int reverse = 0, npos, help, rc;
	const tool_opt opts[] = {
		{ "start", 1, &start, NULL }, { "end", 1, &end, NULL },
		{ "family", 1, &family, NULL }, { "limit", 1, &limit, NULL },
		{ "reverse", 0, NULL, &reverse }, { NULL, 0, NULL, NULL }
	};
	char **pos = argv + 1;
	scan_args a;
	mrtx_db *db;

	memset(&a, 0, sizeof(a));
	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Print the cells of rows [START, END) of TABLE, one per line:\n"
		     "  ROW FAMILY:QUALIFIER VALUE\n"
		     "escaped (ROW and QUALIFIER also escape spaces as \\x20).  --limit counts\n"
		     "rows; --reverse walks rows in descending order.\n");
	if (npos != 2)
		return tool_usage_err(argv[0], usage, "expected STORE and TABLE");
	if ((rc = arg_name(argv[0], "table", pos[1])))
		return rc;
	a.spec.table = pos[1];
	a.spec.reverse = reverse;
	if ((start && (rc = arg_bytes(argv[0], "--start", (char *)start, &a.spec.start))) ||
	    (end && (rc = arg_bytes(argv[0], "--end", (char *)end, &a.spec.end))) ||
	    (family && (rc = arg_name(argv[0], "--family", (char *)family))) ||
	    (limit && (rc = arg_size(argv[0], "--limit", limit, &a.spec.limit_rows))))
		return rc;
	a.spec.family = family;
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	rc = mrtx_run(db, scan_fn, &a, 0);
	if (a.mem)
		fclose(a.mem);
	if (rc)
		rc = tool_fail(argv[0], NULL, rc);
	else if (a.len)
		fwrite(a.buf, 1, a.len, stdout);
	free(a.buf);
	mrtx_close(db);
	return rc;
}
