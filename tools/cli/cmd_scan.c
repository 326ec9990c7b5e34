/*
 * cmd_scan.c - scan, and the printing of cells that scan, a whole-row get
 * and the scripts' scan share (cellout.h).
 *
 * Filters the library's scan spec has (row range, family, qualifier range,
 * direction, row limit) run in the store; a column list and a value prefix
 * are applied here, to the cells the scan returns, so the row limit is then
 * counted here too (a row none of whose cells pass is not counted).  A scan
 * that stops at its limit is validated only over the rows it passed, as the
 * library's own limit is.
 */
#include "cmds.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cellout.h"
#include "keyfmt.h"
#include "util.h"
#include "valio.h"

static int bytes_eq(mrtx_bytes a, mrtx_bytes b)
{
	return a.size == b.size && (a.size == 0 || memcmp(a.data, b.data, a.size) == 0);
}

static void scan_cell(FILE *f, const mrtx_cell *cell, scan_out *o, int newrow, uint64_t ts)
{
	int bad = 0;

	if (o->json) {
		fputs("{\"row\":", f);
		json_data(f, cell->row.data, cell->row.size);
		if (o->key) {
			fputs(",\"key\":", f);
			bad = keyfmt_json(f, o->key, cell->row);
		}
		fputs(",\"family\":", f);
		json_str(f, cell->family, strlen(cell->family));
		fputs(",\"qualifier\":", f);
		json_data(f, cell->qualifier.data, cell->qualifier.size);
		if (o->versions || o->ts_range)
			fprintf(f, ",\"ts\":%llu", (unsigned long long)ts);
		fputs(",\"value\":", f);
		json_data(f, cell->value.data, cell->value.size);
		fputs("}\n", f);
	} else {
		if (o->rowless)
			;
		else if (o->key)
			bad = keyfmt_print(f, o->key, cell->row, ESC_SPACE);
		else
			print_escaped(f, cell->row.data, cell->row.size, ESC_SPACE);
		fprintf(f, o->rowless ? "%s:" : " %s:", cell->family);
		print_escaped(f, cell->qualifier.data, cell->qualifier.size, ESC_SPACE);
		if (o->versions || o->ts_range)
			fprintf(f, " %llu", (unsigned long long)ts);
		putc(' ', f);
		print_escaped(f, cell->value.data, cell->value.size, 0);
		putc('\n', f);
	}
	if (bad && newrow)
		o->unsplit++;
}

/* Does the cell pass the filters applied here (--columns, --value-prefix)? */
static int cell_wanted(const scan_out *o, const mrtx_cell *cell)
{
	size_t i;

	if (o->value_prefix.size &&
	    (cell->value.size < o->value_prefix.size ||
	     memcmp(cell->value.data, o->value_prefix.data, o->value_prefix.size) != 0))
		return 0;
	for (i = 0; i < o->ncols; i++)
		if (strcmp(o->cols[i].family, cell->family) == 0 &&
		    bytes_eq(o->cols[i].qualifier, cell->qualifier))
			return 1;
	return o->ncols == 0;
}

/* --time-range: is this version of the cell wanted?  The scan returns
   every kept version of each cell, newest first; up to versions (or 1) of
   those in [ts_lo, ts_hi) pass.  A write of the transaction itself (ts 0)
   has no timestamp yet and is in no range. */
typedef struct range_state {
	mrtx_cell last;   /* the cell of the previous version seen */
	size_t taken;     /* versions of it passed */
	int any;
} range_state;

static int in_range(const scan_out *o, range_state *r, const mrtx_cell *cell, uint64_t ts)
{
	size_t max = o->versions ? o->versions : 1;

	if (!r->any || !bytes_eq(r->last.row, cell->row) ||
	    strcmp(r->last.family, cell->family) != 0 ||
	    !bytes_eq(r->last.qualifier, cell->qualifier)) {
		r->last = *cell; /* (cell memory lives as long as the transaction) */
		r->taken = 0;
		r->any = 1;
	}
	if (ts == 0 || ts < o->ts_lo || ts >= o->ts_hi || r->taken == max)
		return 0;
	r->taken++;
	return 1;
}

