/*
 * nvmet_wire.h - what the NVMe-oF target needs beyond the host driver's definitions
 * (../nvme_regs.h, reused for the SQE/CQE, SGL descriptors, opcodes and Identify
 * offsets): the fabrics command set (NVMe over Fabrics 1.1, section 3), controller
 * properties, the status codes the target returns, the Identify fields a fabrics
 * controller fills, log page identifiers and the discovery log page format.
 *
 * SQE fields are read from the request's own copy through their le*_t types (struct
 * nvme_sqe, struct nvmf_cmd); buffers built for the host are written with
 * lib/byteorder.h's le16/32/64_store.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_WIRE_H
#define DRIVERS_NVME_TARGET_NVMET_WIRE_H

#include <stdint.h>
#include "../nvme_regs.h"

/* --- fabrics commands (opcode 0x7f, FCTYPE in SQE byte 4) --- */
#define NVMF_OPC_FABRICS 0x7f
enum {
	NVMF_FCTYPE_PROPERTY_SET = 0x00,
	NVMF_FCTYPE_CONNECT = 0x01,
	NVMF_FCTYPE_PROPERTY_GET = 0x04,
	NVMF_FCTYPE_AUTH_SEND = 0x05,
	NVMF_FCTYPE_AUTH_RECV = 0x06,
	NVMF_FCTYPE_DISCONNECT = 0x08,
};

/*
 * A fabrics command's 64 bytes (NVMe over Fabrics 1.1, 3.3): CDW0 and SGL1 where an NVMe
 * command has them, FCTYPE in byte 4, the command-specific fields from byte 40. Read from
 * the request's SQE with nvmf_cmd_of(), built by hosts (tests) and cast back with
 * nvmf_cmd_sqe().
 */
struct nvmf_cmd {
	uint8_t opc;                /* 0x7f */
	uint8_t flags;              /* FUSE 1:0 (0), PSDT 7:6 (SGLs) */
	le16_t cid;                 /* Command Identifier */
	uint8_t fctype;             /* Fabrics Command Type */
	uint8_t rsvd5[19];
	struct nvme_sgl_desc sgl1;  /* SGL Descriptor 1 */
	union {                     /* command specific, bytes 40..63 */
		struct {
			le16_t recfmt;   /* Record Format: 0 */
			le16_t qid;      /* Queue ID: 0 = admin queue */
			le16_t sqsize;   /* Submission Queue Size, 0's based */
			uint8_t cattr;   /* Connect Attributes */
			uint8_t rsvd47;
			le32_t kato;     /* Keep Alive Timeout, milliseconds, admin queue only */
			uint8_t rsvd52[12];
		} connect;
		struct {
			uint8_t attrib;  /* bits 2:0 size: 0 = 4 bytes, 1 = 8 bytes */
			uint8_t rsvd41[3];
			le32_t ofst;     /* property offset (controller register offset) */
			le64_t value;    /* Property Set */
			uint8_t rsvd56[8];
		} prop;
		struct {
			le16_t recfmt;   /* Record Format: 0 */
			uint8_t rsvd42[22];
		} disconnect;
	};
} __attribute__((packed, aligned(8)));
_Static_assert(sizeof(struct nvmf_cmd) == sizeof(struct nvme_sqe), "a fabrics command is an SQE");
_Static_assert(__builtin_offsetof(struct nvmf_cmd, connect.kato) == 48, "Connect KATO at byte 48");
_Static_assert(__builtin_offsetof(struct nvmf_cmd, prop.value) == 48, "Property VALUE at byte 48");

/* SQE byte offsets a Connect response names as the invalid parameter (IPO). */
#define NVMF_CONNECT_OFF_QID __builtin_offsetof(struct nvmf_cmd, connect.qid)
#define NVMF_CONNECT_OFF_SQSIZE __builtin_offsetof(struct nvmf_cmd, connect.sqsize)
#define NVMF_CATTR_PRIORITY_MASK 0x3u  /* bits 1:0: I/O queue priority class */
#define NVMF_CATTR_DISABLE_SQFLOW 0x4u /* bit 2: SQ flow control disabled */

/* The fabrics view of a received SQE (a copy: the SQE stays the one object). */
static inline struct nvmf_cmd nvmf_cmd_of(const struct nvme_sqe *sqe)
{
	struct nvmf_cmd f;
	__builtin_memcpy(&f, sqe, sizeof(f));
	return f;
}

