/*
 * lmdb_upgrade.c - convert a store of format 3 to 7 to format 8 in place
 * (`mrtx upgrade`, mrtx_upgrade; DESIGN §9).
 *
 * Format 8 tallies the metadata records in the format record
 * (lmdb_mcount.c); format 7 seals every metadata record with a checksum
 * (lmdb_seal.h); format 6 every data record; format 5
 * added the count of unsettled lock records (lmdb_unsettled.c); format 4 a
 * version header (u64 LE ts | u8 flags) before every cell's value
 * (lmdb_cell.c).  A format-3 cell's version is the commit that wrote it,
 * which its row's STABLE lock names (a store with transactions in flight
 * is refused: their redo was checked against the old key rule only; `mrtx
 * recover` settles them).  Every converted cell is flagged GONE -- format 3
 * kept no older versions, so no read at an earlier snapshot may take the
 * cell's absence for a fact -- and the collector's safe point (g/safe) is
 * set above every converted version, so that cells deleted before the
 * upgrade, which left no trace, are not read as never written.
 *
 *   check   (format 3) one read pass: every cell key must leave room for a
 *           version's 11 bytes (else nothing is written, and the error
 *           says which)
 *   header  (format 3) batches of write transactions give up to BATCH
 *           cells their header from the resume key on and store the key
 *           after them ("\0upgrade"), under the format FORMAT_HEADERS,
 *           which mrtx_open refuses; the last also sets g/safe, removes
 *           the resume key and sets FORMAT_SEALING.  An earlier release's
 *           header pass (FORMAT_UPGRADING) committed its last batch apart
 *           from its last write, leaving the resume key on cells it had
 *           converted: resuming one, a cell whose value already starts
 *           with its row's version and GONE is taken as converted
 *   seal    (formats 3 to 5) the same for every data record's seal, under
 *           FORMAT_SEALING; the last batch also removes the resume key
 *           and finishes
 *   finish  (every format; formats 6 and 7 start here) in one write:
 *           every metadata record gets its seal (but format 7's, which
 *           have theirs), the unsettled lock records are counted, then the
 *           metadata records tallied, and the format becomes 8 (sealed
 *           itself, with that tally)
 *
 * Each batch is one LMDB transaction that also records where the next one
 * starts (or moves to the next pass), so a crash anywhere leaves either the
 * state before it or after it, every record converted exactly once, and
 * running the upgrade again resumes.  The timestamp page (ts.shm) is
 * removed before the first write: it has no snapshot entry for the
 * upgrade's transactions, and the next open makes it anew.  The map is
 * grown first by what the headers and seals need.  No other process may
 * have the store open: the upgrade holds LMDB's lock file exclusively from
 * before its first read to after its last write (a process that has the
 * environment open holds a shared lock on it; one that opens it waits), and
 * (from format 3) refuses rows locked by transactions in flight.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/lmdb/lmdb_int.h"
#include "storage/lmdb/lmdb_store.h"

#define BATCH 10000u
#define RESUME_KEY "\0upgrade"
#define RESUME_LEN 8u

enum { PASS_HEADER, PASS_SEAL };

typedef struct up {
	const char *path;
	MDB_env *env;
	MDB_dbi dbi;
	lmdb_upgrade_ts_fn row_ts;
	lmdb_lock_order_fn lock_order;
	uint64_t max_ts, cells;
	int legacy; /* resuming an earlier release's header pass */
	int meta_sealed; /* format 7: the metadata has its seals */
	lmdb_span_env span; /* the environment's map, for lmdb_unseal */
} up;

