/*
 * test_shell.c - `mrtx shell` driven through a pseudo-terminal, as a person
 * types at it: the prompt, autocommit, begin/commit/rollback, a typo that
 * keeps the transaction, a conflict that dooms it, line editing (Ctrl-A,
 * the arrow keys, backspace), Ctrl-C, history recalled within a session
 * and from the history file in the next one, and end of input rolling an
 * open transaction back.  Piped (non-terminal) use is tests/cli/cli_shell.sh.
 *
 * The binary is $MRTX_TOOL (set by tests/CMakeLists.txt).  Every wait for
 * output gives up after TIMEOUT_S seconds and fails with what was seen, so
 * the test cannot hang; the shell is killed in the teardown.  What the
 * shell committed is checked through the library, not its output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define TIMEOUT_S 10

#define KEY_UP "\033[A"
#define KEY_LEFT "\033[D"
#define CTRL_A "\001"
#define CTRL_D "\004"
#define BACKSPACE "\177"

typedef struct sess {
	pid_t pid;
	int fd;         /* the pty master */
	char out[1 << 16];
	size_t len;     /* bytes in out */
	size_t seen;    /* out[0..seen) is consumed by earlier expects */
} sess;

static sess S = { -1, -1, { 0 }, 0, 0 };
static char *dir;    /* this test's directory: store, HOME, history */
static char store_path[512], hist_path[512];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The output seen so far after `from`, printable, for failure messages. */
static const char *shown(size_t from)
{
	static char buf[4096];
	size_t o = 0;

	for (size_t i = from; i < S.len && o + 5 < sizeof(buf); i++) {
		unsigned char c = (unsigned char)S.out[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "\\x%02x", c);
	}
	buf[o] = '\0';
	return buf;
}

/* Read what is available, waiting up to ms; 0 at end of output (EIO). */
static int pump(int ms)
{
	struct pollfd p = { S.fd, POLLIN, 0 };
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return 1;
	if (S.len == sizeof(S.out))
		fail_msg("the shell printed more than %zu bytes", sizeof(S.out));
	n = read(S.fd, S.out + S.len, sizeof(S.out) - S.len);
	if (n <= 0)
		return n < 0 && errno == EINTR;
	S.len += (size_t)n;
	return 1;
}

/* Wait for want to appear after what earlier expects consumed; consume it. */
static void expect(const char *want)
{
	double end = now() + TIMEOUT_S;
	size_t wl = strlen(want);

	for (;;) {
		for (size_t i = S.seen; i + wl <= S.len; i++)
			if (memcmp(S.out + i, want, wl) == 0) {
				S.seen = i + wl;
				return;
			}
		if (now() > end || !pump(100))
			break;
	}
	fail_msg("no '%s' in the shell's output after %d s; it printed: %s", want,
	         TIMEOUT_S, shown(S.seen));
}

/* Wait for want; then nothing between the old position and it may hold
   avoid (e.g. an error message before the next prompt). */
static void expect_without(const char *want, const char *avoid)
{
	size_t from = S.seen;
	char *hit;

	expect(want);
	hit = memmem(S.out + from, S.seen - from, avoid, strlen(avoid));
	if (hit)
		fail_msg("'%s' before '%s': %s", avoid, want, shown(from));
}

