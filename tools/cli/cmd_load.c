/*
 * cmd_load.c - `mrtx load`: a dump (dumpfmt.h, written by cmd_dump.c) into
 * a table, through the public API.
 *
 * load reads a dump and puts its cells, committing every --batch N rows
 * (default 1000, and at most LOAD_BATCH_BYTES of data a transaction, cut
 * at row boundaries; 0: the whole load in one transaction).  A batch is
 * parsed in full before it is written (the last one once the input ends
 * right after "end"), so a bad line leaves nothing of its batch written; earlier batches stay committed (the message says which
 * lines), and since a load only puts cells, running it again after a fix
 * is safe.  The table is created from the header's families (and their
 * policies, version 2) when missing; an existing table must have every
 * family of the header.  A dump with "versions" is restored cell by cell
 * with mrtx_restore_versions instead (each cell its own store write, the
 * versions of one cell collected first), into cells without versions.
 * Lines may end in CR LF: a raw CR is never part of a field.
 */
#include "cmds.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dumpfmt.h"
#include "storage/versions.h"
#include "txn/admin.h"
#include "util.h"

#define LOAD_BATCH_ROWS 1000
#define LOAD_BATCH_BYTES ((size_t)16 << 20)

typedef struct lcell {
	size_t row, rlen, q, qlen, v, vlen; /* offsets into batch.mem */
	size_t fam;                         /* index into the header's families */
	unsigned long line;
	uint64_t ts;                        /* a version's (a dump with versions) */
} lcell;

typedef struct batch {
	const char *table;
	char **fams;
	lcell *c;
	size_t n, cap;
	char *mem;
	size_t used, memcap;
	size_t rows;          /* rows (runs of cells of one row) in the batch */
	size_t failed;        /* the cell whose put failed, or SIZE_MAX */
} batch;

typedef struct load_state {
	const char *cmd;
	const char *store;    /* opened (made if missing) once the header is good */
	mrtx_db *db;
	batch b;
	size_t nfams, batch_rows;
	mrtx_family_spec *pol; /* the header's policies (max_versions 0: none given) */
	int version;           /* of the dump */
	int versions;          /* it has "versions": cells are restored one by one */
	unsigned long long restored; /* cells restored (with versions) */
	unsigned long long skipped;  /* of them, restored by an earlier run */
	unsigned long long cells, rows;
	unsigned long txns;   /* committed transactions (batches) */
	int created;          /* the table was made by this load */
	unsigned long first_line, committed_to; /* their first and last cell lines */
	unsigned long long committed_rows;
} load_state;

static int load_fn(mrtx_txn *txn, void *p)
{
	batch *b = p;
	int rc;

	b->failed = SIZE_MAX;
	for (size_t i = 0; i < b->n; i++) {
		const lcell *c = &b->c[i];

		rc = mrtx_put(txn, b->table, MRTX_BYTES(b->mem + c->row, c->rlen), b->fams[c->fam],
		              MRTX_BYTES(b->mem + c->q, c->qlen), MRTX_BYTES(b->mem + c->v, c->vlen));
		if (rc) {
			b->failed = i;
			return rc;
		}
	}
	return 0;
}

/* "one N" or "many N-M" into buf (a range of batches, rows, lines). */
static void span(char *buf, size_t n, const char *one, const char *many,
                 unsigned long long a, unsigned long long b)
{
	if (a == b)
		snprintf(buf, n, "%s %llu", one, a);
	else
		snprintf(buf, n, "%s %llu-%llu", many, a, b);
}

/* "batches 1-7 (rows 1-7000, lines 5-7004) committed", or "no batch was
 * committed". */
static void committed_batches(const load_state *s, char *buf, size_t n)
{
	char b[64], r[64], l[64];

	if (s->txns == 0) {
		snprintf(buf, n, "no batch was committed");
		return;
	}
	span(b, sizeof(b), "batch", "batches", 1, s->txns);
	span(r, sizeof(r), "row", "rows", 1, s->committed_rows);
	span(l, sizeof(l), "line", "lines", s->first_line, s->committed_to);
	snprintf(buf, n, "%s (%s, %s) committed", b, r, l);
}

