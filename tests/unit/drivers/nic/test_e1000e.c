// sources: drivers/nic/e1000e.c drivers/nic/e1000e_tso.c drivers/nic/netdev.c mm/pool.c mm/dma.c lib/log.c
/*
 * The e1000e core on a fake register file and fake descriptor memory: buffer sizes per
 * MTU (no frame may overrun BSIZE1), ring index arithmetic with QEMU 7.2's 16-byte RDH/RDT
 * units, transmit descriptors for a DRAM header + device-memory fragments (context
 * descriptor fields for CHECKSUM_PARTIAL, legacy without), receive write-back parsing
 * (split, not split, checksum flags, errors), and the device end to end: bring-up
 * registers, a split frame into a netbuf whose payload fragment is in device memory, its
 * token bringing the buffer back into the ring, drops, TX reclaim, ring full, MTU change,
 * DRAM fallback. Pools back to zero after each test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/nic/e1000e.h"
#include "tests/unit/unit_support.h"

#define REGS_BYTES 0x20000u

static uint32_t regs[REGS_BYTES / 4];
static unsigned allocs_live;
static bool data_fail;
static struct netbuf *got[8];
static unsigned ngot;
static unsigned tx_done_calls;

static uint32_t f_read32(void *ctx, uint32_t off)
{
	(void)ctx;
	return regs[off / 4];
}

static void f_write32(void *ctx, uint32_t off, uint32_t val)
{
	(void)ctx;
	if (off == E1000E_CTRL)
		val &= ~E1000E_CTRL_RST; /* reset completes at once */
	regs[off / 4] = val;
}

static void *f_dma_alloc(void *ctx, size_t bytes, dma_addr_t *addr)
{
	(void)ctx;
	void *p = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
	cr_assert_not_null(p);
	memset(p, 0, bytes);
	*addr = dma_addr_host(p);
	allocs_live++;
	return p;
}

static void f_dma_free(void *ctx, void *cpu, size_t bytes)
{
	(void)ctx;
	(void)bytes;
	free(cpu);
	allocs_live--;
}

/* "Device memory": host bytes tagged as a provider's, so netdev_frag_read still works. */
static int f_data_alloc(void *ctx, size_t bytes, dma_addr_t *addr, void **cpu, uint16_t *provider, uint64_t *offset,
			const char **why)
{
	if (data_fail) {
		*why = "test: provider refused";
		return -ENODEV;
	}
	dma_addr_t a;
	*cpu = f_dma_alloc(ctx, bytes, &a);
	*addr = dma_addr_device(a.bus);
	*provider = 3;
	*offset = 0x10000;
	return 0;
}

static void f_data_free(void *ctx, dma_addr_t addr, void *cpu, size_t bytes)
{
	(void)addr;
	f_dma_free(ctx, cpu, bytes);
}

static void capture(struct netdev *dev, struct netbuf *nb)
{
	(void)dev;
	cr_assert_lt(ngot, 8);
	got[ngot++] = nb;
}

static uint8_t tx_payload[4096];

static void on_tx_done(struct netbuf *nb, void *ctx)
{
	(void)nb;
	(void)ctx;
	tx_done_calls++;
}

static struct e1000e dev;

static void setup(void)
{
	unit_pools_begin();
	memset(regs, 0, sizeof(regs));
	memset(&dev, 0, sizeof(dev));
	allocs_live = 0;
	data_fail = false;
	ngot = 0;
	tx_done_calls = 0;
	regs[E1000E_RAL0 / 4] = 0x00545200;                  /* 00:52:54:... little-endian */
	regs[E1000E_RAH0 / 4] = 0x0100 | E1000E_RAH_AV;      /* ...:00:01 */
	regs[E1000E_STATUS / 4] = E1000E_STATUS_LU | E1000E_STATUS_FD;
	cr_assert_eq(netbuf_pool_init(256), 0);
	netdev_set_stack_rx(capture);
}

static void teardown(void)
{
	netdev_set_stack_rx(NULL);
	cr_assert_eq(netbuf_pool_destroy(), 0);
	unit_pools_end();
}

static void bring_up(enum e1000e_rx_mode mode, unsigned mtu)
{
	dev.bus = (struct e1000e_bus){ f_read32, f_write32, f_dma_alloc, f_dma_free, f_data_alloc, f_data_free, NULL, NULL };
	dev.mode_wanted = mode;
	cr_assert_eq(e1000e_init(&dev, mtu), 0);
}

static void bring_down(void)
{
	cr_assert_eq(e1000e_fini(&dev), 0);
	cr_assert_eq(allocs_live, 0, "every DMA allocation freed");
}

TestSuite(e1000e_sizes, .init = setup, .fini = teardown);
TestSuite(e1000e_tx, .init = setup, .fini = teardown);
TestSuite(e1000e_rx, .init = setup, .fini = teardown);
TestSuite(e1000e_dev, .init = setup, .fini = teardown);

/* --- MTU -> buffer sizes ------------------------------------------------------------- */

Test(e1000e_sizes, standard_mtu_split)
{
	struct e1000e_rx_sizes s;
	cr_assert_eq(e1000e_rx_sizes(1500, E1000E_RX_SPLIT, &s), 0);
	cr_assert_eq(s.frame_max, 1522);
	cr_assert_eq(s.hdr_size, 256);
	cr_assert_eq(s.data_size, 2048);
	cr_assert_eq(s.psrctl, 2u | 2u << 8, "BSIZE0 2 x 128 B, BSIZE1 2 KiB");
	cr_assert(s.rctl & E1000E_RCTL_DTYP_PS);
	cr_assert_not(s.rctl & E1000E_RCTL_LPE);
	cr_assert_eq(s.desc_size, 32);
}

Test(e1000e_sizes, jumbo_split_sets_lpe_and_covers_the_frame)
{
	struct e1000e_rx_sizes s;
	cr_assert_eq(e1000e_rx_sizes(9000, E1000E_RX_SPLIT, &s), 0);
	cr_assert_eq(s.frame_max, 9022);
	cr_assert_eq(s.data_size, 9216);
	cr_assert_eq(s.psrctl, 2u | 9u << 8);
	cr_assert(s.rctl & E1000E_RCTL_LPE);
	cr_assert_eq(e1000e_rx_sizes(1501, E1000E_RX_SPLIT, &s), 0);
	cr_assert(s.rctl & E1000E_RCTL_LPE, "1523-byte frames need LPE");
}

Test(e1000e_sizes, no_mtu_can_overrun_buffer_1)
{
	for (unsigned mtu = NETDEV_MTU_MIN; mtu <= NETDEV_MTU_MAX; mtu++) {
		struct e1000e_rx_sizes s;
		cr_assert_eq(e1000e_rx_sizes(mtu, E1000E_RX_SPLIT, &s), 0);
		/* shortest split: after Ethernet + IPv4 (34 B); the rest must fit buffer 1 alone */
		cr_assert_geq(s.data_size, s.frame_max - 34, "mtu %u", mtu);
		cr_assert_eq(s.data_size % 1024, 0);
		cr_assert_eq((s.psrctl >> 8) & 0x3f, s.data_size / 1024);
		cr_assert_eq(e1000e_rx_sizes(mtu, E1000E_RX_PLAIN, &s), 0);
		cr_assert_geq(s.hdr_size, s.frame_max, "plain mtu %u", mtu);
	}
}

Test(e1000e_sizes, plain_buffer_size_codes)
{
	struct e1000e_rx_sizes s;
	cr_assert_eq(e1000e_rx_sizes(1500, E1000E_RX_PLAIN, &s), 0);
	cr_assert_eq(s.hdr_size, 2048);
	cr_assert_eq(s.rctl & (E1000E_RCTL_BSEX | E1000E_RCTL_BSIZE_MASK), 0);
	cr_assert_eq(s.desc_size, 16);
	cr_assert_eq(e1000e_rx_sizes(4000, E1000E_RX_PLAIN, &s), 0);
	cr_assert_eq(s.hdr_size, 4096);
	cr_assert_eq(s.rctl & (E1000E_RCTL_BSEX | E1000E_RCTL_BSIZE_MASK), E1000E_RCTL_BSEX | 3u << 16);
	cr_assert_eq(e1000e_rx_sizes(8000, E1000E_RX_PLAIN, &s), 0);
	cr_assert_eq(s.hdr_size, 8192);
	cr_assert_eq(s.rctl & (E1000E_RCTL_BSEX | E1000E_RCTL_BSIZE_MASK), E1000E_RCTL_BSEX | 2u << 16);
	cr_assert_eq(e1000e_rx_sizes(9000, E1000E_RX_PLAIN, &s), 0);
	cr_assert_eq(s.hdr_size, 16384);
	cr_assert_eq(s.rctl & (E1000E_RCTL_BSEX | E1000E_RCTL_BSIZE_MASK), E1000E_RCTL_BSEX | 1u << 16);
}