/* The SQE a host sends for fabrics command f. */
static inline struct nvme_sqe nvmf_cmd_sqe(const struct nvmf_cmd *f)
{
	struct nvme_sqe sqe;
	__builtin_memcpy(&sqe, f, sizeof(sqe));
	return sqe;
}

/* The FCTYPE of an SQE whose opcode is NVMF_OPC_FABRICS (byte 4, where NSID would be). */
static inline uint8_t nvmf_fctype(const struct nvme_sqe *sqe)
{
	return nvmf_cmd_of(sqe).fctype;
}

/* Connect data (1024 bytes in the command's data). */
#define NVMF_CONNECT_DATA_LEN 1024
#define NVMF_CD_OFF_HOSTID 0         /* Host Identifier (16) */
#define NVMF_CD_OFF_CNTLID 16        /* Controller ID (2): 0xffff dynamic, 0xfffe static any */
#define NVMF_CD_OFF_SUBNQN 256       /* NVM Subsystem NQN (256, NUL-terminated) */
#define NVMF_CD_OFF_HOSTNQN 512      /* Host NQN (256, NUL-terminated) */
#define NVMF_NQN_FIELD_LEN 256
#define NVMF_CNTLID_DYNAMIC 0xffffu

/* Connect response DW0: CNTLID (15:0) on success; on Connect Invalid Parameters
 * IPO (15:0) = byte offset of the bad field, IATTR (23:16) bit 0 = in the data. */
#define NVMF_IATTR_DATA (1u << 16)

/* Property Get/Set: ATTRIB size. */
#define NVMF_PROP_SIZE_8 0x1u

/* Keep Alive (admin opcode 0x18), Asynchronous Event Request (0x0c), beyond nvme_regs.h. */
#define NVME_ADM_AER 0x0c
#define NVME_ADM_KEEP_ALIVE 0x18

/* --- status codes (CQE status field without the phase bit, NVME_SC(sct, sc)) --- */
#define NVME_SCT_GENERIC 0x0
#define NVME_SCT_CMD_SPECIFIC 0x1
#define NVMET_SC_SUCCESS NVME_SC(0, 0x00)
#define NVMET_SC_INVALID_OPCODE NVME_SC(0, 0x01)
#define NVMET_SC_INVALID_FIELD NVME_SC(0, 0x02)
#define NVMET_SC_DATA_XFER_ERROR NVME_SC(0, 0x04)
#define NVMET_SC_INTERNAL NVME_SC(0, 0x06)
#define NVMET_SC_ABORT_SQ_DELETED NVME_SC(0, 0x08)   /* Command Aborted due to SQ Deletion */
#define NVMET_SC_INVALID_NS NVME_SC(0, 0x0b)          /* Invalid Namespace or Format */
#define NVMET_SC_CMD_SEQ_ERROR NVME_SC(0, 0x0c)       /* Command Sequence Error */
#define NVMET_SC_SGL_INVALID_LAST NVME_SC(0, 0x0d)    /* Invalid SGL Segment Descriptor */
#define NVMET_SC_SGL_LENGTH_INVALID NVME_SC(0, 0x0f)  /* Data SGL Length Invalid */
#define NVMET_SC_SGL_TYPE_INVALID NVME_SC(0, 0x11)    /* SGL Descriptor Type Invalid */
#define NVMET_SC_CMD_INTERRUPTED NVME_SC(0, 0x21)     /* Command Interrupted (retry) */
#define NVMET_SC_LBA_RANGE NVME_SC(0, 0x80)           /* LBA Out of Range */
#define NVMET_SC_CAPACITY_EXCEEDED NVME_SC(0, 0x81)
#define NVMET_SC_NS_NOT_READY NVME_SC(0, 0x82)
#define NVMET_SC_INVALID_QID NVME_SC(1, 0x01)         /* Invalid Queue Identifier */
#define NVMET_SC_AER_LIMIT NVME_SC(1, 0x05)           /* Asynchronous Event Request Limit Exceeded */
#define NVMET_SC_INVALID_LOG_PAGE NVME_SC(1, 0x09)
#define NVMET_SC_FEAT_NOT_SAVEABLE NVME_SC(1, 0x0d)
#define NVMET_SC_FEAT_NOT_CHANGEABLE NVME_SC(1, 0x0e)  /* Feature Not Changeable */
#define NVMET_SC_CONNECT_FORMAT NVME_SC(1, 0x80)      /* Incompatible Format */
#define NVMET_SC_CONNECT_CTRL_BUSY NVME_SC(1, 0x81)   /* Controller Busy */
#define NVMET_SC_CONNECT_INVALID_PARAM NVME_SC(1, 0x82)
#define NVMET_SC_CONNECT_INVALID_HOST NVME_SC(1, 0x84)
/* The CQE status field carries the status code shifted past the phase bit. */
static inline uint16_t nvmet_status_field(uint16_t sc, int dnr)
{
	return (uint16_t)((sc << 1) | (dnr ? NVME_STATUS_DNR : 0));
}

