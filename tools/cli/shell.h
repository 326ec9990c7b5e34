/*
 * shell.h - `mrtx shell`'s state, shared by its commands (cmd_shell.c) and
 * its terminal side (shell_term.c: libedit, prompt, history, signals).
 */
#ifndef MRTX_TOOL_SHELL_H
#define MRTX_TOOL_SHELL_H

#include <histedit.h>
#include <wchar.h>

#include "mrtx.h"

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

/* Run one input line (a command of the language or of the shell). */
void shell_run_line(shell *sh, const char *line, size_t len);

/* The terminal: set up libedit and the history (-1 when out of memory),
   read and run lines until end of input or quit, and tear it down
   (also after a failed term_open). */
int term_open(shell *sh);
void term_loop(shell *sh);
void term_close(shell *sh);

#endif
