/*
 * cmd_shell.c - `mrtx shell STORE`: an interactive shell over the line
 * language of `mrtx txn` (script.h), with explicit transactions.
 *
 * Outside begin..commit every data command is its own transaction, run
 * through mrtx_run (retried on a conflict or a briefly held lock) and its
 * output printed after the commit, as `mrtx get` does.  After `begin` the
 * commands run in one open mrtx_txn and reads print at once (they see the
 * transaction's own writes; commit validates them).  Nothing is retried
 * inside an explicit transaction: a failed commit is reported and the user
 * redoes the work.
 *
 * Errors and the open transaction (include/mrtx.h): a syntax error, an
 * unknown command, and the API errors that change nothing (MRTX_EINVAL,
 * MRTX_ETOOBIG, MRTX_ENOTABLE, MRTX_ENOFAMILY, a read's MRTX_ELOCKED, a
 * store error on a read) print a message and keep the transaction.
 * MRTX_CONFLICT and MRTX_EBADTXN mean the library has doomed it: it can
 * never commit, so the shell marks it failed (prompt "mrtx!> ") and
 * accepts only rollback (or commit, which reports the rollback) until it
 * ends.  An error that doomed it silently (index maintenance) shows up as
 * MRTX_EBADTXN on the next call or at commit.
 *
 * On a terminal (stdin and stdout both ttys) lines are read with libedit:
 * a prompt showing the state, emacs-style editing, history in memory and
 * in a history file ($MRTX_HISTORY, else ~/.mrtx_history; "" keeps none;
 * a file that cannot be read or written only costs a warning).  Ctrl-C
 * discards the line being typed; Ctrl-D on an empty line is end of input.
 * Otherwise lines are read plainly from stdin, without prompt or history,
 * with the same semantics (errors then name the line number).
 *
 * Exit status: 0, or 1 when any command failed or a transaction was left
 * open at the end (it is rolled back); 2 for a usage error.
 */
#include "cmds.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "script.h"
#include "shell.h"
#include "util.h"


static const char usage_line[] = "mrtx shell STORE";

/* After "Commands, one a line:" and script_help_commands. */
static const char help_text[] =
	"  begin            open a transaction: the commands up to commit run in it\n"
	"  commit           commit it; if that fails nothing was written: redo it\n"
	"  rollback, abort  end it, writing nothing\n"
	"  help             this text\n"
	"  quit, exit       leave (as does end of input); an open transaction is\n"
	"                   rolled back\n"
	"Outside begin..commit each command is its own transaction (retried on a\n"
	"conflict).  Inside, reads see the transaction's own writes; writes are\n"
	"buffered and no row is locked before commit, so a transaction may stay\n"
	"open without blocking anyone (the longer it stays open, the likelier a\n"
	"conflict at commit).  A typo, an unknown table or family, or a locked\n"
	"row keeps the transaction (prompt mrtx*>); a conflict dooms it (prompt\n"
	"mrtx!>), and so does a check or check-and-put whose condition does not\n"
	"hold: then only rollback or commit, which rolls back.  Outside begin..\n"
	"commit such a failure only reports (nothing written).\n"
	"Words are separated by blanks and quoted as in a POSIX shell:\n"
	"  'single quotes'  every byte as it is, no escapes\n"
	"  \"double quotes\"  decode \\xNN (a byte), \\\\ and \\\"\n"
	"  unquoted         \\xNN, \\\\, \\\", \\' and backslash-blank are escapes\n"
	"Parts that touch form one word: f:\"a b\" is the column f:a b, and \"\" the\n"
	"empty value.  Lines starting with # are comments.  Output escapes bytes\n"
	"outside printable ASCII as \\xNN.\n";

/* ------------------------------------------------------------ messages */

