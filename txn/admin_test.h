/*
 * admin_test.h - for the tests only: the store behind a handle, so a test
 * can read and damage what lies below the public API, and the recovery
 * calls it drives on that store.  The tools go through admin.h instead,
 * which never hands a store out.
 */
#ifndef MRTX_ADMIN_TEST_H
#define MRTX_ADMIN_TEST_H

#include "mrtx.h"
#include "../recovery/recovery.h"

/* The store behind an open db (owned by db). */
store *mrtx__db_store(mrtx_db *db);

#endif
