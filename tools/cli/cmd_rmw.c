/*
 * cmd_rmw.c - incr, append, check-and-put: read a cell and write it back in
 * one transaction, run through mrtx_run, so a concurrent change of the cell
 * between the read and the write is a conflict that is retried, never a
 * lost update.  The work is script_run's (the same commands in `mrtx txn`
 * and the shell).  Also check STORE TABLE ROW ...: a script's check in a
 * transaction of its own, which reads the cell and writes nothing.
 *
 * When the condition of check-and-put does not hold, or incr meets a cell
 * that is no counter, the attempt ends with nothing buffered and commits:
 * the read is validated like any other, so the failure reported is one a
 * serial order of the transactions would give.
 */
#include "cmds.h"

#include <stdlib.h>
#include <string.h>

#include "keyfmt.h"
#include "script.h"
#include "util.h"

typedef struct rmw_ctx {
	script_cmd c;
	const char *step;
	memout out;
	int outcome;    /* SCRIPT_RC_*, or 0 */
	char msg[400];
} rmw_ctx;

static int rmw_fn(mrtx_txn *txn, void *p)
{
	rmw_ctx *r = p;
	FILE *f = memout_restart(&r->out);
	int rc;

	if (!f)
		return MRTX_ENOMEM;
	rc = script_run(txn, &r->c, f, &r->step, r->msg, sizeof(r->msg));
	r->outcome = rc > 0 ? rc : 0;
	return rc > 0 ? 0 : rc;
}

#define KEY_HELP                                                                   \
	"--key FORMAT gives ROW as the parts of a composite key, as for put.\n"

#define EXIT_HELP                                                                  \
	"Exit status: 0 done; 1 an error (nothing written), the message says\n"        \
	"what; 2 a usage error; 3 the condition did not hold (nothing written).\n"

