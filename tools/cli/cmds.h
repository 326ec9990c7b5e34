/*
 * cmds.h - the subcommands of `mrtx`.  Each takes argv[0] = its name and
 * returns the process exit code (EXIT_OK, EXIT_FAIL, EXIT_USAGE).
 */
#ifndef MRTX_TOOL_CMDS_H
#define MRTX_TOOL_CMDS_H

#include <stdio.h>

#include "mrtx.h"

/* cmd_data.c: one transaction each */
int cmd_create_table(int argc, char **argv);
int cmd_put(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_del(int argc, char **argv);
int cmd_delrow(int argc, char **argv);
int cmd_scan(int argc, char **argv);
/* Print every cell of spec to f, one "ROW FAMILY:QUALIFIER VALUE" line each,
   escaped (ROW and QUALIFIER with spaces escaped too). */
int scan_print_cells(mrtx_txn *txn, const mrtx_scan_spec *spec, FILE *f);
/* Print every cell of one row to f, one "FAMILY:QUALIFIER VALUE" line each,
   escaped as scan_print_cells does; *ncells: how many. */
int row_print_cells(mrtx_txn *txn, const char *table, mrtx_bytes row, FILE *f,
                    size_t *ncells);

/* cmd_txn.c: a scripted transaction */
int cmd_txn(int argc, char **argv);

/* cmd_rmw.c: read-modify-write, one transaction each */
int cmd_incr(int argc, char **argv);
int cmd_append(int argc, char **argv);
int cmd_check_and_put(int argc, char **argv);
/* `mrtx check STORE TABLE ROW F:Q OP N|absent|present` (cmd_check hands
   it over when given a cell) */
int cmd_check_cell(int argc, char **argv);

/* script_run.c: script_run's outcomes besides 0 and the mrtx errors (which
   are negative).  Nothing of the command was written. */
enum {
	SCRIPT_RC_CHECK = 1, /* check or check-and-put: the condition does not hold */
	SCRIPT_RC_VALUE = 2  /* incr, check: the cell is no counter, or incr overflows;
	                        append: the value would grow too big */
};
/* The language's commands, one or more lines each, for --help and help. */
extern const char script_help_commands[];
struct script_cmd;
/* Run one parsed script command (tools/cli/script.h) in txn, printing what a
   read or incr returns to out (a missing cell as "(not found)"); *step names
   the command.  Returns 0, the mrtx error (not printed), or SCRIPT_RC_*
   with the message in msg (msglen bytes, NUL-terminated). */
int script_run(mrtx_txn *txn, const struct script_cmd *c, FILE *out, const char **step,
               char *msg, size_t msglen);

/* cmd_shell.c: an interactive shell */
int cmd_shell(int argc, char **argv);

/* cmd_admin.c: lock inspection and recovery */
int cmd_locks(int argc, char **argv);
int cmd_lock(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_stats(int argc, char **argv);

/* cmd_check.c */
int cmd_check(int argc, char **argv);

/* cmd_schema.c: tables, describe */
int cmd_tables(int argc, char **argv);
int cmd_describe(int argc, char **argv);

/* cmd_ddl.c: add-family, alter, drop-table, truncate */
int cmd_add_family(int argc, char **argv);
int cmd_alter(int argc, char **argv);
int cmd_drop_table(int argc, char **argv);
int cmd_truncate(int argc, char **argv);

/* cmd_index.c: index create|list|scan|drop */
int cmd_index(int argc, char **argv);
/* 0 if table is not the index table of an index, else EXIT_FAIL (or the
   failure of listing the indexes) with the message printed: the writing
   subcommands call it before writing table. */
int tool_refuse_index_table(const char *cmd, mrtx_db *db, const char *table);
/* 1 with the index's name in index (n bytes) if table is the index table
   of an index, 0 if not, or the mrtx error of listing the indexes. */
int tool_index_of(mrtx_db *db, const char *table, char *index, size_t n);

/* cmd_import.c: import a TSV or CSV file */
int cmd_import(int argc, char **argv);

/* cmd_dump.c: dump, load (format in dumpfmt.h); cmd_backup.c */
int cmd_dump(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_backup(int argc, char **argv);
int cmd_upgrade(int argc, char **argv);
int cmd_gc(int argc, char **argv);

/* `mrtx sim`: runs mrtx-sim (cmd_sim.c). */
int cmd_sim(int argc, char **argv);

#endif
