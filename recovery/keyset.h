/*
 * keyset.h - a growable hash map from byte strings to a small value, for
 * the whole-store walks (check.c, sweep.c) that must remember what they
 * learnt about a transaction instead of re-reading its primary for every
 * secondary they meet.  Keys are copied; nothing is ever removed; the set
 * is freed in one call.  Not thread-safe.
 */
#ifndef MRTX_KEYSET_H
#define MRTX_KEYSET_H

#include "../storage/common.h"

typedef struct keyset {
	struct keyset_slot *slots; /* open addressing, linear probing */
	size_t cap, n;             /* cap is 0 or a power of two */
	mrtx_buf keys;             /* every key's bytes, back to back */
} keyset;

#define KEYSET_INIT { NULL, 0, 0, MRTX_BUF_INIT }

/*
 * Map key (k1 . k2 . k3: the parts are concatenated, any may be empty) to
 * value.  Returns 0 when it was added, 1 when the key was present (its
 * value is left unchanged), MRTX_ENOMEM.
 */
int keyset_add(keyset *s, mrtx_bytes k1, mrtx_bytes k2, mrtx_bytes k3, uint32_t value);
/* 1 and *value (may be NULL) when present, else 0. */
int keyset_get(const keyset *s, mrtx_bytes k1, mrtx_bytes k2, mrtx_bytes k3,
               uint32_t *value);
void keyset_free(keyset *s);

#endif
