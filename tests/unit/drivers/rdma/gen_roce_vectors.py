#!/usr/bin/env python3
"""Generate tests/unit/drivers/rdma/roce_vectors.h: RoCE v2 packets (IPv4 + UDP + BTH +
extension headers + payload + pad + ICRC) built here from the IBTA field layout with
Python's struct module, and their ICRC computed with zlib.crc32 over the masked
pseudo header (8 x 0xff, IPv4 with TOS/TTL/checksum = 0xff.., UDP checksum = 0xffff,
BTH resv8a = 0xff) and the rest, stored little-endian as Linux rdma_rxe does.
Independent of the C sources it checks. Run: python3 gen_roce_vectors.py > roce_vectors.h
"""
import struct
import zlib


def ipv4(total_len, ident, tos=0x02, ttl=64, src=0x0a0a0002, dst=0x0a0a000a):
    h = struct.pack('>BBHHHBBHII', 0x45, tos, total_len, ident, 0x4000, ttl, 17, 0, src, dst)
    s = sum(struct.unpack('>10H', h))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return h[:10] + struct.pack('>H', (~s) & 0xffff) + h[12:]


def bth(opcode, destqp, psn, padcnt=0, se=False, ackreq=False, fecn=False, pkey=0xffff):
    flags = (0x80 if se else 0) | (padcnt << 4)
    return struct.pack('>BBHB', opcode, flags, pkey, 0x80 if fecn else 0) + destqp.to_bytes(3, 'big') + \
        bytes([0x80 if ackreq else 0]) + psn.to_bytes(3, 'big')


def packet(opcode, ext, payload, ident, sport=0xc0de, **kw):
    pad = (4 - len(payload) % 4) % 4
    roce = bth(opcode, padcnt=pad, **kw) + ext + payload + bytes(pad)
    udp_len = 8 + len(roce) + 4
    udp = struct.pack('>HHHH', sport, 4791, udp_len, 0x1234)  # a non-zero checksum: masked
    ip = ipv4(20 + udp_len, ident)
    masked = bytearray(ip + udp + roce)
    masked[1] = 0xff          # TOS
    masked[8] = 0xff          # TTL
    masked[10:12] = b'\xff\xff'  # IPv4 header checksum
    masked[26:28] = b'\xff\xff'  # UDP checksum
    masked[28 + 4] = 0xff     # BTH resv8a
    icrc = zlib.crc32(b'\xff' * 8 + bytes(masked)) & 0xffffffff
    return ip + udp + roce + icrc.to_bytes(4, 'little'), icrc, len(payload), pad


def reth(va, rkey, dmalen):
    return struct.pack('>QII', va, rkey, dmalen)


VECTORS = [
    # name, opcode, ext, payload, kw, expected fields
    ('send_only_wrap', 0x04, b'', b'hello', dict(destqp=0x000011, psn=0xffffff, ackreq=True, se=True),
     dict(destqp=0x11, psn=0xffffff)),
    ('write_only_imm', 0x0b, reth(0x00007f0012345678, 0x1234abcd, 64) + struct.pack('>I', 0xdeadbeef),
     bytes(range(64)), dict(destqp=0x123456, psn=0x000100, ackreq=True, fecn=True),
     dict(destqp=0x123456, psn=0x100, va=0x00007f0012345678, rkey=0x1234abcd, dmalen=64, imm=0xdeadbeef)),
    ('read_request', 0x0c, reth(0x1000, 0x00000201, 8192), b'', dict(destqp=0x000012, psn=0x7fffff, ackreq=True),
     dict(destqp=0x12, psn=0x7fffff, va=0x1000, rkey=0x201, dmalen=8192)),
    ('nak_psn_seq', 0x11, struct.pack('>B', 0x60) + (0x000005).to_bytes(3, 'big'), b'',
     dict(destqp=0x000013, psn=0x000042), dict(destqp=0x13, psn=0x42, syndrome=0x60, msn=5)),
    ('cmp_swap', 0x13, struct.pack('>QIQQ', 0x2000, 0x301, 0x1111222233334444, 0x5555666677778888), b'',
     dict(destqp=0x000014, psn=0x000001, ackreq=True),
     dict(destqp=0x14, psn=1, va=0x2000, rkey=0x301, swap_add=0x1111222233334444, compare=0x5555666677778888)),
    ('atomic_ack', 0x12, struct.pack('>B', 0x1f) + (0x000009).to_bytes(3, 'big') + struct.pack('>Q', 0xfeedfacecafebeef),
     b'', dict(destqp=0x000015, psn=0x000001), dict(destqp=0x15, psn=1, syndrome=0x1f, msn=9, orig=0xfeedfacecafebeef)),
    ('ud_send_imm', 0x65, struct.pack('>IB', 0x80010000, 0) + (1).to_bytes(3, 'big') + struct.pack('>I', 7),
     bytes(256), dict(destqp=0x000001, psn=0x000003),
     dict(destqp=1, psn=3, qkey=0x80010000, srcqp=1, imm=7)),
    ('send_only_inv', 0x17, struct.pack('>I', 0xabcdef01), b'xyz', dict(destqp=0x000016, psn=0x000002, ackreq=True),
     dict(destqp=0x16, psn=2, inv_rkey=0xabcdef01)),
    ('read_resp_middle', 0x0e, b'', bytes((i * 7) & 0xff for i in range(1024)), dict(destqp=0x000017, psn=0x000000),
     dict(destqp=0x17, psn=0)),
]


