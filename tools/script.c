/*
 * script.c - see script.h.  Pure: no store, no I/O.
 */
#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MAX_TOKENS 5

typedef struct tok {
	char *p;
	size_t n;
} tok;

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Split mem[0..len) into tokens, in place; -1 with err on bad syntax. */
static int tokenize(char *mem, size_t len, tok *toks, size_t *ntok, char *err, size_t errlen)
{
	size_t i = 0, n = 0;

	for (;;) {
		size_t start, end;
		char ebuf[80];

		while (i < len && is_blank(mem[i]))
			i++;
		if (i == len)
			break;
		if (n == MAX_TOKENS) {
			snprintf(err, errlen, "too many arguments");
			return -1;
		}
		if (mem[i] == '"') {
			start = ++i;
			while (i < len && mem[i] != '"')
				i++;
			if (i == len) {
				snprintf(err, errlen, "unterminated quote");
				return -1;
			}
			end = i++;
			if (i < len && !is_blank(mem[i])) {
				snprintf(err, errlen, "closing quote must end the argument");
				return -1;
			}
		} else {
			start = i;
			while (i < len && !is_blank(mem[i]))
				i++;
			end = i;
		}
		if (unescape_inplace(mem + start, end - start, &toks[n].n, ebuf, sizeof(ebuf))) {
			snprintf(err, errlen, "argument %zu: %s", n + 1, ebuf);
			return -1;
		}
		toks[n].p = mem + start;
		/* end < len+1 always: the separator or closing quote, or mem[len] */
		mem[start + toks[n].n] = '\0';
		n++;
		i++; /* past the separator (or beyond len: loop ends) */
		if (i > len)
			break;
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

int script_parse_line(const char *line, size_t len, script_cmd *out, char *err,
                      size_t errlen)
{
	tok toks[MAX_TOKENS];
	size_t ntok = 0, ci, nargs;
	char *mem;
	tok *a;

	memset(out, 0, sizeof(*out));
	if (errlen)
		err[0] = '\0';
	if (len && line[len - 1] == '\r')
		len--;
	if (!(mem = malloc(len + 1)))
		return -2;
	memcpy(mem, line, len);
	mem[len] = '\0';
	{
		size_t i = 0;

		while (i < len && is_blank(mem[i]))
			i++;
		if (i == len || mem[i] == '#') {
			out->mem = mem;
			return 0;
		}
	}
	if (tokenize(mem, len, toks, &ntok, err, errlen))
		goto bad;
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
