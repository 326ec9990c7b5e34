/*
 * layout.c - print the sizes and field offsets of mrtx.h's structures and
 * the values of its constants, one "name value" line each, as the C
 * compiler sees them; test_layout.py compares them with the ctypes
 * declarations of mrtx/_capi.py, so a change of the header that the
 * binding does not follow fails a test instead of corrupting memory.
 */
#include <stddef.h>
#include <stdio.h>

#include "mrtx.h"

#define SIZE(t) printf("sizeof %s %zu\n", #t, sizeof(t))
#define OFF(t, f) printf("offsetof %s.%s %zu\n", #t, #f, offsetof(t, f))
#define CONST(c) printf("const %s %lld\n", #c, (long long)(c))

int main(void)
{
	SIZE(mrtx_bytes);
	OFF(mrtx_bytes, data);
	OFF(mrtx_bytes, size);

	SIZE(mrtx_options);
	OFF(mrtx_options, version);
	OFF(mrtx_options, durability);
	OFF(mrtx_options, map_size);
	OFF(mrtx_options, file_mode);
	OFF(mrtx_options, lock_ttl_ms);
	OFF(mrtx_options, lock_wait_ms);
	OFF(mrtx_options, read_only);
	OFF(mrtx_options, create);

	SIZE(mrtx_family_spec);
	OFF(mrtx_family_spec, name);
	OFF(mrtx_family_spec, max_versions);
	OFF(mrtx_family_spec, min_versions);
	OFF(mrtx_family_spec, ttl_ms);

	SIZE(mrtx_scan_spec);
	OFF(mrtx_scan_spec, table);
	OFF(mrtx_scan_spec, start);
	OFF(mrtx_scan_spec, end);
	OFF(mrtx_scan_spec, family);
	OFF(mrtx_scan_spec, qual_start);
	OFF(mrtx_scan_spec, qual_end);
	OFF(mrtx_scan_spec, reverse);
	OFF(mrtx_scan_spec, limit_rows);

	SIZE(mrtx_cell);
	OFF(mrtx_cell, row);
	OFF(mrtx_cell, family);
	OFF(mrtx_cell, qualifier);
	OFF(mrtx_cell, value);

	SIZE(mrtx_version);
	OFF(mrtx_version, ts);
	OFF(mrtx_version, value);

	SIZE(mrtx_key);
	OFF(mrtx_key, buf);
	OFF(mrtx_key, size);
	OFF(mrtx_key, err);

	SIZE(mrtx_key_part);
	OFF(mrtx_key_part, type);
	OFF(mrtx_key_part, width);
	OFF(mrtx_key_part, bytes);
	OFF(mrtx_key_part, u);
	OFF(mrtx_key_part, i);

	SIZE(mrtx_column);
	OFF(mrtx_column, family);
	OFF(mrtx_column, qualifier);

	SIZE(mrtx_index_spec);
	OFF(mrtx_index_spec, version);
	OFF(mrtx_index_spec, name);
	OFF(mrtx_index_spec, table);
	OFF(mrtx_index_spec, family);
	OFF(mrtx_index_spec, qualifier);
	OFF(mrtx_index_spec, index_table);
	OFF(mrtx_index_spec, cluster);
	OFF(mrtx_index_spec, ncluster);

	SIZE(mrtx_index_hit);
	OFF(mrtx_index_hit, value);
	OFF(mrtx_index_hit, row);
	OFF(mrtx_index_hit, cells);
	OFF(mrtx_index_hit, ncells);

	SIZE(mrtx_key_type);

	CONST(MRTX_MAX_KEY);
	CONST(MRTX_MAX_ROW);
	CONST(MRTX_MAX_VALUE);
	CONST(MRTX_MAX_NAME);
	CONST(MRTX_MAX_FAMILIES);
	CONST(MRTX_MAX_TABLES);
	CONST(MRTX_MAX_SPLITS);
	CONST(MRTX_OPTIONS_VERSION);
	CONST(MRTX_INDEX_SPEC_VERSION);
	CONST(MRTX_SYNC);
	CONST(MRTX_NOMETASYNC);
	CONST(MRTX_NOSYNC);
	CONST(MRTX_OK);
	CONST(MRTX_NOTFOUND);
	CONST(MRTX_CONFLICT);
	CONST(MRTX_ELOCKED);
	CONST(MRTX_EUNKNOWN);
	CONST(MRTX_EINVAL);
	CONST(MRTX_ETOOBIG);
	CONST(MRTX_ENOTABLE);
	CONST(MRTX_ECORRUPT);
	CONST(MRTX_ENOMEM);
	CONST(MRTX_ESTORE);
	CONST(MRTX_ENOFAMILY);
	CONST(MRTX_ENOTSTORE);
	CONST(MRTX_EFULL);
	CONST(MRTX_EBADTXN);
	CONST(MRTX_EEXIST);
	CONST(MRTX_EREADONLY);
	CONST(MRTX_ENOTSUP);
	CONST(MRTX_ESNAPSHOT);
	CONST(MRTX_KEY_BYTES);
	CONST(MRTX_KEY_U32);
	CONST(MRTX_KEY_U64);
	CONST(MRTX_KEY_I32);
	CONST(MRTX_KEY_I64);
	CONST(MRTX_KEY_RTS);
	CONST(MRTX_KEY_FIXED);
	CONST(MRTX_KEY_HASH);
	CONST(MRTX_KEY_SALT);
	printf("string MRTX_VERSION_STRING %s\n", MRTX_VERSION_STRING);
	printf("string MRTX_INDEX_FAMILY %s\n", MRTX_INDEX_FAMILY);
	return 0;
}