/* --- Identify Controller fields a fabrics controller fills (byte offsets) --- */
#define NVME_IDC_SSVID 2         /* PCI Subsystem Vendor ID (2) */
#define NVME_IDC_RAB 72          /* Recommended Arbitration Burst */
#define NVME_IDC_CMIC 76         /* multi-path I/O and namespace sharing: bit 1 multiple controllers */
#define NVME_IDC_OAES 92         /* Optional Asynchronous Events Supported (4): bit 8 NS attribute notices */
#define NVME_IDC_CTRATT 96       /* Controller Attributes (4) */
#define NVME_CTRATT_HID128 (1u << 0) /* CTRATT bit 0: 128-bit Host Identifier (the only one accepted) */
#define NVME_CTRATT_TBKAS (1u << 6)  /* CTRATT bit 6: Traffic Based Keep Alive Support */
#define NVME_IDC_CNTRLTYPE 111   /* Controller Type: 1 I/O, 2 discovery, 3 administrative */
#define NVME_IDC_AERL 259        /* Asynchronous Event Request Limit, 0's based */
#define NVME_IDC_LPA 261         /* Log Page Attributes: bit 2 extended data (offsets) */
#define NVME_IDC_ELPE 262        /* Error Log Page Entries, 0's based */
#define NVME_IDC_KAS 320         /* Keep Alive Support (2): granularity in 100 ms units */
#define NVME_IDC_MAXCMD 514      /* Maximum Outstanding Commands (2) */
#define NVME_IDC_FUSES 522
#define NVME_IDC_IOCCSZ 1792     /* I/O Queue Command Capsule Supported Size (4), 16-byte units */
#define NVME_IDC_IORCSZ 1796     /* I/O Queue Response Capsule Supported Size (4), 16-byte units */
#define NVME_IDC_ICDOFF 1800     /* In Capsule Data Offset (2), 16-byte units after the SQE */
#define NVME_IDC_FCATT 1802      /* Fabrics Controller Attributes: bit 0 static controller model */
#define NVME_IDC_MSDBD 1803      /* Maximum SGL Data Block Descriptors */
#define NVME_IDC_OFCS 1804       /* Optional Fabric Commands Supported (2): bit 0 Disconnect */
#define NVME_CNTRLTYPE_IO 1
#define NVME_CNTRLTYPE_DISCOVERY 2
#define NVME_OAES_NS_ATTR (1u << 8)
#define NVME_SGLS_OFFSET (1u << 20)   /* SGL Address field may be an offset (in-capsule data) */
#define NVME_SGLS_KEYED (1u << 2)     /* Keyed SGL Data Block descriptor (RDMA) */
/* SGL1 identifiers (DPTR byte 15: type << 4 | sub type) a fabrics command may carry. */
#define NVMF_SGL_ID_OFFSET 0x01       /* Data Block, sub type Offset: in-capsule data (TCP, RDMA) */
#define NVMF_SGL_ID_TRANSPORT 0x5a    /* Transport SGL Data Block, sub type A: data by R2T/C2HData (TCP) */
#define NVMF_SGL_TYPE_KEYED 0x4       /* Keyed SGL Data Block (RDMA), any sub type */