Test(e1000e_sizes, bad_mtu)
{
	struct e1000e_rx_sizes s;
	cr_assert_eq(e1000e_rx_sizes(1499, E1000E_RX_SPLIT, &s), -EINVAL);
	cr_assert_eq(e1000e_rx_sizes(9001, E1000E_RX_PLAIN, &s), -EINVAL);
}

Test(e1000e_sizes, ring_arithmetic_with_16_byte_units)
{
	cr_assert_eq(e1000e_ring_reg(5, 2), 10, "QEMU 7.2: 2 units per 32-byte descriptor");
	cr_assert_eq(e1000e_ring_reg(5, 1), 5);
	cr_assert_eq(e1000e_ring_idx(10, 2, 256), 5);
	cr_assert_eq(e1000e_ring_idx(510, 2, 256), 255);
	cr_assert_eq(e1000e_ring_idx(512, 2, 256), 0, "wraps at RDLEN / 16");
	cr_assert_eq(e1000e_ring_space(0, 0, 256), 255, "one slot stays empty");
	cr_assert_eq(e1000e_ring_space(255, 0, 256), 0);
	cr_assert_eq(e1000e_ring_space(10, 5, 256), 250);
	cr_assert_eq(e1000e_ring_space(3, 250, 256), 246, "across the wrap");
}

/* --- transmit descriptors ------------------------------------------------------------ */

static struct netbuf *tx_frame(unsigned hdr, unsigned nfr, const uint32_t *flen, bool device)
{
	static uint8_t payload[4][4096];
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	cr_assert_not_null(nb);
	memset(netbuf_put(nb, hdr), 0xab, hdr);
	for (unsigned i = 0; i < nfr; i++) {
		struct netdev_frag f = { .addr = device && i == 0 ? dma_addr_device((uintptr_t)payload[i])
								  : dma_addr_host(payload[i]),
					 .len = flen[i], .provider = device && i == 0 ? 3 : 0 };
		cr_assert_eq(netbuf_add_frag(nb, &f), 0);
	}
	return nb;
}

Test(e1000e_tx, checksum_partial_uses_a_context_descriptor_and_extended_data)
{
	uint32_t fl[2] = { 1000, 446 };
	struct netbuf *nb = tx_frame(54, 2, fl, true);
	union e1000e_tx_desc d[E1000E_TX_MAX_DESCS];
	bool ctx;

	nb->flags |= NETBUF_TX_CSUM_PARTIAL;
	nb->csum_start = 34;
	nb->csum_offset = 16; /* TCP */
	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), 4);
	cr_assert(ctx);
	cr_assert_eq(d[0].ctx.tucss, 34);
	cr_assert_eq(d[0].ctx.tucso, 50);
	cr_assert_eq(le16_get(d[0].ctx.tucse), 0, "to the end of the packet");
	cr_assert_eq(d[0].ctx.ipcss | d[0].ctx.ipcso | le16_get(d[0].ctx.ipcse), 0, "IPv4 checksum is the stack's");
	cr_assert_eq(le32_get(d[0].ctx.cmd_and_length), E1000E_TUCMD_DEXT | E1000E_TUCMD_TCP, "DTYP 0, no TSE, PAYLEN 0");
	uint32_t len[3] = { 54, 1000, 446 };
	for (unsigned i = 1; i < 4; i++) {
		uint32_t lo = le32_get(d[i].data.lower);
		cr_assert_eq(lo & E1000E_TXD_PAYLEN_MASK, len[i - 1]);
		cr_assert_eq(lo & (0xfu << 20), E1000E_TXD_DTYP_DATA);
		cr_assert(lo & E1000E_DCMD_DEXT);
		cr_assert(lo & E1000E_DCMD_IFCS);
		cr_assert_eq(!!(lo & E1000E_DCMD_EOP), i == 3, "EOP on the last only");
		cr_assert_eq(!!(lo & E1000E_DCMD_RS), i == 3, "RS on the last only");
		cr_assert_eq(le32_get(d[i].data.upper), E1000E_POPTS_TXSM);
	}
	cr_assert_eq(le64_get(d[1].data.buffer_addr), (uint64_t)(uintptr_t)nb->data, "header from DRAM first");
	cr_assert_eq(le64_get(d[2].data.buffer_addr), nb->frags[0].addr.bus, "then the device-memory payload");
	cr_assert_eq(le64_get(d[3].data.buffer_addr), nb->frags[1].addr.bus);
	netbuf_free(nb);
}

Test(e1000e_tx, udp_checksum_clears_tucmd_tcp)
{
	uint32_t fl[1] = { 100 };
	struct netbuf *nb = tx_frame(42, 1, fl, false);
	union e1000e_tx_desc d[E1000E_TX_MAX_DESCS];
	bool ctx;
	nb->flags |= NETBUF_TX_CSUM_PARTIAL;
	nb->csum_start = 34;
	nb->csum_offset = 6;
	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), 3);
	cr_assert_eq(d[0].ctx.tucso, 40);
	cr_assert_not(le32_get(d[0].ctx.cmd_and_length) & E1000E_TUCMD_TCP);
	netbuf_free(nb);
}

Test(e1000e_tx, no_offload_uses_legacy_descriptors)
{
	uint32_t fl[1] = { 1400 };
	struct netbuf *nb = tx_frame(54, 1, fl, true);
	union e1000e_tx_desc d[E1000E_TX_MAX_DESCS];
	bool ctx;
	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), 2);
	cr_assert_not(ctx);
	cr_assert_eq(le16_get(d[0].legacy.length), 54);
	cr_assert_eq(d[0].legacy.cmd, E1000E_TXD_CMD_IFCS);
	cr_assert_eq(le16_get(d[1].legacy.length), 1400);
	cr_assert_eq(d[1].legacy.cmd, E1000E_TXD_CMD_IFCS | E1000E_TXD_CMD_EOP | E1000E_TXD_CMD_RS);
	cr_assert_eq(le64_get(d[1].legacy.buffer_addr), nb->frags[0].addr.bus);
	cr_assert_not(d[1].legacy.cmd & E1000E_TXD_CMD_DEXT);
	netbuf_free(nb);
}

Test(e1000e_tx, refusals)
{
	union e1000e_tx_desc d[E1000E_TX_MAX_DESCS];
	bool ctx;
	struct netbuf *empty = netbuf_alloc(NETBUF_HEADROOM);
	cr_assert_eq(e1000e_tx_build(empty, d, E1000E_TX_MAX_DESCS, &ctx), -EINVAL, "nothing to send");
	netbuf_free(empty);

	uint32_t fl[2] = { 100, 100 };
	struct netbuf *nb = tx_frame(42, 2, fl, false);
	cr_assert_eq(e1000e_tx_build(nb, d, 2, &ctx), -ENOSPC);
	nb->flags |= NETBUF_TX_CSUM_PARTIAL;
	nb->csum_start = 34;
	nb->csum_offset = 240; /* field past the end of the frame */
	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), -EINVAL);
	nb->csum_start = 300; /* TUCSS is 8 bits */
	nb->csum_offset = 6;
	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), -EINVAL);
	nb->flags &= ~NETBUF_TX_CSUM_PARTIAL;
	nb->frags[1].len = E1000E_TX_BUF_MAX + 1;
	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), -EINVAL, "piece too long");
	nb->frags[1].len = 100;
	netbuf_free(nb);
}

/* A TSO frame: Ethernet + IPv4 + TCP (20 B) in the host part, payload in fragments. */
static struct netbuf *tso_frame(unsigned nfr, const uint32_t *flen, bool device, uint16_t mss)
{
	struct netbuf *nb = tx_frame(54, nfr, flen, device);
	nb->data[14] = 0x45;
	nb->data[34 + 12] = 5 << 4;
	nb->flags |= NETBUF_TX_CSUM_PARTIAL | NETBUF_TX_TSO;
	nb->csum_start = 34;
	nb->csum_offset = 16;
	nb->gso_size = mss;
	return nb;
}

