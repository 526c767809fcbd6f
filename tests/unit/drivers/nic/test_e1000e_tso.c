// sources: drivers/nic/e1000e_tso.c drivers/nic/e1000e.c drivers/nic/netdev.c mm/pool.c mm/dma.c lib/log.c
/*
 * The TSO probe's judgement (e1000e_tso_judge): what came back from one looped-back TSO
 * frame of 3000 bytes at MSS 1000 decides whether nic.tso = auto turns TSO on. Correct
 * segments do; QEMU 7.2's IPv4 fragments, a wrong count, length, sequence number,
 * checksum, payload or PSH placement, or nothing at all, do not - each with its reason.
 * Also e1000e_tso_set: the stack sees NETDEV_F_TSO and tso_max only while TSO is on.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "drivers/nic/e1000e.h"
#include "tests/unit/unit_support.h"

#define SEQ0 0xfffffc18u /* the sequence numbers wrap inside the frame */

TestSuite(e1000e_tso, .init = unit_pools_begin, .fini = unit_pools_end);

/* What a correct device returns: three 20+20+1000/1000/1000 segments. */
static unsigned good(struct e1000e_tso_seen *s)
{
	memset(s, 0, 3 * sizeof(*s));
	for (unsigned i = 0; i < 3; i++) {
		s[i].ip_len = 20 + 20 + 1000;
		s[i].frag = 0x4000; /* DF */
		s[i].ip_csum_ok = true;
		s[i].has_tcp = true;
		s[i].seq = SEQ0 + 1000 * i;
		s[i].tcp_flags = i == 2 ? 0x18 : 0x10;
		s[i].tcp_hlen = 20;
		s[i].pay_len = 1000;
		s[i].tcp_csum_ok = true;
		s[i].payload_ok = true;
	}
	return 3;
}

static enum e1000e_tso_verdict judge(const struct e1000e_tso_seen *s, unsigned n, const char **why)
{
	return e1000e_tso_judge(s, n, SEQ0, 3000, 1000, why);
}

Test(e1000e_tso, correct_segments_turn_tso_on)
{
	struct e1000e_tso_seen s[E1000E_TSO_PROBE_MAX];
	const char *why = "x";
	cr_assert_eq(judge(s, good(s), &why), E1000E_TSO_SEGMENTS);
	cr_assert_null(why);
	/* The last segment may be shorter. */
	good(s);
	s[2].ip_len = 20 + 20 + 500;
	s[2].pay_len = 500;
	cr_assert_eq(e1000e_tso_judge(s, 3, SEQ0, 2500, 1000, &why), E1000E_TSO_SEGMENTS);
}

Test(e1000e_tso, qemu_ip_fragments_keep_tso_off)
{
	/* QEMU 7.2 without virtio-net headers: 1000 + 1000 + 1000 + 20 bytes of one 3020-byte
	 * TCP segment as IPv4 fragments (DF and MF both set, offsets 0, 125, 250, 375 units). */
	struct e1000e_tso_seen s[4];
	const char *why;
	memset(s, 0, sizeof(s));
	for (unsigned i = 0; i < 4; i++) {
		s[i].ip_len = (uint16_t)(20 + (i < 3 ? 1000 : 20));
		s[i].frag = (uint16_t)(0x4000 | (i < 3 ? 0x2000 : 0) | (125 * i));
		s[i].ip_csum_ok = true;
		s[i].has_tcp = i == 0;
	}
	cr_assert_eq(judge(s, 4, &why), E1000E_TSO_IP_FRAGMENTS);
	cr_assert_str_eq(why, "the device sends IPv4 fragments instead of TCP segments");
	/* Even a single fragment among otherwise good segments. */
	good(s);
	s[1].frag |= 0x2000;
	cr_assert_eq(judge(s, 3, &why), E1000E_TSO_IP_FRAGMENTS);
}

