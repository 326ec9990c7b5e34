/*
 * lmdb_layout.h - data.mdb as LMDB 0.9 lays it out on a 64-bit host, for
 * the files that read it with plain reads instead of through LMDB
 * (lmdb_file.c before an open, lmdb_deep*.c for `mrtx check --deep`).
 *
 * The structures are mdb.c's; every field is read by offset, little-endian
 * (the host's, as LMDB writes them):
 *
 *   MDB_page   pgno u64 @0 | pad u16 @8 | flags u16 @10 |
 *              lower u16 @12, upper u16 @14 (an overflow page: its page
 *              count u32 @12) | node offsets u16[] @16
 *              a page holds (lower - 16) / 2 nodes; the nodes lie between
 *              upper and the page's end
 *   MDB_node   lo u16 @0 | hi u16 @2 | flags u16 @4 | ksize u16 @6 |
 *              key @8 | data after the key (no padding)
 *              leaf: data size lo | hi << 16; F_BIGDATA: the data is the
 *              u64 number of its first overflow page
 *              branch: no data; the child's page number is
 *              lo | hi << 16 | flags << 32 (NODEPGNO)
 *   MDB_meta   at 16 in pages 0 and 1: magic u32 @0 | version u32 @4 |
 *              address u64 @8 | map size u64 @16 | MDB_db[2] @24 |
 *              last page u64 @120 | transaction id u64 @128
 *   MDB_db     pad u32 @0 (the free database's: the page size) |
 *              flags u16 @4 | depth u16 @6 | branch, leaf and overflow
 *              pages, entries, root: u64 @8, @16, @24, @32, @40
 *
 * Database 0 is LMDB's free list (keys: u64 transaction ids; data: u64
 * count n, then n page numbers freed by that transaction, descending),
 * database 1 the main one, which holds everything of an mrtx store.
 */
#ifndef MRTX_LMDB_LAYOUT_H
#define MRTX_LMDB_LAYOUT_H

#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#define LF_PAGE_HDR 16u      /* PAGEHDRSZ */
#define LF_NODE_HDR 8u       /* NODESIZE */
#define LF_P_BRANCH 0x01u
#define LF_P_LEAF 0x02u
#define LF_P_OVERFLOW 0x04u
#define LF_P_META 0x08u
#define LF_F_BIGDATA 0x01u   /* node flags */
#define LF_F_SUBDATA 0x02u
#define LF_F_DUPDATA 0x04u
#define LF_MAX_KEY 511u      /* MDB_MAXKEYSIZE */
#define LF_MAX_DEPTH 32u     /* CURSOR_STACK: the deepest tree LMDB walks */
#define LF_INTEGERKEY 0x08u  /* MDB_INTEGERKEY: the free database's flags */
#define LF_MAGIC 0xBEEFC0DEu
#define LF_DATA_VERSION 1u
#define LF_NO_PAGE UINT64_MAX /* P_INVALID: an empty database */
#define LF_META_BYTES (LF_PAGE_HDR + 136u)
#define LF_MIN_PSIZE 512u
#define LF_MAX_PSIZE 65536u

static inline uint16_t lf_get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t lf_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t lf_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

typedef struct lf_db {
	uint32_t pad;
	uint16_t flags, depth;
	uint64_t branch, leaf, overflow, entries, root;
} lf_db;

typedef struct lf_meta {
	uint64_t address, map_size, last_pg, txnid;
	uint32_t psize, version;
	lf_db db[2]; /* 0: the free list, 1: the main database */
} lf_meta;

/*
 * Meta page `page` (0 or 1) from p[0..LF_META_BYTES): 0, or 1 with *why
 * saying what is wrong (a static string) and, when the page is LMDB's but
 * of another data version, *other set.  Checks the page header, magic,
 * version, page size and the transaction id's parity; not the page's
 * numbers against the file (lf_meta_bounds).
 */
int lf_meta_parse(const uint8_t *p, unsigned page, lf_meta *m, const char **why, int *other);
/* The largest map size a store may have: 2^47 bytes, a process's address
 * space on x86-64 (mrtx_open refuses more, so that no store records a map
 * size another host could not map). */
#define LF_MAP_MAX ((uint64_t)1 << 47)
/* The last page, the roots and the map size of meta page m: NULL, or what
 * is wrong. */
const char *lf_meta_bounds(const lf_meta *m);
/*
 * The file may end before the meta page's last page: LMDB counts a page as
 * taken once a write transaction takes it, but writes it only if it still
 * holds data at the commit, so the highest pages taken and freed again in
 * one transaction never reach the file (they are on the free list).  Each
 * page past the end is then listed there, in 8 bytes of the file: a last
 * page further out than that allows is truncation or damage.
 */
static inline int lf_pages_plausible(uint64_t fsize, uint32_t psize, uint64_t last_pg)
{
	return last_pg < fsize / psize + fsize / 8;
}
/* Are pages fsize / psize .. m's last page (past the end of the file) all
 * on m's free list, which is itself sound?  *holds says; returns 0,
 * MRTX_ENOMEM or MRTX_ESTORE (lmdb_deep.c). */
int lf_free_holds(int fd, uint64_t fsize, const lf_meta *m, int *holds);
/* Read n bytes at off; fewer at the end of the file; -1 with errno. */
ssize_t lf_read_at(int fd, void *buf, size_t n, uint64_t off);

#endif