/* "batch 8 (rows 7001-8000, lines 7005-8004)": the batch being read or
 * written (it holds a cell). */
static void this_batch(const load_state *s, char *buf, size_t n)
{
	char r[64], l[64];

	span(r, sizeof(r), "row", "rows", s->committed_rows + 1,
	     s->committed_rows + s->b.rows);
	span(l, sizeof(l), "line", "lines", s->b.c[0].line, s->b.c[s->b.n - 1].line);
	snprintf(buf, n, "batch %lu (%s, %s)", s->txns + 1, r, l);
}

/* Nothing of the dump was written; the table, if this load made it, is. */
static void nothing_note(const load_state *s, char *buf, size_t n)
{
	if (s->created)
		snprintf(buf, n, "nothing was written but table '%s', which this load created "
		         "(empty: mrtx drop-table removes it)", s->b.table);
	else
		snprintf(buf, n, "nothing was written");
}

/* After a bad line: which batches were committed, and that the one being
 * read was not written ("nothing was written" when none was). */
static void committed_note(const load_state *s, char *buf, size_t n)
{
	char done[200], cur[160];

	if (s->txns == 0) {
		nothing_note(s, buf, n);
		return;
	}
	committed_batches(s, done, sizeof(done));
	if (s->b.n == 0) {
		snprintf(buf, n, "%s", done);
		return;
	}
	this_batch(s, cur, sizeof(cur));
	snprintf(buf, n, "%s; %s not written", done, cur);
}

/*
 * Commit the batch.  When that fails, say exactly which batches are in:
 * those committed before it, and it not at all (mrtx_run failed before
 * or at the commit, which then wrote nothing) -- or, with MRTX_EUNKNOWN,
 * maybe (the commit's store write failed in a way that may have applied
 * it).
 */
static int load_flush(load_state *s)
{
	batch *b = &s->b;
	char done[200], cur[160];
	const char *msg;
	int rc;

	if (b->n == 0)
		return 0;
	if ((rc = mrtx_run(s->db, load_fn, b, 0))) {
		msg = tool_errmsg(rc);
		committed_batches(s, done, sizeof(done));
		this_batch(s, cur, sizeof(cur));
		if (b->failed != SIZE_MAX)
			tool_err(s->cmd, "line %lu: %s; %s; %s not written", b->c[b->failed].line, msg,
			         done, cur);
		else if (rc == MRTX_EUNKNOWN)
			tool_err(s->cmd, "%s; %s may or may not have committed: %s (loading the dump "
			         "again is safe)", done, cur, msg);
		else
			tool_err(s->cmd, "%s; %s not written: %s", done, cur, msg);
		return EXIT_FAIL;
	}
	if (s->txns++ == 0)
		s->first_line = b->c[0].line;
	s->committed_to = b->c[b->n - 1].line;
	s->committed_rows += b->rows;
	b->n = 0;
	b->used = 0;
	b->rows = 0;
	return 0;
}

static int mem_add(batch *b, const void *p, size_t n, size_t *off)
{
	if (b->memcap - b->used < n) {
		size_t cap = b->memcap ? b->memcap : 65536;
		char *m;

		while (cap - b->used < n) {
			if (cap > SIZE_MAX / 2)
				return -1;
			cap *= 2;
		}
		if (!(m = realloc(b->mem, cap)))
			return -1;
		b->mem = m;
		b->memcap = cap;
	}
	if (n)
		memcpy(b->mem + b->used, p, n);
	*off = b->used;
	b->used += n;
	return 0;
}

/* After a bad line of a dump with versions: what was restored. */
static void restored_note(const load_state *s, char *buf, size_t n)
{
	if (s->restored == 0)
		nothing_note(s, buf, n);
	else
		snprintf(buf, n, "the %llu cells before it were restored (a load of the dump "
		         "run again skips them)", s->restored);
}

