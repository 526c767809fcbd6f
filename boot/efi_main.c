/*
 * efi_main.c - the UEFI boot stage: gather what the appliance needs from the firmware,
 * leave boot services, and enter kmain() on a stack of our own.
 *
 * This is the only file that includes gnu-efi headers. It collects the memory map,
 * the ACPI RSDP, the configuration files in the ESP's \p2pstore\ directory and the
 * firmware's reset service into a struct boot_info, then calls ExitBootServices,
 * retrying with a fresh map when the map key changed (UEFI 2.x, 7.4: the firmware may
 * change the map between GetMemoryMap and ExitBootServices; only GetMemoryMap may be
 * called between attempts, so every buffer is allocated beforehand).
 *
 * efi_main is not EFIAPI: Debian's crt0 calls it with the SysV convention.
 */
#include <efi.h>
#include <efiapi.h>
#include <efiprot.h>
#include "boot_info.h"
#include "../arch/cpu_ops.h"
#include "../arch/entry.h"

#define BOOT_STACK_PAGES 64       /* 256 KiB for kmain, plus one guard page below */
#define BOOT_MAP_SLACK 32         /* extra descriptors for map growth during exit */
#define BOOT_EXIT_ATTEMPTS 8

static EFI_SYSTEM_TABLE *boot_st;
static EFI_RUNTIME_SERVICES *boot_rt;

static void boot_print(const CHAR16 *s)
{
	if (boot_st && boot_st->ConOut)
		boot_st->ConOut->OutputString(boot_st->ConOut, (CHAR16 *)s);
}

static void boot_fail(const CHAR16 *what, EFI_STATUS st)
{
	CHAR16 hex[19];
	static const char digits[] = "0123456789abcdef";
	hex[0] = '0';
	hex[1] = 'x';
	for (int i = 0; i < 16; i++)
		hex[2 + i] = digits[(st >> (60 - 4 * i)) & 0xf];
	hex[18] = 0;
	boot_print(L"p2pstore boot: ");
	boot_print(what);
	boot_print(L" failed, status ");
	boot_print(hex);
	boot_print(L"\r\n");
}

static void *boot_alloc(UINTN bytes)
{
	void *p = NULL;
	if (boot_st->BootServices->AllocatePool(EfiLoaderData, bytes, &p) != EFI_SUCCESS)
		return NULL;
	return p;
}

static void boot_zero(void *p, UINTN n)
{
	volatile unsigned char *b = p;
	while (n--)
		*b++ = 0;
}

static int boot_guid_equal(const EFI_GUID *a, const EFI_GUID *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
	for (unsigned i = 0; i < sizeof(EFI_GUID); i++)
		if (x[i] != y[i])
			return 0;
	return 1;
}

/* Firmware reset through runtime services (identity-mapped, no SetVirtualAddressMap). */
static void boot_firmware_reset(int kind)
{
	EFI_RESET_TYPE type = kind == BOOT_RESET_SHUTDOWN ? EfiResetShutdown : EfiResetCold;
	if (boot_rt)
		boot_rt->ResetSystem(type, EFI_SUCCESS, 0, NULL);
}

static void boot_find_acpi(struct boot_info *bi)
{
	EFI_GUID acpi20 = ACPI_20_TABLE_GUID;
	EFI_GUID acpi10 = ACPI_TABLE_GUID;

	for (UINTN i = 0; i < boot_st->NumberOfTableEntries; i++) {
		EFI_CONFIGURATION_TABLE *t = &boot_st->ConfigurationTable[i];
		if (boot_guid_equal(&t->VendorGuid, &acpi20)) {
			bi->acpi_rsdp = (uint64_t)(UINTN)t->VendorTable;
			bi->acpi_rsdp_revision = 2;
			return;
		}
		if (boot_guid_equal(&t->VendorGuid, &acpi10) && !bi->acpi_rsdp) {
			bi->acpi_rsdp = (uint64_t)(UINTN)t->VendorTable;
			bi->acpi_rsdp_revision = 0;
		}
	}
}

