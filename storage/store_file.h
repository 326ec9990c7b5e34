/*
 * store_file.h - a store's file, verified page by page without opening it
 * (`mrtx check --deep`, recovery/check_file.c): what the LMDB backend's
 * deep check reports (storage/lmdb/lmdb_deep*.c).  Apart from store.h:
 * only the deep check, its backend and its callers need it.
 */
#ifndef MRTX_STORE_FILE_H
#define MRTX_STORE_FILE_H

#include "store.h"

#define STORE_NO_PAGE UINT64_MAX

/* One damage: where, and what is wrong. */
typedef struct store_damage {
	uint64_t page;    /* the page it is on (STORE_NO_PAGE: the file as a whole) */
	mrtx_bytes key;   /* the key it concerns (size 0: none) */
	const char *what; /* one line of English */
} store_damage;

typedef struct store_file_stats {
	uint64_t file_bytes;
	uint32_t page_size;     /* 0: no meta page could be read */
	int meta;               /* the meta page walked (0, 1; -1: none usable) */
	uint64_t txnid;         /* its LMDB transaction */
	uint64_t pages;         /* pages it says the file has */
	uint64_t walked;        /* pages read in its trees (overflow pages too) */
	uint64_t free_pages;    /* pages on its free list */
	uint64_t leaked;        /* pages in neither: space LMDB does not reuse */
	unsigned depth;         /* of the main database's tree */
	uint64_t entries;       /* of the main database */
	uint64_t meta_records, tables, locks, cells, history;
	uint64_t damage;        /* every damage found, also those not reported */
	uint64_t unreported;    /* damage beyond what could be kept in memory */
	int opens;              /* the open's own file check passes (0: mrtx_open
	                           refuses the store) */
	int newest;             /* the meta page walked is the newest */
	int meta_damaged;       /* damage reaches the store's metadata records */
	int free_damaged;       /* damage in the free list: a write may reuse a
	                           page in use */
} store_file_stats;

typedef struct store_file_opts {
	/* Each damage, in the order found; nonzero stops (returned). */
	int (*damage)(const store_damage *d, void *payload);
	/* After the walk, each table named by the store's metadata, and
	 * whether damage reaches its key range (may be NULL). */
	void (*table)(const char *name, int damaged, void *payload);
	/* The layer above's check of a lock record: 0 with *commit_ts the
	 * commit timestamp it records (0: none), or nonzero with a reason
	 * (NUL-terminated) in why[0..whylen); tag: the store's (NULL: not
	 * known, the store id record being lost).  NULL: lock records are not
	 * decoded. */
	int (*lock_check)(const void *lock, size_t size, const uint8_t tag[8],
	                  uint64_t *commit_ts, char *why, size_t whylen);
	/* store_opts.lock_order, to recount unsettled lock records (NULL: not
	 * recounted). */
	void (*lock_order)(const void *lock, size_t size, uint8_t *out);
	void *payload;
} store_file_opts;

/*
 * Verify the file of the LMDB store at path page by page, with reads of its
 * own (no LMDB, no map): the meta pages, every page of the main and free
 * databases' trees, overflow pages, the free list, and the records mrtx
 * keeps in the leaves (storage/lmdb/lmdb_deep.c says what is checked).
 * Works on any bytes.  Returns 0 when the walk completed, whatever it found
 * (stats say; o->damage saw each); o->damage's nonzero value;
 * MRTX_ENOTSTORE (no data.mdb at path; a store of a format newer than this
 * mrtx's, whose records it cannot judge), MRTX_ENOTSUP (a RADOS store: no
 * file), MRTX_ESTORE (a read failed; or the store kept changing under
 * three walks), MRTX_ENOMEM, MRTX_EINVAL (path too long).
 */
int store_check_file(const char *path, const store_file_opts *o, store_file_stats *stats);

#endif
