/*
 * script.c - see script.h.  Pure: no store, no I/O.
 */
#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MAX_TOKENS SCRIPT_MAX_WORDS

typedef struct tok {
	char *p;
	size_t n;
} tok;

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Decode the backslash escape at mem[*i] into mem[*o], advancing both
 * (*o <= *i always, so decoding is in place).  In double quotes only \\,
 * \" and \xNN are escapes; outside quotes also \', backslash-space and
 * backslash-tab.
 */
static int escape(char *mem, size_t len, size_t *i, size_t *o, int dquoted, char *err,
                  size_t errlen)
{
	size_t at = *i;
	char c = at + 1 < len ? mem[at + 1] : '\0';

	if (at + 1 < len && (c == '\\' || c == '"' ||
	                     (!dquoted && (c == '\'' || c == ' ' || c == '\t')))) {
		mem[(*o)++] = c;
		*i += 2;
		return 0;
	}
	if (at + 3 < len && c == 'x' && tool_hexval((unsigned char)mem[at + 2]) >= 0 && tool_hexval((unsigned char)mem[at + 3]) >= 0) {
		mem[(*o)++] = (char)(tool_hexval((unsigned char)mem[at + 2]) * 16 + tool_hexval((unsigned char)mem[at + 3]));
		*i += 4;
		return 0;
	}
	if (dquoted)
		snprintf(err, errlen, "bad escape at column %zu (in double quotes: \\xNN, "
		         "\\\\ or \\\")", at + 1);
	else
		snprintf(err, errlen, "bad escape at column %zu (use \\xNN, \\\\, \\\", "
		         "\\' or backslash-space)", at + 1);
	return -1;
}

/*
 * Split mem[0..len) into words, in place (each word NUL-terminated after
 * its bytes); -1 with err on bad syntax.  The rules are in script.h.
 */
static int tokenize(char *mem, size_t len, tok *toks, size_t *ntok, char *err, size_t errlen)
{
	size_t i = 0, n = 0;

	for (;;) {
		size_t o, start;

		while (i < len && is_blank(mem[i]))
			i++;
		if (i == len)
			break;
		if (n == MAX_TOKENS) {
			snprintf(err, errlen, "too many arguments (quote one that holds blanks)");
			return -1;
		}
		start = o = i;
		while (i < len && !is_blank(mem[i])) {
			size_t open = i;

			if (mem[i] == '\'') {
				for (i++; i < len && mem[i] != '\''; i++)
					mem[o++] = mem[i];
				if (i == len) {
					snprintf(err, errlen, "unterminated single quote (opened at "
					         "column %zu)", open + 1);
					return -1;
				}
				i++;
			} else if (mem[i] == '"') {
				for (i++; i < len && mem[i] != '"';)
					if (mem[i] != '\\')
						mem[o++] = mem[i++];
					else if (escape(mem, len, &i, &o, 1, err, errlen))
						return -1;
				if (i == len) {
					snprintf(err, errlen, "unterminated double quote (opened at "
					         "column %zu)", open + 1);
					return -1;
				}
				i++;
			} else if (mem[i] == '\\') {
				if (escape(mem, len, &i, &o, 0, err, errlen))
					return -1;
			} else {
				mem[o++] = mem[i++];
			}
		}
		toks[n].p = mem + start;
		toks[n].n = o - start;
		if (i < len)
			i++; /* the blank ending the word: o < i from here on */
		mem[o] = '\0'; /* o <= len: mem has len + 1 bytes */
		n++;
	}
	*ntok = n;
	return 0;
}

static int name_tok(const tok *t, const char *what, const char **out, char *err, size_t errlen)
{
	if (t->n == 0 || memchr(t->p, '\0', t->n)) {
		snprintf(err, errlen, "%s must be a non-empty name without NUL bytes", what);
		return -1;
	}
	*out = t->p;
	return 0;
}

static int row_tok(const tok *t, mrtx_bytes *out, char *err, size_t errlen)
{
	if (t->n == 0) {
		snprintf(err, errlen, "row must not be empty");
		return -1;
	}
	*out = MRTX_BYTES(t->p, t->n);
	return 0;
}

/* FAMILY:QUALIFIER, split at the first ':' of the decoded token. */
static int column_tok(tok *t, const char **family, mrtx_bytes *qual, char *err, size_t errlen)
{
	char *colon = memchr(t->p, ':', t->n);
	tok f;

	if (!colon) {
		snprintf(err, errlen, "column must be FAMILY:QUALIFIER");
		return -1;
	}
	f.p = t->p;
	f.n = (size_t)(colon - t->p);
	*colon = '\0';
	*qual = MRTX_BYTES(colon + 1, t->n - f.n - 1);
	return name_tok(&f, "family", family, err, errlen);
}

