/*
 * mrtx.h - multi-row, multi-table ACID transactions over a sorted store.
 *
 * mrtx gives serializable transactions across any number of rows and tables
 * on a store whose only atomic primitive is a single-row conditional write.
 * The protocol is Haeinsa's (a Percolator descendant); the embedded store is
 * LMDB.  See DESIGN.md for the protocol and README.md for a tour.
 *
 * Conventions (all functions):
 *  - int returns: 0 (MRTX_OK) is success, errors are the negative MRTX_*
 *    codes below.  mrtx_strerror() names a code, mrtx_errmsg() gives this
 *    thread's detail of the last failure (which table, row, step, limit).
 *  - The handle a call acts on comes first and output parameters come
 *    last, as in LMDB and SQLite (mrtx_begin(db, &txn)).  Two kinds take
 *    their output first: mrtx_open, which has no handle yet, and the key
 *    functions that fill a caller's buffer (mrtx_key_prefix_end,
 *    mrtx_key_parse, mrtx_key_format), in the order of memcpy and
 *    snprintf.  The caller owns what an out parameter returns and frees it
 *    with the matching _close/_free/_abort, each of which accepts NULL.
 *  - Inputs of type mrtx_bytes are borrowed for the duration of the call
 *    only; mrtx copies what it keeps.
 *
 * Data model: (table, row, family:qualifier) -> value.  Rows and qualifiers
 * are arbitrary byte strings (NUL allowed); rows sort by memcmp, cells in a
 * row by family (in declaration order) then qualifier (memcmp).
 *
 * Limits (enforced with MRTX_ETOOBIG / MRTX_EINVAL, never truncation):
 *  - row:        1 .. MRTX_MAX_ROW bytes, and the encoded key of a cell's
 *                older version must fit: row_size + (number of 0x00 bytes in
 *                row) + 16 + qualifier_size <= MRTX_MAX_KEY (511, LMDB's key
 *                limit).  A row without NUL bytes and a qualifier of up to
 *                239 bytes always fit when the row is at most 256 bytes.
 *  - qualifier:  0 .. MRTX_MAX_KEY - 17 bytes, subject to the rule above.
 *  - value:      0 .. MRTX_MAX_VALUE bytes.
 *  - table name: 1 .. MRTX_MAX_NAME printable ASCII bytes other than
 *                space, '/' and ':'.
 *  - family:     1 .. MRTX_MAX_NAME bytes, as a table name; at most
 *                MRTX_MAX_FAMILIES per table.
 *  - tables:     at most MRTX_MAX_TABLES per store.
 */
#ifndef MRTX_H
#define MRTX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MRTX_VERSION_STRING "0.2.0"

#define MRTX_MAX_KEY 511u
#define MRTX_MAX_ROW 495u
#define MRTX_MAX_VALUE (64u * 1024u * 1024u)
#define MRTX_MAX_NAME 64u
#define MRTX_MAX_FAMILIES 255u
#define MRTX_MAX_TABLES 500u

/** An open store.  Thread-safe: any number of threads may share one. */
typedef struct mrtx_db mrtx_db;
/** One transaction.  Used by one thread at a time. */
typedef struct mrtx_txn mrtx_txn;
/** A scan inside a transaction; lives no longer than its transaction. */
typedef struct mrtx_scanner mrtx_scanner;

/** A borrowed byte string. */
typedef struct mrtx_bytes {
	const void *data;
	size_t size;
} mrtx_bytes;

#define MRTX_BYTES(p, n) ((mrtx_bytes){ (p), (n) })
#define MRTX_CSTR(s) ((mrtx_bytes){ (s), strlen(s) })

/*
 * Error codes.  0 is success; errors are negative, in a band clear of errno
 * values and of LMDB's codes (-30800 .. -30780).
 */
enum {
	MRTX_OK = 0,
	MRTX_NOTFOUND = -31000, /* no such cell / end of scan */
	MRTX_CONFLICT,          /* a concurrent commit won; nothing was written; retry */
	MRTX_ELOCKED,           /* a live transaction holds a row; retry later */
	MRTX_EUNKNOWN,          /* store failed at the commit point: outcome unknown */
	MRTX_EINVAL,            /* bad argument (NULL handle, empty row, bad name, ...) */
	MRTX_ETOOBIG,           /* key or value over the documented limits */
	MRTX_ENOTABLE,          /* no such table */
	MRTX_ECORRUPT,          /* malformed lock record or store metadata, or a
	                           damaged data file: a record whose checksum does
	                           not match, keys out of order (DESIGN §3.5) */
	MRTX_ENOMEM,            /* allocation failed */
	MRTX_ESTORE,            /* the store (LMDB, file system) failed */
	/* additions beside the fixed codes */
	MRTX_ENOFAMILY,         /* no such family in the table */
	MRTX_ENOTSTORE,         /* not an mrtx store, or another format version */
	MRTX_EFULL,             /* the store is full: its map (reopen with a larger
	                           map_size), its file system or quota (free space,
	                           then retry), or the RADOS cluster; mrtx_errmsg
	                           says which.  Nothing was written */
	MRTX_EBADTXN,           /* the transaction already failed; only abort is allowed */
	MRTX_EEXIST,            /* table exists with different families (or a
	                           family exists: mrtx_add_family; a backup's
	                           destination is not empty) */
	MRTX_EREADONLY,         /* a write through a handle opened read-only */
	MRTX_ENOTSUP,           /* not supported by this store's backend */
	MRTX_ESNAPSHOT          /* the versions a read at a past snapshot needs were
	                           collected (mrtx_begin_at) */
};

/** Durability of each store write (mrtx_options.durability). */
enum {
	MRTX_SYNC = 0,       /* fsync data and meta page: survives an OS crash (default) */
	MRTX_NOMETASYNC = 1, /* fsync data, not the meta page: an OS crash may lose the last commit */
	MRTX_NOSYNC = 2      /* no fsync: a killed process loses nothing; an OS crash may
	                        lose recent commits or leave the store unreadable (LMDB's
	                        MDB_NOSYNC: pages the last synced snapshot needs can be
	                        reused before they reach the disk) */
};

#define MRTX_OPTIONS_VERSION 5

/** mrtx_options.create: what mrtx_open does where no store exists. */
enum {
	MRTX_CREATE_DEFAULT = 0,    /* a local path (LMDB): create the store; a
	                               RADOS address: MRTX_ENOTSTORE (a mistyped
	                               address must not become an empty store) */
	MRTX_CREATE_NEVER = 1,      /* MRTX_ENOTSTORE on every backend */
	MRTX_CREATE_IF_MISSING = 2  /* create it on every backend */
};

/**
 * Options for mrtx_open.  Initialise with MRTX_OPTIONS_INIT, then change
 * fields; a zero field means "the default" where noted.
 *
 * Versions: 2 added read_only, 3 two_phase.  Version 4 drops the test
 * settings unbatched and two_phase (they move to the test interface; the
 * environment variable MRTX_TWO_PHASE remains, see mrtx_open); version 5
 * adds create.  An older struct (compiled against an older mrtx.h:
 * version 1 ends at unbatched, version 2 at read_only, version 3 at
 * two_phase, version 4 at read_only without the test settings) is still
 * accepted and read in its own layout, its unbatched and two_phase
 * honoured; the fields it lacks are taken as 0, except create, taken as
 * MRTX_CREATE_IF_MISSING: those releases created a store at any address.
 */
typedef struct mrtx_options {
	int version;           /* MRTX_OPTIONS_VERSION (1 to 5) */
	int durability;        /* MRTX_SYNC (default), MRTX_NOMETASYNC, MRTX_NOSYNC */
	size_t map_size;       /* bytes the store may grow to; 0 = 1 GiB, at most
	                          2^47 (MRTX_EINVAL past it).  A larger
	                          value than the file's grows it; never shrinks
	                          (LMDB keeps a new store's at 1 MiB at least).
	                          Ignored by a read-only open and by RADOS */
	unsigned file_mode;    /* mode of created files; 0 = 0600 */
	uint32_t lock_ttl_ms;  /* lock expiry for this process's txns; 0 = 5000 */
	uint32_t lock_wait_ms; /* how long a reader waits for a live lock before
	                          MRTX_ELOCKED; 0 = 50 */
	int read_only;         /* nonzero: open without write access and refuse
	                          every write with MRTX_EREADONLY (see mrtx_open) */
	int create;            /* where no store exists: MRTX_CREATE_DEFAULT
	                          (0: create at a local path, not at a RADOS
	                          address), MRTX_CREATE_NEVER or
	                          MRTX_CREATE_IF_MISSING; a read-only open never
	                          creates */
} mrtx_options;

#define MRTX_OPTIONS_INIT { MRTX_OPTIONS_VERSION, MRTX_SYNC, 0, 0, 0, 0, 0, 0 }

