/*
 * pci.h - the face of pci/: configuration access, the enumerated topology (functions,
 * bridges, BARs, capabilities, links), ACS policy, the PCI driver model and peer-to-peer
 * DMA (providers, distance, allocation).
 *
 * Everything below the console runs on a configuration-space accessor (struct pci_cfg):
 * in the appliance it is the ECAM window that ACPI's MCFG describes; in host unit tests it
 * is an array laid out like ECAM, with a little device behaviour on top (BAR sizing), so
 * enumeration, ACS and distance decisions are tested on synthetic topologies.
 */
#ifndef PCI_PCI_H
#define PCI_PCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../lib/linker_set.h"
#include "../mm/dma.h"
#include "pci_regs.h"

/* --- configuration access (ecam.c) --- */

/* A function's routing ID: bus 15:8, device 7:3, function 2:0. */
#define PCI_BDF(bus, dev, fn) ((uint16_t)(((bus) << 8) | ((dev) << 3) | (fn)))
#define PCI_BDF_BUS(bdf) ((unsigned)((bdf) >> 8))
#define PCI_BDF_DEV(bdf) ((unsigned)(((bdf) >> 3) & 31))
#define PCI_BDF_FN(bdf) ((unsigned)((bdf) & 7))
#define PCI_CFG_SIZE 4096u

struct pci_cfg_ops {
	/* Read `width` bytes (1, 2 or 4, naturally aligned) at `off`. Returns 0, or -EINVAL /
	 * -ERANGE for an access outside the window (then *val is all ones). */
	int (*read)(void *ctx, uint16_t bdf, uint16_t off, unsigned width, uint32_t *val);
	/* Write the low `width` bytes of val. Returns 0, -EINVAL or -ERANGE. */
	int (*write)(void *ctx, uint16_t bdf, uint16_t off, unsigned width, uint32_t val);
};

/* One PCI segment's configuration space. */
struct pci_cfg {
	const struct pci_cfg_ops *ops;
	void *ctx;
	uint16_t segment;
	uint8_t bus_start, bus_end; /* inclusive: the buses this window decodes */
};

/* An ECAM window: 1 MiB per bus from bus_start, 4 KiB per function. */
struct pci_ecam {
	volatile uint8_t *base; /* maps bus_start; identity-mapped uncached in the appliance */
	uint64_t size;          /* bytes the window covers ((bus_end - bus_start + 1) << 20) */
	uint16_t segment;
	uint8_t bus_start, bus_end;
	uint64_t rejected;      /* accesses refused by the bounds checks */
};

/* The ECAM accessor (bounds-checked: bus in range, offset inside 4 KiB, natural alignment). */
extern const struct pci_cfg_ops pci_ecam_ops;

/* Point cfg at an ECAM window. */
void pci_ecam_cfg(struct pci_cfg *cfg, struct pci_ecam *ecam);

/* One MCFG allocation (ACPI MCFG, PCI Firmware 3.2 4.1.2). */
struct pci_mcfg_alloc {
	uint64_t base;   /* ECAM address of bus 0 of the segment (not of bus_start) */
	uint16_t segment;
	uint8_t bus_start, bus_end;
};

/* Parse an ACPI MCFG table (len bytes, header included) into at most max allocations.
 * Entries with bus_end < bus_start or a zero base are skipped. Returns the count or -EINVAL
 * for a table too short or with a length that disagrees with len. */
int pci_mcfg_parse(const void *table, size_t len, struct pci_mcfg_alloc *out, unsigned max);

/* --- the topology (enum.c) --- */

#define PCI_MAX_DEVS 128
#define PCI_MAX_CAPS 12
#define PCI_MAX_BARS 6

enum pci_bar_kind { PCI_BAR_NONE = 0, PCI_BAR_KIND_IO, PCI_BAR_KIND_MEM32, PCI_BAR_KIND_MEM64 };

/* What enumeration made of a BAR (one outcome per BAR). */
enum pci_bar_state {
	PCI_BAR_FIRMWARE = 0,   /* as the firmware left it (or not implemented: size 0) */
	PCI_BAR_PLACED,         /* firmware left it at 0 and enumeration placed it */
	PCI_BAR_UNASSIGNED,     /* address 0 and could not be placed (reported) */
	PCI_BAR_OUTSIDE_WINDOW, /* not inside the upstream bridge's window (reported) */
	PCI_BAR_BAD,            /* sizing returned garbage (reported, not used) */
};

