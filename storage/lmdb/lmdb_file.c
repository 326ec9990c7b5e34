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
 *                     torn by a write cut short, and LMDB does not read it);
 *                     each root held by the file names itself in its page
 *                     header and is a branch page above depth 1, a leaf at
 *                     depth 1 (roots_check)
 *   the file          at least as long as the newest meta page's last page
 *                     ends -- or, where it ends before (LMDB writes no page
 *                     it took and freed again in one transaction: see
 *                     lf_pages_plausible), holding both roots, with every
 *                     page past its end on a sound free list (read as
 *                     `mrtx check --deep` reads it, lmdb_deep_tree.c)
 *
 * What fails is refused before LMDB opens anything, so a refused open
 * leaves nothing behind (no lock.mdb, no ts.shm, no growth): a file of
 * another kind, or an empty one, is MRTX_ENOTSTORE; damage is MRTX_ECORRUPT
 * with a message naming it.  The pages the meta pages lead to are LMDB's
 * to read; `mrtx check` reads them through it.
 *
 * The layout is LMDB 0.9's on a 64-bit host (lmdb_layout.h), whose fields
 * this reads by offset; `mrtx check --deep` (lmdb_deep.c) parses the meta
 * pages with the same functions.
 */
#include "storage/lmdb/lmdb_int.h"
#include "storage/lmdb/lmdb_layout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static int corrupt(const char *file, const char *what, unsigned page)
{
	return mrtx__seterr(MRTX_ECORRUPT, "%s: meta page %u is damaged (%s): the store "
	                    "cannot be opened; restore it from a backup", file, page, what);
}

int lf_meta_parse(const uint8_t *p, unsigned page, lf_meta *m, const char **why, int *other)
{
	const uint8_t *mm = p + LF_PAGE_HDR;

	*other = 0;
	if (lf_get64(p) != page || !(lf_get16(p + 10) & LF_P_META) ||
	    lf_get32(mm) != LF_MAGIC) {
		*why = "no LMDB meta page header and magic";
		return 1;
	}
	m->version = lf_get32(mm + 4);
	if (m->version != LF_DATA_VERSION) {
		*why = "another LMDB data version";
		*other = 1;
		return 1;
	}
	m->address = lf_get64(mm + 8);
	m->map_size = lf_get64(mm + 16);
	for (int d = 0; d < 2; d++) {
		const uint8_t *db = mm + 24 + 48 * d;

		m->db[d].pad = lf_get32(db);
		m->db[d].flags = lf_get16(db + 4);
		m->db[d].depth = lf_get16(db + 6);
		m->db[d].branch = lf_get64(db + 8);
		m->db[d].leaf = lf_get64(db + 16);
		m->db[d].overflow = lf_get64(db + 24);
		m->db[d].entries = lf_get64(db + 32);
		m->db[d].root = lf_get64(db + 40);
	}
	m->psize = m->db[0].pad;
	m->last_pg = lf_get64(mm + 120);
	m->txnid = lf_get64(mm + 128);
	if (m->psize < LF_MIN_PSIZE || m->psize > LF_MAX_PSIZE || (m->psize & (m->psize - 1))) {
		*why = "impossible page size";
		return 1;
	}
	/* transaction N writes meta page N % 2; id 0 is the empty store's, on both */
	if (m->txnid != 0 && (m->txnid & 1) != page) {
		*why = "transaction id of the other page's parity";
		return 1;
	}
	return 0;
}

/* The newest meta page's pages: the older one's are not read by LMDB, and
 * may be torn (a meta page's write cut short leaves its old transaction
 * id, written last, under new roots). */
const char *lf_meta_bounds(const lf_meta *m)
{
	if (m->last_pg < 1 || m->last_pg > (UINT64_MAX >> 17))
		return "impossible last page";
	/* (LMDB maps the meta page's map size whatever the opener asks: one
	 * past any address space fails every open with ENOMEM) */
	if (m->map_size > LF_MAP_MAX)
		return "a map size past any address space";
	for (int d = 0; d < 2; d++)
		if (m->db[d].root != LF_NO_PAGE && (m->db[d].root < 2 || m->db[d].root > m->last_pg))
			return "a database root outside the file's pages";
	return NULL;
}

/* Meta page `page` of the file, at p (LF_META_BYTES). */
static int meta_read(const char *file, const uint8_t *p, unsigned page, lf_meta *m)
{
	const char *why;
	int other;

	if (lf_meta_parse(p, page, m, &why, &other) == 0)
		return 0;
	if (other)
		return mrtx__seterr(MRTX_ENOTSTORE, "%s: LMDB data version %u, not %u: written by "
		                    "another LMDB", file, m->version, LF_DATA_VERSION);
	return corrupt(file, why, page);
}