Test(e1000e_tso, each_defect_is_named)
{
	struct e1000e_tso_seen s[E1000E_TSO_PROBE_MAX];
	const char *why;
	good(s);
	cr_assert_eq(judge(s, 1, &why), E1000E_TSO_WRONG);
	cr_assert_str_eq(why, "fewer segments than the MSS makes");
	s[3] = s[2];
	cr_assert_eq(judge(s, 4, &why), E1000E_TSO_WRONG);
	cr_assert_str_eq(why, "more segments than the MSS makes");
	good(s);
	s[1].has_tcp = false;
	cr_assert_eq(judge(s, 3, &why), E1000E_TSO_WRONG);
	cr_assert_str_eq(why, "a segment without its TCP header");
	good(s);
	s[0].ip_len = 20 + 20 + 3000; /* one unsegmented frame would also fail the count */
	cr_assert_eq(judge(s, 3, &why), E1000E_TSO_WRONG);
	cr_assert_str_eq(why, "a segment of the wrong length");
	good(s);
	s[2].seq = SEQ0 + 1000; /* a repeat */
	cr_assert_eq(judge(s, 3, &why), E1000E_TSO_WRONG);
	cr_assert_str_eq(why, "a segment with the wrong sequence number");
	good(s);
	s[1].tcp_csum_ok = false;
	cr_assert_eq(judge(s, 3, &why), E1000E_TSO_WRONG);
	cr_assert_str_eq(why, "a segment with a bad checksum");
	good(s);
	s[0].ip_csum_ok = false;
	cr_assert_eq(judge(s, 3, &why), E1000E_TSO_WRONG);
	good(s);
	s[2].payload_ok = false;
	cr_assert_eq(judge(s, 3, &why), E1000E_TSO_WRONG);
	cr_assert_str_eq(why, "a segment whose payload differs");
	good(s);
	s[0].tcp_flags = 0x18;
	cr_assert_eq(judge(s, 3, &why), E1000E_TSO_WRONG);
	cr_assert_str_eq(why, "PSH on a segment other than the last");
	cr_assert_eq(judge(s, 0, &why), E1000E_TSO_NOTHING);
	cr_assert_str_eq(why, "nothing came back");
}

Test(e1000e_tso, the_stack_sees_tso_only_while_it_is_on)
{
	static struct e1000e dev;
	memset(&dev, 0, sizeof(dev));
	dev.ndev.features = NETDEV_F_TX_CSUM;
	e1000e_tso_set(&dev, true, "on (test)");
	cr_assert(dev.ndev.features & NETDEV_F_TSO);
	cr_assert(dev.ndev.features & NETDEV_F_TX_CSUM);
	cr_assert_eq(dev.ndev.tso_max, E1000E_TSO_MAX);
	cr_assert_str_eq(dev.tso_why, "on (test)");
	e1000e_tso_set(&dev, false, "off (test)");
	cr_assert_not(dev.ndev.features & NETDEV_F_TSO);
	cr_assert(dev.ndev.features & NETDEV_F_TX_CSUM);
	cr_assert_eq(dev.ndev.tso_max, 0);
	/* nic.tso = off never probes; on never probes either. */
	e1000e_tso_setup(&dev, E1000E_TSO_OFF, 0);
	cr_assert_not(dev.tso_on);
	cr_assert_str_eq(dev.tso_why, "off (nic.tso = off)");
	e1000e_tso_setup(&dev, E1000E_TSO_ON, 0);
	cr_assert(dev.tso_on);
	cr_assert(dev.ndev.features & NETDEV_F_TSO);
	/* auto with the link down: TSO off until the poller probes on link-up; off cancels that. */
	e1000e_tso_setup(&dev, E1000E_TSO_AUTO, 0);
	cr_assert_not(dev.tso_on);
	cr_assert(dev.tso_probe_pending);
	cr_assert_str_eq(dev.tso_why, "off (the loopback probe waits for the link)");
	e1000e_tso_setup(&dev, E1000E_TSO_OFF, 0);
	cr_assert_not(dev.tso_probe_pending);
}