struct pci_bar {
	uint64_t addr;        /* bus address (== CPU physical: identity: no host-bridge offset on the supported machines) */
	uint64_t size;        /* 0: not implemented */
	enum pci_bar_kind kind;
	bool prefetch;
	enum pci_bar_state state;
	int8_t cache;         /* enum arch_cache it is mapped with, -1 when unmapped */
};

struct pci_window {
	uint64_t base, limit; /* inclusive; closed when base > limit */
};

struct pci_cap {
	uint16_t id;
	uint16_t off;
	bool ext;             /* extended (offset >= 0x100) */
};

struct pci_driver;

/* What ACS programming decided for a function (acs.c). */
enum pci_acs_decision {
	PCI_ACS_NONE = 0,       /* no ACS capability */
	PCI_ACS_P2P,            /* on a wanted and allowed P2P path: RR/CR/EC cleared, SV on */
	PCI_ACS_ISOLATED,       /* not on such a path: SV/RR/CR/UF on where implemented */
	PCI_ACS_FIRMWARE,       /* left as found */
};

struct pci_dev {
	struct pci_topo *topo;
	struct pci_dev *parent; /* the upstream bridge; NULL on the root bus */
	uint16_t bdf;
	uint16_t vendor, device;
	uint32_t class;         /* class << 16 | subclass << 8 | prog-if */
	uint8_t revision;
	uint8_t hdr_type;       /* PCI_HEADER_TYPE & PCI_HEADER_TYPE_MASK */
	uint8_t depth;          /* 0 on the root bus */
	bool multifunction;
	/* bridges */
	uint8_t secondary, subordinate;
	struct pci_window io_win, mem_win, pref_win;
	bool pref64;
	/* BARs */
	unsigned nbars;
	struct pci_bar bars[PCI_MAX_BARS];
	uint16_t command;       /* as found (after sizing it is restored to this) */
	/* capabilities */
	unsigned ncaps;
	struct pci_cap caps[PCI_MAX_CAPS];
	uint16_t exp_off;       /* PCI Express capability, 0 if none */
	uint8_t exp_type;       /* PCI_EXP_TYPE_* */
	uint8_t link_speed, link_width, link_max_speed, link_max_width;
	uint16_t msix_off, msi_off;
	/* ACS (acs.c) */
	uint16_t acs_off;       /* 0: no ACS capability */
	uint16_t acs_cap, acs_ctrl_found, acs_ctrl;
	enum pci_acs_decision acs_decision;
	bool acs_verified;
	/* driver model (driver.c) */
	const struct pci_driver *driver;
	void *driver_data;
	unsigned anomalies;     /* problems found in this function's config space */
	bool removed;           /* hot-removed (hotplug.c): the entry waits for a card in its slot */
};

/* ACS policy (acs.c); filled from the settings file by core/pci_config.c. */
enum pci_acs_mode {
	PCI_ACS_MODE_AUTO = 0,  /* open P2P paths that are wanted and allowed, isolate the rest */
	PCI_ACS_MODE_ISOLATE,   /* isolate every ACS port (P2P only below ports without ACS) */
	PCI_ACS_MODE_OPEN,      /* clear RR/CR/EC on every ACS port (SV kept) */
	PCI_ACS_MODE_FIRMWARE,  /* leave ACS as the firmware set it */
};

#define PCI_POLICY_MAX_LIST 8

struct pci_policy {
	enum pci_acs_mode acs_mode;
	unsigned n_isolate;
	uint16_t isolate[PCI_POLICY_MAX_LIST];        /* ports never opened (BDF) */
	unsigned n_allow;
	uint32_t host_bridge_allow[PCI_POLICY_MAX_LIST]; /* vendor << 16 | device of allowed host bridges */
	bool assign_bars;                              /* place BARs the firmware left at 0 */
};

/* Mapping hook: identity-map a BAR with an arch cache type (0 WB, 1 WC, 2 UC); NULL in tests. */
typedef int (*pci_map_fn)(uint64_t phys, uint64_t size, int cache);