/**
 * Open the store in directory `path` or at RADOS address `path`, creating
 * it where none exists as opts->create says.
 *
 * Creation (opts->create): by default a local store is created where none
 * exists -- the directory (mode 0700) if missing, the store in it if the
 * directory holds none -- and a RADOS address that names no store is
 * MRTX_ENOTSTORE, so that a mistyped address fails instead of opening a
 * new empty store; MRTX_CREATE_IF_MISSING creates on RADOS too, and
 * MRTX_CREATE_NEVER creates nothing anywhere (MRTX_ENOTSTORE).  The
 * store's first open for writing creates its metadata; a store so made
 * holds no table.
 *  Opening the same store
 * twice in one process shares one environment (LMDB forbids two), whose
 * durability, batching and map size are the first open's: a later open must
 * ask for the same durability (and batching, a test setting) and a
 * map_size of 0 or no larger than the shared map, else it fails with
 * MRTX_EINVAL naming both settings (nothing is silently weakened; close
 * every handle to change them).  After fork() the child must open the store
 * anew.
 *
 * The environment variable MRTX_TWO_PHASE=1 (yes, true, on) makes every
 * handle commit each multi-row transaction with the two-phase protocol
 * (prewrite, commit point, apply, release; DESIGN §5), also on a store that
 * could commit it in one write: for crash tests of the protocol a
 * distributed store runs, in programs whose code is fixed; slower.  Any
 * value but those and 0/no/false/off/empty makes mrtx_open fail with
 * MRTX_EINVAL.
 *
 * Processes: any number may open one store, each with its own durability.
 * A commit is then as durable as its own process's mode, but the store as a
 * whole is only as safe as the weakest: after an OS crash, pages a
 * MRTX_NOSYNC process wrote without syncing may be lost and LMDB may have
 * reused pages that the last synced snapshot needed, so the store can be
 * damaged, not only miss recent commits.  Keep every writer of a store that
 * must survive OS crashes at MRTX_SYNC (or MRTX_NOMETASYNC).
 *
 * Read-only (opts->read_only): nothing creates or changes the store.  The
 * directory and the store in it must exist (else MRTX_ENOTSTORE, where a
 * read-write open would create them); data.mdb is opened for reading only
 * and map_size is ignored.  Every write through the handle fails with
 * MRTX_EREADONLY before anything is written: mrtx_put, mrtx_delete,
 * mrtx_delete_row, mrtx_create_table, mrtx_create_table_split,
 * mrtx_create_index (and mrtx_commit of a transaction holding writes,
 * which the first three make impossible).  Reads, scans and the commit of
 * a read-only transaction (validation only reads) work as usual, except
 * that a reader cannot settle a lock left by another transaction (rolling
 * it forward or back writes): see mrtx_get.
 *
 * Read-only on LMDB: every LMDB reader registers in lock.mdb, so a reader
 * needs write access to that one file.  When lock.mdb cannot be opened
 * for writing (a user who may read the store's files but not write them),
 * the store is opened without it (LMDB's MDB_NOLOCK; LMDB itself does the
 * same on a read-only file system).  No byte of the store's files is then
 * written, but this process's reads are invisible to writers: while
 * another process writes to the store, a read may meet pages the writer
 * is reusing and return wrong data or MRTX_ECORRUPT.  Open a store without
 * lock access only when no one writes to it (a copy, a backup, a stopped
 * service), or give the reader write access to lock.mdb.  With a writable
 * lock.mdb a read-only handle writes only its reader slot there, as every
 * LMDB reader does, and never data.mdb.
 *
 * Read-only on RADOS: the handle sends no write operation at all; an
 * address where no store exists is MRTX_ENOTSTORE whatever opts->create.  It therefore cannot finish a
 * tablet split that is not yet published (its splitter died, or is still
 * copying after a second): a read of such a tablet returns MRTX_ELOCKED
 * until the split is finished.
 *
 * Fencing on RADOS: a handle opened for writing registers its client
 * address under its process in the store (object NAME.clients), and
 * removes it at close.  A reader or `mrtx recover` that settles a lock
 * whose owner is dead, or whose lock expired, first puts that owner's
 * clients on the OSD blocklist (if the key has the mon capability for
 * `osd blocklist`), so that none of its requests still on their way
 * lands afterwards.  A process that was alive but stuck for longer than
 * its lock's expiry (mrtx_options.lock_ttl_ms) is fenced the same way:
 * every later call through its handles fails with MRTX_ESTORE (or
 * MRTX_EUNKNOWN at a commit point); close them and open the store again.
 *
 * RADOS addresses: rados://POOL/NAME[?conf=PATH][&user=ID][&timeout=S]
 * [&split_rows=N] (README "RADOS backend").  split_rows is this handle's
 * tablet bound: a write that creates rows in a tablet holding more than N
 * rows splits it online (default 50000; 0 never).  A split leaves every
 * row in place for every transaction, running or not; handles with an old
 * tablet map notice on their next touch.
 *
 * In one process, a read-only and a read-write open of the same LMDB store
 * cannot share the environment (LMDB opens it one way or the other): the
 * second fails with MRTX_EINVAL naming both (close every handle first, or
 * use the read-write handle for reading).  Two read-only opens share it
 * whatever their durability, batching and map_size, which do not matter
 * to a reader.  (RADOS handles share nothing, so both kinds may coexist.)
 *
 * Full disks and I/O errors on LMDB.  A commit that fails writing its
 * pages -- a full file system or quota: MRTX_EFULL, the message saying "No
 * space left on device" (or "Disk quota exceeded") and naming the store;
 * another write error (permissions, a read-only file system): MRTX_ESTORE
 * in the error's own words -- committed nothing and leaves the handle as it
 * was: reads go on, and once space is freed the next commit succeeds.  A
 * failed fdatasync of data.mdb is different: the kernel may have dropped
 * pages it could not write, the last commits' among them, and a later
 * fdatasync that succeeds does not mean they reached the disk.  So from
 * then on the handle reports nothing durable that it did not know durable
 * before -- the commit that waited for that sync returns MRTX_EUNKNOWN, the
 * commit of a transaction without writes whose snapshot holds such a
 * commit returns MRTX_ESTORE -- and refuses every write with MRTX_ESTORE
 * (the message says to reopen) until every handle of the store in this
 * process is closed and the store is opened again.  Reads go on.  The
 * handle does the same after EIO from a commit on a file system that is
 * not full (a device error, which it cannot tell from a failed sync), and
 * after LMDB stopped on a failed write of its meta page (MDB_PANIC: then
 * reads fail too).  Reopening starts over from the file as the kernel
 * shows it, which does not make durable what failed to reach the disk:
 * after a failed sync treat the device as suspect (README, "Full disks
 * and I/O errors").  Telling a failed write from a failed sync needs Linux
 * 4.13 or later, which reports a write-back error to every open descriptor
 * of a file.
 *
 * Stale LMDB reader slots left by killed processes are cleared.
 * MRTX_FAILPOINTS is read by the first mrtx_open of each process, a forked
 * child's first open included, and arms failpoints (mrtx_failpoints_set).
 *
 * @param out   receives the handle; close it with mrtx_close.
 * @param path  store directory.
 * @param opts  options, or NULL for the defaults.
 * @return MRTX_OK; MRTX_EINVAL (NULL argument, bad option version or value,
 *   a path too long for the store's files,
 *   options that conflict with this process's open handle on the store, a
 *   malformed MRTX_FAILPOINTS); MRTX_ENOTSTORE (path is a file, another LMDB
 *   database, or another format version: a newer one, LMDB format 2 and
 *   older, or one of an older format this mrtx upgrades (LMDB formats 3
 *   to 7, RADOS layout 1 to 3) or whose upgrade was cut short -- the
 *   message then names `mrtx upgrade`, mrtx_upgrade;
 *   no store at path and opts->create does not create one here (a RADOS
 *   address by default, every path read-only or with MRTX_CREATE_NEVER);
 *   LMDB: an empty data.mdb, or one that is no LMDB file);
 *   MRTX_ECORRUPT (metadata unreadable; LMDB: a metadata record whose
 *   checksum does not match its bytes, the format record's included, or
 *   metadata records that do not match the format record's count and
 *   digest of them;
 *   data.mdb ending before pages
 *   its newest commit uses (pages LMDB left free past the end are fine),
 *   or a meta page damaged -- its header, magic,
 *   page size, transaction id, a root past the file's pages or a root
 *   page that is not the page or kind it says -- found
 *   before anything is mapped or created, so a refused open leaves the
 *   directory as it was; lock.mdb, kept by another process, counting more
 *   readers than it has slots; the timestamp ceiling record past any
 *   timestamp; for writing: the directory's
 *   ts.shm belongs to another store -- remove it while no process has the
 *   store open); MRTX_ESTORE (I/O, permissions; ts.shm cannot be made;
 *   RADOS: the cluster cannot be reached, or librados.so.2, which mrtx
 *   loads when the process opens its first rados:// store, is not
 *   installed -- the message names it); MRTX_ENOMEM.
 */
int mrtx_open(mrtx_db **out, const char *path, const mrtx_options *opts);

/** Close a store.  Every transaction of it must be finished.  First waits,
 *  as mrtx_flush, for the background end of its committed transactions
 *  (RADOS).  NULL is a no-op. */
void mrtx_close(mrtx_db *db);

/**
 * Wait until every transaction committed through db has finished its
 * background work.  On RADOS a multi-row mrtx_commit returns once its
 * commit point is written -- the transaction is committed and visible to
 * every reader -- and the handle's worker thread then applies the other
 * rows' writes and releases the locks (two more round trips, batched with
 * other commits').  Until then readers elsewhere find those locks and roll
 * them forward themselves; a transaction on this same handle waits for the
 * worker instead.  mrtx_flush is for callers that want no lock of theirs
 * left behind now: before handing a store over, before a latency
 * measurement.  The same worker trims the old versions of rows commits
 * wrote (one commit in eight asks for it), and mrtx_flush waits for those
 * steps too; mrtx_close drops the ones still queued (collection finds
 * what they would have removed).  On LMDB commits finish before they
 * return; it returns at once.  A process that ends without mrtx_close or
 * mrtx_flush leaves the unfinished ends to the next reader or `mrtx
 * recover`, as after a crash: nothing committed is lost.
 * @return MRTX_OK; MRTX_EINVAL (db NULL).
 */
int mrtx_flush(mrtx_db *db);

/**
 * Create a table with a fixed list of families.  Idempotent: creating an
 * existing table with the identical family list succeeds.
 * @return MRTX_OK; MRTX_EINVAL (bad name, no or duplicate families);
 *   MRTX_ETOOBIG (name or family count over the limits); MRTX_EEXIST (the
 *   table exists with other families); MRTX_ECORRUPT (LMDB: the store's
 *   metadata is damaged); MRTX_EFULL; MRTX_ESTORE; MRTX_ENOMEM;
 *   MRTX_EREADONLY (db was opened read-only; also for an existing table).
 */
int mrtx_create_table(mrtx_db *db, const char *table,
                      const char *const *families, size_t nfamilies);

/**
 * A family and how many versions of each of its cells the store keeps
 * (Bigtable's garbage-collection rules, HBase's VERSIONS, MIN_VERSIONS and
 * TTL).  A commit writes its cells at its commit timestamp
 * (mrtx_commit_ts); a write that makes a cell keep more versions than
 * max_versions drops the oldest, and versions older than ttl_ms are dropped
 * except the newest min_versions -- by that write, by later writes of the
 * cell and by `mrtx gc`.  Reads apply the same rule themselves, so they
 * never show more versions, nor an older one, than the policy allows, even
 * before anything is dropped.  A deleted cell keeps its older versions for
 * reads at earlier snapshots (mrtx_begin_at), within the same rule.
 */
typedef struct mrtx_family_spec {
	const char *name;
	uint32_t max_versions;  /* 0 = 1 */
	uint32_t min_versions;  /* at most max_versions */
	uint64_t ttl_ms;        /* 0 = forever */
} mrtx_family_spec;

/**
 * mrtx_create_table, with each family's version policy.  A family added
 * later (mrtx_add_family) keeps one version.  Idempotent: creating an
 * existing table with identical families and policies succeeds.  Every
 * store mrtx_open opens keeps versions (LMDB format 8, RADOS layout format
 * 4).
 * @return as mrtx_create_table; also MRTX_EINVAL (families NULL, n 0,
 *   min_versions above max_versions, a TTL past 2^63 microseconds),
 *   MRTX_EEXIST (the table exists with other policies), MRTX_ENOTSUP.
 */
int mrtx_create_table2(mrtx_db *db, const char *table, const mrtx_family_spec *families,
                       size_t n);

