/*
 * core_commands.c - the shell's own commands: help, uptime, log, stats, poweroff,
 * reboot, bootinfo.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../arch/arch.h"
#include "../lib/clock.h"
#include "../lib/command.h"
#include "../lib/log.h"
#include "../lib/stats.h"
#include "../lib/string_fast.h"
#include "kernel.h"

static int compare_commands(const void *a, const void *b)
{
	const struct console_command *const *x = a, *const *y = b;
	return strcmp((*x)->name, (*y)->name);
}

static int help_command(int argc, char **argv)
{
	const struct console_command *c, *sorted[256];
	size_t n = 0;
	int verbose = argc > 1 && strcmp(argv[1], "-v") == 0;

	if (argc > 1 && !verbose) {
		LINKER_SET_FOREACH(console_commands, c) {
			if (strcmp(c->name, argv[1]) == 0) {
				printf("%s %s\n  %s\n  (registered by %s)\n", c->name, c->usage, c->help, c->file);
				return 0;
			}
		}
		printf("help: no command '%s'\n", argv[1]);
		return -ENOENT;
	}
	LINKER_SET_FOREACH(console_commands, c)
		if (n < sizeof(sorted) / sizeof(sorted[0]))
			sorted[n++] = c;
	qsort(sorted, n, sizeof(sorted[0]), compare_commands);
	for (size_t i = 0; i < n; i++) {
		char head[160];
		snprintf(head, sizeof(head), "%s %s", sorted[i]->name, sorted[i]->usage);
		/* a long usage gets a line of its own, the help goes under it */
		const char *sep = strlen(head) > 28 ? "\n                               " : " ";
		if (verbose)
			printf("  %-28s%s%-52s [%s]\n", head, sep, sorted[i]->help, sorted[i]->file);
		else
			printf("  %-28s%s%s\n", head, sep, sorted[i]->help);
	}
	printf("%zu commands; 'help -v' shows which file registered each\n", n);
	return 0;
}
CONSOLE_COMMAND(help, "[-v | COMMAND]", "list the commands, or explain one", help_command);

static int uptime_command(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	uint64_t now = clock_now_ns();
	printf("up %llu.%03llu s; boot (efi_main to prompt) took %llu ms; %s %llu MHz (%s)\n",
	       (unsigned long long)(now / NSEC_PER_SEC), (unsigned long long)(now % NSEC_PER_SEC / NSEC_PER_MSEC),
	       (unsigned long long)(kernel_boot_ns() / NSEC_PER_MSEC),
	       ARCH_COUNTER_NAME, (unsigned long long)(arch_counter_hz() / 1000000), arch_clock_reference());
	return 0;
}
CONSOLE_COMMAND(uptime, "", "time since efi_main and the boot time", uptime_command);

static int log_command(int argc, char **argv)
{
	const struct log_module *m;

	if (argc == 1) {
		LINKER_SET_FOREACH(log_modules, m)
			printf("  %-12s %s\n", m->name, log_level_name(*m->level));
		printf("lines: %lu errors, %lu warnings, %lu info, %lu debug\n", log_count(LOG_ERR),
		       log_count(LOG_WARN), log_count(LOG_INFO), log_count(LOG_DEBUG));
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "show") == 0) {
		static char buf[32 * 1024];
		size_t n = log_ring_read(buf, sizeof(buf));
		fwrite(buf, 1, n, stdout);
		return 0;
	}
	if (argc != 3)
		return -EINVAL;
	int level = log_parse_level(argv[2]);
	if (level < 0) {
		printf("log: level must be err, warn, info or debug\n");
		return -EINVAL;
	}
	int rc = log_set_level(argv[1], level);
	if (rc)
		printf("log: no module '%s' (type 'log' for the list)\n", argv[1]);
	return rc;
}
CONSOLE_COMMAND(log, "[show | MODULE|all err|warn|info|debug]", "show or set log levels, replay the log",
		log_command);

static int stats_command(int argc, char **argv)
{
	const struct stats_section *s;
	LINKER_SET_FOREACH(stats_sections, s) {
		if (argc > 1 && strcmp(argv[1], s->name) != 0)
			continue;
		printf("%s:\n", s->name);
		s->show();
	}
	return 0;
}
CONSOLE_COMMAND(stats, "[SECTION]", "counters of every subsystem (loop, dma, ...)", stats_command);

static int poweroff_command(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("powering off\n");
	arch_poweroff();
}
CONSOLE_COMMAND(poweroff, "", "turn the machine off", poweroff_command);

static int reboot_command(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("rebooting\n");
	arch_reboot();
}
CONSOLE_COMMAND(reboot, "", "reset the machine", reboot_command);

static const char *const mem_type_names[] = { "free", "boot-services", "loader", "runtime", "acpi", "mmio", "reserved" };

static int bootinfo_command(int argc, char **argv)
{
	const struct boot_info *bi = kernel_boot_info();
	int show_map = argc > 1 && strcmp(argv[1], "-m") == 0;

	printf("firmware: %s rev 0x%x; image at 0x%llx (%llu KiB); ExitBootServices attempts %llu\n",
	       bi->firmware_vendor, bi->firmware_revision, (unsigned long long)bi->image_base,
	       (unsigned long long)(bi->image_size >> 10), (unsigned long long)bi->exit_attempts);
	printf("acpi rsdp 0x%llx (rev %u); stack 0x%llx-0x%llx; copy engine %s\n",
	       (unsigned long long)bi->acpi_rsdp, bi->acpi_rsdp_revision, (unsigned long long)bi->stack_base,
	       (unsigned long long)(bi->stack_base + bi->stack_size), string_copy_mode_name(string_copy_mode()));
	for (uint32_t i = 0; i < bi->nfiles; i++)
		printf("config file: %s (%llu bytes)\n", bi->files[i].name, (unsigned long long)bi->files[i].size);
	uint64_t pages[7] = { 0 };
	for (uint32_t i = 0; i < bi->nmem; i++) {
		const struct boot_mem_range *r = &bi->mem[i];
		if (r->type < 7)
			pages[r->type] += r->pages;
		if (show_map)
			printf("  0x%012llx-0x%012llx %-13s efi-type %2u attr 0x%llx\n", (unsigned long long)r->base,
			       (unsigned long long)(r->base + r->pages * 4096),
			       r->type < 7 ? mem_type_names[r->type] : "?", r->efi_type, (unsigned long long)r->attr);
	}
	printf("memory map: %u ranges;", bi->nmem);
	for (int t = 0; t < 7; t++)
		printf(" %s %llu KiB%s", mem_type_names[t], (unsigned long long)(pages[t] * 4), t < 6 ? "," : "\n");
	return 0;
}
CONSOLE_COMMAND(bootinfo, "[-m]", "what the firmware handed over (-m: the memory map)", bootinfo_command);
