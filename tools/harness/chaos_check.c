/*
 * chaos_check.c - store setup before, and verification after, a chaos run.
 *
 * After the run (every child stopped):
 *   1 recovery: admin_recover over every table (what `mrtx recover` runs);
 *     a lock still owned by a live process is an anomaly (none is alive)
 *   2 our own scan of every lock family: any non-STABLE lock is an anomaly
 *   3 the final state, read in one read-only transaction
 *   4 `mrtx check STORE` as a separate process (exit 2 = not available)
 *   5 the histories: bank audits and final sum, or histcheck for append
 */
#include "chaos_check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHOWN_MAX 40

void chaos_anomaly(chaos_result *r, const char *fmt, ...)
{
	va_list ap;
	char *text = NULL, **p;

	r->nanomalies++;
	if (r->nshown >= SHOWN_MAX)
		return;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	if (!text || !(p = realloc(r->anomalies, (r->nshown + 1) * sizeof(*p)))) {
		free(text);
		return;
	}
	r->anomalies = p;
	r->anomalies[r->nshown++] = text;
}

void chaos_result_free(chaos_result *r)
{
	for (size_t i = 0; i < r->nshown; i++)
		free(r->anomalies[i]);
	free(r->anomalies);
	if (r->have_hc)
		hc_report_free(&r->hc);
	memset(r, 0, sizeof(*r));
}

int chaos_setup_store(const chaos_cfg *cfg)
{
	const char *fam[] = { CHAOS_FAMILY };
	mrtx_db *db;
	mrtx_txn *txn = NULL;
	int rc;

	if ((rc = chaos_open(cfg, &db)))
		return rc;
	for (int i = 0; i < 2 && rc == 0; i++)
		rc = mrtx_create_table(db, cfg->workload == CHAOS_BANK ? chaos_bank_tables[i] :
		                       chaos_append_tables[i], fam, 1);
	if (rc == 0 && cfg->workload == CHAOS_BANK)
		rc = mrtx_create_table(db, chaos_mirror_table, fam, 1);
	if (rc == 0 && cfg->workload == CHAOS_BANK && (rc = mrtx_begin(db, &txn)) == 0) {
		for (int i = 0; i < BANK_ACCOUNTS && rc == 0; i++) {
			char row[32], qual[32], val[32];
			const char *table;

			bank_account(i, &table, row, sizeof(row), qual, sizeof(qual));
			snprintf(val, sizeof(val), "%d", BANK_INITIAL);
			rc = mrtx_put(txn, table, MRTX_CSTR(row), CHAOS_FAMILY, MRTX_CSTR(qual),
			              MRTX_CSTR(val));
		}
		if (rc == 0)
			rc = mrtx_commit(txn);
		else
			mrtx_abort(txn);
	}
	mrtx_close(db);
	return rc;
}

/* ------------------------------------------------------------ store checks */

struct lock_scan {
	mrtx_db *db;
	chaos_result *r;
};

static int scan_lock(const admin_lock *l, void *payload)
{
	chaos_result *r = payload;

	if (!l->rec) {
		chaos_anomaly(r, "table '%s' row '%.*s': malformed lock", l->table,
		              (int)l->row.size, (const char *)l->row.data);
	} else if (l->rec->state != LOCK_STABLE) {
		r->locks_left++;
		chaos_anomaly(r, "table '%s' row '%.*s': %s lock remains after recovery", l->table,
		              (int)l->row.size, (const char *)l->row.data,
		              lock_state_name(l->rec->state));
	}
	return 0;
}

static int scan_table(const char *table, void *payload)
{
	struct lock_scan *s = payload;

	if (admin_locks(s->db, table, scan_lock, s->r))
		chaos_anomaly(s->r, "lock scan of '%s' failed: %s", table, mrtx_errmsg());
	return 0; /* on to the next table */
}

/* Every lock record of every table: any not STABLE is an anomaly. */
static void scan_locks(mrtx_db *db, chaos_result *r)
{
	struct lock_scan s = { db, r };

	if (mrtx_tables(db, scan_table, &s))
		chaos_anomaly(r, "lock scan: listing tables failed: %s", mrtx_errmsg());
}

