/*
 * lmdb_deep.c - store_check_file for an LMDB store: verify data.mdb page
 * by page without LMDB (lmdb_deep.h; the walk of the trees in
 * lmdb_deep_tree.c, mrtx's records in lmdb_deep_rec.c).
 *
 * The meta pages first, with lmdb_file.c's parser: each must be an LMDB
 * meta page of its number, magic and data version, a possible page size,
 * a transaction id of its parity; the two of one page size and one
 * transaction apart.  The newest is walked if its last page and roots fit
 * and the file can hold its pages (lf_pages_plausible: it may end before
 * the last page, when the pages past its end are free); if not, it is
 * reported and the older one is walked instead (LMDB keeps the older
 * commit's pages until the commit after the newest, so its tree is whole
 * unless damaged too).  The older page's roots are not held against it: a
 * meta page's write cut short leaves them torn, and LMDB never reads them.
 *
 * The walked meta page's records: the main database's flags none (mrtx
 * sets none), the free list's MDB_INTEGERKEY, no fixed map address, a map
 * size holding the file's pages; after each tree's walk, when no part of
 * it was lost, its depth, branch, leaf and overflow pages and entries as
 * its MDB_db record says.  Last, the accounting LMDB's own audit makes:
 * every page from 2 to the last is in a tree or on the free list, never
 * both (a page both would be handed out by the next write while in use).
 * A page in neither is only counted (leaked: space LMDB does not reuse;
 * its compacting copy refuses such a file, lmdb_copy.c).  A page past the
 * end of the file must be free: one in use is read past the end
 * (reported as it is reached), and truncation is reported once more for
 * the file.
 *
 * Nothing pins the snapshot walked (no LMDB reader slot), so a store
 * written meanwhile may overwrite its pages from the third commit after it
 * on: a page leaves the tree in the commit that frees it, and LMDB hands
 * it out only to a writer whose snapshot is newer than that commit.  The
 * meta pages are read again after the walk: a walk is taken if they are
 * unchanged, or if the snapshot walked was the newest and at most one
 * commit came after it (the writer after that one, maybe writing already
 * though in no meta page yet, takes no page freed after the snapshot);
 * otherwise it is made again, three times at most.  Damage is
 * kept in memory until then (DEEP_KEEP records; the count is exact).
 */
#include "storage/lmdb/lmdb_deep.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define ATTEMPTS 3

/* ------------------------------------------------------------ damage */

static unsigned prefix2(const uint8_t *k, size_t n)
{
	return (n > 0 ? (unsigned)k[0] << 8 : 0) | (n > 1 ? k[1] : 0);
}

/* The table prefixes r reaches: keys of table P are P (2 bytes) and
 * longer keys beginning with it.  (A table is readable when no damage
 * reaches its prefix: a scan of it reads only pages within its keys, and
 * the one that follows them, which deep_damage marks too.) */
static void kp_mark(deep *d, const deep_bound *r)
{
	long lo, hi;

	if (r->point) {
		lo = hi = prefix2(r->lo, r->lolen);
	} else {
		lo = r->lo ? (long)prefix2(r->lo, r->lolen) : 0;
		hi = 0xFFFF;
		if (r->hi) { /* keys below hi: hi's prefix too if hi is longer */
			hi = prefix2(r->hi, r->hilen);
			if (r->hilen <= 2)
				hi--;
		}
	}
	if (hi < lo)
		return;
	if (lo < (long)KP_FIRST)
		d->st->meta_damaged = 1;
	d->kpdiff[lo]++;
	d->kpdiff[hi + 1]--;
}