# Captured from Linux 6.1 rdma_rxe in the lab (tests/lab/roce_tests.py, 2026-11-24): the CM REQ MAD that
# `rping -c -a 10.10.0.10` sends to QP 1 (UD SEND only, IPv4 header onwards). Its stored ICRC must equal
# the one computed here: the check that this generator's ICRC is Linux's.
CAPTURED_RXE_REQ = bytes.fromhex(
    '450001348970400040119c290a0a00020a0a000ad87212b7012000006400ffff00000001800000008001000000000001'
    '010702030000000000000002fb39029a00100000000000009a0239fb000000000000000001061c06505400fffe1ab001'
    '00000000000000000000110100000001000000a0796285a7ffff37f0ffffffff00000000000000000000ffff0a0a0002'
    '00000000000000000000ffff0a0a000a4021300000400098000000000000000000000000000000000000000000000000'
    '00000000000000000000000000000000000000000040a4530000000000000000000000000a0a00020000000000000000'
    '000000000a0a000a00000000000000000000000000000000000000000000000000000000000000000000000000000000'
    '000000000000000000000000000000000b958487')


def captured():
    ip = CAPTURED_RXE_REQ
    masked = bytearray(ip[:48])
    masked[1] = 0xff
    masked[8] = 0xff
    masked[10:12] = b'\xff\xff'
    masked[26:28] = b'\xff\xff'
    masked[32] = 0xff
    icrc = zlib.crc32(b'\xff' * 8 + bytes(masked) + ip[48:-4]) & 0xffffffff
    assert icrc == int.from_bytes(ip[-4:], 'little'), 'the captured rxe frame does not verify'
    bth = ip[28:40]
    deth = ip[40:48]
    exp = dict(destqp=int.from_bytes(bth[5:8], 'big'), psn=int.from_bytes(bth[9:12], 'big'),
               qkey=struct.unpack('>I', deth[:4])[0], srcqp=int.from_bytes(deth[5:8], 'big'))
    return ip, icrc, exp


def main():
    print('/* Generated by gen_roce_vectors.py: do not edit. RoCE v2 packets from the IPv4 header')
    print(' * to the ICRC, built from the IBTA layout in Python, ICRC by zlib.crc32. */')
    print('#include <stdint.h>')
    print('struct roce_vector {\n\tconst char *name;\n\tuint8_t opcode;\n\tuint32_t icrc;\n\tuint32_t payload_len;'
          '\n\tuint8_t padcnt;\n\tuint16_t hdr_len;\n\tuint32_t destqp, psn, rkey, dmalen, imm, qkey, srcqp, msn, inv_rkey;'
          '\n\tuint8_t syndrome;\n\tuint64_t va, swap_add, compare, orig;\n\tsize_t len;\n\tconst uint8_t *bytes;\n};')
    for name, op, ext, payload, kw, exp in VECTORS:
        frame, icrc, plen, pad = packet(op, ext, payload, ident=0x1000 + op, **kw)
        print('static const uint8_t roce_vec_%s[%d] = {' % (name, len(frame)))
        for i in range(0, len(frame), 16):
            print('\t' + ' '.join('0x%02x,' % b for b in frame[i:i + 16]))
        print('};')
    cap_ip, cap_icrc, cap_exp = captured()
    print('static const uint8_t roce_vec_rxe_cm_req[%d] = {' % len(cap_ip))
    for i in range(0, len(cap_ip), 16):
        print('\t' + ' '.join('0x%02x,' % b for b in cap_ip[i:i + 16]))
    print('};')
    print('static const struct roce_vector roce_vectors[] = {')
    for name, op, ext, payload, kw, exp in VECTORS:
        frame, icrc, plen, pad = packet(op, ext, payload, ident=0x1000 + op, **kw)
        fields = ', '.join('.%s = 0x%xull' % (k, v) for k, v in exp.items())
        print('\t{ .name = "%s", .opcode = 0x%02x, .icrc = 0x%08x, .payload_len = %d, .padcnt = %d, .hdr_len = %d, %s,'
              ' .len = sizeof(roce_vec_%s), .bytes = roce_vec_%s },' % (name, op, icrc, plen, pad, 12 + len(ext),
                                                                        fields, name, name))
    fields = ', '.join('.%s = 0x%xull' % (k, v) for k, v in cap_exp.items())
    print('\t{ .name = "rxe_cm_req", .opcode = 0x64, .icrc = 0x%08x, .payload_len = 256, .padcnt = 0, .hdr_len = 20, %s,'
          ' .len = sizeof(roce_vec_rxe_cm_req), .bytes = roce_vec_rxe_cm_req },' % (cap_icrc, fields))
    print('};')


if __name__ == '__main__':
    main()
