/*
 * cmdline.c - console argument splitting (see cmdline.h).
 *
 * Output characters are written back into the same buffer; the write position never
 * passes the read position, because quotes and backslashes only ever drop characters.
 */
#include <errno.h>
#include <stddef.h>
#include "cmdline.h"

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Split a line into argv. */
int cmdline_split(char *line, char **argv, int max_args)
{
	char *rd = line, *wr = line;
	int argc = 0;

	if (max_args < 1)
		return -E2BIG;
	for (;;) {
		while (is_blank(*rd))
			rd++;
		if (*rd == '\0')
			break;
		if (argc == max_args - 1)
			return -E2BIG; /* keep one slot for the NULL terminator */
		argv[argc++] = wr;
		char quote = 0;
		while (*rd && (quote || !is_blank(*rd))) {
			char c = *rd++;
			if (quote == '\'' ) {
				if (c == '\'')
					quote = 0;
				else
					*wr++ = c;
			} else if (c == '\\') {
				if (*rd == '\0')
					return -EINVAL;
				*wr++ = *rd++;
			} else if (quote == '"') {
				if (c == '"')
					quote = 0;
				else
					*wr++ = c;
			} else if (c == '"' || c == '\'') {
				quote = c;
			} else {
				*wr++ = c;
			}
		}
		if (quote)
			return -EINVAL;
		/* Terminate this argument; rd may point at the blank we overwrite. */
		char *next = *rd ? rd + 1 : rd;
		*wr++ = '\0';
		rd = next;
	}
	argv[argc] = NULL;
	return argc;
}