/** Most split rows mrtx_create_table_split takes. */
#define MRTX_MAX_SPLITS 1024u

/**
 * mrtx_create_table, with the table pre-split (HBase's advice against a
 * hot spot: a table whose row keys are known to spread starts spread).
 *
 * On a RADOS store, a table is a set of tablets (row ranges, one object
 * each): the table gets a tablet starting at the empty row and one starting
 * at each split row, so writes to rows of different tablets go to
 * different objects (and placement groups) from the start.  Later, a tablet
 * that grows past the address's split_rows bound is split online (see
 * mrtx_open).  An LMDB store
 * keeps a table in one B-tree: the split rows are checked and then have no
 * effect.  Creating an existing table with the same families succeeds
 * whatever the split rows (they are not compared).
 *
 * @param splits   nsplits rows (borrowed), strictly increasing, each 1 ..
 *                 MRTX_MAX_ROW bytes; may be NULL when nsplits is 0.
 * @return as mrtx_create_table; also MRTX_EINVAL (NULL splits with nsplits >
 *   0, an empty or out-of-order split row) and MRTX_ETOOBIG (more than
 *   MRTX_MAX_SPLITS split rows, a split row over MRTX_MAX_ROW bytes).
 */
int mrtx_create_table_split(mrtx_db *db, const char *table, const char *const *families,
                            size_t nfamilies, const mrtx_bytes *splits, size_t nsplits);

/**
 * List a table's families (a dropped one not: mrtx_drop_family).  *out
 * receives a pointer to an array of *count names owned by db, valid until
 * mrtx_close.  (Its outputs come last since
 * 0.2, whose SONAME is libmrtx.so.0.2.)
 * @return MRTX_OK; MRTX_EINVAL; MRTX_ENOTABLE; MRTX_ECORRUPT (the store's
 *   metadata, read again after another handle changed it, is damaged);
 *   MRTX_ESTORE.
 */
int mrtx_table_families(mrtx_db *db, const char *table, const char *const **out,
                        size_t *count);

/**
 * Add a family to an existing table.  Families are numbered by position,
 * so existing cells keep theirs and the new one comes last.  Other handles
 * and processes learn of it on their next read of the table or their first
 * use of the family name.
 * @return MRTX_OK; MRTX_EINVAL (NULL argument, bad family name);
 *   MRTX_ETOOBIG (family name too long; the table has MRTX_MAX_FAMILIES);
 *   MRTX_ENOTABLE (also: RADOS, the table was truncated since this handle
 *   looked it up; call again); MRTX_EEXIST (the table has that family
 *   already); MRTX_ELOCKED (RADOS: a drop or truncate of the table is
 *   under way); MRTX_EREADONLY; MRTX_EFULL; MRTX_ECORRUPT; MRTX_ESTORE;
 *   MRTX_ENOMEM.
 */
int mrtx_add_family(mrtx_db *db, const char *table, const char *family);

/**
 * Change one family's version policy (mrtx_family_spec: VERSIONS,
 * MIN_VERSIONS, TTL) in an existing table; spec->name names the family,
 * and its max_versions 0 means 1, as at creation.  The change is one store
 * write.  LMDB: other handles and processes learn of it as of
 * mrtx_add_family (their next read of the table; a write a handle makes
 * before then may still trim its cells by the old policy).  RADOS: the
 * write also raises the store's metadata generation, so another handle's
 * next commit that writes fails once with MRTX_CONFLICT, having reloaded
 * the policy (mrtx_run retries it); a handle that only reads follows at
 * its next family lookup that misses, or when reopened.
 *
 * Versions the new policy no longer keeps are hidden from reads at once
 * (reads apply the policy themselves) and are removed by the next write of
 * their cell or by mrtx_gc.  Versions an earlier, stricter policy already
 * removed do not come back when the policy grows (the cell keeps what was
 * left and gathers versions from its next writes on); versions it only
 * hid do.  The change is not transactional: a running transaction's reads
 * (mrtx_get_versions, scans with versions, mrtx_begin_at) follow the policy
 * as its handle knows it at each read, so after a shrink a version read
 * before may be hidden, and a read at a past snapshot whose version the
 * new policy drops returns MRTX_ESNAPSHOT; a cell's newest value is never
 * affected by VERSIONS or MIN_VERSIONS.  A table being dropped or
 * truncated may be altered.
 *
 * @param spec  the family (borrowed; name required) and its new policy.
 * @return MRTX_OK; MRTX_EINVAL (NULL argument, min_versions above
 *   max_versions, a TTL past 2^63 microseconds); MRTX_ENOTABLE;
 *   MRTX_ENOFAMILY; MRTX_ELOCKED (RADOS: a drop or truncate of the table
 *   is under way); MRTX_EREADONLY; MRTX_EFULL; MRTX_ECORRUPT; MRTX_ESTORE;
 *   MRTX_ENOMEM.
 */
int mrtx_alter_family(mrtx_db *db, const char *table, const mrtx_family_spec *spec);

/**
 * Drop one family of a table: its cells, with their older versions, and
 * its name (mrtx_table_families no longer lists it; mrtx_add_family may
 * add the name again, as a new, empty family).  Transactional with respect
 * to running transactions as mrtx_drop_table, with the same steps: the
 * whole table is frozen, every lock in it settled, then one store write
 * deletes the family's cells, marks it dropped and unfreezes the table.
 * A transaction that wrote the family and commits after the drop fails
 * with MRTX_CONFLICT (retried, its put then meets MRTX_ENOFAMILY).  A
 * dropped family keeps its place (families are numbered by position): it
 * still counts toward MRTX_MAX_FAMILIES.  One write transaction walks the
 * whole table (MRTX_EFULL or MRTX_ESTORE for one too large; nothing
 * removed).  A table an index reads or writes is refused.
 * @return MRTX_OK; MRTX_EINVAL (NULL argument; the table's last family; a
 *   table an index uses); MRTX_ENOTABLE; MRTX_ENOFAMILY; MRTX_ELOCKED (as
 *   mrtx_drop_table); MRTX_ENOTSUP (a RADOS store); MRTX_EREADONLY;
 *   MRTX_EFULL; MRTX_ECORRUPT; MRTX_ESTORE; MRTX_ENOMEM.
 */
int mrtx_drop_family(mrtx_db *db, const char *table, const char *family);

/**
 * Drop a table: its data and its name (which may then be created anew).
 *
 * Transactional with respect to running transactions (DESIGN §3.4): the
 * table is first frozen (every commit that would take a new lock in it
 * fails with MRTX_CONFLICT, in every process), then every lock still in it
 * is settled by recovery, live transactions included (as `mrtx recover
 * --force`): each such transaction either commits entirely before the drop
 * (and its writes to the table vanish with it) or fails at its commit
 * point with MRTX_CONFLICT, never half.  Then one store write removes the
 * data and the name, so no reader sees part of the table gone.  Later
 * calls naming the table through a handle that had it open return
 * MRTX_ENOTABLE (or reach a table created later under the name).
 *
 * LMDB: one write transaction holds the whole deletion: a table too large
 * for one LMDB transaction fails with MRTX_EFULL or MRTX_ESTORE and is
 * left as it was.  A call that fails after freezing makes the table
 * writable again; if its process dies instead, the table stays frozen
 * (readable, writes to it fail with MRTX_CONFLICT) until mrtx_drop_table
 * or mrtx_truncate_table is run again, which takes the job over.
 *
 * RADOS (DESIGN §3.4): after the settling, every tablet of the table is
 * closed, then one write of the store's metadata switches the table's
 * record -- the moment the drop takes effect for everyone -- and then the
 * closed tablets' rows are removed.  Between the close and the switch,
 * reads of the table wait briefly and then fail with MRTX_ELOCKED.  A
 * call that fails, or a process that dies, after the close leaves the
 * table closed that way until mrtx_drop_table or mrtx_truncate_table runs
 * again, which finishes it; rows a call left behind after its switch are
 * removed by the next drop or truncate of any table.  A handle that meets
 * a table dropped by another gets MRTX_ENOTABLE once and then sees the
 * name as it is now.  Two drops
 * or truncates of one table at once: the later one takes the freeze over
 * and the earlier one fails with MRTX_ELOCKED, having removed nothing.
 * A table an index reads or writes cannot be dropped (mrtx_drop_index
 * first); a call refused so (a drop, truncate or family drop) lifts a
 * freeze that one cut short left on the table, since nothing else would
 * while the refusal stands.  A successful drop of the index table of an index whose
 * mrtx_drop_index stopped half way also removes that drop's record (an
 * error then says the table is gone but the record stays).
 *
 * @return MRTX_OK; MRTX_EINVAL (NULL argument; the table is the source or
 *   the index table of an index); MRTX_ENOTABLE; MRTX_ELOCKED (its locks
 *   kept changing, or another drop or truncate of it ran meanwhile);
 *   MRTX_CONFLICT (RADOS: the table was truncated since this handle looked
 *   it up; call again); MRTX_EREADONLY; MRTX_EFULL;
 *   MRTX_ECORRUPT (a malformed lock record or metadata); MRTX_ESTORE;
 *   MRTX_ENOMEM.
 */
int mrtx_drop_table(mrtx_db *db, const char *table);

/**
 * Truncate a table: delete every row, keeping the table (its name,
 * families and version policies).  Transactional as mrtx_drop_table, with
 * the same steps; on LMDB the last one deletes the rows and unfreezes the
 * table at once.  The index table of an index whose mrtx_drop_index
 * stopped half way is refused (MRTX_EINVAL): drop the index again, or the
 * table.  On RADOS the switch gives the name a new, empty table
 * (with the tablets the old one had, empty): a transaction that used the
 * old one fails once with MRTX_CONFLICT (mrtx_run retries it), and a read
 * at a snapshot taken before the truncate gets MRTX_ESNAPSHOT, never an
 * empty table.  On LMDB the deleting write raises the collection safe
 * point to its own timestamp, so mrtx_begin_at refuses a snapshot from
 * before it (MRTX_ESNAPSHOT; as drops of tables and of families do).
 * @return as mrtx_drop_table; MRTX_EINVAL also for the index table of a
 *   half-done index drop.
 */
int mrtx_truncate_table(mrtx_db *db, const char *table);

/**
 * List the store's tables.  Calls fn(name, payload) for each, in name
 * order; a nonzero return from fn stops and is returned.
 * @return MRTX_OK, fn's nonzero value, MRTX_EINVAL, MRTX_ENOMEM,
 *   MRTX_ECORRUPT (the store's metadata is damaged), MRTX_ESTORE.
 */
int mrtx_tables(mrtx_db *db, int (*fn)(const char *table, void *payload),
                void *payload);

