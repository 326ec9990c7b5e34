/*
 * test_deep.c - the deep check of an LMDB store's file (check_file,
 * storage/lmdb/lmdb_deep*.c): a sound store passes; each kind of damage
 * made by hand is named; and on copies of a store with one random byte
 * flipped, or cut short at a random length, the check always ends -- no
 * hang, no signal -- and flags the damage that reaches the pages in use.
 *
 * Each copy is checked in a child process, so a crash or a hang is
 * counted rather than taking the test down; the parent gives a child 20 s
 * (a hang, not slowness, is what that catches).  The flips are seeded, 1
 * unless MRTX_SEED names another, so that every run of the suite tries the
 * same copies; MRTX_DEEP_FLIPS sets how many copies (400).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "recovery/check.h"
#include "storage/lmdb/lmdb_deep.h"
#include "storage/lmdb/lmdb_seal.h"
#include "testutil.h"

#define PSZ_MAX 65536u
#define CHILD_SECONDS 20
#define ROWS 2000

/* The sound store, its file's bytes, and the pages in use (an oracle of
 * its own, which trusts the sound file). */
static char *sound_dir, *work_dir;
static uint8_t *sound;
static size_t sound_len;
static uint8_t *live; /* per page: reachable from the newest meta page */
static uint32_t psize;
static uint64_t last_pg, main_root, free_root, newest_meta;

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static void oracle_walk(uint64_t pg, int depth)
{
	const uint8_t *p = sound + pg * psize;
	unsigned n = (rd16(p + 12) - 16) / 2;

	assert_true(depth < 32 && pg <= last_pg && !live[pg]);
	live[pg] = 1;
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *nd = p + rd16(p + 16 + 2 * i);

		if (rd16(p + 10) & 1) {
			oracle_walk(rd16(nd) | (uint64_t)rd16(nd + 2) << 16 |
			            (uint64_t)rd16(nd + 4) << 32, depth + 1);
		} else if (rd16(nd + 4) & 1) { /* F_BIGDATA: an overflow run */
			uint64_t ov = rd64(nd + 8 + rd16(nd + 6));
			uint32_t pages;

			memcpy(&pages, sound + ov * psize + 12, 4);
			for (uint32_t q = 0; q < pages; q++)
				live[ov + q] = 1;
		}
	}
}

static void oracle(void)
{
	const uint8_t *m0 = sound + 16, *m1;

	memcpy(&psize, m0 + 24, 4);
	m1 = sound + psize + 16;
	newest_meta = rd64(m1 + 128) > rd64(m0 + 128);
	m0 = newest_meta ? m1 : m0;
	last_pg = rd64(m0 + 120);
	main_root = rd64(m0 + 24 + 48 + 40);
	free_root = rd64(m0 + 24 + 40);
	assert_non_null(live = calloc(last_pg + 1, 1));
	live[newest_meta] = 1;
	oracle_walk(main_root, 0);
	if (free_root != UINT64_MAX)
		oracle_walk(free_root, 0);
}

