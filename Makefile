# p2pstore: a bare-metal peer-to-peer storage appliance (one UEFI image).
#
#   make run     install what is missing, build, boot the appliance in QEMU (serial on this terminal)
#   make test    install what is missing, build, run every test (unit, fuzz corpus, link map, QEMU, lab)
#   make image   just build build/esp/EFI/BOOT/BOOTX64.EFI
#   make disk    build/p2pstore-x86_64.img: a GPT disk with the ESP, for dd to a USB stick or boot disk
#   ARCH=arm64   any of these for aarch64 (QEMU virt + AAVMF), in build/arm64/: make ARCH=arm64 run
#   make unit    host unit tests (Criterion, ASan/UBSan)      make unit T=mm/test_page_alloc
#   make fuzz    replay the fuzz corpora                       make fuzz-run F=config (fuzz for real)
#   make qemu-test   boot tests over the serial console       tests/qemu/run-tests NAME
#   make lab     a shell on a Linux guest next to the appliance (see docs/lab.md)

ARCH       ?= x86_64
ifeq ($(filter $(ARCH),x86_64 arm64),)
$(error ARCH=$(ARCH): arch/ has x86_64 and arm64)
endif
BUILD      ?= $(if $(filter arm64,$(ARCH)),build/arm64,build)
P2P_CACHE  ?= /var/cache/p2pstore
PYTHON     := /usr/bin/python3
# The tools (qemu-run, the QEMU and lab tests) boot the architecture make was asked for.
export P2P_ARCH := $(ARCH)

Q          := $(if $(V),,@)
CC         := gcc
CLANG      := clang

# The image's toolchain, newlib, gnu-efi and PE conversion: arch/$(ARCH)/arch.mk.
include arch/$(ARCH)/arch.mk