/**
 * Begin a transaction.  Nothing is written before mrtx_commit.  Memory:
 * each thread keeps the object of its last ended transaction (4 KiB)
 * for its next begin, and frees it when the thread exits.
 * @return MRTX_OK; MRTX_EINVAL (NULL); MRTX_ENOMEM.
 */
int mrtx_begin(mrtx_db *db, mrtx_txn **out);

/** Set this transaction's lock expiry in ms (default: the store's lock_ttl_ms).
 *  While its commit runs, the handle's heartbeat thread (started by the
 *  first multi-row commit, joined by mrtx_close) moves the expiry on every
 *  half TTL, so a live commit outlasting the TTL keeps its locks.
 *  @return MRTX_OK; MRTX_EINVAL for NULL or 0. */
int mrtx_txn_set_lock_ttl(mrtx_txn *txn, uint32_t ms);

/**
 * Read one cell, seeing the transaction's own buffered writes.
 *
 * Snapshot reads (LMDB stores).  A transaction's first read opens a view
 * of the store (an LMDB read transaction held until the transaction
 * ends), and every read of it -- gets, scans, index lookups -- comes from
 * that view: the transaction sees every commit made before its first read
 * and none after, whole, never half of one.  A read-only transaction whose
 * reads met no lock of an unfinished two-phase commit commits without
 * validation (it cannot conflict); one that met such a lock, or read an
 * index whose backfill (mrtx_create_index) had not ended when its view
 * opened, is validated as below.  A read-write transaction is validated at
 * commit: if a row it read changed since its view, the commit fails with
 * MRTX_CONFLICT.  A view keeps the pages it sees allocated, as any LMDB
 * reader does, until the transaction ends: do not leave transactions open
 * for long on a store under heavy writes.  A table created after the view
 * opened (even under the name of one dropped since) is read as it is now,
 * and the transaction is then validated at commit; one dropped since is
 * MRTX_ENOTABLE.
 *
 * A lock of another transaction is decided from the view without waiting:
 * committed there, the row reads with that commit; not committed, as it
 * was before it.  A crashed writer's lock met this way is settled on the
 * side (rolled forward or back).  Only a transaction's first read, whose
 * view is not fixed yet, meeting a lock of an unfinished commit settles it
 * first (rolled forward or back if its writer is dead or expired) or waits
 * up to lock_wait_ms for it, then reads from a new view, or returns
 * MRTX_ELOCKED.  On a read-only handle nothing is rolled forward or back
 * (that writes): that first read waits for the lock's owner or another
 * process to settle it, then returns MRTX_ELOCKED (`mrtx recover` settles
 * it).
 *
 * Snapshot reads (RADOS stores of format 4, writable handles).  A
 * transaction's first read takes a timestamp from the store's oracle (one
 * round trip, batched with the handle's other threads: mrtx_txn_snapshot_ts)
 * and every read of it -- gets, scans, index lookups -- returns the
 * versions at or below it: every commit that returned before that read
 * began is seen (of any handle, process or host: every commit is stamped
 * by the oracle; DESIGN §9.1), none stamped after it, never half of one.  A lock of a live two-phase commit met on the way is not waited
 * for: the reader pushes that commit above its snapshot (a mark on the
 * commit's primary row, which its commit point honours by taking a newer
 * timestamp) and reads the row as it was before the lock; a lock whose
 * commit is decided, or whose writer is dead or expired, is settled first
 * (rolled forward or back).  A
 * read-only transaction commits without validation: it is held to
 * snapshot isolation (it may see a state no serial order of the two-phase
 * writers would show, Fekete's read-only anomaly); a read-write one is
 * validated, and its commit also fails with MRTX_CONFLICT when a row it
 * read had been committed again after its snapshot (what it read was
 * older than the row).  Older versions stay for running snapshots:
 * collection (a commit's trim of the rows it wrote, `mrtx gc`) keeps
 * every version above the oldest snapshot it knows of -- this handle's,
 * and those listed in the store's registry (held in NAME.ts beside the
 * oracle): each snapshot is registered by the very write that reserves
 * its timestamp, with a lease of one trim lag (10 s) that its reads renew
 * every quarter lag.  A snapshot that goes without reading for more than
 * three quarters of the lag may therefore find versions it needs
 * collected: MRTX_ESNAPSHOT, never a newer value.  A read-only handle
 * cannot reserve a timestamp (that writes): its transaction's first read
 * reads the oracle's stored value instead, which every commit that
 * returned before is at or below, and reads at it as a snapshot too.  It
 * cannot register that snapshot, so `mrtx gc` or another handle's trim
 * may collect versions it needs: its reads then fail with MRTX_ESNAPSHOT
 * (never a newer value), and a new transaction reads a newer snapshot.
 * It cannot push a live writer either (that writes): a row locked by
 * another transaction is waited for briefly.  On a store where nothing
 * was ever committed (the oracle at 0) its reads are optimistic and
 * validated at commit.
 *
 * @param value  receives the value; its memory is owned by txn and valid
 *   until the transaction ends (commit or abort).
 * @return MRTX_OK; MRTX_NOTFOUND; MRTX_ELOCKED (a live writer holds the row);
 *   MRTX_CONFLICT (RADOS, optimistic reads: the row changed since this
 *   transaction first observed it, by a read or by a scan that passed over
 *   it, absent; snapshot reads: a commit stamped at or below the snapshot
 *   reached a row between two reads of it -- a one-row commit that was
 *   under way when the snapshot began -- : the transaction is doomed, see
 *   MRTX_EBADTXN);
 *   MRTX_EINVAL; MRTX_ETOOBIG; MRTX_ENOTABLE;
 *   MRTX_ENOFAMILY; MRTX_ECORRUPT; MRTX_ESTORE; MRTX_ENOMEM; MRTX_EBADTXN
 *   (the transaction is doomed); MRTX_ESNAPSHOT (a transaction of
 *   mrtx_begin_at: the cell's version at its timestamp was dropped by its
 *   family's policy -- in a one-version family, by any later write of the
 *   cell -- or collected; on RADOS a row read twice changed between the
 *   reads, see mrtx_begin_at; a RADOS snapshot read: versions it needs
 *   were collected, above).
 *
 * Doomed transactions: once a call has returned MRTX_CONFLICT from a read
 * or a scan, or index maintenance failed after buffering a write (see
 * mrtx_create_index), the transaction can never commit.  Every later
 * mrtx_get, mrtx_put, mrtx_delete, mrtx_delete_row, mrtx_scan_open,
 * mrtx_scan_next and index call on it returns MRTX_EBADTXN; mrtx_commit
 * returns MRTX_CONFLICT for a conflict (so a retry loop retries it) and
 * MRTX_EBADTXN otherwise; mrtx_run retries a conflict doom even when fn
 * returns the MRTX_EBADTXN of a later call.
 */
int mrtx_get(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
             mrtx_bytes qualifier, mrtx_bytes *value);

/**
 * Buffer a put.  Copies its inputs.  Nothing reaches the store before
 * commit.  A transaction's first write takes its start timestamp (the
 * window of blind-write conflicts, see mrtx_commit) from the store's
 * source unless a read took its snapshot before: on LMDB the timestamp
 * page (DIR/ts.shm, no I/O once attached), on RADOS one read of the
 * oracle (NAME.ts, a round trip).
 * @return MRTX_OK; MRTX_EINVAL; MRTX_ETOOBIG; MRTX_ENOTABLE; MRTX_ENOFAMILY;
 *   MRTX_CONFLICT (RADOS: a family this handle did not know is looked up,
 *   and the table turns out truncated since the transaction first used it:
 *   nothing buffered, and the commit fails; see mrtx_truncate_table);
 *   MRTX_ENOMEM; MRTX_ESTORE, MRTX_ECORRUPT (the first write: the
 *   timestamp source could not be read, or holds a malformed value;
 *   MRTX_ESTORE also: the table's families could not be read again);
 *   MRTX_EBADTXN (doomed, see mrtx_get); MRTX_EREADONLY (the
 *   store was opened read-only: nothing buffered, the transaction is left
 *   as it was, and can still read and commit); on a table with
 *   indexes also the errors of the reads index maintenance makes (as
 *   mrtx_get, MRTX_CONFLICT included).  A failed call leaves the transaction
 *   as it was, except when index maintenance fails after the write itself
 *   was buffered: then the transaction is doomed.
 */
int mrtx_put(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
             mrtx_bytes qualifier, mrtx_bytes value);

/** Buffer the deletion of one cell (deleting a missing cell is not an error).
 *  Errors as mrtx_put. */
int mrtx_delete(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
                mrtx_bytes qualifier);

/** Buffer the deletion of every cell of a row (later puts in the same
 *  transaction survive it).  Errors as mrtx_put, without MRTX_ENOFAMILY. */
int mrtx_delete_row(mrtx_txn *txn, const char *table, mrtx_bytes row);

/**
 * Commit and free the transaction (always freed, whatever the result).
 *
 * @return MRTX_OK (durable per the store's durability); MRTX_CONFLICT (a
 *   concurrent transaction changed a row this one read, scanned or wrote,
 *   or an earlier call returned MRTX_CONFLICT; nothing was written);
 *   MRTX_ELOCKED (a row to write is held by a live transaction; nothing was
 *   written); MRTX_EUNKNOWN (the store's write of the commit point failed in
 *   a way that may have applied it -- a failed LMDB commit or sync, a lost
 *   reply -- so the transaction may or may not have committed, or is not
 *   known durable; the next reader or `mrtx recover` settles it; the same
 *   for one-row and multi-row commits); MRTX_ESTORE / MRTX_EFULL (the store
 *   failed and surely applied nothing at the commit point, or failed before
 *   it: nothing was committed, and what was prewritten is rolled back or
 *   left to recovery; a full disk is MRTX_EFULL, after which the handle
 *   commits again once space is freed; MRTX_ESTORE also once a sync of the
 *   store failed: see mrtx_open, "Full disks and I/O errors"); MRTX_ECORRUPT;
 *   MRTX_ENOMEM; MRTX_EBADTXN (doomed by a failure that is no conflict, see
 *   mrtx_get; nothing written); MRTX_EINVAL (NULL); MRTX_EREADONLY (a
 *   transaction holding writes on a read-only handle; nothing written);
 *   MRTX_ENOTABLE (a table it wrote or read was dropped under it, see
 *   mrtx_drop_table; nothing written).
 *   A transaction without writes commits on a read-only handle too.  In
 *   MRTX_SYNC mode on LMDB a commit is visible to readers a moment before
 *   it is durable (its meta page is flushed just after; DESIGN §8), so the
 *   commit of a transaction without writes first makes everything it could
 *   have read durable: the newest commit its snapshot holds, unless this
 *   process knows it durable already, so reads of a synced store make no
 *   fdatasync (at most one otherwise, shared by the readers that wait for
 *   the same state; MRTX_EFULL if it failed for want of space, MRTX_ESTORE
 *   if it failed otherwise).  One that read
 *   nothing syncs nothing.  On a read-only handle nothing is synced (it
 *   cannot take the writer lock): what it read is durable unless its
 *   writer's mrtx_commit had not returned yet.  A transaction ended with
 *   mrtx_abort vouches for nothing it read.
 *
 * Write-write conflicts: a row this transaction read and then wrote fails
 * the commit if anyone committed to it after the read (first committer
 * wins).  A row written blindly (never read) fails if another transaction
 * committed to it after this one's first write to it: at a commit
 * timestamp above the store's timestamp source as it stood at that first
 * write (RADOS: its oracle, read once by the transaction's first write).
 * Errors only ever go the safe way, a conflict that was not, never one
 * missed: a multi-row commit that wrote a row blindly and was rolled back
 * (another of its rows failed, or its writer died before its commit point)
 * leaves that row stamped with the rolled-back transaction's start, which
 * a writer of the row that started before it counts as a later commit.  No
 * wall clock takes part: a clock that steps or is skewed between hosts
 * changes nothing (DESIGN §9.1).
 */
