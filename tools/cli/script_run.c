/*
 * script_run.c - run one command of the line language (script.h) in an
 * open transaction, for `mrtx txn`, `mrtx shell` and the one-shot
 * read-modify-write commands (cmd_rmw.c).
 *
 * Reads print to the given stream; writes are buffered.  incr, append,
 * check-and-put and check read the cell and decide in the same
 * transaction, so what they read is validated at commit like any other
 * read: a concurrent change of the cell makes the commit fail with
 * MRTX_CONFLICT (mrtx_run retries it) instead of being overwritten.
 *
 * Counters are decimal ASCII ("-12", "0", "42"): readable in get, scan and
 * dump output, and what a user types in put.  A missing cell counts as 0.
 */
#include "cmds.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cellout.h"
#include "script.h"
#include "util.h"

const char script_help_commands[] =
	"  get TABLE ROW FAMILY:QUALIFIER        print the value, or (not found)\n"
	"  get TABLE ROW                         print the row's cells as\n"
	"                                        FAMILY:QUALIFIER VALUE, or (not found)\n"
	"  put TABLE ROW FAMILY:QUALIFIER VALUE\n"
	"  del TABLE ROW FAMILY:QUALIFIER\n"
	"  delrow TABLE ROW\n"
	"  scan TABLE [START [END]] [--reverse] [--limit N] [--family F] [--prefix P]\n"
	"       [--versions N] [--time-range START END]\n"
	"                                        print ROW FAMILY:QUALIFIER VALUE lines\n"
	"                                        (default: every row and family, in\n"
	"                                        ascending order; --limit 0 or none:\n"
	"                                        no limit); --versions and --time-range\n"
	"                                        (commit timestamps in [START, END)) as\n"
	"                                        mrtx scan's, with ROW FAMILY:QUALIFIER\n"
	"                                        TS VALUE lines\n"
	"  incr TABLE ROW FAMILY:QUALIFIER [DELTA]\n"
	"                                        add DELTA (default 1) to a decimal\n"
	"                                        counter (missing: 0); print the result\n"
	"  append TABLE ROW FAMILY:QUALIFIER SUFFIX\n"
	"  check-and-put TABLE ROW FAMILY:QUALIFIER EXPECTED|--absent NEWVALUE\n"
	"                                        put NEWVALUE if the cell holds EXPECTED\n"
	"                                        (--absent: if it is missing)\n"
	"  check TABLE ROW FAMILY:QUALIFIER OP NUMBER\n"
	"                                        OP: == != < <= > >=, the cell read as a\n"
	"                                        counter (missing: 0)\n"
	"  check TABLE ROW FAMILY:QUALIFIER absent|present\n";

/* "TABLE/ROW FAMILY:QUALIFIER", escaped, for messages. */
static void cell_name(char *buf, size_t len, const script_cmd *c)
{
	char *r = escape_dup(c->row.data, c->row.size, ESC_SPACE);
	char *q = escape_dup(c->qualifier.data, c->qualifier.size, ESC_SPACE);

	snprintf(buf, len, "%s/%s %s:%s", c->table, r ? r : "?", c->family, q ? q : "?");
	free(r);
	free(q);
}

/* A value for a message: escaped, quoted, cut after 40 bytes. */
static void value_text(char *buf, size_t len, mrtx_bytes v)
{
	char *e = escape_dup(v.data, v.size > 40 ? 40 : v.size, 0);

	snprintf(buf, len, "'%s'%s", e ? e : "?", v.size > 40 ? "..." : "");
	free(e);
}

/* The cell: 0 with *found (and *v when found), or the mrtx error. */
static int read_cell(mrtx_txn *txn, const script_cmd *c, mrtx_bytes *v, int *found)
{
	int rc = mrtx_get(txn, c->table, c->row, c->family, c->qualifier, v);

	*found = rc == 0;
	if (rc == MRTX_NOTFOUND) {
		*v = MRTX_BYTES("", 0);
		return 0;
	}
	return rc;
}

/* The cell as a counter (missing: 0); SCRIPT_RC_VALUE with msg when it
   holds something else. */
