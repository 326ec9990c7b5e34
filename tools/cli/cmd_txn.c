/*
 * cmd_txn.c - `mrtx txn STORE [FILE]`: run a script of reads and writes as
 * one transaction (language in script.h).
 *
 * Lines run as they are read, so an interactive user sees each read's
 * result at once; reads print the value escaped, "(not found)" for a
 * missing cell, or scan lines.  At end of input the transaction commits;
 * `abort` ends it without writing and exits 0.  A syntax error aborts
 * (exit 2), a failed operation or commit aborts (exit 1), and so does a
 * check or check-and-put whose condition does not hold (exit 3): a script
 * is all or nothing, so its later lines may rely on its checks.  Failpoints in
 * MRTX_FAILPOINTS are armed by mrtx_open, so a crash at any commit step can
 * be scripted; stdout is flushed before commit so the reads survive it.
 */
#include "cmds.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "script.h"
#include "util.h"

int cmd_txn(int argc, char **argv)
{
	static const char usage[] = "mrtx txn STORE [FILE]";
	const char *cmd = argv[0];
	char **pos = argv + 1, *line = NULL;
	int npos, help, rc, ret = EXIT_OK, done = 0;
	unsigned long lineno = 0;
	size_t cap = 0;
	mrtx_txn *txn = NULL;
	mrtx_db *db = NULL;
	FILE *in = stdin;
	ssize_t len;

	if ((rc = args_parse(cmd, usage, argc, argv, NULL, pos, &npos, &help)))
		return rc;
	if (help) {
		printf("usage: %s\n\n"
		       "Run the commands in FILE (or stdin; \"-\" is stdin too) as ONE\n"
		       "transaction, committed at end of input:\n"
		       "%s"
		       "  abort                                 stop; write nothing; exit 0\n"
		       "Blank lines and lines starting with # are ignored.  Words are\n"
		       "separated by blanks and quoted as in a POSIX shell: 'single quotes'\n"
		       "keep every byte; \"double quotes\" decode \\xNN, \\\\ and \\\"; unquoted,\n"
		       "\\xNN, \\\\, \\\", \\' and backslash-blank are escapes; parts that touch\n"
		       "form one word (f:\"a b\"); a word starting with an unquoted -- is an\n"
		       "option ('--x' or \\x2d-x is the bytes --x).\n"
		       "Exit status: 0 committed (or abort); 2 a syntax error; 3 a check or\n"
		       "check-and-put whose condition does not hold: the whole transaction is\n"
		       "rolled back, nothing written; 1 when an operation or the commit fails\n"
		       "(nothing is written then, except that a commit failing after its commit\n"
		       "point is settled by recovery).  So a script\n"
		       "  check acct alice bal:v >= 10\n"
		       "  incr acct alice bal:v -10\n"
		       "  incr acct bob bal:v 10\n"
		       "moves 10 only if alice has 10, atomically (a concurrent change of either\n"
		       "cell makes the commit fail: run it again).\n"
		       "MRTX_FAILPOINTS (e.g. commit.after_point=exit) is honoured.\n",
		       usage, script_help_commands);
		return EXIT_OK;
	}
	if (npos < 1 || npos > 2)
		return tool_usage_err(cmd, usage, "expected STORE and optionally FILE");
	if (npos == 2 && strcmp(pos[1], "-") != 0 && !(in = fopen(pos[1], "r"))) {
		tool_err(cmd, "%s: %s", pos[1], strerror(errno));
		return EXIT_FAIL;
	}
	if ((rc = tool_open(cmd, pos[0], 0, &db))) {
		ret = rc;
		goto out;
	}
	if ((rc = mrtx_begin(db, &txn))) {
		ret = tool_fail(cmd, "begin", rc);
		goto out;
	}
	while (!done && (len = getline(&line, &cap, in)) >= 0) {
		char err[160], msg[400];
		const char *step = "";
		script_cmd c;

		lineno++;
		if (len && line[len - 1] == '\n')
			len--;
		rc = script_parse_line(line, (size_t)len, &c, err, sizeof(err));
		if (rc == -2) {
			tool_err(cmd, "line %lu: out of memory", lineno);
			ret = EXIT_FAIL;
			goto out;
		}
		if (rc) {
			tool_err(cmd, "line %lu: %s", lineno, err);
			ret = EXIT_USAGE;
			goto out;
		}
		if (c.op == SCRIPT_ABORT) {
			done = 1;
		} else if (c.op != SCRIPT_GET && c.op != SCRIPT_SCAN && c.op != SCRIPT_CHECK &&
		           c.op != SCRIPT_NONE && (rc = tool_refuse_index_table(cmd, db, c.table))) {
			tool_err(cmd, "line %lu: the transaction was rolled back", lineno);
			ret = rc;
			script_cmd_free(&c);
			goto out;
		} else if ((rc = script_run(txn, &c, stdout, &step, msg, sizeof(msg)))) {
			char what[64];

			snprintf(what, sizeof(what), "line %lu: %s", lineno, step);
			if (rc > 0)
				tool_err(cmd, "%s%s: %s; the transaction was rolled back, nothing "
				         "written", what, rc == SCRIPT_RC_CHECK ? " failed" : "", msg);
			ret = rc == SCRIPT_RC_CHECK ? EXIT_CHECK : rc > 0 ? EXIT_FAIL :
			      tool_fail(cmd, what, rc);
			script_cmd_free(&c);
			goto out;
		}
		script_cmd_free(&c);
	}
	if (ferror(in)) {
		tool_err(cmd, "reading input: %s", strerror(errno));
		ret = EXIT_FAIL;
		goto out;
	}
	if (done)
		goto out; /* abort: ret stays EXIT_OK, the txn is aborted below */
	fflush(stdout);
	rc = mrtx_commit(txn);
	txn = NULL;
	if (rc == MRTX_CONFLICT || rc == MRTX_ELOCKED) {
		tool_err(cmd, "commit: %s; nothing was written: run the script again",
		         tool_errmsg(rc));
		ret = EXIT_FAIL;
	} else if (rc) {
		ret = tool_fail(cmd, "commit", rc);
	}
out:
	mrtx_abort(txn);
	mrtx_close(db);
	free(line);
	if (in != stdin)
		fclose(in);
	return ret;
}