static int make_store(void **state)
{
	char file[4096];
	mrtx_db *db;
	mrtx_txn *txn;
	int fd;
	struct stat sb;

	(void)state;
	assert_non_null(sound_dir = tu_fsdir("deep"));
	assert_non_null(work_dir = tu_fsdir("deepw"));
	assert_non_null(db = tu_open(sound_dir, NULL));
	assert_int_equal(tu_table(db, "t", "f", NULL), MRTX_OK);
	assert_int_equal(tu_table(db, "u", "f", "g", NULL), MRTX_OK);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	for (int i = 1; i <= ROWS; i++) {
		char row[16], val[16];

		snprintf(row, sizeof(row), "row%04d", i);
		snprintf(val, sizeof(val), "value-%04d", i);
		assert_int_equal(mrtx_put(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q"),
		                          MRTX_CSTR(val)), MRTX_OK);
	}
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	/* a few values over a page: overflow runs */
	for (int i = 0; i < 4; i++) {
		static uint8_t big[10000];
		char row[16];

		memset(big, 'a' + i, sizeof(big));
		snprintf(row, sizeof(row), "big%d", i);
		assert_int_equal(tu_put(db, "u", MRTX_CSTR(row), "g", MRTX_CSTR("v"),
		                        MRTX_BYTES(big, sizeof(big) - 1000u * (unsigned)i)),
		                 MRTX_OK);
	}
	mrtx_close(db);
	snprintf(file, sizeof(file), "%s/data.mdb", sound_dir);
	assert_true((fd = open(file, O_RDONLY)) >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	sound_len = (size_t)sb.st_size;
	assert_non_null(sound = malloc(sound_len));
	assert_int_equal(read(fd, sound, sound_len), (ssize_t)sound_len);
	close(fd);
	oracle();
	return 0;
}

static int drop_store(void **state)
{
	(void)state;
	tu_rmrf(sound_dir);
	tu_rmrf(work_dir);
	free(sound_dir);
	free(work_dir);
	free(sound);
	free(live);
	return 0;
}

/* work_dir/data.mdb = buf[0..n) */
static void put_copy(const uint8_t *buf, size_t n)
{
	char file[4096];
	int fd;

	snprintf(file, sizeof(file), "%s/data.mdb", work_dir);
	assert_true((fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0);
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
	close(fd);
}

/* ---------------------------------------------------------------- findings */

typedef struct found {
	unsigned long n;
	char text[8][256];
	uint64_t page[8];
} found;

static int collect(const store_damage *d, void *payload)
{
	found *f = payload;

	if (f->n < 8) {
		snprintf(f->text[f->n], sizeof(f->text[0]), "%s", d->what);
		f->page[f->n] = d->page;
	}
	f->n++;
	return 0;
}

/* Check work_dir: rc 0 expected; *f filled. */
static void check_work(found *f, store_file_stats *s)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(check_file(work_dir, collect, NULL, f, s), MRTX_OK);
}

static int has(const found *f, const char *words)
{
	for (unsigned long i = 0; i < f->n && i < 8; i++)
		if (strstr(f->text[i], words))
			return 1;
	return 0;
}

static void expect_damage(const uint8_t *buf, const char *words)
{
	store_file_stats s;
	found f;

	put_copy(buf, sound_len);
	check_work(&f, &s);
	if (!f.n || !has(&f, words))
		fail_msg("want damage '%s', got %lu: '%s'", words, f.n, f.n ? f.text[0] : "");
	assert_int_equal(s.damage, f.n);
}

static void t_sound(void **state)
{
	store_file_stats s;
	found f;

	(void)state;
	put_copy(sound, sound_len);
	check_work(&f, &s);
	if (f.n)
		fail_msg("a sound store: %s", f.text[0]);
	assert_int_equal(s.damage, 0);
	assert_int_equal(s.meta, (int)newest_meta);
	assert_true(s.newest && s.opens);
	assert_int_equal(s.tables, 2);
	assert_int_equal(s.locks, ROWS + 4);
	assert_int_equal(s.cells, ROWS + 4);
	assert_int_equal(s.pages, last_pg + 1);
	assert_int_equal(s.walked + s.free_pages + s.leaked + 2, s.pages);
	assert_true(s.walked > 50 && s.depth >= 2);
	/* and straight from the store made by the library */
	memset(&f, 0, sizeof(f));
	assert_int_equal(check_file(sound_dir, collect, NULL, &f, &s), MRTX_OK);
	assert_int_equal(f.n, 0);
}

/* A leaf of the main tree holding rows of table t (prefix 0x0100). */
static uint64_t t_leaf(void)
{
	for (uint64_t pg = 2; pg <= last_pg; pg++) {
		const uint8_t *p = sound + pg * psize;

		if (live[pg] && pg != main_root && pg != free_root && rd16(p + 10) == 2 &&
		    p[rd16(p + 16) + 8] == 1 && p[rd16(p + 16) + 9] == 0)
			return pg;
	}
	fail_msg("no leaf of table t");
	return 0;
}

/* Seal the value of the leaf node at node anew (as a writer that wrote
 * bad bytes would have): its last LMDB_SEAL bytes. */
static void reseal(uint8_t *node)
{
	size_t ks = rd16(node + 6), ds = rd16(node);
	MDB_val k = { ks, node + 8 };
	uint32_t c;

	assert_true(ds >= LMDB_SEAL);
	c = lmdb_seal_of(&k, node + 8 + ks, ds - LMDB_SEAL);
	for (unsigned i = 0; i < LMDB_SEAL; i++)
		node[8 + ks + ds - LMDB_SEAL + i] = (uint8_t)(c >> (8 * i));
}

static void t_kinds(void **state)
{
	uint8_t *b = malloc(sound_len);
	uint64_t leaf = t_leaf(), pg;
	const uint8_t *root = sound + main_root * psize;
	unsigned o;

	(void)state;
	assert_non_null(b);
	/* a branch child pointing back at the root: a cycle */
	memcpy(b, sound, sound_len);
	o = rd16(root + 16 + 2);
	memcpy(b + main_root * psize + o, &(uint16_t){ (uint16_t)main_root }, 2);
	memset(b + main_root * psize + o + 2, 0, 4);
	expect_damage(b, "reached a second time");
	/* a child pointer past the last page */
	memcpy(b, sound, sound_len);
	memset(b + main_root * psize + o, 0xff, 4);
	expect_damage(b, "outside the file's pages");
	/* a leaf's page number field */
	memcpy(b, sound, sound_len);
	b[leaf * psize] ^= 0x40;
	expect_damage(b, "its header says page");
	/* a leaf's flags */
	memcpy(b, sound, sound_len);
	b[leaf * psize + 10] = 0x04;
	expect_damage(b, "where a branch or leaf page");
	/* lower above upper */
	memcpy(b, sound, sound_len);
	memcpy(b + leaf * psize + 12, &(uint16_t){ 0xfff0 }, 2);
	expect_damage(b, "do not fit a page");
	/* two keys of a leaf swapped (their node offsets) */
	memcpy(b, sound, sound_len);
	memcpy(b + leaf * psize + 16, sound + leaf * psize + 18, 2);
	memcpy(b + leaf * psize + 18, sound + leaf * psize + 16, 2);
	expect_damage(b, "out of order");
	/* a node offset past the page */
	memcpy(b, sound, sound_len);
	memcpy(b + leaf * psize + 20, &(uint16_t){ (uint16_t)(psize - 2) }, 2);
	expect_damage(b, "outside its page's node area");
	/* a key size running off the page */
	memcpy(b, sound, sound_len);
	o = rd16(sound + leaf * psize + 16);
	memcpy(b + leaf * psize + o + 6, &(uint16_t){ 0x7000 }, 2);
	expect_damage(b, "past the end of its page");
	/* a node flagged as a sub-database */
	memcpy(b, sound, sound_len);
	b[leaf * psize + o + 4] = 0x02;
	expect_damage(b, "sub-database");
	/* the meta page's entry count */
	memcpy(b, sound, sound_len);
	b[newest_meta * psize + 16 + 24 + 48 + 32] ^= 1;
	expect_damage(b, "entries");
	/* the main database's flags (as if it kept duplicates) */
	memcpy(b, sound, sound_len);
	b[newest_meta * psize + 16 + 24 + 48 + 4] = 0x04;
	expect_damage(b, "main database's flags");
	/* an overflow run's page count too small for its value */
	memcpy(b, sound, sound_len);
	for (pg = 2; pg <= last_pg && !(live[pg] && rd16(sound + pg * psize + 10) == 4); pg++)
		;
	assert_true(pg <= last_pg);
	memset(b + pg * psize + 12, 0, 4);
	b[pg * psize + 12] = 1;
	expect_damage(b, "overflow run");
	/* a cell's value without its version header: its node's data size 3 */
	memcpy(b, sound, sound_len);
	{
		const uint8_t *p = sound + leaf * psize;
		unsigned i, n = (rd16(p + 12) - 16) / 2;

		for (i = 0; i < n; i++) { /* a cell: its key does not end in 0xFF */
			o = rd16(p + 16 + 2 * i);
			if (p[o + 8 + rd16(p + o + 6) - 1] != 0xff)
				break;
		}
		assert_true(i < n);
		/* (3 bytes and their seal, so the seal holds: the header is judged) */
		memcpy(b + leaf * psize + o, &(uint16_t){ 3 + LMDB_SEAL }, 2);
		reseal(b + leaf * psize + o);
	}
	expect_damage(b, "version header");
	/* a byte of that cell's value: its seal does not match */
	memcpy(b, sound, sound_len);
	b[leaf * psize + o + 8 + rd16(sound + leaf * psize + o + 6) + 1] ^= 0x10;
	expect_damage(b, "checksum does not match");
	/* a row's lock record that does not decode: its version byte */
	memcpy(b, sound, sound_len);
	{
		const uint8_t *p = sound + leaf * psize;
		unsigned i, n = (rd16(p + 12) - 16) / 2;

		for (i = 0; i < n; i++) {
			o = rd16(p + 16 + 2 * i);
			if (p[o + 8 + rd16(p + o + 6) - 1] == 0xff)
				break;
		}
		assert_true(i < n);
		b[leaf * psize + o + 8 + rd16(p + o + 6)] ^= 0x7f;
		reseal(b + leaf * psize + o); /* (damage a writer sealed) */
	}
	expect_damage(b, "its lock record");
	free(b);
}

/* A page of the free list listed, pointing at a page in use. */
static void t_free_list(void **state)
{
	uint8_t *b = malloc(sound_len);
	const uint8_t *p;
	unsigned o;

	(void)state;
	assert_non_null(b);
	if (free_root == UINT64_MAX) {
		free(b);
		skip();
	}
	memcpy(b, sound, sound_len);
	p = sound + free_root * psize; /* a leaf: its first entry's first page */
	assert_int_equal(rd16(p + 10), 2);
	o = rd16(p + 16);
	assert_true(rd64(p + o + 8 + 8) >= 1); /* (a count, then pages) */
	memcpy(b + free_root * psize + o + 8 + 8 + 8, &main_root, 8);
	expect_damage(b, "free list");
	free(b);
}

/* ---------------------------------------------------------------- robustness */

/* Check work_dir in a child: its exit 10 (sound), 11 (damage), 12
 * (error); the parent's: that, or 128 + signal, or -2 for a hang. */
static int child_check(void)
{
	struct timespec t0, now;
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		store_file_stats s;
		found f;

		memset(&f, 0, sizeof(f));
		_exit(check_file(work_dir, collect, NULL, &f, &s) ? 12 : s.damage ? 11 : 10);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			return tu_status(st);
		assert_true(w == 0 || errno == EINTR);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > CHILD_SECONDS) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -2;
		}
		usleep(1000);
	}
}