static const struct {
	const char *word;
	script_op op;
	size_t min, max; /* arguments after the word */
	const char *usage;
} commands[] = {
	{ "get", SCRIPT_GET, 3, 3, "get TABLE ROW FAMILY:QUALIFIER" },
	{ "put", SCRIPT_PUT, 4, 4, "put TABLE ROW FAMILY:QUALIFIER VALUE" },
	{ "del", SCRIPT_DEL, 3, 3, "del TABLE ROW FAMILY:QUALIFIER" },
	{ "delrow", SCRIPT_DELROW, 2, 2, "delrow TABLE ROW" },
	{ "scan", SCRIPT_SCAN, 1, 3, "scan TABLE [START [END]]" },
	{ "abort", SCRIPT_ABORT, 0, 0, "abort" },
};

/*
 * The common front: copy line (less a trailing '\r') and split it.  0 with
 * *ntok == 0 for a blank or comment line; -1 with err; -2 out of memory.
 * *mem is set (and owned by the caller) only on 0.
 */
static int split(const char *line, size_t len, char **mem, tok *toks, size_t *ntok,
                 char *err, size_t errlen)
{
	size_t i = 0;
	char *m;

	*mem = NULL;
	*ntok = 0;
	if (errlen)
		err[0] = '\0';
	if (len && line[len - 1] == '\r')
		len--;
	if (!(m = malloc(len + 1)))
		return -2;
	memcpy(m, line, len);
	m[len] = '\0';
	while (i < len && is_blank(m[i]))
		i++;
	if (i < len && m[i] != '#' && tokenize(m, len, toks, ntok, err, errlen)) {
		free(m);
		return -1;
	}
	*mem = m;
	return 0;
}

int script_split(const char *line, size_t len, script_words *out, char *err, size_t errlen)
{
	tok toks[MAX_TOKENS];
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = split(line, len, &out->mem, toks, &out->n, err, errlen)))
		return rc;
	for (size_t i = 0; i < out->n; i++)
		out->w[i] = MRTX_BYTES(toks[i].p, toks[i].n);
	return 0;
}

void script_words_free(script_words *w)
{
	if (!w)
		return;
	free(w->mem);
	w->mem = NULL;
}

const char *script_usage(size_t i)
{
	return i < sizeof(commands) / sizeof(commands[0]) ? commands[i].usage : NULL;
}

int script_parse_line(const char *line, size_t len, script_cmd *out, char *err,
                      size_t errlen)
{
	tok toks[MAX_TOKENS];
	size_t ntok = 0, ci, nargs;
	char *mem;
	tok *a;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = split(line, len, &mem, toks, &ntok, err, errlen)))
		return rc;
	if (ntok == 0) {
		out->mem = mem;
		return 0;
	}
	for (ci = 0; ci < sizeof(commands) / sizeof(commands[0]); ci++)
		if (strlen(commands[ci].word) == toks[0].n &&
		    memcmp(commands[ci].word, toks[0].p, toks[0].n) == 0)
			break;
	if (ci == sizeof(commands) / sizeof(commands[0])) {
		snprintf(err, errlen, "unknown command (expected get, put, del, delrow, scan "
		         "or abort)");
		goto bad;
	}
	nargs = ntok - 1;
	if (nargs < commands[ci].min || nargs > commands[ci].max) {
		snprintf(err, errlen, "usage: %s", commands[ci].usage);
		goto bad;
	}
	a = toks + 1;
	out->op = commands[ci].op;
	if (out->op == SCRIPT_ABORT)
		goto done;
	if (name_tok(&a[0], "table", &out->table, err, errlen))
		goto bad;
	switch (out->op) {
	case SCRIPT_PUT:
		out->value = MRTX_BYTES(a[3].p, a[3].n);
		/* fall through */
	case SCRIPT_GET:
	case SCRIPT_DEL:
		if (row_tok(&a[1], &out->row, err, errlen) ||
		    column_tok(&a[2], &out->family, &out->qualifier, err, errlen))
			goto bad;
		break;
	case SCRIPT_DELROW:
		if (row_tok(&a[1], &out->row, err, errlen))
			goto bad;
		break;
	case SCRIPT_SCAN:
		if (nargs >= 2)
			out->start = MRTX_BYTES(a[1].p, a[1].n);
		if (nargs >= 3)
			out->end = MRTX_BYTES(a[2].p, a[2].n);
		break;
	default:
		break;
	}
done:
	out->mem = mem;
	return 0;
bad:
	free(mem);
	memset(out, 0, sizeof(*out));
	return -1;
}

void script_cmd_free(script_cmd *c)
{
	if (!c)
		return;
	free(c->mem);
	c->mem = NULL;
}
