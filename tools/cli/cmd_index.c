/*
 * cmd_index.c - `mrtx index create|list|scan|drop`: secondary indexes
 * (mrtx_create_index, mrtx_indexes, mrtx_index_scan / mrtx_index_lookup,
 * mrtx_drop_index), and the check the writing subcommands make that a
 * table is not an index table (tool_refuse_index_table).
 */
#include "cmds.h"

#include <stdlib.h>
#include <string.h>

#include "cellout.h"
#include "util.h"
#include "valio.h"

static const char usage_all[] =
	"mrtx index create STORE NAME TABLE FAMILY:QUALIFIER INDEX_TABLE [--cluster COLUMNS]\n"
	"       mrtx index list STORE [--json]\n"
	"       mrtx index scan STORE NAME [--value V | --start V --end V] [--limit N]\n"
	"                       [--reverse] [--json]\n"
	"       mrtx index drop STORE NAME";

static const char help_text[] =
	"Secondary indexes: an index keeps, for every row of TABLE whose cell\n"
	"FAMILY:QUALIFIER holds a value, one row of INDEX_TABLE keyed by (value,\n"
	"row), updated in the same transaction as the data by every writer.\n"
	"\n"
	"create  declares index NAME (INDEX_TABLE is created with family i if\n"
	"        missing) and fills it from TABLE's rows.  --cluster COLUMNS\n"
	"        copies those cells of the source row into the index (comma-\n"
	"        separated FAMILY:QUALIFIER; a comma in a qualifier is \\x2c), so a\n"
	"        scan prints them without reading the row.  Creating it again with\n"
	"        the same arguments repairs the index.\n"
	"list    one line per index: NAME TABLE FAMILY:QUALIFIER INDEX_TABLE and\n"
	"        the clustered columns; --json one object a line.\n"
	"scan    the entries of index NAME in value order, one line each: VALUE ROW\n"
	"        and then COLUMN VALUE for each clustered cell (fields escaped,\n"
	"        spaces as \\x20).  --value V only rows holding exactly V; --start\n"
	"        and --end the values in [START, END); --limit N at most N\n"
	"        entries; --reverse highest value first; --json one object a line\n"
	"        {value, row, cells: [{column, value}]}.\n"
	"drop    removes index NAME: writers stop maintaining it at once, then\n"
	"        its INDEX_TABLE is dropped as by drop-table (a RADOS store cannot\n"
	"        drop tables yet, and says so: the index is gone, its table\n"
	"        stays).  If the command stops between the two, the table stays\n"
	"        as an ordinary table: running index drop NAME again, or\n"
	"        drop-table INDEX_TABLE, finishes it.  The source TABLE can then\n"
	"        be dropped.\n"
	"\n"
	"An index table is written by its index only: put, del, delrow, incr,\n"
	"append, check-and-put, load, import, txn scripts and the shell refuse it.\n";

/* ------------------------------------------------------------ the check */

struct owner {
	const char *table;
	char index[MRTX_MAX_NAME + 1];
};

static int owner_fn(const mrtx_index_spec *s, void *payload)
{
	struct owner *o = payload;

	if (strcmp(s->index_table, o->table) != 0)
		return 0;
	snprintf(o->index, sizeof(o->index), "%s", s->name);
	return 1;
}

int tool_index_of(mrtx_db *db, const char *table, char *index, size_t n)
{
	struct owner o = { table, "" };
	int rc = mrtx_indexes(db, owner_fn, &o);

	if (rc == 1)
		snprintf(index, n, "%s", o.index);
	return rc;
}

int tool_refuse_index_table(const char *cmd, mrtx_db *db, const char *table)
{
	char index[MRTX_MAX_NAME + 1];
	int rc = tool_index_of(db, table, index, sizeof(index));

	if (rc == 1) {
		tool_err(cmd, "table '%s' is the index table of index '%s': only the index "
		         "writes it (write the source table instead, or mrtx index drop the "
		         "index first); nothing written", table, index);
		return EXIT_FAIL;
	}
	return rc ? tool_fail(cmd, "indexes", rc) : 0;
}

/* --------------------------------------------------------------- create */

/* Split COLUMNS at commas into cols (at most MRTX_INDEX_MAX), unescaped. */
#define CLUSTER_MAX 32

