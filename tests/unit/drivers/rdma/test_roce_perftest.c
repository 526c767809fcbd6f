// sources: drivers/rdma/roce_pt_msg.c drivers/rdma/roce_dev.c mm/pool.c lib/log.c
/*
 * perftest's out-of-band exchange, server side: the keys message in both forms (the text
 * perftest writes on its TCP socket, the big-endian struct it SENDs on its rdma_cm channel)
 * parsed and formatted byte for byte as perftest's sprintf/htobe32 would; the exchange's
 * order (version, cycle buffer, cache line, MTU, keys..., "done") with our answers; the
 * refusals (old version, a cycle buffer larger than our buffer, bad MTU, wrong sizes).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "drivers/rdma/roce_perftest.h"

/* What perftest 4.5's ib_write_bw client writes (lid 0, out_reads 128 as rxe reports, qpn 0x11,
 * psn 0x796285, rkey 0x1234, its buffer at 0x55d0c0a8b000, GID ::ffff:10.10.0.2, srqn 0). */
static const char client_keys[ROCE_PT_KEYS_TEXT_LEN] =
	"0000:0080:000011:796285:00001234:000055d0c0a8b000:00:00:00:00:00:00:00:00:00:00:ff:ff:0a:0a:00:02:00000000:";

Test(roce_perftest, the_clients_text_keys_are_parsed)
{
	struct roce_pt_dest d;
	uint32_t ip;
	cr_assert_eq(sizeof(client_keys), 108);
	cr_assert_eq(roce_pt_keys_parse_text(client_keys, sizeof(client_keys), &d), 0);
	cr_assert_eq(d.lid, 0);
	cr_assert_eq(d.out_reads, 0x80);
	cr_assert_eq(d.qpn, 0x11);
	cr_assert_eq(d.psn, 0x796285);
	cr_assert_eq(d.rkey, 0x1234);
	cr_assert_eq(d.vaddr, 0x55d0c0a8b000ull);
	cr_assert_eq(roce_gid_to_ipv4(&d.gid, &ip), 0);
	cr_assert_eq(ip, 0x0a0a0002);
	cr_assert_eq(d.srqn, 0);
}

Test(roce_perftest, bad_text_keys_are_refused)
{
	char m[ROCE_PT_KEYS_TEXT_LEN];
	struct roce_pt_dest d;

	cr_assert_eq(roce_pt_keys_parse_text(client_keys, 107, &d), -EINVAL, "short");
	memcpy(m, client_keys, sizeof(m));
	m[4] = '-';
	cr_assert_eq(roce_pt_keys_parse_text(m, sizeof(m), &d), -EINVAL, "separator");
	memcpy(m, client_keys, sizeof(m));
	m[40] = 'g';
	cr_assert_eq(roce_pt_keys_parse_text(m, sizeof(m), &d), -EINVAL, "not hex");
	memcpy(m, client_keys, sizeof(m));
	m[107] = 'x';
	cr_assert_eq(roce_pt_keys_parse_text(m, sizeof(m), &d), -EINVAL, "no NUL");
	memcpy(m, client_keys, sizeof(m));
	memcpy(m + 10, "ff", 2);  /* any 24-bit QPN */
	cr_assert_eq(roce_pt_keys_parse_text(m, sizeof(m), &d), 0);
	cr_assert_eq(d.qpn, 0xff0011);
}

Test(roce_perftest, ours_is_formatted_as_perftests_sprintf)
{
	struct roce_pt_dest d = { .out_reads = 16, .qpn = 0x1a2, .psn = 0xabcdef, .rkey = 0x305, .vaddr = 0x100000 };
	char out[ROCE_PT_KEYS_TEXT_LEN];
	struct roce_pt_dest back;

	roce_gid_from_ipv4(0x0a0a000a, &d.gid);
	memset(out, 'x', sizeof(out));
	roce_pt_keys_format_text(&d, out);
	cr_assert_str_eq(out, "0000:0010:0001a2:abcdef:00000305:0000000000100000:00:00:00:00:00:00:00:00:00:00:ff:ff:"
			      "0a:0a:00:0a:00000000:");
	cr_assert_eq(out[107], 0);
	cr_assert_eq(roce_pt_keys_parse_text(out, sizeof(out), &back), 0);
	cr_assert_eq(memcmp(&back, &d, sizeof(d)), 0);
}

