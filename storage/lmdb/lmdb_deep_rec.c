/*
 * lmdb_deep_rec.c - the records of mrtx in the main database's leaves, as
 * the deep check meets them in key order (lmdb_deep.h; the layout in
 * DESIGN §3.2 and lmdb_meta.c, lmdb_cell.c).
 *
 *   metadata (0x00 ...)  (formats 7, 8: the value's seal matches,
 *                        lmdb_seal.h) a key mrtx writes: "format" (u32: 3
 *                        to 6 bare, or an upgrade's mark; 7 sealed; 8
 *                        sealed, with the tally of the other metadata
 *                        records, lmdb_mcount.c), "store_id" (16 bytes),
 *                        "next_table" (u16 BE, a table prefix), "gen",
 *                        "tgen", "tsceil", "unsettled", "g/safe" (u64
 *                        each), "g/cursor", "upgrade", a table's record
 *                        "t/NAME" (lmdb_table_peek; prefixes unique and
 *                        below next_table), its policies "p/NAME" (16
 *                        bytes per family; a table record of that name
 *                        in the store), or an upper layer's "x/NAME"
 *                        (any lowercase letter but t)
 *   data (P ...)         (formats 6 to 8: the value's seal matches)
 *                        P the prefix of a table; then a row encoding
 *                        that decodes (keyenc_get); then a family id of
 *                        the table's and a qualifier (a cell: a value with
 *                        its 9-byte version header, flags GONE or
 *                        DELETED), or 0xFF (the lock record: the layer
 *                        above's check, store_file_opts.lock_check), or
 *                        0xFF and a history key (lmdb_hist_parse; a flags
 *                        byte)
 *   each row             cells and history only with a lock record (every
 *                        row a transaction wrote has one; it sorts after
 *                        the row's cells and before its history)
 *   stamps               a cell's version, a history entry's, a STABLE or
 *                        COMMITTED lock record's commit timestamp at most
 *                        the stored timestamp ceiling ("tsceil")
 *   the whole            a format record and a store id; the count of
 *                        unsettled lock records equal to a recount; the
 *                        metadata records as the format record tallies
 *                        them (format 8)
 *
 * Entries lost to damage leave a gap: what spans it (a row's lock, the
 * recount, the tables a lost metadata page may have named) is not judged.
 */
#include "storage/lmdb/lmdb_deep.h"

#include <stdio.h>

#define FORMAT_PLAIN 3u /* cells without a version header */

typedef struct rtable {
	char name[MRTX_MAX_NAME + 1];
	unsigned kp, nfam;
	uint64_t page; /* of its record */
} rtable;

struct deep_rec {
	uint32_t format;           /* 0: no format record met */
	uint32_t newer;            /* a sealed format record's newer format */
	lmdb_mtally kept, met;     /* format 8's tally of the other metadata
	                            * records (lmdb_mcount.c), and theirs */
	uint64_t fmt_page;         /* the format record's page */
	/* the first metadata record met before the format record whose seal
	 * did not match (judged once the format is known) */
	uint8_t early[LF_MAX_KEY];
	size_t earlylen;
	uint64_t early_page;
	int have_id, have_next, have_uns, have_ceil, in_data;
	int gap_meta;              /* metadata entries lost: tables may be missing */
	int gapped;                /* entries lost anywhere */
	uint8_t id[16];
	unsigned next_table;
	uint64_t uns_stored, uns_counted, uns_page;
	uint64_t ceil;             /* the timestamp ceiling: no stamp is above it */
	uint16_t *slot;            /* per prefix: 1 + its table's index (0: none) */
	rtable *tables;
	size_t ntables, cap;
	/* the tables named by version-policy records ("p/NAME"), to be met
	 * by a table record each (deep_rec_end) */
	rtable *pols;
	size_t npols, polcap;
	/* the row being read: P . enc(row) */
	uint8_t row[LF_MAX_KEY];
	size_t rowlen;
	uint64_t row_page;
	int have_row, row_cells, row_lock;
};

