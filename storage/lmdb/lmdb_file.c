/*
 * lmdb_file.c - look at data.mdb before LMDB maps it.
 *
 * LMDB trusts its file: a store cut short makes a later read of a page past
 * the end die of SIGBUS, a damaged meta page sends readers to a root that
 * is not one, and an empty data.mdb is quietly made into a new store (by a
 * read command, too).  So every open first reads the two meta pages itself,
 * with plain reads, and checks what can be checked without walking the
 * tree:
 *
 *   each meta page    its page header says P_META at page 0 or 1; LMDB's
 *                     magic and data version; the page size (kept in the
 *                     free database's md_pad) a power of two, 512..64 KiB;
 *                     its transaction id of its page's parity (transaction
 *                     N writes meta page N % 2; id 0 is the empty store's,
 *                     on both)
 *   the pair          transaction ids one apart (or both 0)
 *   the newest        its last page at least 1; each database's root at or
 *                     below its last page, or none (the older page may be
 *                     torn by a write cut short, and LMDB does not read it)
 *   the file          at least as long as the newest meta page's last page
 *                     ends
 *
 * What fails is refused before LMDB opens anything, so a refused open
 * leaves nothing behind (no lock.mdb, no ts.shm, no growth): a file of
 * another kind, or an empty one, is MRTX_ENOTSTORE; damage is MRTX_ECORRUPT
 * with a message naming it.  The pages the meta pages lead to are LMDB's
 * to read; `mrtx check` reads them through it.
 *
 * The layout is LMDB 0.9's on a 64-bit host (mdb.c: MDB_page, MDB_meta,
 * MDB_db), whose fields this reads by offset.
 */
#include "storage/lmdb/lmdb_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE_HDR 16           /* MDB_page: pgno 8, pad 2, flags 2, lower/upper 4 */
#define P_META 0x08
#define META_MAGIC 0xBEEFC0DEu
#define META_VERSION 1u
#define M_PSIZE 24            /* mm_dbs[FREE_DBI].md_pad: the page size */
#define M_DBS 24              /* mm_dbs[2], 48 bytes each */
#define DB_SIZE 48
#define DB_ROOT 40
#define M_LAST_PG 120
#define M_TXNID 128
#define META_BYTES (PAGE_HDR + 136)
#define NO_PAGE UINT64_MAX    /* P_INVALID: an empty database */

typedef struct meta_view {
	uint64_t txnid, last_pg, root[2];
	uint32_t psize;
} meta_view;

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int corrupt(const char *file, const char *what, unsigned page)
{
	return mrtx__seterr(MRTX_ECORRUPT, "%s: meta page %u is damaged (%s): the store "
	                    "cannot be opened; restore it from a backup", file, page, what);
}

/* Meta page `page` of the file, at p (META_BYTES). */
static int meta_read(const char *file, const uint8_t *p, unsigned page, meta_view *m)
{
	const uint8_t *mm = p + PAGE_HDR;

	if (get64(p) != page || !(get16(p + 10) & P_META) || get32(mm) != META_MAGIC)
		return corrupt(file, "no LMDB meta page header and magic", page);
	if (get32(mm + 4) != META_VERSION)
		return mrtx__seterr(MRTX_ENOTSTORE, "%s: LMDB data version %u, not %u: written by "
		                    "another LMDB", file, get32(mm + 4), META_VERSION);
	m->psize = get32(mm + M_PSIZE);
	m->last_pg = get64(mm + M_LAST_PG);
	m->txnid = get64(mm + M_TXNID);
	if (m->psize < 512 || m->psize > 65536 || (m->psize & (m->psize - 1)))
		return corrupt(file, "impossible page size", page);
	if (m->txnid != 0 && (m->txnid & 1) != page)
		return corrupt(file, "transaction id of the other page's parity", page);
	for (int d = 0; d < 2; d++)
		m->root[d] = get64(mm + M_DBS + d * DB_SIZE + DB_ROOT);
	return 0;
}

/* The newest meta page's pages: the older one's are not read by LMDB, and
 * may be torn (a meta page's write cut short leaves its old transaction
 * id, written last, under new roots). */
static int newest_check(const char *file, const meta_view *m, unsigned page)
{
	if (m->last_pg < 1 || m->last_pg > (UINT64_MAX >> 17))
		return corrupt(file, "impossible last page", page);
	for (int d = 0; d < 2; d++)
		if (m->root[d] != NO_PAGE && (m->root[d] < 2 || m->root[d] > m->last_pg))
			return corrupt(file, "a database root outside the file's pages", page);
	return 0;
}