Test(roce_perftest, binary_keys_are_perftests_struct_in_big_endian)
{
	/* struct pingpong_dest after rdma_write_keys' htobe32/htobe64 (x86_64 layout) */
	static const uint8_t wire[ROCE_PT_KEYS_BIN_LEN] = {
		0, 0, 0, 0,  0, 0, 0, 0x80,  0, 0, 0, 0x11,  0, 0x79, 0x62, 0x85,  0, 0, 0x12, 0x34,  0, 0, 0, 0,
		0, 0, 0x55, 0xd0, 0xc0, 0xa8, 0xb0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 10, 0, 2,
		0, 0, 0, 0,  0, 0, 0, 1 };
	struct roce_pt_dest d, back;
	uint8_t out[ROCE_PT_KEYS_BIN_LEN];

	cr_assert_eq(roce_pt_keys_parse_bin(wire, sizeof(wire), &d), 0);
	cr_assert_eq(d.out_reads, 0x80);
	cr_assert_eq(d.qpn, 0x11);
	cr_assert_eq(d.psn, 0x796285);
	cr_assert_eq(d.rkey, 0x1234);
	cr_assert_eq(d.vaddr, 0x55d0c0a8b000ull);
	cr_assert_eq(d.gid.raw[15], 2);
	roce_pt_keys_format_bin(&d, out);
	cr_assert_eq(memcmp(out, wire, sizeof(wire)), 0);
	cr_assert_eq(roce_pt_keys_parse_bin(out, sizeof(out), &back), 0);
	cr_assert_eq(roce_pt_keys_parse_bin(wire, sizeof(wire) - 1, &d), -EINVAL);
	out[8] = 1;  /* QPN beyond 24 bits */
	cr_assert_eq(roce_pt_keys_parse_bin(out, sizeof(out), &d), -EINVAL);
}

/* Feed msg (len bytes) and check the answer. */
static void step(struct roce_pt_xchg *x, const struct roce_pt_local *ours, const void *msg, size_t len, int want,
		 const void *answer, size_t alen)
{
	uint8_t out[ROCE_PT_MSG_MAX];
	struct roce_pt_dest rem;
	cr_assert_eq(roce_pt_xchg_need(x, len ? ((const uint8_t *)msg)[0] : -1), len);
	cr_assert_eq(roce_pt_xchg_take(x, msg, len, &rem), want);
	cr_assert_eq(roce_pt_xchg_answer(x, ours, out, sizeof(out)), alen);
	cr_assert_eq(memcmp(out, answer, alen), 0);
}

Test(roce_perftest, the_tcp_exchange_in_order_with_our_answers)
{
	static const char version[ROCE_PT_VERSION_LEN] = "6.06";
	static const uint8_t cycle[4] = { 0, 0, 0x10, 0 }, line[4] = { 0, 0, 0, 64 };
	struct roce_pt_local ours = { .mtu = ROCE_MTU_1024, .dest = { .out_reads = 16, .qpn = 0x1a2, .psn = 0xabcdef,
									    .rkey = 0x305, .vaddr = 0x100000 } };
	char keys[ROCE_PT_KEYS_TEXT_LEN];
	struct roce_pt_xchg x;
	struct roce_pt_dest rem;

	roce_gid_from_ipv4(0x0a0a000a, &ours.dest.gid);
	roce_pt_keys_format_text(&ours.dest, keys);
	roce_pt_xchg_init(&x, ROCE_PT_WIRE_TCP);
	step(&x, &ours, version, sizeof(version), 0, version, sizeof(version));
	cr_assert_eq(x.version, 60600);
	step(&x, &ours, cycle, 4, 0, cycle, 4);
	cr_assert_eq(x.cycle_buffer, 4096);
	step(&x, &ours, line, 4, 0, line, 4);
	step(&x, &ours, "5", 2, 0, "3", 2);  /* the client's 4096 against our 1024: we say 3 */
	cr_assert_eq(x.mtu, ROCE_MTU_4096);
	for (unsigned i = 0; i < 5; i++)
		step(&x, &ours, client_keys, sizeof(client_keys), 1, keys, sizeof(keys));
	cr_assert_eq(x.keys, 5);
	/* ib_write_bw's report after the run: five 8-byte fields (size 64, 500 iterations, three
	 * doubles), each answered with zeros; then keys again */
	static const uint8_t zeros[8], size64[8] = { 0, 0, 0, 0, 0, 0, 0, 64 }, iters[8] = { 0, 0, 0, 0, 0, 0, 1, 0xf4 },
				 bw[8] = { 0x3f, 0xd6, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66 };
	step(&x, &ours, size64, 8, 0, zeros, 8);
	step(&x, &ours, iters, 8, 0, zeros, 8);
	for (unsigned i = 0; i < 3; i++)
		step(&x, &ours, bw, 8, 0, zeros, 8);
	cr_assert_eq(x.report_fields, 5);
	step(&x, &ours, client_keys, sizeof(client_keys), 1, keys, sizeof(keys));
	cr_assert_eq(x.report_fields, 0);
	cr_assert_eq(roce_pt_xchg_need(&x, 'd'), ROCE_PT_DONE_LEN);
	cr_assert_eq(roce_pt_xchg_take(&x, "done", ROCE_PT_DONE_LEN, &rem), 2);
	cr_assert_eq(x.state, ROCE_PT_X_DONE);
	cr_assert_eq(roce_pt_xchg_need(&x, -1), 0);
	cr_assert_eq(roce_pt_xchg_take(&x, client_keys, sizeof(client_keys), &rem), -EPROTO, "nothing after done");
}