void deep_damage(deep *d, uint64_t page, const uint8_t *key, size_t klen, const deep_bound *r,
                 const char *fmt, ...)
{
	char what[320];
	deep_dmg *m;
	va_list ap;
	size_t wl;

	d->st->damage++;
	if (r && d->db == 1) {
		kp_mark(d, r);
		if (!r->point && d->have_last) {
			/* the damage lies right after the last sound leaf key in
			 * key order: a scan of that key's table, reading on to
			 * where it ends, steps onto it */
			deep_bound at = { d->last, NULL, d->lastlen, 0, 1 };

			kp_mark(d, &at);
		}
	}
	if (d->db == 0)
		d->st->free_damaged = 1;
	if (d->ndm >= DEEP_KEEP) {
		d->st->unreported++;
		return;
	}
	if (d->ndm == d->capdm) {
		size_t cap = d->capdm ? 2 * d->capdm : 16;
		deep_dmg *g = mrtx__reallocarray(d->dm, cap, sizeof(*g));

		if (!g) {
			d->st->unreported++;
			return;
		}
		d->dm = g;
		d->capdm = cap;
	}
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	wl = strlen(what);
	if (!key)
		klen = 0;
	m = &d->dm[d->ndm];
	if (!(m->what = mrtx__malloc(wl + 1 + klen))) {
		d->st->unreported++;
		return;
	}
	memcpy(m->what, what, wl + 1);
	m->key = (uint8_t *)m->what + wl + 1;
	if (klen)
		memcpy(m->key, key, klen);
	m->klen = klen;
	m->page = page;
	d->ndm++;
}

int deep_read_page(deep *d, uint64_t pgno, uint8_t *buf)
{
	ssize_t r = lf_read_at(d->fd, buf, d->psize, pgno * d->psize);

	if (r < 0) {
		d->err = mrtx__seterr(MRTX_ESTORE, "read page %llu of data.mdb: %s",
		                      (unsigned long long)pgno, strerror(errno));
		return d->err;
	}
	return (size_t)r < d->psize;
}

/* ------------------------------------------------------------ meta pages */

typedef struct metas {
	uint8_t raw[2][LF_META_BYTES];
	size_t got[2];
	uint32_t psize; /* 0: neither page is a meta page */
} metas;

void (*lmdb_deep_between_metas)(int fd);

/* Read both meta pages: page 1 where page 0's page size puts it, or, with
 * no page 0, wherever a meta page 1 is found at a possible page size. */
static int metas_read_once(int fd, metas *ms)
{
	lf_meta m;
	const char *why;
	int other;
	ssize_t r;

	memset(ms, 0, sizeof(*ms));
	if ((r = lf_read_at(fd, ms->raw[0], LF_META_BYTES, 0)) < 0)
		return -1;
	ms->got[0] = (size_t)r;
	if (ms->got[0] == LF_META_BYTES && lf_meta_parse(ms->raw[0], 0, &m, &why, &other) == 0)
		ms->psize = m.psize;
	if (lmdb_deep_between_metas)
		lmdb_deep_between_metas(fd);
	for (uint32_t ps = LF_MIN_PSIZE; !ms->psize && ps <= LF_MAX_PSIZE; ps *= 2) {
		if ((r = lf_read_at(fd, ms->raw[1], LF_META_BYTES, ps)) < 0)
			return -1;
		if ((size_t)r == LF_META_BYTES && lf_meta_parse(ms->raw[1], 1, &m, &why, &other) == 0)
			ms->psize = ps;
	}
	if (!ms->psize)
		return 0;
	if ((r = lf_read_at(fd, ms->raw[1], LF_META_BYTES, ms->psize)) < 0)
		return -1;
	ms->got[1] = (size_t)r;
	return 0;
}

/* Both meta pages as they were at one instant.  A writer may commit
 * between the two reads (any number of times, if this process is
 * descheduled there), and a pair read across commits looks like damage
 * (transactions not one apart).  LMDB writes the two pages by turns, so a
 * page 0 unchanged when read again after page 1 means page 1 was read
 * while page 0 held that value: the pair existed.  Else read both again
 * (META_READS times at most; a pair still torn then is caught by the walk's
 * own re-read, still()). */