/* Is the newest of the dumped versions v past family fam's TTL now, so
 * that restoring them shows nothing (reads hide the cell)? */
static int dumped_hidden(load_state *s, const char *fam, const mrtx_version *v)
{
	const char *const *fams;
	mrtx_family_spec f;
	size_t nf;

	if (mrtx_table_families(s->db, s->b.table, &fams, &nf))
		return 0;
	for (size_t i = 0; i < nf; i++)
		if (strcmp(fams[i], fam) == 0) {
			store_policy p;

			if (admin_family_policy(s->db, s->b.table, i, &f))
				return 0;
			p.max_versions = (uint32_t)f.max_versions;
			p.min_versions = (uint32_t)f.min_versions;
			p.ttl_ms = f.ttl_ms;
			return p.ttl_ms && !store_version_kept(&p, 0, v[0].ts, mrtx__now_us());
		}
	return 0;
}

/* Does the cell hold what restoring v[0..n) (newest first) leaves: the
 * newest of them and only versions among them (the family's policy may
 * have dropped older ones)?  Then an earlier run of this load restored it.
 * A cell that reads as none, when the newest of v is past its family's TTL
 * (so a restore would read as none too), counts as restored.  1, 0, or -1
 * when the cell cannot be read. */
static int already_restored(load_state *s, mrtx_bytes row, const char *fam, mrtx_bytes q,
                            const mrtx_version *v, size_t n)
{
	mrtx_version *have = calloc(n + 1, sizeof(*have));
	size_t k = 0, i = 0;
	mrtx_txn *txn;
	int same = -1, rc;

	if (!have)
		return -1;
	if (mrtx_begin(s->db, &txn) == 0) {
		rc = mrtx_get_versions(txn, s->b.table, row, fam, q, have, n + 1, &k);
		if (rc == MRTX_NOTFOUND || (rc == 0 && k == 0)) {
			same = dumped_hidden(s, fam, v);
		} else if (rc == 0) {
			same = have[0].ts == v[0].ts;
			for (size_t j = 0; j < k && same; j++) {
				while (i < n && v[i].ts > have[j].ts)
					i++;
				same = i < n && v[i].ts == have[j].ts &&
				       v[i].value.size == have[j].value.size &&
				       (v[i].value.size == 0 ||
				        memcmp(v[i].value.data, have[j].value.data, v[i].value.size) == 0);
			}
		}
		mrtx_abort(txn);
	}
	free(have);
	return same;
}

/* Restore the versions of one cell in the batch (a dump with versions); a
 * cell an earlier run of the same load restored is skipped, so a load cut
 * short can be run again. */
static int restore_flush(load_state *s)
{
	batch *b = &s->b;
	mrtx_version *v;
	const lcell *c0 = &b->c[0];
	char note[400], why[600];
	int rc;

	if (b->n == 0)
		return 0;
	if (!(v = calloc(b->n, sizeof(*v)))) {
		tool_err(s->cmd, "line %lu: out of memory", c0->line);
		return EXIT_FAIL;
	}
	for (size_t i = 0; i < b->n; i++) {
		v[i].ts = b->c[i].ts;
		v[i].value = MRTX_BYTES(b->mem + b->c[i].v, b->c[i].vlen);
	}
	rc = mrtx_restore_versions(s->db, b->table, MRTX_BYTES(b->mem + c0->row, c0->rlen),
	                           b->fams[c0->fam], MRTX_BYTES(b->mem + c0->q, c0->qlen), v,
	                           b->n);
	snprintf(why, sizeof(why), "%s", rc ? tool_errmsg(rc) : "");
	if (rc == MRTX_EEXIST &&
	    already_restored(s, MRTX_BYTES(b->mem + c0->row, c0->rlen), b->fams[c0->fam],
	                     MRTX_BYTES(b->mem + c0->q, c0->qlen), v, b->n) == 1) {
		rc = 0;
		s->skipped++;
	}
	free(v);
	if (rc) {
		const char *msg = why; /* (the restore's, not the look's) */

		restored_note(s, note, sizeof(note));
		tool_err(s->cmd, "line %lu: %s; %s", c0->line, msg, note);
		return EXIT_FAIL;
	}
	s->restored++;
	b->n = 0;
	b->used = 0;
	b->rows = 0;
	return 0;
}