/* Run `mrtx check STORE` (this binary); output goes to LOGDIR/check.out. */
static void run_check(const chaos_cfg *cfg, chaos_result *r)
{
	char out[4200];
	pid_t pid;
	int st = 0, fd;

	snprintf(out, sizeof(out), "%s/check.out", cfg->logdir);
	fflush(NULL);
	if ((pid = fork()) < 0) {
		r->check = "failed";
		chaos_anomaly(r, "mrtx check: fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		if ((fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644)) >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl("/proc/self/exe", "mrtx", "check", cfg->store, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	r->check_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (r->check_status == 0) {
		r->check = "passed";
	} else if (r->check_status == 2) {
		r->check = "unavailable"; /* usage error: this mrtx has no `check` yet */
	} else {
		r->check = "failed";
		chaos_anomaly(r, "mrtx check failed (exit %d); see %s", r->check_status, out);
	}
}

/* ------------------------------------------------------------ final state */

static int bank_final(mrtx_db *db, chaos_result *r)
{
	mrtx_txn *txn;
	int rc;

	r->final_total = 0;
	r->final_min = 0;
	if ((rc = mrtx_begin(db, &txn)))
		return rc;
	for (int i = 0; i < BANK_ACCOUNTS && rc == 0; i++) {
		char row[32], qual[32], buf[32];
		const char *table;
		mrtx_bytes v;
		long x;

		bank_account(i, &table, row, sizeof(row), qual, sizeof(qual));
		if ((rc = mrtx_get(txn, table, MRTX_CSTR(row), CHAOS_FAMILY, MRTX_CSTR(qual), &v)))
			break;
		snprintf(buf, sizeof(buf), "%.*s", (int)v.size, (const char *)v.data);
		x = strtol(buf, NULL, 10);
		r->final_total += x;
		if (i == 0 || x < r->final_min)
			r->final_min = x;
		if (x < 0)
			chaos_anomaly(r, "final state: account %d is negative (%ld)", i, x);
	}
	for (int k = 0; k < BANK_MIRRORS && rc == 0; k++) {
		int torn = 0;

		if ((rc = chaos_mirror_read(txn, k, &torn)) == 0 && torn)
			chaos_anomaly(r, "final state: mirror row m%d is torn (cells a and b differ)",
			              k);
	}
	if (rc == 0)
		rc = mrtx_commit(txn);
	else
		mrtx_abort(txn);
	if (rc == 0 && r->final_total != BANK_TOTAL)
		chaos_anomaly(r, "final state: total %ld, expected %d", r->final_total, BANK_TOTAL);
	return rc;
}

/* "P.S" -> HC_ID(P, S); 0 on error (values are never 0.0) */
static uint64_t parse_val(const char *s, size_t n)
{
	char buf[32], *dot, *end;
	unsigned long hi, lo;

	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, s, n);
	buf[n] = 0;
	if (!(dot = strchr(buf, '.')))
		return 0;
	hi = strtoul(buf, &end, 10);
	if (end != dot)
		return 0;
	lo = strtoul(dot + 1, &end, 10);
	if (*end)
		return 0;
	return HC_ID(hi, lo);
}

/* Parse a separated list of values; *n values into *out (malloc'd). */
static int parse_list(const char *s, size_t len, char sep, uint64_t **out, size_t *n)
{
	size_t cap = 1;

	for (size_t i = 0; i < len; i++)
		cap += s[i] == sep;
	*n = 0;
	if (!(*out = malloc(cap * sizeof(**out))))
		return -1;
	for (size_t i = 0; i < len;) {
		size_t j = i;

		while (j < len && s[j] != sep)
			j++;
		if (j > i && !((*out)[(*n)++] = parse_val(s + i, j - i)))
			return -1;
		i = j + 1;
	}
	return 0;
}

static int append_final(mrtx_db *db, hc_history *h, chaos_result *r)
{
	mrtx_txn *txn;
	int rc;

	if ((rc = mrtx_begin(db, &txn)))
		return rc;
	for (int t = 0; t < 2 && rc == 0; t++) {
		mrtx_scan_spec spec;
		mrtx_scanner *s;
		mrtx_cell c;

		memset(&spec, 0, sizeof(spec));
		spec.table = chaos_append_tables[t];
		spec.family = CHAOS_FAMILY;
		if ((rc = mrtx_scan_open(txn, &spec, &s)))
			break;
		while ((rc = mrtx_scan_next(s, &c)) == 0) {
			char row[32];
			uint64_t *list = NULL;
			size_t n;

			snprintf(row, sizeof(row), "%.*s", (int)c.row.size, (const char *)c.row.data);
			if (row[0] != 'k' || parse_list(c.value.data, c.value.size, ' ', &list, &n)) {
				chaos_anomaly(r, "final state: row '%s' holds an unparsable list", row);
				free(list);
				continue;
			}
			if (hc_set_final(h, (uint32_t)strtoul(row + 1, NULL, 10), list, n))
				rc = MRTX_ENOMEM;
			free(list);
		}
		mrtx_scan_close(s);
		if (rc == MRTX_NOTFOUND)
			rc = 0;
	}
	if (rc == 0)
		rc = mrtx_commit(txn);
	else
		mrtx_abort(txn);
	return rc;
}

