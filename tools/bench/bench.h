/* bench.h - `mrtx bench`: mrtx against native LMDB. */
#ifndef MRTX_TOOL_BENCH_H
#define MRTX_TOOL_BENCH_H

/* argv[0] is "bench"; returns the process exit code (0, 1, 2). */
int cmd_bench(int argc, char **argv);

#endif