int deep_rec_new(deep *d)
{
	if (!(d->rec = mrtx__calloc(1, sizeof(*d->rec))) ||
	    !(d->rec->slot = mrtx__calloc(0x10000, sizeof(uint16_t))))
		return MRTX_ENOMEM;
	return 0;
}

void deep_rec_free(deep *d)
{
	if (!d->rec)
		return;
	mrtx__free(d->rec->slot);
	mrtx__free(d->rec->tables);
	mrtx__free(d->rec->pols);
	mrtx__free(d->rec);
	d->rec = NULL;
}

void deep_rec_gap(deep *d)
{
	deep_rec *r = d->rec;

	r->gapped = 1;
	r->have_row = 0; /* (its lock may have been lost) */
	if (!r->in_data)
		r->gap_meta = 1;
}

#define DMG(d, page, k, kn, ...)                                           \
	do {                                                               \
		deep_bound at_ = { (k), NULL, (kn), 0, 1 };                \
		deep_damage((d), (page), (k), (kn), &at_, __VA_ARGS__);    \
	} while (0)

static int is_name(const uint8_t *s, size_t n)
{
	return n >= 1 && n <= MRTX_MAX_NAME && !memchr(s, 0, n);
}

/* Add the name in key k ("t/NAME" or "p/NAME", after 0x00) at page to
 * list *arr: the entry, or NULL when it cannot grow (then the metadata is
 * not judged whole: gap_meta). */
static rtable *name_add(deep_rec *r, rtable **arr, size_t *n, size_t *cap, const uint8_t *k,
                        size_t kn, uint64_t page)
{
	rtable *e;

	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 16;
		rtable *g = nc <= 0xFFFF ? mrtx__reallocarray(*arr, nc, sizeof(*g)) : NULL;

		if (!g) {
			r->gap_meta = 1;
			return NULL;
		}
		*arr = g;
		*cap = nc;
	}
	e = &(*arr)[(*n)++];
	memcpy(e->name, k + 3, kn - 3);
	e->name[kn - 3] = '\0';
	e->page = page;
	return e;
}

/* A table's record "t/NAME" -> v. */
static void table_rec(deep *d, uint64_t page, const uint8_t *k, size_t kn, const uint8_t *v,
                      size_t vn)
{
	deep_rec *r = d->rec;
	MDB_val mv_ = mv(v, vn);
	unsigned kp;
	int frozen;
	size_t nfam;
	rtable *t;

	if (lmdb_table_peek(&mv_, &kp, &frozen, &nfam)) {
		DMG(d, page, k, kn, "a table record that does not parse (prefix, families, mark)");
		return;
	}
	if (r->slot[kp]) {
		DMG(d, page, k, kn, "table prefix 0x%04x, already the table '%s''s", kp,
		    r->tables[r->slot[kp] - 1].name);
		return;
	}
	if (!(t = name_add(r, &r->tables, &r->ntables, &r->cap, k, kn, page)))
		return; /* (not kept: keys of it are not judged) */
	t->kp = kp;
	t->nfam = (unsigned)nfam;
	r->slot[kp] = (uint16_t)r->ntables;
}

/* Does format f seal every metadata record? */
static int meta_sealed(uint32_t f)
{
	return f == META_FORMAT || f == FORMAT_META_SEALED;
}

static int fixed(const char *name, size_t nlen, const char *want)
{
	return nlen == strlen(want) && memcmp(name, want, nlen) == 0;
}

/* Format 7 seals the metadata: the record at k, whose value's last
 * LMDB_SEAL bytes go from *vn when its seal matches.  0: damage, reported
 * (the record is not read further).  Before the format record, a record
 * whose seal does not match is read bare and judged when the format is
 * known (deep_rec_end). */
static int meta_unseal(deep *d, uint64_t page, const uint8_t *k, size_t kn, const uint8_t *v,
                       size_t *vn)
{
	deep_rec *r = d->rec;
	MDB_val key = mv(k, kn), val = mv(v, *vn);

	if (r->format && !meta_sealed(r->format))
		return 1; /* (an earlier format's bare metadata) */
	if (lmdb_unseal(&key, &val) == 0) {
		*vn = val.mv_size;
		return 1;
	}
	if (meta_sealed(r->format)) {
		DMG(d, page, k, kn, "its checksum does not match its bytes (a damaged key or value)");
		r->gap_meta = 1; /* (it may have been a table's: keys of none are not judged) */
		return 0;
	}
	if (!r->earlylen) {
		memcpy(r->early, k, kn);
		r->earlylen = kn;
		r->early_page = page;
	}
	return 1;
}