Test(e1000e_tx, tso_context_carries_mss_hdrlen_paylen_and_the_ip_checksum_offsets)
{
	uint32_t fl[2] = { 4096, 1000 };
	struct netbuf *nb = tso_frame(2, fl, true, 1460);
	union e1000e_tx_desc d[E1000E_TX_MAX_DESCS];
	bool ctx;

	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), 4);
	cr_assert(ctx);
	const struct e1000e_tx_desc_ctx *c = &d[0].ctx;
	cr_assert_eq(c->ipcss, 14, "IPv4 header after Ethernet");
	cr_assert_eq(c->ipcso, 24, "its checksum field");
	cr_assert_eq(le16_get(c->ipcse), 33, "IPCSE: the IPv4 header's last byte");
	cr_assert_eq(c->tucss, 34);
	cr_assert_eq(c->tucso, 50);
	cr_assert_eq(le16_get(c->tucse), 0);
	cr_assert_eq(c->hdr_len, 54, "HDRLEN: Ethernet + IPv4 + TCP");
	cr_assert_eq(le16_get(c->mss), 1460);
	cr_assert_eq(le32_get(c->cmd_and_length) & E1000E_TXD_PAYLEN_MASK, 5096, "PAYLEN: the TCP payload only");
	cr_assert_eq(le32_get(c->cmd_and_length) & ~E1000E_TXD_PAYLEN_MASK,
		     E1000E_TXD_DTYP_CTX | E1000E_TUCMD_DEXT | E1000E_TUCMD_TCP | E1000E_TUCMD_IP | E1000E_TUCMD_TSE);
	uint32_t len[3] = { 54, 4096, 1000 };
	for (unsigned i = 1; i < 4; i++) {
		uint32_t lo = le32_get(d[i].data.lower);
		cr_assert_eq(lo & E1000E_TXD_PAYLEN_MASK, len[i - 1]);
		cr_assert(lo & E1000E_DCMD_TSE, "DCMD.TSE on every data descriptor of the frame");
		cr_assert_eq(!!(lo & E1000E_DCMD_EOP), i == 3);
		cr_assert_eq(le32_get(d[i].data.upper), E1000E_POPTS_TXSM | E1000E_POPTS_IXSM, "IPv4 and TCP checksums per segment");
	}
	cr_assert_eq(netbuf_tso_segs(nb), 4, "5096 bytes in 1460-byte segments");
	netbuf_free(nb);
}

Test(e1000e_tx, malformed_tso_frames_are_refused)
{
	uint32_t fl[1] = { 3000 };
	union e1000e_tx_desc d[E1000E_TX_MAX_DESCS];
	bool ctx;
	struct netbuf *nb = tso_frame(1, fl, false, 1460);

	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), 3, "well formed");
	nb->gso_size = 0;
	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), -EINVAL, "MSS 0");
	nb->gso_size = 1460;
	nb->flags &= ~NETBUF_TX_CSUM_PARTIAL;
	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), -EINVAL, "TSO without checksum offload");
	nb->flags |= NETBUF_TX_CSUM_PARTIAL;
	nb->csum_offset = 6;
	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), -EINVAL, "UDP");
	nb->csum_offset = 16;
	nb->data[46] = 15 << 4; /* a 60-byte TCP header: not all in the 54-byte host part */
	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), -EINVAL, "headers beyond the host part");
	nb->data[46] = 5 << 4;
	nb->data[14] = 0x60;
	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), -EINVAL, "not IPv4");
	nb->data[14] = 0x45;
	nb->csum_start = 20;
	cr_assert_eq(e1000e_tx_build(nb, d, E1000E_TX_MAX_DESCS, &ctx), -EINVAL, "no room for an IPv4 header");
	netbuf_free(nb);
}

/* --- receive write-back parsing ---------------------------------------------------------- */

Test(e1000e_rx, split_tcp_with_good_checksums)
{
	struct e1000e_rx_desc_ps_wb wb = { 0 };
	struct e1000e_rx_info in;
	wb.status_error = le32_make(E1000E_RXD_STAT_DD | E1000E_RXD_STAT_EOP | E1000E_RXD_STAT_IPCS | E1000E_RXD_STAT_TCPCS);
	wb.length0 = le16_make(54);
	wb.header_status = le16_make(54 | E1000E_RXDPS_HDRSP);
	wb.length[0] = le16_make(1446);
	e1000e_rx_parse_ps(&wb, &in);
	cr_assert(in.done && in.eop && in.split && !in.frame_error);
	cr_assert_eq(in.hdr_len, 54);
	cr_assert_eq(in.len0, 54);
	cr_assert_eq(in.len1, 1446);
	cr_assert_eq(in.nb_flags, NETBUF_RX_SPLIT | NETBUF_RX_L3_CSUM_OK | NETBUF_RX_L4_CSUM_OK);
}

Test(e1000e_rx, not_split_and_checksum_errors)
{
	struct e1000e_rx_desc_ps_wb wb = { 0 };
	struct e1000e_rx_info in;
	wb.status_error = le32_make(E1000E_RXD_STAT_DD | E1000E_RXD_STAT_EOP); /* ARP: no checksum status */
	wb.length0 = le16_make(60);
	wb.header_status = le16_make(60); /* HDRLEN without HDRSP: no split */
	e1000e_rx_parse_ps(&wb, &in);
	cr_assert_not(in.split);
	cr_assert_eq(in.hdr_len, 0);
	cr_assert_eq(in.nb_flags, 0);

	wb.status_error = le32_make(E1000E_RXD_STAT_DD | E1000E_RXD_STAT_EOP | E1000E_RXD_STAT_IPCS | E1000E_RXD_STAT_UDPCS |
			  E1000E_RXD_ERR_TCPE | E1000E_RXD_ERR_IPE);
	e1000e_rx_parse_ps(&wb, &in);
	cr_assert_eq(in.nb_flags, NETBUF_RX_L3_CSUM_BAD | NETBUF_RX_L4_CSUM_BAD);
	cr_assert_not(in.frame_error, "checksum errors are flags, not drops");

	wb.status_error = le32_make(E1000E_RXD_STAT_DD | E1000E_RXD_STAT_EOP | E1000E_RXD_ERR_RXE);
	e1000e_rx_parse_ps(&wb, &in);
	cr_assert(in.frame_error);
	wb.status_error = le32_make(0);
	e1000e_rx_parse_ps(&wb, &in);
	cr_assert_not(in.done);
}

Test(e1000e_rx, legacy_writeback)
{
	struct e1000e_rx_desc_legacy d = { 0 };
	struct e1000e_rx_info in;
	d.status = E1000E_RXD_STAT_DD | E1000E_RXD_STAT_EOP | E1000E_RXD_STAT_TCPCS;
	d.errors = E1000E_RXD_ERR_TCPE >> 24;
	d.length = le16_make(1514);
	e1000e_rx_parse_legacy(&d, &in);
	cr_assert(in.done && in.eop);
	cr_assert_eq(in.len0, 1514);
	cr_assert_eq(in.nb_flags, NETBUF_RX_L4_CSUM_BAD);
	d.status |= E1000E_RXD_STAT_IXSM;
	e1000e_rx_parse_legacy(&d, &in);
	cr_assert_eq(in.nb_flags, 0, "IXSM: no checksum indication");
	d.status = E1000E_RXD_STAT_DD | E1000E_RXD_STAT_EOP;
	d.errors = E1000E_RXD_ERR_CE >> 24;
	e1000e_rx_parse_legacy(&d, &in);
	cr_assert(in.frame_error);
}

/* --- the device on the fake register file --------------------------------------------- */

/* The NIC "writes" a frame into descriptor i: header into buffer 0, payload into buffer 1. */
static void nic_receive_ps(unsigned i, unsigned hdr, unsigned pay, bool split, uint32_t extra)
{
	union e1000e_rx_desc_ps *d = (union e1000e_rx_desc_ps *)dev.rx_ring + i;
	uint8_t *b0 = (uint8_t *)(uintptr_t)le64_get(d->read.buffer_addr[0]);
	uint8_t *b1 = (uint8_t *)(uintptr_t)le64_get(d->read.buffer_addr[1]);
	for (unsigned k = 0; k < hdr; k++)
		b0[k] = (uint8_t)(0x40 + k);
	for (unsigned k = 0; k < pay; k++)
		b1[k] = (uint8_t)(k * 7);
	memset(d, 0, sizeof(*d));
	d->wb.status_error =
		le32_make(E1000E_RXD_STAT_DD | E1000E_RXD_STAT_EOP | E1000E_RXD_STAT_IPCS | E1000E_RXD_STAT_TCPCS | extra);
	d->wb.length0 = le16_make((uint16_t)hdr);
	d->wb.header_status = le16_make((uint16_t)(split ? (hdr | E1000E_RXDPS_HDRSP) : hdr));
	d->wb.length[0] = le16_make((uint16_t)pay);
	regs[E1000E_RDH / 4] = e1000e_ring_reg(i + 1, 2);
}