static int parse_cluster(const char *cmd, char *arg, mrtx_column *cols, size_t *n)
{
	char *p = arg;
	int rc;

	*n = 0;
	for (;;) {
		char *comma = strchr(p, ',');
		const char *fam;
		mrtx_bytes q;

		if (comma)
			*comma = '\0';
		if (*n == CLUSTER_MAX) {
			tool_err(cmd, "--cluster: at most %d columns", CLUSTER_MAX);
			return EXIT_USAGE;
		}
		if (!*p || !strchr(p, ':')) {
			tool_err(cmd, "--cluster: '%s' is not FAMILY:QUALIFIER (columns are "
			         "comma-separated)", p);
			return EXIT_USAGE;
		}
		if ((rc = arg_column(cmd, p, &fam, &q)))
			return rc;
		cols[*n].family = fam;
		cols[(*n)++].qualifier = q;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

static int index_create(const char *cmd, char **pos, int npos, const char *cluster)
{
	mrtx_column cols[CLUSTER_MAX];
	mrtx_index_spec s;
	mrtx_db *db;
	int rc;

	memset(&s, 0, sizeof(s));
	if (npos != 6)
		return tool_usage_err(cmd, usage_all, "index create: expected STORE NAME TABLE "
		                      "FAMILY:QUALIFIER INDEX_TABLE, got %d arguments", npos - 1);
	if ((rc = arg_name(cmd, "index", pos[2])) || (rc = arg_name(cmd, "table", pos[3])) ||
	    (rc = arg_column(cmd, pos[4], &s.family, &s.qualifier)) ||
	    (rc = arg_name(cmd, "index table", pos[5])))
		return rc;
	if (cluster && (rc = parse_cluster(cmd, (char *)cluster, cols, &s.ncluster)))
		return rc;
	s.version = MRTX_INDEX_SPEC_VERSION;
	s.name = pos[2];
	s.table = pos[3];
	s.index_table = pos[5];
	s.cluster = s.ncluster ? cols : NULL;
	if ((rc = tool_open(cmd, pos[1], 0, &db)))
		return rc;
	if ((rc = mrtx_create_index(db, &s)))
		rc = tool_fail(cmd, "create", rc);
	mrtx_close(db);
	return rc ? EXIT_FAIL : EXIT_OK;
}

/* ----------------------------------------------------------------- list */

static void text_column(FILE *f, const char *family, mrtx_bytes q)
{
	print_escaped(f, family, strlen(family), ESC_SPACE);
	putc(':', f);
	print_escaped(f, q.data, q.size, ESC_SPACE);
}

static void json_column(FILE *f, const char *family, mrtx_bytes q)
{
	char *fq = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&fq, &len);

	if (m) {
		text_column(m, family, q);
		if (fclose(m) == 0) {
			json_str(f, fq, len);
			free(fq);
			return;
		}
	}
	free(fq);
	fputs("null", f);
}

static int list_fn(const mrtx_index_spec *s, void *payload)
{
	int json = *(int *)payload;

	if (json) {
		fputs("{\"name\":", stdout);
		json_bytes(stdout, s->name, strlen(s->name));
		fputs(",\"table\":", stdout);
		json_bytes(stdout, s->table, strlen(s->table));
		fputs(",\"column\":", stdout);
		json_column(stdout, s->family, s->qualifier);
		fputs(",\"index_table\":", stdout);
		json_bytes(stdout, s->index_table, strlen(s->index_table));
		fputs(",\"cluster\":[", stdout);
		for (size_t i = 0; i < s->ncluster; i++) {
			if (i)
				putchar(',');
			json_column(stdout, s->cluster[i].family, s->cluster[i].qualifier);
		}
		fputs("]}\n", stdout);
		return 0;
	}
	print_escaped(stdout, s->name, strlen(s->name), ESC_SPACE);
	putchar(' ');
	print_escaped(stdout, s->table, strlen(s->table), ESC_SPACE);
	putchar(' ');
	text_column(stdout, s->family, s->qualifier);
	putchar(' ');
	print_escaped(stdout, s->index_table, strlen(s->index_table), ESC_SPACE);
	for (size_t i = 0; i < s->ncluster; i++) {
		putchar(' ');
		text_column(stdout, s->cluster[i].family, s->cluster[i].qualifier);
	}
	putchar('\n');
	return 0;
}

static int index_list(const char *cmd, char **pos, int npos, int json)
{
	mrtx_db *db;
	int rc;

	if (npos != 2)
		return tool_usage_err(cmd, usage_all, "index list: expected STORE");
	if ((rc = tool_open(cmd, pos[1], 0, &db)))
		return rc;
	if ((rc = mrtx_indexes(db, list_fn, &json)))
		rc = tool_fail(cmd, "list", rc);
	else
		rc = stdout_finish(cmd);
	mrtx_close(db);
	return rc;
}

/* ----------------------------------------------------------------- scan */

typedef struct scan_ctx {
	const char *name;
	int exact, reverse, json;
	mrtx_bytes start, end;
	size_t limit;
	memout out;
	FILE *f;
} scan_ctx;

static int hit_fn(const mrtx_index_hit *h, void *payload)
{
	scan_ctx *c = payload;
	FILE *f = c->f;

	if (c->json) {
		fputs("{\"value\":", f);
		json_bytes(f, h->value.data, h->value.size);
		fputs(",\"row\":", f);
		json_bytes(f, h->row.data, h->row.size);
		fputs(",\"cells\":[", f);
		for (size_t i = 0; i < h->ncells; i++) {
			fputs(i ? ",{\"column\":" : "{\"column\":", f);
			json_column(f, h->cells[i].family, h->cells[i].qualifier);
			fputs(",\"value\":", f);
			json_bytes(f, h->cells[i].value.data, h->cells[i].value.size);
			putc('}', f);
		}
		fputs("]}\n", f);
		return 0;
	}
	print_escaped(f, h->value.data, h->value.size, ESC_SPACE);
	putc(' ', f);
	print_escaped(f, h->row.data, h->row.size, ESC_SPACE);
	for (size_t i = 0; i < h->ncells; i++) {
		putc(' ', f);
		text_column(f, h->cells[i].family, h->cells[i].qualifier);
		putc(' ', f);
		print_escaped(f, h->cells[i].value.data, h->cells[i].value.size, ESC_SPACE);
	}
	putc('\n', f);
	return 0;
}

static int scan_fn(mrtx_txn *txn, void *p)
{
	scan_ctx *c = p;

	if (!(c->f = memout_restart(&c->out)))
		return MRTX_ENOMEM;
	if (c->exact)
		return mrtx_index_lookup(txn, c->name, c->start, hit_fn, c);
	return mrtx_index_scan(txn, c->name, c->start, c->end, c->reverse, c->limit, hit_fn, c);
}

static int index_scan(const char *cmd, char **pos, int npos, const char *value,
                      const char *start, const char *end, const char *limit, int reverse,
                      int json)
{
	scan_ctx c;
	mrtx_db *db;
	int rc;

	memset(&c, 0, sizeof(c));
	if (npos != 3)
		return tool_usage_err(cmd, usage_all, "index scan: expected STORE and NAME");
	if (value && (start || end || reverse || limit))
		return tool_usage_err(cmd, usage_all, "--value excludes --start, --end, --limit "
		                      "and --reverse");
	if ((rc = arg_name(cmd, "index", pos[2])) ||
	    (value && (rc = arg_bytes(cmd, "--value", (char *)value, &c.start))) ||
	    (start && (rc = arg_bytes(cmd, "--start", (char *)start, &c.start))) ||
	    (end && (rc = arg_bytes(cmd, "--end", (char *)end, &c.end))) ||
	    (limit && (rc = arg_size(cmd, "--limit", limit, &c.limit))))
		return rc;
	if (end && c.end.size == 0)
		return tool_usage_err(cmd, usage_all, "--end: an empty value is below every "
		                      "value; leave --end out to scan to the highest");
	c.name = pos[2];
	c.exact = value != NULL;
	c.reverse = reverse;
	c.json = json;
	if ((rc = tool_open(cmd, pos[1], 0, &db)))
		return rc;
	rc = mrtx_run(db, scan_fn, &c, 0);
	memout_finish(&c.out, rc == 0, stdout);
	if (rc)
		rc = tool_fail(cmd, "scan", rc);
	else
		rc = stdout_finish(cmd);
	mrtx_close(db);
	return rc;
}

/* ----------------------------------------------------------------- drop */

static int index_drop(const char *cmd, char **pos, int npos)
{
	mrtx_db *db;
	int rc;

	if (npos != 3)
		return tool_usage_err(cmd, usage_all, "index drop: expected STORE and NAME");
	if ((rc = arg_name(cmd, "index", pos[2])))
		return rc;
	if ((rc = tool_open(cmd, pos[1], 0, &db)))
		return rc;
	if ((rc = mrtx_drop_index(db, pos[2])))
		rc = tool_fail(cmd, "drop", rc);
	mrtx_close(db);
	return rc ? EXIT_FAIL : EXIT_OK;
}

int cmd_index(int argc, char **argv)
{
	const char *cluster = NULL, *value = NULL, *start = NULL, *end = NULL, *limit = NULL;
	int json = 0, reverse = 0, npos, help, rc;
	const char *cmd = argv[0];
	tool_opt opts[] = {
		{ "cluster", 1, &cluster, NULL }, { "value", 1, &value, NULL },
		{ "start", 1, &start, NULL },     { "end", 1, &end, NULL },
		{ "limit", 1, &limit, NULL },     { "reverse", 0, NULL, &reverse },
		{ "json", 0, NULL, &json },       { NULL, 0, NULL, NULL },
	};
	char **pos = argv + 1;
	const char *sub;

	if ((rc = args_parse(cmd, usage_all, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage_all, help_text);
	if (npos < 1)
		return tool_usage_err(cmd, usage_all, "expected create, list, scan or drop");
	sub = pos[0];
	if (strcmp(sub, "create") != 0 && cluster)
		return tool_usage_err(cmd, usage_all, "--cluster is for index create");
	if (strcmp(sub, "scan") != 0 && (value || start || end || limit || reverse))
		return tool_usage_err(cmd, usage_all, "--value, --start, --end, --limit and "
		                      "--reverse are for index scan");
	if (json && strcmp(sub, "list") != 0 && strcmp(sub, "scan") != 0)
		return tool_usage_err(cmd, usage_all, "--json is for index list and scan");
	if (strcmp(sub, "create") == 0)
		return index_create(cmd, pos, npos, cluster);
	if (strcmp(sub, "list") == 0)
		return index_list(cmd, pos, npos, json);
	if (strcmp(sub, "scan") == 0)
		return index_scan(cmd, pos, npos, value, start, end, limit, reverse, json);
	if (strcmp(sub, "drop") == 0)
		return index_drop(cmd, pos, npos);
	return tool_usage_err(cmd, usage_all, "unknown index command '%s': expected create, "
	                      "list, scan or drop", sub);
}