static int load_cell(load_state *s, const dump_line *l, size_t fam, unsigned long line)
{
	batch *b = &s->b;
	int new_row = 1;
	lcell c;
	int rc;

	if (b->n) {
		const lcell *last = &b->c[b->n - 1];

		new_row = last->rlen != l->row.size ||
		          memcmp(b->mem + last->row, l->row.data, l->row.size) != 0;
	}
	if (s->versions && b->n) {
		const lcell *last = &b->c[b->n - 1];

		if (!new_row && last->fam == fam && last->qlen == l->qualifier.size &&
		    memcmp(b->mem + last->q, l->qualifier.data, l->qualifier.size) == 0) {
			if (l->ts >= last->ts) {
				char note[400];

				restored_note(s, note, sizeof(note));
				tool_err(s->cmd, "line %lu: a version at timestamp %llu after one at %llu "
				         "(a cell's versions come newest first); %s", line,
				         (unsigned long long)l->ts, (unsigned long long)last->ts, note);
				return EXIT_FAIL;
			}
		} else if ((rc = restore_flush(s))) {
			return rc;
		}
	} else if (new_row && b->n && s->batch_rows &&
	           (b->rows >= s->batch_rows || b->used >= LOAD_BATCH_BYTES) &&
	           (rc = load_flush(s))) {
		return rc;
	}
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		lcell *p = reallocarray(b->c, cap, sizeof(*p));

		if (!p)
			goto nomem;
		b->c = p;
		b->cap = cap;
	}
	memset(&c, 0, sizeof(c));
	c.fam = fam;
	c.line = line;
	c.ts = l->ts;
	if (mem_add(b, l->row.data, l->row.size, &c.row) ||
	    mem_add(b, l->qualifier.data, l->qualifier.size, &c.q) ||
	    mem_add(b, l->value.data, l->value.size, &c.v))
		goto nomem;
	c.rlen = l->row.size;
	c.qlen = l->qualifier.size;
	c.vlen = l->value.size;
	if (s->versions && b->n)
		new_row = 0; /* (a cell's versions: batch.rows unused) */
	b->c[b->n++] = c;
	if (new_row) {
		b->rows++;
		s->rows++;
	}
	s->cells++;
	return 0;
nomem:
	tool_err(s->cmd, "line %lu: out of memory", line);
	return EXIT_FAIL;
}

/* The store, and the target table: created from the header, or checked
 * against it. */
static int load_table(load_state *s, const char *dump_table)
{
	const char *const *tf;
	size_t ntf;
	int rc;

	if ((rc = tool_open(s->cmd, s->store, 1, &s->db)))
		return rc;
	rc = mrtx_table_families(s->db, s->b.table, &tf, &ntf);

	if (rc == MRTX_ENOTABLE) {
		int pol = 0;

		for (size_t i = 0; i < s->nfams; i++) {
			pol |= s->pol[i].max_versions != 0;
			s->pol[i].name = s->b.fams[i];
		}
		/* (without policies as before: no record of them) */
		rc = pol ? mrtx_create_table2(s->db, s->b.table, s->pol, s->nfams) :
		     mrtx_create_table(s->db, s->b.table, (const char *const *)s->b.fams, s->nfams);
		if (rc)
			return tool_fail(s->cmd, "create table", rc);
		s->created = 1;
		return 0;
	}
	if (rc)
		return tool_fail(s->cmd, NULL, rc);
	if ((rc = tool_refuse_index_table(s->cmd, s->db, s->b.table)))
		return rc;
	for (size_t i = 0; i < s->nfams; i++) {
		size_t j = 0;

		while (j < ntf && strcmp(tf[j], s->b.fams[i]) != 0)
			j++;
		if (j == ntf) {
			char *have = NULL;
			size_t len = 0;
			FILE *m = open_memstream(&have, &len);

			for (size_t k = 0; m && k < ntf; k++)
				fprintf(m, "%s%s", k ? " " : "", tf[k]);
			if (m)
				fclose(m);
			tool_err(s->cmd, "table '%s' has no family '%s' of the dump (of table '%s'); "
			         "its families are: %s; nothing was written (mrtx add-family STORE "
			         "%s %s adds it, or load into a new table)", s->b.table,
			         s->b.fams[i], dump_table, have ? have : "?", s->b.table,
			         s->b.fams[i]);
			free(have);
			return EXIT_FAIL;
		}
	}
	return 0;
}