static void send_keys(const char *keys)
{
	size_t n = strlen(keys), off = 0;

	while (off < n) {
		ssize_t w = write(S.fd, keys + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		assert_true(w > 0);
		off += (size_t)w;
	}
}

/* Type a line and press Enter. */
static void line(const char *text)
{
	send_keys(text);
	send_keys("\r");
}

/* Start `mrtx shell STORE` on a new pty; history in histfile (NULL: none). */
static void start(const char *histfile)
{
	const char *tool = getenv("MRTX_TOOL");
	struct winsize ws = { 24, 100, 0, 0 };
	char *slave;
	int m;

	if (!tool)
		fail_msg("MRTX_TOOL is not set (run through ctest)");
	assert_true((m = posix_openpt(O_RDWR | O_NOCTTY)) >= 0);
	assert_int_equal(grantpt(m), 0);
	assert_int_equal(unlockpt(m), 0);
	assert_non_null(slave = ptsname(m));
	S.len = S.seen = 0;
	S.fd = m;
	S.pid = fork();
	assert_true(S.pid >= 0);
	if (S.pid == 0) {
		int s;

		setsid();
		if ((s = open(slave, O_RDWR)) < 0) /* becomes the controlling tty */
			_exit(126);
		ioctl(s, TIOCSWINSZ, &ws);
		dup2(s, 0);
		dup2(s, 1);
		dup2(s, 2);
		if (s > 2)
			close(s);
		close(m);
		setenv("TERM", "xterm", 1);
		setenv("HOME", dir, 1); /* no ~/.editrc of the user */
		unsetenv("EDITRC");
		unsetenv("MRTX_FAILPOINTS");
		setenv("MRTX_HISTORY", histfile ? histfile : "", 1);
		execl(tool, "mrtx", "shell", store_path, (char *)NULL);
		_exit(127);
	}
}

/* Wait for the shell to end (reading its output); its exit status. */
static int finish(void)
{
	double end = now() + TIMEOUT_S;
	int status;
	pid_t r;

	while (pump(100) && now() < end)
		;
	while ((r = waitpid(S.pid, &status, WNOHANG)) == 0 && now() < end)
		usleep(10000);
	if (r != S.pid)
		fail_msg("the shell did not exit within %d s: %s", TIMEOUT_S, shown(S.seen));
	S.pid = -1;
	close(S.fd);
	S.fd = -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The cell t/row f:q as a string, "" when absent. */
static const char *cell(const char *row)
{
	static char buf[256];
	mrtx_db *db = tu_open(store_path, NULL);
	int rc;

	assert_non_null(db);
	rc = tu_get_str(db, "t", row, "f:q", buf, sizeof(buf));
	mrtx_close(db);
	if (rc == MRTX_NOTFOUND)
		return "";
	assert_int_equal(rc, 0);
	return buf;
}

static void put_cell(const char *row, const char *value)
{
	mrtx_db *db = tu_open(store_path, NULL);

	assert_non_null(db);
	assert_int_equal(tu_put_str(db, "t", row, "f:q", value), 0);
	mrtx_close(db);
}

static int setup(void **state)
{
	mrtx_db *db;

	(void)state;
	dir = tu_fsdir("shell");
	snprintf(store_path, sizeof(store_path), "%s/store", dir);
	snprintf(hist_path, sizeof(hist_path), "%s/history", dir);
	if (!(db = tu_open(store_path, NULL)) || tu_table(db, "t", "f", NULL) != 0)
		return -1;
	mrtx_close(db);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (S.pid > 0) {
		kill(S.pid, SIGKILL);
		waitpid(S.pid, NULL, 0);
		S.pid = -1;
	}
	if (S.fd >= 0)
		close(S.fd);
	S.fd = -1;
	tu_rmrf(dir);
	free(dir);
	return 0;
}

/* Outside begin each command commits at once; quit ends with status 0. */
static void test_autocommit(void **state)
{
	(void)state;
	start(NULL);
	expect("mrtx> ");
	line("put t r1 f:q hello");
	expect_without("mrtx> ", "error");
	assert_string_equal(cell("r1"), "hello"); /* committed while the shell runs */
	line("get t r1 f:q");
	expect("\r\nhello\r\n");
	expect("mrtx> ");
	line("get t nope f:q");
	expect("\r\n(not found)\r\n");
	line("help");
	expect("rollback, abort");
	expect("'single quotes'");
	expect("mrtx> ");
	line("quit");
	assert_int_equal(finish(), 0);
}

/* begin..commit: own writes visible, nothing visible outside before commit,
   and a typo, an unknown table and a bad quote keep the transaction. */
static void test_txn_survives_typos(void **state)
{
	(void)state;
	start(NULL);
	expect("mrtx> ");
	line("begin");
	expect("mrtx*> ");
	line("put t r2 f:q v2");
	expect("mrtx*> ");
	line("get t r2 f:q");
	expect("\r\nv2\r\n");
	expect("mrtx*> ");
	assert_string_equal(cell("r2"), ""); /* buffered, not written */
	line("gte t r2 f:q");
	expect("error: unknown command 'gte'");
	expect("mrtx*> ");
	line("put nosuch r f:q v");
	expect("no table 'nosuch'");
	expect("the transaction is still open");
	expect("mrtx*> ");
	line("put t r3 f:q 'unterminated");
	expect("unterminated single quote");
	expect("mrtx*> ");
	line("begin");
	expect("already open");
	expect("mrtx*> ");
	line("put t r3 f:\"q\" 'it'\\''s'");
	expect("mrtx*> ");
	line("commit");
	expect("committed");
	expect("mrtx> ");
	assert_string_equal(cell("r2"), "v2");
	assert_string_equal(cell("r3"), "it's");
	line("commit");
	expect("no transaction is open");
	expect("mrtx> ");
	line("exit");
	assert_int_equal(finish(), 1); /* errors were reported */
}

/* A check that does not hold inside begin..commit dooms the transaction
   (prompt mrtx!>); incr, a whole-row get and a scan option work there. */
static void test_failed_check(void **state)
{
	(void)state;
	start(NULL);
	expect("mrtx> ");
	line("incr t c f:q 5");
	expect("\r\n5\r\n");
	expect("mrtx> ");
	line("begin");
	expect("mrtx*> ");
	line("incr t c f:q -2");
	expect("\r\n3\r\n");
	expect("mrtx*> ");
	line("get t c");
	expect("\r\nf:q 3\r\n");
	expect("mrtx*> ");
	line("scan t --reverse --limit 1");
	expect("\r\nc f:q 3\r\n");
	expect("mrtx*> ");
	line("check t c f:q >= 4");
	expect("check failed: t/c f:q is 3, not >= 4");
	expect("type rollback");
	expect("mrtx!> ");
	line("commit");
	expect("rolled back, nothing written");
	expect("mrtx> ");
	line("quit");
	assert_int_equal(finish(), 1);
	assert_string_equal(cell("c"), "5");
}

/* rollback and abort write nothing. */
static void test_rollback(void **state)
{
	(void)state;
	start(NULL);
	expect("mrtx> ");
	line("begin");
	expect("mrtx*> ");
	line("put t r4 f:q gone");
	expect("mrtx*> ");
	line("rollback");
	expect("rolled back");
	expect("mrtx> ");
	line("begin");
	expect("mrtx*> ");
	line("delrow t r4");
	expect("mrtx*> ");
	line("put t r4b f:q gone");
	expect("mrtx*> ");
	line("abort");
	expect("rolled back");
	expect_without("mrtx> ", "error");
	line("get t r4 f:q");
	expect("\r\n(not found)\r\n");
	line("quit");
	assert_int_equal(finish(), 0);
	assert_string_equal(cell("r4"), "");
	assert_string_equal(cell("r4b"), "");
}

/* A row that changed under an open transaction: its reads keep showing
   the transaction's snapshot (LMDB, DESIGN §9), and its commit fails
   validation; a conflict at commit is reported and not retried.  (Without
   views a second read would doom it at once: prompt mrtx!>.) */
static void test_conflict(void **state)
{
	(void)state;
	start(NULL);
	expect("mrtx> ");
	line("begin");
	expect("mrtx*> ");
	line("get t r9 f:q");
	expect("(not found)");
	expect("mrtx*> ");
	put_cell("r9", "theirs");
	line("get t r9 f:q");
	expect("(not found)");
	expect("mrtx*> ");
	line("put t r10 f:q mine");
	expect("mrtx*> ");
	line("commit");
	expect("rolled back, nothing was written: redo it");
	expect("mrtx> ");
	assert_string_equal(cell("r10"), "");
	/* a conflict found by commit */
	line("begin");
	expect("mrtx*> ");
	line("get t r11 f:q");
	expect("mrtx*> ");
	put_cell("r11", "theirs");
	line("put t r11 f:q mine");
	expect("mrtx*> ");
	line("commit");
	expect("commit: ");
	expect("rolled back, nothing was written: redo it");
	expect("mrtx> ");
	line("quit");
	assert_int_equal(finish(), 1);
	assert_string_equal(cell("r11"), "theirs");
}

/* Editing keys change the line before it runs. */
static void test_line_editing(void **state)
{
	(void)state;
	put_cell("r1", "hello");
	start(NULL);
	expect("mrtx> ");
	/* Ctrl-A moves to the start: "et ..." becomes "get ..." */
	line("et t r1 f:q" CTRL_A "g");
	expect("\r\nhello\r\n");
	expect("mrtx> ");
	/* two steps left, then insert: "vaue" becomes "value" */
	line("put t r5 f:q vaue" KEY_LEFT KEY_LEFT "l");
	expect_without("mrtx> ", "error");
	assert_string_equal(cell("r5"), "value");
	/* backspace: "f:qq" becomes "f:q" */
	line("get t r5 f:qq" BACKSPACE);
	expect("\r\nvalue\r\n");
	expect("mrtx> ");
	/* Ctrl-C discards the line typed so far */
	send_keys("put t r8 f:q x");
	expect("r8 f:q x");
	send_keys("\003");
	expect("^C");
	expect("mrtx> ");
	line("get t r1 f:q");
	expect("\r\nhello\r\n");
	line("quit");
	assert_int_equal(finish(), 0);
	assert_string_equal(cell("r8"), "");
}

/* The up arrow recalls earlier lines, of this session and, through the
   history file, of the last one. */
static void test_history(void **state)
{
	struct stat st;

	(void)state;
	start(hist_path);
	expect("mrtx> ");
	line("put t r6 f:q first");
	expect("mrtx> ");
	line("put t r6 f:q second");
	expect("mrtx> ");
	line(KEY_UP KEY_UP); /* the first put again */
	expect_without("mrtx> ", "error");
	assert_string_equal(cell("r6"), "first");
	send_keys(CTRL_D); /* end of input: not a history line */
	assert_int_equal(finish(), 0);
	assert_int_equal(stat(hist_path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	put_cell("r6", "other");
	start(hist_path);
	expect("mrtx> ");
	line(KEY_UP); /* the last line of the previous session */
	expect_without("mrtx> ", "error");
	line("quit");
	assert_int_equal(finish(), 0);
	assert_string_equal(cell("r6"), "first");
}

/* A history file that cannot be written costs one warning, not the shell. */
static void test_history_unwritable(void **state)
{
	char bad[600];

	(void)state;
	snprintf(bad, sizeof(bad), "%s/no-such-dir/history", dir);
	start(bad);
	expect("mrtx> ");
	line("put t r12 f:q kept");
	expect("cannot write the history file");
	expect("mrtx> ");
	line("put t r13 f:q kept");
	expect_without("mrtx> ", "cannot write");
	line("quit");
	assert_int_equal(finish(), 0);
	assert_string_equal(cell("r12"), "kept");
	assert_string_equal(cell("r13"), "kept");
}

/* End of input (Ctrl-D) inside a transaction rolls it back and says so. */
static void test_eof_rolls_back(void **state)
{
	(void)state;
	start(NULL);
	expect("mrtx> ");
	line("begin");
	expect("mrtx*> ");
	line("put t r7 f:q lost");
	expect("mrtx*> ");
	send_keys(CTRL_D);
	expect("the open transaction was rolled back");
	assert_int_equal(finish(), 1);
	assert_string_equal(cell("r7"), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_autocommit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_txn_survives_typos, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rollback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conflict, setup, teardown),
		cmocka_unit_test_setup_teardown(test_line_editing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_unwritable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eof_rolls_back, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
