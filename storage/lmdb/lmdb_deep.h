/*
 * lmdb_deep.h - the deep check of an LMDB store's file (store_check_file,
 * `mrtx check --deep`), shared by its three files:
 *
 *   lmdb_deep.c       the meta pages, the walk's driver (a store written
 *                     meanwhile is walked again), the page accounting, the
 *                     damage list and its delivery
 *   lmdb_deep_tree.c  the B-trees: pages, nodes, key order, overflow runs,
 *                     free-list entries
 *   lmdb_deep_rec.c   the records mrtx keeps in the main database's leaves
 *
 * Nothing read from the file is trusted: every page is read with pread
 * into a buffer of its own and every offset, length and page number is
 * checked before use; the walk's recursion is bounded by LMDB's own depth
 * limit and a bitmap of pages seen, so a cycle is reported, not followed.
 */
#ifndef MRTX_LMDB_DEEP_H
#define MRTX_LMDB_DEEP_H

#include "storage/lmdb/lmdb_int.h"
#include "storage/lmdb/lmdb_layout.h"

/* The keys that bound a page's (lo <= key < hi), from its parents; a NULL
 * bound is none.  point: the range is the one key lo (hi unused). */
typedef struct deep_bound {
	const uint8_t *lo, *hi;
	size_t lolen, hilen;
	int point;
} deep_bound;

/* One damage kept until the walk is known to have read one snapshot. */
typedef struct deep_dmg {
	uint64_t page;
	uint8_t *key;
	size_t klen;
	char *what;
} deep_dmg;

typedef struct deep_extent {
	unsigned off, end, i;
} deep_extent;

/* What one tree's walk counted, against its meta page's MDB_db record. */
typedef struct deep_tree {
	uint64_t branch, leaf, overflow, entries;
	int leaf_lvl;    /* the level of its leaves (-1: none yet) */
	int broken;      /* part of it could not be read: counts mean nothing */
} deep_tree;

typedef struct deep_rec deep_rec; /* lmdb_deep_rec.c */

typedef struct deep {
	int fd;
	uint64_t fsize;
	uint32_t psize;
	uint64_t last_pg, txnid; /* of the meta page walked */
	int meta;                /* which one */
	uint8_t *seen;           /* bit per page: in a tree or an overflow run */
	uint8_t *freed;          /* bit per page: on the free list */
	uint8_t *pg[LF_MAX_DEPTH]; /* a page buffer per tree level */
	/* per level, psize bytes: a node's structure is sound (first half), and
	 * also its key in order (second half) */
	uint8_t *ok[LF_MAX_DEPTH];
	/* one page's scratch (psize / 2 entries each): the key order's
	 * run ends, predecessors, run members and candidates; node extents */
	uint32_t *lis, *lis_prev, *lis_keep, *lis_idx;
	struct deep_extent *ext;
	uint8_t *val;            /* a value read from overflow pages */
	size_t valcap;
	uint8_t last[LF_MAX_KEY]; /* the last leaf key of the tree being walked */
	size_t lastlen;
	int have_last;
	int db;                  /* the tree being walked: 0 free list, 1 main */
	deep_tree t;
	deep_rec *rec;
	/* damage */
	deep_dmg *dm;
	size_t ndm, capdm;
	int32_t *kpdiff;         /* 65537: table prefixes damage reaches (as
	                            differences: a range costs two entries) */
	store_file_stats *st;
	const store_file_opts *o;
	int err;                 /* MRTX_ENOMEM or MRTX_ESTORE: the walk stops */
} deep;

#define DEEP_KEEP 10000u /* damage kept in memory; more is counted only */

/* Note damage at page (STORE_NO_PAGE: the file), about key (NULL: none),
 * reaching the keys of r (NULL: no key range: the meta pages' records, the
 * free list). */
void deep_damage(deep *d, uint64_t page, const uint8_t *key, size_t klen, const deep_bound *r,
                 const char *fmt, ...) MRTX_PRINTF(6, 7);

static inline int deep_bit(const uint8_t *map, uint64_t pg)
{
	return map[pg >> 3] >> (pg & 7) & 1;
}

static inline void deep_bit_set(uint8_t *map, uint64_t pg)
{
	map[pg >> 3] |= (uint8_t)(1u << (pg & 7));
}

/* Read page pgno (psize bytes) into buf: 0; 1 past the end of the file;
 * <0 an error (d->err). */
int deep_read_page(deep *d, uint64_t pgno, uint8_t *buf);

/* Walk database db (0: free list, 1: main) from root, counting into d->t;
 * 0 or an error that stops the check (d->err). */
int deep_walk_tree(deep *d, int db, uint64_t root);

/* Records (lmdb_deep_rec.c).  An entry of the main database, in key order;
 * a gap: entries were lost (damage), so what spans it is not judged; the
 * end: whole says the tree was read without a gap. */
int deep_rec_new(deep *d);
void deep_rec_free(deep *d);
void deep_rec_entry(deep *d, uint64_t page, const uint8_t *k, size_t kn, const uint8_t *v,
                    size_t vn);
void deep_rec_gap(deep *d);
void deep_rec_end(deep *d, int whole);
/* 0, or MRTX_ENOTSTORE (message set) when the format record, its seal
 * sound, says a format newer than this mrtx's: its records are not
 * judged, and the damage found is not reported. */
int deep_rec_newer(const deep *d);
/* Each table, whether damage reaches it (d->kpdiff), to o->table. */
void deep_rec_tables(deep *d);

/* Tests only: called between the reads of meta page 0 and meta page 1,
 * with the file's descriptor (a commit landing there). */
extern void (*lmdb_deep_between_metas)(int fd);

#endif