IMAGE_DIRS := boot arch/$(ARCH) mm core lib $(wildcard pci drivers net)
IMAGE_SRCS := $(shell find $(IMAGE_DIRS) -name '*.c' -o -name '*.S' | sort) $(wildcard arch/*.c)
IMAGE_OBJS := $(patsubst %,$(BUILD)/image/%.o,$(IMAGE_SRCS))

WARN       := -Wall -Wextra -Werror
comma      := ,
GCC_INC    := $(shell $(IMAGE_CC) -print-file-name=include)
# Code generation, one set of flags for the image and for the instruction-count harness
# (tests/bench/, tools/bench/insn.py), so that the harness counts the code the image runs:
#   -O2 -g; -fpic: gnu-efi's image relocates itself (crt0 applies .rela); -fvisibility=hidden: the
#   image is one module that exports nothing, so no function of it is interposable (gcc inlines and
#   clones within a file, and LTO internalizes every symbol, which a -shared link would otherwise
#   export); -fno-strict-aliasing; frame pointers for the exception backtrace and the profiler;
#   the architecture's ARCH_CFLAGS (x86_64: no red zone, accumulated outgoing arguments).
CODEGEN_CFLAGS := -O2 -g -fpic -fvisibility=hidden -fno-stack-protector -fno-strict-aliasing \
	-fno-omit-frame-pointer -fno-asynchronous-unwind-tables
# Link-time optimization: the image's C sources are compiled to GCC's intermediate language and
# optimized as one program when the image is linked (through gcc and its linker plugin), in one
# partition, so that static functions keep their names (symbolize, the profiler, backtraces) and
# the linker-set entries (no_reorder, lib/linker_set.h) keep their link order. Left out, compiled
# as plain objects: boot/ (gnu-efi's headers and MS ABI stay in its own object), lib/string_fast.c
# (memcpy/memset stay freestanding code the optimizer cannot turn back into calls to themselves),
# lib/libc_glue.c (newlib's system calls: the libc.a members that call them are pulled into the link
# after the link-time optimizer has dropped what no IL referenced), the .S files and mbedTLS.
# LTO=0 builds without it (plain objects, the same link).
LTO        ?= 1
LTO_CFLAGS := $(if $(filter 1,$(LTO)),-flto -flto-partition=one)
NO_LTO_SRCS := lib/string_fast.c lib/libc_glue.c
IMAGE_CFLAGS := -std=gnu11 $(CODEGEN_CFLAGS) $(WARN) -fshort-wchar $(ARCH_CFLAGS) \
	-nostdinc -isystem $(NEWLIB)/include -isystem $(GCC_INC) -MMD -MP
# Header-only libraries from Debian packages, exposed without the rest of /usr/include.
THIRD_INC  := $(BUILD)/include
THIRD_HDRS := $(THIRD_INC)/jsmn.h
IMAGE_CFLAGS += -isystem $(THIRD_INC)
# mbedTLS (Debian's source package, unpacked by tools/setup): the files lib/crypto_config.h's
# subset needs (hashes, HMAC, bignum, base64), compiled with the image's flags into
# $(BUILD)/mbedtls/libmbedcrypto.a. Only lib/crypto.c includes its headers.
MBEDTLS_SRC   := $(P2P_CACHE)/mbedtls
MBEDTLS_FILES := bignum constant_time md sha256 sha512 platform_util base64
MBEDTLS_OBJS  := $(patsubst %,$(BUILD)/mbedtls/%.o,$(MBEDTLS_FILES))
MBEDTLS_LIB   := $(BUILD)/mbedtls/libmbedcrypto.a
MBEDTLS_CFLAGS := -DMBEDTLS_CONFIG_FILE='"lib/crypto_config.h"' -I. -isystem $(MBEDTLS_SRC)/include
IMAGE_CFLAGS += $(MBEDTLS_CFLAGS)
LIBGCC     := $(shell $(IMAGE_CC) -print-libgcc-file-name)
EFI_IMAGE  := $(BUILD)/esp/EFI/BOOT/$(EFI_BOOT_NAME)

.PHONY: all image disk run test unit fuzz fuzz-run qemu-test lab lab-test setup check-linkmap clean bench insn-check bench-flags
all: image

setup:
	@tools/setup

image: setup $(EFI_IMAGE)

$(THIRD_INC)/%.h: /usr/include/%.h
	@mkdir -p $(@D)
	$(Q)ln -sf $< $@

$(IMAGE_OBJS): | $(THIRD_HDRS)

$(BUILD)/image/boot/%.c.o: boot/%.c Makefile
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(IMAGE_CC) $(IMAGE_CFLAGS) $(EFI_CFLAGS) -c $< -o $@

# memcpy/memset themselves: freestanding, so the compiler cannot call back into them.
$(BUILD)/image/lib/string_fast.c.o: lib/string_fast.c Makefile
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(IMAGE_CC) $(IMAGE_CFLAGS) -ffreestanding -fno-tree-loop-distribute-patterns -c $< -o $@

$(BUILD)/image/%.c.o: %.c Makefile
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(IMAGE_CC) $(IMAGE_CFLAGS) $(if $(filter $(NO_LTO_SRCS),$<),,$(LTO_CFLAGS)) -c $< -o $@

$(BUILD)/image/%.S.o: %.S Makefile
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(IMAGE_CC) $(IMAGE_CFLAGS) -c $< -o $@

# Third-party code: the image's flags without the project's warnings-as-errors.
$(BUILD)/mbedtls/%.o: $(MBEDTLS_SRC)/library/%.c lib/crypto_config.h Makefile
	@mkdir -p $(@D)
	@echo "  CC      mbedtls/$*.c"
	$(Q)$(IMAGE_CC) $(filter-out -Werror -Wextra -MMD -MP,$(IMAGE_CFLAGS)) -c $< -o $@

$(MBEDTLS_LIB): $(MBEDTLS_OBJS)
	$(Q)rm -f $@ && $(IMAGE_AR) rcs $@ $^

# The image layout is the architecture's (arch/$(ARCH)/image.ld); it includes linker.ld, the
# list of registration tables.
$(BUILD)/linker.lds: arch/$(ARCH)/image.ld linker.ld
	@mkdir -p $(@D)
	$(Q)$(IMAGE_CC) -E -P -x c -I. $< -o $@

# The link goes through gcc (its LTO plugin; the code-generation flags again for the link-time
# compilation) and sets what gcc's driver would otherwise choose for ld: no build-id, no
# .eh_frame_hdr, both hash tables, as the plain ld link had.
$(BUILD)/p2pstore.so: $(IMAGE_OBJS) $(MBEDTLS_LIB) $(BUILD)/linker.lds Makefile
	@echo "  LD      $@"
	$(Q)$(IMAGE_CC) $(CODEGEN_CFLAGS) $(WARN) -fshort-wchar $(ARCH_CFLAGS) $(LTO_CFLAGS) \
		-nostdlib -shared -Wl,-znocombreloc,-Bsymbolic,--no-undefined,--build-id=none,--no-eh-frame-hdr,--hash-style=both \
		$(addprefix -Wl$(comma),$(EFI_LDFLAGS)) \
		-T $(BUILD)/linker.lds -Wl,-Map=$(BUILD)/p2pstore.map $(EFI_CRT0) $(IMAGE_OBJS) \
		-Wl,--start-group $(MBEDTLS_LIB) $(NEWLIB)/lib/libc.a $(LIBGCC) $(EFI_LIBGNUEFI) -Wl,--end-group -o $@

$(EFI_IMAGE): $(BUILD)/p2pstore.so
	@mkdir -p $(@D)
	@echo "  OBJCOPY $@"
	$(Q)$(IMAGE_OBJCOPY) $(EFI_OBJCOPY_FLAGS) $< $@

# The host's 127.0.0.1:4420 reaches the appliance's NVMe/TCP port (its DHCP address on QEMU's user network).
RUN_NETDEV ?= user,hostfwd=tcp:127.0.0.1:4420-:4420
run: image
	@echo "Booting the $(ARCH) appliance (the firmware takes 5-15 s). Console: type 'help'; quit with 'poweroff' or Ctrl-A x."
	@tools/qemu-run --esp $(BUILD)/esp --netdev $(RUN_NETDEV)

# A GPT disk image for dd (ESP: the EFI application and p2pstore/ files; DISK_FILES="a/p2pstore.cfg
# b/nvmet.json" puts those in, else a commented p2pstore.cfg). tools/p2pstore-image edits it later.
DISK_IMAGE := $(BUILD)/p2pstore-$(ARCH).img
DISK_FILES ?=
disk: image
	@tools/p2pstore-image create $(DISK_IMAGE) --efi $(EFI_IMAGE) --boot-name $(EFI_BOOT_NAME) \
		$(addprefix --file ,$(DISK_FILES))

# --- host unit tests: real sources, Criterion, ASan + UBSan -------------------------------
HOST_CFLAGS := -std=gnu11 -O1 -g $(WARN) -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer -DHOST_TEST -DSTRING_FAST_PREFIX=lib_ -I. -MMD -MP
UNIT_TESTS := $(patsubst tests/unit/%.c,%,$(shell find tests/unit -name 'test_*.c' | sort))
UNIT_BINS  := $(patsubst %,$(BUILD)/unit/%,$(UNIT_TESTS))

# Each test lists the sources it needs in a line "// sources: a.c b.c"; unit_support.c and
# lib/clock.c (the fake clock) are linked into every test; "// libs: -lx" adds libraries
# (-lmbedcrypto: Debian's host build of the mbedTLS the image compiles). Every source is compiled
# once into $(BUILD)/unit/obj (its dependencies tracked by -MMD) and the objects are shared by the
# tests that list it: ~1,100 source mentions are ~120 compiler runs.
UNIT_OBJ := $(BUILD)/unit/obj
define unit_sources
$(shell sed -n 's|^// sources: ||p' tests/unit/$(1).c)
endef
unit_objs = $(patsubst %.c,$(UNIT_OBJ)/%.o,tests/unit/$(1).c $(call unit_sources,$(1)) tests/unit/unit_support.c lib/clock.c)

$(UNIT_OBJ)/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC-UNIT $<"
	$(Q)$(CC) $(HOST_CFLAGS) -c $< -o $@

.SECONDEXPANSION:
# The shared objects are kept (not deleted as intermediates) so a rebuild compiles only what changed.
.SECONDARY:
$(BUILD)/unit/%: $$(call unit_objs,$$*)
	@mkdir -p $(@D)
	@echo "  LD-UNIT $@"
	$(Q)$(CC) $(HOST_CFLAGS) $(filter %.o,$^) -lcriterion $(shell sed -n 's|^// libs: ||p' tests/unit/$*.c) -o $@

unit: setup $(if $(T),$(BUILD)/unit/$(T),$(UNIT_BINS))
	@tools/run-unit $(if $(T),$(BUILD)/unit/$(T),$(UNIT_BINS))

# --- fuzzing: libFuzzer harnesses, corpora replayed by make test --------------------------
FUZZ_CFLAGS := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-DHOST_TEST -DSTRING_FAST_PREFIX=lib_ -I.
FUZZERS    := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS  := $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZERS))

# The harness and its sources are compiled once each into $(BUILD)/fuzz/obj (instrumented with
# -fsanitize=fuzzer-no-link) and linked with libFuzzer's main.
FUZZ_OBJ := $(BUILD)/fuzz/obj
FUZZ_CC_FLAGS := $(subst -fsanitize=fuzzer$(comma),-fsanitize=fuzzer-no-link$(comma),$(FUZZ_CFLAGS)) -MMD -MP
fuzz_objs = $(patsubst %.c,$(FUZZ_OBJ)/%.o,tests/fuzz/fuzz_$(1).c $(shell sed -n 's|^// sources: ||p' tests/fuzz/fuzz_$(1).c))

$(FUZZ_OBJ)/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC-FUZZ $<"
	$(Q)$(CLANG) $(FUZZ_CC_FLAGS) -c $< -o $@

$(BUILD)/fuzz/fuzz_%: $$(call fuzz_objs,$$*)
	@mkdir -p $(@D)
	@echo "  FUZZER  $@"
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(filter %.o,$^) $(shell sed -n 's|^// libs: ||p' tests/fuzz/fuzz_$*.c) -o $@

fuzz: setup $(FUZZ_BINS)
	@tools/run-fuzz-corpus $(FUZZ_BINS)

fuzz-run: setup $(BUILD)/fuzz/fuzz_$(F)
	$(BUILD)/fuzz/fuzz_$(F) -max_total_time=$${SECONDS_:-60} $(addprefix -dict=,$(wildcard tests/fuzz/$(F).dict)) tests/fuzz/corpus/$(F)

# --- instructions per I/O: the data path built as the image is, for callgrind ----------------
# The appliance's sources get the image's code generation (CODEGEN_CFLAGS and the x86_64 image's
# ARCH_CFLAGS: the harness runs on this host) and its link-time optimization; the harness, the fakes
# and the host's initiator (tests/) are plain objects with the same flags, so the optimizer cannot
# inline the appliance into them nor them into it: what callgrind counts as the appliance's is what
# the image runs. (Link-time -O2 inlines across files: its maybe-uninitialized false positives are
# not errors here; the image and the unit builds keep them.)
BENCH_ARCH_CFLAGS := $(shell sed -n 's/^ARCH_CFLAGS *:= *//p' arch/x86_64/arch.mk)
BENCH_CFLAGS := -std=gnu11 $(CODEGEN_CFLAGS) $(BENCH_ARCH_CFLAGS) $(WARN) -Wno-maybe-uninitialized \
	-DHOST_TEST -DSTRING_FAST_PREFIX=lib_ -I.
BENCH_OBJ := $(BUILD)/bench/obj
bench_objs = $(patsubst %.c,$(BENCH_OBJ)/%.o,tests/bench/$(1).c $(shell sed -n 's|^// sources: ||p' tests/bench/$(1).c))

$(BENCH_OBJ)/tests/%.o: tests/%.c Makefile
	@mkdir -p $(@D)
	@echo "  CC-BENCH $<"
	$(Q)$(CC) $(BENCH_CFLAGS) -MMD -MP -c $< -o $@

$(BENCH_OBJ)/%.o: %.c Makefile
	@mkdir -p $(@D)
	@echo "  CC-BENCH $<"
	$(Q)$(CC) $(BENCH_CFLAGS) $(LTO_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/bench/%: $$(call bench_objs,$$*)
	@mkdir -p $(@D)
	@echo "  LD-BENCH $@"
	$(Q)$(CC) $(BENCH_CFLAGS) $(LTO_CFLAGS) $(filter %.o,$^) $(shell sed -n 's|^// libs: ||p' tests/bench/$*.c) -o $@

# The harness's code generation, for the text of docs/bench-insn.md (tools/bench/insn.py).
bench-flags:
	@echo "$(filter-out -std=% -W% -I% -D%,$(BENCH_CFLAGS)) $(LTO_CFLAGS)"

# The regression guard of `make test`: instructions per I/O under callgrind within the bounds
# of tools/bench/insn.py (docs/bench-insn.md).
insn-check: setup $(BUILD)/bench/insn_datapath
	@$(PYTHON) tools/bench/insn.py --check

# --- checks on the image -------------------------------------------------------------------
check-linkmap: image
	@tools/check-config-readme
	@tools/check-linkmap $(BUILD)/p2pstore.map $(BUILD)/p2pstore.so
	@tools/check-layers $(BUILD)/image

qemu-test: image
	@tests/qemu/run-tests $(T)

lab:
	tools/lab/shell

lab-test: image
	@if [ -x tests/lab/run-tests ]; then tests/lab/run-tests $(T); else echo "lab: 0 passed, 0 failed (no lab yet)"; fi

test: setup
	@tools/run-all-tests

# Benchmarks are not tests: each prints ratios against a peer measured in the same run and
# writes its figures, dated, to docs/bench-*.md. BENCH picks parts: nvme (host driver, issue 5),
# net (TCP/IP vs Linux, issue 7), nvmet (NVMe/TCP target vs Linux nvmet-tcp, issue 8, with the
# NVMe/RDMA section of nvmet_rdma: the appliance over RDMA vs Linux nvmet-rdma and vs its TCP, issue 17),
# insn (instructions per I/O of the data path under callgrind, issue 18), nvmet_profile (where the
# appliance's time goes in BENCH=nvmet's jobs: host perf + prof), crc (digest engines' GB/s, hosted),
# nvmet_wire (where a 128 KiB command's time goes on the wire, captured, appliance vs Linux, issue 18),
# roce (perftest against the appliance and against Linux rdma_rxe, issue 15), odp (random 4 KiB RDMA
# READ/WRITE to the ODP region vs Linux rxe to pinned DRAM, issue 16).
BENCH ?= nvme net nvmet insn crc
bench: image $(if $(filter insn,$(BENCH)),$(BUILD)/bench/insn_datapath) $(if $(filter crc,$(BENCH)),$(BUILD)/bench/crc_speed)
	@for b in $(BENCH); do \
	  case $$b in nvme|net|nvmet|nvmet_rdma|nvmet_profile|nvmet_wire|insn|crc|roce|odp) ;; *) echo "bench: no part '$$b' (nvme, net, nvmet, nvmet_rdma, nvmet_profile, nvmet_wire, insn, crc, roce, odp)"; exit 2;; esac; \
	  echo "bench: $$b"; $(PYTHON) tools/bench/$$b.py || exit 1; done

clean:
	rm -rf $(BUILD)

# Only where the rules put dependency files: a build dir from before the unit and fuzz objects moved
# to obj/ keeps stray .d files that make would otherwise try to remake with the test rules.
# Dependency files are made by the compiler, never by a rule: without these, make would try the test
# rules on them (the shortest stem wins) and run their `sed`s on names like tests/unit/obj/x.d.c.
$(UNIT_OBJ)/%.d $(FUZZ_OBJ)/%.d $(BENCH_OBJ)/%.d: ;
-include $(shell find $(BUILD)/image $(UNIT_OBJ) $(FUZZ_OBJ) $(BUILD)/bench -name '*.d' 2>/dev/null)
