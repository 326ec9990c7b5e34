/*
 * lmdb_walk.c - the order of the keys a read walks, checked where LMDB
 * does not look (DESIGN §3.5).
 *
 * LMDB finds a key by binary search over a page's node offsets and trusts
 * them.  A damaged offset puts another node of the page (or bytes inside
 * one, which the seal refuses: lmdb_seal.h) into a slot: a walk through
 * that page then meets a key out of order, and a search through it can
 * land past keys the page holds, so that a read would go on without them.
 * Keys are unique and sorted, so a slot holding the wrong node is out of
 * order with one of its two neighbours.  Hence two rules, which together
 * find a wrong slot anywhere a read walks:
 *
 *   walk     every step (MDB_NEXT, MDB_PREV) meets a key strictly beyond
 *            the one before (the caller compares; lmdb_key_after)
 *   landing  where a search lands (MDB_SET_RANGE, a lookup that missed),
 *            the slot below holds a key below the target and above the
 *            one below it, and the slot above a key above the landing's:
 *            a key the search passed over sat in the slot just below the
 *            landing, whose wrong node breaks one of those
 *
 * A landing costs up to six steps on the pages the search just read; the
 * steps read keys only (no seal is checked on what they pass).
 *
 * A step from one leaf page to the next follows the page number its
 * parent holds for the neighbour, which no search took.  Forward, a wrong
 * number is met by the walk rule: the walk goes on through the page it
 * was sent to and meets, at its far end or at the parent's next child,
 * keys out of order (unless a seek takes it elsewhere first: DESIGN
 * §3.5's boundary).  A reverse scan seeks each row afresh and takes one
 * step back from it, so after a wrong number it would go on in order
 * from wherever it was sent (a stale page of the store's records: the
 * table would seem to begin there), rows skipped.  Hence a third rule:
 *
 *   back     a step back (MDB_PREV, MDB_LAST) that leaves the page it
 *            started on meets a key that a search finds at the same
 *            place, and whose next key is the one the step came from
 *            (none, after MDB_LAST)
 *
 * It costs a search from the root and one step per page a reverse scan
 * crosses; a step within a page costs a comparison of two addresses.
 */
#include "storage/lmdb/lmdb_int.h"

int lmdb_key_after(const MDB_val *prev, const MDB_val *k)
{
	return lmdb_key_cmp(prev, k) < 0;
}

/* One raw step; *moved: it moved (LMDB leaves the cursor where it was when
 * a step finds no key). */
static int step(MDB_cursor *cur, MDB_val *k, MDB_cursor_op op, int *moved)
{
	MDB_val v;
	int rc = mdb_cursor_get(cur, k, &v, op);

	*moved = rc == 0;
	return rc == MDB_NOTFOUND ? 0 : rc;
}

int lmdb_landing_check(MDB_cursor *cur, const MDB_val *target, int found)
{
	MDB_val at, k1, k2, k3, v;
	int rc, m1 = 0, m2 = 0, m3 = 0, bad = 0;

	if (!found) /* past the last key: the last two keys */
		return (rc = mdb_cursor_get(cur, &k1, &v, MDB_LAST)) == MDB_NOTFOUND ? 0 :
		       rc ? rc :
		       lmdb_key_cmp(&k1, target) >= 0 ? LMDB_DISORDER :
		       (rc = step(cur, &k2, MDB_PREV, &m2)) ? rc :
		       m2 && !lmdb_key_after(&k2, &k1) ? LMDB_DISORDER : 0;
	if ((rc = mdb_cursor_get(cur, &at, &v, MDB_GET_CURRENT)))
		return rc;
	/* below: two slots down and back up */
	if ((rc = step(cur, &k1, MDB_PREV, &m1)))
		return rc;
	if (m1 && lmdb_key_cmp(&k1, target) >= 0)
		bad = 1;
	if (m1 && !bad && (rc = step(cur, &k2, MDB_PREV, &m2)))
		return rc;
	if (m2 && !lmdb_key_after(&k2, &k1))
		bad = 1;
	if (bad)
		return LMDB_DISORDER;
	if (m2 && (rc = mdb_cursor_get(cur, &k2, &v, MDB_NEXT)))
		return rc;
	if (m1 && (rc = mdb_cursor_get(cur, &k1, &v, MDB_NEXT)))
		return rc;
	/* above: one slot up and back */
	if ((rc = step(cur, &k3, MDB_NEXT, &m3)))
		return rc;
	if (m3 && !lmdb_key_after(&at, &k3))
		return LMDB_DISORDER;
	if (m3 && (rc = mdb_cursor_get(cur, &k3, &v, MDB_PREV)))
		return rc;
	/* back where the search landed (the same node, so the same bytes) */
	if ((rc = mdb_cursor_get(cur, &k3, &v, MDB_GET_CURRENT)))
		return rc;
	return k3.mv_data == at.mv_data ? 0 : LMDB_DISORDER;
}

