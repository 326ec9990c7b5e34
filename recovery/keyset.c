/*
 * keyset.c - see keyset.h.  Slots hold the key's hash, its offset and
 * length in the key buffer, and the value; a lookup compares hashes first,
 * so a probe touches the key bytes only on a likely match.
 */
#include "keyset.h"

#include <string.h>

typedef struct keyset_slot {
	uint64_t hash; /* 0: empty (a real hash of 0 is stored as 1) */
	size_t off, len;
	uint32_t value;
} keyset_slot;

static uint64_t fnv(uint64_t h, mrtx_bytes b)
{
	const uint8_t *p = b.data;

	for (size_t i = 0; i < b.size; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t hash3(mrtx_bytes k1, mrtx_bytes k2, mrtx_bytes k3)
{
	uint64_t h = fnv(fnv(fnv(0xcbf29ce484222325ull, k1), k2), k3);

	h ^= h >> 29; /* FNV's low bits mix poorly; the mask uses them */
	return h ? h : 1;
}

static int key_is(const keyset *s, const keyset_slot *sl, mrtx_bytes k1, mrtx_bytes k2,
                  mrtx_bytes k3)
{
	const uint8_t *p = (const uint8_t *)s->keys.data + sl->off;

	if (sl->len != k1.size + k2.size + k3.size)
		return 0;
	return (k1.size == 0 || memcmp(p, k1.data, k1.size) == 0) &&
	       (k2.size == 0 || memcmp(p + k1.size, k2.data, k2.size) == 0) &&
	       (k3.size == 0 || memcmp(p + k1.size + k2.size, k3.data, k3.size) == 0);
}

static keyset_slot *find(const keyset *s, uint64_t h, mrtx_bytes k1, mrtx_bytes k2,
                         mrtx_bytes k3)
{
	size_t mask = s->cap - 1;

	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		keyset_slot *sl = &s->slots[i];

		if (sl->hash == 0 || (sl->hash == h && key_is(s, sl, k1, k2, k3)))
			return sl;
	}
}

static int grow(keyset *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 64;
	keyset_slot *ns = mrtx__calloc(ncap, sizeof(*ns));

	if (!ns)
		return MRTX_ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		keyset_slot *old = &s->slots[i];
		size_t j;

		if (old->hash == 0)
			continue;
		for (j = (size_t)old->hash & (ncap - 1); ns[j].hash; j = (j + 1) & (ncap - 1))
			;
		ns[j] = *old;
	}
	mrtx__free(s->slots);
	s->slots = ns;
	s->cap = ncap;
	return 0;
}

int keyset_add(keyset *s, mrtx_bytes k1, mrtx_bytes k2, mrtx_bytes k3, uint32_t value)
{
	uint64_t h = hash3(k1, k2, k3);
	keyset_slot *sl;
	size_t off = s->keys.size;
	int rc;

	/* keep the load under 1/2 so probes stay short */
	if ((s->n + 1) * 2 > s->cap && (rc = grow(s)))
		return rc;
	sl = find(s, h, k1, k2, k3);
	if (sl->hash)
		return 1;
	if ((rc = buf_put(&s->keys, k1.data, k1.size)) ||
	    (rc = buf_put(&s->keys, k2.data, k2.size)) ||
	    (rc = buf_put(&s->keys, k3.data, k3.size))) {
		s->keys.size = off;
		return rc;
	}
	sl->hash = h;
	sl->off = off;
	sl->len = k1.size + k2.size + k3.size;
	sl->value = value;
	s->n++;
	return 0;
}

int keyset_get(const keyset *s, mrtx_bytes k1, mrtx_bytes k2, mrtx_bytes k3,
               uint32_t *value)
{
	keyset_slot *sl;

	if (s->cap == 0)
		return 0;
	sl = find(s, hash3(k1, k2, k3), k1, k2, k3);
	if (!sl->hash)
		return 0;
	if (value)
		*value = sl->value;
	return 1;
}

void keyset_free(keyset *s)
{
	mrtx__free(s->slots);
	buf_free(&s->keys);
	memset(s, 0, sizeof(*s));
}