static int run_rmw(int argc, char **argv, script_op op, const char *usage, const char *text)
{
	const char *cmd = argv[0], *key = NULL;
	char **pos = argv + 1;
	int npos, help, rc, absent = 0, want;
	tool_opt opts[3] = { { "key", 1, &key, NULL } };
	mrtx_key rowkey;
	mrtx_db *db;
	keyfmt kf;
	rmw_ctx r;

	if (op == SCRIPT_CHECK_AND_PUT)
		opts[1] = (tool_opt){ "absent", 0, NULL, &absent };
	if ((rc = args_parse(cmd, usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, text);
	want = op == SCRIPT_CHECK_AND_PUT ? (absent ? 5 : 6) : op == SCRIPT_APPEND ? 5 : 4;
	if (op == SCRIPT_CHECK) {
		want = npos == 5 ? 5 : 6; /* absent|present, or OP NUMBER */
		if (npos != 5 && npos != 6)
			return tool_usage_err(cmd, usage, "expected STORE TABLE ROW FAMILY:QUALIFIER "
			                      "and OP NUMBER, absent or present; got %d arguments",
			                      npos);
	}
	if (npos != want && !(op == SCRIPT_INCR && npos == 5))
		return tool_usage_err(cmd, usage, "expected %d%s arguments, got %d%s", want,
		                      op == SCRIPT_INCR ? " or 5 (with DELTA)" : "", npos,
		                      absent ? " (--absent replaces EXPECTED)" : "");
	memset(&r, 0, sizeof(r));
	r.c.op = op;
	r.c.table = pos[1];
	r.c.number = 1;
	r.c.absent = absent;
	r.step = cmd;
	if ((rc = arg_name(cmd, "table", pos[1])) ||
	    (key && (rc = keyfmt_parse(cmd, key, &kf))) ||
	    (key && (rc = keyfmt_build(cmd, "row", &kf, pos[2], 0, &rowkey))) ||
	    (!key && (rc = arg_bytes(cmd, "row", pos[2], &r.c.row))) ||
	    (rc = arg_column(cmd, pos[3], &r.c.family, &r.c.qualifier)))
		return rc;
	if (key)
		r.c.row = MRTX_BYTES(rowkey.buf, rowkey.size);
	if (r.c.row.size == 0)
		return tool_usage_err(cmd, usage, "ROW must not be empty");
	if (op == SCRIPT_INCR && npos == 5) {
		int e = script_parse_i64(pos[4], strlen(pos[4]), 1, &r.c.number);

		if (e)
			return tool_usage_err(cmd, usage, "DELTA '%s' %s", pos[4],
			                      e == -2 ? "is outside the signed 64-bit range" :
			                      "is not a decimal integer (e.g. 10 or -10)");
	}
	if (op == SCRIPT_APPEND && (rc = arg_bytes(cmd, "suffix", pos[4], &r.c.value)))
		return rc;
	if (op == SCRIPT_CHECK &&
	    script_parse_check(pos[4], want == 6 ? pos[5] : NULL, &r.c, r.msg, sizeof(r.msg)))
		return tool_usage_err(cmd, usage, "%s",
		                      strncmp(r.msg, "check: ", 7) == 0 ? r.msg + 7 : r.msg);
	if (op == SCRIPT_CHECK_AND_PUT &&
	    ((!absent && (rc = arg_bytes(cmd, "expected value", pos[4], &r.c.expected))) ||
	     (rc = arg_bytes(cmd, "new value", pos[want - 1], &r.c.value))))
		return rc;
	if ((rc = tool_open(cmd, pos[0], 0, &db)))
		return rc;
	if (op != SCRIPT_CHECK && (rc = tool_refuse_index_table(cmd, db, r.c.table))) {
		mrtx_close(db);
		return rc;
	}
	rc = mrtx_run(db, rmw_fn, &r, 0);
	memout_finish(&r.out, rc == 0 && !r.outcome, stdout);
	if (rc) {
		rc = tool_fail(cmd, NULL, rc);
	} else if (r.outcome) {
		tool_err(cmd, op == SCRIPT_CHECK ? "%s" : "%s; nothing written", r.msg);
		rc = r.outcome == SCRIPT_RC_CHECK ? EXIT_CHECK : EXIT_FAIL;
	} else {
		rc = fflush(stdout) || ferror(stdout) ? EXIT_FAIL : EXIT_OK;
	}
	mrtx_close(db);
	return rc;
}

int cmd_incr(int argc, char **argv)
{
	return run_rmw(argc, argv, SCRIPT_INCR,
	               "mrtx incr STORE TABLE ROW FAMILY:QUALIFIER [DELTA] [--key FORMAT]",
	               "Add DELTA (default 1; negative subtracts) to a 64-bit signed counter\n"
	               "and print its new value, in one transaction.  A counter is stored as\n"
	               "decimal ASCII (\"42\", \"-7\"), so get, scan and put read and write it\n"
	               "as text; a missing cell counts as 0.  A cell holding anything else,\n"
	               "or a result outside -9223372036854775808..9223372036854775807, is an\n"
	               "error and the cell is left as it was.\n" KEY_HELP EXIT_HELP);
}

int cmd_append(int argc, char **argv)
{
	return run_rmw(argc, argv, SCRIPT_APPEND,
	               "mrtx append STORE TABLE ROW FAMILY:QUALIFIER SUFFIX [--key FORMAT]",
	               "Append SUFFIX (\\xNN escapes accepted) to a cell's value, in one\n"
	               "transaction; a missing cell becomes SUFFIX.  A result over 64 MiB is\n"
	               "an error.\n" KEY_HELP EXIT_HELP);
}

int cmd_check_and_put(int argc, char **argv)
{
	return run_rmw(argc, argv, SCRIPT_CHECK_AND_PUT,
	               "mrtx check-and-put STORE TABLE ROW FAMILY:QUALIFIER EXPECTED|--absent "
	               "NEWVALUE [--key FORMAT]",
	               "Set the cell to NEWVALUE if it holds exactly EXPECTED (or, with\n"
	               "--absent instead of EXPECTED, if it is missing), in one transaction.\n"
	               "Otherwise write nothing, say what the cell holds, and exit 3.  Values\n"
	               "accept \\xNN escapes; put \"--\" before a value starting with \"--\".\n"
	               KEY_HELP EXIT_HELP);
}

int cmd_check_cell(int argc, char **argv)
{
	return run_rmw(argc, argv, SCRIPT_CHECK,
	               "mrtx check STORE TABLE ROW FAMILY:QUALIFIER OP NUMBER|absent|present "
	               "[--key FORMAT]",
	               "Test a cell, in one transaction, as a txn script's check does: OP is\n"
	               "one of == != < <= > >= and the cell is read as a decimal counter (a\n"
	               "missing cell counts as 0), or absent / present test whether it\n"
	               "exists.  Exit 0 when the condition holds; otherwise say what the\n"
	               "cell holds and exit 3.  (With STORE alone, check verifies the lock\n"
	               "family: see mrtx check STORE --help.)\n"
	               KEY_HELP
	               "Exit status: 0 the condition holds; 1 an error (a cell that is no\n"
	               "counter, say); 2 a usage error; 3 the condition does not hold.\n");
}
