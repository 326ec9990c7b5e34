/* testutil.h - helpers shared by the cmocka tests. */
#ifndef MRTX_TESTUTIL_H
#define MRTX_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "mrtx.h"

/* A fresh empty directory under $TMPDIR; caller frees; removed by tu_rmrf. */
char *tu_tmpdir(const char *tag);
void tu_rmrf(const char *path);
/* Open a fresh store with the given options (NULL = defaults + nosync). */
mrtx_db *tu_open_fresh(const char *tag, char **path_out, const mrtx_options *opts);
/* Get a cell in a fresh transaction; returns rc, copies value to buf (NUL-terminated). */
int tu_get_str(mrtx_db *db, const char *table, const char *row, const char *fq,
               char *buf, size_t bufsz);
/* Put "family:qualifier" = value in its own committed transaction. */
int tu_put_str(mrtx_db *db, const char *table, const char *row, const char *fq,
               const char *value);

#endif
