/*
 * cmd_schema.c - tables, describe: what a store holds, through the public
 * API (mrtx_tables, mrtx_table_families, mrtx_indexes) and, for the
 * families' version policies, which the public API does not return,
 * txn/admin.h's admin_family_policy; so they work on every backend.
 * Neither creates a store.
 *
 * RADOS tablets (a table's split rows) are not shown: the public API does
 * not expose them.
 */
#include "cmds.h"

#include <stdlib.h>
#include <string.h>

#include "txn/admin.h"
#include "util.h"

/* ----------------------------------------------------------------- tables */

typedef struct tables_ctx {
	mrtx_db *db;
	int json;
	size_t n;
} tables_ctx;

static void json_names(FILE *f, const char *const *names, size_t n)
{
	putc('[', f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			putc(',', f);
		json_bytes(f, names[i], strlen(names[i]));
	}
	putc(']', f);
}

static int tables_one(const char *table, void *payload)
{
	tables_ctx *c = payload;
	const char *const *fams;
	size_t nf;
	int rc;

	if (!c->json) {
		print_escaped(stdout, table, strlen(table), ESC_SPACE);
		putchar('\n');
		c->n++;
		return 0;
	}
	if ((rc = mrtx_table_families(c->db, table, &fams, &nf)))
		return rc;
	fputs(c->n++ ? ",\n{\"name\":" : "\n{\"name\":", stdout);
	json_bytes(stdout, table, strlen(table));
	fputs(",\"families\":", stdout);
	json_names(stdout, fams, nf);
	putchar('}');
	return 0;
}

int cmd_tables(int argc, char **argv)
{
	static const char usage[] = "mrtx tables STORE [--json]";
	int json = 0, npos, help, rc;
	const tool_opt opts[] = { { "json", 0, NULL, &json }, { NULL, 0, NULL, NULL } };
	char **pos = argv + 1;
	tables_ctx c;
	mrtx_db *db;

	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "List the store's tables, one name a line, in name order (index\n"
		     "tables included).  --json prints an array of {name, families}.\n");
	if (npos != 1)
		return tool_usage_err(argv[0], usage, "expected STORE");
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	memset(&c, 0, sizeof(c));
	c.db = db;
	c.json = json;
	if (json)
		putchar('[');
	rc = mrtx_tables(db, tables_one, &c);
	if (json)
		puts(c.n ? "\n]" : "]");
	if (rc)
		rc = tool_fail(argv[0], NULL, rc);
	mrtx_close(db);
	return rc;
}

/* --------------------------------------------------------------- describe */

typedef struct describe_ctx {
	const char *table;
	int json;
	size_t nidx;            /* indexes on the table listed so far */
	mrtx_index_spec of;     /* the index the table holds, when it is one */
	char *of_mem;           /* owns of's strings */
	int is_index_table;
} describe_ctx;

static void text_column(const char *family, mrtx_bytes q)
{
	print_escaped(stdout, family, strlen(family), ESC_SPACE);
	putchar(':');
	print_escaped(stdout, q.data, q.size, ESC_SPACE);
}

static void json_column(const char *family, mrtx_bytes q)
{
	fputs("{\"family\":", stdout);
	json_bytes(stdout, family, strlen(family));
	fputs(",\"qualifier\":", stdout);
	json_bytes(stdout, q.data, q.size);
	putchar('}');
}