static int read_counter(mrtx_txn *txn, const script_cmd *c, int64_t *out, char *msg,
                        size_t msglen)
{
	char name[300], val[80];
	mrtx_bytes v;
	int found, rc;

	*out = 0;
	if ((rc = read_cell(txn, c, &v, &found)) || !found)
		return rc;
	if (script_parse_i64(v.data, v.size, 0, out) == 0)
		return 0;
	cell_name(name, sizeof(name), c);
	value_text(val, sizeof(val), v);
	snprintf(msg, msglen, "%s holds %s, not a decimal integer (a counter is written as "
	         "digits with an optional leading '-', e.g. put ... 0)", name, val);
	return SCRIPT_RC_VALUE;
}

static int run_incr(mrtx_txn *txn, const script_cmd *c, FILE *out, char *msg,
                    size_t msglen)
{
	int64_t v, d = c->number;
	char name[300], buf[24];
	int rc, n;

	if ((rc = read_counter(txn, c, &v, msg, msglen)))
		return rc;
	if ((d > 0 && v > INT64_MAX - d) || (d < 0 && v < INT64_MIN - d)) {
		cell_name(name, sizeof(name), c);
		snprintf(msg, msglen, "%s: %" PRId64 " %s %" PRIu64 " leaves the signed 64-bit "
		         "range (-9223372036854775808 to 9223372036854775807)", name, v,
		         d < 0 ? "-" : "+", d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d);
		return SCRIPT_RC_VALUE;
	}
	n = snprintf(buf, sizeof(buf), "%" PRId64, v + d);
	if ((rc = mrtx_put(txn, c->table, c->row, c->family, c->qualifier,
	                   MRTX_BYTES(buf, (size_t)n))))
		return rc;
	fprintf(out, "%s\n", buf);
	return 0;
}

static int run_append(mrtx_txn *txn, const script_cmd *c, char *msg, size_t msglen)
{
	char name[300];
	mrtx_bytes v;
	int found, rc;
	char *buf;

	if ((rc = read_cell(txn, c, &v, &found)))
		return rc;
	if (v.size + c->value.size > MRTX_MAX_VALUE) {
		cell_name(name, sizeof(name), c);
		snprintf(msg, msglen, "%s: %zu bytes and the %zu appended would pass the largest "
		         "value, 64 MiB", name, v.size, c->value.size);
		return SCRIPT_RC_VALUE;
	}
	if (!(buf = malloc(v.size + c->value.size + 1)))
		return MRTX_ENOMEM;
	memcpy(buf, v.data, v.size);
	if (c->value.size)
		memcpy(buf + v.size, c->value.data, c->value.size);
	rc = mrtx_put(txn, c->table, c->row, c->family, c->qualifier,
	              MRTX_BYTES(buf, v.size + c->value.size));
	free(buf);
	return rc;
}

static int run_check_and_put(mrtx_txn *txn, const script_cmd *c, char *msg, size_t msglen)
{
	char name[300], have[80], want[80];
	mrtx_bytes v;
	int found, rc;

	if ((rc = read_cell(txn, c, &v, &found)))
		return rc;
	if (c->absent ? !found :
	    found && v.size == c->expected.size &&
	    (v.size == 0 || memcmp(v.data, c->expected.data, v.size) == 0))
		return mrtx_put(txn, c->table, c->row, c->family, c->qualifier, c->value);
	cell_name(name, sizeof(name), c);
	value_text(have, sizeof(have), v);
	value_text(want, sizeof(want), c->expected);
	if (c->absent)
		snprintf(msg, msglen, "%s holds %s; expected it missing (--absent)", name, have);
	else if (!found)
		snprintf(msg, msglen, "%s is missing; expected %s", name, want);
	else
		snprintf(msg, msglen, "%s holds %s; expected %s", name, have, want);
	return SCRIPT_RC_CHECK;
}