Test(e1000e_dev, bring_up_programs_packet_split)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	cr_assert_eq(memcmp(dev.ndev.mac, (uint8_t[]){ 0x00, 0x52, 0x54, 0x00, 0x00, 0x01 }, 6), 0);
	cr_assert(dev.ndev.link_up);
	cr_assert_eq(regs[E1000E_IMC / 4], 0xffffffffu, "interrupts masked: polling only");
	uint32_t rctl = regs[E1000E_RCTL / 4];
	cr_assert(rctl & E1000E_RCTL_EN);
	cr_assert_eq(rctl & E1000E_RCTL_DTYP_MASK, E1000E_RCTL_DTYP_PS);
	cr_assert(rctl & E1000E_RCTL_SECRC);
	cr_assert(regs[E1000E_RFCTL / 4] & E1000E_RFCTL_EXTEN);
	cr_assert_eq(regs[E1000E_PSRCTL / 4], 2u | 2u << 8);
	cr_assert_eq(regs[E1000E_RDLEN / 4], 256 * 32);
	cr_assert_eq(regs[E1000E_RDT / 4], 255 * 2, "255 descriptors posted, in 16-byte units");
	cr_assert_eq(regs[E1000E_RXCSUM / 4], E1000E_RXCSUM_IPOFLD | E1000E_RXCSUM_TUOFLD);
	cr_assert(regs[E1000E_TCTL / 4] & E1000E_TCTL_EN);
	cr_assert(regs[E1000E_CTRL / 4] & E1000E_CTRL_SLU);
	cr_assert_eq(dev.ndev.features & NETDEV_F_RX_SPLIT, NETDEV_F_RX_SPLIT);
	cr_assert_null(dev.mode_why, "data buffers in device memory");
	cr_assert_eq(dev.data.dma.cls, MEM_CLASS_DEVICE);
	union e1000e_rx_desc_ps *d = dev.rx_ring;
	cr_assert_eq(le64_get(d[0].read.buffer_addr[2]), 0);
	cr_assert_eq(le64_get(d[0].read.buffer_addr[1]) & 1, 0, "buffer 1's bit 0 overlays DD");
	bring_down();
}

Test(e1000e_dev, split_frame_payload_in_device_memory_and_token_return)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	unsigned free_before = dev.data.nfree;
	nic_receive_ps(0, 54, 1446, true, 0);
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 1);
	cr_assert_eq(ngot, 1);
	struct netbuf *nb = got[0];
	cr_assert_eq(nb->flags, NETBUF_RX_SPLIT | NETBUF_RX_L3_CSUM_OK | NETBUF_RX_L4_CSUM_OK);
	cr_assert_eq(nb->hdr_len, 54);
	cr_assert_eq(netbuf_host_len(nb), 54);
	cr_assert_eq(nb->data[53], 0x40 + 53);
	cr_assert_eq(nb->nfrags, 1);
	cr_assert_eq(nb->frags[0].addr.cls, MEM_CLASS_DEVICE);
	cr_assert_eq(nb->frags[0].provider, 3);
	cr_assert_eq(nb->frags[0].len, 1446);
	cr_assert_eq(nb->frags[0].offset, 0x10000 + nb->frags[0].token * 2048);
	uint8_t b[1446];
	cr_assert_eq(netdev_frag_read(&nb->frags[0], 0, b, sizeof(b)), 0);
	cr_assert_eq(b[1445], (uint8_t)(1445 * 7));
	cr_assert_eq(dev.ndev.stats.rx_bytes_host, 54);
	cr_assert_eq(dev.ndev.stats.rx_bytes_device, 1446);
	cr_assert_eq(dev.c.rx_hdr_bytes, 54, "the header bytes, apart from the netdev's count");
	netdev_stats_sync(&dev.ndev);
	cr_assert_eq(dev.ndev.stats.rx_frames, 1, "counted once, by the driver");
	cr_assert_eq(dev.ndev.stats.rx_split, 1);
	cr_assert_eq(regs[E1000E_RDT / 4], 0, "descriptor 255 refilled, tail wraps to 0");
	unsigned h, dd;
	e1000e_rx_outstanding(&dev, &h, &dd);
	cr_assert_eq(h, 1);
	cr_assert_eq(dd, 1);
	cr_assert_eq(e1000e_fini(&dev), -EBUSY, "the stack still holds buffers");
	/* the stack is done with the headers, payload held on (devmem) */
	struct netdev_frag f;
	netbuf_take_frag(nb, 0, &f);
	netbuf_free(nb);
	e1000e_rx_outstanding(&dev, &h, &dd);
	cr_assert_eq(h, 0);
	cr_assert_eq(dd, 1);
	netdev_frag_release(&f); /* SO_DEVMEM_DONTNEED */
	e1000e_rx_outstanding(&dev, &h, &dd);
	cr_assert_eq(dd, 0);
	cr_assert_eq(dev.data.nfree, free_before, "buffer back in the free list");
	/* a stale token is counted, not trusted */
	dev.data_owner.release(&dev.data_owner, f.token);
	cr_assert_eq(dev.c.rx_bad_release, 1);
	/* the next frame at descriptor 1 moves RDT by 2 units */
	nic_receive_ps(1, 42, 100, true, 0);
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 1);
	cr_assert_eq(regs[E1000E_RDT / 4], 2);
	netbuf_free(got[1]);
	bring_down();
}

/* A pure ACK the NIC split after its TCP header has only Ethernet padding in its data buffer:
 * the driver keeps that buffer (the stack would only give it back) and hands the frame up
 * without a fragment. A short frame whose datagram runs past the header buffer keeps its
 * fragment. */
Test(e1000e_dev, a_short_frames_padding_keeps_its_data_buffer)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	unsigned free_before = dev.data.nfree;
	union e1000e_rx_desc_ps *d = (union e1000e_rx_desc_ps *)dev.rx_ring;
	uint8_t *h0 = (uint8_t *)(uintptr_t)le64_get(d[0].read.buffer_addr[0]);
	uint8_t *h1 = (uint8_t *)(uintptr_t)le64_get(d[1].read.buffer_addr[0]);
	nic_receive_ps(0, 54, 6, true, 0); /* an ACK: 40 bytes of datagram, 6 of padding */
	nic_receive_ps(1, 34, 26, true, 0); /* split after IPv4: 26 bytes of a 46-byte datagram */
	h0[12] = 0x08, h0[13] = 0x00, h0[16] = 0, h0[17] = 40;
	h1[12] = 0x08, h1[13] = 0x00, h1[16] = 0, h1[17] = 46;
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 2);
	cr_assert_eq(ngot, 2);
	cr_assert_eq(got[0]->nfrags, 0, "the padding's buffer not lent");
	cr_assert_eq(netbuf_host_len(got[0]), 54);
	cr_assert_eq(got[1]->nfrags, 1, "a datagram's bytes are lent");
	cr_assert_eq(got[1]->frags[0].len, 26);
	unsigned h, dd;
	e1000e_rx_outstanding(&dev, &h, &dd);
	cr_assert_eq(dd, 1);
	cr_assert_eq(dev.ndev.rx_bufs_out, 1);
	netdev_stats_sync(&dev.ndev);
	cr_assert_eq(dev.ndev.stats.rx_frames, 2);
	cr_assert_eq(dev.ndev.stats.rx_bytes_host, 54 + 34);
	cr_assert_eq(dev.ndev.stats.rx_bytes_device, 26, "the padding uncounted");
	netbuf_free(got[0]);
	netbuf_free(got[1]);
	e1000e_rx_outstanding(&dev, &h, &dd);
	cr_assert_eq(h, 0);
	cr_assert_eq(dd, 0);
	cr_assert_eq(dev.data.nfree, free_before, "every data buffer back (refilled from the free list)");
	bring_down();
}

Test(e1000e_dev, unsplit_error_and_chained_frames)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	unsigned free_before = dev.data.nfree;
	nic_receive_ps(0, 60, 0, false, 0); /* ARP: all in the header buffer */
	nic_receive_ps(1, 54, 100, true, E1000E_RXD_ERR_RXE);
	nic_receive_ps(2, 54, 100, true, 0);
	struct e1000e_rx_desc_ps_wb *wb2 = &((union e1000e_rx_desc_ps *)dev.rx_ring)[2].wb;
	wb2->status_error = le32_make(le32_get(wb2->status_error) & ~E1000E_RXD_STAT_EOP); /* spans descriptors */
	nic_receive_ps(3, 0, 100, false, 0); /* its tail: dropped too */
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 4);
	cr_assert_eq(ngot, 1);
	cr_assert_eq(got[0]->nfrags, 0);
	cr_assert_eq(got[0]->hdr_len, 0);
	cr_assert_not(got[0]->flags & NETBUF_RX_SPLIT);
	netdev_stats_sync(&dev.ndev);
	cr_assert_eq(dev.ndev.stats.rx_frames - dev.ndev.stats.rx_split, 1, "one frame not split");
	cr_assert_eq(dev.c.rx_errors, 1);
	cr_assert_eq(dev.c.rx_chained, 1);
	cr_assert_eq(dev.ndev.stats.rx_dropped, 3);
	cr_assert_eq(dev.data.nfree, free_before, "every data buffer back (refilled from the free list)");
	netbuf_free(got[0]);
	bring_down();
}