Test(roce_perftest, the_rdma_cm_exchange_carries_binary_keys)
{
	static const char version[ROCE_PT_VERSION_LEN] = "5.70";
	static const uint8_t cycle[4] = { 0, 0, 0x10, 0 }, line[4] = { 0, 0, 0, 64 };
	struct roce_pt_local ours = { .mtu = ROCE_MTU_1024, .dest = { .out_reads = 16, .rkey = 0x305, .vaddr = 0x100000 } };
	uint8_t zero[ROCE_PT_KEYS_BIN_LEN] = { 0 }, keys[ROCE_PT_KEYS_BIN_LEN], out[ROCE_PT_MSG_MAX];
	struct roce_pt_xchg x;
	struct roce_pt_dest rem;

	roce_pt_xchg_init(&x, ROCE_PT_WIRE_CM);
	cr_assert_eq(roce_pt_xchg_take(&x, version, sizeof(version), &rem), 0);
	cr_assert_eq(roce_pt_xchg_answer(&x, &ours, out, sizeof(out)), ROCE_PT_VERSION_LEN);
	cr_assert_str_eq((char *)out, ROCE_PT_VERSION);
	cr_assert_eq(roce_pt_xchg_take(&x, cycle, 4, &rem), 0);
	cr_assert_eq(roce_pt_xchg_take(&x, line, 4, &rem), 0);
	cr_assert_eq(roce_pt_xchg_take(&x, "3", 2, &rem), 0);
	cr_assert_eq(roce_pt_xchg_need(&x, -1), ROCE_PT_KEYS_BIN_LEN);
	/* -R: the first keys name no QP */
	cr_assert_eq(roce_pt_xchg_take(&x, zero, sizeof(zero), &rem), 1);
	cr_assert_eq(rem.qpn, 0);
	roce_pt_keys_format_bin(&ours.dest, keys);
	cr_assert_eq(roce_pt_xchg_answer(&x, &ours, out, sizeof(out)), ROCE_PT_KEYS_BIN_LEN);
	cr_assert_eq(memcmp(out, keys, sizeof(keys)), 0);
	/* a report field is an 8-byte SEND */
	cr_assert_eq(roce_pt_xchg_take(&x, zero, 8, &rem), 0);
	cr_assert_eq(roce_pt_xchg_answer(&x, &ours, out, sizeof(out)), 8);
	cr_assert_eq(roce_pt_xchg_take(&x, "done", ROCE_PT_DONE_LEN, &rem), -EPROTO, "no done over rdma_cm");
}