static int run_check(mrtx_txn *txn, const script_cmd *c, char *msg, size_t msglen)
{
	static const char *const ops[] = { "", "==", "!=", "<", "<=", ">", ">=" };
	int64_t v, n = c->number;
	char name[300], have[80];
	int found, rc, ok;
	mrtx_bytes b;

	if (c->cmp == SCRIPT_CMP_ABSENT || c->cmp == SCRIPT_CMP_PRESENT) {
		if ((rc = read_cell(txn, c, &b, &found)))
			return rc;
		if (found == (c->cmp == SCRIPT_CMP_PRESENT))
			return 0;
		cell_name(name, sizeof(name), c);
		value_text(have, sizeof(have), b);
		if (found)
			snprintf(msg, msglen, "%s holds %s, not absent", name, have);
		else
			snprintf(msg, msglen, "%s is missing, not present", name);
		return SCRIPT_RC_CHECK;
	}
	if ((rc = read_counter(txn, c, &v, msg, msglen)))
		return rc;
	switch (c->cmp) {
	case SCRIPT_CMP_EQ: ok = v == n; break;
	case SCRIPT_CMP_NE: ok = v != n; break;
	case SCRIPT_CMP_LT: ok = v < n; break;
	case SCRIPT_CMP_LE: ok = v <= n; break;
	case SCRIPT_CMP_GT: ok = v > n; break;
	default: ok = v >= n; break;
	}
	if (ok)
		return 0;
	cell_name(name, sizeof(name), c);
	snprintf(msg, msglen, "%s is %" PRId64 ", not %s %" PRId64, name, v, ops[c->cmp], n);
	return SCRIPT_RC_CHECK;
}

static int run_scan(mrtx_txn *txn, const script_cmd *c, FILE *out)
{
	unsigned char end[MRTX_MAX_ROW];
	mrtx_scan_spec spec;
	scan_out o;

	memset(&spec, 0, sizeof(spec));
	memset(&o, 0, sizeof(o));
	o.versions = c->versions;
	o.ts_range = c->ts_range;
	o.ts_lo = c->ts_lo;
	o.ts_hi = c->ts_hi;
	spec.table = c->table;
	spec.start = c->start;
	spec.end = c->end;
	spec.family = c->scan_family;
	spec.reverse = c->reverse;
	if (c->ts_range)
		o.limit = c->limit; /* (rows with a version in range) */
	else
		spec.limit_rows = c->limit;
	if (c->prefix.size) {
		spec.start = c->prefix;
		if (c->prefix.size <= MRTX_MAX_ROW) /* else mrtx_scan_open refuses start */
			spec.end = MRTX_BYTES(end, prefix_end(c->prefix.data, c->prefix.size, end));
	}
	return scan_cells(txn, &spec, out, &o);
}

int script_run(mrtx_txn *txn, const script_cmd *c, FILE *out, const char **step, char *msg,
               size_t msglen)
{
	size_t ncells;
	mrtx_bytes v;
	int rc;

	msg[0] = '\0';
	switch (c->op) {
	case SCRIPT_GET:
		*step = "get";
		if (c->whole_row) {
			rc = row_print_cells(txn, c->table, c->row, out, &ncells);
			if (rc == 0 && ncells == 0)
				fputs("(not found)\n", out);
			fflush(out);
			return rc;
		}
		rc = mrtx_get(txn, c->table, c->row, c->family, c->qualifier, &v);
		if (rc == MRTX_NOTFOUND) {
			fputs("(not found)\n", out);
			rc = 0;
		} else if (rc == 0) {
			print_escaped(out, v.data, v.size, 0);
			putc('\n', out);
		}
		fflush(out);
		return rc;
	case SCRIPT_PUT:
		*step = "put";
		return mrtx_put(txn, c->table, c->row, c->family, c->qualifier, c->value);
	case SCRIPT_DEL:
		*step = "del";
		return mrtx_delete(txn, c->table, c->row, c->family, c->qualifier);
	case SCRIPT_DELROW:
		*step = "delrow";
		return mrtx_delete_row(txn, c->table, c->row);
	case SCRIPT_SCAN:
		*step = "scan";
		rc = run_scan(txn, c, out);
		fflush(out);
		return rc;
	case SCRIPT_INCR:
		*step = "incr";
		rc = run_incr(txn, c, out, msg, msglen);
		fflush(out);
		return rc;
	case SCRIPT_APPEND:
		*step = "append";
		return run_append(txn, c, msg, msglen);
	case SCRIPT_CHECK_AND_PUT:
		*step = "check-and-put";
		return run_check_and_put(txn, c, msg, msglen);
	case SCRIPT_CHECK:
		*step = "check";
		return run_check(txn, c, msg, msglen);
	default:
		return 0;
	}
}
