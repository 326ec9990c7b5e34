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
 *  - Output parameters come first and are named out; the caller owns what
 *    *out returns and frees it with the matching _close/_free/_abort, each of
 *    which accepts NULL.
 *  - Inputs of type mrtx_bytes are borrowed for the duration of the call
 *    only; mrtx copies what it keeps.
 *
 * Data model: (table, row, family:qualifier) -> value.  Rows and qualifiers
 * are arbitrary byte strings (NUL allowed); rows sort by memcmp, cells in a
 * row by family (in declaration order) then qualifier (memcmp).
 *
 * Limits (enforced with MRTX_ETOOBIG / MRTX_EINVAL, never truncation):
 *  - row:        1 .. MRTX_MAX_ROW bytes, and the encoded cell key must fit:
 *                row_size + (number of 0x00 bytes in row) + 3 + qualifier_size
 *                <= MRTX_MAX_KEY (511, LMDB's key limit).  A row without NUL
 *                bytes and a qualifier of up to 250 bytes always fit when the
 *                row is at most 258 bytes.
 *  - qualifier:  0 .. MRTX_MAX_KEY - 4 bytes, subject to the rule above.
 *  - value:      0 .. MRTX_MAX_VALUE bytes.
 *  - table name: 1 .. MRTX_MAX_NAME printable ASCII bytes, no '/'.
 *  - family:     1 .. MRTX_MAX_NAME printable ASCII bytes; at most
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

#define MRTX_VERSION_STRING "0.1.0"

#define MRTX_MAX_KEY 511u
#define MRTX_MAX_ROW 508u
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
	MRTX_ECORRUPT,          /* malformed lock record or store metadata */
	MRTX_ENOMEM,            /* allocation failed */
	MRTX_ESTORE,            /* the store (LMDB, file system) failed */
	/* additions beside the fixed codes */
	MRTX_ENOFAMILY,         /* no such family in the table */
	MRTX_ENOTSTORE,         /* path is not an mrtx store (or a newer format) */
	MRTX_EFULL,             /* the store's map is full: reopen with a larger map_size */
	MRTX_EBADTXN,           /* the transaction already failed; only abort is allowed */
	MRTX_EEXIST             /* table exists with different families */
};

/** Durability of each store write (mrtx_options.durability). */
enum {
	MRTX_SYNC = 0,       /* fsync data and meta page: survives an OS crash (default) */
	MRTX_NOMETASYNC = 1, /* fsync data, not the meta page: an OS crash may lose the last commit */
	MRTX_NOSYNC = 2      /* no fsync: a killed process loses nothing, an OS crash may */
};

#define MRTX_OPTIONS_VERSION 1

/**
 * Options for mrtx_open.  Initialise with MRTX_OPTIONS_INIT, then change
 * fields; a zero field means "the default" where noted.
 */
typedef struct mrtx_options {
	int version;           /* MRTX_OPTIONS_VERSION */
	int durability;        /* MRTX_SYNC (default), MRTX_NOMETASYNC, MRTX_NOSYNC */
	size_t map_size;       /* bytes the store may grow to; 0 = 1 GiB.  A larger
	                          value than the file's grows it; never shrinks */
	unsigned file_mode;    /* mode of created files; 0 = 0600 */
	uint32_t lock_ttl_ms;  /* lock expiry for this process's txns; 0 = 5000 */
	uint32_t lock_wait_ms; /* how long a reader waits for a live lock before
	                          MRTX_ELOCKED; 0 = 50 */
	int unbatched;         /* nonzero: every row write is its own store call
	                          (as on a distributed engine); for tests */
} mrtx_options;

#define MRTX_OPTIONS_INIT { MRTX_OPTIONS_VERSION, MRTX_SYNC, 0, 0, 0, 0, 0 }

/**
 * Open (creating if needed) the store in directory `path`.
 *
 * The directory is created (mode 0700) if missing.  Opening the same store
 * twice in one process shares one environment (LMDB forbids two); after
 * fork() the child must open the store anew.  Stale LMDB reader slots left by
 * killed processes are cleared.  Failpoints in MRTX_FAILPOINTS are armed.
 *
 * @param out   receives the handle; close it with mrtx_close.
 * @param path  store directory.
 * @param opts  options, or NULL for the defaults.
 * @return MRTX_OK; MRTX_EINVAL (NULL argument, bad option version or value);
 *   MRTX_ENOTSTORE (path is a file, another LMDB database, or a newer format);
 *   MRTX_ECORRUPT (metadata unreadable); MRTX_ESTORE (I/O, permissions);
 *   MRTX_ENOMEM.
 */
int mrtx_open(mrtx_db **out, const char *path, const mrtx_options *opts);

/** Close a store.  Every transaction of it must be finished.  NULL is a no-op. */
void mrtx_close(mrtx_db *db);

/**
 * Create a table with a fixed list of families.  Idempotent: creating an
 * existing table with the identical family list succeeds.
 * @return MRTX_OK; MRTX_EINVAL (bad name, no or duplicate families);
 *   MRTX_ETOOBIG (name or family count over the limits); MRTX_EEXIST (the
 *   table exists with other families); MRTX_EFULL; MRTX_ESTORE; MRTX_ENOMEM.
 */