#define META_READS 16
static int metas_read(int fd, metas *ms)
{
	uint8_t again[LF_META_BYTES];
	ssize_t r;

	for (int i = 0;; i++) {
		if (metas_read_once(fd, ms) || (r = lf_read_at(fd, again, LF_META_BYTES, 0)) < 0)
			return -1;
		if (((size_t)r == ms->got[0] && memcmp(again, ms->raw[0], ms->got[0]) == 0) ||
		    i + 1 == META_READS)
			return 0;
	}
}

/* Parse and judge the meta pages: 0 with d->meta the one to walk (-1:
 * none), m[d->meta] its fields. */
static void metas_judge(deep *d, const metas *ms, lf_meta m[2])
{
	int ok[2], newest, other;
	const char *why;

	d->meta = -1;
	if (!ms->psize) {
		deep_damage(d, STORE_NO_PAGE, NULL, 0, NULL, "no LMDB meta page at page 0 or 1: "
		            "not an LMDB file, or both of its meta pages are destroyed");
		return;
	}
	for (int i = 0; i < 2; i++) {
		ok[i] = 0;
		if (ms->got[i] < LF_META_BYTES)
			deep_damage(d, (uint64_t)i, NULL, 0, NULL, "meta page %d: past the end of the "
			            "file", i);
		else if (lf_meta_parse(ms->raw[i], (unsigned)i, &m[i], &why, &other) && other)
			deep_damage(d, (uint64_t)i, NULL, 0, NULL, "meta page %d: LMDB data version "
			            "%u, not %u", i, m[i].version, LF_DATA_VERSION);
		else if (lf_meta_parse(ms->raw[i], (unsigned)i, &m[i], &why, &other))
			deep_damage(d, (uint64_t)i, NULL, 0, NULL, "meta page %d: %s", i, why);
		else
			ok[i] = 1;
	}
	if (ok[0] && ok[1] && m[0].psize != m[1].psize) {
		deep_damage(d, 1, NULL, 0, NULL, "meta page 1: a page size other than meta page "
		            "0's");
		ok[1] = 0;
	}
	newest = ok[0] && ok[1] ? m[1].txnid > m[0].txnid : ok[1];
	if (!ok[newest])
		return;
	if (ok[0] && ok[1] && (m[0].txnid || m[1].txnid) &&
	    m[newest].txnid - m[!newest].txnid != 1)
		deep_damage(d, (uint64_t)newest, NULL, 0, NULL, "meta pages 0 and 1: LMDB "
		            "transactions %llu and %llu, not one apart: one of them is damaged",
		            (unsigned long long)m[0].txnid, (unsigned long long)m[1].txnid);
	for (int i = newest, tries = 0; tries < 2 && ok[i]; i = !i, tries++) {
		if ((why = lf_meta_bounds(&m[i]))) {
			deep_damage(d, (uint64_t)i, NULL, 0, NULL, "meta page %d (LMDB transaction "
			            "%llu): %s", i, (unsigned long long)m[i].txnid, why);
		} else if (!lf_pages_plausible(d->fsize, m[i].psize, m[i].last_pg)) {
			deep_damage(d, STORE_NO_PAGE, NULL, 0, NULL, "data.mdb is truncated: %llu "
			            "bytes, but meta page %d (LMDB transaction %llu) has %llu pages of "
			            "%u bytes, more past its end than a free list could hold",
			            (unsigned long long)d->fsize, i, (unsigned long long)m[i].txnid,
			            (unsigned long long)m[i].last_pg + 1, m[i].psize);
		} else {
			d->meta = i;
			d->st->newest = i == newest;
			return;
		}
	}
}

