/*
 * boot_info.h - what the UEFI boot stage hands to kmain().
 *
 * Plain C types only: this header is the contract between boot/ (the only code that
 * sees gnu-efi) and the rest of the appliance. Everything it points to lives in
 * EfiLoaderData memory, which the page allocator never hands out.
 */
#ifndef BOOT_BOOT_INFO_H
#define BOOT_BOOT_INFO_H

#include <stdint.h>

enum boot_mem_type {
	BOOT_MEM_FREE = 0,          /* EfiConventionalMemory: free now */
	BOOT_MEM_BOOT_SERVICES = 1, /* EfiBootServicesCode/Data: free once we own paging */
	BOOT_MEM_LOADER = 2,        /* EfiLoaderCode/Data: this image, its stack, boot_info */
	BOOT_MEM_RUNTIME = 3,       /* EfiRuntimeServicesCode/Data: keep, mapped */
	BOOT_MEM_ACPI = 4,          /* EfiACPIReclaimMemory / EfiACPIMemoryNVS: keep */
	BOOT_MEM_MMIO = 5,          /* EfiMemoryMappedIO(PortSpace) */
	BOOT_MEM_RESERVED = 6,      /* everything else */
};

struct boot_mem_range {
	uint64_t base;     /* physical */
	uint64_t pages;    /* 4 KiB pages */
	uint32_t type;     /* enum boot_mem_type */
	uint32_t efi_type; /* the firmware's EFI_MEMORY_TYPE, for diagnosis */
	uint64_t attr;     /* the firmware's EFI_MEMORY_* attributes */
};

#define BOOT_MAX_FILES 16
#define BOOT_FILE_NAME_MAX 48
#define BOOT_FILE_SIZE_MAX (1u << 20)

/* A file read from the ESP's \p2pstore\ directory (configuration). */
struct boot_file {
	char name[BOOT_FILE_NAME_MAX];
	const char *data;  /* NUL-terminated copy of the contents */
	uint64_t size;
};

enum boot_reset_kind {
	BOOT_RESET_COLD = 0,
	BOOT_RESET_SHUTDOWN = 2,
};

struct boot_info {
	uint64_t counter_at_entry;   /* the cycle counter (TSC, CNTVCT) when efi_main started */
	uint64_t image_base;         /* where the firmware loaded this image */
	uint64_t image_size;
	uint64_t acpi_rsdp;          /* physical address of the RSDP, 0 if none */
	uint32_t acpi_rsdp_revision;
	uint32_t nmem;
	struct boot_mem_range *mem;  /* sorted by base */
	uint32_t nfiles;
	struct boot_file files[BOOT_MAX_FILES];
	uint64_t stack_base;         /* the stack kmain runs on (below it: a guard page) */
	uint64_t stack_size;
	uint64_t exit_attempts;      /* ExitBootServices calls needed (map key changes) */
	char firmware_vendor[64];
	uint32_t firmware_revision;
	/* Reset or power off through the firmware's runtime services; returns on failure. */
	void (*firmware_reset)(int kind); /* enum boot_reset_kind */
};

/* The appliance proper: called once, on its own stack, after ExitBootServices. */
void kmain(struct boot_info *bi) __attribute__((noreturn));

#endif