int mrtx_commit(mrtx_txn *txn);

/**
 * mrtx_commit, and the commit's timestamp in *commit_ts (may be NULL; 0 on
 * any error).  LMDB: the store stamps each commit with a timestamp inside
 * the write that commits it (about microseconds of the wall clock, kept
 * strictly increasing), so timestamps follow commit order across every
 * thread and process of the host, and a transaction's snapshot timestamp
 * (mrtx_txn_snapshot_ts) separates the commits it sees from those it does
 * not.  A transaction without writes gets its snapshot timestamp (0 if it
 * read nothing, or when mrtx_txn_snapshot_ts is 0).  RADOS: a multi-row
 * commit's timestamp comes from the store's oracle (the object NAME.ts)
 * once every lock of the transaction is in place, a one-row commit's just
 * before its write; either is above every row the transaction read or
 * wrote, so timestamps follow every dependency and real time (DESIGN
 * §9.1).
 * @return as mrtx_commit.
 */
int mrtx_commit_ts(mrtx_txn *txn, uint64_t *commit_ts);

/**
 * The transaction's snapshot timestamp: LMDB, once the transaction has
 * read (its snapshot is taken by its first read, DESIGN §9), every commit
 * whose timestamp (mrtx_commit_ts) is at or below it is in the snapshot
 * and none above it is; RADOS (format 4, a writable handle): the
 * timestamp its first read took from the store's oracle, which its reads
 * are at (see mrtx_get); a read-only RADOS handle: the oracle's stored
 * value its first read read (0 while nothing was ever committed: its
 * reads are then optimistic and validated at commit).  mrtx_begin_at: its
 * timestamp (either store).  0: nothing read yet, a read-only handle of a store
 * without its timestamp page (DIR/ts.shm: a writer's open makes it; a
 * read-only one creates nothing), an LMDB snapshot taken while writers
 * kept landing commits between its start and the check that pins it to
 * one commit (rare: it is retried several times first; its reads are as
 * consistent as any other's, only its timestamp is unknown), or NULL.  What a family's TTL hides is judged when a read runs, so two
 * reads of one snapshot may differ by a version that expired between them.
 */
uint64_t mrtx_txn_snapshot_ts(const mrtx_txn *txn);

/** One version of a cell: its commit timestamp (0: this transaction's own
 *  uncommitted write) and value (owned by the transaction). */
typedef struct mrtx_version {
	uint64_t ts;
	mrtx_bytes value;
} mrtx_version;

/**
 * The versions of one cell visible to the transaction, newest first, at
 * most max: those written at or below its snapshot (mrtx_txn_snapshot_ts;
 * mrtx_begin_at's timestamp), within the family's policy
 * (mrtx_family_spec), stopping at a deletion.  A write of this
 * transaction comes first (ts 0), followed by up to max - 1 stored
 * versions (so until it commits a cell it wrote can show one version more
 * than the family keeps); one of its deletes leaves none.  Values
 * are valid until the transaction ends.  The read is recorded for
 * validation as mrtx_get's is.
 * @param n  receives the number returned (0 on any error).
 * @return MRTX_OK; MRTX_NOTFOUND (no version: *n = 0); MRTX_EINVAL (NULL
 *   family, out or n, max 0); MRTX_ESNAPSHOT
 *   (mrtx_begin_at: the cell's versions at its timestamp were collected,
 *   or are past the family's policy); and mrtx_get's other codes.
 */
int mrtx_get_versions(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
                      mrtx_bytes qualifier, mrtx_version *out, size_t max, size_t *n);

/**
 * Restore one cell's versions at the timestamps they were committed at
 * (`mrtx load` of a `mrtx dump --versions`): versions[0..n), newest first
 * as mrtx_get_versions returns them, timestamps strictly decreasing, are
 * written oldest first, each at its own timestamp, under the family's
 * policy (what it does not keep is dropped, as by writes).  One store
 * write, atomic, outside any transaction: the row must not be locked by a
 * transaction in flight, and the cell must hold no version at all (nor a
 * deletion).  It changes the row's lock as a commit does, so a
 * transaction that read the row before and commits after it conflicts.
 * The store's timestamp source is first raised to versions[0].ts, so that
 * every later commit is stamped above the restored versions; reads at a
 * past snapshot (mrtx_begin_at) then see them as of their timestamps,
 * history the store did not have before.  On RADOS the cell's emptiness
 * is read from its tablet beside the row's lock, and the write is guarded
 * by that lock, so a commit in between makes it conflict and nothing is
 * written.  A table an index reads or writes is refused (the index would
 * not learn of the cells).
 * @param versions  n versions (borrowed), n >= 1; each ts in 1 .. 2^63-1.
 * @return MRTX_OK; MRTX_EINVAL (NULL argument, n 0, a timestamp 0, past
 *   2^63-1 or not below the one before it, NULL value data with a size,
 *   an empty row, a table an index uses); MRTX_ETOOBIG (row, qualifier or
 *   a value over the limits); MRTX_ENOTABLE; MRTX_ENOFAMILY; MRTX_EEXIST
 *   (the cell has a version); MRTX_ELOCKED (a transaction in flight holds
 *   the row's lock); MRTX_CONFLICT (the row kept changing meanwhile, 10
 *   attempts; or the table is being dropped or truncated); MRTX_EREADONLY; MRTX_EFULL; MRTX_ECORRUPT; MRTX_ESTORE;
 *   MRTX_ENOMEM.
 */
int mrtx_restore_versions(mrtx_db *db, const char *table, mrtx_bytes row, const char *family,
                          mrtx_bytes qualifier, const mrtx_version *versions, size_t n);

/**
 * Begin a read-only transaction at a past snapshot: every read (gets,
 * mrtx_get_versions, scans, index lookups) sees the versions committed at
 * or below ts and nothing above -- the store as it was when the commit
 * stamped ts (mrtx_commit_ts) had just committed.  Its writes fail with
 * MRTX_EINVAL; it never conflicts or validates; end it with mrtx_commit
 * or mrtx_abort.  What the store kept decides how far back it reaches: a
 * cell whose versions at ts were dropped by its family's policy reads as
 * MRTX_ESNAPSHOT, never as a newer or missing value.
 * LMDB: it never waits.  RADOS (format 4): each read goes to the store as
 * it is and picks the versions at or below ts; a live writer's lock met
 * there is pushed above ts and read past, as at a live snapshot (see
 * mrtx_get), and a decided or abandoned one is settled first (a read-only
 * handle cannot push: it waits up to the handle's lock wait,
 * MRTX_ELOCKED after).  A version at or below
 * ts that a policy still keeps reads as long as collection has not passed
 * ts (a commit's trim: about 10 s behind the newest; `mrtx gc`: its safe
 * point), else MRTX_ESNAPSHOT; so is a row read twice that a commit
 * stamped at or below ts reached between the two reads (it was under way
 * when ts was taken).  A past snapshot is not published in the store's
 * registry of running snapshots (see mrtx_get): it reads what is left.
 * @return MRTX_OK; MRTX_EINVAL (NULL, ts 0 or past the store's newest
 *   commit -- RADOS: above its timestamp object);
 *   MRTX_ESNAPSHOT (ts is below `mrtx gc`'s safe point, under which
 *   deleted cells may be gone; on LMDB, a drop or truncate of a table
 *   and a drop of a family raise it to their own timestamp, as they
 *   delete every version of what they remove); MRTX_ENOTSUP (an LMDB store without its
 *   timestamp page, or, very rarely, writers landing commits so fast that
 *   16 views in a row could not be pinned to one: retry); MRTX_ENOMEM;
 *   MRTX_ESTORE; MRTX_ECORRUPT (RADOS: the timestamp object is
 *   malformed).  Its reads return mrtx_get's codes, MRTX_ELOCKED among
 *   them on RADOS (above).
 */
int mrtx_begin_at(mrtx_db *db, uint64_t ts, mrtx_txn **out);

/**
 * Collect old versions: walk every table and drop what the families'
 * policies no longer keep (versions past max_versions; past ttl_ms except
 * the newest min_versions) and deleted cells -- with their older versions
 * -- deleted at or below the safe point: the store's newest commit
 * timestamp less keep_ms.  From then on mrtx_begin_at refuses snapshots
 * below the safe point (MRTX_ESNAPSHOT).  LMDB: running transactions are
 * not disturbed (their snapshot keeps what they read); writes collect the
 * cells they write as they go, and this reaches the others.  RADOS (format
 * 4): writes keep every version, and every eighth commit of a handle
 * collects the rows it wrote up to about 10 s of timestamps behind the
 * newest; this reaches the rest (run it periodically).  Its safe point is
 * also kept at or below every running snapshot: this handle's, and every
 * one the store's registry lists (each is registered by the write that
 * takes its timestamp, and stays listed while it reads at least every
 * 7.5 s); a snapshot idle for longer may meet MRTX_ESNAPSHOT (never a
 * wrong value); a mrtx_begin_at transaction that
 * began before the safe point rose and reads below it where versions were
 * removed gets MRTX_ESNAPSHOT (each tablet records the safe point it was
 * collected at); the newest timestamp is the store's timestamp object's.  Each step handles up to 256
 * rows and records where the next starts (LMDB: in its one write; RADOS:
 * a step stays in one tablet, and its cursor is a second write, so a crash
 * between the two repeats the step): a run cut short (a crash, an error)
 * is resumed, with its safe point, by the next call.  Tables dropped,
 * truncated or made again while it runs are no error: a dropped one has
 * nothing left to collect, and one truncated or made again is walked anew.
 * @param collected  receives the number of versions removed (may be NULL).
 * @return MRTX_OK; MRTX_EINVAL (db NULL, keep_ms out of range);
 *   MRTX_EREADONLY; MRTX_ENOTSUP (an LMDB store without its timestamp
 *   page, or, very rarely, 16 views in a row unpinned, as mrtx_begin_at);
 *   MRTX_ELOCKED (RADOS: a table was closed by a drop or truncate that had
 *   not ended, had a split cut short, or kept being truncated under the
 *   walk; every other table was collected, and the message names it);
 *   MRTX_ECORRUPT; MRTX_EFULL; MRTX_ESTORE; MRTX_ENOMEM.
 */
