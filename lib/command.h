/*
 * command.h - console commands, registered by the files that own them.
 *
 *   static int cmd_mem(int argc, char **argv) { ... }
 *   CONSOLE_COMMAND(mem, "mem", "page allocator and pools", cmd_mem);
 *
 * The descriptor lives in lib/ so that every layer can register a command without
 * calling up into core/, which owns the shell that runs them. A command prints with
 * printf and returns 0 or a negative errno (the shell prints the error).
 */
#ifndef LIB_COMMAND_H
#define LIB_COMMAND_H

#include "linker_set.h"

struct console_command {
	const char *name;
	const char *usage;  /* arguments, e.g. "[module level]" */
	const char *help;   /* one line */
	int (*run)(int argc, char **argv);
	const char *file;   /* the source file that registered it (help -v) */
};
LINKER_SET_DECLARE(console_commands, struct console_command);

#define CONSOLE_COMMAND(id, usage_text, help_text, fn)                                   \
	LINKER_SET_ENTRY(console_commands, struct console_command, console_command_##id) = { \
		#id, usage_text, help_text, fn, __FILE__ }

#endif