/* The format record: a bare u32 (formats 3 to 6, an upgrade's mark),
 * format 7's sealed one, or format 8's sealed u32 and tally. */
static void format_rec(deep *d, uint64_t page, const uint8_t *k, size_t kn, const uint8_t *v,
                       size_t vn)
{
	deep_rec *r = d->rec;
	uint32_t f;

	if (vn != 4 && vn < 4 + LMDB_SEAL) {
		DMG(d, page, k, kn, "a format record of %zu bytes (4; %u or %u with its checksum)",
		    vn, 4 + LMDB_SEAL, LMDB_FORMAT_LEN + LMDB_SEAL);
		return;
	}
	f = mrtx__le32_get(v);
	if (vn > 4) {
		MDB_val key = mv(k, kn), val = mv(v, vn);

		if (lmdb_unseal(&key, &val)) {
			DMG(d, page, k, kn, "its checksum does not match its bytes (a damaged key or "
			    "value)");
			return;
		}
		if (f > META_FORMAT && f < FORMAT_UPGRADING) {
			r->newer = f; /* (a later release's: its layout is its own) */
			return;
		}
		if (!(f == FORMAT_META_SEALED && val.mv_size == 4) &&
		    !(f == META_FORMAT && val.mv_size == LMDB_FORMAT_LEN)) {
			DMG(d, page, k, kn, "format %u in a record of %zu bytes with a checksum, "
			    "which no mrtx writes", (unsigned)f, vn);
			return;
		}
		if (f == META_FORMAT) {
			(void)lmdb_format_parse(f, 1, &val, &r->kept);
			r->fmt_page = page;
		}
	} else if (f != FORMAT_DATA_SEALED && f != 5 && f != 4 && f != FORMAT_PLAIN &&
	           !FORMAT_IN_HEADER_PASS(f) && f != FORMAT_SEALING) {
		DMG(d, page, k, kn, "format %u%s, which no mrtx writes", (unsigned)f,
		    meta_sealed(f) ? " without its checksum" : "");
		return;
	}
	r->format = f;
}

/* A version-policy record "p/NAME": remembered, to be matched with its
 * table's record at the end (a policy record whose key was damaged, in a
 * store of a format without metadata seals, names no table, and the table
 * it was for reads with the defaults). */
static void pol_rec(deep *d, uint64_t page, const uint8_t *k, size_t kn)
{
	deep_rec *r = d->rec;

	(void)name_add(r, &r->pols, &r->npols, &r->polcap, k, kn, page);
}

