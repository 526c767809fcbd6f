// sources: drivers/nvme/target/nvmet_config.c lib/ipv4_text.c
/*
 * nvmetcli JSON configuration: a real `nvmetcli save` file loads; every required field,
 * reference and limit produces an error naming its JSON path; ignored attributes are
 * warnings, not errors.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_config.h"

/* The shape `nvmetcli save` writes (Linux nvmet), with a p2pstore device path. */
static const char *const nvmetcli_file =
	"{\n"
	"  \"hosts\": [ { \"nqn\": \"nqn.2014-08.org.nvmexpress:uuid:0c5f2ae1-0000-4000-8000-000000000001\" } ],\n"
	"  \"ports\": [\n"
	"    {\n"
	"      \"addr\": { \"adrfam\": \"ipv4\", \"traddr\": \"10.10.0.10\", \"treq\": \"not specified\",\n"
	"                \"trsvcid\": \"4420\", \"trtype\": \"tcp\" },\n"
	"      \"ana_groups\": [ { \"ana\": { \"state\": \"optimized\" }, \"grpid\": 1 } ],\n"
	"      \"param\": { \"inline_data_size\": \"16384\", \"pi_enable\": \"0\" },\n"
	"      \"portid\": 1,\n"
	"      \"referrals\": [],\n"
	"      \"subsystems\": [ \"nqn.2026-11.org.p2pstore:vol0\" ]\n"
	"    }\n"
	"  ],\n"
	"  \"subsystems\": [\n"
	"    {\n"
	"      \"allowed_hosts\": [ \"nqn.2014-08.org.nvmexpress:uuid:0c5f2ae1-0000-4000-8000-000000000001\" ],\n"
	"      \"attr\": { \"allow_any_host\": \"0\", \"cntlid_max\": \"65519\", \"cntlid_min\": \"1\",\n"
	"                \"model\": \"Linux\", \"pi_enable\": \"0\", \"qid_max\": \"128\",\n"
	"                \"serial\": \"9a6fa5b3f25ba0e8\", \"version\": \"1.3\" },\n"
	"      \"namespaces\": [\n"
	"        { \"ana_grpid\": 1, \"device\": { \"nguid\": \"ef90689c-6c46-d44c-89c1-4067801309a8\",\n"
	"          \"path\": \"/dev/nvme1n1\", \"uuid\": \"00000000-0000-0000-0000-000000000000\" },\n"
	"          \"enable\": 1, \"nsid\": 1 }\n"
	"      ],\n"
	"      \"nqn\": \"nqn.2026-11.org.p2pstore:vol0\"\n"
	"    }\n"
	"  ]\n"
	"}\n";

static struct nvmet_config cfg;
static char err[256];
static char warnings[2048];

static void collect(void *ctx, const char *msg)
{
	(void)ctx;
	size_t n = strlen(warnings);
	snprintf(warnings + n, sizeof(warnings) - n, "%s;", msg);
}

static int parse(const char *json)
{
	warnings[0] = '\0';
	return nvmet_config_parse(json, strlen(json), &cfg, err, sizeof(err), collect, NULL);
}

/* Replace the first `from` in the reference file by `to` and parse that. */
static int parse_edit(const char *from, const char *to)
{
	static char buf[8192];
	const char *at = strstr(nvmetcli_file, from);
	cr_assert_not_null(at, "edit anchor '%s' not found", from);
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - nvmetcli_file), nvmetcli_file, to, at + strlen(from));
	return parse(buf);
}

static void expect_error(int rc, const char *msg)
{
	cr_assert_eq(rc, -EINVAL);
	cr_assert_str_eq(err, msg);
	cr_assert_eq(cfg.nsubsys + cfg.nports + cfg.nhosts, 0, "nothing half-loaded");
}