Test(e1000e_dev, rdh_in_other_units_is_detected)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	nic_receive_ps(0, 54, 10, true, 0);
	regs[E1000E_RDH / 4] = 1; /* a device that counts descriptors, not 16-byte units */
	e1000e_poll(&dev, 16, 0);
	cr_assert_eq(dev.c.rx_units_mismatch, 1);
	netbuf_free(got[0]);
	bring_down();
}

Test(e1000e_dev, transmit_reclaim_and_ring_full)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	uint32_t fl[1] = { 1000 };
	struct netbuf *nb = tx_frame(54, 1, fl, true);
	nb->flags |= NETBUF_TX_CSUM_PARTIAL;
	nb->csum_start = 34;
	nb->csum_offset = 16;
	nb->tx_done = on_tx_done;
	cr_assert_eq(netdev_tx(&dev.ndev, nb), 0);
	cr_assert_eq(regs[E1000E_TDT / 4], 3, "context + header + payload");
	cr_assert_eq(dev.ndev.stats.tx_bytes_device, 1000);
	cr_assert_eq(dev.c.tx_bytes[MEM_CLASS_HOST], 54);
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 0, "not done yet");
	dev.tx_ring[2].data.upper = le32_make(le32_get(dev.tx_ring[2].data.upper) | E1000E_TXD_STAT_DD);
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 1);
	cr_assert_eq(tx_done_calls, 1);
	/* fill the ring: 255 usable descriptors, 2 per legacy frame */
	unsigned sent = 0;
	int rc;
	struct netbuf *last = NULL;
	for (;;) {
		last = tx_frame(42, 1, fl, false);
		if ((rc = netdev_tx(&dev.ndev, last)))
			break;
		sent++;
	}
	cr_assert_eq(rc, -ENOBUFS);
	cr_assert_eq(sent, 127);
	cr_assert_eq(dev.c.tx_ring_full, 1);
	netbuf_free(last); /* the caller keeps it on error */
	for (unsigned i = 0; i < dev.tx_n; i++)
		dev.tx_ring[i].legacy.status |= E1000E_TXD_STAT_DD;
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 127);
	bring_down();
}

/* Issue 18: a refusal stops the device's senders (netdev_tx_stop) and the reclaim wakes
 * them only once the largest frame or train fits again (E1000E_TX_MAX_DESCS free, or a full
 * train's E1000E_TX_POST_MAX: a TSO frame or a train must not be woken into room only small
 * frames fit); and xmit takes back descriptors the device
 * is done with before it refuses (QEMU sends on the TDT write: the ring is full of finished
 * frames between two polls), their netbufs handed back at the next poll, not inside xmit. */
Test(e1000e_dev, a_full_ring_stops_the_senders_until_any_frame_fits_and_xmit_reclaims_first)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	uint32_t fl[1] = { 1000 };
	unsigned sent = 0;
	int rc;
	struct netbuf *nb;
	for (;;) {
		nb = tx_frame(42, 1, fl, false);
		nb->tx_done = on_tx_done;
		if ((rc = netdev_tx(&dev.ndev, nb)))
			break;
		sent++;
	}
	cr_assert_eq(rc, -ENOBUFS);
	cr_assert_eq(sent, 127, "2 descriptors a frame, 255 usable");
	netbuf_free(nb);
	cr_assert(dev.ndev.tx_stopped);
	cr_assert_eq(dev.ndev.stats.tx_stops, 1);
	/* The device finished 3 frames: 6 descriptors free, fewer than the largest frame's. */
	for (unsigned i = 0; i < 6; i++)
		dev.tx_ring[i].legacy.status |= E1000E_TXD_STAT_DD;
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 3);
	cr_assert(dev.ndev.tx_stopped, "6 free: a 10-descriptor frame would be refused again");
	cr_assert_eq(dev.ndev.stats.tx_wakes, 0);
	for (unsigned i = 6; i < 14; i++)
		dev.tx_ring[i].legacy.status |= E1000E_TXD_STAT_DD;
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 4);
	cr_assert(dev.ndev.tx_stopped, "15 free: a 17-descriptor train would be refused again");
	for (unsigned i = 14; i < 16; i++)
		dev.tx_ring[i].legacy.status |= E1000E_TXD_STAT_DD;
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 1);
	cr_assert_not(dev.ndev.tx_stopped, "17 free: any frame or train fits");
	cr_assert_eq(dev.ndev.stats.tx_wakes, 1);
	cr_assert_eq(tx_done_calls, 8);
	/* Fill it again; then the device finishes everything but nobody polls: xmit finds the
	 * room itself instead of refusing. */
	for (unsigned i = 0; i < 8; i++) {
		nb = tx_frame(42, 1, fl, false);
		nb->tx_done = on_tx_done;
		cr_assert_eq(netdev_tx(&dev.ndev, nb), 0);
	}
	for (unsigned i = 0; i < dev.tx_n; i++)
		dev.tx_ring[i].legacy.status |= E1000E_TXD_STAT_DD;
	nb = tx_frame(42, 1, fl, false);
	nb->tx_done = on_tx_done;
	cr_assert_eq(netdev_tx(&dev.ndev, nb), 0, "room taken back inside xmit");
	cr_assert_eq(dev.c.tx_ring_full, 1, "no second refusal");
	cr_assert_eq(dev.c.tx_reclaimed_early, 127);
	cr_assert_eq(tx_done_calls, 8, "their netbufs are handed back at the poll, not inside xmit");
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 127);
	cr_assert_eq(tx_done_calls, 135);
	bring_down();
}

/* The netbuf pool is not the NIC's to empty: between two polls a sender (a TCP pass whose
 * ACKs all came in one receive batch) keeps sending into a ring the device finishes at
 * once; xmit takes the finished descriptors back and parks their netbufs for the poll.
 * Parked netbufs are bounded (E1000E_TX_PARKED_MAX): past them xmit refuses and stops the
 * senders instead of parking more, so the pool keeps netbufs for everyone else (an ACK,
 * ARP, RoCE); the next poll hands the parked ones back first and wakes the senders. */
Test(e1000e_dev, xmit_parks_at_most_E1000E_TX_PARKED_MAX_netbufs_between_polls)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	uint32_t fl[1] = { 1000 };
	unsigned sent = 0;
	int rc = 0;
	for (;;) {
		struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
		if (!nb)
			break; /* the pool ran dry */
		memset(netbuf_put(nb, 42), 0xab, 42);
		struct netdev_frag f = { .addr = dma_addr_host(tx_payload), .len = fl[0] };
		cr_assert_eq(netbuf_add_frag(nb, &f), 0);
		nb->tx_done = on_tx_done;
		if ((rc = netdev_tx(&dev.ndev, nb))) {
			netbuf_free(nb);
			break;
		}
		sent++;
		for (unsigned i = 0; i < dev.tx_n; i++) /* the device sends on the TDT write */
			dev.tx_ring[i].legacy.status |= E1000E_TXD_STAT_DD;
	}
	cr_assert_eq(rc, -ENOBUFS, "xmit refused before the pool ran dry (%u sent)", sent);
	cr_assert(dev.ndev.tx_stopped, "the senders wait for the poll");
	cr_assert_eq(sent, 127 + E1000E_TX_PARKED_MAX, "a ring and E1000E_TX_PARKED_MAX parked");
	cr_assert_eq(tx_done_calls, 0, "nothing handed back inside xmit");
	struct netbuf *spare = netbuf_alloc(NETBUF_HEADROOM);
	cr_assert_not_null(spare, "the pool keeps netbufs for others");
	netbuf_free(spare);
	cr_assert_eq(e1000e_poll(&dev, 16, 0), (int)sent);
	cr_assert_eq(tx_done_calls, sent, "every netbuf back at the poll");
	cr_assert_not(dev.ndev.tx_stopped, "and the senders woken");
	bring_down();
}

/* The netbufs xmit parked go back at the start of the next poll, before its receive batch
 * (whose ACKs are what make TCP send again), not after it. */
static unsigned tx_done_at_rx;
static void capture_count(struct netdev *d, struct netbuf *nb)
{
	tx_done_at_rx = tx_done_calls;
	capture(d, nb);
}

