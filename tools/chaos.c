/* chaos.c - placeholder until the chaos suite lands. */
#include <stdio.h>

#include "chaos.h"

int cmd_chaos(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "mrtx: chaos: not implemented yet\n");
	return 1;
}
