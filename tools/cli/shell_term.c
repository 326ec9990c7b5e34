/*
 * shell_term.c - `mrtx shell` on a terminal (cmd_shell.c says when): lines
 * read with libedit, a prompt showing the transaction's state, history in
 * memory and in a file, Ctrl-C discarding the line, SIGTERM/SIGHUP ending
 * the input.
 */
#include <errno.h>
#include <fcntl.h>
#include <histedit.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include "shell.h"

#define HISTORY_SIZE 1000

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

int term_open(shell *sh)
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

void term_close(shell *sh)
{
	if (sh->el)
		el_end(sh->el);
	if (sh->hist)
		history_end(sh->hist);
	free(sh->histfile);
}

/* Read and run lines until end of input or quit. */
void term_loop(shell *sh)
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
		shell_run_line(sh, line, (size_t)n);
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