ssize_t lf_read_at(int fd, void *buf, size_t n, uint64_t off)
{
	uint8_t *b = buf;
	size_t got = 0;

	if (off > (uint64_t)INT64_MAX - n)
		return 0; /* (past any file) */
	while (got < n) {
		ssize_t r = pread(fd, b + got, n - got, (off_t)(off + got));

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

	/* (O_NONBLOCK: a FIFO put there must not hold the open up) */
	if (n < 0 || (size_t)n >= sizeof(file) ||
	    (fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
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

/*
 * Each database's root page, where the file holds it, is the page its
 * meta page names (its header's page number) and of the kind its depth
 * says: a branch above one level, a leaf at one.  A meta page pointing at
 * another sound page sends LMDB into a part of the tree as if it were the
 * whole: empty or short results, not an error.  (A writer of another
 * process may free and reuse the root between the reads; check_fd's
 * caller reads again before it reports.)
 */
static int roots_check(const char *file, int fd, uint64_t fsize, const lf_meta *m)
{
	for (int d = 0; d < 2; d++) {
		uint8_t h[LF_PAGE_HDR];
		uint16_t flags, want;

		if (m->db[d].root == LF_NO_PAGE || m->db[d].root >= fsize / m->psize)
			continue;
		if (lf_read_at(fd, h, sizeof(h), m->db[d].root * m->psize) != (ssize_t)sizeof(h))
			return mrtx__seterr(MRTX_ESTORE, "%s: %s", file, strerror(errno));
		flags = lf_get16(h + 10);
		want = m->db[d].depth > 1 ? LF_P_BRANCH : LF_P_LEAF;
		if (lf_get64(h) != m->db[d].root || (flags & (LF_P_BRANCH | LF_P_LEAF)) != want)
			return mrtx__seterr(MRTX_ECORRUPT, "%s: the %s database's root, page "
			                    "%llu, is not the %s its newest meta page says it "
			                    "is: the store is damaged (`mrtx check --deep` "
			                    "shows where; restore it from a backup)", file,
			                    d ? "main" : "free",
			                    (unsigned long long)m->db[d].root,
			                    want == LF_P_BRANCH ? "branch page" : "leaf page");
	}
	return 0;
}

static int check_fd(const char *dir, const char *file, int fd)
{
	uint8_t p0[LF_META_BYTES], p1[LF_META_BYTES];
	lf_meta m0, m1;
	const lf_meta *newest;
	const char *why;
	struct stat sb;
	int rc, holds;
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
	if ((n = lf_read_at(fd, p0, sizeof(p0), 0)) < 0)
		return mrtx__seterr(MRTX_ESTORE, "%s: %s", file, strerror(errno));
	if ((size_t)n < sizeof(p0) || lf_get32(p0 + LF_PAGE_HDR) != LF_MAGIC) {
		/* the first meta page is not LMDB's: is the second, at any
		 * page size?  Then the file is a damaged store. */
		for (uint32_t ps = LF_MIN_PSIZE; ps <= LF_MAX_PSIZE; ps *= 2)
			if (lf_read_at(fd, p1, sizeof(p1), ps) == (ssize_t)sizeof(p1) &&
			    lf_get32(p1 + LF_PAGE_HDR) == LF_MAGIC && lf_get64(p1) == 1)
				return corrupt(file, "no LMDB magic", 0);
		return mrtx__seterr(MRTX_ENOTSTORE, "%s: not an mrtx store (no LMDB meta page "
		                    "at its start)", file);
	}
	if ((rc = meta_read(file, p0, 0, &m0)))
		return rc;
	if ((n = lf_read_at(fd, p1, sizeof(p1), m0.psize)) < 0)
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
	if ((why = lf_meta_bounds(newest)))
		return corrupt(file, why, newest == &m0 ? 0 : 1);
	/* (the length after the meta pages were read: a commit of another
	 * process that grew the file in between wrote its pages first) */
	if (fstat(fd, &sb) != 0)
		return mrtx__seterr(MRTX_ESTORE, "%s: %s", file, strerror(errno));
	if ((rc = roots_check(file, fd, (uint64_t)sb.st_size, newest)))
		return rc;
	if ((uint64_t)sb.st_size >= (newest->last_pg + 1) * newest->psize)
		return 0;
	/* (a file may end before its last page: lf_pages_plausible) */
	holds = lf_pages_plausible((uint64_t)sb.st_size, newest->psize, newest->last_pg);
	for (int d = 0; d < 2 && holds; d++)
		holds = newest->db[d].root == LF_NO_PAGE ||
		        newest->db[d].root < (uint64_t)sb.st_size / newest->psize;
	if (holds && (rc = lf_free_holds(fd, (uint64_t)sb.st_size, newest, &holds)))
		return rc;
	if (!holds)
		return mrtx__seterr(MRTX_ECORRUPT, "%s is truncated: %lld bytes, ending before "
		                    "pages its newest commit (LMDB transaction %llu, %llu pages of %u "
		                    "bytes) uses; the store cannot be opened: restore it from a "
		                    "backup", file, (long long)sb.st_size,
		                    (unsigned long long)newest->txnid,
		                    (unsigned long long)newest->last_pg + 1, newest->psize);
	return 0;
}

int lmdb_file_check(const char *dir)
{
	char file[4096];
	int fd, rc, n = snprintf(file, sizeof(file), "%s/data.mdb", dir);

	if (n < 0 || (size_t)n >= sizeof(file))
		return mrtx__seterr(MRTX_EINVAL, "store path too long: %s", dir);
	/* (O_NONBLOCK: a FIFO in its place must not hold the open up;
	 * check_fd refuses what is not a regular file) */
	if ((fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) {
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