int scan_cells(mrtx_txn *txn, const mrtx_scan_spec *spec, FILE *f, scan_out *o)
{
	mrtx_bytes prev = MRTX_BYTES(NULL, 0);
	range_state range;
	mrtx_scanner *s;
	mrtx_cell cell;
	uint32_t nver = o->ts_range ? UINT32_MAX : (uint32_t)o->versions;
	int rc;

	o->cells = o->rows = o->unsplit = 0;
	memset(&range, 0, sizeof(range));
	if ((rc = mrtx_scan_open(txn, spec, &s)))
		return rc;
	if (nver && (rc = mrtx_scan_versions(s, nver))) {
		mrtx_scan_close(s);
		return rc;
	}
	while ((rc = mrtx_scan_next(s, &cell)) == 0) {
		int newrow;

		if (o->only_row.size && !bytes_eq(o->only_row, cell.row))
			break; /* past the row (a row too long for an end bound) */
		if (o->ts_range && !in_range(o, &range, &cell, mrtx_scan_ts(s)))
			continue;
		if (!cell_wanted(o, &cell))
			continue;
		/* a row's cells come together; cell memory lives as long as txn */
		newrow = o->cells == 0 || !bytes_eq(prev, cell.row);
		if (newrow) {
			if (o->limit && o->rows == o->limit)
				break;
			o->rows++;
			prev = cell.row;
		}
		o->cells++;
		if (!o->count)
			scan_cell(f, &cell, o, newrow, mrtx_scan_ts(s));
	}
	mrtx_scan_close(s);
	return rc == MRTX_NOTFOUND ? 0 : rc;
}

int scan_print_cells(mrtx_txn *txn, const mrtx_scan_spec *spec, FILE *f)
{
	scan_out o;

	memset(&o, 0, sizeof(o));
	return scan_cells(txn, spec, f, &o);
}

void row_spec(const char *table, mrtx_bytes row, unsigned char *end, mrtx_scan_spec *spec,
              scan_out *o)
{
	memset(spec, 0, sizeof(*spec));
	spec->table = table;
	spec->start = row;
	if (row.size < MRTX_MAX_ROW) {
		/* row + "\0": the first row after it, so the scan observes this row only */
		memcpy(end, row.data, row.size);
		end[row.size] = 0;
		spec->end = MRTX_BYTES(end, row.size + 1);
	} else {
		o->only_row = row;
		spec->limit_rows = 1;
	}
	o->rowless = 1;
}

int row_print_cells(mrtx_txn *txn, const char *table, mrtx_bytes row, FILE *f,
                    size_t *ncells)
{
	unsigned char end[MRTX_MAX_ROW];
	mrtx_scan_spec spec;
	scan_out o;
	int rc;

	memset(&o, 0, sizeof(o));
	row_spec(table, row, end, &spec, &o);
	rc = scan_cells(txn, &spec, f, &o);
	*ncells = o.cells;
	return rc;
}

int scan_job_fn(mrtx_txn *txn, void *p)
{
	scan_job *a = p;
	FILE *f = memout_restart(&a->mem);

	return f ? scan_cells(txn, &a->spec, f, &a->out) : MRTX_ENOMEM;
}

/* --columns F:Q[,F:Q...]: split at each ',' (a ',' inside a qualifier is
   written \x2c), each unescaped in place.  *out is malloc'd. */
static int parse_columns(const char *cmd, char *arg, cell_column **out, size_t *n)
{
	size_t cap = 1, i = 0;
	cell_column *cols;
	char *p, *next;

	for (p = arg; *p; p++)
		cap += *p == ',';
	if (!(cols = calloc(cap, sizeof(*cols)))) {
		tool_err(cmd, "out of memory");
		return EXIT_FAIL;
	}
	for (p = arg; p; p = next) {
		int rc;

		if ((next = strchr(p, ',')))
			*next++ = '\0';
		if ((rc = arg_column(cmd, p, &cols[i].family, &cols[i].qualifier))) {
			free(cols);
			return rc;
		}
		i++;
	}
	*out = cols;
	*n = i;
	return 0;
}

