// sources: drivers/nvme/nvme_status.c
/*
 * NVMe status decoding: readable strings and the one mapping to -errno.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "drivers/nvme/nvme.h"

/* A CQE status field: SC 8:1, SCT 11:9, phase bit 0, DNR 15. */
static uint16_t st(unsigned sct, unsigned sc, bool phase, bool dnr)
{
	return (uint16_t)((sc << 1) | (sct << 9) | (phase ? 1 : 0) | (dnr ? 0x8000 : 0));
}

Test(status, success_is_zero_whatever_the_phase)
{
	cr_assert_eq(nvme_status_errno(st(0, 0, false, false)), 0);
	cr_assert_eq(nvme_status_errno(st(0, 0, true, false)), 0);
	cr_assert_str_eq(nvme_status_str(st(0, 0, true, false)), "successful completion");
}

Test(status, the_cmb_trap_and_sgl_length_codes_read_well)
{
	/* 0x4012 as QEMU reports it: DNR | Invalid Use of CMB */
	cr_assert_str_eq(nvme_status_str(st(0, 0x12, true, true)), "invalid use of controller memory buffer");
	cr_assert_eq(nvme_status_errno(st(0, 0x12, false, true)), -EINVAL);
	cr_assert_str_eq(nvme_status_str(st(0, 0x0f, false, true)), "data SGL length invalid");
}

Test(status, nvm_command_set_codes)
{
	cr_assert_eq(nvme_status_errno(st(0, 0x80, false, true)), -ERANGE);
	cr_assert_str_eq(nvme_status_str(st(0, 0x80, false, true)), "LBA out of range");
	cr_assert_eq(nvme_status_errno(st(0, 0x0b, false, true)), -ENODEV);
	cr_assert_eq(nvme_status_errno(st(0, 0x01, false, true)), -EOPNOTSUPP);
	cr_assert_eq(nvme_status_errno(st(0, 0x07, false, false)), -ECANCELED);
	cr_assert_eq(nvme_status_errno(st(0, 0x20, false, false)), -EROFS);
}

Test(status, command_specific_and_media_are_separate_spaces)
{
	/* SC 0x01 means "invalid opcode" in SCT 0 but "invalid queue identifier" in SCT 1 */
	cr_assert_str_eq(nvme_status_str(st(1, 0x01, false, false)), "invalid queue identifier");
	cr_assert_str_eq(nvme_status_str(st(2, 0x81, false, false)), "unrecovered read error");
	cr_assert_eq(nvme_status_errno(st(2, 0x81, false, false)), -EIO);
	cr_assert_eq(nvme_status_errno(st(2, 0x85, false, false)), -EILSEQ);
}

Test(status, unknown_codes_are_eio_with_a_generic_name)
{
	cr_assert_eq(nvme_status_errno(st(0, 0x7f, false, false)), -EIO);
	cr_assert_str_eq(nvme_status_str(st(0, 0x7f, false, false)), "unknown generic status");
	cr_assert_str_eq(nvme_status_str(st(7, 0x01, false, false)), "vendor specific status");
	cr_assert_eq(nvme_status_errno(st(7, 0x01, false, false)), -EIO);
	cr_assert_str_eq(nvme_status_str(st(5, 0x00, false, false)), "reserved status code type");
}
