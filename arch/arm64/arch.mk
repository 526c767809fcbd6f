# arch.mk - how the image is built for arm64 (included by the Makefile when ARCH=arm64).
# Debian's cross toolchain (gcc-aarch64-linux-gnu), gnu-efi's arm64 .deb extracted into the
# cache by tools/setup, newlib cross-built for aarch64-elf.
IMAGE_CC       := aarch64-linux-gnu-gcc
IMAGE_LD       := aarch64-linux-gnu-ld
IMAGE_OBJCOPY  := aarch64-linux-gnu-objcopy
IMAGE_AR       := aarch64-linux-gnu-ar
IMAGE_ADDR2LINE := aarch64-linux-gnu-addr2line
NEWLIB         := $(P2P_CACHE)/newlib-3.3.0-aarch64/aarch64-elf
GNUEFI_ARM64   := $(P2P_CACHE)/gnu-efi-3.0.15-arm64/usr
# Frame pointers in leaves too, for the exception backtrace; FP/SIMD stays on as UEFI left it.
ARCH_CFLAGS    := -mno-omit-leaf-frame-pointer
EFI_CFLAGS     := -ffreestanding -I$(GNUEFI_ARM64)/include/efi -I$(GNUEFI_ARM64)/include/efi/aarch64
EFI_CRT0       := $(GNUEFI_ARM64)/lib/crt0-efi-aarch64.o
EFI_LIBGNUEFI  := $(GNUEFI_ARM64)/lib/libgnuefi.a
EFI_BOOT_NAME  := BOOTAA64.EFI
# gnu-efi 3.0.15's arm64 crt0 carries a hand-made PE/COFF header in .text.head whose fields
# the linker fills from _data/_data_size/_edata (arch/arm64/image.ld): the image is the
# flat binary of the ELF, no objcopy PE target involved. EFI_SUBSYSTEM 10 = application.
EFI_OBJCOPY_FLAGS := -j .text -j .dynamic -j .data -j .rela.dyn -O binary
EFI_LDFLAGS    := --defsym=EFI_SUBSYSTEM=0xa
