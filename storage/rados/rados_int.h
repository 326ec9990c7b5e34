/*
 * rados_int.h - internals shared by the RADOS backend's files.
 *
 * Layout (RADOS layout format 1).  A store NAME in pool POOL is a set of
 * objects whose names start with NAME:
 *
 *   NAME.meta       omap: "format" -> "1", "id" -> 16 random bytes,
 *                   "gen" -> u64 BE (metadata generation), "next" -> u32 BE
 *                   (next table id), "t/<table>" -> table record (below),
 *                   and the opaque records of store_meta_* under their keys
 *   NAME.<id>.<seq> one tablet of table <id> (hex), a row range [start,
 *                   next tablet's start), holding in its omap:
 *       0x01 'G'                      u64 BE: the index-declaration
 *                                     generation every row write checks
 *       0x02 . rkey(row)              the row's lock record (never empty)
 *       0x03 . rkey(row) . fid+1 . rqual(qualifier)   a cell
 *       0x04 . rkey_desc(row)         "" : the row in descending order, for
 *                                     reverse scans (omap iterates forward only)
 *
 * rkey/rqual (radoskey.h) never emit 0x00, because librados takes the
 * start_after and filter_prefix of a listing as C strings.  A row's lock
 * and cells live in one object, so one compound op (guarded by omap_cmp on
 * the lock key) writes a row atomically, and one read op reads it from one
 * state.  Rows of one tablet share an op when a phase writes several.
 *
 * Table record: u32 id | u8 nfamilies | (u8 len, name) each | u32 ntablets
 * | (u32 seq, u16 len, start row) each, tablets in row order, the first
 * starting at the empty row.  Tablets are fixed at table creation (a table
 * can be pre-split with split rows).
 */
#ifndef MRTX_RADOS_INT_H
#define MRTX_RADOS_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "storage/store.h"
#include "storage/rados/rados_conn.h"
#include "storage/rados/radoskey.h"
#include "storage/rados/rados_store.h"

#define RFORMAT "1"
#define RK_GEN_0 0x01u
#define RK_LOCK 0x02u
#define RK_CELL 0x03u
#define RK_DESC 0x04u
/* max pairs one listing returns (osd_max_omap_entries_per_request) */
#define RLIST_MAX 1024u
/* rkey of a row: at most 2 bytes per byte + terminator */
#define RKEY_MAX (2u * MRTX_MAX_ROW + 2u)
/* a cell key: tag, rkey(row), fid, rqual(qualifier) */
#define RCELL_MAX (1u + RKEY_MAX + 1u + 2u * MRTX_MAX_KEY)
#define ROID_MAX (RADDR_MAX_NAME + 32u)

typedef struct rtablet {
	uint32_t seq;
	mrtx_bytes start; /* first row (empty for the first tablet) */
	char oid[ROID_MAX];
} rtablet;

typedef struct rtable {
	size_t ntablets;
	rtablet *tablets; /* in row order */
} rtable;

typedef struct rstore {
	store_head head; /* kind STORE_RADOS */
	rconn *conn;
	int unbatched;   /* every op of store_write_rows its own call */
	char *addr;      /* the address it was opened with */
	char *name;      /* object name prefix */
	char meta_oid[ROID_MAX];
	uint8_t id[16];
	pthread_mutex_t mu; /* tables */
	store_table **tables;
	size_t ntables, ctables;
	atomic_ulong write_calls, write_txns, read_txns;
} rstore;

static inline rstore *RS(store *st)
{
	return (rstore *)(void *)st;
}

static inline const rstore *RSC(const store *st)
{
	return (const rstore *)(const void *)st;
}

/* The tablet holding row (binary search on the starts). */
const rtablet *rados_tablet_of(const store_table *t, mrtx_bytes row);
/* Key builders; return the key's size.  buf needs RCELL_MAX bytes. */
/*
 * Group n ops by object so that each object gets one compound op: grp[i]
 * receives op i's group (groups numbered by first appearance), order[] the
 * op indices group by group, start[g] / count[g] where group g's run of
 * order[] begins and how long it is.  Every array holds n entries.
 * Returns the number of groups.
 */
size_t rados_group_by_oid(const char *const *oids, size_t n, size_t *grp, size_t *order,
                          size_t *start, size_t *count);
size_t rados_lock_key(uint8_t *buf, mrtx_bytes row);
size_t rados_desc_key(uint8_t *buf, mrtx_bytes row);
size_t rados_cell_prefix(uint8_t *buf, mrtx_bytes row); /* 0x03 . rkey(row) */
/* The store-call fault hook (store.c) with this backend's error mapping. */
int rados_fault(rstore *rs, const char *step, int write);
#define STORE_FAULT_R(rs, step) \
	(MRTX_UNLIKELY(store__fault_armed) ? rados_fault(rs, step, 0) : 0)
/* The index-declaration generation key. */
extern const uint8_t rados_gen_key[2];

#endif
