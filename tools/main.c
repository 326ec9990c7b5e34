/* main.c - placeholder dispatcher (the tool is being written). */
#include <stdio.h>
#include <string.h>

#include "chaos.h"

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "chaos") == 0)
		return cmd_chaos(argc - 1, argv + 1);
	fprintf(stderr, "usage: mrtx SUBCOMMAND ...\n");
	return 2;
}