/* A metadata record 0x00 . name -> v. */
static void meta_rec(deep *d, uint64_t page, const uint8_t *k, size_t kn, const uint8_t *v,
                     size_t vn)
{
	static const char *const u64s[] = { "gen", "tgen", "tsceil", "unsettled", "g/safe" };
	deep_rec *r = d->rec;
	const char *name = (const char *)k + 1;
	size_t nlen = kn - 1;

	d->st->meta_records++;
	if (fixed(name, nlen, "format")) {
		format_rec(d, page, k, kn, v, vn);
		return;
	}
	{
		MDB_val key = mv(k, kn), raw = mv(v, vn);

		lmdb_mtally_add(&r->met, &key, &raw);
	}
	if (!meta_unseal(d, page, k, kn, v, &vn))
		return;
	if (fixed(name, nlen, "store_id")) {
		if (vn != sizeof(r->id)) {
			DMG(d, page, k, kn, "a store id of %zu bytes (16)", vn);
			return;
		}
		memcpy(r->id, v, sizeof(r->id));
		r->have_id = 1;
		return;
	}
	if (fixed(name, nlen, "next_table")) {
		if (vn != 2 || ((unsigned)v[0] << 8 | v[1]) < KP_FIRST) {
			DMG(d, page, k, kn, "a next-table record that is not a table prefix");
			return;
		}
		r->next_table = (unsigned)v[0] << 8 | v[1];
		r->have_next = 1;
		return;
	}
	for (size_t i = 0; i < sizeof(u64s) / sizeof(u64s[0]); i++)
		if (fixed(name, nlen, u64s[i])) {
			if (vn != 8) {
				DMG(d, page, k, kn, "a record of %zu bytes where a u64 is", vn);
			} else if (i == 3) {
				r->uns_stored = mrtx__le64_get(v);
				r->uns_page = page;
				r->have_uns = 1;
			} else if (i == 2) {
				r->ceil = mrtx__le64_get(v);
				r->have_ceil = 1;
				if (r->ceil >= (uint64_t)1 << 62)
					DMG(d, page, k, kn, "a timestamp ceiling of %llu, past any "
					    "timestamp", (unsigned long long)r->ceil);
			}
			return;
		}
	if (fixed(name, nlen, "g/cursor") || fixed(name, nlen, "upgrade"))
		return; /* (their values only their writers read) */
	if (nlen >= 3 && name[0] == 't' && name[1] == '/' && is_name(k + 3, nlen - 2)) {
		table_rec(d, page, k, kn, v, vn);
		return;
	}
	if (nlen >= 3 && name[0] == 'p' && name[1] == '/' && is_name(k + 3, nlen - 2)) {
		if (vn == 0 || vn % 16)
			DMG(d, page, k, kn, "a table's version policies of %zu bytes (16 per family)",
			    vn);
		else
			pol_rec(d, page, k, kn);
		return;
	}
	if (nlen >= 3 && name[0] >= 'a' && name[0] <= 'z' && name[0] != 't' && name[1] == '/')
		return; /* an upper layer's record: opaque */
	DMG(d, page, k, kn, "a metadata key mrtx never writes");
}

/* Does format f seal every data record? */
static int data_sealed(uint32_t f)
{
	return meta_sealed(f) || f == FORMAT_DATA_SEALED;
}

/* Is stamp ts above the ceiling?  Every stamp is taken below the stored
 * ceiling, raised in the same write transaction when it would be reached
 * (lmdb_ts.c), so a version or commit above it is damage (a flipped high
 * bit, mostly). */
static int above_ceiling(const deep_rec *r, uint64_t ts)
{
	return r->have_ceil && data_sealed(r->format) && ts > r->ceil;
}

/* The row being read ends: cells need a lock record after them. */
static void row_end(deep *d)
{
	deep_rec *r = d->rec;

	if (r->have_row && r->row_cells && !r->row_lock)
		DMG(d, r->row_page, r->row, r->rowlen, "a row with %d%s cells and no lock record "
		    "after them", r->row_cells, r->row_cells > 1000 ? " or more" : "");
	r->have_row = 0;
}