static int up_err(up *u, int rc, const char *step)
{
	const char *what, *why;

	if ((what = lmdb_damage_what(rc, &why)))
		return mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: %s: %s%s: the store is damaged "
		                    "(`mrtx check --deep %s` says where)", u->path, step, what, why,
		                    u->path);
	if (rc == MDB_MAP_FULL)
		return mrtx__seterr(MRTX_EFULL, "upgrade %s: the store's map is full during %s",
		                    u->path, step);
	/* (a full disk or quota: MRTX_EFULL too, in the errno's words) */
	return mrtx__seterr(rc == ENOSPC || rc == EDQUOT ? MRTX_EFULL : MRTX_ESTORE,
	                    "upgrade %s: %s: %s", u->path, step, mdb_strerror(rc));
}

/* Keep every other process out for the whole upgrade: LMDB holds a shared
 * fcntl lock on byte 0 of lock.mdb in every process that has the
 * environment open, and takes it (waiting) when it opens it; the upgrade
 * holds that byte exclusively (*fd, kept open until the end) and opens the
 * environment without LMDB's lock file (MDB_NOLOCK). */
static int exclusive(up *u, int *fd)
{
	char file[4096];
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };

	*fd = -1;
	if (mrtx__path_join(file, sizeof(file), u->path, "lock.mdb", "upgrade"))
		return MRTX_EINVAL;
	if ((*fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return mrtx__sys_err("upgrade", "open", file, errno);
	if (fcntl(*fd, F_SETLK, &lk) != 0) {
		close(*fd);
		*fd = -1;
		return mrtx__seterr(MRTX_ELOCKED, "upgrade %s: another process has the store open; "
		                    "close every process using it and run the upgrade again",
		                    u->path);
	}
	return 0;
}

/* The store's format: a bare number (formats 3 to 6, an upgrade's mark) or
 * a sealed one (7, 8).  A bare 7 or 8, or a sealed earlier number, is
 * damage. */
static int get_format(up *u, MDB_txn *txn, uint32_t *fmt)
{
	int sealed, rc = lmdb_format_get(txn, u->dbi, fmt, &sealed, NULL);

	if (rc == MDB_NOTFOUND)
		return mrtx__seterr(MRTX_ENOTSTORE, "upgrade %s: not an mrtx store", u->path);
	if (rc == MRTX_ECORRUPT || (rc == 0 && sealed != (*fmt >= FORMAT_META_SEALED &&
	                                                  *fmt < FORMAT_UPGRADING)))
		return mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: the format record is malformed "
		                    "(`mrtx check --deep %s` says where the store is damaged)",
		                    u->path, u->path);
	if (rc)
		return up_err(u, rc, "read the format");
	return 0;
}

static int put_u32(up *u, MDB_txn *txn, const char *key, size_t klen, uint32_t x)
{
	MDB_val k = mv(key, klen), v = mv(&x, 4);
	int rc = mdb_put(txn, u->dbi, &k, &v, 0);

	return rc ? up_err(u, rc, "write metadata") : 0;
}

/* Where the row of data key k ends (the length of P . enc(row)); 0 if k is
 * not a data key.  *lock: k is the row's lock key. */
static size_t row_end(const MDB_val *k, int *lock)
{
	const uint8_t *kd = k->mv_data;
	uint8_t rowbuf[MRTX_MAX_KEY];
	size_t used;

	*lock = 0;
	if (k->mv_size <= TPFX || ((unsigned)kd[0] << 8 | kd[1]) < KP_FIRST)
		return 0;
	if (keyenc_get(rowbuf, kd + TPFX, k->mv_size - TPFX, &used) == (size_t)-1 ||
	    TPFX + used >= k->mv_size)
		return 0;
	*lock = k->mv_size == TPFX + used + 1 && kd[TPFX + used] == LOCK_TAG;
	return TPFX + used;
}

/* The check pass: every cell key leaves room for its versions' keys, and
 * no transaction is in flight (a pending lock's redo would be written the
 * format-4 way, and its keys were never checked against its rule);
 * *grow: the bytes the headers and seals add. */
