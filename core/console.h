/*
 * console.h - the serial console shell.
 */
#ifndef CORE_CONSOLE_H
#define CORE_CONSOLE_H

#define CONSOLE_PROMPT "p2pstore> "

/* Print the first prompt and start taking input (the console poller runs the shell). */
void console_start(void);

/* Run one command line as if typed (tests, boot scripts). Returns the command's rc,
 * or -ENOENT for an unknown command. */
int console_run_line(char *line);

#endif
