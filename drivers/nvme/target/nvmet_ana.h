/*
 * nvmet_ana.h - Asymmetric Namespace Access (NVMe Base 2.0, 8.20): every namespace is in
 * an ANA group (config `ana_grpid`), and each port has a state per group (config
 * `ports[].ana_groups`, changed at run time with the `ana` console command). A host with
 * native multipath reads the ANA log page (LID 0Ch) from every controller and sends I/O
 * where the namespace's group is optimized (or non-optimized); I/O that reaches a group in
 * another state fails with a path status (SCT 3) that makes the host try another path.
 *
 * The state lives in struct nvmet_ana inside the target (one per poll loop); controllers
 * see the state of the port they were connected on.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_ANA_H
#define DRIVERS_NVME_TARGET_NVMET_ANA_H

#include <stdbool.h>
#include <stdint.h>
#include "nvmet_config.h"

/* --- wire: Identify Controller fields (byte offsets), log page, events, statuses --- */
#define NVME_IDC_ANATT 342       /* ANA Transition Time (1), seconds */
#define NVME_IDC_ANACAP 343      /* ANA Capabilities (1) */
#define NVME_IDC_ANAGRPMAX 344   /* ANA Group Identifier Maximum (4) */
#define NVME_IDC_NANAGRPID 348   /* Number of ANA Group Identifiers (4) */
#define NVME_IDC_MNAN 540        /* Maximum Number of Allowed Namespaces (4) */
#define NVME_CMIC_ANA (1u << 3)  /* CMIC bit 3: ANA reporting supported */
#define NVME_ANACAP_OPTIMIZED (1u << 0)
#define NVME_ANACAP_NON_OPTIMIZED (1u << 1)
#define NVME_ANACAP_INACCESSIBLE (1u << 2)
#define NVME_ANACAP_PERSISTENT_LOSS (1u << 3)
#define NVME_ANACAP_CHANGE (1u << 4)
#define NVME_ANACAP_GRPID_STATIC (1u << 6) /* ANAGRPID does not change while attached */
#define NVME_IDNS_ANAGRPID 92    /* Identify Namespace: ANA Group Identifier (4) */
#define NVME_OAES_ANA_CHANGE (1u << 11)  /* OAES / AEC bit 11: ANA change notices */
#define NVME_AEC_ANA_CHANGE (1u << 11)
#define NVME_AER_NOTICE_ANA 0x03         /* AER result Asynchronous Event Information */
#define NVME_LOG_ANA 0x0c
#define NVME_LOG_LSP_SHIFT 8             /* Get Log Page CDW10 LSP, bits 11:8 */
#define NVME_ANA_LSP_RGO 0x1u            /* LSP bit 0: Return Groups Only */
/* ANA log page: a 16-byte header (CHGCNT 8, NGRPS 2), then per group a 32-byte descriptor
 * (ANAGRPID 4, NNSIDS 4, CHGCNT 8, ANAS 1, reserved 15) and NNSIDS NSIDs of 4 bytes. */
#define NVME_ANA_HDR_LEN 16
#define NVME_ANA_OFF_CHGCNT 0
#define NVME_ANA_OFF_NGRPS 8
#define NVME_ANA_DESC_LEN 32
#define NVME_ANA_DESC_GRPID 0
#define NVME_ANA_DESC_NNSIDS 4
#define NVME_ANA_DESC_CHGCNT 8
#define NVME_ANA_DESC_ANAS 16
/* Path Related Status (SCT 3): what Linux multipath fails over on (DNR clear). */
#define NVMET_SC_ANA_PERSISTENT_LOSS NVME_SC(3, 0x01)
#define NVMET_SC_ANA_INACCESSIBLE NVME_SC(3, 0x02)
#define NVMET_SC_ANA_TRANSITION NVME_SC(3, 0x03)

#define NVMET_ANATT_S 10         /* the longest a group stays in "change" (ANATT) */

/* One port's view: a state per ANA group ID and change counters. */
struct nvmet_ana_port {
	uint64_t chgcnt;                          /* log page CHGCNT: changes on this port */
	uint64_t grp_chgcnt[NVMET_ANA_GRPMAX + 1];
	uint8_t state[NVMET_ANA_GRPMAX + 1];      /* enum nvmet_ana_state, index ANAGRPID */
};

struct nvmet_ana {
	struct nvmet_ana_port port[NVMET_CFG_MAX_PORTS];
	uint64_t changes;                         /* state changes made at run time */
};

struct nvmet_target;
struct nvmet_ctrl;
struct nvmet_ns;

/* Fill the ports' states from the configuration (nvmet_init). */
void nvmet_ana_init(struct nvmet_target *t);

/* Set ANA group grpid on the port with this portid to st; the controllers connected
 * there get an ANA change notice. 0, -ENOENT (no such port), -EINVAL (grpid outside
 * 1..NVMET_ANA_GRPMAX). Setting the state it has already is a no-op. */
int nvmet_ana_set_state(uint16_t portid, uint32_t grpid, enum nvmet_ana_state st);

/* The state of group grpid on the port with this portid: 0 and *out, or -ENOENT. */
int nvmet_ana_port_state(uint16_t portid, uint32_t grpid, enum nvmet_ana_state *out);

/* The state of group grpid on port index port. */
enum nvmet_ana_state nvmet_ana_state(unsigned port, uint32_t grpid);

/* The ANA group of namespace ns (1 when the configuration gave none). */
uint32_t nvmet_ana_ns_grpid(const struct nvmet_ns *ns);

/* The path status an I/O command to ns gets on controller c: 0 when its group is
 * optimized or non-optimized there, else the ANA status (persistent loss, inaccessible,
 * transition). */
uint16_t nvmet_ana_io_status(const struct nvmet_ctrl *c, const struct nvmet_ns *ns);

/* Build controller c's ANA log page into page (cap bytes): lsp from Get Log Page CDW10,
 * rae its Retain Asynchronous Event bit (clear: the ANA notice is unmasked). Returns the
 * page length (at most cap; it always fits NVMET_ANA_LOG_MAX). */
uint32_t nvmet_ana_log(struct nvmet_ctrl *c, uint8_t lsp, bool rae, uint8_t *page, uint32_t cap);
#define NVMET_ANA_LOG_MAX (NVME_ANA_HDR_LEN + NVMET_CFG_MAX_NS * (NVME_ANA_DESC_LEN + 4))

/* The ANA fields of Identify Controller (CMIC bit, ANATT, ANACAP, ANAGRPMAX, NANAGRPID,
 * MNAN) for an I/O controller. */
void nvmet_ana_identify_ctrl(uint8_t *id);

#endif