static int check_keys(up *u, MDB_txn *txn, MDB_cursor *cur, size_t *grow)
{
	MDB_val k = mv("\1", 1), v; /* (data keys start at prefix 0x0100) */
	size_t bad = 0, first = 0, pending = 0;
	int rc;

	*grow = 0;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		int lock;
		size_t re = row_end(&k, &lock);
		uint64_t ts;

		if (!re)
			return mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: an undecodable data key",
			                    u->path);
		if (lock) {
			int st = u->row_ts(v.mv_data, v.mv_size, &ts);

			if (st < 0)
				return mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: a malformed lock record",
				                    u->path);
			pending += st > 0;
			*grow += LMDB_SEAL;
			continue;
		}
		*grow += CELL_HDR + LMDB_SEAL;
		if (k.mv_size + STORE_VERSION_KEY > MRTX_MAX_KEY && bad++ == 0)
			first = k.mv_size;
	}
	(void)txn;
	if (rc != MDB_NOTFOUND)
		return up_err(u, rc, "read the data");
	if (pending)
		return mrtx__seterr(MRTX_ELOCKED, "upgrade %s: %zu row(s) are locked by "
		                    "transactions in flight; nothing was changed: settle them with "
		                    "`mrtx recover` of the mrtx that wrote the store, then upgrade",
		                    u->path, pending);
	if (bad)
		return mrtx__seterr(MRTX_ETOOBIG, "upgrade %s: %zu cell(s) have keys too long for "
		                    "format 4, whose versions add %u bytes (the first: a %zu-byte "
		                    "key; the rule is row + NULs in row + 16 + qualifier <= %u); "
		                    "nothing was changed: shorten or delete them with the mrtx "
		                    "that wrote them, then upgrade", u->path, bad,
		                    STORE_VERSION_KEY, first, MRTX_MAX_KEY);
	return 0;
}

/* The bytes the seals add (every data record's, from format 4 on). */
static int count_data(up *u, MDB_cursor *cur, size_t *grow)
{
	MDB_val k = mv("\1", 1), v;
	int rc;

	*grow = 0;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
		*grow += LMDB_SEAL;
	return rc == MDB_NOTFOUND ? 0 : up_err(u, rc, "read the data");
}

/* The version of the cells of the row whose P . enc(row) is key[0..re):
 * its lock's (row_ts), or 0 for a row without one. */
static int row_version(up *u, MDB_txn *txn, const uint8_t *key, size_t re, uint64_t *ts)
{
	uint8_t lk[MRTX_MAX_KEY + 1];
	MDB_val k, v;
	int rc;

	memcpy(lk, key, re);
	lk[re] = LOCK_TAG;
	k = mv(lk, re + 1);
	*ts = 0;
	if ((rc = mdb_get(txn, u->dbi, &k, &v)) == MDB_NOTFOUND)
		return 0;
	if (rc)
		return up_err(u, rc, "read a lock");
	if (u->row_ts(v.mv_data, v.mv_size, ts) < 0)
		return mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: a malformed lock record",
		                    u->path);
	return 0;
}

/* The unsettled lock records (format 5, lmdb_unsettled.c) in txn. */
static int count_locks(up *u, MDB_txn *txn, uint64_t *n)
{
	MDB_cursor *cur;
	int rc;

	*n = 0;
	if ((rc = mdb_cursor_open(txn, u->dbi, &cur)))
		return up_err(u, rc, "read");
	rc = lmdb_unsettled_count(cur, u->lock_order, n);
	mdb_cursor_close(cur);
	return rc ? up_err(u, rc, "read the lock records") : 0;
}

/* Count the unsettled lock records in txn and store the count. */
static int count_unsettled(up *u, MDB_txn *txn)
{
	uint64_t n;
	int rc;

	if ((rc = count_locks(u, txn, &n)))
		return rc;
	if ((rc = lmdb_unsettled_put(txn, u->dbi, n)))
		return up_err(u, rc, "write the count of unsettled locks");
	return 0;
}

/* Where the pass in progress resumes: the key stored by its last batch,
 * copied into from (else the first data key). */