/* Read one regular file of the config directory into a NUL-terminated LoaderData copy. */
static void boot_read_file(struct boot_info *bi, EFI_FILE_HANDLE dir, EFI_FILE_INFO *info)
{
	EFI_FILE_HANDLE f;
	struct boot_file *bf;
	UINTN size, i;

	if (bi->nfiles >= BOOT_MAX_FILES || (info->Attribute & EFI_FILE_DIRECTORY))
		return;
	if (info->FileSize > BOOT_FILE_SIZE_MAX) {
		boot_print(L"p2pstore boot: config file too large, skipped: ");
		boot_print(info->FileName);
		boot_print(L"\r\n");
		return;
	}
	if (dir->Open(dir, &f, info->FileName, EFI_FILE_MODE_READ, 0) != EFI_SUCCESS)
		return;
	size = info->FileSize;
	char *data = boot_alloc(size + 1);
	if (data && f->Read(f, &size, data) == EFI_SUCCESS) {
		data[size] = 0;
		bf = &bi->files[bi->nfiles++];
		for (i = 0; i + 1 < BOOT_FILE_NAME_MAX && info->FileName[i]; i++)
			bf->name[i] = info->FileName[i] < 0x80 ? (char)info->FileName[i] : '?';
		bf->name[i] = 0;
		bf->data = data;
		bf->size = size;
	}
	f->Close(f);
}

/* Read every file of \p2pstore\ on the volume this image was loaded from. */
static void boot_read_config(struct boot_info *bi, EFI_HANDLE image)
{
	EFI_GUID lip = LOADED_IMAGE_PROTOCOL;
	EFI_GUID sfsp = SIMPLE_FILE_SYSTEM_PROTOCOL;
	EFI_LOADED_IMAGE *li = NULL;
	EFI_FILE_IO_INTERFACE *fs = NULL;
	EFI_FILE_HANDLE root = NULL, dir = NULL;
	UINTN cap = SIZE_OF_EFI_FILE_INFO + 512 * sizeof(CHAR16);
	EFI_FILE_INFO *info;

	if (boot_st->BootServices->HandleProtocol(image, &lip, (void **)&li) != EFI_SUCCESS)
		return;
	bi->image_base = (uint64_t)(UINTN)li->ImageBase;
	bi->image_size = li->ImageSize;
	if (boot_st->BootServices->HandleProtocol(li->DeviceHandle, &sfsp, (void **)&fs) != EFI_SUCCESS)
		return;
	if (fs->OpenVolume(fs, &root) != EFI_SUCCESS)
		return;
	if (root->Open(root, &dir, L"\\p2pstore", EFI_FILE_MODE_READ, 0) != EFI_SUCCESS)
		goto out_root;
	info = boot_alloc(cap);
	if (!info)
		goto out_dir;
	for (;;) {
		UINTN size = cap;
		if (dir->Read(dir, &size, info) != EFI_SUCCESS || size == 0)
			break;
		boot_read_file(bi, dir, info);
	}
	boot_st->BootServices->FreePool(info);
out_dir:
	dir->Close(dir);
out_root:
	root->Close(root);
}

static uint32_t boot_classify(UINT32 efi_type)
{
	switch (efi_type) {
	case EfiConventionalMemory:
		return BOOT_MEM_FREE;
	case EfiBootServicesCode:
	case EfiBootServicesData:
		return BOOT_MEM_BOOT_SERVICES;
	case EfiLoaderCode:
	case EfiLoaderData:
		return BOOT_MEM_LOADER;
	case EfiRuntimeServicesCode:
	case EfiRuntimeServicesData:
		return BOOT_MEM_RUNTIME;
	case EfiACPIReclaimMemory:
	case EfiACPIMemoryNVS:
		return BOOT_MEM_ACPI;
	case EfiMemoryMappedIO:
	case EfiMemoryMappedIOPortSpace:
		return BOOT_MEM_MMIO;
	default:
		return BOOT_MEM_RESERVED;
	}
}

/* Convert the firmware's map into boot_mem_range entries, sorted by base, with
 * adjacent ranges of the same type merged. Runs after ExitBootServices: no calls. */
static void boot_convert_map(struct boot_info *bi, const unsigned char *map, UINTN size,
			     UINTN desc_size, uint32_t cap)
{
	uint32_t n = 0;

	for (UINTN off = 0; off + desc_size <= size && n < cap; off += desc_size) {
		const EFI_MEMORY_DESCRIPTOR *d = (const EFI_MEMORY_DESCRIPTOR *)(map + off);
		struct boot_mem_range r = {
			.base = d->PhysicalStart,
			.pages = d->NumberOfPages,
			.type = boot_classify(d->Type),
			.efi_type = d->Type,
			.attr = d->Attribute,
		};
		/* insertion sort: the map is short and usually sorted already */
		uint32_t i = n;
		while (i > 0 && bi->mem[i - 1].base > r.base) {
			bi->mem[i] = bi->mem[i - 1];
			i--;
		}
		bi->mem[i] = r;
		n++;
	}
	uint32_t out = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (out > 0 && bi->mem[out - 1].type == bi->mem[i].type &&
		    bi->mem[out - 1].base + bi->mem[out - 1].pages * 4096 == bi->mem[i].base &&
		    bi->mem[out - 1].attr == bi->mem[i].attr) {
			bi->mem[out - 1].pages += bi->mem[i].pages;
			continue;
		}
		bi->mem[out++] = bi->mem[i];
	}
	bi->nmem = out;
}