/* Checks I20 (DESIGN §10). */
static void t_flips(void **state)
{
	const char *env = getenv("MRTX_DEEP_FLIPS");
	unsigned copies = env ? (unsigned)atoi(env) : 400, in_live = 0, live_flagged = 0,
	         other_flagged = 0, hangs = 0, signals = 0, errors = 0;
	uint8_t *b = malloc(sound_len);

	(void)state;
	assert_non_null(b);
	tu_rng_seed(1); /* (fixed: every run tries the same copies; MRTX_SEED others) */
	for (unsigned c = 0; c < copies; c++) {
		size_t at = tu_rng64() % sound_len;
		int is_live = at / psize <= last_pg && live[at / psize], rc;

		memcpy(b, sound, sound_len);
		b[at] ^= (uint8_t)(1 + tu_rng() % 255);
		put_copy(b, sound_len);
		rc = child_check();
		hangs += rc == -2;
		signals += rc > 128;
		errors += rc == 12 || (rc >= 0 && rc < 10) || (rc > 12 && rc <= 128);
		if (rc == -2 || rc > 12)
			print_error("seed %lu: copy %u (byte %zu flipped): %s %d\n", tu_seed_used, c,
			            at, rc == -2 ? "hang" : "exit/signal", rc);
		in_live += is_live;
		live_flagged += is_live && rc == 11;
		other_flagged += !is_live && rc == 11;
	}
	print_message("deep check: seed %lu (MRTX_SEED), %u copies with one byte flipped: %u "
	              "in pages in use, %u of them flagged (%u%%); %u of the %u elsewhere "
	              "flagged; %u hangs, %u deaths by signal, %u errors\n", tu_seed_used,
	              copies, in_live, live_flagged,
	              in_live ? 100 * live_flagged / in_live : 0, other_flagged,
	              copies - in_live, hangs, signals, errors);
	TU_CHECK(hangs == 0 && signals == 0 && errors == 0, "%u hangs, %u signals, %u errors",
	         hangs, signals, errors);
	/* keys, page headers and node bounds are most of a page in use; the
	 * values (no checksums) and the free space are not */
	TU_CHECK(copies < 100 || live_flagged * 4 >= in_live, "only %u of %u flips in pages in "
	         "use flagged", live_flagged, in_live);
	free(b);
}