static int resume_at(up *u, MDB_txn *txn, uint8_t *from, MDB_val *k)
{
	MDB_val rk = mv(RESUME_KEY, RESUME_LEN), v;
	int rc = mdb_get(txn, u->dbi, &rk, &v);

	if (rc == 0 && v.mv_size >= 1 && v.mv_size <= MRTX_MAX_KEY) {
		memcpy(from, v.mv_data, v.mv_size);
		*k = mv(from, v.mv_size);
		return 0;
	}
	if (rc == MDB_NOTFOUND) {
		from[0] = 1; /* (data keys start at prefix 0x0100) */
		*k = mv(from, 1);
		return 0;
	}
	return rc ? up_err(u, rc, "read the resume key") :
	       mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: the resume key is malformed", u->path);
}

/* The header pass's last write, in its last batch: the safe point above
 * every converted version, and on to the seal pass from the start. */
static int header_done(up *u, MDB_txn *txn)
{
	MDB_val rk = mv(RESUME_KEY, RESUME_LEN), sk = mv("\0g/safe", 7), sv;
	uint64_t safe = MRTX_MAX(mrtx__now_us(), u->max_ts + 1), old = 0;
	int rc;

	if ((rc = mdb_get(txn, u->dbi, &sk, &sv)) == 0 && sv.mv_size == 8)
		memcpy(&old, sv.mv_data, 8);
	else if (rc && rc != MDB_NOTFOUND)
		return up_err(u, rc, "read the safe point");
	safe = MRTX_MAX(safe, old);
	sv = mv(&safe, 8);
	if ((rc = mdb_put(txn, u->dbi, &sk, &sv, 0)))
		return up_err(u, rc, "write the safe point");
	if ((rc = mdb_del(txn, u->dbi, &rk, NULL)) && rc != MDB_NOTFOUND)
		return up_err(u, rc, "remove the resume key");
	return put_u32(u, txn, "\0format", 7, FORMAT_SEALING);
}

static int give_seal(up *u, const MDB_val *k, const MDB_val *v, MDB_val *nv);

/* Seal every metadata record (format 7): they are few (the tables, their
 * policies, upper layers' records), so this is one pass in txn. */
static int seal_meta(up *u, MDB_txn *txn)
{
	MDB_cursor *cur;
	MDB_val k = mv("\0", 1), v;
	int rc;

	if ((rc = mdb_cursor_open(txn, u->dbi, &cur)))
		return up_err(u, rc, "read the metadata");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	     rc == 0 && ((const uint8_t *)k.mv_data)[0] == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uint8_t key[MRTX_MAX_KEY];
		MDB_val put;

		memcpy(key, k.mv_data, k.mv_size);
		k = mv(key, k.mv_size);
		if ((rc = give_seal(u, &k, &v, &put)))
			break;
		rc = mdb_cursor_put(cur, &k, &put, 0);
		mrtx__free(put.mv_data);
		if (rc) {
			rc = up_err(u, rc, "seal the metadata");
			break;
		}
		u->cells++;
	}
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND || (rc == 0 && ((const uint8_t *)k.mv_data)[0] != 0))
		return 0;
	return mrtx__is_code(rc) ? rc : up_err(u, rc, "read the metadata");
}

/* The tally of the metadata records in txn (sealed by now, each seal
 * checked), the format record's own left out (every other key that starts with 0x00:
 * lmdb_mcount.c). */
static int tally_meta(up *u, MDB_txn *txn, lmdb_mtally *t)
{
	MDB_cursor *cur;
	MDB_val k = mv("\0", 1), v;
	int rc;

	*t = (lmdb_mtally){ 0, 0 };
	if ((rc = mdb_cursor_open(txn, u->dbi, &cur)))
		return up_err(u, rc, "count the metadata");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	     rc == 0 && ((const uint8_t *)k.mv_data)[0] == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		MDB_val chk = v;

		if (k.mv_size == 7 && memcmp(k.mv_data, "\0format", 7) == 0)
			continue;
		/* (format 7's seals, which the upgrade did not write, checked: a
		 * damaged record is refused here, not tallied as sound) */
		if ((rc = lmdb_unseal(&k, &chk)))
			break;
		lmdb_mtally_add(t, &k, &v);
	}
	mdb_cursor_close(cur);
	return rc == 0 || rc == MDB_NOTFOUND ? 0 : up_err(u, rc, "count the metadata");
}