/* --- Identify: more CNS values and namespace fields --- */
#define NVME_ID_CNS_NS_DESC_LIST 0x03
#define NVME_IDNS_NMIC 30        /* Namespace Multi-path I/O and Sharing: bit 0 shared */
#define NVME_IDNS_DLFEAT 33      /* Deallocate Logical Block Features: 001b reads zeroes */
#define NVME_IDNS_NGUID 104      /* Namespace Globally Unique Identifier (16) */
#define NVME_IDNS_EUI64 120
#define NVME_NIDT_NGUID 0x02     /* NS identification descriptor types (length 16) */
#define NVME_NIDT_UUID 0x03
#define NVME_ID_LEN 4096

/* --- features --- */
#define NVME_FEAT_ARBITRATION 0x01
#define NVME_FEAT_POWER_MGMT 0x02
#define NVME_FEAT_VOLATILE_WC 0x06
#define NVME_FEAT_IRQ_COALESCE 0x08
#define NVME_FEAT_ASYNC_EVENT 0x0b
#define NVME_FEAT_KATO 0x0f
#define NVME_FEAT_HOST_ID 0x81
#define NVME_AEC_NS_ATTR (1u << 8)  /* Namespace Attribute Notices */

/* --- asynchronous events: CQE DW0 of a completed AER --- */
#define NVME_AER_TYPE_NOTICE 0x2
#define NVME_AER_NOTICE_NS_CHANGED 0x00
#define NVME_AER_RESULT(type, info, lid) ((uint32_t)(type) | ((uint32_t)(info) << 8) | ((uint32_t)(lid) << 16))

/* --- log pages (Get Log Page CDW10: LID 7:0, LSP 11:8, RAE 15, NUMDL 31:16) --- */
#define NVME_LOG_ERROR 0x01
#define NVME_LOG_SMART 0x02
#define NVME_LOG_FW_SLOT 0x03
#define NVME_LOG_CHANGED_NS 0x04
#define NVME_LOG_DISCOVERY 0x70
#define NVME_LOG_RAE (1u << 15)
#define NVME_LOG_ERROR_ENTRY_LEN 64
#define NVME_LOG_SMART_LEN 512
#define NVME_LOG_CHANGED_NS_LEN 4096

/* Discovery log page: a 1024-byte header, then 1024-byte entries. */
#define NVMF_DISC_HDR_LEN 1024
#define NVMF_DISC_OFF_GENCTR 0       /* Generation Counter (8) */
#define NVMF_DISC_OFF_NUMREC 8       /* Number of Records (8) */
#define NVMF_DISC_OFF_RECFMT 16      /* Record Format (2) */
#define NVMF_DISC_ENTRY_LEN 1024
#define NVMF_DE_TRTYPE 0             /* Transport Type (1): 1 RDMA, 3 TCP */
#define NVMF_DE_ADRFAM 1             /* Address Family (1): 1 IPv4 */
#define NVMF_DE_SUBTYPE 2            /* Subsystem Type: 1 discovery referral, 2 NVM, 3 current discovery */
#define NVMF_DE_TREQ 3               /* Transport Requirements: bits 1:0 secure channel (0 not specified, 2 not required) */
#define NVMF_DE_PORTID 4             /* Port ID (2) */
#define NVMF_DE_CNTLID 6             /* Controller ID (2): 0xffff dynamic */
#define NVMF_DE_ASQSZ 8              /* Admin Max SQ Size (2) */
#define NVMF_DE_TRSVCID 32           /* Transport Service Identifier (32, ASCII) */
#define NVMF_DE_SUBNQN 256           /* Subsystem NQN (256) */
#define NVMF_DE_TRADDR 512           /* Transport Address (256, ASCII) */
#define NVMF_DE_TSAS 768             /* Transport Specific Address Subtype (256): TCP SECTYPE byte 0 */
#define NVMF_ADRFAM_IPV4 1
#define NVMF_SUBTYPE_NVME 2
#define NVMF_TREQ_NOT_SPECIFIED 0x0
#define NVMF_TREQ_NOT_REQUIRED 0x2

/* --- the properties a fabrics controller exposes (controller register offsets) --- */
#define NVMF_PROP_CAP NVME_REG_CAP   /* 8 bytes */
#define NVMF_PROP_VS NVME_REG_VS     /* 4 bytes */
#define NVMF_PROP_CC NVME_REG_CC     /* 4 bytes */
#define NVMF_PROP_CSTS NVME_REG_CSTS /* 4 bytes */
#define NVME_CSTS_SHST_COMPLETE 0x2u
#define NVME_CC_SHN_NONE 0x0u

#endif
