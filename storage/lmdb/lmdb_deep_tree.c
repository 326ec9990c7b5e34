/*
 * lmdb_deep_tree.c - walk one of the file's B-trees page by page, trusting
 * nothing (lmdb_deep.h; the layout in lmdb_layout.h).
 *
 * For each page reached:
 *   reaching it    its number within 2..last page; not seen before (a
 *                  cycle, or a page with two parents, is reported at the
 *                  pointer and not followed); the tree at most LMDB's 32
 *                  levels deep
 *   its header     the page number it records is its own; flags exactly a
 *                  branch or a leaf (mrtx's databases have no sub-pages or
 *                  fixed-size duplicates); 16 <= lower <= upper <= page
 *                  size, lower even; at least one node
 *   each node      its offset even, within [upper, page size), and its key
 *                  and data (or overflow page number) inside the page; a
 *                  key at most 511 bytes; leaf flags none or F_BIGDATA; no
 *                  two nodes overlapping; a leaf's nodes filling the area
 *                  from upper to the end
 *   key order      keys within the range the parent's separators give the
 *                  page, strictly increasing (the first key of a branch
 *                  page is never compared, as in LMDB); across leaves,
 *                  each key after the last one of the leaf before.  The
 *                  keys out of order are those outside the page's longest
 *                  increasing run, so one wrong key is one damage, not
 *                  every key after it.  The main database sorts as
 *                  lmdb_key_cmp does, the free list by integer.
 *   leaves         all at one level
 *   overflow runs  the value's first page in 2..last page, flagged as
 *                  overflow, recording its own number and a run long
 *                  enough for the value and inside the file; no page of
 *                  the run seen before
 *   free list      each entry keyed by a transaction id at most the meta
 *                  page's, holding a count and as many page numbers,
 *                  descending, each within 2..last page and on the list
 *                  only once
 *
 * A separator out of order bounds nothing: its children are walked within
 * the separators around it.  A node that cannot be read loses its child
 * (or entry): the tree is then marked broken and its counts are not
 * compared with the meta page's.
 */
#include "storage/lmdb/lmdb_deep.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define PER_PAGE 16u /* node damage reported one by one on a page; more is summed */

typedef struct node {
	const uint8_t *key;
	size_t klen;
	uint64_t child;     /* branch */
	const uint8_t *data; /* leaf, inline */
	uint32_t dsize;
	uint64_t ovpg;      /* leaf, F_BIGDATA */
	int big;
	unsigned off, end;
} node;

static int key_cmp(const deep *d, const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	MDB_val x = mv(a, an), y = mv(b, bn);

	if (d->db == 0) { /* MDB_INTEGERKEY: u64, native order (8-byte keys only) */
		uint64_t u = lf_get64(a), v = lf_get64(b);

		return u < v ? -1 : u > v;
	}
	return lmdb_key_cmp(&x, &y);
}

/* Node i of page p (nkeys nodes, node area from upper): NULL, or what is
 * wrong with it in why. */
static const char *node_read(const deep *d, const uint8_t *p, unsigned i, int leaf,
                             unsigned upper, node *n, char *why, size_t wn)
{
	unsigned off = lf_get16(p + LF_PAGE_HDR + 2 * i), ks, fl;
	size_t end;

	n->off = off;
	if (off < upper || off & 1 || off + LF_NODE_HDR > d->psize) {
		snprintf(why, wn, "node %u at offset %u, outside its page's node area %u..%u", i,
		         off, upper, d->psize);
		return why;
	}
	ks = lf_get16(p + off + 6);
	fl = lf_get16(p + off + 4);
	n->key = p + off + LF_NODE_HDR;
	n->klen = ks;
	end = off + LF_NODE_HDR + (size_t)ks;
	if (end > d->psize) {
		snprintf(why, wn, "node %u: a key of %u bytes runs past the end of its page", i, ks);
		return why;
	}
	if (ks > LF_MAX_KEY) {
		snprintf(why, wn, "node %u: a key of %u bytes, over LMDB's limit of %u", i, ks,
		         LF_MAX_KEY);
		return why;
	}
	if (!leaf) {
		n->child = lf_get16(p + off) | (uint64_t)lf_get16(p + off + 2) << 16 |
		           (uint64_t)fl << 32;
		n->end = (unsigned)end;
		return NULL;
	}
	if (fl & ~LF_F_BIGDATA) {
		snprintf(why, wn, "node %u: flags 0x%x (%s), which %s never has", i, fl,
		         fl & (LF_F_SUBDATA | LF_F_DUPDATA) ? "a sub-database or duplicates" :
		         "unknown to LMDB", d->db ? "an mrtx store" : "the free list");
		return why;
	}
	n->dsize = lf_get16(p + off) | (uint32_t)lf_get16(p + off + 2) << 16;
	n->big = fl & LF_F_BIGDATA;
	if (n->big) {
		if (end + 8 > d->psize) {
			snprintf(why, wn, "node %u: its overflow page number runs past the end of its "
			         "page", i);
			return why;
		}
		n->ovpg = lf_get64(p + end);
		n->end = (unsigned)end + 8;
		return NULL;
	}
	if (end + n->dsize > d->psize) {
		snprintf(why, wn, "node %u: a value of %u bytes runs past the end of its page", i,
		         (unsigned)n->dsize);
		return why;
	}
	n->data = p + end;
	n->end = (unsigned)(end + n->dsize);
	return NULL;
}