/* UEFI entry point. */
EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	uint64_t counter0 = arch_counter_read();
	EFI_BOOT_SERVICES *bs = st->BootServices;
	EFI_PHYSICAL_ADDRESS stack = 0;
	UINTN map_size = 0, map_key = 0, desc_size = 0, map_cap;
	UINT32 desc_version = 0;
	EFI_STATUS status;
	struct boot_info *bi;
	unsigned char *map;

	boot_st = st;
	boot_rt = st->RuntimeServices;
	bs->SetWatchdogTimer(0, 0, 0, NULL);
	boot_print(L"p2pstore: UEFI boot stage\r\n");

	bi = boot_alloc(sizeof(*bi));
	if (!bi) {
		boot_fail(L"AllocatePool(boot_info)", EFI_OUT_OF_RESOURCES);
		return EFI_OUT_OF_RESOURCES;
	}
	boot_zero(bi, sizeof(*bi));
	bi->counter_at_entry = counter0;
	bi->firmware_reset = boot_firmware_reset;
	bi->firmware_revision = st->FirmwareRevision;
	for (unsigned i = 0; st->FirmwareVendor && st->FirmwareVendor[i] && i + 1 < sizeof(bi->firmware_vendor); i++)
		bi->firmware_vendor[i] = st->FirmwareVendor[i] < 0x80 ? (char)st->FirmwareVendor[i] : '?';

	boot_find_acpi(bi);
	boot_read_config(bi, image);

	status = bs->AllocatePages(AllocateAnyPages, EfiLoaderData, BOOT_STACK_PAGES + 1, &stack);
	if (status != EFI_SUCCESS) {
		boot_fail(L"AllocatePages(stack)", status);
		return status;
	}
	bi->stack_base = stack + 4096; /* the first page is the guard */
	bi->stack_size = BOOT_STACK_PAGES * 4096;

	/* Size the map, then allocate room for it (and for its converted copy) with slack,
	 * since these allocations themselves add descriptors. */
	status = bs->GetMemoryMap(&map_size, NULL, &map_key, &desc_size, &desc_version);
	if (status != EFI_BUFFER_TOO_SMALL || desc_size == 0) {
		boot_fail(L"GetMemoryMap(size)", status);
		return status;
	}
	map_cap = map_size + BOOT_MAP_SLACK * desc_size;
	map = boot_alloc(map_cap);
	uint32_t range_cap = (uint32_t)(map_cap / desc_size);
	bi->mem = boot_alloc(range_cap * sizeof(*bi->mem));
	if (!map || !bi->mem) {
		boot_fail(L"AllocatePool(memory map)", EFI_OUT_OF_RESOURCES);
		return EFI_OUT_OF_RESOURCES;
	}
	boot_print(L"p2pstore: exiting boot services\r\n");

	for (;;) {
		map_size = map_cap;
		status = bs->GetMemoryMap(&map_size, (EFI_MEMORY_DESCRIPTOR *)map, &map_key, &desc_size,
					  &desc_version);
		if (status != EFI_SUCCESS) {
			if (bi->exit_attempts == 0)
				boot_fail(L"GetMemoryMap", status);
			return status;
		}
		bi->exit_attempts++;
		status = bs->ExitBootServices(image, map_key);
		if (status == EFI_SUCCESS)
			break;
		if (status != EFI_INVALID_PARAMETER || bi->exit_attempts >= BOOT_EXIT_ATTEMPTS) {
			if (bi->exit_attempts == 1)
				boot_fail(L"ExitBootServices", status);
			return status;
		}
		/* The map changed under us: fetch it again and retry (no allocation allowed). */
	}

	/* Boot services are gone: no more firmware calls but runtime services. */
	boot_st = NULL;
	boot_convert_map(bi, map, map_size, desc_size, range_cap);
	arch_enter_kernel(bi->stack_base + bi->stack_size, kmain, bi);
}