int mrtx_gc(mrtx_db *db, uint64_t keep_ms, uint64_t *collected);

/**
 * Convert a store of an older format to this mrtx's (LMDB 8, RADOS 4), in
 * place: an LMDB store of format 3 to 7 (directory path) or a RADOS
 * store of layout format 1, 2 or 3 (rados://...); mrtx_open refuses those
 * and names this.  Every LMDB record (cell, older version, lock record,
 * metadata record) gets its checksum (format 6 has them on its data records
 * already, format 7 on every record, and the metadata's are written in one
 * transaction), and the format record the count and digest of the other
 * metadata records; a store of format 4 also its count of
 * unsettled lock records (transactions in flight are counted, not
 * refused).  From before cell versions, every cell gets the version of
 * the commit that wrote it (its row's lock says which) and reads at
 * snapshots before the upgrade are refused (MRTX_ESNAPSHOT): the old
 * formats kept no older versions.  Crash
 * safe: the store is converted in batches (LMDB: each one transaction;
 * RADOS: each one guarded write on one tablet, up to 256 rows) that also
 * record where the next starts, under a format no mrtx opens; run it again
 * after a crash and it resumes.  No other process may use the store: on
 * LMDB it refuses while one has it open; on RADOS it cannot tell, and a
 * client of an earlier release that keeps writing makes it fail at the
 * next lock it meets, or writes the old layout -- stop them first.  A store
 * already at this mrtx's format is left as it is.
 * @param cells  receives the number of records converted by this call
 *   (LMDB: records given their checksum, or 1 for format 7's format
 *   record; RADOS: cells given their version; 0 for a store already at
 *   this format; may be NULL).
 * @return MRTX_OK; MRTX_EINVAL (NULL or empty path; a RADOS address in an
 *   mrtx built without RADOS); MRTX_ENOTSTORE (no store, or a format
 *   this mrtx cannot upgrade); MRTX_ELOCKED (LMDB: another process, or a
 *   handle of this one, has it open; both: rows are locked by
 *   transactions in flight -- nothing is changed: settle them with `mrtx
 *   recover` of the mrtx that wrote the store; RADOS: a tablet is in the
 *   middle of a split, the format changed under the upgrade, or a client
 *   of an earlier release locked a row after the upgrade began -- stop it
 *   and run the upgrade again; a transaction it left in flight keeps the
 *   upgrade from finishing); MRTX_ETOOBIG (cells whose keys leave no room
 *   for versions: nothing is changed, the message says how to proceed);
 *   MRTX_ECORRUPT; MRTX_EFULL; MRTX_ESTORE (RADOS: also a batch the OSD
 *   refuses, such as a single row over its write limit); MRTX_ENOMEM.
 */
int mrtx_upgrade(const char *path, uint64_t *cells);

/** Abort and free the transaction; nothing is written.  NULL is a no-op. */
void mrtx_abort(mrtx_txn *txn);

/** What a scan reads. */
typedef struct mrtx_scan_spec {
	const char *table;
	mrtx_bytes start, end;           /* rows [start, end); size 0 = unbounded */
	const char *family;              /* NULL = every family */
	mrtx_bytes qual_start, qual_end; /* qualifiers [qual_start, qual_end) within
	                                    family; size 0 = unbounded; only with family */
	int reverse;                     /* nonzero: rows in descending order (cells
	                                    within a row stay ascending) */
	size_t limit_rows;               /* 0 = no limit */
} mrtx_scan_spec;

/** A cell returned by a scan; all memory owned by the transaction. */
typedef struct mrtx_cell {
	mrtx_bytes row;
	const char *family;
	mrtx_bytes qualifier;
	mrtx_bytes value;
} mrtx_cell;

/**
 * Open a scan over rows of one table, merged with the transaction's own
 * buffered writes (deletes hide stored cells).
 *
 * A scan observes every row it passes over, present or absent: the rows
 * and the gaps between them are validated at commit, so a row inserted into
 * or deleted from the passed-over range by a concurrent commit makes this
 * transaction fail (no phantoms) -- unless it is a read-only transaction
 * reading one snapshot (LMDB, see mrtx_get), which saw neither and commits;
 * and a row this transaction reads after a
 * scan passed it as absent (or reads present and a scan then passes over as
 * absent) dooms it at once (MRTX_CONFLICT).  Only what the scan passed is
 * covered: a scan stopped early (limit, or not read to the end) does not
 * conflict with changes beyond where it stopped.
 *
 * Buffered writes: the scanner merges the transaction's buffer as it goes,
 * so a write buffered after mrtx_scan_open is seen if the scanner has not
 * yet passed its row; rows already passed are not revisited.
 *
 * limit_rows counts returned rows: rows with at least one cell visible
 * through the family/qualifier filter (a row whose cells are all filtered
 * out or deleted is passed over, uncounted).
 *
 * Bounds are compared, never stored, so they need not be valid cell keys:
 * a qual_start longer than a row's keys allow still finds that row's
 * shorter qualifiers that sort above it.
 *
 * @return MRTX_OK; MRTX_EINVAL (NULL, qualifier range without family, byte
 *   string with NULL data); MRTX_ENOTABLE; MRTX_ENOFAMILY; MRTX_ETOOBIG
 *   (start or end over MRTX_MAX_ROW bytes, qual_start or qual_end over
 *   MRTX_MAX_KEY bytes); MRTX_ENOMEM; MRTX_EBADTXN (doomed, see mrtx_get).
 */
int mrtx_scan_open(mrtx_txn *txn, const mrtx_scan_spec *spec, mrtx_scanner **out);

/**
 * Next cell.  cell's memory is owned by the transaction, valid until it ends.
 *
 * Errors: after MRTX_ELOCKED the scanner stands where it was and the next
 * call retries the same row.  Any other error is final for the scanner:
 * every later call returns it again (never MRTX_NOTFOUND, so a failed scan
 * never looks complete).  The rows passed before the error stay observed
 * and are validated at commit as usual.
 *
 * @return MRTX_OK; MRTX_NOTFOUND at the end; MRTX_ELOCKED (a live writer
 *   holds the next row; retry: RADOS, or on LMDB a table created after the
 *   transaction's snapshot, read as it is now); MRTX_CONFLICT (RADOS: a row
 *   changed since this transaction observed it -- optimistic reads -- or a
 *   commit at or below its snapshot reached it late, see mrtx_get:
 *   doomed); MRTX_ECORRUPT; MRTX_ESTORE;
 *   MRTX_ENOMEM; MRTX_EINVAL (NULL); MRTX_EBADTXN (the transaction ended or
 *   is doomed); MRTX_ESNAPSHOT (mrtx_begin_at, and RADOS snapshot reads:
 *   as mrtx_get).
 */
int mrtx_scan_next(mrtx_scanner *s, mrtx_cell *cell);

/**
 * Make the scan return up to max versions of each cell, newest first, as
 * consecutive cells with the same row, family and qualifier: those its
 * transaction's snapshot holds (mrtx_begin_at: at or below its timestamp),
 * within the family's policy, stopping at a deletion -- mrtx_get_versions'
 * rule: a write of this transaction comes first, followed by up to max - 1
 * stored versions (so a cell it wrote can show one version more than the
 * family keeps until it commits; a delete of it shows none).  Call it after mrtx_scan_open
 * and before the first mrtx_scan_next; max 1 is the default.
 * @return MRTX_OK; MRTX_EINVAL (NULL, max 0, or the scan has started);
 *   MRTX_EBADTXN (the transaction has ended).
 */
int mrtx_scan_versions(mrtx_scanner *s, uint32_t max);

/**
 * The commit timestamp of the cell mrtx_scan_next returned last (valid
 * until mrtx_scan_close, also after the transaction ended): 0 for a write
 * of this transaction, before the first cell, or on NULL.
 */
uint64_t mrtx_scan_ts(const mrtx_scanner *s);

/** Close a scanner.  Every scanner must be closed, before or after its
 *  transaction ends; once the transaction has ended, mrtx_scan_next on it
 *  returns MRTX_EBADTXN.  NULL is a no-op. */
void mrtx_scan_close(mrtx_scanner *s);

/**
 * Run fn in a fresh transaction and commit it, retrying MRTX_CONFLICT,
 * MRTX_ELOCKED and MRTX_ESNAPSHOT (a live snapshot that collection
 * overtook, see mrtx_gc: the retry takes a new one) from fn or from commit,
 * with jittered exponential backoff, up to max_attempts attempts (<= 0
 * means 10).  fn's own nonzero return that is not one of those aborts and
 * is returned.  fn must not commit
 * or abort the transaction.  fn may run several times, and a run that will
 * be retried may have seen an inconsistent mix of values (see mrtx_get):
 * fn should only read and buffer writes, returning MRTX_CONFLICT when an
 * invariant it relies on looks broken.
 * @return MRTX_OK, the last retryable error when attempts run out, or
 *   another error from fn, begin or commit.
 */
int mrtx_run(mrtx_db *db, int (*fn)(mrtx_txn *txn, void *payload), void *payload,
             int max_attempts);

/** A static English name for an error code; never NULL. */
const char *mrtx_strerror(int rc);

/** The detail of this thread's last error; never NULL; valid until this
 *  thread's next mrtx call. */
const char *mrtx_errmsg(void);

/**
 * Arm failpoints for this process (tests), with the MRTX_FAILPOINTS syntax:
 * "name=action[@N],..." where action is exit | kill | error | sleep:MS |
 * wait:PATH (the thread that hits it polls until the file PATH exists; PATH
 * has no ',' or '@' and is under 256 bytes) and @N fires on the N-th hit
 * only.  NULL or "" disarms all.  Safe while other threads run mrtx calls
 * (a handle's heartbeat and tail threads included): each hit counts
 * against the failpoints armed when it happens.
 * @return MRTX_OK; MRTX_EINVAL (unknown name or bad syntax; nothing armed).
 */
int mrtx_failpoints_set(const char *spec);

/** Number of times the named failpoint was hit since it was armed (tests);
 *  -1 for an unknown name. */
