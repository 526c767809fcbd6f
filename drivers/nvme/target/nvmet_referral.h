/*
 * nvmet_referral.h - discovery referrals (NVMe over Fabrics 1.1, 5.3): a port's discovery
 * log lists, after the subsystems, the other discovery services its `referrals` name
 * (subtype 1, discovery referral), so one discovery address leads a host to subsystems
 * on several appliances. Referrals can be added and removed at run time; the discovery
 * controllers on the port then get a Discovery Log Page Change notice.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_REFERRAL_H
#define DRIVERS_NVME_TARGET_NVMET_REFERRAL_H

#include <stdbool.h>
#include <stdint.h>
#include "nvmet_config.h"

/* --- wire --- */
#define NVMF_SUBTYPE_REFERRAL 1          /* Discovery Log Entry SUBTYPE: discovery service referral */
#define NVME_OAES_DISC_CHANGE (1u << 31) /* OAES / AEC bit 31: Discovery Log Page Change notices */
#define NVME_AEC_DISC_CHANGE (1u << 31)
#define NVME_AER_NOTICE_DISC_CHANGED 0xf0
#define NVMF_TSAS_RDMA_QPTYPE 0          /* TSAS for RDMA: QP type 1 reliable connected */
#define NVMF_TSAS_RDMA_PRTYPE 1          /* provider type 1: none specified */
#define NVMF_TSAS_RDMA_CMS 2             /* connection management 1: RDMA_CM */

/* Enabled referrals of a configured port (the log's records after its subsystems). */
unsigned nvmet_referral_count(const struct nvmet_cfg_port *port);

/* Build the discovery log entry (1024 bytes at e) of enabled referral idx of port. */
void nvmet_referral_entry(const struct nvmet_cfg_port *port, unsigned idx, uint8_t *e);

/* Add referral r to the port with this portid (run time). 0, -ENOENT (no port or no
 * target), -EEXIST (its name is taken), -ENOSPC (NVMET_CFG_MAX_REFERRALS). */
int nvmet_referral_add(uint16_t portid, const struct nvmet_cfg_referral *r);

/* Remove the referral called name from the port: 0 or -ENOENT. */
int nvmet_referral_del(uint16_t portid, const char *name);

#endif
