/*
 * nvmet_referral_command.c - the `referral` console command: each port's discovery
 * referrals; `referral add` / `referral del` change them at run time (the port's
 * discovery controllers get a Discovery Log Page Change notice).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../lib/command.h"
#include "../../../lib/ipv4_text.h"
#include "nvmet_priv.h"
#include "nvmet_referral.h"

static void show(void)
{
	for (unsigned p = 0; p < nvmet_tgt.cfg.nports; p++) {
		const struct nvmet_cfg_port *cp = &nvmet_tgt.cfg.ports[p];
		printf("port %u: %u referrals\n", cp->portid, cp->nreferrals);
		for (unsigned i = 0; i < cp->nreferrals; i++) {
			const struct nvmet_cfg_referral *r = &cp->referrals[i];
			uint32_t a = r->traddr;
			printf("  %s: %s %u.%u.%u.%u:%u portid %u treq %u%s\n", r->name,
			       r->trtype == NVMET_TRTYPE_TCP ? "tcp" : "rdma", (a >> 24) & 0xff, (a >> 16) & 0xff,
			       (a >> 8) & 0xff, a & 0xff, r->trsvcid, r->portid, r->treq, r->enable ? "" : " (disabled)");
		}
	}
	printf("discovery generation %llu\n", (unsigned long long)nvmet_tgt.genctr);
}

static int parse_u16(const char *s, uint16_t *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);
	if (!*s || *end || v > 0xffff)
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

static int cmd_referral(int argc, char **argv)
{
	struct nvmet_cfg_referral r = { .enable = true, .trtype = NVMET_TRTYPE_TCP, .treq = 0 };
	uint16_t portid;

	if (!nvmet_running()) {
		printf("referral: no target\n");
		return 0;
	}
	if (argc == 1) {
		show();
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "del") == 0) {
		if (parse_u16(argv[2], &portid))
			return -EINVAL;
		return nvmet_referral_del(portid, argv[3]);
	}
	if (argc < 6 || argc > 8 || strcmp(argv[1], "add") != 0)
		return -EINVAL;
	if (parse_u16(argv[2], &portid) || strlen(argv[3]) >= sizeof(r.name) || ipv4_parse(argv[4], &r.traddr) ||
	    parse_u16(argv[5], &r.trsvcid) || r.trsvcid == 0)
		return -EINVAL;
	strcpy(r.name, argv[3]);
	if (argc >= 7) {
		if (strcmp(argv[6], "rdma") == 0)
			r.trtype = NVMET_TRTYPE_RDMA;
		else if (strcmp(argv[6], "tcp") != 0)
			return -EINVAL;
	}
	if (argc == 8 && parse_u16(argv[7], &r.portid))
		return -EINVAL;
	return nvmet_referral_add(portid, &r);
}
CONSOLE_COMMAND(referral, "[add PORTID NAME TRADDR TRSVCID [tcp|rdma] [REF_PORTID] | del PORTID NAME]",
		"discovery referrals per port; add or remove one", cmd_referral);
