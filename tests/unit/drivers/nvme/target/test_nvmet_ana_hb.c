// sources: drivers/nvme/target/nvmet_ana_hb.c drivers/nvme/target/nvmet_config.c lib/ipv4_text.c lib/log.c
/*
 * The failover heartbeat's logic: the datagram built and parsed (and every malformed one
 * refused), the partner heard, silence past ana.takeover_ms making a standby take over once
 * (never one that never heard its partner, never when takeover is off, never an appliance
 * already serving), datagrams from others or about another group ignored, both appliances
 * optimized counted.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_ana_hb.h"
#include "lib/log.h"
#include "lib/byteorder.h"
#include "lib/clock.h"

LOG_MODULE_DEFINE(nvmet); /* nvmet_core.c, which defines it, is not linked */

#define PEER 0x0a0a010au
#define MS (1000ull * 1000ull)

static struct nvmet_ana_hb hb;

static void from_peer(enum nvmet_ana_state st, uint64_t now)
{
	struct nvmet_ana_hb other;
	uint8_t msg[NVMET_ANA_HB_LEN];
	nvmet_ana_hb_init(&other, 1, 1, 1, 0);
	nvmet_ana_hb_build(&other, st, msg);
	nvmet_ana_hb_rx(&hb, PEER, msg, sizeof(msg), now, NVMET_ANA_INACCESSIBLE);
}

Test(nvmet_ana_hb, wire_round_trip_and_refusals)
{
	uint8_t msg[NVMET_ANA_HB_LEN + 4];
	struct nvmet_ana_hb_msg m;

	nvmet_ana_hb_init(&hb, PEER, 1, 7, 3000);
	hb.seq = 0x01020304;
	nvmet_ana_hb_build(&hb, NVMET_ANA_CHANGE, msg);
	static const uint8_t want[NVMET_ANA_HB_LEN] = { 'P', '2', 'H', 'B', 1, 0xf, 0, 0, 0, 0, 0, 7, 1, 2, 3, 4 };
	cr_assert_arr_eq(msg, want, sizeof(want));
	cr_assert_eq(hb.sent, 1);
	cr_assert_eq(hb.seq, 0x01020305);
	cr_assert_eq(nvmet_ana_hb_parse(msg, NVMET_ANA_HB_LEN + 4, &m), 0, "trailing bytes are allowed");
	cr_assert_eq(m.anas, NVMET_ANA_CHANGE);
	cr_assert_eq(m.grpid, 7);
	cr_assert_eq(m.seq, 0x01020304);
	cr_assert_eq(nvmet_ana_hb_parse(msg, NVMET_ANA_HB_LEN - 1, &m), -EINVAL, "short");
	static const struct { unsigned off; uint8_t val; } bad[] = {
		{ 0, 'X' }, { 3, 0 }, { 4, 2 }, { 4, 0 }, { 5, 0 }, { 5, 5 }, { 5, 0xff }, { 11, 0 }, { 11, 33 }, { 8, 1 },
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t b[NVMET_ANA_HB_LEN];
		memcpy(b, msg, sizeof(b));
		b[bad[i].off] = bad[i].val;
		cr_assert_eq(nvmet_ana_hb_parse(b, sizeof(b), &m), -EINVAL, "byte %u = %u", bad[i].off, bad[i].val);
	}
	cr_assert_str_eq(nvmet_ana_hb_state_name(NVMET_ANA_HB_WATCHING), "watching");
	cr_assert_str_eq(nvmet_ana_hb_state_name((enum nvmet_ana_hb_state)9), "?");
}