Test(e1000e_dev, a_poll_hands_parked_netbufs_back_before_its_receive_batch)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	uint32_t fl[1] = { 1000 };
	for (unsigned k = 0; k < 128; k++) { /* one more than the ring: xmit reclaims, parks 127 */
		struct netbuf *nb = tx_frame(42, 1, fl, false);
		nb->tx_done = on_tx_done;
		cr_assert_eq(netdev_tx(&dev.ndev, nb), 0);
		for (unsigned i = 0; i < dev.tx_n; i++)
			dev.tx_ring[i].legacy.status |= E1000E_TXD_STAT_DD;
	}
	cr_assert_eq(dev.c.tx_reclaimed_early, 127);
	cr_assert_eq(tx_done_calls, 0);
	netdev_set_stack_rx(capture_count);
	tx_done_at_rx = 0;
	nic_receive_ps(0, 54, 10, true, 0);
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 1 + 128);
	cr_assert_eq(ngot, 1);
	cr_assert_geq(tx_done_at_rx, 127, "parked netbufs back before the receive batch");
	cr_assert_eq(tx_done_calls, 128);
	netbuf_free(got[0]);
	netdev_set_stack_rx(capture);
	bring_down();
}

Test(e1000e_dev, mtu_change_rebuilds_receive_but_not_while_buffers_are_held)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	nic_receive_ps(0, 54, 10, true, 0);
	e1000e_poll(&dev, 16, 0);
	cr_assert_eq(netdev_set_mtu(&dev.ndev, 9000), -EBUSY);
	netbuf_free(got[0]);
	cr_assert_eq(netdev_set_mtu(&dev.ndev, 9000), 0);
	cr_assert_eq(dev.ndev.mtu, 9000);
	cr_assert_eq(regs[E1000E_PSRCTL / 4], 2u | 9u << 8);
	cr_assert(regs[E1000E_RCTL / 4] & E1000E_RCTL_LPE);
	cr_assert_eq(dev.data.size, 9216);
	cr_assert_eq(regs[E1000E_RDT / 4], 255 * 2);
	bring_down();
}

Test(e1000e_dev, dram_fallback_and_plain_mode)
{
	data_fail = true;
	bring_up(E1000E_RX_SPLIT, 1500);
	cr_assert_str_eq(dev.mode_why, "test: provider refused");
	cr_assert_eq(dev.data.dma.cls, MEM_CLASS_HOST);
	nic_receive_ps(0, 54, 100, true, 0);
	e1000e_poll(&dev, 16, 0);
	cr_assert_eq(got[0]->frags[0].addr.cls, MEM_CLASS_HOST);
	cr_assert_eq(got[0]->frags[0].provider, NETDEV_PROVIDER_HOST);
	cr_assert_eq(dev.ndev.stats.rx_bytes_host, 154);
	netbuf_free(got[0]);

	cr_assert_eq(e1000e_rx_reconfigure(&dev, E1000E_RX_PLAIN, 1500), 0);
	cr_assert_eq(regs[E1000E_RCTL / 4] & E1000E_RCTL_DTYP_MASK, 0);
	cr_assert_not(regs[E1000E_RFCTL / 4] & E1000E_RFCTL_EXTEN);
	cr_assert_eq(regs[E1000E_RDT / 4], 255, "legacy descriptors: 1 unit each");
	struct e1000e_rx_desc_legacy *l = dev.rx_ring;
	memset((void *)(uintptr_t)le64_get(l[0].buffer_addr), 0x5a, 1514);
	l[0].length = le16_make(1514);
	l[0].status = E1000E_RXD_STAT_DD | E1000E_RXD_STAT_EOP | E1000E_RXD_STAT_IPCS;
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 1);
	cr_assert_eq(netbuf_host_len(got[1]), 1514);
	cr_assert_eq(got[1]->nfrags, 0);
	cr_assert_eq(got[1]->flags, NETBUF_RX_L3_CSUM_OK);
	netbuf_free(got[1]);
	bring_down();
}

Test(e1000e_dev, frames_the_device_cannot_gather_are_bounced_through_dram)
{
	dev.tx_dev_max = E1000E_TX_DEV_MAX_QEMU;
	bring_up(E1000E_RX_SPLIT, 9000);
	uint32_t one[1] = { 4096 }, big[1] = { 4097 }, two[2] = { 1000, 1000 };
	struct netbuf *ok = tx_frame(42, 1, one, true);
	cr_assert_not(e1000e_tx_needs_bounce(ok, dev.tx_dev_max), "one device piece <= 4 KiB");
	cr_assert(e1000e_tx_needs_bounce(ok, 0) == false);
	struct netbuf *nb = tx_frame(42, 1, big, true);
	cr_assert(e1000e_tx_needs_bounce(nb, dev.tx_dev_max));
	netbuf_free(nb);
	nb = tx_frame(42, 2, two, true);
	nb->frags[1].addr.cls = MEM_CLASS_DEVICE; /* two device pieces */
	cr_assert(e1000e_tx_needs_bounce(nb, dev.tx_dev_max));
	const uint8_t *src0 = (const uint8_t *)(uintptr_t)nb->frags[0].addr.bus;
	cr_assert_eq(netdev_tx(&dev.ndev, nb), 0);
	cr_assert_eq(regs[E1000E_TDT / 4], 2, "header + one bounce buffer");
	uint8_t *bounce = (uint8_t *)(uintptr_t)le64_get(dev.tx_ring[1].legacy.buffer_addr);
	cr_assert_eq(le16_get(dev.tx_ring[1].legacy.length), 2000);
	cr_assert_eq(memcmp(bounce, src0, 1000), 0);
	cr_assert_eq(dev.c.tx_bounced, 1);
	cr_assert_eq(dev.c.tx_bytes[MEM_CLASS_DEVICE], 0, "the NIC reads only DRAM");
	cr_assert_eq(dev.bounce.nfree, E1000E_TX_BOUNCE - 1);
	cr_assert_eq(netdev_tx(&dev.ndev, ok), 0);
	cr_assert_eq(dev.c.tx_bytes[MEM_CLASS_DEVICE], 4096, "gathered from device memory");
	for (unsigned i = 0; i < dev.tx_n; i++)
		dev.tx_ring[i].legacy.status |= E1000E_TXD_STAT_DD;
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 2);
	cr_assert_eq(dev.bounce.nfree, E1000E_TX_BOUNCE, "bounce buffer back on completion");
	bring_down();
}

Test(e1000e_dev, receive_ring_with_the_data_buffers_in_device_memory)
{
	dev.ring_with_data = true;
	bring_up(E1000E_RX_SPLIT, 1500);
	cr_assert_eq(dev.rx_ring_dma.cls, MEM_CLASS_DEVICE, "the ring lives in the provider's memory");
	uint64_t ring = (uint64_t)regs[E1000E_RDBAH / 4] << 32 | regs[E1000E_RDBAL / 4];
	cr_assert_eq(ring, dev.rx_ring_dma.bus);
	cr_assert_geq(ring, dev.data.dma.bus + (uint64_t)dev.data.n * dev.data.size, "behind the data buffers");
	cr_assert_eq(ring % 4096, 0);
	cr_assert_eq(ring + 256 * 32, dev.data.dma.bus + dev.data.bytes, "inside the one allocation");
	dma_counters_reset();
	nic_receive_ps(0, 54, 1446, true, 0);
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 1);
	const struct dma_counters *c = dma_counters();
	/* descriptor fetch + write-back counted in device memory, only the header in DRAM */
	cr_assert_eq(c->dma_bytes[MEM_CLASS_DEVICE][DMA_TO_DEVICE], 32);
	cr_assert_eq(c->dma_bytes[MEM_CLASS_DEVICE][DMA_FROM_DEVICE], 32 + 1446);
	cr_assert_eq(c->dma_bytes[MEM_CLASS_HOST][DMA_FROM_DEVICE], 54);
	netbuf_free(got[0]);
	bring_down();
}

Test(e1000e_dev, descriptor_dma_in_dram_is_counted)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	cr_assert_eq(dev.rx_ring_dma.cls, MEM_CLASS_HOST);
	dma_counters_reset();
	nic_receive_ps(0, 54, 1446, true, 0);
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 1);
	const struct dma_counters *c = dma_counters();
	cr_assert_eq(c->dma_bytes[MEM_CLASS_HOST][DMA_TO_DEVICE], 32, "descriptor fetched from DRAM");
	cr_assert_eq(c->dma_bytes[MEM_CLASS_HOST][DMA_FROM_DEVICE], 54 + 32, "header + write-back");
	netbuf_free(got[0]);
	bring_down();
}

