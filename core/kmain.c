/*
 * kmain.c - the appliance from ExitBootServices to the poll loop.
 *
 * Order matters: the serial console and the CPU tables first (so that any fault from
 * here on is diagnosed), then the page allocator and the heap (printf needs malloc),
 * the clock, our own page tables (after which the firmware's boot-services memory is
 * free to reuse), the settings file, the registered initialisers by level, and finally
 * the console prompt and the poll loop.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../arch/arch.h"
#include "../boot/boot_info.h"
#include "../lib/clock.h"
#include "../lib/crc32.h"
#include "../lib/libc_glue.h"
#include "../lib/log.h"
#include "../lib/poller.h"
#include "../lib/string_fast.h"
#include "../mm/mm.h"
#include "config.h"
#include "console.h"
#include "kernel.h"
#include "loop.h"

LOG_MODULE_DEFINE(kernel);

#define LOW_MEMORY_END (1ull << 20)   /* leave the first MiB alone (legacy areas) */
#define HEAP_DEFAULT_MB 64
#define CONFIG_FILE "p2pstore.cfg"
#define MAX_RANGES PAGE_ALLOC_MAX_REGIONS

static struct boot_info *boot;
static uint64_t boot_ns;

/* The boot hand-off. */
const struct boot_info *kernel_boot_info(void)
{
	return boot;
}

/* Boot time. */
uint64_t kernel_boot_ns(void)
{
	return boot_ns;
}

static void early_puts(const char *s)
{
	arch_console_write(s, strlen(s));
}

static void log_to_console(const char *text, size_t len)
{
	/* log lines end in "\n": the terminal wants "\r\n" */
	if (len && text[len - 1] == '\n') {
		arch_console_write(text, len - 1);
		arch_console_write("\r\n", 2);
	} else {
		arch_console_write(text, len);
	}
}

static __attribute__((noreturn)) void kernel_exit(int status)
{
	printf("exit(%d)\n", status);
	arch_qemu_exit((uint32_t)status & 0x7f);
}

static void *page_for_tables(void)
{
	return mm_alloc_pages(1, 1);
}

/* Collect the ranges of one boot memory type above the first MiB, for mm/. */
static unsigned ranges_of_type(uint32_t type, struct page_range *out)
{
	unsigned n = 0;
	for (uint32_t i = 0; i < boot->nmem && n < MAX_RANGES; i++) {
		const struct boot_mem_range *r = &boot->mem[i];
		uint64_t base = r->base, end = r->base + r->pages * PAGE_SIZE;
		if (r->type != type || end <= LOW_MEMORY_END)
			continue;
		if (base < LOW_MEMORY_END)
			base = LOW_MEMORY_END;
		out[n].base = base;
		out[n].npages = (end - base) / PAGE_SIZE;
		n++;
	}
	return n;
}

/* Identity map every range of the memory map: RAM write-back, MMIO uncached. */
static int setup_paging(void)
{
	static struct arch_map_range map[512];
	unsigned n = 0;

	for (uint32_t i = 0; i < boot->nmem && n < 512; i++) {
		const struct boot_mem_range *r = &boot->mem[i];
		if (r->type == BOOT_MEM_RESERVED)
			continue;
		map[n].base = r->base;
		map[n].size = r->pages * PAGE_SIZE;
		map[n].cache = r->type == BOOT_MEM_MMIO ? ARCH_CACHE_UC : ARCH_CACHE_WB;
		n++;
	}
	return arch_paging_init(map, n, boot->stack_base - PAGE_SIZE, page_for_tables);
}

static void config_error(void *ctx, unsigned line, const char *message)
{
	if (line)
		log_err("%s line %u: %s", (const char *)ctx, line, message);
	else
		log_err("config: %s", message);
}

static enum arch_fault_action panic_action = ARCH_FAULT_HALT;
static const struct config_choice panic_choices[] = {
	{ "halt", ARCH_FAULT_HALT }, { "exit", ARCH_FAULT_EXIT }, { "reboot", ARCH_FAULT_REBOOT }, { NULL, 0 } };