Test(nvmet_ana_hb, silent_partner_standby_takes_over_once)
{
	nvmet_ana_hb_init(&hb, PEER, 1, 1, 3000);
	cr_assert_eq(hb.state, NVMET_ANA_HB_WAITING);
	/* never heard: no takeover however long */
	cr_assert_eq(nvmet_ana_hb_tick(&hb, 100000 * MS, NVMET_ANA_INACCESSIBLE), 0);
	from_peer(NVMET_ANA_OPTIMIZED, 100000 * MS);
	cr_assert_eq(hb.state, NVMET_ANA_HB_WATCHING);
	cr_assert_eq(hb.received, 1);
	cr_assert_eq(hb.peer_anas, NVMET_ANA_OPTIMIZED);
	cr_assert_eq(nvmet_ana_hb_tick(&hb, 102999 * MS, NVMET_ANA_INACCESSIBLE), 0, "2999 ms of silence");
	from_peer(NVMET_ANA_OPTIMIZED, 102999 * MS);
	cr_assert_eq(nvmet_ana_hb_tick(&hb, 105998 * MS, NVMET_ANA_INACCESSIBLE), 0);
	cr_assert_eq(nvmet_ana_hb_tick(&hb, 105999 * MS, NVMET_ANA_INACCESSIBLE), 1, "3000 ms: take over");
	cr_assert_eq(hb.state, NVMET_ANA_HB_SILENT);
	cr_assert_eq(hb.takeovers, 1);
	cr_assert_eq(nvmet_ana_hb_tick(&hb, 200000 * MS, NVMET_ANA_INACCESSIBLE), 0, "once");
	/* the partner back (as standby): watched again */
	from_peer(NVMET_ANA_INACCESSIBLE, 200000 * MS);
	cr_assert_eq(hb.state, NVMET_ANA_HB_WATCHING);
	cr_assert_eq(hb.peer_anas, NVMET_ANA_INACCESSIBLE);
	/* an appliance that already serves does not take over */
	cr_assert_eq(nvmet_ana_hb_tick(&hb, 300000 * MS, NVMET_ANA_OPTIMIZED), 0);
	cr_assert_eq(hb.state, NVMET_ANA_HB_SILENT);
	cr_assert_eq(hb.takeovers, 1);
}

Test(nvmet_ana_hb, takeover_off_strangers_and_both_optimized)
{
	uint8_t msg[NVMET_ANA_HB_LEN];
	struct nvmet_ana_hb other;

	nvmet_ana_hb_init(&hb, PEER, 1, 1, 0);
	from_peer(NVMET_ANA_OPTIMIZED, 0);
	cr_assert_eq(nvmet_ana_hb_tick(&hb, 2999 * MS, NVMET_ANA_INACCESSIBLE), 0);
	cr_assert_eq(hb.state, NVMET_ANA_HB_WATCHING);
	cr_assert_eq(nvmet_ana_hb_tick(&hb, 1000000 * MS, NVMET_ANA_INACCESSIBLE), 0, "takeover_ms 0: operator only");
	cr_assert_eq(hb.state, NVMET_ANA_HB_SILENT, "but the silence is shown");
	cr_assert_eq(hb.takeovers, 0);

	nvmet_ana_hb_init(&hb, PEER, 1, 1, 3000);
	nvmet_ana_hb_init(&other, 1, 1, 2, 0);
	nvmet_ana_hb_build(&other, NVMET_ANA_OPTIMIZED, msg);
	nvmet_ana_hb_rx(&hb, PEER, msg, sizeof(msg), 0, NVMET_ANA_INACCESSIBLE);
	cr_assert_eq(hb.foreign, 1, "another group");
	nvmet_ana_hb_init(&other, 1, 1, 1, 0);
	nvmet_ana_hb_build(&other, NVMET_ANA_OPTIMIZED, msg);
	nvmet_ana_hb_rx(&hb, PEER + 1, msg, sizeof(msg), 0, NVMET_ANA_INACCESSIBLE);
	cr_assert_eq(hb.foreign, 2, "another sender");
	nvmet_ana_hb_rx(&hb, PEER, msg, 3, 0, NVMET_ANA_INACCESSIBLE);
	cr_assert_eq(hb.bad, 1);
	cr_assert_eq(hb.state, NVMET_ANA_HB_WAITING, "none of them is the partner's heartbeat");
	/* both optimized: counted once per episode */
	nvmet_ana_hb_rx(&hb, PEER, msg, sizeof(msg), 0, NVMET_ANA_OPTIMIZED);
	nvmet_ana_hb_rx(&hb, PEER, msg, sizeof(msg), 1, NVMET_ANA_OPTIMIZED);
	cr_assert_eq(hb.both_optimized, 1);
	/* no partner configured: everything is foreign */
	nvmet_ana_hb_init(&hb, 0, 1, 1, 3000);
	cr_assert_eq(hb.state, NVMET_ANA_HB_OFF);
	nvmet_ana_hb_rx(&hb, 0, msg, sizeof(msg), 0, NVMET_ANA_INACCESSIBLE);
	cr_assert_eq(hb.received, 0);
	cr_assert_eq(nvmet_ana_hb_tick(&hb, 1000000 * MS, NVMET_ANA_INACCESSIBLE), 0);
}