int lmdb_seek(MDB_cursor *cur, MDB_val *k, MDB_val *v)
{
	MDB_val target = *k;
	int rc = lmdb_cget(cur, k, v, MDB_SET_RANGE), order;

	if (rc != 0 && rc != MDB_NOTFOUND)
		return rc;
	return (order = lmdb_landing_check(cur, &target, rc == 0)) ? order : rc;
}

int lmdb_step(MDB_cursor *cur, MDB_val *k, MDB_val *v, MDB_cursor_op op)
{
	MDB_val prev = *k;
	int rc = lmdb_cget(cur, k, v, op);

	if (rc == 0 && !(op == MDB_PREV ? lmdb_key_after(k, &prev) : lmdb_key_after(&prev, k)))
		return LMDB_DISORDER;
	return rc;
}

/* Could a and b, keys in pages LMDB maps, lie in one page?  (Its pages are
 * aligned, and at least this large.) */
#define LMDB_PAGE_MIN 4096u
static int same_page(const void *a, const void *b)
{
	return (uintptr_t)a / LMDB_PAGE_MIN == (uintptr_t)b / LMDB_PAGE_MIN;
}

/* A search from the root (a fresh cursor: LMDB's own searches the page it
 * stands on first, when the key falls inside it) for k lands on the node
 * at k's place, and the next key is at next (none: NULL)? */
static int searched_next(MDB_cursor *cur, const MDB_val *k, const void *next)
{
	MDB_cursor *c;
	MDB_val kk = *k, vv;
	int rc;

	if ((rc = mdb_cursor_open(mdb_cursor_txn(cur), mdb_cursor_dbi(cur), &c)))
		return rc;
	if ((rc = mdb_cursor_get(c, &kk, &vv, MDB_SET_RANGE)) == 0)
		rc = kk.mv_data != k->mv_data ? LMDB_DISORDER :
		     (rc = mdb_cursor_get(c, &kk, &vv, MDB_NEXT)) == MDB_NOTFOUND ?
		     (next ? LMDB_DISORDER : 0) :
		     rc ? rc : kk.mv_data != next ? LMDB_DISORDER : 0;
	else if (rc == MDB_NOTFOUND)
		rc = LMDB_DISORDER;
	mdb_cursor_close(c);
	return rc;
}

int lmdb_step_back(MDB_cursor *cur, MDB_val *k, MDB_val *v, MDB_cursor_op op)
{
	MDB_val from = { 0, NULL }, vv;
	int rc;

	if (op == MDB_PREV && (rc = mdb_cursor_get(cur, &from, &vv, MDB_GET_CURRENT)))
		return rc;
	if ((rc = mdb_cursor_get(cur, k, v, op)))
		return rc;
	/* (within one page, the walk and landing rules hold) */
	if ((op != MDB_PREV || !same_page(from.mv_data, k->mv_data)) &&
	    (rc = searched_next(cur, k, from.mv_data)))
		return rc;
	return lmdb_unseal(k, v);
}
