/*
 * main.c - `mrtx`: the command-line tool.  Dispatches to the subcommands
 * (cmds.h, chaos.h, crashsim.h, bench.h); every subcommand takes the store directory first and
 * has --help.
 *
 * Exit codes: 0 success, 1 failure, 2 usage error.  Errors are printed as
 * "mrtx: SUBCOMMAND: message".  Byte strings in arguments and output use the
 * \xNN / \\ escapes described in util.h.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "globals.h"
#include "util.h"
#include "tools/bench/bench.h"
#include "tools/harness/chaos.h"
#include "tools/harness/crashsim.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "create-table", cmd_create_table, "create a table with its column families" },
	{ "put", cmd_put, "set one cell (one transaction)" },
	{ "get", cmd_get, "print one cell, or every cell of a row" },
	{ "del", cmd_del, "delete one cell" },
	{ "delrow", cmd_delrow, "delete a whole row (one transaction)" },
	{ "scan", cmd_scan, "print the cells of a range of rows" },
	{ "incr", cmd_incr, "add to a decimal counter (one transaction)" },
	{ "append", cmd_append, "append bytes to a cell's value (one transaction)" },
	{ "check-and-put", cmd_check_and_put, "set a cell if it holds the expected value" },
	{ "txn", cmd_txn, "run a script of reads and writes as one transaction" },
	{ "shell", cmd_shell, "interactive shell: begin/commit, editing, history" },
	{ "locks", cmd_locks, "list non-STABLE locks" },
	{ "lock", cmd_lock, "decode one row's lock record" },
	{ "recover", cmd_recover, "roll stale transactions forward or back" },
	{ "check", cmd_check, "verify the lock family" },
	{ "stats", cmd_stats, "tables, rows, cells, locks, map use, readers" },
	{ "tables", cmd_tables, "list the tables" },
	{ "describe", cmd_describe, "a table's families and secondary indexes" },
	{ "index", cmd_index, "secondary indexes: create, list, scan, drop" },
	{ "add-family", cmd_add_family, "add a column family to a table" },
	{ "alter", cmd_alter, "change a family's versions, min versions and TTL" },
	{ "drop-table", cmd_drop_table, "drop a table: its rows and its name" },
	{ "truncate", cmd_truncate, "remove every row of a table, keep the table" },
	{ "dump", cmd_dump, "write a table as text, in one transaction" },
	{ "load", cmd_load, "put the cells of a dump into a table" },
	{ "import", cmd_import, "put the rows of a TSV or CSV file into a table" },
	{ "backup", cmd_backup, "consistent copy of a live LMDB store, no lock left" },
	{ "upgrade", cmd_upgrade, "convert an older store to this format, in place" },
	{ "gc", cmd_gc, "collect old versions and deleted cells" },
	{ "chaos", cmd_chaos, "crash-safety suite" },
	{ "crashsim", cmd_crashsim, "power-loss simulation: crash states from an I/O trace" },
	{ "bench", cmd_bench, "benchmark mrtx against native LMDB" },
	{ "sim", cmd_sim, "deterministic simulation: many clients, faults, replayable" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/*
 * LMDB follows the page pointers of its file unchecked: a damaged page
 * header or pointer that mrtx's own checks (storage/lmdb/lmdb_file.c, the
 * order checks of scans) do not reach makes a read fault inside LMDB.  A
 * command that meets one says what probably happened and what to do, then
 * dies of the signal as before (so scripts and tests still see a crash).
 * Only a fault the kernel raised gets the words, not a signal sent with
 * kill.  (Not in sanitizer builds, whose own reports say more; not for
 * chaos, crashsim and bench, which judge their children by how they end.)
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MRTX_FAULT_HANDLER 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MRTX_FAULT_HANDLER 0
#endif
#endif
#ifndef MRTX_FAULT_HANDLER
#define MRTX_FAULT_HANDLER 1
#endif

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] =
		"mrtx: a memory fault: if this command read an LMDB store, its file is "
		"probably damaged (`mrtx check --deep STORE` says where; if it finds "
		"nothing, this is a bug in mrtx: please report it)\n";

	(void)uc;
	if (si && si->si_code > 0) { /* (raised by the kernel, not by kill) */
		ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);

		(void)w;
	}
	/* SA_RESETHAND restored the default action: die of it */
	raise(sig);
}

static void fault_handlers(void)
{
	struct sigaction sa;

	if (!MRTX_FAULT_HANDLER)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_RESETHAND | SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: mrtx [--map-size SIZE] [--read-only] [--two-phase] SUBCOMMAND STORE "
	        "[ARGS...]\n"
	        "       mrtx SUBCOMMAND --help | mrtx --help | mrtx --version\n\n"
	        "Multi-row ACID transactions over LMDB or Ceph RADOS.  Subcommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-13s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nRows, qualifiers and values are bytes: arguments accept \\xNN and \\\\\n"
	        "escapes, and output escapes bytes outside printable ASCII (and the\n"
	        "backslash) the same way.  Exit status: 0 success, 1 failure, 2 usage,\n"
	        "3 a condition of check-and-put or a txn script's check did not hold.\n"
	        "A subcommand's flags (options without a value, such as --json) are off\n"
	        "unless given; its --help names the default of every other option.\n"
	        "\nGlobal options (before the subcommand; not for chaos, crashsim, bench):\n"
	        "  --map-size SIZE  map size to open the store with (bytes, or K/M/G/T):\n"
	        "                   grows a full store; env MRTX_MAP_SIZE; default: the\n"
	        "                   store's own size, at least 1 GiB\n"
	        "  --read-only      open without writing anything; writes fail;\n"
	        "                   env MRTX_READ_ONLY=1; default: off (read-write)\n"
	        "  --two-phase      commit several rows with the two-phase protocol (for\n"
	        "                   crash tests; LMDB otherwise commits them in one write);\n"
	        "                   env MRTX_TWO_PHASE=1; default: off\n");
}

int main(int argc, char **argv)
{
	int sub, rc;

	if ((rc = globals_parse(argc, argv, &sub)))
		return rc;
	argc -= sub - 1; /* argv[1] is now the subcommand */
	argv += sub - 1;
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("mrtx %s\n", MRTX_VERSION_STRING);
		return EXIT_OK;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(argv[1], commands[i].name) == 0) {
			/* chaos, crashsim, bench and sim open no STORE: they make
			 * their own */
			int own = commands[i].fn == cmd_chaos || commands[i].fn == cmd_crashsim ||
			          commands[i].fn == cmd_bench || commands[i].fn == cmd_sim;

			if ((rc = globals_for(commands[i].name, own)))
				return rc;
			if (!own)
				fault_handlers();
			return commands[i].fn(argc - 1, argv + 1);
		}
	/* a store given first, as sqlite3 takes its database */
	if (argv[1][0] != '-' && argc > 2 && (strchr(argv[1], '/') || access(argv[1], F_OK) == 0))
		fprintf(stderr, "mrtx: unknown subcommand '%s': the subcommand comes first, then "
		        "the store (mrtx %s %s ...; see mrtx --help)\n", argv[1], argv[2], argv[1]);
	else
		fprintf(stderr, "mrtx: unknown %s '%s' (see mrtx --help)\n",
		        argv[1][0] == '-' ? "option" : "subcommand", argv[1]);
	return EXIT_USAGE;
}