static void t_truncations(void **state)
{
	unsigned flagged = 0, n = 0, bad = 0;
	size_t cuts[48];

	(void)state;
	tu_rng_seed(0x5eed);
	cuts[n++] = 0;
	cuts[n++] = 1;
	cuts[n++] = psize - 1;
	cuts[n++] = psize;
	cuts[n++] = 2 * (size_t)psize;
	cuts[n++] = sound_len - 1;
	while (n < sizeof(cuts) / sizeof(cuts[0]))
		cuts[n++] = tu_rng64() % sound_len;
	for (unsigned i = 0; i < n; i++) {
		int rc;

		put_copy(sound, cuts[i]);
		rc = child_check();
		flagged += rc == 11;
		if (rc != 11) {
			bad++;
			print_error("seed %lu: cut at %zu bytes: %d\n", tu_seed_used, cuts[i], rc);
		}
	}
	print_message("deep check: seed %lu, %u truncations, %u flagged\n", tu_seed_used, n,
	              flagged);
	TU_CHECK(bad == 0, "%u truncations not flagged", bad);
}

/* A fresh directory holding a copy of the sound store's file; caller frees. */
static char *sound_copy(const char *tag)
{
	char *dir = tu_fsdir(tag), file[4096];
	int fd;

	assert_non_null(dir);
	snprintf(file, sizeof(file), "%s/data.mdb", dir);
	assert_true((fd = open(file, O_WRONLY | O_CREAT, 0600)) >= 0);
	assert_int_equal(write(fd, sound, sound_len), (ssize_t)sound_len);
	close(fd);
	return dir;
}