/* The last write of the conversion: the metadata sealed, the count of
 * unsettled lock records (read through the seals), and format 8, sealed,
 * with the tally of the metadata records. */
static int finish(up *u, MDB_txn *txn)
{
	lmdb_mtally t;
	int rc;

	if ((!u->meta_sealed && (rc = seal_meta(u, txn))) || (rc = count_unsettled(u, txn)) ||
	    (rc = tally_meta(u, txn, &t)))
		return rc;
	if (u->meta_sealed)
		u->cells++; /* (the format record: what format 7 converts) */
	return (rc = lmdb_format_put(txn, u->dbi, &t)) ? up_err(u, rc, "write the format") : 0;
}

/* The seal pass's last write, in its last batch: the resume key goes and
 * the store is finished. */
static int seal_done(up *u, MDB_txn *txn)
{
	MDB_val rk = mv(RESUME_KEY, RESUME_LEN);
	int rc;

	if ((rc = mdb_del(txn, u->dbi, &rk, NULL)) && rc != MDB_NOTFOUND)
		return up_err(u, rc, "remove the resume key");
	return finish(u, txn);
}

/* The header pass's conversion of the record at k (locks stay as they
 * are): into *nv (allocated), or *nv = NULL to leave it. */
static int give_header(up *u, MDB_txn *txn, const MDB_val *k, const MDB_val *v, size_t re,
                       int lock, uint8_t *rowk, size_t *rowlen, uint64_t *rts, MDB_val *nv)
{
	int rc;

	nv->mv_data = NULL;
	if (lock)
		return 0;
	if (re != *rowlen || memcmp(rowk, k->mv_data, re) != 0) {
		memcpy(rowk, k->mv_data, re);
		*rowlen = re;
		if ((rc = row_version(u, txn, rowk, re, rts)))
			return rc;
		u->max_ts = MRTX_MAX(u->max_ts, *rts);
	}
	if (u->legacy && v->mv_size >= CELL_HDR) {
		uint8_t hdr[CELL_HDR];

		lmdb_cell_hdr(hdr, *rts, CELL_GONE);
		if (memcmp(v->mv_data, hdr, CELL_HDR) == 0)
			return 0; /* converted by the earlier release's last batch */
	}
	nv->mv_size = CELL_HDR + v->mv_size;
	if (!(nv->mv_data = mrtx__malloc(nv->mv_size)))
		return mrtx__seterr(MRTX_ENOMEM, "upgrade %s: out of memory", u->path);
	lmdb_cell_hdr(nv->mv_data, *rts, CELL_GONE);
	memcpy((uint8_t *)nv->mv_data + CELL_HDR, v->mv_data, v->mv_size);
	return 0;
}

/* The seal pass's conversion: every data record gets its seal. */
static int give_seal(up *u, const MDB_val *k, const MDB_val *v, MDB_val *nv)
{
	uint32_t c = lmdb_seal_of(k, v->mv_data, v->mv_size);
	uint8_t *d;

	nv->mv_size = v->mv_size + LMDB_SEAL;
	if (!(d = nv->mv_data = mrtx__malloc(nv->mv_size)))
		return mrtx__seterr(MRTX_ENOMEM, "upgrade %s: out of memory", u->path);
	memcpy(d, v->mv_data, v->mv_size);
	for (unsigned i = 0; i < LMDB_SEAL; i++)
		d[v->mv_size + i] = (uint8_t)(c >> (8 * i));
	return 0;
}