/* The family every column names, or NULL when they differ. */
static const char *columns_family(const cell_column *cols, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (strcmp(cols[i].family, cols[0].family) != 0)
			return NULL;
	return n ? cols[0].family : NULL;
}

/* Does every column name a family of the table?  0, or EXIT_USAGE / EXIT_FAIL
   (message printed).  A wrong family would otherwise match nothing, silently. */
static int columns_check(const char *cmd, mrtx_db *db, const char *table,
                         const cell_column *cols, size_t n)
{
	const char *const *fams;
	size_t nf, i, j;
	int rc;

	if ((rc = mrtx_table_families(db, table, &fams, &nf)))
		return tool_fail(cmd, NULL, rc);
	for (i = 0; i < n; i++) {
		for (j = 0; j < nf && strcmp(fams[j], cols[i].family) != 0; j++)
			;
		if (j == nf) {
			tool_err(cmd, "--columns: table '%s' has no family '%s' (mrtx describe "
			         "lists its families)", table, cols[i].family);
			return EXIT_USAGE;
		}
	}
	return 0;
}

/* --start / --end: escaped bytes, or with --key the leading parts of a key */
static int scan_bound(const char *cmd, const char *what, const char *arg, const keyfmt *kf,
                      mrtx_key *k, mrtx_bytes *out)
{
	int rc;

	if (!arg || !*arg)
		return 0; /* unbounded */
	if (!kf)
		return arg_bytes(cmd, what, (char *)arg, out);
	if ((rc = keyfmt_build(cmd, what, kf, arg, 1, k)))
		return rc;
	*out = MRTX_BYTES(k->buf, k->size);
	return 0;
}

static int ts_word(const char *cmd, const char *what, const char *w, uint64_t *out)
{
	char *end;

	errno = 0;
	if (!w || *w < '0' || *w > '9' ||
	    ((*out = strtoull(w, &end, 10)), errno != 0 || *end != '\0')) {
		tool_err(cmd, "--time-range %s: expected a commit timestamp (decimal), got '%s'",
		         what, w ? w : "");
		return EXIT_USAGE;
	}
	return 0;
}