long mrtx_failpoint_hits(const char *name);

/**
 * Back up an LMDB store while it is in use: a consistent copy of the whole
 * store, with no transaction left in flight in it, in directory dest_dir.
 *
 * The copy is LMDB's copy of the environment as of one instant (one LMDB
 * read transaction, compacted: only the pages in use), so writers of the
 * source, in this and other processes, go on meanwhile; as with any long
 * LMDB read, the source's file may grow while a big copy runs.  The
 * transactions that were committing at that instant left locks in the
 * copy; no writer will ever finish them there, so each is settled as if
 * its writer had died (even when its pid is alive: it writes to the
 * source, not to the copy): rolled forward when its primary is past the
 * commit point, else rolled back.  The copy thus holds exactly the
 * transactions committed at that instant and no lock record that is not
 * STABLE (`mrtx check --strict` passes, `mrtx locks` lists nothing); its
 * lock family is checked before the call returns, and it is synced to
 * disk.  The source is only read (its own locks are left to its readers).
 *
 * dest_dir must not exist (then it is created, mode 0700, in an existing
 * parent) or be an empty directory: nothing is ever overwritten.  The copy
 * is built in dest_dir/.mrtx-backup-partial/ and moved into place at the
 * end, so dest_dir holds a store (its data.mdb; LMDB adds lock.mdb at the
 * first open) only once the backup is complete; on failure everything the
 * call created is removed (dest_dir too if it created it).  A process that
 * dies during the call may leave .mrtx-backup-partial/: the next call into
 * dest_dir clears it (the running call holds an flock on it, so one that
 * runs is never cleared: that is MRTX_EEXIST).  Open
 * the copy with mrtx_open like any store.  It keeps the source's store id
 * (its lock records carry it: it is the same store's data), and opens as a
 * store of its own, also beside the source in one process.
 *
 * Cost: the copy's size in disk writes, plus one pass over the copy's lock
 * records.  Not for RADOS stores: a cluster has no point-in-time copy of
 * all its objects; copy their tables with `mrtx dump` and `mrtx load`.
 *
 * @param db        an open store (borrowed).
 * @param dest_dir  where the copy goes (borrowed).
 * @return MRTX_OK; MRTX_EINVAL (NULL or empty argument, a path too long, a
 *   read-only handle opened without lock.mdb, which writers cannot see);
 *   MRTX_ENOTSUP (a RADOS store); MRTX_EEXIST (dest_dir exists and is not an empty
 *   directory, or a backup into it is running; nothing was changed); MRTX_ECORRUPT (a lock in the copy
 *   could not be settled or the copy's check found damage the protocol
 *   cannot produce: the source needs `mrtx check`; no copy is left);
 *   MRTX_EFULL (disk full); MRTX_ESTORE (I/O, permissions, a missing
 *   parent directory); MRTX_ENOMEM.
 */
int mrtx_backup(mrtx_db *db, const char *dest_dir);

/* ======================================================================
 * Schema toolkit: key builders and atomic secondary indexes.
 *
 * On a sorted store the schema is the key design.  The functions below
 * give the well-known HBase/Cassandra techniques as a small API:
 * order-preserving composite keys (mrtx_key_*) and secondary indexes that
 * mrtx_put / mrtx_delete / mrtx_delete_row keep up to date inside the same
 * transaction (mrtx_create_index, mrtx_index_scan).
 * ====================================================================== */

/**
 * An order-preserving composite key under construction.
 *
 * Append components left to right; memcmp order of two finished keys built
 * from the same sequence of component types equals the order of their value
 * tuples (first component first).  Every append is checked against
 * MRTX_MAX_KEY bytes: the first failure is recorded in err and makes every
 * later append a no-op returning the same code (sticky), so a key can be
 * built with unchecked appends and checked once with mrtx_key_finish.
 *
 * The struct is plain data owned by the caller (stack allocation is the
 * intended use); there is nothing to free.  Initialise with mrtx_key_init
 * or MRTX_KEY_INIT.  Component encodings:
 *
 *   bytes      escaped: 0x00 -> 0x00 0xFF, then the terminator 0x00 0x01,
 *              so any byte is allowed and a prefix sorts before its
 *              extensions ("ab" < "ab\0" < "abc"); size n + (#NULs) + 2
 *   u32 / u64  big-endian, 4 / 8 bytes
 *   i32 / i64  big-endian with the sign bit flipped (negatives first)
 *   rts        UINT64_MAX - v as u64: descending order (newest first for
 *              a timestamp; any u64 can be reversed this way)
 *   fixed      the bytes as they are: a fixed-width component (all keys
 *              must use the same width at this position to compare well)
 *   hash       the first n (1..32) bytes of SHA-256(component): spreads
 *              keys evenly; fixed width n
 *   salt       one byte, (first 8 bytes of SHA-256(component), big-endian)
 *              mod buckets: spreads monotonically increasing keys over
 *              `buckets` ranges (a reader scans every bucket)
 */
typedef struct mrtx_key {
	uint8_t buf[MRTX_MAX_KEY]; /* the key so far */
	size_t size;               /* bytes used in buf */
	int err;                   /* first append error (sticky), or 0 */
} mrtx_key;

#define MRTX_KEY_INIT { { 0 }, 0, 0 }

/** Reset k to the empty key with no error.  k must not be NULL. */
void mrtx_key_init(mrtx_key *k);

/**
 * Append a byte string component (escaped, self-delimiting).
 * @param k  the key; NULL returns MRTX_EINVAL.
 * @param b  the bytes (borrowed; data may be NULL only when size is 0).
 * @return MRTX_OK; MRTX_ETOOBIG (the key would exceed MRTX_MAX_KEY; k keeps
 *   its old content); MRTX_EINVAL; or the sticky error of an earlier append.
 */
int mrtx_key_bytes(mrtx_key *k, mrtx_bytes b);

/** mrtx_key_bytes of a NUL-terminated string (without its NUL).  Errors as
 *  mrtx_key_bytes; a NULL s is MRTX_EINVAL. */
int mrtx_key_str(mrtx_key *k, const char *s);

/** Append an unsigned integer, big-endian (4 / 8 bytes).  Errors as
 *  mrtx_key_bytes. */
int mrtx_key_u32(mrtx_key *k, uint32_t v);
int mrtx_key_u64(mrtx_key *k, uint64_t v);

/** Append a signed integer, big-endian with the sign bit flipped so that
 *  negative values sort first (4 / 8 bytes).  Errors as mrtx_key_bytes. */
int mrtx_key_i32(mrtx_key *k, int32_t v);
int mrtx_key_i64(mrtx_key *k, int64_t v);

/** Append a reverse timestamp: UINT64_MAX - ts, big-endian, so larger
 *  values (newer timestamps) sort first.  Errors as mrtx_key_bytes. */
int mrtx_key_rts(mrtx_key *k, uint64_t ts);

/** Append b as it is, a fixed-width component (the parser is told the
 *  width).  Errors as mrtx_key_bytes. */
int mrtx_key_fixed(mrtx_key *k, mrtx_bytes b);

/**
 * Append the first n bytes of SHA-256(component) (OpenSSL): a hash prefix
 * that spreads keys uniformly.  Usually followed by the component itself.
 * @return MRTX_OK; MRTX_EINVAL (n outside 1..32, NULL data with size > 0);
 *   MRTX_ETOOBIG; or the sticky error.
 */
int mrtx_key_hash(mrtx_key *k, mrtx_bytes component, size_t n);

/**
 * Append one salt byte: SHA-256(component)'s first 8 bytes (big-endian)
 * mod buckets.  The same component always lands in the same bucket.
 * @return MRTX_OK; MRTX_EINVAL (buckets outside 1..256); MRTX_ETOOBIG; or
 *   the sticky error.
 */
int mrtx_key_salt(mrtx_key *k, mrtx_bytes component, unsigned buckets);

/**
 * Finish: *out points into k->buf (valid while k is unchanged and alive).
 * @return MRTX_OK, or k's sticky error (then *out is the empty string);
 *   MRTX_EINVAL for NULL arguments.
 */
int mrtx_key_finish(const mrtx_key *k, mrtx_bytes *out);

/**
 * The exclusive upper bound of every key that starts with prefix: prefix
 * with trailing 0xFF bytes dropped and the last remaining byte incremented.
 * Use [prefix, end) as a scan range to visit exactly the keys with that
 * prefix.  When prefix is empty or all 0xFF, out is the empty key, which
 * mrtx_scan_spec reads as "unbounded".  out may equal prefix.
 * @return MRTX_OK; MRTX_EINVAL (NULL); prefix's sticky error.
 */
int mrtx_key_prefix_end(mrtx_key *out, const mrtx_key *prefix);

/** Component types for mrtx_key_parse. */
typedef enum mrtx_key_type {
	MRTX_KEY_BYTES = 1, /* .bytes (decoded into the caller's buffer) */
	MRTX_KEY_U32,       /* .u */
	MRTX_KEY_U64,       /* .u */
	MRTX_KEY_I32,       /* .i */
	MRTX_KEY_I64,       /* .i */
	MRTX_KEY_RTS,       /* .u: the timestamp given to mrtx_key_rts */
	MRTX_KEY_FIXED,     /* .bytes, width bytes (pointing into the key) */
	MRTX_KEY_HASH,      /* .bytes, width bytes (pointing into the key) */
	MRTX_KEY_SALT       /* .u: the bucket */
} mrtx_key_type;

/** One component: type and width are inputs, the rest outputs. */
typedef struct mrtx_key_part {
	mrtx_key_type type;
	size_t width;        /* MRTX_KEY_FIXED and MRTX_KEY_HASH: bytes */
	mrtx_bytes bytes;    /* BYTES, FIXED, HASH */
	uint64_t u;          /* U32, U64, RTS, SALT */
	int64_t i;           /* I32, I64 */
} mrtx_key_part;

/**
 * Split key back into components of the given types (the inverse of the
 * appends): parts[i].type (and .width) say what to expect; the values are
 * written to parts[i].  The whole key must be consumed.
 *
 * @param parts   nparts components; types in, values out.
 * @param key     the key (borrowed).
 * @param buf     scratch for decoded BYTES components, bufsize >= key.size
 *                bytes; parts[].bytes point into buf or into key, so both
 *                must outlive the use of parts.
 * @return MRTX_OK; MRTX_EINVAL (NULL arguments, unknown type, a bad width,
 *   buf too small, or a key that does not match the types: truncated,
 *   malformed escape, trailing bytes).
 */
int mrtx_key_parse(mrtx_key_part *parts, size_t nparts, mrtx_bytes key, uint8_t *buf,
                   size_t bufsize);