/* One batch of pass (PASS_HEADER, PASS_SEAL) from its resume key; *done
 * when the data ended (the pass's last write made in the same txn). */
static int batch(up *u, int pass, int *done)
{
	uint8_t from[MRTX_MAX_KEY + 1], rowk[MRTX_MAX_KEY + 1];
	size_t n = 0, rowlen = 0;
	uint64_t rts = 0;
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	*done = 0;
	if ((rc = mdb_txn_begin(u->env, NULL, 0, &txn)))
		return up_err(u, rc, "begin");
	if ((rc = mdb_cursor_open(txn, u->dbi, &cur))) {
		mdb_txn_abort(txn);
		return up_err(u, rc, "begin");
	}
	if ((rc = put_u32(u, txn, "\0format", 7,
	                  pass == PASS_SEAL ? FORMAT_SEALING :
	                  u->legacy ? FORMAT_UPGRADING : FORMAT_HEADERS)) ||
	    (rc = resume_at(u, txn, from, &k)))
		goto fail;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0 && n < BATCH;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uint8_t key[MRTX_MAX_KEY];
		size_t klen = k.mv_size, re;
		MDB_val put;
		int lock;

		if (!(re = row_end(&k, &lock))) {
			rc = mrtx__seterr(MRTX_ECORRUPT, "upgrade %s: an undecodable data key",
			                  u->path);
			goto fail;
		}
		memcpy(key, k.mv_data, klen);
		k = mv(key, klen);
		rc = pass == PASS_HEADER ?
		     give_header(u, txn, &k, &v, re, lock, rowk, &rowlen, &rts, &put) :
		     give_seal(u, &k, &v, &put);
		if (rc)
			goto fail;
		if (!put.mv_data)
			continue;
		rc = mdb_cursor_put(cur, &k, &put, 0);
		mrtx__free(put.mv_data);
		if (rc) {
			rc = up_err(u, rc, "convert a record");
			goto fail;
		}
		n++;
	}
	if (rc == MDB_NOTFOUND) {
		*done = 1;
		if ((rc = pass == PASS_HEADER ? header_done(u, txn) : seal_done(u, txn)))
			goto fail;
	} else if (rc) {
		rc = up_err(u, rc, "read the data");
		goto fail;
	} else {
		/* the key the next batch starts at (the one the loop stopped on;
		 * copied out of the page first) */
		MDB_val rk = mv(RESUME_KEY, RESUME_LEN);

		memcpy(from, k.mv_data, k.mv_size);
		k = mv(from, k.mv_size);
		if ((rc = mdb_put(txn, u->dbi, &rk, &k, 0))) {
			rc = up_err(u, rc, "write the resume key");
			goto fail;
		}
	}
	mdb_cursor_close(cur);
	if ((rc = mdb_txn_commit(txn)))
		return up_err(u, rc, "commit a batch");
	if (pass == PASS_SEAL)
		u->cells += n;
	return 0;
fail:
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	return rc;
}

/* fn(u, txn) in one write transaction of its own. */
static int one_write(up *u, int (*fn)(up *u, MDB_txn *txn))
{
	MDB_txn *txn;
	int rc;

	if ((rc = mdb_txn_begin(u->env, NULL, 0, &txn)))
		return up_err(u, rc, "begin");
	if ((rc = fn(u, txn))) {
		mdb_txn_abort(txn);
		return rc;
	}
	if ((rc = mdb_txn_commit(txn)))
		return up_err(u, rc, "commit");
	return 0;
}

/* The timestamp page's ring has no entry for the upgrade's writes: it goes
 * before the first (the next open makes it anew from the stored ceiling). */
static int drop_ts_page(up *u)
{
	char file[4096];
	int rc;

	if ((rc = mrtx__path_join(file, sizeof(file), u->path, "ts.shm", "upgrade")))
		return rc;
	if (unlink(file) != 0 && errno != ENOENT)
		return mrtx__sys_err("upgrade", "remove", file, errno);
	return 0;
}