/* Pass 1: the indexes whose source is the table (printed as met). */
static int describe_index(const mrtx_index_spec *s, void *payload)
{
	describe_ctx *c = payload;

	if (strcmp(s->index_table, c->table) == 0 && !c->is_index_table) {
		size_t nl = strlen(s->name) + 1, tl = strlen(s->table) + 1;
		size_t fl = strlen(s->family) + 1;
		char *m = malloc(nl + tl + fl + s->qualifier.size + 1);

		if (!m)
			return MRTX_ENOMEM;
		memcpy(m, s->name, nl);
		memcpy(m + nl, s->table, tl);
		memcpy(m + nl + tl, s->family, fl);
		if (s->qualifier.size)
			memcpy(m + nl + tl + fl, s->qualifier.data, s->qualifier.size);
		c->of_mem = m;
		c->of.name = m;
		c->of.table = m + nl;
		c->of.family = m + nl + tl;
		c->of.qualifier = MRTX_BYTES(m + nl + tl + fl, s->qualifier.size);
		c->is_index_table = 1;
	}
	if (strcmp(s->table, c->table) != 0)
		return 0;
	if (c->json) {
		fputs(c->nidx ? "," : "", stdout);
		fputs("{\"name\":", stdout);
		json_bytes(stdout, s->name, strlen(s->name));
		fputs(",\"column\":", stdout);
		json_column(s->family, s->qualifier);
		fputs(",\"index_table\":", stdout);
		json_bytes(stdout, s->index_table, strlen(s->index_table));
		fputs(",\"cluster\":[", stdout);
		for (size_t i = 0; i < s->ncluster; i++) {
			if (i)
				putchar(',');
			json_column(s->cluster[i].family, s->cluster[i].qualifier);
		}
		fputs("]}", stdout);
	} else {
		fputs("index:    ", stdout);
		print_escaped(stdout, s->name, strlen(s->name), ESC_SPACE);
		fputs(" on ", stdout);
		text_column(s->family, s->qualifier);
		fputs(" -> table ", stdout);
		print_escaped(stdout, s->index_table, strlen(s->index_table), ESC_SPACE);
		if (s->ncluster) {
			fputs(", clustered:", stdout);
			for (size_t i = 0; i < s->ncluster; i++) {
				putchar(' ');
				text_column(s->cluster[i].family, s->cluster[i].qualifier);
			}
		}
		putchar('\n');
	}
	c->nidx++;
	return 0;
}

/* Each family's version policy: text "family:   F VERSIONS=N MIN_VERSIONS=N
   TTL=FOREVER|Nms" lines, or a JSON array. */
static int describe_policies(mrtx_db *db, const char *table, size_t nf, int json)
{
	mrtx_family_spec f;
	int rc;

	if (json)
		fputs(",\"policies\":[", stdout);
	for (size_t i = 0; i < nf; i++) {
		if ((rc = admin_family_policy(db, table, i, &f)))
			return rc;
		if (json) {
			fputs(i ? ",{\"name\":" : "{\"name\":", stdout);
			json_bytes(stdout, f.name, strlen(f.name));
			printf(",\"versions\":%lu,\"min_versions\":%lu,\"ttl_ms\":%llu}",
			       (unsigned long)f.max_versions, (unsigned long)f.min_versions,
			       (unsigned long long)f.ttl_ms);
			continue;
		}
		fputs("family:   ", stdout);
		print_escaped(stdout, f.name, strlen(f.name), ESC_SPACE);
		printf(" VERSIONS=%lu MIN_VERSIONS=%lu TTL=", (unsigned long)f.max_versions,
		       (unsigned long)f.min_versions);
		if (f.ttl_ms)
			printf("%llums\n", (unsigned long long)f.ttl_ms);
		else
			puts("FOREVER");
	}
	if (json)
		putchar(']');
	return 0;
}