/* ------------------------------------------------------------ histories */

typedef struct pending {
	int open;
	uint32_t seq;
	uint32_t keys[8];
	int nkeys;
} pending;

static int add_txn(hc_history *h, uint32_t inc, const pending *p, int status,
                   const char *reads)
{
	long t = hc_add_txn(h, HC_ID(inc, p->seq), status);

	if (t < 0)
		return -1;
	for (int i = 0; i < p->nkeys; i++)
		if (hc_add_append(h, t, p->keys[i], HC_ID(inc, p->seq)))
			return -1;
	/* reads: " k=v,v k= ..." */
	while (reads && *reads) {
		const char *sp, *eq;
		uint64_t *list;
		size_t n;
		int rc;

		while (*reads == ' ')
			reads++;
		if (!*reads)
			break;
		sp = strchr(reads, ' ');
		if (!sp)
			sp = reads + strlen(reads);
		if (!(eq = memchr(reads, '=', (size_t)(sp - reads))))
			return -1;
		if (parse_list(eq + 1, (size_t)(sp - eq - 1), ',', &list, &n)) {
			free(list);
			return -1;
		}
		rc = hc_add_read(h, t, (uint32_t)strtoul(reads, NULL, 10), list, n);
		free(list);
		if (rc)
			return -1;
		reads = sp;
	}
	return 0;
}

/* One line of one incarnation's log. */
static void parse_line(const chaos_cfg *cfg, uint32_t inc, char *line, pending *p,
                       hc_history *h, chaos_result *r)
{
	char kind = line[0], *rest = line[1] ? line + 2 : line + 1;
	int status = -1;

	switch (kind) {
	case 'I':
		p->open = 1;
		p->nkeys = 0;
		p->seq = (uint32_t)strtoul(rest, &rest, 10);
		while (cfg->workload == CHAOS_APPEND && *rest == ' ' && p->nkeys < 8)
			p->keys[p->nkeys++] = (uint32_t)strtoul(rest + 1, &rest, 10);
		return;
	case 'O': status = HC_OK; r->committed++; break;
	case 'F': status = HC_FAIL; r->failed++; break;
	case 'U': status = HC_UNKNOWN; r->unknown++; break;
	case 'A': {
		long total = strtol(rest, &rest, 10), min = strtol(rest, &rest, 10);
		long n = strtol(rest, &rest, 10);

		r->audits++;
		if (total != BANK_TOTAL || min < 0 || n != BANK_ACCOUNTS)
			chaos_anomaly(r, "audit by process %" PRIu32 " saw total %ld, smallest "
			              "balance %ld, %ld accounts (expected %d, >= 0, %d)", inc, total,
			              min, n, BANK_TOTAL, BANK_ACCOUNTS);
		return;
	}
	case 'P': /* a wrong view before commit (bank_auditor_step) */
		r->wrong_views++;
		if (r->snapshots)
			chaos_anomaly(r, "audit by process %" PRIu32 " saw a wrong total or a torn "
			              "mirror before its commit (total min accounts torn: %s), "
			              "though its reads come from one snapshot", inc, rest);
		return;
	case 'E':
		chaos_anomaly(r, "process %" PRIu32 ": unexpected error: %s", inc, rest);
		return;
	default:
		return; /* X: armed failpoint; N: store unavailable (informational) */
	}
	if (!p->open || strtoul(rest, &rest, 10) != p->seq) {
		chaos_anomaly(r, "process %" PRIu32 ": log record '%c' without its invoke", inc, kind);
		return;
	}
	p->open = 0;
	if (h && add_txn(h, inc, p, status, rest))
		chaos_anomaly(r, "process %" PRIu32 ": unparsable history record", inc);
}