int lmdb_upgrade(const char *path, lmdb_upgrade_ts_fn row_ts, lmdb_lock_order_fn lock_order,
                 uint64_t *cells, int *was)
{
	up u = { .path = path, .row_ts = row_ts, .lock_order = lock_order };
	char file[4096];
	struct stat sb;
	MDB_txn *txn;
	MDB_cursor *cur;
	uint32_t fmt = 0;
	size_t grow = 0;
	int rc, done = 0, lockfd = -1;

	*cells = 0;
	*was = 0;
	if ((rc = mrtx__path_join(file, sizeof(file), path, "data.mdb", "upgrade")))
		return rc;
	if (stat(file, &sb) != 0)
		return mrtx__seterr(MRTX_ENOTSTORE, "%s: no store here to upgrade (no data.mdb)", path);
	if (!S_ISREG(sb.st_mode))
		return mrtx__seterr(MRTX_ENOTSTORE, "%s is not a regular file: no store here to "
		                    "upgrade", file);
	/* (fcntl locks are the process's: no handle of this process may have
	 * the store open, nor open it meanwhile) */
	if ((rc = lmdb_registry_lock(path)))
		return rc;
	if ((rc = exclusive(&u, &lockfd))) {
		lmdb_registry_unlock();
		return rc;
	}
	if ((rc = mdb_env_create(&u.env)) || (rc = mdb_env_set_mapsize(u.env, 0)) ||
	    (rc = mdb_env_open(u.env, path, MDB_NOTLS | MDB_NOLOCK, 0600))) {
		rc = up_err(&u, rc, "open");
		goto out;
	}
	lmdb_span_add(&u.span, u.env);
	if ((rc = mdb_txn_begin(u.env, NULL, MDB_RDONLY, &txn))) {
		rc = up_err(&u, rc, "begin");
		goto out;
	}
	if ((rc = mdb_dbi_open(txn, NULL, 0, &u.dbi)) ||
	    (rc = mdb_set_compare(txn, u.dbi, lmdb_key_cmp))) {
		mdb_txn_abort(txn);
		rc = up_err(&u, rc, "open the database");
		goto out;
	}
	if ((rc = get_format(&u, txn, &fmt))) {
		mdb_txn_abort(txn);
		goto out;
	}
	*was = (int)fmt;
	if (fmt == META_FORMAT) {
		/* nothing to convert; a count of unsettled locks that is wrong
		 * or missing (`mrtx check` says so) is counted anew.  Metadata
		 * that does not match its tally is damage, not a count to
		 * redo: refused, as the open refuses it */
		int64_t stored = -1;
		uint64_t n;

		if ((rc = mdb_cursor_open(txn, u.dbi, &cur)) == 0) {
			rc = lmdb_meta_walk(cur, NULL, NULL);
			mdb_cursor_close(cur);
			cur = NULL;
		}
		if (rc) {
			mdb_txn_abort(txn);
			rc = up_err(&u, rc, "read the metadata");
			goto out;
		}
		rc = count_locks(&u, txn, &n);
		if (rc == 0 && (rc = lmdb_unsettled_read(txn, u.dbi, &stored)))
			rc = up_err(&u, rc, "read the count of unsettled locks");
		mdb_txn_abort(txn);
		if (rc || (stored >= 0 && (uint64_t)stored == n))
			goto out;
		if ((rc = drop_ts_page(&u)))
			goto out;
		/* (a store of this format whose count is wrong or missing:
		 * counted anew, in one write) */
		if ((rc = one_write(&u, count_unsettled)) == 0 && (rc = mdb_env_sync(u.env, 1)))
			rc = up_err(&u, rc, "sync");
		goto out;
	}
	if (fmt != 3 && fmt != 4 && fmt != 5 && fmt != FORMAT_DATA_SEALED &&
	    fmt != FORMAT_META_SEALED && !FORMAT_IN_HEADER_PASS(fmt) && fmt != FORMAT_SEALING) {
		mdb_txn_abort(txn);
		rc = mrtx__seterr(MRTX_ENOTSTORE, "upgrade %s: format %u; this mrtx upgrades "
		                  "formats 3 to 7 to %u", path, fmt, META_FORMAT);
		goto out;
	}
	if ((rc = mdb_cursor_open(txn, u.dbi, &cur))) {
		mdb_txn_abort(txn);
		rc = up_err(&u, rc, "read");
		goto out;
	}
	/* (formats 6 and 7: the data is sealed; only the metadata's seals, or
	 * its count, are new) */
	rc = fmt == 3 ? check_keys(&u, txn, cur, &grow) :
	     fmt == FORMAT_DATA_SEALED || fmt == FORMAT_META_SEALED ? 0 :
	     count_data(&u, cur, &grow);
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	if (rc)
		goto out;
	/* Room for the headers (and LMDB's copy-on-write of a batch): grow the
	 * map first, so the upgrade cannot stop half-way on a full map. */
	{
		MDB_envinfo info;
		MDB_stat ms;
		size_t used, want;

		if ((rc = mdb_env_info(u.env, &info)) || (rc = mdb_env_stat(u.env, &ms))) {
			rc = up_err(&u, rc, "read the environment");
			goto out;
		}
		used = (info.me_last_pgno + 1) * (size_t)ms.ms_psize;
		/* (9 bytes more a cell can split most leaf pages of tiny cells) */
		want = 2 * used + 2 * grow + ((size_t)64 << 20);
		if (want > info.me_mapsize && (rc = lmdb_span_set_mapsize(&u.span, u.env, want))) {
			rc = up_err(&u, rc, "grow the map");
			goto out;
		}
	}
	if ((rc = drop_ts_page(&u)))
		goto out;
	/* (formats 4 and 5 have their versions: only the seals, and the count
	 * the seal pass's last write makes, are new) */
	u.legacy = fmt == FORMAT_UPGRADING;
	while (!done && (fmt == 3 || FORMAT_IN_HEADER_PASS(fmt)))
		if ((rc = batch(&u, PASS_HEADER, &done)) ||
		    (rc = FAILPOINT(FP_UPGRADE_AFTER_BATCH)))
			goto out;
	done = 0;
	while (!done && fmt != FORMAT_DATA_SEALED && fmt != FORMAT_META_SEALED)
		if ((rc = batch(&u, PASS_SEAL, &done)) || (rc = FAILPOINT(FP_UPGRADE_AFTER_BATCH)))
			goto out;
	/* (formats 6 and 7 to 8: the metadata sealed, or already, with the
	 * counts and the format, in one write) */
	u.meta_sealed = fmt == FORMAT_META_SEALED;
	if ((fmt == FORMAT_DATA_SEALED || fmt == FORMAT_META_SEALED) &&
	    (rc = one_write(&u, finish)))
		goto out;
	if ((rc = mdb_env_sync(u.env, 1)))
		rc = up_err(&u, rc, "sync");
	*cells = u.cells;
out:
	lmdb_span_del(&u.span);
	if (u.env) {
		mdb_env_close(u.env);
		/* Without LMDB's lock file its shared region still holds the
		 * last transaction id from before: open the environment once the
		 * usual way, which (holding the lock alone) sets the region up
		 * from the newest meta page, for the processes that wait to open
		 * it.  (Its close drops this process's locks on the file.) */
		if (mdb_env_create(&u.env) == 0) {
			int r2 = mdb_env_open(u.env, path, MDB_NOTLS, 0600);

			mdb_env_close(u.env);
			if (r2 && rc == 0)
				rc = up_err(&u, r2, "reopen");
		}
	}
	if (lockfd >= 0)
		close(lockfd); /* (the lock goes with it: others may open now) */
	lmdb_registry_unlock();
	return rc;
}