/* The walked meta page's records beside its trees. */
static void meta_records(deep *d, const lf_meta *m)
{
	uint64_t used = (m->last_pg + 1) * (uint64_t)m->psize;

	if (m->db[1].flags)
		deep_damage(d, (uint64_t)d->meta, NULL, 0, NULL, "meta page %d: the main "
		            "database's flags are 0x%x (an mrtx store's are 0)", d->meta,
		            m->db[1].flags);
	if (m->db[0].flags != LF_INTEGERKEY)
		deep_damage(d, (uint64_t)d->meta, NULL, 0, NULL, "meta page %d: the free list's "
		            "flags are 0x%x (LMDB's are 0x%x)", d->meta, m->db[0].flags,
		            LF_INTEGERKEY);
	if (m->address)
		deep_damage(d, (uint64_t)d->meta, NULL, 0, NULL, "meta page %d: a fixed map "
		            "address 0x%llx (mrtx never maps a store at a fixed address)", d->meta,
		            (unsigned long long)m->address);
	if (m->map_size < used || m->map_size > LF_MAP_MAX)
		deep_damage(d, (uint64_t)d->meta, NULL, 0, NULL, "meta page %d: a map size of %llu "
		            "bytes, for %llu bytes of pages", d->meta,
		            (unsigned long long)m->map_size, (unsigned long long)used);
}

/* A tree's counts against its MDB_db record, when none of it was lost. */
static void db_compare(deep *d, const lf_db *r)
{
	const char *name = d->db ? "main database" : "free list";
	uint64_t depth = d->t.leaf_lvl < 0 ? 0 : (uint64_t)d->t.leaf_lvl + 1;
	const struct {
		const char *what;
		uint64_t rec, got;
	} f[] = { { "levels", r->depth, depth }, { "branch pages", r->branch, d->t.branch },
		  { "leaf pages", r->leaf, d->t.leaf },
		  { "overflow pages", r->overflow, d->t.overflow },
		  { "entries", r->entries, d->t.entries } };

	if (d->t.broken)
		return;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i].rec != f[i].got)
			deep_damage(d, (uint64_t)d->meta, NULL, 0, NULL, "meta page %d: its record of "
			            "the %s says %llu %s; the tree has %llu", d->meta, name,
			            (unsigned long long)f[i].rec, f[i].what,
			            (unsigned long long)f[i].got);
}

/* ------------------------------------------------------------ one walk */

static void deep_free(deep *d)
{
	for (size_t i = 0; i < d->ndm; i++)
		mrtx__free(d->dm[i].what);
	mrtx__free(d->dm);
	for (unsigned l = 0; l < LF_MAX_DEPTH; l++) {
		mrtx__free(d->pg[l]);
		mrtx__free(d->ok[l]);
	}
	mrtx__free(d->seen);
	mrtx__free(d->freed);
	mrtx__free(d->lis);
	mrtx__free(d->lis_prev);
	mrtx__free(d->lis_keep);
	mrtx__free(d->lis_idx);
	mrtx__free(d->ext);
	mrtx__free(d->val);
	mrtx__free(d->kpdiff);
	deep_rec_free(d);
}

static int deep_alloc(deep *d)
{
	size_t bits = (size_t)(d->last_pg / 8 + 1), half = d->psize / 2;

	d->seen = mrtx__calloc(1, bits);
	d->freed = mrtx__calloc(1, bits);
	d->lis = mrtx__calloc(half, sizeof(uint32_t));
	d->lis_prev = mrtx__calloc(half, sizeof(uint32_t));
	d->lis_keep = mrtx__calloc(half, sizeof(uint32_t));
	d->lis_idx = mrtx__calloc(half, sizeof(uint32_t));
	d->ext = mrtx__calloc(half, sizeof(deep_extent));
	if (!d->seen || !d->freed || !d->lis || !d->lis_prev || !d->lis_keep || !d->lis_idx ||
	    !d->ext)
		return MRTX_ENOMEM;
	for (unsigned l = 0; l < LF_MAX_DEPTH; l++)
		if (!(d->pg[l] = mrtx__malloc(d->psize)) || !(d->ok[l] = mrtx__malloc(d->psize)))
			return MRTX_ENOMEM;
	return 0;
}

/* Pages in a tree and on the free list; pages in neither; pages in use
 * past the end of the file. */