CONFIG_ENUM(panic, "panic", &panic_action, panic_choices, "halt", NULL,
	    "after a CPU exception's diagnosis: halt, exit QEMU with status 0xff (tests), or reboot");

static unsigned loop_halt_us;
static unsigned loop_sleep_ms;
static unsigned loop_spin_us;
static unsigned loop_poll_spin_us;
static unsigned loop_poll_wakes;
static unsigned loop_quick_us;
static bool idle_halts_ok;

/* The loop.* settings in force (boot, and `config loop.X N`). */
static int apply_idle_policy(void)
{
	int rc;

	if (loop_halt_us && !idle_halts_ok) {
		if ((rc = arch_idle_init()))
			return rc;
		idle_halts_ok = true;
	}
	struct loop_idle_config c = {
		.spin_ns = loop_spin_us * 1000ull, .poll_spin_ns = loop_poll_spin_us * 1000ull,
		.quantum_ns = loop_halt_us * 1000ull, .quick_ns = loop_quick_us * 1000ull, .sleep_ns = loop_sleep_ms * 1000000ull,
		.poll_wakes = loop_poll_wakes,
	};
	loop_set_idle_policy(&c);
	return 0;
}
CONFIG_UINT(loop_halt_us, "loop.halt_us", &loop_halt_us, 0, 1000000, ARCH_LOOP_HALT_US_DEFAULT, apply_idle_policy,
	    "the longest halt while a device has no wake-up interrupt, and each halt while polling under load; "
	    "0: never halt");
CONFIG_UINT(loop_sleep_ms, "loop.sleep_ms", &loop_sleep_ms, 1, 10000, "100", apply_idle_policy,
	    "halt for at most this many ms when every device (console, NICs, drives) wakes the CPU by interrupt");
CONFIG_UINT(loop_spin_us, "loop.spin_us", &loop_spin_us, 0, 100000, "20", apply_idle_policy,
	    "poll this many us without work before arming the wake-up interrupts and halting");
CONFIG_UINT(loop_poll_spin_us, "loop.poll_spin_us", &loop_poll_spin_us, 0, 100000, "0", apply_idle_policy,
	    "while polling under load, poll this many us without work before a halt of loop.halt_us");
CONFIG_UINT(loop_poll_wakes, "loop.poll_wakes", &loop_poll_wakes, 0, 1000, "4", apply_idle_policy,
	    "device wake-ups in a row, each within loop.quick_us of its halt, that switch to polling; 0: never poll");
CONFIG_UINT(loop_quick_us, "loop.quick_us", &loop_quick_us, 0, 1000000, "250", apply_idle_policy,
	    "a device wake-up this soon after its halt began counts toward loop.poll_wakes");

/* Store every declared setting's default, then the settings file's values. */
static void load_config(void)
{
	struct config *cfg = config_global();

	config_keys_defaults(config_error, CONFIG_FILE);
	for (uint32_t i = 0; i < boot->nfiles; i++) {
		if (strcmp(boot->files[i].name, CONFIG_FILE) == 0) {
			unsigned errors = config_parse(cfg, boot->files[i].data, boot->files[i].size,
						       config_error, CONFIG_FILE);
			errors += config_keys_apply(cfg, config_error, CONFIG_FILE);
			log_info("config: %u settings from %s, %u errors", cfg->n, CONFIG_FILE, errors);
		}
	}
	arch_exception_setup(boot->image_base, boot->image_size, boot->stack_base,
			     boot->stack_base + boot->stack_size, panic_action);
}

/* Halt when idle (loop.halt_us = 0: spin, like a pure polling target). */
static void setup_idle(void)
{
	int rc;

	if ((rc = apply_idle_policy())) {
		log_warn("idle halts unavailable (%s): the loop spins", strerror(-rc));
		loop_halt_us = 0;
		apply_idle_policy();
	}
}