/**
 * Format parsed components for display, e.g. ("alice", 42, -7, ts 1700, 0x0a1b):
 * BYTES quoted with \xNN escapes for non-printable bytes, integers in
 * decimal, RTS as "ts N", SALT as "salt N", FIXED/HASH in hex.  Always
 * NUL-terminates when outsize > 0.
 * @return MRTX_OK; MRTX_ETOOBIG (truncated); MRTX_EINVAL.
 */
int mrtx_key_format(char *out, size_t outsize, const mrtx_key_part *parts, size_t nparts);

/** A (family, qualifier) pair naming a column. */
typedef struct mrtx_column {
	const char *family;
	mrtx_bytes qualifier;
} mrtx_column;

#define MRTX_INDEX_SPEC_VERSION 1

/** The family of every index table (created by mrtx_create_index). */
#define MRTX_INDEX_FAMILY "i"

/**
 * A secondary index: for every source row whose cell (table, family,
 * qualifier) holds a value v, the index table holds one row
 *
 *     row key  = mrtx_key_bytes(v) . mrtx_key_bytes(source row)
 *     MRTX_INDEX_FAMILY : "r"            -> the source row key (reference)
 *     MRTX_INDEX_FAMILY : "c" . n        -> copy of cluster[n]'s value (u8 n),
 *                                           when the source row has it
 *
 * so index rows sort by value, then by source row.  With ncluster == 0 the
 * index is non-clustered (a lookup then reads the source row); otherwise
 * the listed cells are copied (clustered: a lookup needs no second read).
 *
 * Key size: the index row key is a row of the index table, so it obeys the
 * row limits: with k = v + z(v) + r + z(r) + 4 bytes (v, r the value's and
 * the source row's sizes, z() their number of 0x00 bytes), k must be at most
 * MRTX_MAX_ROW and k + (number of 0x00 bytes in the key, which is z(v) +
 * z(r) + 2) + 18 at most MRTX_MAX_KEY.  A put of a value that breaks this
 * fails with MRTX_ETOOBIG and buffers nothing; a stored value that breaks it
 * (written before the declaration) stops the backfill with MRTX_ETOOBIG: the
 * declaration stays and later writes are maintained, but that row has no
 * index entry until its value is shortened and mrtx_create_index is called
 * again.  A source cell whose own key cannot fit (a long row full of 0x00
 * bytes and the indexed qualifier) can never exist, and reads as absent.
 */
typedef struct mrtx_index_spec {
	int version;                 /* MRTX_INDEX_SPEC_VERSION */
	const char *name;            /* 1..MRTX_MAX_NAME printable, no space / : */
	const char *table;           /* source table (must exist) */
	const char *family;          /* source family (must exist) */
	mrtx_bytes qualifier;        /* source qualifier (<= 250 bytes) */
	const char *index_table;     /* created with MRTX_INDEX_FAMILY if missing */
	const mrtx_column *cluster;  /* cells of the source row to copy, or NULL */
	size_t ncluster;             /* 0 .. 32 */
} mrtx_index_spec;

/**
 * Declare a secondary index, store the declaration in the store's metadata
 * (so every process that opens the store maintains it) and backfill it from
 * the source table's existing rows (in transactions of up to 256 rows).
 *
 * Once declared, mrtx_put, mrtx_delete and mrtx_delete_row on the source
 * column (and on clustered columns) read the old value with mrtx_get in the
 * same transaction and buffer the index row changes beside the data change,
 * so the index commits or aborts with the data and the read is validated
 * at commit: data and index never disagree.  Writes to an index table
 * itself never trigger maintenance (and an index table cannot be a source).
 *
 * Each db handle caches the declarations it read; a transaction's writes
 * are conditional on the cache being current, so a writing transaction that
 * took its declarations before an index was declared (in this or another
 * process) gets MRTX_CONFLICT at commit and, retried (mrtx_run does), reads
 * and maintains the new index.  Writes that committed before the
 * declaration are covered by the backfill.  When the backfill has ended, a
 * second metadata record says so (which, like the declaration, makes
 * writers holding older cached declarations conflict once): a transaction
 * whose snapshot (see mrtx_get) holds it reads the index from that
 * snapshot without needing validation; one whose snapshot predates it
 * reads the index table as it is now and is validated at commit.  While
 * the backfill has not ended -- it runs, or a call was cut short, which
 * nothing finishes until this is called again -- mrtx_index_scan and
 * mrtx_index_lookup return MRTX_ELOCKED: the index table holds only part
 * of the entries.  Calling mrtx_create_index again
 * with the identical spec is allowed and re-runs the backfill (it writes
 * only the missing or stale entries).
 *
 * The declaration is written only while the source and index tables exist
 * and no drop or truncate of either has begun, in one step with that check,
 * so a concurrent mrtx_drop_table or mrtx_truncate_table of either table
 * either sees the index and refuses, or makes this call fail with nothing
 * declared.  The tables' roles (an index table belongs to one index and is
 * no source) are checked in that same step against the declarations as
 * they are then, so two concurrent calls cannot give one table two roles:
 * the later is refused (MRTX_EINVAL).  An index table
 * that an unfinished mrtx_drop_index left behind (its record names the
 * table) is dropped first, finishing that drop: the new index gets a new,
 * empty table.  The record of an unfinished drop of an index of the same
 * name that names another table is removed; that table stays, an ordinary
 * table.
 *
 * @return MRTX_OK; MRTX_EINVAL (NULL, bad version or name, ncluster over 32,
 *   source is an index table, index table is a source or used by another
 *   index); MRTX_ENOTABLE / MRTX_ENOFAMILY (source); MRTX_EEXIST (an index of
 *   that name exists with another spec, or index_table exists with other
 *   families); MRTX_ELOCKED (a drop or truncate of table or index_table is
 *   running, or one was cut short: running it again finishes it; or they
 *   kept being dropped or truncated, or other metadata changes kept landing
 *   between the roles check and the write; nothing declared);
 *   MRTX_ECORRUPT (malformed store metadata: a declaration, a table's or an
 *   index drop's record); MRTX_ETOOBIG; MRTX_EFULL; MRTX_ESTORE;
 *   MRTX_ENOMEM; MRTX_EREADONLY (db was opened read-only); the errors of
 *   mrtx_drop_table when an unfinished mrtx_drop_index left index_table
 *   (it is dropped first); errors of the backfill
 *   transactions (MRTX_ELOCKED, ...; the declaration stays and
 *   the call can be repeated).  An index whose declaration call failed is
 *   not complete until a repeated call succeeds.
 */
int mrtx_create_index(mrtx_db *db, const mrtx_index_spec *spec);

/** One index entry, as passed to an mrtx_index_scan callback.  All memory
 *  is owned by the transaction and valid until it ends. */
typedef struct mrtx_index_hit {
	mrtx_bytes value;        /* the indexed value */
	mrtx_bytes row;          /* the source row key */
	const mrtx_cell *cells;  /* clustered copies, as cells of the source row
	                            (table family/qualifier of the source) */
	size_t ncells;
} mrtx_index_hit;

/**
 * Visit the index entries whose value is in [value_start, value_end), in
 * value order (then source row order), descending with reverse.  A
 * value_end of size 0 means unbounded (a value_start of size 0 starts at
 * the lowest value, the empty one).  At most limit entries (0 = all).
 * fn's nonzero return stops the scan and is returned.  The scan reads the
 * index table through the transaction (merged with its own writes, phantom
 * protected at commit).
 * @return MRTX_OK; fn's value; MRTX_EINVAL (NULL, unknown index name);
 *   MRTX_ELOCKED (the index's backfill has not ended: mrtx_create_index is
 *   running, or one was cut short and calling it again completes it);
 *   MRTX_ECORRUPT (a malformed index row); errors of mrtx_scan_open/next (at a past snapshot,
 *   MRTX_ESNAPSHOT once the entries it needs were dropped: index tables
 *   keep one version -- on LMDB from the next write, on RADOS from the
 *   next collection).
 */
int mrtx_index_scan(mrtx_txn *txn, const char *index, mrtx_bytes value_start,
                    mrtx_bytes value_end, int reverse, size_t limit,
                    int (*fn)(const mrtx_index_hit *hit, void *payload), void *payload);

/** mrtx_index_scan of exactly one value (every source row holding it). */
int mrtx_index_lookup(mrtx_txn *txn, const char *index, mrtx_bytes value,
                      int (*fn)(const mrtx_index_hit *hit, void *payload), void *payload);

/**
 * List the store's index declarations, in name order: fn(spec, payload)
 * with a spec valid during the call only.  fn's nonzero return stops and is
 * returned.
 * @return MRTX_OK; fn's value; MRTX_EINVAL; MRTX_ECORRUPT; MRTX_ESTORE;
 *   MRTX_ENOMEM.
 */
int mrtx_indexes(mrtx_db *db, int (*fn)(const mrtx_index_spec *spec, void *payload),
                 void *payload);

/**
 * Drop a secondary index: its declaration, then its index table (whose
 * data and name go as with mrtx_drop_table).  The source table keeps its
 * data and can be dropped afterwards.
 *
 * Two steps.  First one metadata write removes the declaration and leaves
 * a record of the drop naming the index table; like a declaration, it
 * makes writers holding the old declarations (in any process) get
 * MRTX_CONFLICT at commit, and their retry (mrtx_run does it) no longer
 * maintains the index, so no write reaches the index table after it.
 * Lookups of the index fail with MRTX_EINVAL from then on.  Then the index
 * table is dropped with mrtx_drop_table, which removes the record too.
 *
 * If the process dies (or the table drop fails) between the steps, the
 * index is gone and its index table stays as an ordinary table, with the
 * record: mrtx_drop_index of the same name, or mrtx_drop_table of the
 * table, finishes the job (the table cannot be truncated meanwhile:
 * mrtx_truncate_table refuses it).  If that table has become the index
 * table of another index meanwhile, the repeated mrtx_drop_index removes
 * only the record.  The record names the table by name and identity: a
 * table created later under the same name (after the process died between
 * dropping the index table and removing the record, say) is never dropped
 * for it; the repeated call then removes only the record.
 *
 * @return MRTX_OK; MRTX_EINVAL (NULL, empty or too long name, no index or
 *   unfinished drop of that name); MRTX_EREADONLY (db opened read-only);
 *   MRTX_ECORRUPT (a malformed declaration or drop record); MRTX_EFULL;
 *   MRTX_ESTORE; MRTX_ENOMEM; and the errors of mrtx_drop_table on the index
 *   table (MRTX_ELOCKED, MRTX_CONFLICT, ...), which leave the index dropped
 *   and its table to a repeated call.
 */
int mrtx_drop_index(mrtx_db *db, const char *name);

/* ======================== end of schema toolkit ======================= */

#ifdef __cplusplus
}
#endif
#endif /* MRTX_H */