/* A key of table t: its row P . enc(row) is k[0..plen). */
static void data_rec(deep *d, uint64_t page, const rtable *t, const uint8_t *k, size_t kn,
                     size_t plen, const uint8_t *v, size_t vn)
{
	deep_rec *r = d->rec;
	const uint8_t *rest = k + plen;
	size_t rn = kn - plen;

	if (!r->have_row || plen != r->rowlen || memcmp(r->row, k, plen) != 0) {
		row_end(d);
		memcpy(r->row, k, plen);
		r->rowlen = plen;
		r->row_page = page;
		r->have_row = 1;
		r->row_cells = r->row_lock = 0;
	}
	if (rn == 0) {
		DMG(d, page, k, kn, "a row key with neither family, lock mark nor history after "
		    "the row");
	} else if (rest[0] == LOCK_TAG && rn == 1) {
		char why[200] = "";
		uint64_t cts = 0;

		r->row_lock = 1;
		d->st->locks++;
		if (d->o->lock_check &&
		    d->o->lock_check(v, vn, r->have_id ? r->id : NULL, &cts, why, sizeof(why)))
			DMG(d, page, k, kn, "its lock record: %s", why);
		else if (above_ceiling(r, cts))
			DMG(d, page, k, kn, "its lock record's commit timestamp %llu is above the "
			    "store's timestamp ceiling %llu", (unsigned long long)cts,
			    (unsigned long long)r->ceil);
		if (d->o->lock_order) {
			uint8_t ord[STORE_ORDER_SIZE];

			d->o->lock_order(v, vn, ord);
			r->uns_counted += ord[0] != 0;
		}
	} else if (rest[0] == LOCK_TAG) {
		uint8_t fid;
		mrtx_bytes q;
		uint64_t ts;

		d->st->history++;
		if (lmdb_hist_parse(k, kn, plen, &fid, &q, &ts))
			DMG(d, page, k, kn, "a history key that does not parse (family, qualifier "
			    "length, version)");
		else if (fid >= t->nfam)
			DMG(d, page, k, kn, "family id %u, but table '%s' has %u families", fid,
			    t->name, t->nfam);
		else if (vn < 1 || v[0] & ~(CELL_GONE | CELL_DELETED))
			DMG(d, page, k, kn, "a history value without its flags byte, or with flags "
			    "mrtx never sets");
		else if (!r->row_lock)
			DMG(d, page, k, kn, "history of a row without a lock record");
		else if (above_ceiling(r, ts))
			DMG(d, page, k, kn, "a version at timestamp %llu, above the store's "
			    "timestamp ceiling %llu", (unsigned long long)ts,
			    (unsigned long long)r->ceil);
	} else {
		d->st->cells++;
		if (r->row_cells <= 1000)
			r->row_cells++;
		if (rest[0] >= t->nfam)
			DMG(d, page, k, kn, "family id %u, but table '%s' has %u families", rest[0],
			    t->name, t->nfam);
		else if (r->format >= 4 && !FORMAT_IN_HEADER_PASS(r->format) &&
		         (vn < CELL_HDR || v[8] & ~(CELL_GONE | CELL_DELETED)))
			DMG(d, page, k, kn, "a cell value without its %u-byte version header, or with "
			    "flags mrtx never sets", CELL_HDR);
		else if (r->format >= 4 && !FORMAT_IN_HEADER_PASS(r->format) && above_ceiling(r, mrtx__le64_get(v)))
			DMG(d, page, k, kn, "a version at timestamp %llu, above the store's "
			    "timestamp ceiling %llu", (unsigned long long)mrtx__le64_get(v),
			    (unsigned long long)r->ceil);
	}
}

void deep_rec_entry(deep *d, uint64_t page, const uint8_t *k, size_t kn, const uint8_t *v,
                    size_t vn)
{
	deep_rec *r = d->rec;
	uint8_t raw[LF_MAX_KEY];
	size_t used;
	unsigned kp;

	if (kn == 0) {
		DMG(d, page, k, kn, "an empty key");
		return;
	}
	if (k[0] == 0) {
		if (kn < 2)
			DMG(d, page, k, kn, "a metadata key without a name");
		else
			meta_rec(d, page, k, kn, v, vn);
		return;
	}
	r->in_data = 1;
	if (kn < TPFX + 2) {
		row_end(d);
		DMG(d, page, k, kn, "a key of %zu bytes: too short for a table prefix and a row", kn);
		return;
	}
	kp = (unsigned)k[0] << 8 | k[1];
	if (!r->slot[kp]) {
		row_end(d);
		if (!r->gap_meta)
			DMG(d, page, k, kn, "a key of no table (prefix 0x%04x)", kp);
		return;
	}
	if (keyenc_get(raw, k + TPFX, kn - TPFX, &used) == (size_t)-1) {
		row_end(d);
		DMG(d, page, k, kn, "a row that does not decode (its escapes or its end mark)");
		return;
	}
	if (!data_sealed(r->format) && r->format != FORMAT_SEALING && r->format != 0) {
		data_rec(d, page, &r->tables[r->slot[kp] - 1], k, kn, TPFX + used, v, vn);
		return;
	}
	{
		/* formats 6 to 8: every data record's seal (lmdb_seal.h); an
		 * upgrade sealing the store, or a lost format record: where there
		 * is one */
		MDB_val key = { kn, (void *)(uintptr_t)k }, val = { vn, (void *)(uintptr_t)v };

		if (lmdb_unseal(&key, &val) == 0) {
			vn = val.mv_size;
		} else if (data_sealed(r->format)) {
			row_end(d);
			DMG(d, page, k, kn, "its checksum does not match its bytes (a damaged key or "
			    "value)");
			return;
		}
	}
	data_rec(d, page, &r->tables[r->slot[kp] - 1], k, kn, TPFX + used, v, vn);
}

