/*
 * breaks.c - the simulator's safeguard switches (breaks.h).
 */
#include "storage/breaks.h"

#include <string.h>

_Atomic unsigned mrtx__breaks;

unsigned mrtx__break_of(const char *name)
{
	static const struct {
		const char *name;
		unsigned bit;
	} all[] = {
		{ "reads", MRTX_BREAK_READS },       { "ranges", MRTX_BREAK_RANGES },
		{ "primary", MRTX_BREAK_PRIMARY },   { "point", MRTX_BREAK_POINT },
		{ "snapshot", MRTX_BREAK_SNAPSHOT },
	};

	for (size_t i = 0; name && i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(name, all[i].name) == 0)
			return all[i].bit;
	return 0;
}