Test(nvmet_config, nvmetcli_file_loads)
{
	cr_assert_eq(parse(nvmetcli_file), 0, "%s", err);
	cr_assert_eq(cfg.nhosts, 1);
	cr_assert_eq(cfg.nsubsys, 1);
	cr_assert_eq(cfg.nports, 1);
	const struct nvmet_cfg_subsys *s = &cfg.subsys[0];
	cr_assert_str_eq(s->nqn, "nqn.2026-11.org.p2pstore:vol0");
	cr_assert_not(s->allow_any_host);
	cr_assert_str_eq(s->serial, "9a6fa5b3f25ba0e8");
	cr_assert_str_eq(s->model, "Linux");
	cr_assert_eq(s->cntlid_min, 1);
	cr_assert_eq(s->cntlid_max, 65519);
	cr_assert_eq(s->nhosts, 1);
	cr_assert_eq(s->hosts[0], 0);
	cr_assert_eq(s->nns, 1);
	cr_assert_eq(s->ns[0].nsid, 1);
	cr_assert(s->ns[0].enable);
	cr_assert_eq(s->ns[0].ctrl, 1);
	cr_assert_eq(s->ns[0].ctrl_nsid, 1);
	cr_assert(s->ns[0].has_nguid);
	cr_assert_eq(s->ns[0].nguid[0], 0xef);
	cr_assert_eq(s->ns[0].nguid[15], 0xa8);
	cr_assert_not(s->ns[0].has_uuid, "an all-zero UUID means none");
	const struct nvmet_cfg_port *p = &cfg.ports[0];
	cr_assert_eq(p->portid, 1);
	cr_assert_eq(p->trtype, NVMET_TRTYPE_TCP);
	cr_assert_eq(p->traddr, (10u << 24) | (10u << 16) | 10u);
	cr_assert_eq(p->trsvcid, 4420);
	cr_assert_eq(p->nsubsys, 1);
	cr_assert_eq(p->subsys[0], 0);
	cr_assert_eq(s->ns[0].anagrpid, 1);
	cr_assert_eq(p->nana, 1);
	cr_assert_eq(p->ana[0].grpid, 1);
	cr_assert_eq(p->ana[0].state, NVMET_ANA_OPTIMIZED);
	cr_assert_eq(p->nreferrals, 0);
	/* what a Linux target has and the appliance does not use is named, not fatal */
	cr_assert_eq(cfg.warnings, 3, "%s", warnings);
	cr_assert_not_null(strstr(warnings, "ports[0].param: not used by the appliance, ignored"));
	cr_assert_not_null(strstr(warnings, "subsystems[0].attr.qid_max: not used"));
}

/* ANA groups and referrals as nvmetcli writes them; every bad value names its path. */
Test(nvmet_config, ana_groups_and_referrals)
{
	cr_assert_eq(parse_edit("\"ana_groups\": [ { \"ana\": { \"state\": \"optimized\" }, \"grpid\": 1 } ]",
				"\"ana_groups\": [ { \"ana\": { \"state\": \"inaccessible\" }, \"grpid\": 1 },"
				" { \"grpid\": \"7\", \"ana\": { \"state\": \"persistent-loss\" } },"
				" { \"grpid\": 32, \"ana\": { \"state\": \"change\" } } ],"
				" \"referrals\": [ { \"name\": \"b\", \"addr\": { \"adrfam\": \"ipv4\", \"portid\": \"2\","
				" \"traddr\": \"10.10.0.11\", \"treq\": \"not specified\", \"trsvcid\": \"8009\","
				" \"trtype\": \"tcp\" } }, { \"name\": \"c\", \"enable\": 0, \"addr\": { \"adrfam\": \"ipv4\","
				" \"traddr\": \"10.10.0.12\", \"trsvcid\": \"4420\", \"trtype\": \"rdma\" } } ]"), 0, "%s", err);
	const struct nvmet_cfg_port *p = &cfg.ports[0];
	cr_assert_eq(p->nana, 3);
	cr_assert_eq(p->ana[0].state, NVMET_ANA_INACCESSIBLE);
	cr_assert_eq(p->ana[1].grpid, 7);
	cr_assert_eq(p->ana[1].state, NVMET_ANA_PERSISTENT_LOSS);
	cr_assert_eq(p->ana[2].grpid, 32);
	cr_assert_eq(p->ana[2].state, NVMET_ANA_CHANGE);
	cr_assert_eq(p->nreferrals, 2);
	cr_assert_str_eq(p->referrals[0].name, "b");
	cr_assert(p->referrals[0].enable);
	cr_assert_eq(p->referrals[0].portid, 2);
	cr_assert_eq(p->referrals[0].traddr, (10u << 24) | (10u << 16) | 11u);
	cr_assert_eq(p->referrals[0].trsvcid, 8009);
	cr_assert_eq(p->referrals[0].trtype, NVMET_TRTYPE_TCP);
	cr_assert_eq(p->referrals[0].treq, 0);
	cr_assert_not(p->referrals[1].enable);
	cr_assert_eq(p->referrals[1].trtype, NVMET_TRTYPE_RDMA);
	cr_assert_eq(p->referrals[1].treq, 0, "not given: not specified");
	cr_assert_eq(cfg.warnings, 3, "%s", warnings);

	/* a namespace in group 7 needs group 7 on a port; 0 (no ANA in the kernel) is group 1 */
	expect_error(parse_edit("\"ana_grpid\": 1", "\"ana_grpid\": 7"),
		     "subsystems[0].namespaces[0].ana_grpid: ANA group 7 is in no port's ana_groups");
	cr_assert_eq(parse_edit("\"ana_grpid\": 1", "\"ana_grpid\": 0"), 0, "%s", err);
	cr_assert_eq(cfg.subsys[0].ns[0].anagrpid, 1);
	cr_assert_eq(parse_edit("\"grpid\": 1 }", "\"grpid\": 7 }"), 0, "%s", err);
	cr_assert_eq(parse_edit("\"ana_grpid\": 1", "\"ana_grpid\": 33"), -EINVAL);
	cr_assert_str_eq(err, "subsystems[0].namespaces[0].ana_grpid: 33 is outside 0..32");
	expect_error(parse_edit("\"grpid\": 1 }", "\"grpid\": 0 }"), "ports[0].ana_groups[0].grpid: 0 is outside 1..32");
	expect_error(parse_edit("\"state\": \"optimized\"", "\"state\": \"standby\""),
		     "ports[0].ana_groups[0].ana.state: 'standby' is not an ANA state (optimized, non-optimized, "
		     "inaccessible, persistent-loss, change)");
	expect_error(parse_edit("{ \"ana\": { \"state\": \"optimized\" }, \"grpid\": 1 }",
				"{ \"grpid\": 1, \"ana\": { \"state\": \"optimized\" } }, { \"grpid\": 1, \"ana\": {"
				" \"state\": \"optimized\" } }"),
		     "ports[0].ana_groups[1].grpid: ANA group 1 listed twice");
	expect_error(parse_edit("{ \"ana\": { \"state\": \"optimized\" }, \"grpid\": 1 }", "{ \"grpid\": 1 }"),
		     "ports[0].ana_groups[0].ana: missing");
	expect_error(parse_edit("\"referrals\": []", "\"referrals\": [ { \"name\": \"x\", \"addr\": {"
				" \"adrfam\": \"ipv4\", \"traddr\": \"10.1.1.1\", \"trsvcid\": \"4420\", \"trtype\": \"tcp\","
				" \"treq\": \"maybe\" } } ]"),
		     "ports[0].referrals[0].addr.treq: 'maybe' is not a TREQ (not specified, required, not required)");
	expect_error(parse_edit("\"referrals\": []", "\"referrals\": [ { \"addr\": {} } ]"),
		     "ports[0].referrals[0].name: missing");
	expect_error(parse_edit("\"referrals\": []", "\"referrals\": [ { \"name\": \"x\", \"addr\": {"
				" \"adrfam\": \"ipv6\", \"traddr\": \"::1\", \"trsvcid\": \"4420\", \"trtype\": \"tcp\" } } ]"),
		     "ports[0].referrals[0].addr.adrfam: address family 'ipv6' is not supported (ipv4)");
	expect_error(parse_edit("\"referrals\": []", "\"referrals\": {}"), "ports[0].referrals: expected an array");
	cr_assert_eq(nvmet_ana_state_name(NVMET_ANA_NON_OPTIMIZED)[0], 'n');
	cr_assert_str_eq(nvmet_ana_state_name((enum nvmet_ana_state)9), "?");
}

