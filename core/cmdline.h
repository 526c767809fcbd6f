/*
 * cmdline.h - split a console line into arguments.
 */
#ifndef CORE_CMDLINE_H
#define CORE_CMDLINE_H

#define CMDLINE_MAX_ARGS 32

/*
 * Split `line` in place into at most max_args arguments separated by blanks. "double"
 * and 'single' quotes group words; a backslash escapes the next character outside
 * single quotes. Returns argc (argv[argc] = NULL), -E2BIG for too many arguments, or
 * -EINVAL for an unterminated quote or a trailing backslash.
 */
int cmdline_split(char *line, char **argv, int max_args);

#endif
