/*
 * crashsim_check.c - the checks of one crash state's image (the verdict of
 * `mrtx crashsim`), run in a child process so that a signal (SIGBUS on a
 * page past the end of a truncated file) or a hang is a finding, not the
 * end of the run; one that runs longer than CS_CHECK_SECONDS (LMDB can loop
 * on a damaged B-tree) is killed and counted as a hang.  In order:
 *   open        mrtx_open succeeds, and data.mdb is byte-for-byte unchanged
 *               right after it (the open itself must not write);
 *   recover     admin_recover with force (every writer died in the crash)
 *               resolves every lock;
 *   check       admin_check finds nothing, CORRUPT or RESOLVABLE (--strict);
 *   bank        every account and writer row reads; the total is exact; the
 *               balances are exactly those of the first `seq` transactions of
 *               each writer (seq from the writer's row: no partial
 *               transaction, no lost write inside a transaction); each
 *               writer's seq is at least the last commit acknowledged
 *               before the crash (cs_expect.need).
 */
#include "crashsim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chaos_work.h"
#include "crashsim.h"
#include "txn/admin.h"

/* A healthy check takes milliseconds; allow for a loaded machine. */
#define CS_CHECK_SECONDS 10

static void flag(verdict *v, int kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void flag(verdict *v, int kind, const char *fmt, ...)
{
	va_list ap;

	if (!v->mask) {
		v->first = kind;
		va_start(ap, fmt);
		vsnprintf(v->detail, sizeof(v->detail), fmt, ap);
		va_end(ap);
	}
	v->mask |= 1u << kind;
}

static uint8_t *read_all(const char *path, size_t *n)
{
	struct stat sb;
	uint8_t *p = NULL;
	int fd = open(path, O_RDONLY);

	if (fd >= 0 && fstat(fd, &sb) == 0 && (p = malloc((size_t)sb.st_size + 1)) &&
	    pread(fd, p, (size_t)sb.st_size, 0) != sb.st_size) {
		free(p);
		p = NULL;
	}
	*n = p ? (size_t)sb.st_size : 0;
	if (fd >= 0)
		close(fd);
	return p;
}

static int read_num(mrtx_txn *txn, const char *table, const char *row, const char *qual,
                    long *v, int *found)
{
	mrtx_bytes b;
	char buf[32];
	int rc = mrtx_get(txn, table, MRTX_CSTR(row), CHAOS_FAMILY, MRTX_CSTR(qual), &b);

	*found = 0;
	if (rc == MRTX_NOTFOUND)
		return 0;
	if (rc)
		return rc;
	if (b.size == 0 || b.size >= sizeof(buf))
		return MRTX_ECORRUPT;
	memcpy(buf, b.data, b.size);
	buf[b.size] = 0;
	*v = strtol(buf, NULL, 10);
	*found = 1;
	return 0;
}

/* The bank after recovery against the writers' schedules and the acks. */
static void check_bank(mrtx_db *db, const cs_expect *t, verdict *v)
{
	long bal[BANK_ACCOUNTS], want[BANK_ACCOUNTS], total = 0, seq[CS_MAXW], tok;
	mrtx_txn *txn;
	int rc, found;

	if ((rc = mrtx_begin(db, &txn))) {
		flag(v, CSV_READ, "begin: %s", mrtx_errmsg());
		return;
	}
	for (int i = 0; i < BANK_ACCOUNTS; i++) {
		char row[32], qual[32];
		const char *table;

		bank_account(i, &table, row, sizeof(row), qual, sizeof(qual));
		if ((rc = read_num(txn, table, row, qual, &bal[i], &found)) || !found) {
			flag(v, CSV_READ, "account %d: %s", i, rc ? mrtx_errmsg() : "missing");
			goto done;
		}
		total += bal[i];
		want[i] = BANK_INITIAL;
	}
	for (int w = 0; w < t->writers; w++) {
		char row[32];

		snprintf(row, sizeof(row), "w%d", w);
		seq[w] = tok = 0;
		if ((rc = read_num(txn, cs_writer_table, row, "seq", &seq[w], &found)) ||
		    (found && (rc = read_num(txn, cs_writer_table, row, "tok", &tok, &found)))) {
			flag(v, CSV_READ, "writer row %d: %s", w, mrtx_errmsg());
			goto done;
		}
		if (seq[w] < 0 || seq[w] > t->txns || tok != seq[w]) {
			flag(v, CSV_PARTIAL, "writer %d: seq %ld, tok %ld (a torn or foreign row)",
			     w, seq[w], tok);
			goto done;
		}
		for (uint32_t k = 1; k <= (uint32_t)seq[w]; k++) {
			int from, to, amt;

			if (cs_one_row(k))
				continue;
			cs_transfer(t->seed, w, k, &from, &to, &amt);
			want[from] -= amt;
			want[to] += amt;
		}
		if ((uint32_t)seq[w] < t->need[w])
			flag(v, CSV_LOST_COMMIT, "writer %d: commit %" PRIu32 " was acknowledged "
			     "before the crash, the store has only its first %ld", w, t->need[w], seq[w]);
	}
	if (total != BANK_TOTAL)
		flag(v, CSV_TOTAL, "bank total %ld, expected %d", total, BANK_TOTAL);
	for (int i = 0; i < BANK_ACCOUNTS; i++)
		if (bal[i] != want[i]) {
			flag(v, CSV_PARTIAL, "account %d holds %ld, the writers' committed "
			     "transactions give %ld", i, bal[i], want[i]);
			break;
		}
done:
	mrtx_abort(txn);
}

/* In the child: open, recover, check, verify. */
static void check_state(const char *dir, const cs_expect *t, verdict *v)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	char path[PATH_MAX];
	uint8_t *before, *after;
	size_t nb, na;
	mrtx_db *db;
	recover_opts ro = { 0, 1, 0 };
	recover_stats rs;
	check_stats cs;
	int rc;

	o.durability = MRTX_NOSYNC; /* the image is disposable */
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	before = read_all(path, &nb);
	if ((rc = mrtx_open(&db, dir, &o))) {
		flag(v, CSV_OPEN, "open: %s", mrtx_errmsg());
		free(before);
		return;
	}
	/* the open itself must not write: compare before the first write */
	after = read_all(path, &na);
	if (!before || !after || na != nb || memcmp(before, after, nb) != 0)
		flag(v, CSV_OPEN_MODIFIED, "opening the store changed data.mdb");
	free(before);
	free(after);
	memset(&rs, 0, sizeof(rs));
	if ((rc = admin_recover(db, &ro, &rs, NULL, NULL)) || rs.errors)
		flag(v, CSV_RECOVER, "recover: %s", rc ? mrtx_errmsg() : "some locks unresolved");
	if ((rc = admin_check(db, &cs, NULL, NULL, NULL)))
		flag(v, CSV_CHECK, "check: %s", mrtx_errmsg());
	else if (cs.corrupt || cs.resolvable)
		flag(v, CSV_CHECK, "check --strict: %lu corrupt, %lu resolvable", cs.corrupt,
		     cs.resolvable);
	check_bank(db, t, v);
	mrtx_close(db);
}