Test(roce_perftest, what_we_refuse)
{
	static const uint8_t big[4] = { 0, 2, 0, 0 }, zero4[4] = { 0 }, line[4] = { 0, 0, 0, 64 };
	struct roce_pt_xchg x;
	struct roce_pt_dest rem;
	char v[ROCE_PT_VERSION_LEN];

	roce_pt_xchg_init(&x, ROCE_PT_WIRE_TCP);
	memset(v, 0, sizeof(v));
	strcpy(v, "5.69");
	cr_assert_eq(roce_pt_xchg_take(&x, v, sizeof(v), &rem), -EPROTO, "older than 5.70");
	cr_assert_eq(x.state, ROCE_PT_X_FAILED);
	cr_assert_eq(roce_pt_xchg_need(&x, -1), 0);

	const char *bad[] = { "6", ".06", "6.06x", "a.06", "" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		roce_pt_xchg_init(&x, ROCE_PT_WIRE_TCP);
		memset(v, 0, sizeof(v));
		strcpy(v, bad[i]);
		cr_assert_eq(roce_pt_xchg_take(&x, v, sizeof(v), &rem), -EPROTO, "version '%s'", bad[i]);
	}
	roce_pt_xchg_init(&x, ROCE_PT_WIRE_TCP);
	memset(v, '6', sizeof(v));
	cr_assert_eq(roce_pt_xchg_take(&x, v, sizeof(v), &rem), -EPROTO, "no NUL");

	roce_pt_xchg_init(&x, ROCE_PT_WIRE_TCP);
	cr_assert_eq(roce_pt_xchg_take(&x, "6.1", 4, &rem), -EPROTO, "a version is 16 bytes");
	roce_pt_xchg_init(&x, ROCE_PT_WIRE_TCP);
	memset(v, 0, sizeof(v));
	strcpy(v, "10.5");
	cr_assert_eq(roce_pt_xchg_take(&x, v, sizeof(v), &rem), 0);
	cr_assert_eq(x.version, 105000);
	cr_assert_eq(roce_pt_xchg_take(&x, big, 4, &rem), -EPROTO, "a cycle buffer of 128 KiB is beyond our buffer");
	roce_pt_xchg_init(&x, ROCE_PT_WIRE_TCP);
	roce_pt_xchg_take(&x, v, sizeof(v), &rem);
	cr_assert_eq(roce_pt_xchg_take(&x, zero4, 4, &rem), -EPROTO, "no cycle buffer");
	roce_pt_xchg_init(&x, ROCE_PT_WIRE_TCP);
	roce_pt_xchg_take(&x, v, sizeof(v), &rem);
	roce_pt_xchg_take(&x, line, 4, &rem);
	roce_pt_xchg_take(&x, line, 4, &rem);
	cr_assert_eq(roce_pt_xchg_take(&x, "6", 2, &rem), -EPROTO, "MTU code 6");
	roce_pt_xchg_init(&x, ROCE_PT_WIRE_TCP);
	roce_pt_xchg_take(&x, v, sizeof(v), &rem);
	roce_pt_xchg_take(&x, line, 4, &rem);
	roce_pt_xchg_take(&x, line, 4, &rem);
	cr_assert_eq(roce_pt_xchg_take(&x, "3x", 2, &rem), -EPROTO, "no NUL after the code");

	/* after the MTU: "done" spelt wrong, a report that never ends */
	roce_pt_xchg_init(&x, ROCE_PT_WIRE_TCP);
	roce_pt_xchg_take(&x, v, sizeof(v), &rem);
	roce_pt_xchg_take(&x, line, 4, &rem);
	roce_pt_xchg_take(&x, line, 4, &rem);
	cr_assert_eq(roce_pt_xchg_take(&x, "3", 2, &rem), 0);
	cr_assert_eq(roce_pt_xchg_take(&x, "dona", 5, &rem), -EPROTO);
	roce_pt_xchg_init(&x, ROCE_PT_WIRE_TCP);
	roce_pt_xchg_take(&x, v, sizeof(v), &rem);
	roce_pt_xchg_take(&x, line, 4, &rem);
	roce_pt_xchg_take(&x, line, 4, &rem);
	roce_pt_xchg_take(&x, "3", 2, &rem);
	static const uint8_t field[8] = { 0x40, 0x8f, 0x40 };
	for (unsigned i = 0; i < ROCE_PT_REPORT_MAX_FIELDS; i++)
		cr_assert_eq(roce_pt_xchg_take(&x, field, 8, &rem), 0);
	cr_assert_eq(roce_pt_xchg_take(&x, field, 8, &rem), -EPROTO, "a tenth report field in a row");
	roce_pt_xchg_init(&x, ROCE_PT_WIRE_CM);
	roce_pt_xchg_take(&x, v, sizeof(v), &rem);
	roce_pt_xchg_take(&x, line, 4, &rem);
	roce_pt_xchg_take(&x, line, 4, &rem);
	roce_pt_xchg_take(&x, "3", 2, &rem);
	cr_assert_eq(roce_pt_xchg_take(&x, zero4, 4, &rem), -EPROTO, "a 4-byte SEND is neither keys nor a report field");
}