static void run_initcalls(void)
{
	const struct initcall *ic;
	for (int level = 0; level < INIT_LEVEL_COUNT; level++) {
		LINKER_SET_FOREACH(initcalls, ic) {
			if (ic->level != level)
				continue;
			int rc = ic->fn();
			if (rc)
				log_err("init %s failed: %s (%d)", ic->name, strerror(-rc), rc);
		}
	}
}

static void calibrate_copy(void)
{
	uint64_t ns[2];
	void *scratch = mm_alloc_pages(2, 1);
	if (!scratch)
		return;
	enum string_copy_mode m = string_calibrate(scratch, PAGE_SIZE, ns);
	log_info("memcpy: %s (4 KiB copy: 8-byte loop %llu ns, %s %llu ns)", string_copy_mode_name(m),
		 (unsigned long long)ns[0], string_copy_mode_name(STRING_COPY_CPU), (unsigned long long)ns[1]);
	enum crc32c_engine e = crc32c_calibrate(scratch, PAGE_SIZE, ns);
	log_info("crc32c: %s (4 KiB: slicing-by-8 %llu ns, %s %lld ns)", crc32c_engine_name(e),
		 (unsigned long long)ns[0], crc32c_engine_name(CRC32C_HW), ns[1] == UINT64_MAX ? -1ll : (long long)ns[1]);
	mm_free_pages(scratch, 2);
}

/* The appliance's main. */
void kmain(struct boot_info *bi)
{
	static struct page_range ranges[MAX_RANGES];
	unsigned n;
	int rc;

	boot = bi;
	/* ACPI first: on some machines the console UART is found through it (SPCR) */
	int acpi_rc = acpi_init(bi->acpi_rsdp);
	arch_console_init();
	arch_descriptors_init();
	arch_exception_setup(bi->image_base, bi->image_size, bi->stack_base, bi->stack_base + bi->stack_size,
			     ARCH_FAULT_HALT);
	arch_power_setup(bi->firmware_reset);
	libc_set_console(arch_console_write, arch_console_getc);
	libc_set_exit(kernel_exit);
	early_puts("\r\np2pstore: boot services exited, appliance starting\r\n");

	n = ranges_of_type(BOOT_MEM_FREE, ranges);
	if ((rc = mm_init(ranges, n)) || (rc = mm_heap_init(HEAP_DEFAULT_MB << 20))) {
		early_puts("p2pstore: FATAL: no memory for the page allocator or the heap\r\n");
		arch_halt();
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	log_set_sink(log_to_console);

	if (acpi_rc)
		log_warn("no valid ACPI RSDP: no PM timer, no PCIe ECAM");
	if ((rc = arch_clock_init(bi->counter_at_entry))) {
		log_err("%s calibration failed: time will not advance", ARCH_COUNTER_NAME);
	}
	if ((rc = setup_paging())) {
		log_err("page tables: %s; halting", strerror(-rc));
		arch_halt();
	}
	n = ranges_of_type(BOOT_MEM_BOOT_SERVICES, ranges);
	if ((rc = mm_add_ranges(ranges, n)))
		log_warn("could not reclaim boot-services memory: %s", strerror(-rc));
	log_info("p2pstore appliance; firmware %s; %s %llu MHz via %s; %s 0x%016llx", bi->firmware_vendor,
		 ARCH_COUNTER_NAME, (unsigned long long)(arch_counter_hz() / 1000000), arch_clock_reference(),
		 ARCH_MEMATTR_NAME, (unsigned long long)arch_memattr_value());
	log_info("memory: %llu MiB free for the appliance (%u map ranges)",
		 (unsigned long long)(mm_page_allocator()->free_pages >> 8), bi->nmem);

	load_config();
	setup_idle();
	calibrate_copy();
	run_initcalls();

	boot_ns = clock_now_ns();
	log_info("boot: efi_main to prompt in %llu.%03llu ms", (unsigned long long)(boot_ns / NSEC_PER_MSEC),
		 (unsigned long long)(boot_ns % NSEC_PER_MSEC / 1000));
	console_start();
	loop_run();
}