void cs_check_image(const char *dir, const cs_expect *t, verdict *v)
{
	int fds[2], st;
	pid_t pid;
	ssize_t got = 0, r;

	memset(v, 0, sizeof(*v));
	if (pipe(fds) != 0) {
		flag(v, CSV_CRASH, "pipe: %s", strerror(errno));
		return;
	}
	fflush(NULL);
	if ((pid = fork()) == 0) {
		verdict cv;

		close(fds[0]);
		memset(&cv, 0, sizeof(cv));
		alarm(CS_CHECK_SECONDS);
		check_state(dir, t, &cv);
		if (write(fds[1], &cv, sizeof(cv)) != (ssize_t)sizeof(cv))
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	while (pid > 0 && got < (ssize_t)sizeof(*v) &&
	       (r = read(fds[0], (char *)v + got, sizeof(*v) - (size_t)got)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		got += r;
	}
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || got != (ssize_t)sizeof(*v)) {
		memset(v, 0, sizeof(*v));
		if (pid > 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
			flag(v, CSV_HANG, "the checker did not finish in %d s", CS_CHECK_SECONDS);
		else if (pid > 0 && WIFSIGNALED(st))
			flag(v, CSV_CRASH, "the checker died of signal %d (%s)", WTERMSIG(st),
			     strsignal(WTERMSIG(st)));
		else
			flag(v, CSV_CRASH, "the checker failed");
	}
}