struct pci_topo {
	struct pci_cfg cfg;
	struct pci_policy policy;
	pci_map_fn map;
	unsigned ndevs;
	struct pci_dev devs[PCI_MAX_DEVS]; /* depth-first order: a bridge comes before its subtree */
	unsigned anomalies;                /* sum over devices + topology-level problems */
	unsigned truncated;                /* functions not recorded because devs[] was full */
	uint64_t enum_ns;                  /* time the last enumeration took */
};

/* Default policy: ACS auto, empty allowlist, BAR assignment on. */
void pci_policy_default(struct pci_policy *p);

/* Enumerate every function reachable from cfg->bus_start (bridges followed through their
 * secondary bus, within the window, each bus at most once), size and validate BARs, place
 * unassigned ones, walk capabilities. Problems are logged and counted, never fatal.
 * Returns the number of functions found, or -EINVAL for an unusable cfg. */
int pci_enumerate(struct pci_topo *t);

/* The function at bdf, or NULL (hot-removed functions are not found). */
struct pci_dev *pci_find(struct pci_topo *t, uint16_t bdf);

/* Hot-add (hotplug.c): record the function at bdf below bridge parent (reusing the entry a
 * hot-removal left at the same bdf), size its BARs, place them in parent's windows, validate
 * and map them. Returns it, or NULL when devs[] is full. Bridges are recorded, not scanned. */
struct pci_dev *pci_add_function(struct pci_topo *t, struct pci_dev *parent, uint16_t bdf);

/* Hot-plug slots (hotplug.c): look for hot-plug capable ports in t (after enumeration) and
 * handle their slot events from the poll loop. Returns how many slots are watched. */
int pci_hotplug_init(struct pci_topo *t);

/* One pass over the watched slots (the poller calls it; tests call it directly): attention
 * button on a powered slot = detach the drivers below and power it off (the device may go);
 * a card present in a slot without one = power on, wait for the link, add and bind it;
 * presence lost = detach. Returns >0 when something happened, 0 when idle. */
int pci_hotplug_poll(uint64_t now_ns);

/* Parse "BB:DD.F" (hex). Returns the BDF or -EINVAL. */
int pci_parse_bdf(const char *s);

/* "BB:DD.F" into buf (at least 8 bytes); returns buf. */
char *pci_bdf_str(uint16_t bdf, char *buf);

/* Config accessors on a function: all ones when the access fails. */
uint32_t pci_read(const struct pci_dev *d, uint16_t off, unsigned width);
int pci_write(const struct pci_dev *d, uint16_t off, unsigned width, uint32_t val);

/* Find a capability (ext = extended) recorded by enumeration; returns its offset or 0. */
uint16_t pci_find_cap(const struct pci_dev *d, uint16_t id, bool ext);

/* Map a memory BAR through the topology's map hook with a cache type (0 WB, 1 WC, 2 UC).
 * Returns 0, -EINVAL (no such memory BAR) or the hook's error. */
int pci_bar_map(struct pci_dev *d, unsigned bar, int cache);

/* Enable memory decode and bus mastering (drivers call it in probe). */
void pci_enable(struct pci_dev *d, bool master);

bool pci_is_bridge(const struct pci_dev *d);

/* Human names. */
const char *pci_class_name(uint32_t class);
const char *pci_exp_type_name(uint8_t type);
const char *pci_cap_name(uint16_t id, bool ext);
/* Link speed in GT/s times ten (25, 50, 80, 160, ...), 0 unknown. */
unsigned pci_link_speed_x10(uint8_t speed);

/* --- MSI-X wake-ups (msix.c) --- */

/* A function's interrupt as a wake-up for the poll loop: the CPU vector (arch/irq.h) and
 * the message the device writes. vector 0: none given out yet. */
struct pci_irq {
	unsigned vector;
	uint64_t addr;
	uint32_t data;
	unsigned entry;         /* the MSI-X table entry programmed */
	bool on;                /* MSI-X enabled with that entry */
	bool masked;            /* its Vector Control Mask Bit set (pci_msix_mask) */
	volatile uint32_t *table_entry;
};