/* A writer's commits landing between the check's reads of meta page 0
 * and meta page 1 (the hook, once): 200 commits, which move each page's
 * transaction id by 200.  The pair read across them (old page 0, new page
 * 1) is not taken for damage: page 0 is read again, and both with it. */
static unsigned torn_calls;

static void commits_between(int fd)
{
	char path[64];
	uint64_t t;
	int w;

	if (torn_calls++)
		return;
	/* (the check's descriptor is read-only: write through another) */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	assert_true((w = open(path, O_WRONLY)) >= 0);
	for (unsigned pg = 0; pg < 2; pg++) {
		off_t at = (off_t)pg * psize + 16 + 128;

		assert_int_equal(pread(fd, &t, 8, at), 8);
		t += 200;
		assert_int_equal(pwrite(w, &t, 8, at), 8);
	}
	close(w);
}

static void t_torn_metas(void **state)
{
	char *dir = sound_copy("deept");
	store_file_stats s;
	found f;

	(void)state;
	torn_calls = 0;
	lmdb_deep_between_metas = commits_between;
	memset(&f, 0, sizeof(f));
	assert_int_equal(check_file(dir, collect, NULL, &f, &s), 0);
	lmdb_deep_between_metas = NULL;
	TU_CHECK(f.n == 0, "meta pages read across commits taken for damage: %s",
	         f.n ? f.text[0] : "");
	assert_int_equal(s.damage, 0);
	assert_true(torn_calls >= 2);
	tu_rmrf(dir);
	free(dir);
}

/* Checks while another process commits as fast as it can: a walk the
 * commits overtook is made again, never reported as damage. */
static void t_busy(void **state)
{
	unsigned long walks = 0, changed = 0;
	struct timespec t0, now;
	char *dir = sound_copy("deepb");
	pid_t pid;

	(void)state;
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		mrtx_db *db = tu_open(dir, NULL);

		if (!db)
			_exit(1);
		for (unsigned i = 0;; i++) { /* until killed */
			char row[32];

			snprintf(row, sizeof(row), "busy%u", i % 500);
			if (tu_put_str(db, "t", row, "f:q", i % 3 ? "short" :
			               "a longer value, for splits and merges now and then"))
				_exit(2);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		store_file_stats s;
		found f;
		int rc;

		memset(&f, 0, sizeof(f));
		rc = check_file(dir, collect, NULL, &f, &s);
		if (rc == MRTX_ESTORE && strstr(mrtx_errmsg(), "changed during"))
			changed++;
		else if (rc || f.n) {
			/* (the writer is stopped first: it would outlive the test) */
			kill(pid, SIGKILL);
			tu_wait(pid);
			fail_msg("a check beside a writer: rc %d, %lu damage: %s", rc, f.n,
			         f.n ? f.text[0] : mrtx_errmsg());
		}
		walks++;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < 2);
	kill(pid, SIGKILL);
	assert_int_equal(tu_wait(pid), 128 + SIGKILL);
	print_message("deep check beside a writer: %lu checks, %lu overtaken three times\n",
	              walks, changed);
	{
		/* at least one walk judged, however many the writer overtook:
		 * the store it left is sound */
		store_file_stats s;
		found f;

		memset(&f, 0, sizeof(f));
		assert_int_equal(check_file(dir, collect, NULL, &f, &s), 0);
		assert_int_equal(f.n, 0);
		assert_int_equal(s.damage, 0);
	}
	tu_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_sound),
		cmocka_unit_test(t_kinds),
		cmocka_unit_test(t_free_list),
		cmocka_unit_test(t_flips),
		cmocka_unit_test(t_truncations),
		cmocka_unit_test(t_torn_metas),
		cmocka_unit_test(t_busy),
	};

	return cmocka_run_group_tests(tests, make_store, drop_store);
}
