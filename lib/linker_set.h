/*
 * linker_set.h - registration tables built by the linker.
 *
 * A file that owns a driver, a poller or a console command declares one entry with
 * LINKER_SET_ENTRY; the linker gathers every entry of a set into one contiguous array
 * bounded by __start_set_<name> and __stop_set_<name>. No central list, no #ifdef.
 * In the appliance image the sections are placed by linker.ld (one line per set); in
 * host test binaries GNU ld provides the bounds for identifier-named sections itself.
 * Entries must have a size that is a multiple of 8 so that the array has no holes.
 */
#ifndef LIB_LINKER_SET_H
#define LIB_LINKER_SET_H

#define LINKER_SET_SECTION(set) "set_" #set

/* The image is built with link-time optimization (Makefile LTO_CFLAGS): gcc's no_reorder keeps
 * the entries in link order, the order sets without a priority of their own run in. */
#if defined(__GNUC__) && !defined(__clang__)
#define LINKER_SET_NO_REORDER no_reorder,
#else
#define LINKER_SET_NO_REORDER
#endif

/* Declare one entry `name` of type `type` in linker set `set`. */
#define LINKER_SET_ENTRY(set, type, name)                                                  \
	static const type name                                                             \
		__attribute__((used, LINKER_SET_NO_REORDER section(LINKER_SET_SECTION(set)), aligned(8)))

/* Declare the bounds of a set so that it can be iterated. */
#define LINKER_SET_DECLARE(set, type)                                                      \
	extern const type __start_set_##set[] __attribute__((visibility("hidden"), weak)); \
	extern const type __stop_set_##set[] __attribute__((visibility("hidden"), weak))

#define LINKER_SET_BEGIN(set) (__start_set_##set)
#define LINKER_SET_END(set) (__stop_set_##set)

/* Iterate over every entry `it` (a const pointer) of `set`. */
#define LINKER_SET_FOREACH(set, it) \
	for ((it) = LINKER_SET_BEGIN(set); (it) < LINKER_SET_END(set); (it)++)

#endif
