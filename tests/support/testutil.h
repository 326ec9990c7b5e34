/* testutil.h - helpers shared by the cmocka tests. */
#ifndef MRTX_TESTUTIL_H
#define MRTX_TESTUTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "mrtx.h"
#include "txn/txn_test.h"

/* Every lock record of table t (a store_table of db's store) decodes and
 * is STABLE -- `mrtx check` in miniature; fails the test otherwise.
 * Returns how many rows hold a lock. */
struct store_table;
size_t tu_expect_settled(mrtx_db *db, const struct store_table *t);

/* A fresh empty directory under $TMPDIR, whatever the backend. */
char *tu_fsdir(const char *tag);
/* 1 when the tests run against RADOS (MRTX_TEST_STORE=rados). */
int tu_rados(void);
/* Scan the whole of table in txn to its end: MRTX_OK when it got there,
 * else the error that stopped it (of mrtx_scan_open or mrtx_scan_next). */
int tu_scan_all(mrtx_txn *txn, const char *table);
/* The locks not STABLE in db's store (a dry-run `mrtx recover` sweep counts
 * them; the sweep itself must succeed). */
unsigned long tu_open_locks(mrtx_db *db);
/* A fresh empty directory under $TMPDIR (with MRTX_TEST_STORE=rados: the
 * address of a new RADOS store); caller frees; removed by tu_rmrf. */
char *tu_tmpdir(const char *tag);
void tu_rmrf(const char *path);
/* The value at k in the closed LMDB store at path, as stored (a seal
 * included), copied into buf (cap bytes, which it must fit): its size. */
size_t tu_lmdb_get(const char *path, const void *k, size_t kn, void *buf, size_t cap);
/* The LMDB store at path (closed everywhere) as format 5 wrote it: every
 * record's seal stripped (storage/lmdb/lmdb_seal.h), format 5. */
void tu_lmdb_unseal(const char *path);
/* ... as format 6 wrote it: the metadata records' seals stripped. */
void tu_lmdb_format6(const char *path);
/* ... as format 7 wrote it: the format record sealed, without the tally
 * of the metadata records (storage/lmdb/lmdb_mcount.c). */
void tu_lmdb_format7(const char *path);
/* Put k -> v (v NULL: delete k) into the closed LMDB store at path behind
 * mrtx's back: as mrtx writes it (sealed, storage/lmdb/lmdb_seal.h, and a
 * metadata record's tallied, lmdb_mcount.c), or bare (an earlier format's
 * record, or bytes copied as they are: damage to a format-8 store's
 * tally). */
void tu_lmdb_put(const char *path, const void *k, size_t kn, const void *v, size_t vn,
                 int sealed);
/* Open a fresh store with the given options (NULL = defaults + nosync). */
mrtx_db *tu_open_fresh(const char *tag, char **path_out, const mrtx_options *opts);
/* mrtx_options as versions 1 to 3 laid it out (each version ends at the
 * field its comment names), for the tests of older callers. */
typedef struct tu_options_v3 {
	int version, durability;
	size_t map_size;
	unsigned file_mode;
	uint32_t lock_ttl_ms, lock_wait_ms;
	int unbatched;  /* version 1 */
	int read_only;  /* version 2 */
	int two_phase;  /* version 3 */
} tu_options_v3;
#define TU_OPTIONS_V3(v) ((const mrtx_options *)(const void *)(v))
/* The same with the test knobs (txn_test.h; NULL: none). */
mrtx_db *tu_open_fresh_k(const char *tag, char **path_out, const mrtx_options *opts,
                         const mrtx__knobs *k);
/* Get a cell in a fresh transaction; returns rc, copies value to buf (NUL-terminated). */
int tu_get_str(mrtx_db *db, const char *table, const char *row, const char *fq,
               char *buf, size_t bufsz);
/* Put "family:qualifier" = value in its own committed transaction. */
int tu_put_str(mrtx_db *db, const char *table, const char *row, const char *fq,
               const char *value);


/* ---- additions for the core protocol tests ---- */
#include <sys/types.h>

/* Open an existing (or new) store at path; opts NULL = defaults + nosync;
 * both opens create where opts->create is MRTX_CREATE_DEFAULT (a fresh
 * RADOS address too).
 * Returns NULL (and prints the error) on failure. */
mrtx_db *tu_open(const char *path, const mrtx_options *opts);
mrtx_db *tu_open_k(const char *path, const mrtx_options *opts, const mrtx__knobs *k);
/* Create a table from a NULL-terminated list of family names; returns rc. */
int tu_table(mrtx_db *db, const char *table, ...);
/* waitpid(pid): the exit status, 128+signal when killed, -1 on error. */
int tu_wait(pid_t pid);
/* A waitpid status as tu_wait returns it: the exit code, 128 + signal. */
int tu_status(int st);
/* Put / get with explicit byte strings in one fresh transaction. */
int tu_put(mrtx_db *db, const char *table, mrtx_bytes row, const char *family,
           mrtx_bytes qual, mrtx_bytes value);
/* 1 if the cell equals want (want.data NULL: must be absent), else 0;
 * *rc_out (may be NULL) receives mrtx_get's rc. */
int tu_cell_is(mrtx_db *db, const char *table, mrtx_bytes row, const char *family,
               mrtx_bytes qual, mrtx_bytes want, int *rc_out);

/* Arm failpoint fp to stop its hit number `at` (0: the first) until the
 * file go exists: go (size n) receives a fresh path under $TMPDIR or /tmp
 * named after tag; create it to release the stopped caller. */
void tu_fp_hold(const char *fp, unsigned at, const char *tag, char *go, size_t n);
/* Wait until failpoint fp has been hit `hits` times (by another thread or
 * a child): a coordination wait, not a timing one -- it gives up (failing
 * the test) only after ten minutes. */
void tu_fp_wait(const char *fp, int hits);
/* Let the thread th held by tu_fp_hold go (create go), join it, disarm
 * every failpoint and remove go. */
void tu_fp_release(const char *go, pthread_t th);

/* The wall clock's test hooks off (mrtx__clock_frozen_us and
 * mrtx__clock_step_us, storage/common.h): for the teardown of a test that
 * froze or stepped the clock, so that one failing on the way leaves the
 * next test the real clock. */
void tu_clock_reset(void);

/* A reproducible generator (xorshift64*, same on every libc).  Seeded from
 * MRTX_SEED when set, else from dflt; tu_seed_used says which, for messages. */
extern unsigned long tu_seed_used;
void tu_rng_seed(unsigned long dflt);
uint64_t tu_rng64(void);
uint32_t tu_rng(void);

/* assert with the seed in the failure message */
#define TU_CHECK(cond, ...)                                                   \
	do {                                                                  \
		if (!(cond)) {                                                \
			print_error("seed %lu (MRTX_SEED): ", tu_seed_used);  \
			fail_msg(__VA_ARGS__);                                \
		}                                                             \
	} while (0)

#endif