static void accounting(deep *d, int whole)
{
	uint64_t end = d->fsize / d->psize, past = 0;

	for (uint64_t pg = 2; pg <= d->last_pg; pg++) {
		int s = deep_bit(d->seen, pg), f = deep_bit(d->freed, pg);

		past += pg >= end && !f;
		if (s && f) {
			deep_damage(d, pg, NULL, 0, NULL, "in use in a tree, and on the free list too: "
			            "the next write may hand it out and overwrite it");
			d->st->free_damaged = 1;
		} else if (!s && !f && whole) {
			d->st->leaked++;
		}
	}
	if (past)
		deep_damage(d, STORE_NO_PAGE, NULL, 0, NULL, "data.mdb is truncated: %llu bytes "
		            "(%llu pages), but %llu of the pages of meta page %d (LMDB transaction "
		            "%llu) past its end are not free", (unsigned long long)d->fsize,
		            (unsigned long long)end, (unsigned long long)past, d->meta,
		            (unsigned long long)d->txnid);
}

/* Walk what ms's meta pages lead to. */
static int attempt(deep *d, const metas *ms)
{
	lf_meta m[2];
	int main_whole, rc;

	d->db = -1;
	if (!(d->kpdiff = mrtx__calloc(0x10001, sizeof(int32_t))) || (rc = deep_rec_new(d)))
		return MRTX_ENOMEM;
	if (d->fsize == 0) {
		deep_damage(d, STORE_NO_PAGE, NULL, 0, NULL, "data.mdb is empty (0 bytes)");
		return 0;
	}
	metas_judge(d, ms, m);
	d->st->meta = d->meta;
	if (d->meta < 0)
		return 0;
	d->psize = m[d->meta].psize;
	d->last_pg = m[d->meta].last_pg;
	d->txnid = m[d->meta].txnid;
	d->st->page_size = d->psize;
	d->st->txnid = d->txnid;
	d->st->pages = d->last_pg + 1;
	if ((rc = deep_alloc(d)))
		return rc;
	meta_records(d, &m[d->meta]);
	if ((rc = deep_walk_tree(d, 1, m[d->meta].db[1].root)))
		return rc;
	db_compare(d, &m[d->meta].db[1]);
	main_whole = !d->t.broken;
	d->st->depth = d->t.leaf_lvl < 0 ? 0 : (unsigned)d->t.leaf_lvl + 1;
	d->st->entries = d->t.entries;
	deep_rec_end(d, main_whole);
	if ((rc = deep_rec_newer(d)))
		return rc;
	if ((rc = deep_walk_tree(d, 0, m[d->meta].db[0].root)))
		return rc;
	db_compare(d, &m[d->meta].db[0]);
	d->db = -1;
	accounting(d, main_whole && !d->t.broken);
	return 0;
}

int lf_free_holds(int fd, uint64_t fsize, const lf_meta *m, int *holds)
{
	store_file_stats st;
	store_file_opts o;
	deep d;
	int rc;

	*holds = 0;
	if (!lf_pages_plausible(fsize, m->psize, m->last_pg))
		return 0;
	memset(&d, 0, sizeof(d));
	memset(&st, 0, sizeof(st));
	memset(&o, 0, sizeof(o));
	d.fd = fd;
	d.fsize = fsize;
	d.psize = m->psize;
	d.last_pg = m->last_pg;
	d.txnid = m->txnid;
	d.st = &st;
	d.o = &o;
	if ((rc = deep_alloc(&d)) == 0 && (rc = deep_walk_tree(&d, 0, m->db[0].root)) == 0 &&
	    !st.damage) {
		*holds = 1;
		for (uint64_t pg = fsize / m->psize; pg <= m->last_pg && *holds; pg++)
			*holds = pg >= 2 && deep_bit(d.freed, pg) && !deep_bit(d.seen, pg);
	}
	deep_free(&d);
	return rc == MRTX_ENOMEM ? mrtx__seterr(rc, "out of memory reading the free list of "
	                                        "data.mdb") : rc;
}