typedef enum { L_MAGIC, L_TABLE, L_FAMILIES, L_CELLS, L_DONE } lphase;

/* Read and load the dump from in; EXIT_* (messages printed). */
static int load_stream(load_state *s, FILE *in)
{
	char *line = NULL, err[160], note[400], *dump_table = NULL;
	size_t cap = 0;
	unsigned long lineno = 0;
	lphase ph = L_MAGIC;
	ssize_t len;
	dump_line l;
	int rc = 0;

	while (rc == 0 && (len = getline(&line, &cap, in)) > 0) {
		lineno++;
		if (line[len - 1] == '\n' && len >= 2 && line[len - 2] == '\r') {
			/* CR LF line ends (a raw CR is never part of a field) */
			line[len - 2] = '\n';
			line[--len] = '\0';
		}
		if (line[len - 1] != '\n') {
			committed_note(s, note, sizeof(note));
			tool_err(s->cmd, "line %lu: no newline at its end (a truncated dump?); %s",
			         lineno, note);
			rc = EXIT_FAIL;
			break;
		}
		if (ph == L_DONE) {
			committed_note(s, note, sizeof(note));
			tool_err(s->cmd, "line %lu: data after the 'end' line; %s", lineno, note);
			rc = EXIT_FAIL;
			break;
		}
		if (dump_parse_line(line, (size_t)len - 1, ph != L_CELLS ? 0 : s->versions ? 2 : 1,
		                    &l, err, sizeof(err))) {
			if (ph == L_MAGIC)
				tool_err(s->cmd, "line 1: not an mrtx dump (it starts with '%s 1' or "
				         "'%s 2')", DUMP_MAGIC, DUMP_MAGIC);
			else {
				if (s->versions)
					restored_note(s, note, sizeof(note));
				else
					committed_note(s, note, sizeof(note));
				tool_err(s->cmd, "line %lu: %s; %s", lineno, err, note);
			}
			rc = EXIT_FAIL;
			break;
		}
		switch (ph) {
		case L_MAGIC:
			if (l.kind != DUMP_LINE_MAGIC) {
				tool_err(s->cmd, "line 1: not an mrtx dump (it starts with '%s 1' or "
				         "'%s 2')", DUMP_MAGIC, DUMP_MAGIC);
				rc = EXIT_FAIL;
			} else if (l.number < 1 || l.number > DUMP_VERSION) {
				tool_err(s->cmd, "line 1: dump format version %llu; this mrtx reads "
				         "versions 1 to %d", l.number, DUMP_VERSION);
				rc = EXIT_FAIL;
			}
			s->version = (int)l.number;
			ph = L_TABLE;
			break;
		case L_TABLE:
			if (l.kind != DUMP_LINE_TABLE) {
				tool_err(s->cmd, "line %lu: expected 'table NAME'", lineno);
				rc = EXIT_FAIL;
			} else if (!(dump_table = strdup(l.name))) {
				tool_err(s->cmd, "out of memory");
				rc = EXIT_FAIL;
			}
			ph = L_FAMILIES;
			break;
		case L_FAMILIES:
			if ((l.kind == DUMP_LINE_VERSIONS || l.has_policy) && s->version < 2) {
				tool_err(s->cmd, "line %lu: %s in a version 1 dump (it came with "
				         "version 2)", lineno, l.has_policy ? "a family's policy" :
				         "'versions'");
				rc = EXIT_FAIL;
				break;
			}
			if (l.kind == DUMP_LINE_VERSIONS) {
				if (s->versions) {
					tool_err(s->cmd, "line %lu: 'versions' twice", lineno);
					rc = EXIT_FAIL;
				}
				s->versions = 1;
				break;
			}
			if (l.kind == DUMP_LINE_CELLS) {
				if (s->nfams == 0) {
					tool_err(s->cmd, "line %lu: the header declares no family", lineno);
					rc = EXIT_FAIL;
				} else {
					rc = load_table(s, dump_table);
				}
				ph = L_CELLS;
				break;
			}
			if (l.kind != DUMP_LINE_FAMILY) {
				tool_err(s->cmd, "line %lu: expected 'family NAME' or 'cells'", lineno);
				rc = EXIT_FAIL;
				break;
			}
			for (size_t i = 0; i < s->nfams; i++)
				if (strcmp(s->b.fams[i], l.name) == 0) {
					tool_err(s->cmd, "line %lu: family '%s' declared twice", lineno,
					         l.name);
					rc = EXIT_FAIL;
				}
			if (rc)
				break;
			if (s->nfams == MRTX_MAX_FAMILIES) {
				tool_err(s->cmd, "line %lu: more than %u families", lineno,
				         MRTX_MAX_FAMILIES);
				rc = EXIT_FAIL;
			} else if (!(s->b.fams[s->nfams] = strdup(l.name))) {
				tool_err(s->cmd, "out of memory");
				rc = EXIT_FAIL;
			} else {
				if (l.has_policy)
					s->pol[s->nfams] = l.policy;
				s->nfams++;
			}
			break;
		case L_CELLS:
			if (l.kind == DUMP_LINE_END) {
				if (l.number != s->cells) {
					if (s->versions)
						restored_note(s, note, sizeof(note));
					else
						committed_note(s, note, sizeof(note));
					tool_err(s->cmd, "line %lu: 'end %llu', but %llu cell lines were read "
					         "(a damaged dump?); %s", lineno, l.number, s->cells, note);
					rc = EXIT_FAIL;
				}
				ph = L_DONE; /* the last batch is written at the end of input */
				break;
			}
			{
				size_t f = 0;

				while (f < s->nfams && strcmp(s->b.fams[f], l.family) != 0)
					f++;
				if (f == s->nfams) {
					if (s->versions)
						restored_note(s, note, sizeof(note));
					else
						committed_note(s, note, sizeof(note));
					tool_err(s->cmd, "line %lu: family '%s' is not in the header; %s",
					         lineno, l.family, note);
					rc = EXIT_FAIL;
					break;
				}
				rc = load_cell(s, &l, f, lineno);
			}
			break;
		case L_DONE:
			break;
		}
	}
	if (rc == 0 && ferror(in)) {
		tool_err(s->cmd, "reading the dump: %s", strerror(errno));
		rc = EXIT_FAIL;
	} else if (rc == 0 && ph == L_DONE) {
		/* nothing follows "end": the last batch is good */
		rc = s->versions ? restore_flush(s) : load_flush(s);
	} else if (rc == 0 && ph != L_DONE) {
		if (s->versions)
			restored_note(s, note, sizeof(note));
		else
			committed_note(s, note, sizeof(note));
		if (lineno == 0)
			tool_err(s->cmd, "the input is empty (not an mrtx dump)");
		else
			tool_err(s->cmd, "the input stops at line %lu, before the 'end' line (a "
			         "truncated dump?); %s", lineno, note);
		rc = EXIT_FAIL;
	}
	free(dump_table);
	free(line);
	return rc;
}