int arg_time_range(const char *cmd, int *argc, char **argv, scan_out *o)
{
	int i, rc;

	for (i = 1; i < *argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--time-range") == 0)
			break;
	if (i >= *argc || strcmp(argv[i], "--time-range") != 0)
		return 0;
	if (i + 2 >= *argc) {
		tool_err(cmd, "--time-range needs START and END (commit timestamps; versions "
		         "at START or later and before END)");
		return EXIT_USAGE;
	}
	if ((rc = ts_word(cmd, "START", argv[i + 1], &o->ts_lo)) ||
	    (rc = ts_word(cmd, "END", argv[i + 2], &o->ts_hi)))
		return rc;
	if (o->ts_hi <= o->ts_lo) {
		tool_err(cmd, "--time-range: END (%s) must be above START (%s): the range is "
		         "[START, END)", argv[i + 2], argv[i + 1]);
		return EXIT_USAGE;
	}
	o->ts_range = 1;
	memmove(argv + i, argv + i + 3, (size_t)(*argc - i - 3 + 1) * sizeof(*argv));
	*argc -= 3;
	return 0;
}

int cmd_scan(int argc, char **argv)
{
	static const char usage[] = "mrtx scan STORE TABLE [--start ROW] [--end ROW] "
	                            "[--prefix ROW] [--family F] [--qual-start Q] "
	                            "[--qual-end Q] [--columns F:Q,...] [--value-prefix V] "
	                            "[--reverse] [--limit N] [--count] [--json] "
	                            "[--key FORMAT] [--at TS] [--versions N] "
	                            "[--time-range START END]";
	const char *start = NULL, *end = NULL, *limit = NULL, *family = NULL, *key = NULL;
	const char *cmd = argv[0], *at = NULL, *nver = NULL, *prefix = NULL, *qs = NULL;
	const char *qe = NULL, *columns = NULL, *vprefix = NULL;
	int reverse = 0, count = 0, json = 0, npos, help, rc;
	uint64_t at_ts = 0;
	const tool_opt opts[] = {
		{ "start", 1, &start, NULL }, { "end", 1, &end, NULL }, { "at", 1, &at, NULL },
		{ "family", 1, &family, NULL }, { "limit", 1, &limit, NULL },
		{ "reverse", 0, NULL, &reverse }, { "count", 0, NULL, &count },
		{ "json", 0, NULL, &json }, { "key", 1, &key, NULL },
		{ "versions", 1, &nver, NULL }, { "prefix", 1, &prefix, NULL },
		{ "qual-start", 1, &qs, NULL }, { "qual-end", 1, &qe, NULL },
		{ "columns", 1, &columns, NULL }, { "value-prefix", 1, &vprefix, NULL },
		{ NULL, 0, NULL, NULL }
	};
	unsigned char pend[MRTX_MAX_ROW];
	char **pos = argv + 1, *colbuf = NULL;
	cell_column *cols = NULL;
	mrtx_key kstart, kend;
	size_t lim = 0;
	scan_job a;
	keyfmt kf;
	mrtx_db *db;

	memset(&a, 0, sizeof(a));
	if ((rc = arg_time_range(cmd, &argc, argv, &a.out)))
		return rc;
	if ((rc = args_parse(cmd, usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Print the cells of rows [START, END) of TABLE, one per line:\n"
		     "  ROW FAMILY:QUALIFIER VALUE\n"
		     "escaped (ROW and QUALIFIER also escape spaces as \\x20).  Every option\n"
		     "is off by default: every row, family and cell, in ascending order.\n"
		     "--start and --end bound the rows (default: unbounded; END excluded);\n"
		     "--prefix ROW visits only the rows starting with ROW (instead of\n"
		     "--start and --end).  --family F prints only family F, and with it\n"
		     "--qual-start Q and --qual-end Q bound its qualifiers to [Q, Q).\n"
		     "--columns F:Q,F:Q... prints only those cells (a ',' in a qualifier is\n"
		     "written \\x2c).  --value-prefix V prints only cells whose value starts\n"
		     "with V.  --limit N stops after N rows that have a cell to print\n"
		     "(default, and 0: no limit); --reverse walks rows in descending order\n"
		     "(cells within a row stay ascending).  --json prints one JSON object a\n"
		     "cell, one a line, as get --json does.  --count prints only the number\n"
		     "of cells (with --json: {\"cells\": N, \"rows\": N}).\n"
		     "--key FORMAT prints each row as the parts of a composite key, e.g.\n"
		     "(42, \"alice\") (a row without that form is printed escaped, and a\n"
		     "note on stderr counts such rows); --start and --end are then given as\n"
		     "parts too, and may give only the leading ones.  FORMAT lists the part\n"
		     "types: bytes or str, u32, u64, i32, i64, rts, salt, fixedN, hashN.\n"
		     "--at TS reads the table as it was at commit timestamp TS (default:\n"
		     "now; see get --versions for the timestamps cells were written at).\n"
		     "--versions N prints up to N versions of each cell (default 1), newest\n"
		     "first, each line with its commit timestamp: ROW FAMILY:QUALIFIER TS\n"
		     "VALUE (JSON: \"ts\").  --time-range START END prints only versions\n"
		     "whose commit timestamp is in [START, END) (HBase's TIMERANGE): the\n"
		     "newest such version of each cell, or up to --versions N of them, with\n"
		     "timestamps as --versions prints them.\n");
	if (npos != 2)
		return tool_usage_err(cmd, usage, "expected STORE and TABLE");
	if (prefix && (start || end || key))
		return tool_usage_err(cmd, usage, "--prefix replaces --start and --end, and "
		                      "takes bytes (with --key, give --start and --end as the "
		                      "leading parts instead)");
	if ((qs || qe) && !family)
		return tool_usage_err(cmd, usage, "--qual-start and --qual-end bound the "
		                      "qualifiers of one family: add --family F");
	if (columns && family)
		return tool_usage_err(cmd, usage, "--columns names its families: drop --family, "
		                      "or give the columns of that family only");
	if ((rc = arg_name(cmd, "table", pos[1])))
		return rc;
	a.spec.table = pos[1];
	a.spec.reverse = reverse;
	a.out.json = json;
	a.out.count = count;
	if ((key && (rc = keyfmt_parse(cmd, key, &kf))) ||
	    (rc = scan_bound(cmd, "--start", start, key ? &kf : NULL, &kstart, &a.spec.start)) ||
	    (rc = scan_bound(cmd, "--end", end, key ? &kf : NULL, &kend, &a.spec.end)) ||
	    (prefix && (rc = arg_bytes(cmd, "--prefix", (char *)prefix, &a.spec.start))) ||
	    (family && (rc = arg_name(cmd, "--family", (char *)family))) ||
	    (qs && (rc = arg_bytes(cmd, "--qual-start", (char *)qs, &a.spec.qual_start))) ||
	    (qe && (rc = arg_bytes(cmd, "--qual-end", (char *)qe, &a.spec.qual_end))) ||
	    (vprefix && (rc = arg_bytes(cmd, "--value-prefix", (char *)vprefix,
	                                &a.out.value_prefix))) ||
	    (limit && (rc = arg_size(cmd, "--limit", limit, &lim))) ||
	    (at && (rc = arg_ts(cmd, at, &at_ts))) ||
	    (nver && (rc = arg_size(cmd, "--versions", nver, &a.out.versions))))
		return rc;
	if (nver && (a.out.versions == 0 || a.out.versions > UINT32_MAX))
		return tool_usage_err(cmd, usage, "--versions: 1 to 4294967295");
	if (prefix && a.spec.start.size == 0)
		return tool_usage_err(cmd, usage, "--prefix: give at least one byte (an empty "
		                      "prefix is every row: drop the option)");
	if (prefix && a.spec.start.size <= MRTX_MAX_ROW)
		a.spec.end = MRTX_BYTES(pend, prefix_end(a.spec.start.data, a.spec.start.size,
		                                         pend));
	if (columns) {
		if (!(colbuf = strdup(columns))) {
			tool_err(cmd, "out of memory");
			return EXIT_FAIL;
		}
		if ((rc = parse_columns(cmd, colbuf, &cols, &a.out.ncols))) {
			free(colbuf);
			return rc;
		}
		a.out.cols = cols;
		family = columns_family(cols, a.out.ncols); /* narrows the store's walk */
	}
	/* the limit counts rows with a cell to print: here when cells are
	   filtered here, else in the store */
	if (columns || vprefix || a.out.ts_range)
		a.out.limit = lim;
	else
		a.spec.limit_rows = lim;
	a.out.key = key ? &kf : NULL;
	a.spec.family = family;
	if ((rc = tool_open(cmd, pos[0], 0, &db)))
		goto out_args;
	if (cols && (rc = columns_check(cmd, db, a.spec.table, cols, a.out.ncols)))
		goto out_db;
	rc = at ? run_at(db, at_ts, scan_job_fn, &a) : mrtx_run(db, scan_job_fn, &a, 0);
	memout_finish(&a.mem, rc == 0 && !count, stdout);
	if (rc) {
		rc = tool_fail(cmd, NULL, rc);
	} else {
		if (count && json)
			printf("{\"cells\":%zu,\"rows\":%zu}\n", a.out.cells, a.out.rows);
		else if (count)
			printf("%zu\n", a.out.cells);
		rc = stdout_finish(cmd);
		if (a.out.unsplit)
			tool_err(cmd, "note: %zu row%s not of the form --key %s (%s)", a.out.unsplit,
			         a.out.unsplit == 1 ? " is" : "s are", kf.text,
			         json ? "\"key\" is null" : "printed escaped");
	}
out_db:
	mrtx_close(db);
out_args:
	free(cols);
	free(colbuf);
	return rc;
}
