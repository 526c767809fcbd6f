/*
 * nvme_status.c - NVMe completion status to a readable string and to -errno: the one
 * place where the wire status space meets the appliance's errno space ("Errors" in docs/architecture.md).
 */
#include <errno.h>
#include <stddef.h>
#include "nvme.h"

struct status_name {
	uint16_t sc;     /* NVME_SC(sct, sc) */
	int err;         /* negative errno */
	const char *name;
};

static const struct status_name status_names[] = {
	/* Generic Command Status (SCT 0) */
	{ NVME_SC(0, 0x00), 0, "successful completion" },
	{ NVME_SC(0, 0x01), -EOPNOTSUPP, "invalid command opcode" },
	{ NVME_SC(0, 0x02), -EINVAL, "invalid field in command" },
	{ NVME_SC(0, 0x03), -EINVAL, "command ID conflict" },
	{ NVME_SC(0, 0x04), -EIO, "data transfer error" },
	{ NVME_SC(0, 0x05), -EIO, "commands aborted due to power loss" },
	{ NVME_SC(0, 0x06), -EIO, "internal error" },
	{ NVME_SC(0, 0x07), -ECANCELED, "command abort requested" },
	{ NVME_SC(0, 0x08), -ECANCELED, "command aborted due to SQ deletion" },
	{ NVME_SC(0, 0x09), -EIO, "command aborted due to failed fused command" },
	{ NVME_SC(0, 0x0a), -EIO, "command aborted due to missing fused command" },
	{ NVME_SC(0, 0x0b), -ENODEV, "invalid namespace or format" },
	{ NVME_SC(0, 0x0c), -EINVAL, "command sequence error" },
	{ NVME_SC(0, 0x0d), -EINVAL, "invalid SGL segment descriptor" },
	{ NVME_SC(0, 0x0e), -EINVAL, "invalid number of SGL descriptors" },
	{ NVME_SC(0, 0x0f), -EINVAL, "data SGL length invalid" },
	{ NVME_SC(0, 0x10), -EINVAL, "metadata SGL length invalid" },
	{ NVME_SC(0, 0x11), -EINVAL, "SGL descriptor type invalid" },
	{ NVME_SC(0, 0x12), -EINVAL, "invalid use of controller memory buffer" },
	{ NVME_SC(0, 0x13), -EINVAL, "PRP offset invalid" },
	{ NVME_SC(0, 0x14), -EINVAL, "atomic write unit exceeded" },
	{ NVME_SC(0, 0x15), -EPERM, "operation denied" },
	{ NVME_SC(0, 0x16), -EINVAL, "SGL offset invalid" },
	{ NVME_SC(0, 0x18), -EINVAL, "host identifier inconsistent format" },
	{ NVME_SC(0, 0x19), -ETIMEDOUT, "keep alive timer expired" },
	{ NVME_SC(0, 0x1a), -EINVAL, "keep alive timeout invalid" },
	{ NVME_SC(0, 0x1b), -ECANCELED, "command aborted due to preempt and abort" },
	{ NVME_SC(0, 0x1c), -EIO, "sanitize failed" },
	{ NVME_SC(0, 0x1d), -EBUSY, "sanitize in progress" },
	{ NVME_SC(0, 0x1e), -EINVAL, "SGL data block granularity invalid" },
	{ NVME_SC(0, 0x1f), -EINVAL, "command not supported for queue in CMB" },
	{ NVME_SC(0, 0x20), -EROFS, "namespace is write protected" },
	{ NVME_SC(0, 0x21), -EAGAIN, "command interrupted" },
	{ NVME_SC(0, 0x22), -EAGAIN, "transient transport error" },
	{ NVME_SC(0, 0x80), -ERANGE, "LBA out of range" },
	{ NVME_SC(0, 0x81), -ENOSPC, "capacity exceeded" },
	{ NVME_SC(0, 0x82), -EAGAIN, "namespace not ready" },
	{ NVME_SC(0, 0x83), -EACCES, "reservation conflict" },
	{ NVME_SC(0, 0x84), -EBUSY, "format in progress" },
	/* Command Specific Status (SCT 1) */
	{ NVME_SC(1, 0x00), -EINVAL, "completion queue invalid" },
	{ NVME_SC(1, 0x01), -EINVAL, "invalid queue identifier" },
	{ NVME_SC(1, 0x02), -EINVAL, "invalid queue size" },
	{ NVME_SC(1, 0x03), -EBUSY, "abort command limit exceeded" },
	{ NVME_SC(1, 0x05), -EBUSY, "asynchronous event request limit exceeded" },
	{ NVME_SC(1, 0x06), -EINVAL, "invalid firmware slot" },
	{ NVME_SC(1, 0x07), -EINVAL, "invalid firmware image" },
	{ NVME_SC(1, 0x08), -EINVAL, "invalid interrupt vector" },
	{ NVME_SC(1, 0x09), -EINVAL, "invalid log page" },
	{ NVME_SC(1, 0x0a), -EINVAL, "invalid format" },
	{ NVME_SC(1, 0x0c), -EINVAL, "invalid queue deletion" },
	{ NVME_SC(1, 0x0d), -EINVAL, "feature identifier not saveable" },
	{ NVME_SC(1, 0x0e), -EINVAL, "feature not changeable" },
	{ NVME_SC(1, 0x0f), -EINVAL, "feature not namespace specific" },
	{ NVME_SC(1, 0x80), -EINVAL, "conflicting attributes" },
	{ NVME_SC(1, 0x81), -EINVAL, "invalid protection information" },
	{ NVME_SC(1, 0x82), -EROFS, "attempted write to read only range" },
	/* Media and Data Integrity Errors (SCT 2) */
	{ NVME_SC(2, 0x80), -EIO, "write fault" },
	{ NVME_SC(2, 0x81), -EIO, "unrecovered read error" },
	{ NVME_SC(2, 0x82), -EILSEQ, "end-to-end guard check error" },
	{ NVME_SC(2, 0x83), -EILSEQ, "end-to-end application tag check error" },
	{ NVME_SC(2, 0x84), -EILSEQ, "end-to-end reference tag check error" },
	{ NVME_SC(2, 0x85), -EILSEQ, "compare failure" },
	{ NVME_SC(2, 0x86), -EACCES, "access denied" },
	{ NVME_SC(2, 0x87), -ENODATA, "deallocated or unwritten logical block" },
	/* Path Related Status (SCT 3) */
	{ NVME_SC(3, 0x00), -EIO, "internal path error" },
	{ NVME_SC(3, 0x60), -EIO, "internal path error (controller)" },
	{ NVME_SC(3, 0x70), -EIO, "path error (host)" },
	{ NVME_SC(3, 0x71), -ECANCELED, "command aborted by host" },
};

static const struct status_name *status_find(uint16_t status)
{
	uint16_t key = NVME_SC(NVME_STATUS_SCT(status), NVME_STATUS_SC(status));
	for (size_t i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++)
		if (status_names[i].sc == key)
			return &status_names[i];
	return NULL;
}

/* The status field of a CQE (phase bit ignored) as text. */
const char *nvme_status_str(uint16_t status)
{
	const struct status_name *s = status_find(status);
	if (s)
		return s->name;
	switch (NVME_STATUS_SCT(status)) {
	case 0: return "unknown generic status";
	case 1: return "unknown command specific status";
	case 2: return "unknown media error";
	case 3: return "unknown path error";
	case 7: return "vendor specific status";
	default: return "reserved status code type";
	}
}

/* The status field of a CQE (phase bit ignored) as 0 or a negative errno. */
int nvme_status_errno(uint16_t status)
{
	if (NVME_STATUS_SCT(status) == 0 && NVME_STATUS_SC(status) == 0)
		return 0;
	const struct status_name *s = status_find(status);
	return s ? s->err : -EIO;
}
