# arch.mk - how the image is built for x86_64 (included by the Makefile when ARCH=x86_64).
# The host's own gcc/binutils, Debian's gnu-efi (amd64), newlib built for x86_64-elf.
IMAGE_CC       := gcc
IMAGE_LD       := ld
IMAGE_OBJCOPY  := objcopy
IMAGE_AR       := ar
IMAGE_ADDR2LINE := addr2line
NEWLIB         := $(P2P_CACHE)/newlib-3.3.0/x86_64-elf
ARCH_CFLAGS    := -mno-red-zone -maccumulate-outgoing-args
EFI_CFLAGS     := -ffreestanding -DGNU_EFI_USE_MS_ABI -I/usr/include/efi -I/usr/include/efi/x86_64
EFI_CRT0       := /usr/lib/crt0-efi-x86_64.o
EFI_LIBGNUEFI  := /usr/lib/libgnuefi.a
EFI_BOOT_NAME  := BOOTX64.EFI
# objcopy makes a PE/COFF application with real sections and a .reloc table.
EFI_OBJCOPY_FLAGS := -j .text -j .sdata -j .data -j .dynamic -j .dynsym -j .rel -j .rela -j .reloc \
	--target efi-app-x86_64 --subsystem=10
EFI_LDFLAGS    :=
