// sources: drivers/rdma/roce_pp_msg.c drivers/rdma/roce_dev.c mm/pool.c lib/log.c
/*
 * The address exchange of ibv_rc_pingpong: the message the example writes (LID, QPN, PSN
 * in hex, the GID's bytes as 32 hex digits, a NUL) parsed, bad ones refused, ours
 * formatted byte for byte as the example's sprintf would.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "drivers/rdma/roce_pingpong.h"

Test(roce_pingpong, the_examples_message_is_parsed)
{
	static const char msg[ROCE_PP_MSG_LEN] = "0000:000011:796285:00000000000000000000ffff0a0a0002";
	struct roce_pp_dest d;
	uint32_t ip;
	cr_assert_eq(sizeof(msg), 52);
	cr_assert_eq(roce_pp_parse(msg, sizeof(msg), &d), 0);
	cr_assert_eq(d.lid, 0);
	cr_assert_eq(d.qpn, 0x11);
	cr_assert_eq(d.psn, 0x796285);
	cr_assert_eq(roce_gid_to_ipv4(&d.gid, &ip), 0);
	cr_assert_eq(ip, 0x0a0a0002);
}

Test(roce_pingpong, bad_messages_are_refused)
{
	struct roce_pp_dest d;
	cr_assert_eq(roce_pp_parse("0000:000011:796285:00000000000000000000ffff0a0a00", 49, &d), -EINVAL, "short");
	cr_assert_eq(roce_pp_parse("0000-000011:796285:00000000000000000000ffff0a0a0002", 52, &d), -EINVAL);
	cr_assert_eq(roce_pp_parse("0000:00001g:796285:00000000000000000000ffff0a0a0002", 52, &d), -EINVAL);
	cr_assert_eq(roce_pp_parse("0000:000011:796285:0000000000000000000 ffff0a0a0002", 52, &d), -EINVAL);
}

Test(roce_pingpong, ours_is_formatted_as_the_example_does)
{
	struct roce_pp_dest d = { .lid = 0, .qpn = 0x101, .psn = 0xabcdef };
	char out[ROCE_PP_MSG_LEN];
	struct roce_pp_dest back;
	roce_gid_from_ipv4(0x0a0a000a, &d.gid);
	memset(out, 'x', sizeof(out));
	roce_pp_format(&d, out);
	cr_assert_str_eq(out, "0000:000101:abcdef:00000000000000000000ffff0a0a000a");
	cr_assert_eq(roce_pp_parse(out, sizeof(out), &back), 0);
	cr_assert_eq(back.qpn, 0x101);
	cr_assert_eq(back.psn, 0xabcdef);
	cr_assert_eq(memcmp(back.gid.raw, d.gid.raw, 16), 0);
}