/* Is the snapshot walked still intact, now that the meta pages read
 * `now`? */
static int still(const deep *d, const metas *before, const metas *now)
{
	lf_meta m;
	const char *why;
	int other;
	uint64_t newest = 0;

	if (memcmp(before, now, sizeof(*now)) == 0)
		return 1;
	if (d->meta < 0 || !d->st->newest || now->psize != d->psize)
		return 0;
	for (int i = 0; i < 2; i++) {
		if (now->got[i] < LF_META_BYTES ||
		    lf_meta_parse(now->raw[i], (unsigned)i, &m, &why, &other))
			return 0;
		newest = m.txnid > newest ? m.txnid : newest;
	}
	return newest <= d->txnid + 1;
}

static int deliver(deep *d)
{
	const store_file_opts *o = d->o;
	int rc;

	for (size_t i = 0; i < d->ndm; i++) {
		store_damage sd = { d->dm[i].page, MRTX_BYTES(d->dm[i].key, d->dm[i].klen),
		                    d->dm[i].what };

		if (o->damage && (rc = o->damage(&sd, o->payload)))
			return rc;
	}
	for (long kp = 1; kp <= 0xFFFF; kp++) /* the running sum of the differences */
		d->kpdiff[kp] += d->kpdiff[kp - 1];
	deep_rec_tables(d);
	return 0;
}

int lmdb_store_check_file(const char *path, const store_file_opts *o, store_file_stats *st)
{
	char file[4096];
	struct stat sb;
	metas before, after;
	int fd, rc = 0, opens, n = snprintf(file, sizeof(file), "%s/data.mdb", path);

	memset(st, 0, sizeof(*st));
	st->meta = -1;
	if (n < 0 || (size_t)n >= sizeof(file))
		return mrtx__seterr(MRTX_EINVAL, "store path too long: %s", path);
	if ((fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) /* (a FIFO: no wait) */
		return errno == ENOENT || errno == ENOTDIR ?
		       mrtx__seterr(MRTX_ENOTSTORE, "%s: no data.mdb: not an LMDB store", path) :
		       mrtx__seterr(MRTX_ESTORE, "cannot read %s: %s", file, strerror(errno));
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		rc = mrtx__seterr(MRTX_ENOTSTORE, "%s is not a regular file: not an LMDB store",
		                  file);
		goto done;
	}
	opens = lmdb_file_check(path) == 0;
	for (int tries = 0;; tries++) {
		deep d;

		memset(&d, 0, sizeof(d));
		memset(st, 0, sizeof(*st));
		st->meta = -1;
		d.fd = fd;
		d.st = st;
		d.o = o;
		st->opens = opens;
		if (fstat(fd, &sb) != 0 || metas_read(fd, &before)) {
			rc = mrtx__seterr(MRTX_ESTORE, "read %s: %s", file, strerror(errno));
			break;
		}
		d.fsize = st->file_bytes = (uint64_t)sb.st_size;
		if ((rc = attempt(&d, &before)) == 0 && metas_read(fd, &after))
			rc = mrtx__seterr(MRTX_ESTORE, "read %s: %s", file, strerror(errno));
		if (rc == MRTX_ENOMEM)
			rc = mrtx__seterr(MRTX_ENOMEM, "out of memory checking %s", file);
		if (rc == 0 && still(&d, &before, &after)) {
			rc = deliver(&d);
			deep_free(&d);
			break;
		}
		deep_free(&d);
		if (rc)
			break;
		if (tries + 1 == ATTEMPTS) {
			rc = mrtx__seterr(MRTX_ESTORE, "%s changed during each of %d walks (a writer "
			                  "is committing): check a store not in use, or a backup "
			                  "(mrtx backup)", file, ATTEMPTS);
			break;
		}
	}
done:
	close(fd);
	return rc;
}
