// sources: drivers/nvme/nvme_cmb.c
/*
 * CMB register decoding: CMBLOC/CMBSZ in QEMU's values, size units, allowed uses, reserved
 * values refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include "drivers/nvme/nvme.h"

Test(cmb_regs, qemu_64_mib_in_bar2)
{
	/* measured: CMBSZ 0x0004021d = 64 x 1 MiB, SQS LISTS RDS WDS; CMBLOC 0x62 = BAR2 */
	struct nvme_cmb_info ci;
	char uses[40];
	cr_assert_eq(nvme_cmb_decode(0x62, 0x0004021d, &ci), 0);
	cr_assert_eq(ci.bir, 2);
	cr_assert_eq(ci.unit, 1u << 20);
	cr_assert_eq(ci.size, 64ull << 20);
	cr_assert_eq(ci.offset, 0);
	cr_assert(ci.sqs && !ci.cqs && ci.lists && ci.rds && ci.wds);
	cr_assert_str_eq(nvme_cmb_uses_str(&ci, uses, sizeof(uses)), "SQS LISTS RDS WDS");
}

Test(cmb_regs, size_units_and_offset)
{
	struct nvme_cmb_info ci;
	/* SZU 0 = 4 KiB: 16 units; OFST 2 units */
	cr_assert_eq(nvme_cmb_decode((2u << 12) | 4, (16u << 12) | (0u << 8) | NVME_CMBSZ_WDS, &ci), 0);
	cr_assert_eq(ci.bir, 4);
	cr_assert_eq(ci.size, 64 * 1024);
	cr_assert_eq(ci.offset, 8192);
	/* SZU 1 = 64 KiB, SZU 3 = 16 MiB, SZU 6 = 64 GiB */
	cr_assert_eq(nvme_cmb_decode(2, (3u << 12) | (1u << 8), &ci), 0);
	cr_assert_eq(ci.size, 3 * 64 * 1024);
	cr_assert_eq(nvme_cmb_decode(2, (1u << 12) | (3u << 8), &ci), 0);
	cr_assert_eq(ci.size, 16ull << 20);
	cr_assert_eq(nvme_cmb_decode(2, (0xfffffu << 12) | (6u << 8), &ci), 0);
	cr_assert_eq(ci.size, 0xfffffull << 36, "largest CMB does not overflow");
}

Test(cmb_regs, zero_cmbsz_means_no_cmb_or_cre_not_set)
{
	struct nvme_cmb_info ci;
	cr_assert_eq(nvme_cmb_decode(0, 0, &ci), -ENODEV);
	cr_assert_eq(nvme_cmb_decode(2, 0x21d, &ci), -ENODEV, "SZ = 0");
}

Test(cmb_regs, reserved_values_refused)
{
	struct nvme_cmb_info ci;
	cr_assert_eq(nvme_cmb_decode(2, 0x0004071d, &ci), -EINVAL, "SZU 7 reserved");
	cr_assert_eq(nvme_cmb_decode(1, 0x0004021d, &ci), -EINVAL, "BIR 1");
	cr_assert_eq(nvme_cmb_decode(6, 0x0004021d, &ci), -EINVAL, "BIR 6");
}