static int load_logs(const chaos_cfg *cfg, hc_history *h, chaos_result *r)
{
	DIR *d = opendir(cfg->logdir);
	struct dirent *de;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[4400], *data = NULL;
		uint32_t inc;
		pending p = { 0 };
		size_t size = 0, cap = 0;
		ssize_t got;
		int fd;

		if (sscanf(de->d_name, "h-%" SCNu32 ".log", &inc) != 1)
			continue;
		snprintf(path, sizeof(path), "%s/%s", cfg->logdir, de->d_name);
		if ((fd = open(path, O_RDONLY)) < 0)
			continue;
		for (;;) {
			if (size + 4096 + 1 > cap) {
				char *q = realloc(data, cap = cap * 2 + 8192);

				if (!q)
					break;
				data = q;
			}
			if ((got = read(fd, data + size, cap - size - 1)) <= 0)
				break;
			size += (size_t)got;
		}
		close(fd);
		for (size_t i = 0; data && i < size;) {
			char *nl = memchr(data + i, '\n', size - i);

			if (!nl)
				break; /* the record being written when the process died */
			*nl = 0;
			parse_line(cfg, inc, data + i, &p, h, r);
			i = (size_t)(nl - data) + 1;
		}
		if (p.open) {
			/* invoked, never completed: killed */
			r->unknown++;
			if (h && add_txn(h, inc, &p, HC_UNKNOWN, NULL))
				chaos_anomaly(r, "out of memory loading histories");
		}
		free(data);
	}
	closedir(d);
	return 0;
}

/* ------------------------------------------------------------ postrun */

int chaos_postrun(const chaos_cfg *cfg, chaos_result *r)
{
	recover_opts ro = { 0, 0, 0 };
	hc_history *h = NULL;
	mrtx_db *db;
	int rc;

	if ((rc = chaos_open(cfg, &db))) {
		chaos_anomaly(r, "reopening the store failed: %s", mrtx_errmsg());
		return 1;
	}
	/* 1: recovery */
	r->recover_rc = admin_recover(db, &ro, &r->recover, NULL, NULL);
	if (r->recover_rc)
		chaos_anomaly(r, "recovery failed: %s", mrtx_errmsg());
	if (r->recover.errors)
		chaos_anomaly(r, "recovery: %lu errors", r->recover.errors);
	if (r->recover.skipped_live)
		chaos_anomaly(r, "recovery: %lu transactions still owned by a live process",
		              r->recover.skipped_live);
	/* 2: no lock left */
	scan_locks(db, r);
	/* 3: final state */
	if (cfg->workload == CHAOS_BANK) {
		if ((rc = bank_final(db, r)))
			chaos_anomaly(r, "reading the final balances failed: %s", mrtx_errmsg());
	} else {
		if (!(h = hc_new()) || (rc = append_final(db, h, r)))
			chaos_anomaly(r, "reading the final lists failed: %s", mrtx_errmsg());
	}
	mrtx_close(db);
	/* 4: the real `mrtx check` */
	run_check(cfg, r);
	/* 5: histories */
	if (load_logs(cfg, h, r))
		chaos_anomaly(r, "reading the histories in %s failed", cfg->logdir);
	if (h) {
		if (hc_check_mode(h, r->readers_si ? HC_SNAPSHOT_READONLY : HC_SERIALIZABLE,
		                  &r->hc)) {
			chaos_anomaly(r, "history check ran out of memory");
		} else {
			r->have_hc = 1;
			for (size_t i = 0; i < r->hc.nanomalies; i++)
				chaos_anomaly(r, "%s: %s", hc_anomaly_name(r->hc.anomalies[i].type),
				              r->hc.anomalies[i].text);
			/* count what the report only summarised */
			if (r->hc.total > r->hc.nanomalies)
				r->nanomalies += r->hc.total - r->hc.nanomalies;
			/* and the same history held to the other standard
			 * (reported beside, not added): what snapshot readers
			 * promise -- readers snapshot isolation, writers
			 * serializable -- or, where that is the promise (RADOS:
			 * read-only transactions do not validate), serializability
			 * of everything (read-only anomalies, Fekete's, allowed) */
			{
				hc_report si;

				if (hc_check_mode(h, r->readers_si ? HC_SERIALIZABLE :
				                                     HC_SNAPSHOT_READONLY, &si) == 0) {
					r->si_total = si.total;
					hc_report_free(&si);
				} else {
					chaos_anomaly(r, "history check ran out of memory");
				}
			}
		}
		hc_free(h);
	}
	return 0;
}
