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
#include <fcntl.h>
#include <histedit.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include "script.h"
#include "util.h"

#define HISTORY_SIZE 1000

typedef struct shell {
	mrtx_db *db;
	mrtx_txn *txn;         /* the open explicit transaction, or NULL */
	char failed[480];      /* non-empty: txn is doomed, this says why */
	int tty;               /* prompt, editing, history */
	int errors;            /* a command failed: exit status 1 */
	int done;              /* quit/exit */
	unsigned long lineno;
	/* terminal only */
	EditLine *el;
	History *hist;
	char *histfile;        /* NULL: no history file */
	int hist_warned;
	int cancelled;         /* the line was discarded by Ctrl-C */
	mbstate_t mbs;         /* shell_getc's multibyte decoding */
} shell;

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
		snprintf(sh->failed, sizeof(sh->failed), "%s failed: %s", step, msg);
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
		snprintf(sh->failed, sizeof(sh->failed), "%s: %s", step, api_msg(rc));
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

static void run_line(shell *sh, const char *line, size_t len)
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

		shell_err(sh, "unknown command '%s' (type help)", e ? e : "?");
		free(e);
		goto out;
	}
	if ((rc = script_parse_line(line, len, &c, err, sizeof(err)))) {
		shell_err(sh, "%s", rc == -2 ? "out of memory" : err);
		goto out;
	}
	if (sh->txn && sh->failed[0])
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

/* ------------------------------------------------------------ terminal */

static volatile sig_atomic_t got_sigint, got_winch, got_quit;

static void on_signal(int sig)
{
	if (sig == SIGINT)
		got_sigint = 1;
	else if (sig == SIGWINCH)
		got_winch = 1;
	else
		got_quit = 1;
}

/* libedit's character source: read(2) that turns SIGINT into Ctrl-C (bound
   to shell_cancel), follows the window size and ends on SIGTERM/SIGHUP. */
static int shell_getc(EditLine *el, wchar_t *wc)
{
	shell *sh;
	char b;

	el_get(el, EL_CLIENTDATA, (void **)&sh);
	for (;;) {
		ssize_t n;
		size_t r;

		if (got_quit)
			return 0;
		if (got_sigint) {
			got_sigint = 0;
			memset(&sh->mbs, 0, sizeof(sh->mbs));
			*wc = 3; /* ^C */
			return 1;
		}
		if (got_winch) {
			got_winch = 0;
			el_resize(el);
		}
		if ((n = read(STDIN_FILENO, &b, 1)) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			return 0;
		r = mbrtowc(wc, &b, 1, &sh->mbs);
		if (r == (size_t)-2)
			continue; /* more bytes of this character to come */
		if (r == (size_t)-1) {
			memset(&sh->mbs, 0, sizeof(sh->mbs));
			continue; /* not a character here: dropped (type \xNN instead) */
		}
		return 1;
	}
}

/* Ctrl-C: end el_gets with a line that is then discarded. */
static unsigned char shell_cancel(EditLine *el, int ch)
{
	shell *sh;

	(void)ch;
	el_get(el, EL_CLIENTDATA, (void **)&sh);
	sh->cancelled = 1;
	el_insertstr(el, "\n"); /* an empty line would read as end of input */
	return CC_NEWLINE;
}

static char *shell_prompt(EditLine *el)
{
	shell *sh;

	el_get(el, EL_CLIENTDATA, (void **)&sh);
	return sh->txn ? sh->failed[0] ? "mrtx!> " : "mrtx*> " : "mrtx> ";
}

static char *history_path(void)
{
	const char *e = getenv("MRTX_HISTORY"), *home;
	char *p;

	if (e)
		return *e ? strdup(e) : NULL;
	if (!(home = getenv("HOME")) || !*home)
		return NULL;
	if (!(p = malloc(strlen(home) + sizeof("/.mrtx_history"))))
		return NULL;
	strcpy(p, home);
	strcat(p, "/.mrtx_history");
	return p;
}

/* Write the whole history (mode 0600 when created); warn once on failure. */
static void history_write(shell *sh)
{
	HistEvent ev;
	FILE *f = NULL;
	int fd, ok;

	if (!sh->histfile)
		return;
	errno = 0;
	fd = open(sh->histfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ok = fd >= 0 && (f = fdopen(fd, "w")) != NULL;
	if (ok)
		ok = history(sh->hist, &ev, H_SAVE_FP, f) >= 0;
	if (f)
		ok = (fclose(f) == 0) && ok;
	else if (fd >= 0)
		close(fd);
	if (!ok && !sh->hist_warned) {
		sh->hist_warned = 1;
		fprintf(stderr, "mrtx: shell: warning: cannot write the history file %s%s%s "
		        "(history is kept for this session only)\n", sh->histfile,
		        errno ? ": " : "", errno ? strerror(errno) : "");
	}
}

static int term_open(shell *sh)
{
	HistEvent ev;

	setlocale(LC_CTYPE, ""); /* multibyte input as the terminal sends it */
	if (!(sh->hist = history_init()) ||
	    !(sh->el = el_init("mrtx", stdin, stdout, stderr)))
		return -1;
	history(sh->hist, &ev, H_SETSIZE, HISTORY_SIZE);
	history(sh->hist, &ev, H_SETUNIQUE, 1);
	if ((sh->histfile = history_path()))
		history(sh->hist, &ev, H_LOAD, sh->histfile); /* missing: fine */
	el_set(sh->el, EL_CLIENTDATA, (void *)sh);
	el_set(sh->el, EL_EDITOR, "emacs");
	el_set(sh->el, EL_PROMPT, shell_prompt);
	el_set(sh->el, EL_HIST, history, sh->hist);
	el_set(sh->el, EL_GETCFN, shell_getc);
	/* The wide form: libedit keeps these pointers as they are, where the
	   narrow EL_ADDFN copies both strings and never frees the copies. */
	el_wset(sh->el, EL_ADDFN, L"mrtx-cancel", L"Discard the line", shell_cancel);
	el_set(sh->el, EL_BIND, "^C", "mrtx-cancel", NULL);
	el_source(sh->el, NULL); /* ~/.editrc, or $EDITRC */
	return 0;
}

static void term_close(shell *sh)
{
	if (sh->el)
		el_end(sh->el);
	if (sh->hist)
		history_end(sh->hist);
	free(sh->histfile);
}

/* Read and run lines until end of input or quit. */
static void term_loop(shell *sh)
{
	struct sigaction sa, old_int, old_winch, old_term, old_hup;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: read(2) returns EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGWINCH, &sa, &old_winch);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	while (!sh->done) {
		const char *line;
		HistEvent ev;
		int n;

		got_sigint = 0;
		sh->cancelled = 0;
		/* Raw mode before the prompt shows: what is typed once it is
		   visible reaches the editor, a Ctrl-D included (in the
		   terminal's cooked mode it would be an end-of-file marker). */
		el_set(sh->el, EL_PREP_TERM, 1);
		if (!(line = el_gets(sh->el, &n)) || n <= 0)
			break;
		sh->lineno++;
		if (sh->cancelled) {
			fputs("^C\n", stdout);
			fflush(stdout);
			continue;
		}
		if (line[n - 1] == '\n')
			n--;
		if (strspn(line, " \t") < (size_t)n) {
			history(sh->hist, &ev, H_ENTER, line);
			history_write(sh);
		}
		run_line(sh, line, (size_t)n);
	}
	if (!sh->done) {
		putchar('\n'); /* end of input leaves the cursor after the prompt */
		fflush(stdout);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGWINCH, &old_winch, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
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
		run_line(sh, line, (size_t)len);
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