void deep_rec_end(deep *d, int whole)
{
	deep_rec *r = d->rec;
	static const uint8_t fkey[] = "\0format", ikey[] = "\0store_id", ukey[] = "\0unsettled";

	row_end(d);
	if (meta_sealed(r->format) && r->earlylen)
		DMG(d, r->early_page, r->early, r->earlylen, "its checksum does not match its "
		    "bytes (a damaged key or value)");
	if (!whole || r->gapped)
		return;
	if (!r->format)
		DMG(d, STORE_NO_PAGE, fkey, sizeof(fkey) - 1, "no format record: not an mrtx "
		    "store's metadata");
	if (!r->have_id)
		DMG(d, STORE_NO_PAGE, ikey, sizeof(ikey) - 1, "no store id record");
	for (size_t i = 0; i < r->npols && !r->gap_meta; i++) {
		size_t j = 0, nl = strlen(r->pols[i].name);
		uint8_t pk[3 + MRTX_MAX_NAME];

		while (j < r->ntables && strcmp(r->tables[j].name, r->pols[i].name) != 0)
			j++;
		if (j < r->ntables)
			continue;
		memcpy(pk, "\0p/", 3);
		memcpy(pk + 3, r->pols[i].name, nl);
		DMG(d, r->pols[i].page, pk, 3 + nl, "version policies of a table the store does "
		    "not have");
	}
	for (size_t i = 0; i < r->ntables && r->have_next; i++)
		if (r->tables[i].kp >= r->next_table) {
			uint8_t tk[3 + MRTX_MAX_NAME];
			size_t nl = strlen(r->tables[i].name);

			memcpy(tk, "\0t/", 3);
			memcpy(tk + 3, r->tables[i].name, nl);
			DMG(d, r->tables[i].page, tk, 3 + nl, "table prefix 0x%04x, not below the "
			    "next table's 0x%04x", r->tables[i].kp, r->next_table);
		}
	if (r->format == META_FORMAT && !r->gap_meta && r->met.n != r->kept.n)
		DMG(d, r->fmt_page, fkey, sizeof(fkey) - 1, "the format record counts %u other "
		    "metadata records; the store holds %u (one lost whole, or written behind "
		    "mrtx's back)", (unsigned)r->kept.n, (unsigned)r->met.n);
	else if (r->format == META_FORMAT && !r->gap_meta && r->met.sum != r->kept.sum)
		DMG(d, r->fmt_page, fkey, sizeof(fkey) - 1, "the format record's digest of the "
		    "other metadata records does not match them (an older copy of one read in "
		    "its place, or one written behind mrtx's back)");
	if (data_sealed(r->format) && r->have_uns && d->o->lock_order &&
	    r->uns_stored != r->uns_counted)
		DMG(d, r->uns_page, ukey, sizeof(ukey) - 1, "the count of unsettled lock records "
		    "says %llu; the store holds %llu (`mrtx upgrade` counts them anew)",
		    (unsigned long long)r->uns_stored, (unsigned long long)r->uns_counted);
}

int deep_rec_newer(const deep *d)
{
	if (!d->rec || !d->rec->newer)
		return 0;
	return mrtx__seterr(MRTX_ENOTSTORE, "store format %u, newer than this mrtx's (%u): "
	                    "check it with the mrtx that wrote it", (unsigned)d->rec->newer,
	                    META_FORMAT);
}

void deep_rec_tables(deep *d)
{
	deep_rec *r = d->rec;

	d->st->tables = r->ntables;
	if (!d->o->table)
		return;
	for (size_t i = 0; i < r->ntables; i++)
		d->o->table(r->tables[i].name, d->kpdiff[r->tables[i].kp] > 0, d->o->payload);
}