Test(e1000e_dev, a_frame_under_the_context_in_force_skips_its_context_descriptor)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	uint32_t fl[1] = { 1000 };
	for (unsigned i = 0; i < 3; i++) {
		struct netbuf *nb = tx_frame(54, 1, fl, true);
		nb->flags |= NETBUF_TX_CSUM_PARTIAL;
		nb->csum_start = 34;
		nb->csum_offset = i < 2 ? 16 : 6; /* TCP, TCP, then UDP: a new context */
		cr_assert_eq(netdev_tx(&dev.ndev, nb), 0);
	}
	cr_assert_eq(regs[E1000E_TDT / 4], 3 + 2 + 3, "context + 2, then 2 under the same context, then 3");
	cr_assert_eq(dev.c.tx_ctx, 2);
	cr_assert_eq(dev.c.tx_ctx_reused, 1);
	cr_assert_eq(le32_get(dev.tx_ring[5].ctx.cmd_and_length) & E1000E_TXD_DTYP_CTX, E1000E_TXD_DTYP_CTX);
	for (unsigned i = 0; i < dev.tx_n; i++)
		dev.tx_ring[i].data.upper = le32_make(le32_get(dev.tx_ring[i].data.upper) | E1000E_TXD_STAT_DD);
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 3);
	bring_down();
}

Test(e1000e_dev, tso_frames_go_out_only_while_tso_is_on_and_count_their_segments)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	uint32_t fl[1] = { 4096 };
	struct netbuf *nb = tso_frame(1, fl, true, 1460);
	cr_assert_eq(netdev_tx(&dev.ndev, nb), -EINVAL, "TSO off: the netdev refuses the frame");
	cr_assert_eq(regs[E1000E_TDT / 4], 0, "nothing posted");
	e1000e_tso_set(&dev, true, "on (test)");
	cr_assert(dev.ndev.features & NETDEV_F_TSO);
	cr_assert_eq(netdev_tx(&dev.ndev, nb), 0);
	cr_assert_eq(regs[E1000E_TDT / 4], 3, "context + header + one device piece");
	cr_assert(le32_get(dev.tx_ring[0].ctx.cmd_and_length) & E1000E_TUCMD_TSE);
	cr_assert_eq(le16_get(dev.tx_ring[0].ctx.mss), 1460);
	cr_assert_eq(dev.ndev.stats.tx_tso, 1);
	cr_assert_eq(dev.ndev.stats.tx_tso_segs, 3, "4096 bytes: 1460 + 1460 + 1176");
	cr_assert_eq(dev.c.tx_bounced, 0, "one device piece of 4 KiB: gathered in place");
	/* A second TSO frame of another length needs its own context (PAYLEN differs). */
	uint32_t fl2[1] = { 3000 };
	cr_assert_eq(netdev_tx(&dev.ndev, tso_frame(1, fl2, true, 1460)), 0);
	cr_assert_eq(regs[E1000E_TDT / 4], 6);
	cr_assert_eq(dev.c.tx_ctx, 2);
	cr_assert_eq(dev.c.tx_ctx_reused, 0);
	/* The receive side's rebuild keeps the feature. */
	cr_assert_eq(e1000e_rx_reconfigure(&dev, E1000E_RX_SPLIT, 1500), 0);
	cr_assert(dev.ndev.features & NETDEV_F_TSO);
	for (unsigned i = 0; i < dev.tx_n; i++)
		dev.tx_ring[i].data.upper = le32_make(le32_get(dev.tx_ring[i].data.upper) | E1000E_TXD_STAT_DD);
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 2);
	bring_down();
}

/* A frame train of n frames (netdev.h NETBUF_TX_TRAIN): 54 header bytes each, one payload
 * fragment each of 1000 + i bytes, TCP checksum offload. */
static struct netbuf *tx_train(unsigned n)
{
	static uint8_t payload[NETBUF_MAX_FRAGS][2048];
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	cr_assert_not_null(nb);
	for (unsigned i = 0; i < n; i++)
		memset(netbuf_put(nb, 54), (int)(0xa0 + i), 54);
	for (unsigned i = 0; i < n; i++) {
		struct netdev_frag f = { .addr = dma_addr_host(payload[i]), .len = 1000 + i };
		nb->frags[nb->nfrags++] = f; /* (netbuf_add_frag's, without its host-part rule) */
	}
	nb->flags |= NETBUF_TX_CSUM_PARTIAL | NETBUF_TX_TRAIN;
	nb->csum_start = 34;
	nb->csum_offset = 16;
	nb->hdr_len = 54;
	return nb;
}

/* A train is one context descriptor and, per frame, its headers and its fragment as two
 * extended data descriptors with TXSM, EOP on each frame's last, RS on the train's last
 * only; a malformed train is refused. */
Test(e1000e_tx, a_train_is_a_context_and_two_data_descriptors_a_frame)
{
	union e1000e_tx_desc d[E1000E_TX_POST_MAX];
	bool ctx;
	struct netbuf *nb = tx_train(E1000E_TX_TRAIN_MAX);

	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 0, &ctx), 1 + 2 * E1000E_TX_TRAIN_MAX);
	cr_assert(ctx);
	cr_assert_eq(d[0].ctx.tucss, 34);
	cr_assert_eq(d[0].ctx.tucso, 50);
	cr_assert_eq(le32_get(d[0].ctx.cmd_and_length) & E1000E_TUCMD_TCP, E1000E_TUCMD_TCP);
	for (unsigned i = 0; i < E1000E_TX_TRAIN_MAX; i++) {
		const struct e1000e_tx_desc_data *h = &d[1 + 2 * i].data, *p = &d[2 + 2 * i].data;
		cr_assert_eq(le64_get(h->buffer_addr), (uint64_t)(uintptr_t)(nb->data + 54 * i));
		cr_assert_eq(le32_get(h->lower) & 0xffff, 54);
		cr_assert_eq(le32_get(h->lower) & (E1000E_DCMD_EOP | E1000E_DCMD_RS), 0);
		cr_assert_eq(le64_get(p->buffer_addr), nb->frags[i].addr.bus);
		cr_assert_eq(le32_get(p->lower) & 0xffff, 1000 + i);
		cr_assert_eq(le32_get(p->lower) & (E1000E_DCMD_EOP | E1000E_DCMD_RS),
			     E1000E_DCMD_EOP | (i + 1 == E1000E_TX_TRAIN_MAX ? E1000E_DCMD_RS : 0));
		cr_assert_eq(le32_get(h->upper) & E1000E_POPTS_TXSM, E1000E_POPTS_TXSM);
		cr_assert_eq(le32_get(p->upper) & E1000E_POPTS_TXSM, E1000E_POPTS_TXSM);
	}
	cr_assert_eq(e1000e_tx_build_train(nb, d, 2 * E1000E_TX_TRAIN_MAX, 0, &ctx), -ENOSPC);
	nb->tail -= 1;
	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 0, &ctx), -EINVAL, "host part not n headers");
	nb->tail += 1;
	nb->flags &= ~NETBUF_TX_CSUM_PARTIAL;
	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 0, &ctx), -EINVAL, "no checksum offload");
	nb->flags |= NETBUF_TX_CSUM_PARTIAL;
	nb->frags[1].addr = dma_addr_device(nb->frags[1].addr.bus);
	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 512, &ctx), -EINVAL,
		     "a device piece beyond tx_dev_max: a train is never bounced");
	netbuf_free(nb);
	nb = tx_train(2);
	nb->hdr_len = 0;
	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 0, &ctx), -EINVAL, "no header length");
	netbuf_free(nb);
}

/* The ring takes a train whole or refuses it whole: with room for all but one of its
 * descriptors nothing is posted and the senders stop; taken, it is one netbuf completed
 * once when the device is done with its last frame, and a wake promises room for a train. */
