/*
 * console.c - the serial console shell: line editing, history and the commands that
 * files register with CONSOLE_COMMAND (lib/command.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../arch/arch.h"
#include "../lib/command.h"
#include "../lib/log.h"
#include "../lib/poller.h"
#include "cmdline.h"
#include "console.h"
#include "line_editor.h"

LOG_MODULE_DEFINE(console);

static struct line_editor console_editor;
static int console_started;

static void console_output(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	arch_console_write(text, len);
}

static const struct console_command *console_find(const char *name)
{
	const struct console_command *c;
	LINKER_SET_FOREACH(console_commands, c)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

/* Split and run one line. */
int console_run_line(char *line)
{
	char *argv[CMDLINE_MAX_ARGS];
	int argc = cmdline_split(line, argv, CMDLINE_MAX_ARGS);

	if (argc == -E2BIG) {
		printf("error: more than %d arguments\n", CMDLINE_MAX_ARGS - 1);
		return argc;
	}
	if (argc < 0) {
		printf("error: unterminated quote or trailing backslash\n");
		return argc;
	}
	if (argc == 0)
		return 0;
	const struct console_command *c = console_find(argv[0]);
	if (!c) {
		printf("%s: unknown command (type 'help' for the list)\n", argv[0]);
		return -ENOENT;
	}
	int rc = c->run(argc, argv);
	if (rc == -EINVAL)
		printf("usage: %s %s\n", c->name, c->usage);
	else if (rc < 0)
		printf("%s: error: %s (%d)\n", c->name, strerror(-rc), rc);
	return rc;
}

/* Start the shell. */
void console_start(void)
{
	le_init(&console_editor, CONSOLE_PROMPT, console_output, NULL);
	console_started = 1;
	le_start(&console_editor);
}

/* The UART is read when its receive interrupt came since the last read, while bytes keep
 * coming, and otherwise at least this often (no interrupt where the CPU does not halt, or none
 * at all: arm64). A status read is a port or MMIO access, which emulators trap: every pass did one.
 * 500 us fills under half a 16550 FIFO at 115200 baud. */
#define CONSOLE_POLL_NS (500 * 1000ull)

static uint64_t console_wakes_seen, console_next_read_ns;
static bool console_flowing;

/* Poller: feed waiting bytes to the editor; run a finished line. */
static int console_poll(unsigned budget)
{
	int work = 0;
	int c;

	if (!console_started)
		return 0;
	uint64_t wakes = arch_console_wakes(), now = poller_now_ns();
	if (!console_flowing && wakes == console_wakes_seen && now < console_next_read_ns)
		return 0;
	console_wakes_seen = wakes;
	console_next_read_ns = now + CONSOLE_POLL_NS;
	console_flowing = false;
	while ((unsigned)work < budget && (c = arch_console_getc()) >= 0) {
		console_flowing = true;
		work++;
		enum le_result r = le_feed(&console_editor, (unsigned char)c);
		if (r == LE_CONTINUE)
			continue;
		if (r == LE_DONE) {
			char line[LE_LINE_MAX];
			snprintf(line, sizeof(line), "%s", le_line(&console_editor));
			le_history_add(&console_editor, line);
			log_debug("run: %s", line);
			console_run_line(line);
		}
		le_start(&console_editor);
		break; /* one command per pass: let the other pollers run */
	}
	return work;
}

/* A received byte ends an idle halt where the architecture can make it interrupt. */
static int console_arm(bool on)
{
	(void)on; /* typed input is rare: its interrupt stays on under load too */
	return console_started ? arch_console_wake() : -ENOTSUP;
}
POLLER_WAKE(console, console_poll, console_arm);