int cmd_load(int argc, char **argv)
{
	static const char usage[] = "mrtx load STORE TABLE [FILE] [--batch N]";
	const char *batch_arg = NULL;
	const tool_opt opts[] = { { "batch", 1, &batch_arg, NULL }, { NULL, 0, NULL, NULL } };
	char **pos = argv + 1;
	int npos, help, rc;
	load_state s;
	FILE *in = stdin;

	if ((rc = args_parse(argv[0], usage, argc, argv, opts, pos, &npos, &help)))
		return rc;
	if (help)
		HELP(usage, "Put the cells of a dump (FILE, default or \"-\": standard input; the\n"
		     "format of `mrtx dump`) into TABLE, which is created with the dump's\n"
		     "families if missing (the store too); an existing TABLE must have every\n"
		     "family of the dump.  TABLE need not be the dumped table.  Cells are\n"
		     "put, so other cells of TABLE stay.  A load commits every --batch N\n"
		     "rows (default 1000, fewer when a transaction would hold over 16 MiB),\n"
		     "so it is not one transaction; --batch 0 makes it one (all or nothing,\n"
		     "held in memory until it commits).  A batch is parsed in full before it\n"
		     "is written (the last one once nothing follows the end line): a bad\n"
		     "line (the message names it) leaves nothing of its batch written, and\n"
		     "earlier batches committed.  When a batch fails to commit (a full disk:\n"
		     "No space left on device), the message names the batches committed and\n"
		     "the one not written, by batch, row and line numbers (or says it may or\n"
		     "may not have committed, when the store cannot tell).  Running the load\n"
		     "again after a fix is safe.  A missing TABLE gets the families' version\n"
		     "policies the dump records (an existing one keeps its own).  A dump of\n"
		     "`mrtx dump --versions` restores every version of each cell at its\n"
		     "timestamp, one cell per store write (--batch does not apply), into\n"
		     "cells that must have no version yet (a new or truncated table; LMDB\n"
		     "stores only); a cell that holds the newest of its dumped versions and\n"
		     "only versions among them was restored by an earlier run and is\n"
		     "skipped, so a load cut short is run again (so is one that reads as\n"
		     "none when its newest dumped version is past the family's TTL).  Dumps of format version 1 and 2 load; so do dumps with\n"
		     "CR LF line ends.\n");
	if (npos < 2 || npos > 3)
		return tool_usage_err(argv[0], usage, "expected STORE, TABLE and maybe FILE");
	memset(&s, 0, sizeof(s));
	s.cmd = argv[0];
	s.batch_rows = LOAD_BATCH_ROWS;
	if ((rc = arg_name(argv[0], "table", pos[1])) ||
	    (batch_arg && (rc = arg_size(argv[0], "--batch", batch_arg, &s.batch_rows))))
		return rc;
	if (npos == 3 && strcmp(pos[2], "-") != 0 && !(in = fopen(pos[2], "r"))) {
		tool_err(argv[0], "%s: %s", pos[2], strerror(errno));
		return EXIT_FAIL;
	}
	if (!(s.b.fams = calloc(MRTX_MAX_FAMILIES, sizeof(char *))) ||
	    !(s.pol = calloc(MRTX_MAX_FAMILIES, sizeof(*s.pol)))) {
		tool_err(argv[0], "out of memory");
		rc = EXIT_FAIL;
		goto out;
	}
	s.b.table = pos[1];
	s.store = pos[0];
	if ((rc = load_stream(&s, in)) == 0 && s.versions && s.skipped)
		printf("%llu versions of %llu cells in %llu rows restored into %s (%llu of the "
		       "cells by an earlier run)\n", s.cells, s.restored, s.rows, s.b.table,
		       s.skipped);
	else if (rc == 0 && s.versions)
		printf("%llu versions of %llu cells in %llu rows restored into %s\n", s.cells,
		       s.restored, s.rows, s.b.table);
	else if (rc == 0)
		printf("%llu cells in %llu rows loaded into %s (%lu transactions)\n", s.cells,
		       s.rows, s.b.table, s.txns);
out:
	if (in != stdin)
		fclose(in);
	mrtx_close(s.db);
	if (s.b.fams)
		for (size_t i = 0; i < s.nfams; i++)
			free(s.b.fams[i]);
	free(s.b.fams);
	free(s.pol);
	free(s.b.c);
	free(s.b.mem);
	return rc;
}