static int extent_cmp(const void *a, const void *b)
{
	const deep_extent *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * Mark ok[i] = 0 for the nodes of idx[0..n) (keys key(i), in page order)
 * outside the longest strictly increasing run (patience sorting), which
 * are the ones out of order.  Returns how many.
 */
static unsigned order_check(deep *d, const uint8_t *p, const uint32_t *idx, unsigned n,
                            uint8_t *ok)
{
	uint32_t *tail = d->lis, *prev = d->lis_prev, *keep = d->lis_keep;
	unsigned len = 0, bad = 0;

	for (unsigned j = 0; j < n; j++) {
		unsigned lo = 0, hi = len, o = lf_get16(p + LF_PAGE_HDR + 2 * idx[j]);
		const uint8_t *k = p + o + LF_NODE_HDR;
		size_t kn = lf_get16(p + o + 6);

		while (lo < hi) { /* the first run end whose key is >= k */
			unsigned mid = (lo + hi) / 2, mo = lf_get16(p + LF_PAGE_HDR + 2 * idx[tail[mid]]);

			if (key_cmp(d, p + mo + LF_NODE_HDR, lf_get16(p + mo + 6), k, kn) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		prev[j] = lo ? tail[lo - 1] : UINT32_MAX;
		tail[lo] = j;
		if (lo == len)
			len++;
	}
	for (unsigned j = 0; j < n; j++)
		keep[j] = 0;
	for (uint32_t j = len ? tail[len - 1] : UINT32_MAX; j != UINT32_MAX; j = prev[j])
		keep[j] = 1;
	for (unsigned j = 0; j < n; j++)
		if (!keep[j]) {
			ok[idx[j]] = 0;
			bad++;
		}
	return bad;
}

/* The key of node i of page p (its node known readable). */
static const uint8_t *key_at(const uint8_t *p, unsigned i, size_t *kn)
{
	unsigned o = lf_get16(p + LF_PAGE_HDR + 2 * i);

	*kn = lf_get16(p + o + 6);
	return p + o + LF_NODE_HDR;
}

/* Is key k within b (for a page's keys: lo <= k < hi)? */
static int in_bound(const deep *d, const uint8_t *k, size_t kn, const deep_bound *b)
{
	return (!b->lo || key_cmp(d, b->lo, b->lolen, k, kn) <= 0) &&
	       (!b->hi || key_cmp(d, k, kn, b->hi, b->hilen) < 0);
}

/* Read the value of a F_BIGDATA node into d->val, checking and marking its
 * overflow run: 0 (*out set), 1 (damage, reported), <0 error. */
static int overflow(deep *d, uint64_t from, const node *n, const deep_bound *kb,
                    const uint8_t **out)
{
	uint8_t hdr[LF_PAGE_HDR];
	uint64_t pg = n->ovpg, pages, need;
	ssize_t r;

	if (pg < 2 || pg > d->last_pg) {
		deep_damage(d, from, n->key, n->klen, kb, "its value's overflow page %llu is "
		            "outside the file's pages 2..%llu", (unsigned long long)pg,
		            (unsigned long long)d->last_pg);
		return 1;
	}
	if (deep_bit(d->seen, pg)) {
		deep_damage(d, from, n->key, n->klen, kb, "its value's overflow page %llu is "
		            "reached a second time", (unsigned long long)pg);
		return 1;
	}
	if ((r = lf_read_at(d->fd, hdr, sizeof(hdr), pg * d->psize)) < 0)
		return d->err = mrtx__seterr(MRTX_ESTORE, "read page %llu of data.mdb: %s",
		                             (unsigned long long)pg, strerror(errno));
	if ((size_t)r < sizeof(hdr)) {
		deep_damage(d, pg, n->key, n->klen, kb, "a value's overflow page past the end of "
		            "the file");
		return 1;
	}
	if (lf_get64(hdr) != pg)
		deep_damage(d, pg, n->key, n->klen, kb, "its header says page %llu",
		            (unsigned long long)lf_get64(hdr));
	if (lf_get16(hdr + 10) != LF_P_OVERFLOW) {
		deep_damage(d, pg, n->key, n->klen, kb, "flags 0x%04x where a value's overflow "
		            "run begins", lf_get16(hdr + 10));
		return 1;
	}
	pages = lf_get32(hdr + 12);
	need = (LF_PAGE_HDR - 1 + (uint64_t)n->dsize) / d->psize + 1; /* OVPAGES */
	if (pages < need || pages > d->last_pg - pg + 1) {
		deep_damage(d, pg, n->key, n->klen, kb, "an overflow run of %llu pages, for a "
		            "value of %u bytes (%llu pages) in a file of pages up to %llu",
		            (unsigned long long)pages, (unsigned)n->dsize,
		            (unsigned long long)need, (unsigned long long)d->last_pg);
		return 1;
	}
	for (uint64_t q = pg; q < pg + pages; q++)
		if (deep_bit(d->seen, q)) {
			deep_damage(d, q, n->key, n->klen, kb, "a page of the overflow run at page "
			            "%llu, reached a second time", (unsigned long long)pg);
			return 1;
		}
	for (uint64_t q = pg; q < pg + pages; q++)
		deep_bit_set(d->seen, q);
	d->st->walked += pages;
	d->t.overflow += pages;
	if (n->dsize > d->valcap) {
		uint8_t *v = mrtx__realloc(d->val, n->dsize);

		if (!v)
			return d->err = MRTX_ENOMEM;
		d->val = v;
		d->valcap = n->dsize;
	}
	if ((r = lf_read_at(d->fd, d->val, n->dsize, pg * d->psize + LF_PAGE_HDR)) < 0)
		return d->err = mrtx__seterr(MRTX_ESTORE, "read page %llu of data.mdb: %s",
		                             (unsigned long long)pg, strerror(errno));
	if ((size_t)r < n->dsize) {
		deep_damage(d, pg, n->key, n->klen, kb, "a value's overflow run past the end of "
		            "the file");
		return 1;
	}
	*out = d->val;
	return 0;
}

/* A free-list entry: txn id key k (8 bytes), page list v. */
static void free_entry(deep *d, uint64_t page, const uint8_t *k, const uint8_t *v, size_t vn)
{
	uint64_t txn = lf_get64(k), cnt, prev = UINT64_MAX;
	unsigned bad = 0;

	if (txn > d->txnid)
		deep_damage(d, page, NULL, 0, NULL, "free-list entry of LMDB transaction %llu, "
		            "after the meta page's %llu", (unsigned long long)txn,
		            (unsigned long long)d->txnid);
	if (vn < 8 || vn % 8) {
		deep_damage(d, page, NULL, 0, NULL, "free-list entry of transaction %llu: %zu "
		            "bytes, not a count and page numbers", (unsigned long long)txn, vn);
		return;
	}
	cnt = lf_get64(v);
	if (cnt != vn / 8 - 1) {
		deep_damage(d, page, NULL, 0, NULL, "free-list entry of transaction %llu: a count "
		            "of %llu pages in %zu bytes", (unsigned long long)txn,
		            (unsigned long long)cnt, vn);
		return;
	}
	for (uint64_t i = 0; i < cnt; i++) {
		uint64_t pg = lf_get64(v + 8 + 8 * i);
		const char *why = NULL;

		if (pg < 2 || pg > d->last_pg)
			why = "outside the file's pages";
		else if (pg >= prev)
			why = "not below the page before it (the list is descending)";
		else if (deep_bit(d->freed, pg))
			why = "on the free list a second time";
		if (why) {
			if (bad++ < PER_PAGE)
				deep_damage(d, page, NULL, 0, NULL, "free-list entry of transaction %llu: "
				            "page %llu %s", (unsigned long long)txn,
				            (unsigned long long)pg, why);
			continue;
		}
		deep_bit_set(d->freed, pg);
		d->st->free_pages++;
		prev = pg;
	}
	if (bad > PER_PAGE)
		deep_damage(d, page, NULL, 0, NULL, "free-list entry of transaction %llu: %u more "
		            "such pages", (unsigned long long)txn, bad - PER_PAGE);
}

/* A leaf's entry: its value (inline or from overflow pages) to its db's
 * check. */
static int leaf_entry(deep *d, uint64_t pgno, const node *n)
{
	const uint8_t *v = n->data;
	deep_bound kb = { n->key, NULL, n->klen, 0, 1 };
	int rc;

	if (n->big && (rc = overflow(d, pgno, n, &kb, &v)) != 0) {
		d->t.broken = 1;
		if (d->db)
			deep_rec_gap(d);
		return rc < 0 ? rc : 0;
	}
	if (d->db == 0)
		free_entry(d, pgno, n->key, v, n->dsize);
	else
		deep_rec_entry(d, pgno, n->key, n->klen, v, n->dsize);
	return 0;
}

/* The header of page p (pgno): 0 with *nkeys and *upper, or 1 (damage
 * reported: nothing on it can be read). */
static int page_head(deep *d, const uint8_t *p, uint64_t pgno, const deep_bound *b,
                     unsigned *nkeys, unsigned *upper)
{
	unsigned flags = lf_get16(p + 10), lower = lf_get16(p + 12);

	*upper = lf_get16(p + 14);
	if (lf_get64(p) != pgno)
		deep_damage(d, pgno, NULL, 0, b, "its header says page %llu",
		            (unsigned long long)lf_get64(p));
	if (flags != LF_P_BRANCH && flags != LF_P_LEAF) {
		deep_damage(d, pgno, NULL, 0, b, "flags 0x%04x where a branch or leaf page of the "
		            "%s is", flags, d->db ? "main database" : "free list");
		return 1;
	}
	if (lower < LF_PAGE_HDR || lower > *upper || *upper > d->psize || (lower & 1)) {
		deep_damage(d, pgno, NULL, 0, b, "its node bounds lower %u, upper %u do not fit a "
		            "page of %u bytes (16 <= lower <= upper <= %u, lower even)", lower,
		            *upper, d->psize, d->psize);
		return 1;
	}
	if ((*nkeys = (lower - LF_PAGE_HDR) / 2) == 0) {
		deep_damage(d, pgno, NULL, 0, b, "a %s page without nodes",
		            flags == LF_P_LEAF ? "leaf" : "branch");
		return 1;
	}
	return 0;
}

/* Read every node of page p: ok[i] for those whose extent is sound and
 * overlaps no other; damage for the rest.  Returns how many are not ok. */
static unsigned nodes_read(deep *d, const uint8_t *p, uint64_t pgno, const deep_bound *b,
                           unsigned nkeys, unsigned upper, int leaf, uint8_t *ok,
                           deep_extent *ext)
{
	unsigned bad = 0, next = 0;
	char why[160];
	node n;

	for (unsigned i = 0; i < nkeys; i++) {
		ok[i] = node_read(d, p, i, leaf, upper, &n, why, sizeof(why)) == NULL;
		if (!ok[i]) {
			if (bad++ < PER_PAGE)
				deep_damage(d, pgno, NULL, 0, b, "%s", why);
			continue;
		}
		ext[next].off = n.off;
		ext[next].end = n.end;
		ext[next++].i = i;
	}
	qsort(ext, next, sizeof(*ext), extent_cmp);
	if (leaf && !bad) {
		/* LMDB adds a node at upper, its size rounded up to even, and
		 * closes the gap when it deletes one: a leaf's nodes tile the
		 * area from upper to the end (a branch's need not: a separator
		 * grown in place keeps a spare byte) */
		size_t used = 0;

		for (unsigned j = 0; j < next; j++)
			used += (ext[j].end - ext[j].off + 1u) & ~1u;
		if (used != d->psize - upper) {
			bad++;
			deep_damage(d, pgno, NULL, 0, b, "its nodes fill %zu of the %u bytes from "
			            "upper to the end of the page", used, d->psize - upper);
		}
	}
	for (unsigned j = 1; j < next; j++)
		if (ext[j].off < ext[j - 1].end) {
			ok[ext[j].i] = 0;
			if (bad++ < PER_PAGE)
				deep_damage(d, pgno, NULL, 0, b, "nodes %u and %u overlap", ext[j - 1].i,
				            ext[j].i);
			ext[j].end = ext[j].end > ext[j - 1].end ? ext[j].end : ext[j - 1].end;
		}
	if (bad > PER_PAGE)
		deep_damage(d, pgno, NULL, 0, b, "%u more nodes that cannot be read",
		             bad - PER_PAGE);
	return bad;
}

/* The keys a wrong key k_i of page p can misroute or hide: on a leaf, the
 * page's (b); on a branch, those between the good separators around it. */
static deep_bound reach(const uint8_t *p, unsigned i, unsigned nkeys, int leaf,
                        const uint8_t *good, const deep_bound *b)
{
	deep_bound r = *b;

	if (leaf)
		return r;
	for (unsigned j = i; j-- > 1;)
		if (good[j]) {
			r.lo = key_at(p, j, &r.lolen);
			break;
		}
	for (unsigned j = i + 1; j < nkeys; j++)
		if (good[j]) {
			r.hi = key_at(p, j, &r.hilen);
			break;
		}
	return r;
}

/* The keys of page p (from node `first`: a branch page's node 0 has no
 * key LMDB compares) whose nodes are sound (sound[i]): good[i] = 0 for
 * those outside b or out of order, each reported. */
static void keys_check(deep *d, const uint8_t *p, uint64_t pgno, const deep_bound *b,
                       unsigned nkeys, int leaf, const uint8_t *sound, uint8_t *good,
                       uint32_t *idx)
{
	unsigned n = 0, bad = 0, first = leaf ? 0 : 1;
	size_t kn;
	const uint8_t *k;

	for (unsigned i = first; i < nkeys; i++) {
		if (!good[i])
			continue;
		k = key_at(p, i, &kn);
		if ((d->db == 0 && kn != 8) || !in_bound(d, k, kn, b))
			good[i] = 0;
		else
			idx[n++] = i;
	}
	order_check(d, p, idx, n, good);
	for (unsigned i = first; i < nkeys; i++) {
		deep_bound r;

		if (!sound[i] || good[i] || bad++ >= PER_PAGE)
			continue;
		k = key_at(p, i, &kn);
		r = reach(p, i, nkeys, leaf, good, b);
		if (d->db == 0 && kn != 8)
			deep_damage(d, pgno, NULL, 0, &r, "a free-list key of %zu bytes, not a "
			            "transaction id", kn);
		else if (!in_bound(d, k, kn, b))
			deep_damage(d, pgno, k, kn, &r, "a key outside the range its parent's "
			            "separators give the page");
		else
			deep_damage(d, pgno, k, kn, &r, "a key out of order on its page");
	}
	if (bad > PER_PAGE)
		deep_damage(d, pgno, NULL, 0, b, "%u more keys out of order or range",
		            bad - PER_PAGE);
}

static int walk(deep *d, uint64_t pgno, uint64_t from, unsigned lvl, const deep_bound *b);

/* The children of branch page p, each within the separators around it
 * that are in order. */
static int branch_children(deep *d, const uint8_t *p, uint64_t pgno, unsigned lvl,
                           const deep_bound *b, unsigned nkeys, const uint8_t *ok,
                           const uint8_t *sep_ok)
{
	deep_bound cb = *b;
	char why[160];
	node n;
	int rc;

	for (unsigned i = 0; i < nkeys; i++) {
		if (i > 0 && sep_ok[i])
			cb.lo = key_at(p, i, &cb.lolen);
		cb.hi = b->hi;
		cb.hilen = b->hilen;
		for (unsigned j = i + 1; j < nkeys; j++)
			if (sep_ok[j]) {
				cb.hi = key_at(p, j, &cb.hilen);
				break;
			}
		if (!ok[i] || node_read(d, p, i, 0, 0, &n, why, sizeof(why))) {
			d->t.broken = 1; /* (reported by nodes_read) */
			if (d->db)
				deep_rec_gap(d);
			continue;
		}
		if ((rc = walk(d, n.child, pgno, lvl + 1, &cb)))
			return rc;
	}
	return 0;
}

/* The subtree at pgno, reached from page `from` at level lvl, its keys
 * within b. */
static int walk(deep *d, uint64_t pgno, uint64_t from, unsigned lvl, const deep_bound *b)
{
	uint8_t *p, *ok, *sep_ok;
	unsigned nkeys, upper, leaf;
	int rc;

	if (pgno < 2 || pgno > d->last_pg || lvl >= LF_MAX_DEPTH || deep_bit(d->seen, pgno)) {
		if (pgno < 2 || pgno > d->last_pg)
			deep_damage(d, from, NULL, 0, b, "a pointer to page %llu, outside the file's "
			            "pages 2..%llu", (unsigned long long)pgno,
			            (unsigned long long)d->last_pg);
		else if (lvl >= LF_MAX_DEPTH)
			deep_damage(d, from, NULL, 0, b, "the tree goes deeper than LMDB's %u levels",
			            LF_MAX_DEPTH);
		else
			deep_damage(d, from, NULL, 0, b, "a pointer to page %llu, reached a second "
			            "time (a cycle, or a page with two parents)",
			            (unsigned long long)pgno);
		d->t.broken = 1;
		if (d->db)
			deep_rec_gap(d);
		return 0;
	}
	p = d->pg[lvl];
	ok = d->ok[lvl];
	sep_ok = ok + d->psize / 2;
	deep_bit_set(d->seen, pgno);
	d->st->walked++;
	if ((rc = deep_read_page(d, pgno, p)) != 0 || page_head(d, p, pgno, b, &nkeys, &upper)) {
		if (rc > 0)
			deep_damage(d, pgno, NULL, 0, b, "past the end of the file");
		if (rc >= 0) {
			d->t.broken = 1;
			if (d->db)
				deep_rec_gap(d);
		}
		return rc < 0 ? rc : 0;
	}
	leaf = lf_get16(p + 10) == LF_P_LEAF;
	if (leaf) {
		if (d->t.leaf_lvl < 0) {
			d->t.leaf_lvl = (int)lvl;
		} else if ((int)lvl != d->t.leaf_lvl) {
			deep_damage(d, pgno, NULL, 0, b, "a leaf at level %u of the tree, whose first "
			            "leaf is at level %d", lvl, d->t.leaf_lvl);
			d->t.broken = 1;
		}
		d->t.leaf++;
		d->t.entries += nkeys;
	} else {
		d->t.branch++;
	}
	/* (the page's scratch is free again before any recursion) */
	if (nodes_read(d, p, pgno, b, nkeys, upper, leaf, ok, d->ext))
		d->t.broken = 1;
	memcpy(sep_ok, ok, nkeys);
	keys_check(d, p, pgno, b, nkeys, leaf, ok, sep_ok, d->lis_idx);
	if (!leaf) {
		sep_ok[0] = 0;
		return branch_children(d, p, pgno, lvl, b, nkeys, ok, sep_ok);
	}
	for (unsigned i = 0; i < nkeys; i++) {
		char why[160];
		node n;

		if (!sep_ok[i] || node_read(d, p, i, 1, upper, &n, why, sizeof(why))) {
			if (d->db)
				deep_rec_gap(d);
			continue;
		}
		if (d->have_last && key_cmp(d, d->last, d->lastlen, n.key, n.klen) >= 0) {
			deep_damage(d, pgno, n.key, n.klen, b, "a key not after the last key of the "
			            "leaf before it");
			if (d->db)
				deep_rec_gap(d);
			continue;
		}
		memcpy(d->last, n.key, n.klen);
		d->lastlen = n.klen;
		d->have_last = 1;
		if ((rc = leaf_entry(d, pgno, &n)))
			return rc;
	}
	return 0;
}

int deep_walk_tree(deep *d, int db, uint64_t root)
{
	deep_bound all = { NULL, NULL, 0, 0, 0 };

	memset(&d->t, 0, sizeof(d->t));
	d->t.leaf_lvl = -1;
	d->db = db;
	d->have_last = 0;
	if (root == LF_NO_PAGE)
		return 0;
	return walk(d, root, (uint64_t)d->meta, 0, &all);
}