int cmd_describe(int argc, char **argv)
{
	static const char usage[] = "mrtx describe STORE TABLE [--json]";
	int json = 0, npos, help, rc, held = 0;
	const tool_opt opts[] = { { "json", 0, NULL, &json }, { NULL, 0, NULL, NULL } };
	const char *const *fams;
	char **pos = argv + 1;
	describe_ctx c;
	mrtx_db *db;
	size_t nf;

	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Describe TABLE: its column families, in their order (the order of a\n"
		     "row's cells); each family's version policy, as create-table gave it:\n"
		     "  family:   F VERSIONS=N MIN_VERSIONS=N TTL=FOREVER|Nms\n"
		     "(VERSIONS: versions kept of each cell, default 1; MIN_VERSIONS: kept\n"
		     "even past the TTL, default 0; TTL: versions older are dropped, default\n"
		     "FOREVER; a family added by add-family keeps 1 version); the secondary\n"
		     "indexes on it (name, indexed column, index table, clustered columns);\n"
		     "and, for an index table, the index it holds.  A table frozen (or, on\n"
		     "RADOS, closed) by a drop or truncate that has not finished, one cut\n"
		     "short included, gets a line\n"
		     "  state:    frozen|closed by a drop or truncate ...\n"
		     "--json prints {table, families, policies: [{name, versions,\n"
		     "min_versions, ttl_ms (0: forever)}], held: null, \"frozen\" or\n"
		     "\"closed\", indexes: [{name, column, index_table, cluster}], index_of:\n"
		     "null or {name, table, column}}.\n");
	if (npos != 2)
		return tool_usage_err(argv[0], usage, "expected STORE and TABLE");
	if ((rc = arg_name(argv[0], "table", pos[1])))
		return rc;
	if ((rc = tool_open(argv[0], pos[0], 0, &db)))
		return rc;
	memset(&c, 0, sizeof(c));
	c.table = pos[1];
	c.json = json;
	if ((rc = mrtx_table_families(db, c.table, &fams, &nf))) {
		rc = tool_fail(argv[0], NULL, rc);
		goto out;
	}
	if (json) {
		fputs("{\"table\":", stdout);
		json_bytes(stdout, c.table, strlen(c.table));
		fputs(",\"families\":", stdout);
		json_names(stdout, fams, nf);
		if ((rc = describe_policies(db, c.table, nf, 1)))
			goto policy_failed;
		if ((rc = admin_table_held(db, c.table, &held)))
			goto held_failed;
		printf(",\"held\":%s", held == ADMIN_HELD_CLOSED ? "\"closed\"" :
		       held ? "\"frozen\"" : "null");
		fputs(",\"indexes\":[", stdout);
	} else {
		fputs("table:    ", stdout);
		print_escaped(stdout, c.table, strlen(c.table), ESC_SPACE);
		fputs("\nfamilies:", stdout);
		for (size_t i = 0; i < nf; i++) {
			putchar(' ');
			print_escaped(stdout, fams[i], strlen(fams[i]), ESC_SPACE);
		}
		putchar('\n');
		if ((rc = describe_policies(db, c.table, nf, 0)))
			goto policy_failed;
		if ((rc = admin_table_held(db, c.table, &held)))
			goto held_failed;
		if (held)
			printf("state:    %s by a drop or truncate (of the table or a family) that "
			       "has not finished: commits that write it fail%s; run that drop or "
			       "truncate again to finish it\n",
			       held == ADMIN_HELD_CLOSED ? "closed" : "frozen",
			       held == ADMIN_HELD_CLOSED ? " and reads wait" : "");
	}
	rc = mrtx_indexes(db, describe_index, &c);
	if (json) {
		fputs("],\"index_of\":", stdout);
		if (c.is_index_table) {
			fputs("{\"name\":", stdout);
			json_bytes(stdout, c.of.name, strlen(c.of.name));
			fputs(",\"table\":", stdout);
			json_bytes(stdout, c.of.table, strlen(c.of.table));
			fputs(",\"column\":", stdout);
			json_column(c.of.family, c.of.qualifier);
			putchar('}');
		} else {
			fputs("null", stdout);
		}
		puts("}");
	} else if (c.is_index_table) {
		fputs("index of: ", stdout);
		print_escaped(stdout, c.of.name, strlen(c.of.name), ESC_SPACE);
		fputs(" (table ", stdout);
		print_escaped(stdout, c.of.table, strlen(c.of.table), ESC_SPACE);
		fputs(", column ", stdout);
		text_column(c.of.family, c.of.qualifier);
		fputs(")\n", stdout);
	}
	if (rc)
		rc = tool_fail(argv[0], "indexes", rc);
	goto out;
policy_failed:
	fflush(stdout);
	rc = tool_fail(argv[0], "family policies", rc);
	goto out;
held_failed:
	fflush(stdout);
	rc = tool_fail(argv[0], "the table's state", rc);
out:
	free(c.of_mem);
	mrtx_close(db);
	return rc;
}