/* Read n bytes at off; a short read is a short file (0 bytes returned). */
static ssize_t read_at(int fd, uint8_t *buf, size_t n, off_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, buf + got, n - got, off + (off_t)got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/*
 * Does another process hold LMDB's lock on lock.mdb (byte 0: exclusive
 * while it sets the store up, shared while it has it open)?  Then a file
 * shorter than its meta pages is one being made now, which LMDB's own
 * locking lets this open wait for.
 */
static int lock_held(const char *dir)
{
	char file[4096];
	struct flock fl;
	int fd, held = 0, n = snprintf(file, sizeof(file), "%s/lock.mdb", dir);

	if (n < 0 || (size_t)n >= sizeof(file) || (fd = open(file, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = 0;
	fl.l_len = 1;
	if (fcntl(fd, F_GETLK, &fl) == 0)
		held = fl.l_type != F_UNLCK;
	close(fd);
	return held;
}

static int check_fd(const char *dir, const char *file, int fd)
{
	uint8_t p0[META_BYTES], p1[META_BYTES];
	meta_view m0, m1;
	const meta_view *newest;
	struct stat sb;
	int rc;
	ssize_t n;

	if (fstat(fd, &sb) != 0)
		return mrtx__seterr(MRTX_ESTORE, "%s: %s", file, strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return mrtx__seterr(MRTX_ENOTSTORE, "%s is not a regular file: not an mrtx store",
		                    file);
	if (sb.st_size < 2 * 512 && lock_held(dir))
		return 0; /* (being made: LMDB waits for its maker) */
	if (sb.st_size == 0)
		return mrtx__seterr(MRTX_ENOTSTORE, "%s is empty (0 bytes): not an mrtx store "
		                    "(remove it, and lock.mdb, to make a new store here)", file);
	if ((n = read_at(fd, p0, sizeof(p0), 0)) < 0)
		return mrtx__seterr(MRTX_ESTORE, "%s: %s", file, strerror(errno));
	if ((size_t)n < sizeof(p0) || get32(p0 + PAGE_HDR) != META_MAGIC) {
		/* the first meta page is not LMDB's: is the second, at any
		 * page size?  Then the file is a damaged store. */
		for (uint32_t ps = 512; ps <= 65536; ps *= 2)
			if (read_at(fd, p1, sizeof(p1), ps) == (ssize_t)sizeof(p1) &&
			    get32(p1 + PAGE_HDR) == META_MAGIC && get64(p1) == 1)
				return corrupt(file, "no LMDB magic", 0);
		return mrtx__seterr(MRTX_ENOTSTORE, "%s: not an mrtx store (no LMDB meta page "
		                    "at its start)", file);
	}
	if ((rc = meta_read(file, p0, 0, &m0)))
		return rc;
	if ((n = read_at(fd, p1, sizeof(p1), m0.psize)) < 0)
		return mrtx__seterr(MRTX_ESTORE, "%s: %s", file, strerror(errno));
	if ((size_t)n < sizeof(p1) && lock_held(dir))
		return 0;
	if ((size_t)n < sizeof(p1))
		return mrtx__seterr(MRTX_ECORRUPT, "%s is truncated: %lld bytes, less than its "
		                    "two meta pages; the store cannot be opened: restore it from a "
		                    "backup", file, (long long)sb.st_size);
	if ((rc = meta_read(file, p1, 1, &m1)))
		return rc;
	if (m1.psize != m0.psize)
		return corrupt(file, "a page size other than meta page 0's", 1);
	if (!(m0.txnid == 0 && m1.txnid == 0) &&
	    (m0.txnid > m1.txnid ? m0.txnid - m1.txnid : m1.txnid - m0.txnid) != 1)
		return corrupt(file, "transaction ids of the two meta pages not one apart",
		               m0.txnid > m1.txnid ? 0 : 1);
	newest = m0.txnid > m1.txnid ? &m0 : &m1;
	if ((rc = newest_check(file, newest, newest == &m0 ? 0 : 1)))
		return rc;
	/* (the length after the meta pages were read: a commit of another
	 * process that grew the file in between wrote its pages first) */
	if (fstat(fd, &sb) != 0)
		return mrtx__seterr(MRTX_ESTORE, "%s: %s", file, strerror(errno));
	if ((uint64_t)sb.st_size < (newest->last_pg + 1) * newest->psize)
		return mrtx__seterr(MRTX_ECORRUPT, "%s is truncated: %lld bytes, but its newest "
		                    "commit (LMDB transaction %llu) uses %llu pages of %u bytes "
		                    "(%llu bytes); the store cannot be opened: restore it from a "
		                    "backup", file, (long long)sb.st_size,
		                    (unsigned long long)newest->txnid,
		                    (unsigned long long)newest->last_pg + 1, newest->psize,
		                    (unsigned long long)((newest->last_pg + 1) * newest->psize));
	return 0;
}

int lmdb_file_check(const char *dir)
{
	char file[4096];
	int fd, rc, n = snprintf(file, sizeof(file), "%s/data.mdb", dir);

	if (n < 0 || (size_t)n >= sizeof(file))
		return mrtx__seterr(MRTX_EINVAL, "store path too long: %s", dir);
	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) < 0) {
		if (errno == ENOENT)
			return 0; /* (no store yet) */
		return mrtx__seterr(MRTX_ESTORE, "cannot read %s: %s", file, strerror(errno));
	}
	/* (a meta page a writer of another process rewrites while it is
	 * read may read torn, and two commits between the reads of the two
	 * pages leave them two ids apart: a failed check is made again, a
	 * moment later, and reported only when it fails three times) */
	for (int tries = 0; tries < 3; tries++) {
		if (tries)
			mrtx__sleep_us(1000u << tries);
		if ((rc = check_fd(dir, file, fd)) == 0 || rc == MRTX_ESTORE)
			break;
	}
	close(fd);
	return rc;
}
