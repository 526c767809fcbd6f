/*
 * nvmet_tcp_stats.c - the NVMe/TCP transport's `stats nvmet_tcp` section: where payloads went
 * (device memory peer to peer, or host DRAM by reason), commands that waited for
 * buffers, C2HData SUCCESS completions. The `nvmet` console view prints the same
 * counters through nvmet_tcp_stats() and nvmet_tcp_dram_reason_name().
 */
#include <stdio.h>
#include "../../../lib/stats.h"
#include "nvmet_tcp.h"

static void nvmet_tcp_stats_show(void)
{
	const struct nvmet_tcp_stats *st = nvmet_tcp_stats();
	printf("  nvmet-tcp p2p: %s, reads %llu (%llu B) writes %llu (%llu B) from device memory\n",
	       nvmet_tcp_p2p() ? "auto" : "off", (unsigned long long)st->p2p_reads,
	       (unsigned long long)st->p2p_read_bytes, (unsigned long long)st->p2p_writes,
	       (unsigned long long)st->p2p_write_bytes);
	printf("  nvmet-tcp dram fallback:");
	for (int r = 0; r < NVMET_TCP_DRAM_REASON_COUNT; r++)
		printf(" %s %llu (%llu B)", nvmet_tcp_dram_reason_name((enum nvmet_tcp_dram_reason)r),
		       (unsigned long long)st->dram_cmds[r], (unsigned long long)st->dram_bytes[r]);
	printf("\n  nvmet-tcp buffers: waits %llu resumed %llu waiting %u (high %llu) gathers %llu dropped %llu "
	       "success-flag %llu c2h %llu (%llu B) r2t %llu h2c %llu (%llu B) host-share %llu write-lent %llu "
	       "whole-capsules %llu rx-at-once %llu\n",
	       (unsigned long long)st->waits, (unsigned long long)st->resumed, nvmet_tcp_waiting(),
	       (unsigned long long)st->waiting_high, (unsigned long long)st->gathers,
	       (unsigned long long)st->data_dropped, (unsigned long long)st->success_flags,
	       (unsigned long long)st->c2h_pdus, (unsigned long long)st->c2h_bytes, (unsigned long long)st->r2ts,
	       (unsigned long long)st->h2c_pdus, (unsigned long long)st->h2c_bytes,
	       (unsigned long long)st->host_share, (unsigned long long)st->write_lent,
	       (unsigned long long)st->whole_capsules, (unsigned long long)st->rx_at_once);
	printf("  nvmet-tcp timeouts: %llu (no ICReq/Connect in %u ms, or R2T data not in %u ms)\n",
	       (unsigned long long)st->timeouts, NVMET_TCP_CONNECT_TIMEOUT_MS, NVMET_TCP_R2T_TIMEOUT_MS);
	printf("  nvmet-tcp admission: %u of %u connections (%u per host address), refused %llu (pool) %llu "
	       "(host's share), evicted before Connect %llu, commands beyond SQSIZE %llu\n",
	       nvmet_tcp_conn_count(), NVMET_TCP_MAX_CONNS, NVMET_TCP_CONNS_PER_PEER,
	       (unsigned long long)st->refused, (unsigned long long)st->peer_refused,
	       (unsigned long long)st->evicted, (unsigned long long)st->sq_overflows);
}
STATS_SECTION(nvmet_tcp, nvmet_tcp_stats_show);