static void shell_err(shell *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An error: on a terminal "error: ...", else "mrtx: shell: line N: ...". */
static void shell_err(shell *sh, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	if (sh->tty)
		fputs("error: ", stderr);
	else
		fprintf(stderr, "mrtx: shell: line %lu: ", sh->lineno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	putc('\n', stderr);
	sh->errors = 1;
}

/* A confirmation, on a terminal only (piped output stays data). */
static void shell_note(const shell *sh, const char *msg)
{
	if (sh->tty) {
		puts(msg);
		fflush(stdout);
	}
}

/* The detail of the last mrtx failure rc (read before any other call),
   with the tool's hint (util.h); valid until the next call. */
static const char *api_msg(int rc)
{
	static char buf[1024];
	snprintf(buf, sizeof(buf), "%s%s", tool_errmsg(rc), tool_hint(rc));
	return buf;
}

/* ------------------------------------------------------------ commands */

typedef struct auto_ctx {
	const script_cmd *c;
	const char *step;
	memout out;
	int outcome;     /* SCRIPT_RC_*, or 0 */
	char msg[400];   /* its message */
} auto_ctx;

/* One autocommit attempt: output goes to memory, printed after commit.  A
   condition that does not hold, or a cell that is no counter, ends the
   attempt with nothing buffered: it commits, so what was read is
   validated (a retry reads again). */
static int auto_fn(mrtx_txn *txn, void *p)
{
	auto_ctx *a = p;
	FILE *f = memout_restart(&a->out);
	int rc;

	if (!f)
		return MRTX_ENOMEM;
	rc = script_run(txn, a->c, f, &a->step, a->msg, sizeof(a->msg));
	a->outcome = rc > 0 ? rc : 0;
	return rc > 0 ? 0 : rc;
}

static void run_autocommit(shell *sh, const script_cmd *c)
{
	auto_ctx a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.c = c;
	a.step = "";
	rc = mrtx_run(sh->db, auto_fn, &a, 0);
	memout_finish(&a.out, rc == 0 && !a.outcome, stdout);
	if (rc)
		shell_err(sh, "%s: %s%s", a.step, api_msg(rc),
		          c->op == SCRIPT_GET || c->op == SCRIPT_SCAN ? "" : " (nothing written)");
	else if (a.outcome == SCRIPT_RC_CHECK)
		shell_err(sh, "%s failed: %s (nothing written)", a.step, a.msg);
	else if (a.outcome)
		shell_err(sh, "%s: %s (nothing written)", a.step, a.msg);
	fflush(stdout);
}

static void run_in_txn(shell *sh, const script_cmd *c)
{
	const char *step = "";
	char msg[400];
	int rc = script_run(sh->txn, c, stdout, &step, msg, sizeof(msg));

	fflush(stdout);
	if (rc == 0)
		return;
	if (rc == SCRIPT_RC_CHECK) {
		/* the script's rule (mrtx txn): a failed condition ends the
		   transaction's chance to commit */
		snprintf(sh->failed, sizeof(sh->failed), "%.20s failed: %.400s", step, msg);
		shell_err(sh, "%s; the transaction can no longer commit: type rollback",
		          sh->failed);
		return;
	}
	if (rc == SCRIPT_RC_VALUE) {
		shell_err(sh, "%s: %s (nothing written; the transaction is still open)", step,
		          msg);
		return;
	}
	if (rc == MRTX_CONFLICT || rc == MRTX_EBADTXN) {
		snprintf(sh->failed, sizeof(sh->failed), "%.20s: %.440s", step, api_msg(rc));
		shell_err(sh, "%s; the transaction can no longer commit: type rollback, then "
		          "redo it", sh->failed);
		return;
	}
	if (rc == MRTX_ELOCKED)
		shell_err(sh, "%s: %s (the transaction is still open: retry the command, or "
		          "rollback)", step, api_msg(rc));
	else
		shell_err(sh, "%s: %s (the transaction is still open)", step, api_msg(rc));
}

static void do_begin(shell *sh)
{
	int rc;

	if (sh->txn) {
		shell_err(sh, "a transaction is already open (commit or rollback first)");
		return;
	}
	if ((rc = mrtx_begin(sh->db, &sh->txn))) {
		sh->txn = NULL;
		shell_err(sh, "begin: %s", api_msg(rc));
	}
}

static void end_txn(shell *sh)
{
	mrtx_abort(sh->txn);
	sh->txn = NULL;
	sh->failed[0] = '\0';
}

static void do_commit(shell *sh)
{
	int rc;

	if (!sh->txn) {
		shell_err(sh, "no transaction is open (begin starts one)");
		return;
	}
	if (sh->failed[0]) {
		shell_err(sh, "the transaction had failed (%s): rolled back, nothing written",
		          sh->failed);
		end_txn(sh);
		return;
	}
	fflush(stdout);
	rc = mrtx_commit(sh->txn);
	sh->txn = NULL;
	if (rc == 0)
		shell_note(sh, "committed");
	else if (rc == MRTX_EUNKNOWN)
		shell_err(sh, "commit: %s; the outcome is unknown: the next reader of its rows "
		          "or `mrtx recover` settles it (check before redoing it)", api_msg(rc));
	else if (rc == MRTX_EFULL)
		shell_err(sh, "commit: %s; the transaction was rolled back, nothing was "
		          "written: make room, then redo it", api_msg(rc));
	else if (rc == MRTX_ESTORE)
		shell_err(sh, "commit: %s; the transaction was rolled back, nothing was "
		          "written by it (the message says what the store needs first)",
		          api_msg(rc));
	else
		shell_err(sh, "commit: %s; the transaction was rolled back, nothing was "
		          "written: redo it", api_msg(rc));
}

static void do_rollback(shell *sh)
{
	if (!sh->txn) {
		shell_err(sh, "no transaction is open");
		return;
	}
	end_txn(sh);
	shell_note(sh, "rolled back");
}

static int word_is(mrtx_bytes w, const char *s)
{
	return w.size == strlen(s) && memcmp(w.data, s, w.size) == 0;
}

/* Is w the first word of one of the language's commands? */
static int language_word(mrtx_bytes w)
{
	const char *u;

	for (size_t i = 0; (u = script_usage(i)); i++)
		if (w.size == strcspn(u, " ") && memcmp(w.data, u, w.size) == 0)
			return 1;
	return 0;
}

void shell_run_line(shell *sh, const char *line, size_t len)
{
	static const char *const shell_words[] = { "help", "begin", "commit", "rollback",
		                                       "abort", "quit", "exit" };
	char err[200];
	script_words w;
	script_cmd c;
	size_t i;
	int rc;

	if ((rc = script_split(line, len, &w, err, sizeof(err)))) {
		shell_err(sh, "%s", rc == -2 ? "out of memory" : err);
		return;
	}
	if (w.n == 0)
		goto out;
	for (i = 0; i < sizeof(shell_words) / sizeof(shell_words[0]); i++)
		if (word_is(w.w[0], shell_words[i]))
			break;
	if (i < sizeof(shell_words) / sizeof(shell_words[0])) {
		const char *word = shell_words[i];

		if (w.n > 1) {
			shell_err(sh, "%s takes no arguments", word);
			goto out;
		}
		if (strcmp(word, "help") == 0) {
			printf("Commands, one a line:\n%s%s", script_help_commands, help_text);
			fflush(stdout);
		} else if (strcmp(word, "begin") == 0) {
			do_begin(sh);
		} else if (strcmp(word, "commit") == 0) {
			do_commit(sh);
		} else if (strcmp(word, "rollback") == 0 || strcmp(word, "abort") == 0) {
			do_rollback(sh);
		} else {
			sh->done = 1;
		}
		goto out;
	}
	if (!language_word(w.w[0])) {
		char *e = escape_dup(w.w[0].data, w.w[0].size, 0);

		/* the words of other shells: what does their work here */
		static const char *const elsewhere[][2] = {
			{ "list", "`mrtx tables STORE` lists the tables" },
			{ ".tables", "`mrtx tables STORE` lists the tables" },
			{ "describe", "`mrtx describe STORE TABLE` shows a table" },
			{ ".schema", "`mrtx describe STORE TABLE` shows a table" },
			{ "count", "`mrtx scan STORE TABLE --count` counts cells and rows" },
			{ "create", "`mrtx create-table STORE TABLE FAMILY...` makes a table" },
			{ "deleteall", "delrow TABLE ROW deletes a row" },
			{ ".quit", "quit leaves" },
			{ ".exit", "exit leaves" },
		};
		const char *hint = "type help";

		for (size_t k = 0; k < sizeof(elsewhere) / sizeof(elsewhere[0]); k++)
			if (e && strcmp(e, elsewhere[k][0]) == 0)
				hint = elsewhere[k][1];
		shell_err(sh, "unknown command '%s' (%s)", e ? e : "?", hint);
		free(e);
		goto out;
	}
	if ((rc = script_parse_line(line, len, &c, err, sizeof(err)))) {
		shell_err(sh, "%s", rc == -2 ? "out of memory" : err);
		goto out;
	}
	if (c.op != SCRIPT_NONE && c.op != SCRIPT_GET && c.op != SCRIPT_SCAN &&
	    c.op != SCRIPT_CHECK && c.op != SCRIPT_ABORT &&
	    (rc = tool_index_of(sh->db, c.table, err, sizeof(err)))) {
		if (rc == 1)
			shell_err(sh, "table '%s' is the index table of index '%s': only the index "
			          "writes it (nothing written%s)", c.table, err,
			          sh->txn ? "; the transaction is still open" : "");
		else
			shell_err(sh, "indexes: %s", api_msg(rc));
	} else if (sh->txn && sh->failed[0])
		shell_err(sh, "the transaction failed (%s): only rollback or commit (which rolls "
		          "back) is accepted", sh->failed);
	else if (sh->txn)
		run_in_txn(sh, &c);
	else
		run_autocommit(sh, &c);
	script_cmd_free(&c);
out:
	script_words_free(&w);
}

static void pipe_loop(shell *sh)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	while (!sh->done && (len = getline(&line, &cap, stdin)) >= 0) {
		sh->lineno++;
		if (len && line[len - 1] == '\n')
			len--;
		shell_run_line(sh, line, (size_t)len);
	}
	if (ferror(stdin)) {
		fprintf(stderr, "mrtx: shell: reading input: %s\n", strerror(errno));
		sh->errors = 1;
	}
	free(line);
}

/* ------------------------------------------------------------ main */

int cmd_shell(int argc, char **argv)
{
	const char *cmd = argv[0];
	char **pos = argv + 1;
	int npos, help, rc;
	shell sh;

	if ((rc = args_parse(cmd, usage_line, argc, argv, NULL, pos, &npos, &help)))
		return rc;
	if (help) {
		printf("usage: %s\n\n"
		       "An interactive shell on STORE: the commands of `mrtx txn` plus begin,\n"
		       "commit, rollback, help and quit.  On a terminal it has a prompt\n"
		       "(mrtx> outside a transaction, mrtx*> inside, mrtx!> once the\n"
		       "transaction has failed), line editing (libedit, emacs keys; ~/.editrc\n"
		       "is read), and history kept in $MRTX_HISTORY, else ~/.mrtx_history\n"
		       "(MRTX_HISTORY= keeps none).  Ctrl-C discards the line, Ctrl-D on an\n"
		       "empty line ends the input.  Piped input is read the same way, without\n"
		       "prompt or history.  Exit status 1 when any command failed or a\n"
		       "transaction was left open (it is rolled back).\n\nCommands, one a line:\n%s%s",
		       usage_line, script_help_commands, help_text);
		return EXIT_OK;
	}
	if (npos != 1)
		return tool_usage_err(cmd, usage_line, "expected STORE");
	memset(&sh, 0, sizeof(sh));
	if ((rc = tool_open(cmd, pos[0], 0, &sh.db)))
		return rc;
	sh.tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	if (sh.tty && term_open(&sh)) {
		tool_err(cmd, "cannot set up the terminal (out of memory)");
		term_close(&sh);
		mrtx_close(sh.db);
		return EXIT_FAIL;
	}
	if (sh.tty) {
		shell_note(&sh, "mrtx shell: type help for the commands, quit or Ctrl-D to leave");
		term_loop(&sh);
	} else {
		pipe_loop(&sh);
	}
	if (sh.txn) {
		end_txn(&sh);
		fflush(stdout);
		fprintf(stderr, "mrtx: shell: the open transaction was rolled back (nothing "
		        "written)\n");
		sh.errors = 1;
	}
	if (sh.tty)
		term_close(&sh);
	mrtx_close(sh.db);
	return sh.errors ? EXIT_FAIL : EXIT_OK;
}