Test(nvmet_config, errors_name_their_path)
{
	expect_error(parse_edit("\"/dev/nvme1n1\"", "\"/dev/sda\""),
		     "subsystems[0].namespaces[0].device.path: '/dev/sda' is not a local NVMe namespace (expected /dev/nvmeXnY)");
	expect_error(parse_edit("\"nsid\": 1", "\"nsid\": 0"), "subsystems[0].namespaces[0].nsid: 0 is outside 1..4294967294");
	expect_error(parse_edit("\"trtype\": \"tcp\"", "\"trtype\": \"fc\""),
		     "ports[0].addr.trtype: transport 'fc' is not supported (tcp, rdma)");
	expect_error(parse_edit("\"adrfam\": \"ipv4\"", "\"adrfam\": \"ipv6\""),
		     "ports[0].addr.adrfam: address family 'ipv6' is not supported (ipv4)");
	expect_error(parse_edit("\"10.10.0.10\"", "\"10.10.0.256\""), "ports[0].addr.traddr: '10.10.0.256' is not an IPv4 address");
	expect_error(parse_edit("\"4420\"", "\"70000\""), "ports[0].addr.trsvcid: 70000 is outside 1..65535");
	expect_error(parse_edit("\"subsystems\": [ \"nqn.2026-11.org.p2pstore:vol0\" ]", "\"subsystems\": [ \"nqn.x:nope\" ]"),
		     "ports[0].subsystems[0]: no subsystem 'nqn.x:nope'");
	expect_error(parse_edit("\"allowed_hosts\": [ \"nqn.2014-08.org.nvmexpress:uuid:0c5f2ae1-0000-4000-8000-000000000001\" ]",
				"\"allowed_hosts\": [ \"nqn.2014-08.org.nvmexpress:uuid:stranger\" ]"),
		     "subsystems[0].allowed_hosts[0]: host 'nqn.2014-08.org.nvmexpress:uuid:stranger' is not in the hosts list");
	expect_error(parse_edit("\"nqn\": \"nqn.2026-11.org.p2pstore:vol0\"\n", "\"nqn\": \"nqn.2014-08.org.nvmexpress.discovery\"\n"),
		     "subsystems[0].nqn: 'nqn.2014-08.org.nvmexpress.discovery' is not a usable subsystem NQN");
	expect_error(parse_edit("\"cntlid_min\": \"1\"", "\"cntlid_min\": \"70000\""),
		     "subsystems[0].attr.cntlid_min: 70000 is outside 1..65519");
	expect_error(parse_edit("\"nguid\": \"ef90689c", "\"nguid\": \"zz90689c"),
		     "subsystems[0].namespaces[0].device.nguid: expected 32 hexadecimal digits");
	expect_error(parse_edit("\"enable\": 1", "\"enable\": 2"), "subsystems[0].namespaces[0].enable: 2 is outside 0..1");
	expect_error(parse_edit("\"portid\": 1", "\"portid\": \"one\""), "ports[0].portid: expected a number");
	expect_error(parse_edit("\"path\": \"/dev/nvme1n1\", ", ""), "subsystems[0].namespaces[0].device.path: missing");
}