Test(e1000e_dev, a_train_is_taken_whole_or_refused_whole_and_completed_once)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	cr_assert(dev.ndev.features & NETDEV_F_TX_TRAIN);
	cr_assert_eq(dev.ndev.tx_train_max, E1000E_TX_TRAIN_MAX);
	dev.tx_limit = 12; /* (`nic txreclaim poll 12`: trains within the limit) */
	cr_assert_eq(e1000e_tx_train_max(&dev), 5);
	unsigned descs = 1 + 2 * E1000E_TX_TRAIN_MAX;
	dev.tx_reclaim_poll_only = true;
	dev.tx_limit = descs - 1; /* one descriptor short */
	struct netbuf *nb = tx_train(E1000E_TX_TRAIN_MAX);
	nb->tx_done = on_tx_done;
	cr_assert_eq(netdev_tx_train(&dev.ndev, nb), -ENOBUFS);
	cr_assert_eq(regs[E1000E_TDT / 4], 0, "nothing posted");
	cr_assert(dev.ndev.tx_stopped);
	cr_assert_eq(dev.ndev.stats.tx_errors, 1);
	dev.tx_limit = descs;
	cr_assert_eq(netdev_tx_train(&dev.ndev, nb), 0);
	cr_assert_eq(regs[E1000E_TDT / 4], descs);
	cr_assert_eq(dev.c.tx_trains, 1);
	cr_assert_eq(dev.c.tx_train_frames, E1000E_TX_TRAIN_MAX);
	cr_assert_eq(dev.c.tx_bytes[MEM_CLASS_HOST],
		     54 * E1000E_TX_TRAIN_MAX + E1000E_TX_TRAIN_MAX * 1000 + E1000E_TX_TRAIN_MAX * (E1000E_TX_TRAIN_MAX - 1) / 2);
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 0, "not done yet");
	for (unsigned i = 0; i + 1 < descs; i++) /* every frame but the last done: no completion */
		dev.tx_ring[i].data.upper = le32_make(le32_get(dev.tx_ring[i].data.upper) | E1000E_TXD_STAT_DD);
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 0);
	cr_assert_eq(tx_done_calls, 0);
	dev.tx_ring[descs - 1].data.upper =
		le32_make(le32_get(dev.tx_ring[descs - 1].data.upper) | E1000E_TXD_STAT_DD);
	dev.tx_limit = 0; /* (the limits above are below any the console allows: no wake under them) */
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 1);
	cr_assert_eq(tx_done_calls, 1, "one completion for the train");
	cr_assert_not(dev.ndev.tx_stopped);
	bring_down();
}

/* A mixed train (netdev.h NETBUF_TX_TRAIN_MIXED) shaped as a 4 KiB read's three frames:
 * 54 header bytes + 24 copied PDU header bytes and a data fragment; 54 and a data fragment;
 * 54, a data fragment (device memory when dev) and a 24-byte response fragment. */
static struct netbuf *tx_mixed(bool dev)
{
	static uint8_t payload[4][2048];
	static const uint16_t hlen[3] = { 78, 54, 54 };
	static const uint8_t nfr[3] = { 1, 1, 2 };
	static const uint32_t flen[4] = { 1436, 1460, 1200, 24 };
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	cr_assert_not_null(nb);
	for (unsigned i = 0; i < 3; i++) {
		memset(netbuf_put(nb, hlen[i]), (int)(0xa0 + i), hlen[i]);
		nb->train_hlen[i] = hlen[i];
		nb->train_nfrags[i] = nfr[i];
	}
	for (unsigned i = 0; i < 4; i++) {
		struct netdev_frag f = { .addr = dma_addr_host(payload[i]), .len = flen[i] };
		if (dev && i < 3)
			f.addr = dma_addr_device(f.addr.bus);
		nb->frags[nb->nfrags++] = f; /* (netbuf_add_frag's, without its host-part rule) */
	}
	nb->train_frames = 3;
	nb->flags |= NETBUF_TX_CSUM_PARTIAL | NETBUF_TX_TRAIN | NETBUF_TX_TRAIN_MIXED;
	nb->csum_start = 34;
	nb->csum_offset = 16;
	return nb;
}

/* A mixed train is one context descriptor and, per frame, a data descriptor for its own
 * host bytes and one for each of its fragments (TXSM on all), EOP on each frame's last, RS
 * on the train's last only; device pieces within tx_dev_max pass, one a frame; a malformed
 * one (frames and fragments or host bytes that do not add up, three fragments in a frame,
 * two device pieces in one, a piece past tx_dev_max, the checksum field past a frame's host
 * bytes) is refused. */
Test(e1000e_tx, a_mixed_train_gives_each_frame_its_host_bytes_and_fragments)
{
	union e1000e_tx_desc d[E1000E_TX_POST_MAX];
	static const unsigned hd[3] = { 1, 3, 5 }, nfr[3] = { 1, 1, 2 }, hl[3] = { 78, 54, 54 };
	bool ctx;
	struct netbuf *nb = tx_mixed(true);

	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 4096, &ctx), 8);
	cr_assert(ctx);
	cr_assert_eq(d[0].ctx.tucss, 34);
	cr_assert_eq(d[0].ctx.tucso, 50);
	unsigned off = 0, fi = 0;
	for (unsigned f = 0; f < 3; f++) {
		const struct e1000e_tx_desc_data *h = &d[hd[f]].data;
		cr_assert_eq(le64_get(h->buffer_addr), (uint64_t)(uintptr_t)(nb->data + off));
		cr_assert_eq(le32_get(h->lower) & 0xffff, hl[f]);
		cr_assert_eq(le32_get(h->lower) & (E1000E_DCMD_EOP | E1000E_DCMD_RS), 0);
		cr_assert_eq(le32_get(h->upper) & E1000E_POPTS_TXSM, E1000E_POPTS_TXSM);
		off += hl[f];
		for (unsigned j = 0; j < nfr[f]; j++, fi++) {
			const struct e1000e_tx_desc_data *p = &d[hd[f] + 1 + j].data;
			uint32_t want = j + 1 == nfr[f] ? E1000E_DCMD_EOP | (f == 2 ? E1000E_DCMD_RS : 0) : 0;
			cr_assert_eq(le64_get(p->buffer_addr), nb->frags[fi].addr.bus);
			cr_assert_eq(le32_get(p->lower) & 0xffff, nb->frags[fi].len);
			cr_assert_eq(le32_get(p->lower) & (E1000E_DCMD_EOP | E1000E_DCMD_RS), want, "frame %u piece %u", f, j);
			cr_assert_eq(le32_get(p->upper) & E1000E_POPTS_TXSM, E1000E_POPTS_TXSM);
		}
	}
	cr_assert_eq(e1000e_tx_build_train(nb, d, 7, 4096, &ctx), -ENOSPC);
	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 1024, &ctx), -EINVAL,
		     "a device piece beyond tx_dev_max: never bounced");
	nb->frags[3].addr = dma_addr_device(nb->frags[3].addr.bus);
	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 4096, &ctx), -EINVAL, "two device pieces a frame");
	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 0, &ctx), 8, "no device limit");
	nb->frags[3].addr = dma_addr_host((void *)(uintptr_t)nb->frags[3].addr.bus);
	nb->tail -= 1;
	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 0, &ctx), -EINVAL, "host part not the frames'");
	nb->tail += 1;
	nb->train_nfrags[1] = 2;
	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 0, &ctx), -EINVAL, "more fragments than nfrags");
	nb->train_nfrags[1] = 1;
	nb->train_nfrags[2] = 3;
	nb->frags[nb->nfrags++] = nb->frags[3];
	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 0, &ctx), -EINVAL, "three fragments a frame");
	nb->nfrags--;
	nb->train_nfrags[2] = 2;
	nb->csum_offset = 40; /* (the field at 74: past frames 1 and 2's 54 bytes) */
	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 0, &ctx), -EINVAL, "checksum past a frame's host bytes");
	nb->csum_offset = 16;
	nb->train_frames = 0;
	cr_assert_eq(e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, 0, &ctx), -EINVAL, "no frame");
	netbuf_free(nb);
}

/* The ring takes a mixed train whole or refuses it whole (one descriptor short: nothing
 * posted, the senders stopped), and completes it once, with its host and device bytes. */
Test(e1000e_dev, a_mixed_train_is_taken_whole_or_refused_whole_and_completed_once)
{
	bring_up(E1000E_RX_SPLIT, 1500);
	unsigned descs = 8;
	dev.tx_reclaim_poll_only = true;
	dev.tx_limit = descs - 1;
	struct netbuf *nb = tx_mixed(false);
	nb->tx_done = on_tx_done;
	cr_assert_eq(netdev_tx_train(&dev.ndev, nb), -ENOBUFS);
	cr_assert_eq(regs[E1000E_TDT / 4], 0, "nothing posted");
	cr_assert(dev.ndev.tx_stopped);
	dev.tx_limit = descs;
	cr_assert_eq(netdev_tx_train(&dev.ndev, nb), 0);
	cr_assert_eq(regs[E1000E_TDT / 4], descs);
	cr_assert_eq(dev.c.tx_trains, 1);
	cr_assert_eq(dev.c.tx_bytes[MEM_CLASS_HOST], 78 + 54 + 54 + 1436 + 1460 + 1200 + 24);
	for (unsigned i = 0; i + 1 < descs; i++)
		dev.tx_ring[i].data.upper = le32_make(le32_get(dev.tx_ring[i].data.upper) | E1000E_TXD_STAT_DD);
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 0);
	cr_assert_eq(tx_done_calls, 0);
	dev.tx_ring[descs - 1].data.upper =
		le32_make(le32_get(dev.tx_ring[descs - 1].data.upper) | E1000E_TXD_STAT_DD);
	dev.tx_limit = 0;
	cr_assert_eq(e1000e_poll(&dev, 16, 0), 1);
	cr_assert_eq(tx_done_calls, 1, "one completion for the mixed train");
	bring_down();
}