/* Make MSI-X table entry `entry` of d raise irq's CPU vector (a new one named owner when
 * irq->vector is 0; kept across calls, e.g. a reset or a hot re-add): MSI-X enabled, every
 * other entry masked, INTx off. 0, -ENODEV (no MSI-X or no such entry), -EINVAL (the
 * table's BAR unusable or not mapped uncached), -EIO (the enable did not read back), -ENOTSUP
 * (pci.msix_wake = off) or arch_irq_alloc's -ENOSPC / -ENOTSUP. */
int pci_msix_wake(struct pci_dev *d, unsigned entry, const char *owner, struct pci_irq *irq);

/* Mask (the device keeps a Pending Bit instead of signalling) or unmask irq's entry; an
 * unmask with the Pending Bit set signals at once (PCIe base spec 6.1.4.5). */
void pci_msix_mask(struct pci_dev *d, struct pci_irq *irq, bool masked);

/* Turn MSI-X off on d (the vector stays irq's). */
void pci_msix_disable(struct pci_dev *d, struct pci_irq *irq);

/* --- routes (route.c) --- */

/* Does this function have ACS redirection (RR, CR or EC) enabled now? Read live. */
bool pci_acs_redirects(const struct pci_dev *d);

/* --- ACS (acs.c) --- */

/* Apply t->policy to every ACS capability; each write is read back and compared.
 * Returns the number of ports whose read-back disagreed (0 when all verified). */
int pci_acs_apply(struct pci_topo *t);

const char *pci_acs_mode_name(enum pci_acs_mode m);
const char *pci_acs_decision_name(enum pci_acs_decision d);
/* "SV RR CR" style list of ACS bits into buf; returns buf. */
char *pci_acs_bits_str(uint16_t bits, char *buf, size_t cap);

/* --- driver model (driver.c) ---
 *
 * A driver is a bus-independent core (drivers/<x>/<x>.c, knows registers and queues, takes
 * an MMIO base and a DMA hook) plus a thin PCI attach file (drivers/<x>/<x>_pci.c) that
 * declares the match table, maps BARs, enables the function and hands the core what it
 * needs:
 *
 *   static const struct pci_device_id nvme_ids[] = {
 *           PCI_DEVICE_CLASS(0x010802, 0xffffff), PCI_ID_END };
 *   static int nvme_pci_probe(struct pci_dev *d, const struct pci_device_id *id) { ... }
 *   static void nvme_pci_remove(struct pci_dev *d) { ... }
 *   PCI_DRIVER(nvme, nvme_ids, nvme_pci_probe, nvme_pci_remove);
 */
#define PCI_ANY_ID 0xffffffffu

struct pci_device_id {
	uint32_t vendor, device;        /* PCI_ANY_ID matches anything */
	uint32_t class, class_mask;     /* (class & mask) == (dev class & mask) */
	uintptr_t data;                 /* driver private (e.g. a quirks word) */
};
#define PCI_DEVICE(v, d) { (v), (d), 0, 0, 0 }
#define PCI_DEVICE_CLASS(c, m) { PCI_ANY_ID, PCI_ANY_ID, (c), (m), 0 }
#define PCI_ID_END { 0, 0, 0, 0, 0 }

struct pci_driver {
	const char *name;
	const struct pci_device_id *ids; /* ends with PCI_ID_END (vendor 0) */
	int (*probe)(struct pci_dev *d, const struct pci_device_id *id); /* 0 or -errno */
	void (*remove)(struct pci_dev *d);
};
LINKER_SET_DECLARE(pci_drivers, struct pci_driver);