Test(nvmet_config, duplicates_refused)
{
	expect_error(parse("{\"hosts\":[{\"nqn\":\"nqn.a:h\"},{\"nqn\":\"nqn.a:h\"}]}"), "hosts[1].nqn: host 'nqn.a:h' listed twice");
	expect_error(parse("{\"subsystems\":[{\"nqn\":\"nqn.a:s\"},{\"nqn\":\"nqn.a:s\"}]}"),
		     "subsystems[1].nqn: subsystem 'nqn.a:s' defined twice");
	expect_error(parse("{\"subsystems\":[{\"nqn\":\"nqn.a:s\",\"namespaces\":["
			   "{\"nsid\":1,\"device\":{\"path\":\"nvme0n1\"}},{\"nsid\":1,\"device\":{\"path\":\"nvme0n2\"}}]}]}"),
		     "subsystems[0].namespaces[1].nsid: namespace 1 defined twice");
	const char *two_ports = "{\"ports\":[{\"portid\":1,\"addr\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"10.0.0.1\",\"trsvcid\":\"4420\"}},"
				"{\"portid\":%d,\"addr\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"10.0.0.1\",\"trsvcid\":\"%s\"}}]}";
	char buf[512];
	snprintf(buf, sizeof(buf), two_ports, 1, "4421");
	expect_error(parse(buf), "ports[1].portid: port 1 defined twice");
	snprintf(buf, sizeof(buf), two_ports, 2, "4420");
	expect_error(parse(buf), "ports[1].addr: same address as port 1");
	snprintf(buf, sizeof(buf), two_ports, 2, "4421");
	cr_assert_eq(parse(buf), 0, "%s", err);
	cr_assert_eq(cfg.nports, 2);
}

Test(nvmet_config, malformed_json_and_bounds)
{
	expect_error(parse("{\"hosts\": ["), "(file): not valid JSON (truncated at byte 11)");
	expect_error(parse("[1,2]"), "(file): expected a JSON object at the top");
	expect_error(parse(""), "(file): expected a JSON object at the top");
	expect_error(parse("{\"hosts\": {}}"), "hosts: expected an array");
	expect_error(parse("{\"hosts\": [{\"nqn\": \"a\\\"b\"}]}"), "hosts[0].nqn: only printable ASCII without escapes is accepted");
	expect_error(parse("{\"hosts\": [{\"nqn\": \"not-an-nqn\"}]}"), "hosts[0].nqn: 'not-an-nqn' is not an NQN (nqn.yyyy-mm.domain:...)");
	static char big[80000];
	size_t n = (size_t)snprintf(big, sizeof(big), "{\"x\":[");
	for (int i = 0; i < 5000; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "%s1", i ? "," : "");
	snprintf(big + n, sizeof(big) - n, "]}");
	expect_error(parse(big), "(file): more than 4096 JSON tokens");
	char nqn[300] = "nqn.";
	memset(nqn + 4, 'a', 230);
	nqn[234] = '\0';
	snprintf(big, sizeof(big), "{\"hosts\":[{\"nqn\":\"%s\"}]}", nqn);
	expect_error(parse(big), "hosts[0].nqn: longer than 223 characters");
	cr_assert_eq(parse("{}"), 0, "an empty configuration is valid");
	cr_assert_eq(parse("{\"x\": 1}"), 0);
	cr_assert_eq(cfg.warnings, 1);
}
