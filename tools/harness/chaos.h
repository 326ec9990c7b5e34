/* chaos.h - `mrtx chaos`: the crash-safety suite as a command. */
#ifndef MRTX_TOOL_CHAOS_H
#define MRTX_TOOL_CHAOS_H

/* argv[0] is "chaos"; returns the process exit code (0, 1, 2). */
int cmd_chaos(int argc, char **argv);

#endif