#define PCI_DRIVER(id, table, probe_fn, remove_fn)                                        \
	LINKER_SET_ENTRY(pci_drivers, struct pci_driver, pci_driver_##id) = {             \
		#id, table, probe_fn, remove_fn }

/* The entry of ids that matches d, or NULL. */
const struct pci_device_id *pci_match(const struct pci_device_id *ids, const struct pci_dev *d);

/* Offer every unbound function to the registered drivers whose tables match it, the most
 * specific match first (vendor/device before class); the first probe that returns 0 wins.
 * Returns the number of functions bound. */
int pci_probe_all(struct pci_topo *t);

/* Unbind d (calls remove). */
void pci_remove(struct pci_dev *d);

/* Unbind everything (reverse order). */
void pci_remove_all(struct pci_topo *t);

/* --- peer-to-peer DMA (p2pdma.c) --- */

enum p2p_map {
	P2P_MAP_NOT_SUPPORTED = 0, /* refused */
	P2P_MAP_BUS_ADDR,          /* routed below a common upstream bridge: use the bus address */
	P2P_MAP_THRU_HOST_BRIDGE,  /* goes up to the root complex, allowed by the allowlist */
};

enum p2p_reason {
	P2P_SAME_FUNCTION = 0,     /* provider is the client */
	P2P_SAME_DEVICE,           /* functions of one multi-function device */
	P2P_COMMON_UPSTREAM,       /* below a common upstream bridge (same switch or port) */
	P2P_HOST_BRIDGE_ALLOWED,   /* no common upstream bridge; the host bridge is allowlisted */
	P2P_ACS_HOST_BRIDGE_ALLOWED, /* ACS redirect forces it up; the host bridge is allowlisted */
	P2P_REFUSED_NO_COMMON,     /* no common upstream bridge, host bridge not allowlisted */
	P2P_REFUSED_ACS,           /* ACS redirect on the path, host bridge not allowlisted */
	P2P_REFUSED_NO_CLIENT,     /* empty client list or a client that is not a PCI function */
};

#define P2P_MAX_ACS_BRIDGES 8

/* The verdict for one provider/client pair (or the first refused pair of a list). */
struct p2p_verdict {
	enum p2p_map map;
	enum p2p_reason reason;
	int distance;                      /* -1 when refused */
	struct pci_dev *common;            /* the common upstream bridge, NULL through the host */
	struct pci_dev *client;            /* the client this verdict is about */
	unsigned nacs;
	struct pci_dev *acs[P2P_MAX_ACS_BRIDGES]; /* functions with ACS redirect on the path */
};

struct p2p_provider {
	struct pci_dev *dev;
	unsigned bar;
	uint64_t bus_base;     /* bus address of the first byte */
	uint64_t size;
	uint64_t granule;      /* allocation unit, a power of two >= 64 */
	uint64_t nchunks;
	uint64_t *bitmap;      /* bit set: chunk in use */
	bool published;        /* offered to other drivers through p2p_find() */
	/* counters */
	uint64_t allocs, frees, failures, bad_frees;
	uint64_t bytes_in_use, high_water;
};

#define P2P_MAX_PROVIDERS 8

/* Distance between two functions with Linux's rules (drivers/pci/p2pdma.c): 0 same function;
 * otherwise the hops to the nearest common upstream bridge on both sides; refused when ACS
 * redirect is set on the path or there is no common upstream bridge, unless the host
 * bridge is allowlisted (then through the host bridge). Fills v (may be NULL) and returns
 * the distance, or -1 when refused. */
int p2p_dev_distance(struct pci_dev *provider, struct pci_dev *client, struct p2p_verdict *v);

/* Sum of the distances from provider to every client; -1 if any is refused (v then
 * describes the first refused client). */
int p2p_distance(struct pci_dev *provider, struct pci_dev *const clients[], unsigned n,
		 struct p2p_verdict *v);

/* One line explaining a verdict ("behind the same switch (01:00.0)", "refused: ACS ...").
 * Returns buf. */
char *p2p_verdict_str(const struct p2p_verdict *v, char *buf, size_t cap);

/* Register [offset, offset + size) of a memory BAR of dev as peer-to-peer memory with an
 * allocation granule (0: 4 KiB); maps it write-combining. Returns the provider or NULL
 * (bad BAR, range outside it, table full, no memory). */
struct p2p_provider *p2p_provider_add(struct pci_dev *dev, unsigned bar, uint64_t offset,
				      uint64_t size, uint64_t granule);

/* Offer (or withdraw) the provider's memory to orchestrators via p2p_find(). */
void p2p_provider_publish(struct p2p_provider *p, bool publish);

/* Remove a provider. Returns 0, or -EBUSY while memory is allocated from it. */
int p2p_provider_remove(struct p2p_provider *p);

/* Remove every idle provider (tests); returns how many were still busy. */
int p2p_provider_remove_all(void);

/* The registered providers (index < p2p_provider_count()). */
unsigned p2p_provider_count(void);
struct p2p_provider *p2p_provider_at(unsigned i);

/* The published provider nearest to every client (ties: the lowest BDF, so runs are
 * reproducible; Linux picks at random). NULL when none is compatible. */
struct p2p_provider *p2p_find(struct pci_dev *const clients[], unsigned n, struct p2p_verdict *v);

/* Allocate size bytes (rounded up to the granule) of device memory. On success *addr is
 * tagged MEM_CLASS_DEVICE and *cpu (may be NULL) is the CPU address of the same bytes
 * (MMIO: access with volatile stores, never memcpy from a parser). 0 or -ENOMEM. */
int p2p_alloc(struct p2p_provider *p, uint64_t size, dma_addr_t *addr, void **cpu);

/* Free an allocation. 0, or -EINVAL for an address/size that is not a live allocation. */
int p2p_free(struct p2p_provider *p, dma_addr_t addr, uint64_t size);

/* Bytes still free. */
uint64_t p2p_provider_free_bytes(const struct p2p_provider *p);

/* The memory class of a bus address: MEM_CLASS_DEVICE inside a provider, HOST otherwise. */
enum mem_class p2p_addr_class(uint64_t bus);

/* --- peer-to-peer placement (p2p_placement.c): which memory two devices both reach --- */

#define P2P_PROVIDER_ID_HOST 0 /* the provider id of host DRAM (netdev's NETDEV_PROVIDER_HOST) */

/* The id of a registered provider as fragments carry it (its index plus one), or
 * P2P_PROVIDER_ID_HOST for NULL and unregistered providers. */
uint16_t p2p_provider_id(const struct p2p_provider *p);

/* The provider of an id, or NULL (host DRAM, unknown id). */
struct p2p_provider *p2p_provider_by_id(uint16_t id);

/* The provider in one of dev's own BARs (an NVMe CMB), or NULL. */
struct p2p_provider *p2p_provider_of_dev(const struct pci_dev *dev);

/* Which providers a DMA client may use in place. */
enum p2p_place_peer {
	P2P_PLACE_OWN_ONLY = 0, /* only memory in the client's own BAR (a drive's own CMB) */
	P2P_PLACE_ANY = 1,      /* any provider the P2P rules let the client reach */
};

/* May client DMA to or from the memory of provider id in place (no bounce through DRAM)?
 * 0; -ENODEV (no client, unknown provider) or -EXDEV (refused by the P2P rules or by
 * peer), with the reason in why. */
int p2p_place_reach(struct pci_dev *client, uint16_t id, enum p2p_place_peer peer, char *why, size_t whylen);

/* A piece of device memory chosen for two devices (read data an NVMe drive writes and a
 * NIC gathers from). */
struct p2p_place {
	dma_addr_t addr;   /* tagged MEM_CLASS_DEVICE */
	uint64_t offset;   /* from the provider's first byte */
	uint32_t len;
	uint16_t provider; /* p2p_provider_id() */
};

/* Allocate len bytes both owner and peer may reach: owner's own provider first (owner
 * writes it without a bus transfer) when peer may reach it, else the published provider
 * nearest to both. 0; -ENODEV (no owner or peer, no provider), -EXDEV (none both reach),
 * -EIO (the provider's memory decode is off), -ENOMEM; the reason in why. */
int p2p_place_alloc(struct pci_dev *owner, struct pci_dev *peer, uint32_t len, struct p2p_place *out, char *why,
		    size_t whylen);

/* Free what p2p_place_alloc gave. 0, or -EINVAL (unknown provider, not a live allocation). */
int p2p_place_free(const struct p2p_place *pl);

/* --- the appliance's topology (pci_init.c) --- */

/* The enumerated system topology (NULL before enumeration or without ECAM). */
struct pci_topo *pci_system(void);

/* --- the settings (pci_settings.c: pci.acs, pci.acs.isolate, pci.assign, p2p.host_bridge_allowlist) --- */

/* Set the policy used by the next enumeration / ACS application. */
void pci_configure(const struct pci_policy *p);

/* The policy in force (the settings file's, once core has stored it). */
const struct pci_policy *pci_policy_current(void);

#endif