int mrtx_create_table(mrtx_db *db, const char *table,
                      const char *const *families, size_t nfamilies);

/**
 * List a table's families.  *out receives a pointer to an array of *count
 * names owned by db, valid until mrtx_close.
 * @return MRTX_OK; MRTX_EINVAL; MRTX_ENOTABLE; MRTX_ESTORE.
 */
int mrtx_table_families(const char *const **out, size_t *count, mrtx_db *db,
                        const char *table);

/**
 * List the store's tables.  Calls fn(name, payload) for each, in name
 * order; a nonzero return from fn stops and is returned.
 * @return MRTX_OK, fn's nonzero value, MRTX_EINVAL, MRTX_ESTORE.
 */
int mrtx_tables(mrtx_db *db, int (*fn)(const char *table, void *payload),
                void *payload);

/**
 * Begin a transaction.  Nothing is written before mrtx_commit.
 * @return MRTX_OK; MRTX_EINVAL (NULL); MRTX_ENOMEM.
 */
int mrtx_begin(mrtx_db *db, mrtx_txn **out);

/** Set this transaction's lock expiry in ms (default: the store's lock_ttl_ms).
 *  @return MRTX_OK; MRTX_EINVAL for NULL or 0. */
int mrtx_txn_set_lock_ttl(mrtx_txn *txn, uint32_t ms);

/**
 * Read one cell, seeing the transaction's own buffered writes.
 *
 * A row locked by another transaction is resolved first (rolled forward or
 * back if its writer is dead or expired), or waited for briefly.
 *
 * @param value  receives the value; its memory is owned by txn and valid
 *   until the transaction ends (commit or abort).
 * @return MRTX_OK; MRTX_NOTFOUND; MRTX_ELOCKED (a live writer holds the row);
 *   MRTX_CONFLICT (the row changed since this transaction first read it: the
 *   transaction cannot commit); MRTX_EINVAL; MRTX_ETOOBIG; MRTX_ENOTABLE;
 *   MRTX_ENOFAMILY; MRTX_ECORRUPT; MRTX_ESTORE; MRTX_ENOMEM; MRTX_EBADTXN.
 */
int mrtx_get(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
             mrtx_bytes qualifier, mrtx_bytes *value);

/**
 * Buffer a put.  Copies its inputs.  Nothing reaches the store before commit.
 * @return MRTX_OK; MRTX_EINVAL; MRTX_ETOOBIG; MRTX_ENOTABLE; MRTX_ENOFAMILY;
 *   MRTX_ENOMEM; MRTX_EBADTXN.  A failed call leaves the transaction as it was.
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
 *   concurrent transaction changed a row this one read or wrote; nothing
 *   was written); MRTX_ELOCKED (a row to write is held by a live
 *   transaction; nothing was written); MRTX_EUNKNOWN (the store failed while
 *   writing the commit point: the transaction may or may not have
 *   committed; readers and `mrtx recover` settle it); MRTX_ESTORE / MRTX_EFULL
 *   (store failure before the commit point; nothing was written);
 *   MRTX_ECORRUPT; MRTX_ENOMEM; MRTX_EBADTXN (an earlier call failed in a way
 *   that dooms the transaction; nothing written); MRTX_EINVAL (NULL).
 */
int mrtx_commit(mrtx_txn *txn);

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
 * buffered writes (deletes hide stored cells).  The rows the scan passes
 * over are validated at commit, so a row inserted into the scanned range by
 * a concurrent commit makes this transaction's commit fail (no phantoms).
 *
 * @return MRTX_OK; MRTX_EINVAL (NULL, qualifier range without family);
 *   MRTX_ENOTABLE; MRTX_ENOFAMILY; MRTX_ETOOBIG; MRTX_ENOMEM; MRTX_EBADTXN.
 */
int mrtx_scan_open(mrtx_txn *txn, const mrtx_scan_spec *spec, mrtx_scanner **out);

/**
 * Next cell.  cell's memory is owned by the transaction, valid until it ends.
 * @return MRTX_OK; MRTX_NOTFOUND at the end; MRTX_ELOCKED; MRTX_CONFLICT;
 *   MRTX_ECORRUPT; MRTX_ESTORE; MRTX_ENOMEM.
 */
int mrtx_scan_next(mrtx_scanner *s, mrtx_cell *cell);

/** Close a scanner (before its transaction ends).  NULL is a no-op. */
void mrtx_scan_close(mrtx_scanner *s);

/**
 * Run fn in a fresh transaction and commit it, retrying MRTX_CONFLICT and
 * MRTX_ELOCKED (from fn or from commit) with jittered exponential backoff,
 * up to max_attempts attempts (<= 0 means 10).  fn's own nonzero return
 * that is not one of those two aborts and is returned.  fn must not commit
 * or abort the transaction.
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
 * "name=action[@N],..." where action is exit | kill | error | sleep:MS and
 * @N fires on the N-th hit only.  NULL or "" disarms all.
 * @return MRTX_OK; MRTX_EINVAL (unknown name or bad syntax; nothing armed).
 */
int mrtx_failpoints_set(const char *spec);

/** Number of times the named failpoint was hit since it was armed (tests);
 *  -1 for an unknown name. */
long mrtx_failpoint_hits(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* MRTX_H */
