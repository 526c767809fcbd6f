/*
 * nvmet_config.c - nvmetcli JSON configuration (see nvmet_config.h).
 *
 * JSON is tokenized by jsmn (Debian's libjsmn-dev, header-only: it compiles into the
 * image). The walker below only ever looks at tokens jsmn produced: every token index is
 * checked against the count, every string is bounded before it is copied.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../lib/ipv4_text.h"
#include "nvmet_config.h"

#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#include <jsmn.h>
#pragma GCC diagnostic pop

#define PATH_MAX_LEN 160

struct walker {
	const char *js;
	const jsmntok_t *t;
	int n;
	struct nvmet_config *cfg;
	char *err;
	size_t errlen;
	nvmet_config_warn_fn warn;
	void *ctx;
};

static int fail(struct walker *w, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(struct walker *w, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(w->err, w->errlen, "%s: ", path);
	if (n >= 0 && (size_t)n < w->errlen) {
		va_start(ap, fmt);
		vsnprintf(w->err + n, w->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static void warn(struct walker *w, const char *path, const char *what)
{
	char msg[PATH_MAX_LEN + 64];
	w->cfg->warnings++;
	if (w->warn) {
		snprintf(msg, sizeof(msg), "%s: %s", path, what);
		w->warn(w->ctx, msg);
	}
}

/* Index of the token after the subtree rooted at i (children lie inside its span). */
static int skip(const struct walker *w, int i)
{
	int end = w->t[i].end, j = i + 1;
	while (j < w->n && w->t[j].start < end)
		j++;
	return j;
}

static bool str_is(const struct walker *w, int i, const char *s)
{
	size_t len = strlen(s);
	return w->t[i].type == JSMN_STRING && (size_t)(w->t[i].end - w->t[i].start) == len &&
	       memcmp(w->js + w->t[i].start, s, len) == 0;
}

/* Value token of member `key` of the object at obj, or -1. */
static int member(const struct walker *w, int obj, const char *key)
{
	int j = obj + 1;
	for (int k = 0; k < w->t[obj].size && j + 1 < w->n; k++) {
		if (str_is(w, j, key))
			return j + 1;
		j = skip(w, j + 1);
	}
	return -1;
}

/* Warn about every member of obj whose key is not in `known` (NULL-terminated). */
static void warn_unknown(struct walker *w, int obj, const char *path, const char *const *known)
{
	int j = obj + 1;
	for (int k = 0; k < w->t[obj].size && j + 1 < w->n; k++) {
		bool ok = false;
		for (const char *const *kn = known; *kn; kn++)
			ok = ok || str_is(w, j, *kn);
		if (!ok) {
			char sub[PATH_MAX_LEN];
			int len = w->t[j].end - w->t[j].start;
			snprintf(sub, sizeof(sub), "%.120s.%.*s", path, len > 40 ? 40 : len, w->js + w->t[j].start);
			warn(w, sub, "not used by the appliance, ignored");
		}
		j = skip(w, j + 1);
	}
}

static int expect_type(struct walker *w, int i, jsmntype_t type, const char *path)
{
	static const char *const names[] = { "undefined", "an object", "an array", "a string", "a number or boolean" };
	if (i < 0)
		return fail(w, path, "missing");
	if (w->t[i].type != type)
		return fail(w, path, "expected %s", names[type < 5 ? type : 0]);
	return 0;
}

/* Copy a JSON string (no escapes, printable ASCII) of at most cap - 1 bytes. */
static int get_string(struct walker *w, int i, char *out, size_t cap, const char *path)
{
	int rc = expect_type(w, i, JSMN_STRING, path);
	if (rc)
		return rc;
	size_t len = (size_t)(w->t[i].end - w->t[i].start);
	const char *s = w->js + w->t[i].start;
	if (len >= cap)
		return fail(w, path, "longer than %zu characters", cap - 1);
	for (size_t k = 0; k < len; k++)
		if (s[k] < 0x20 || s[k] > 0x7e || s[k] == '\\')
			return fail(w, path, "only printable ASCII without escapes is accepted");
	memcpy(out, s, len);
	out[len] = '\0';
	return 0;
}

/* An unsigned number given as a JSON number or a string of digits, in [min, max]. */
static int get_uint(struct walker *w, int i, uint64_t min, uint64_t max, uint64_t *out, const char *path)
{
	if (i < 0)
		return fail(w, path, "missing");
	if (w->t[i].type != JSMN_PRIMITIVE && w->t[i].type != JSMN_STRING)
		return fail(w, path, "expected a number");
	const char *s = w->js + w->t[i].start;
	int len = w->t[i].end - w->t[i].start;
	uint64_t v = 0;
	if (len == 0 || len > 20)
		return fail(w, path, "expected a number");
	for (int k = 0; k < len; k++) {
		if (s[k] < '0' || s[k] > '9' || v > (UINT64_MAX - 9) / 10)
			return fail(w, path, "expected a number");
		v = v * 10 + (uint64_t)(s[k] - '0');
	}
	if (v < min || v > max)
		return fail(w, path, "%llu is outside %llu..%llu", (unsigned long long)v, (unsigned long long)min,
			    (unsigned long long)max);
	*out = v;
	return 0;
}

/* A flag given as 0/1, "0"/"1" or true/false. */
static int get_flag(struct walker *w, int i, bool *out, const char *path)
{
	if (i >= 0 && w->t[i].type == JSMN_PRIMITIVE && (w->js[w->t[i].start] == 't' || w->js[w->t[i].start] == 'f')) {
		*out = w->js[w->t[i].start] == 't';
		return 0;
	}
	uint64_t v;
	int rc = get_uint(w, i, 0, 1, &v, path);
	*out = v == 1;
	return rc;
}

static bool nqn_valid(const char *nqn)
{
	return strncmp(nqn, "nqn.", 4) == 0 && strlen(nqn) > 4;
}

/* 32 hex digits, dashes allowed anywhere (UUID form); all zero counts as absent. */
static int get_guid(struct walker *w, int i, uint8_t out[16], bool *present, const char *path)
{
	char s[64];
	int rc = get_string(w, i, s, sizeof(s), path);
	unsigned nib = 0, nonzero = 0;
	if (rc)
		return rc;
	memset(out, 0, 16);
	for (const char *p = s; *p; p++) {
		if (*p == '-')
			continue;
		int v = (*p >= '0' && *p <= '9') ? *p - '0' : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10
			: (*p >= 'A' && *p <= 'F') ? *p - 'A' + 10 : -1;
		if (v < 0 || nib >= 32)
			return fail(w, path, "expected 32 hexadecimal digits");
		out[nib / 2] |= (uint8_t)(v << (nib % 2 ? 0 : 4));
		nonzero |= (unsigned)v;
		nib++;
	}
	if (nib != 32)
		return fail(w, path, "expected 32 hexadecimal digits");
	*present = nonzero != 0;
	return 0;
}

/* "/dev/nvmeXnY" or "nvmeXnY" -> controller X, namespace Y. */
static int get_device_path(struct walker *w, int i, struct nvmet_cfg_ns *ns, const char *path)
{
	char s[64];
	unsigned long x, y;
	char *end;
	int rc = get_string(w, i, s, sizeof(s), path);
	if (rc)
		return rc;
	const char *p = strncmp(s, "/dev/", 5) == 0 ? s + 5 : s;
	if (strncmp(p, "nvme", 4) || p[4] < '0' || p[4] > '9')
		goto bad;
	x = strtoul(p + 4, &end, 10);
	if (*end != 'n' || end[1] < '1' || end[1] > '9')
		goto bad;
	y = strtoul(end + 1, &end, 10);
	if (*end || x > 255 || y == 0 || y > 0xfffffffeul)
		goto bad;
	ns->ctrl = (unsigned)x;
	ns->ctrl_nsid = (uint32_t)y;
	return 0;
bad:
	return fail(w, path, "'%s' is not a local NVMe namespace (expected /dev/nvmeXnY)", s);
}

/* A DHHC-1 secret's syntax: "DHHC-1:0h:" (h 0..3), 48/72/92 base64 characters (a key of
 * 32/48/64 bytes and its CRC-32), ':' (optional). Its CRC is checked at Connect (nvmet_auth.c). */
static int get_dhchap_secret(struct walker *w, int i, char *out, const char *path)
{
	int rc = get_string(w, i, out, NVMET_CFG_DHCHAP_SECRET_MAX, path);
	size_t n;
	if (rc)
		return rc;
	if (!out[0])
		return 0; /* Linux writes an empty attribute for "no key" */
	if (strncmp(out, "DHHC-1:0", 8) || out[8] < '0' || out[8] > '3' || out[9] != ':')
		goto bad;
	n = strlen(out + 10);
	if (n && out[10 + n - 1] == ':')
		n--;
	if (n != 48 && n != 72 && n != 92)
		goto bad;
	for (size_t k = 0; k < n; k++) {
		char c = out[10 + k];
		bool pad = c == '=' && k >= n - 2;
		if (!pad && !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
			      c == '/'))
			goto bad;
	}
	return 0;
bad:
	out[0] = 0;
	return fail(w, path, "not a DHHC-1 secret (DHHC-1:0h:<base64 of a 32, 48 or 64 byte key and its CRC>:)");
}

/* dhchap_hash / dhchap_dhgroup by the names Linux's attributes take. */
static int get_dhchap_id(struct walker *w, int i, const char *const *names, unsigned n, uint8_t base, uint8_t *out,
			 const char *path)
{
	char s[24];
	int rc = get_string(w, i, s, sizeof(s), path);
	if (rc)
		return rc;
	for (unsigned k = 0; k < n; k++)
		if (strcmp(s, names[k]) == 0 || (strncmp(names[k], "hmac(", 5) == 0 &&
						 strlen(s) + 6 == strlen(names[k]) && !strncmp(s, names[k] + 5, strlen(s)))) {
			*out = (uint8_t)(base + k);
			return 0;
		}
	return fail(w, path, "'%s' is not one of %s .. %s", s, names[0], names[n - 1]);
}

static int parse_host_auth(struct walker *w, int obj, int k, struct nvmet_cfg_host_auth *a)
{
	static const char *const hashes[] = { "hmac(sha256)", "hmac(sha384)", "hmac(sha512)" };
	static const char *const groups[] = { "null", "ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192" };
	char path[PATH_MAX_LEN];
	int m, rc;

	memset(a, 0, sizeof(*a));
	snprintf(path, sizeof(path), "hosts[%d].dhchap_key", k);
	if ((m = member(w, obj, "dhchap_key")) >= 0 && (rc = get_dhchap_secret(w, m, a->dhchap_key, path)))
		return rc;
	snprintf(path, sizeof(path), "hosts[%d].dhchap_ctrl_key", k);
	if ((m = member(w, obj, "dhchap_ctrl_key")) >= 0 && (rc = get_dhchap_secret(w, m, a->dhchap_ctrl_key, path)))
		return rc;
	if (a->dhchap_ctrl_key[0] && !a->dhchap_key[0])
		return fail(w, path, "a controller key needs the host's dhchap_key too");
	snprintf(path, sizeof(path), "hosts[%d].dhchap_hash", k);
	a->dhchap_hash = 1;
	if ((m = member(w, obj, "dhchap_hash")) >= 0 && (rc = get_dhchap_id(w, m, hashes, 3, 1, &a->dhchap_hash, path)))
		return rc;
	snprintf(path, sizeof(path), "hosts[%d].dhchap_dhgroup", k);
	if ((m = member(w, obj, "dhchap_dhgroup")) >= 0 &&
	    (rc = get_dhchap_id(w, m, groups, 6, 0, &a->dhchap_dhgroup, path)))
		return rc;
	return 0;
}

static int parse_hosts(struct walker *w, int arr)
{
	struct nvmet_config *cfg = w->cfg;
	char path[PATH_MAX_LEN];
	int rc = expect_type(w, arr, JSMN_ARRAY, "hosts");
	if (rc)
		return rc;
	if (w->t[arr].size > NVMET_CFG_MAX_HOSTS)
		return fail(w, "hosts", "more than %d hosts", NVMET_CFG_MAX_HOSTS);
	for (int k = 0, j = arr + 1; k < w->t[arr].size; k++, j = skip(w, j)) {
		static const char *const known[] = { "nqn", "dhchap_key", "dhchap_ctrl_key", "dhchap_hash",
						     "dhchap_dhgroup", NULL };
		snprintf(path, sizeof(path), "hosts[%d]", k);
		if ((rc = expect_type(w, j, JSMN_OBJECT, path)))
			return rc;
		warn_unknown(w, j, path, known);
		snprintf(path, sizeof(path), "hosts[%d].nqn", k);
		char *nqn = cfg->hosts[cfg->nhosts];
		if ((rc = get_string(w, member(w, j, "nqn"), nqn, NVMET_NQN_MAX + 1, path)))
			return rc;
		if (!nqn_valid(nqn))
			return fail(w, path, "'%s' is not an NQN (nqn.yyyy-mm.domain:...)", nqn);
		for (unsigned h = 0; h < cfg->nhosts; h++)
			if (strcmp(cfg->hosts[h], nqn) == 0)
				return fail(w, path, "host '%s' listed twice", nqn);
		if ((rc = parse_host_auth(w, j, k, &cfg->host_auth[cfg->nhosts])))
			return rc;
		cfg->nhosts++;
	}
	return 0;
}

static int parse_namespace(struct walker *w, int obj, struct nvmet_cfg_subsys *s, const char *base)
{
	static const char *const known[] = { "nsid", "enable", "device", "ana_grpid", NULL };
	static const char *const known_dev[] = { "path", "nguid", "uuid", NULL };
	char path[PATH_MAX_LEN];
	struct nvmet_cfg_ns *ns = &s->ns[s->nns];
	uint64_t v;
	int rc, dev, m;

	if ((rc = expect_type(w, obj, JSMN_OBJECT, base)))
		return rc;
	warn_unknown(w, obj, base, known);
	snprintf(path, sizeof(path), "%.120s.nsid", base);
	if ((rc = get_uint(w, member(w, obj, "nsid"), 1, 0xfffffffeull, &v, path)))
		return rc;
	ns->nsid = (uint32_t)v;
	for (unsigned k = 0; k < s->nns; k++)
		if (s->ns[k].nsid == ns->nsid)
			return fail(w, path, "namespace %u defined twice", ns->nsid);
	ns->enable = true;
	snprintf(path, sizeof(path), "%.120s.enable", base);
	if ((m = member(w, obj, "enable")) >= 0 && (rc = get_flag(w, m, &ns->enable, path)))
		return rc;
	ns->anagrpid = 1;
	snprintf(path, sizeof(path), "%.120s.ana_grpid", base);
	if ((m = member(w, obj, "ana_grpid")) >= 0) {
		/* nvmetcli writes 0 where the kernel has no ANA: the default group */
		if ((rc = get_uint(w, m, 0, NVMET_ANA_GRPMAX, &v, path)))
			return rc;
		ns->anagrpid = v ? (uint32_t)v : 1;
	}
	snprintf(path, sizeof(path), "%.120s.device", base);
	dev = member(w, obj, "device");
	if ((rc = expect_type(w, dev, JSMN_OBJECT, path)))
		return rc;
	warn_unknown(w, dev, path, known_dev);
	snprintf(path, sizeof(path), "%.120s.device.path", base);
	if ((rc = get_device_path(w, member(w, dev, "path"), ns, path)))
		return rc;
	snprintf(path, sizeof(path), "%.120s.device.nguid", base);
	if ((m = member(w, dev, "nguid")) >= 0 && (rc = get_guid(w, m, ns->nguid, &ns->has_nguid, path)))
		return rc;
	snprintf(path, sizeof(path), "%.120s.device.uuid", base);
	if ((m = member(w, dev, "uuid")) >= 0 && (rc = get_guid(w, m, ns->uuid, &ns->has_uuid, path)))
		return rc;
	s->nns++;
	return 0;
}

static int parse_subsys_attr(struct walker *w, int attr, struct nvmet_cfg_subsys *s, const char *base)
{
	static const char *const known[] = { "allow_any_host", "serial", "model", "version", "cntlid_min",
					     "cntlid_max", NULL };
	char path[PATH_MAX_LEN];
	uint64_t v;
	int rc, m;

	if ((rc = expect_type(w, attr, JSMN_OBJECT, base)))
		return rc;
	warn_unknown(w, attr, base, known);
	snprintf(path, sizeof(path), "%.120s.allow_any_host", base);
	if ((m = member(w, attr, "allow_any_host")) >= 0 && (rc = get_flag(w, m, &s->allow_any_host, path)))
		return rc;
	snprintf(path, sizeof(path), "%.120s.serial", base);
	if ((m = member(w, attr, "serial")) >= 0 && (rc = get_string(w, m, s->serial, sizeof(s->serial), path)))
		return rc;
	snprintf(path, sizeof(path), "%.120s.model", base);
	if ((m = member(w, attr, "model")) >= 0 && (rc = get_string(w, m, s->model, sizeof(s->model), path)))
		return rc;
	snprintf(path, sizeof(path), "%.120s.cntlid_min", base);
	if ((m = member(w, attr, "cntlid_min")) >= 0) {
		if ((rc = get_uint(w, m, 1, 0xffef, &v, path)))
			return rc;
		s->cntlid_min = (uint16_t)v;
	}
	snprintf(path, sizeof(path), "%.120s.cntlid_max", base);
	if ((m = member(w, attr, "cntlid_max")) >= 0) {
		if ((rc = get_uint(w, m, 1, 0xffef, &v, path)))
			return rc;
		s->cntlid_max = (uint16_t)v;
	}
	if (s->cntlid_min > s->cntlid_max)
		return fail(w, base, "cntlid_min %u above cntlid_max %u", s->cntlid_min, s->cntlid_max);
	snprintf(path, sizeof(path), "%.120s.version", base);
	if ((m = member(w, attr, "version")) >= 0 && w->t[m].type != JSMN_STRING)
		return fail(w, path, "expected a string");
	return 0;
}

static int parse_subsystems(struct walker *w, int arr)
{
	static const char *const known[] = { "nqn", "allowed_hosts", "attr", "namespaces", NULL };
	struct nvmet_config *cfg = w->cfg;
	char path[PATH_MAX_LEN], sub[PATH_MAX_LEN];
	int rc, m;

	if ((rc = expect_type(w, arr, JSMN_ARRAY, "subsystems")))
		return rc;
	if (w->t[arr].size > NVMET_CFG_MAX_SUBSYS)
		return fail(w, "subsystems", "more than %d subsystems", NVMET_CFG_MAX_SUBSYS);
	for (int k = 0, j = arr + 1; k < w->t[arr].size; k++, j = skip(w, j)) {
		struct nvmet_cfg_subsys *s = &cfg->subsys[cfg->nsubsys];
		snprintf(path, sizeof(path), "subsystems[%d]", k);
		if ((rc = expect_type(w, j, JSMN_OBJECT, path)))
			return rc;
		warn_unknown(w, j, path, known);
		s->cntlid_min = 1;
		s->cntlid_max = 0xffef;
		snprintf(sub, sizeof(sub), "%.120s.nqn", path);
		if ((rc = get_string(w, member(w, j, "nqn"), s->nqn, sizeof(s->nqn), sub)))
			return rc;
		if (!nqn_valid(s->nqn) || strcmp(s->nqn, NVMET_DISCOVERY_NQN) == 0)
			return fail(w, sub, "'%s' is not a usable subsystem NQN", s->nqn);
		if (nvmet_config_find_subsys(cfg, s->nqn) >= 0)
			return fail(w, sub, "subsystem '%s' defined twice", s->nqn);
		snprintf(sub, sizeof(sub), "%.120s.attr", path);
		if ((m = member(w, j, "attr")) >= 0 && (rc = parse_subsys_attr(w, m, s, sub)))
			return rc;
		if ((m = member(w, j, "allowed_hosts")) >= 0) {
			snprintf(sub, sizeof(sub), "%.120s.allowed_hosts", path);
			if ((rc = expect_type(w, m, JSMN_ARRAY, sub)))
				return rc;
			for (int h = 0, e = m + 1; h < w->t[m].size; h++, e = skip(w, e)) {
				char nqn[NVMET_NQN_MAX + 1];
				snprintf(sub, sizeof(sub), "%.120s.allowed_hosts[%d]", path, h);
				if ((rc = get_string(w, e, nqn, sizeof(nqn), sub)))
					return rc;
				unsigned idx = 0;
				while (idx < cfg->nhosts && strcmp(cfg->hosts[idx], nqn))
					idx++;
				if (idx == cfg->nhosts)
					return fail(w, sub, "host '%s' is not in the hosts list", nqn);
				if (s->nhosts == NVMET_CFG_MAX_HOSTS)
					return fail(w, sub, "too many allowed hosts");
				s->hosts[s->nhosts++] = (uint8_t)idx;
			}
		}
		if ((m = member(w, j, "namespaces")) >= 0) {
			snprintf(sub, sizeof(sub), "%.120s.namespaces", path);
			if ((rc = expect_type(w, m, JSMN_ARRAY, sub)))
				return rc;
			if (w->t[m].size > NVMET_CFG_MAX_NS)
				return fail(w, sub, "more than %d namespaces", NVMET_CFG_MAX_NS);
			for (int q = 0, e = m + 1; q < w->t[m].size; q++, e = skip(w, e)) {
				snprintf(sub, sizeof(sub), "%.120s.namespaces[%d]", path, q);
				if ((rc = parse_namespace(w, e, s, sub)))
					return rc;
			}
		}
		cfg->nsubsys++;
	}
	return 0;
}

static int parse_port_addr(struct walker *w, int addr, struct nvmet_cfg_port *p, const char *base,
			   const char *const *known)
{
	char path[PATH_MAX_LEN], s[64];
	uint64_t v;
	int rc;

	if ((rc = expect_type(w, addr, JSMN_OBJECT, base)))
		return rc;
	warn_unknown(w, addr, base, known);
	snprintf(path, sizeof(path), "%.120s.trtype", base);
	if ((rc = get_string(w, member(w, addr, "trtype"), s, sizeof(s), path)))
		return rc;
	if (strcmp(s, "tcp") == 0)
		p->trtype = NVMET_TRTYPE_TCP;
	else if (strcmp(s, "rdma") == 0)
		p->trtype = NVMET_TRTYPE_RDMA;
	else
		return fail(w, path, "transport '%s' is not supported (tcp, rdma)", s);
	snprintf(path, sizeof(path), "%.120s.adrfam", base);
	if ((rc = get_string(w, member(w, addr, "adrfam"), s, sizeof(s), path)))
		return rc;
	if (strcmp(s, "ipv4"))
		return fail(w, path, "address family '%s' is not supported (ipv4)", s);
	snprintf(path, sizeof(path), "%.120s.traddr", base);
	if ((rc = get_string(w, member(w, addr, "traddr"), s, sizeof(s), path)))
		return rc;
	if (ipv4_parse(s, &p->traddr))
		return fail(w, path, "'%s' is not an IPv4 address", s);
	snprintf(path, sizeof(path), "%.120s.trsvcid", base);
	if ((rc = get_uint(w, member(w, addr, "trsvcid"), 1, 65535, &v, path)))
		return rc;
	p->trsvcid = (uint16_t)v;
	return 0;
}

/* --- ANA groups and referrals of a port (README "ANA and failover", "Discovery referrals") --- */

static const char *const ana_state_names[] = {
	[NVMET_ANA_OPTIMIZED] = "optimized",
	[NVMET_ANA_NON_OPTIMIZED] = "non-optimized",
	[NVMET_ANA_INACCESSIBLE] = "inaccessible",
	[NVMET_ANA_PERSISTENT_LOSS] = "persistent-loss",
	[NVMET_ANA_CHANGE] = "change",
};

int nvmet_ana_state_parse(const char *name, enum nvmet_ana_state *out)
{
	for (unsigned i = 0; i < sizeof(ana_state_names) / sizeof(ana_state_names[0]); i++)
		if (ana_state_names[i] && strcmp(name, ana_state_names[i]) == 0) {
			*out = (enum nvmet_ana_state)i;
			return 0;
		}
	return -EINVAL;
}

const char *nvmet_ana_state_name(enum nvmet_ana_state s)
{
	unsigned i = (unsigned)s;
	return i < sizeof(ana_state_names) / sizeof(ana_state_names[0]) && ana_state_names[i] ? ana_state_names[i]
											: "?";
}

/* "ana_groups": [ { "grpid": 1, "ana": { "state": "optimized" } }, ... ] */
static int parse_ana_groups(struct walker *w, int arr, struct nvmet_cfg_port *p, const char *base)
{
	static const char *const known[] = { "grpid", "ana", NULL };
	static const char *const known_ana[] = { "state", NULL };
	char path[PATH_MAX_LEN], sub[PATH_MAX_LEN], state[32];
	uint64_t v;
	int rc;

	snprintf(path, sizeof(path), "%.120s.ana_groups", base);
	if ((rc = expect_type(w, arr, JSMN_ARRAY, path)))
		return rc;
	if (w->t[arr].size > NVMET_CFG_MAX_ANA_GRPS)
		return fail(w, path, "more than %d ANA groups", NVMET_CFG_MAX_ANA_GRPS);
	for (int k = 0, j = arr + 1; k < w->t[arr].size; k++, j = skip(w, j)) {
		struct nvmet_cfg_ana_grp *g = &p->ana[p->nana];
		int a;
		snprintf(path, sizeof(path), "%.120s.ana_groups[%d]", base, k);
		if ((rc = expect_type(w, j, JSMN_OBJECT, path)))
			return rc;
		warn_unknown(w, j, path, known);
		snprintf(sub, sizeof(sub), "%.130s.grpid", path);
		if ((rc = get_uint(w, member(w, j, "grpid"), 1, NVMET_ANA_GRPMAX, &v, sub)))
			return rc;
		g->grpid = (uint32_t)v;
		for (unsigned q = 0; q < p->nana; q++)
			if (p->ana[q].grpid == g->grpid)
				return fail(w, sub, "ANA group %u listed twice", g->grpid);
		snprintf(sub, sizeof(sub), "%.130s.ana", path);
		a = member(w, j, "ana");
		if ((rc = expect_type(w, a, JSMN_OBJECT, sub)))
			return rc;
		warn_unknown(w, a, sub, known_ana);
		snprintf(sub, sizeof(sub), "%.130s.ana.state", path);
		if ((rc = get_string(w, member(w, a, "state"), state, sizeof(state), sub)))
			return rc;
		if (nvmet_ana_state_parse(state, &g->state))
			return fail(w, sub, "'%s' is not an ANA state (optimized, non-optimized, inaccessible, "
				    "persistent-loss, change)", state);
		p->nana++;
	}
	return 0;
}

/* "referrals": [ { "name": "b", "enable": 1, "addr": { "trtype": "tcp", "adrfam": "ipv4",
 * "traddr": "10.0.2.16", "trsvcid": "4420", "treq": "not specified", "portid": "2" } } ] */
static int parse_referrals(struct walker *w, int arr, struct nvmet_cfg_port *p, const char *base)
{
	static const char *const known[] = { "name", "enable", "addr", NULL };
	static const char *const known_addr[] = { "trtype", "adrfam", "traddr", "trsvcid", "treq", "portid", "tsas",
						  NULL };
	char path[PATH_MAX_LEN], sub[PATH_MAX_LEN], s[32];
	uint64_t v;
	int rc, m;

	snprintf(path, sizeof(path), "%.120s.referrals", base);
	if ((rc = expect_type(w, arr, JSMN_ARRAY, path)))
		return rc;
	if (w->t[arr].size > NVMET_CFG_MAX_REFERRALS)
		return fail(w, path, "more than %d referrals", NVMET_CFG_MAX_REFERRALS);
	for (int k = 0, j = arr + 1; k < w->t[arr].size; k++, j = skip(w, j)) {
		struct nvmet_cfg_referral *r = &p->referrals[p->nreferrals];
		struct nvmet_cfg_port addr = { 0 };
		int a;
		snprintf(path, sizeof(path), "%.120s.referrals[%d]", base, k);
		if ((rc = expect_type(w, j, JSMN_OBJECT, path)))
			return rc;
		warn_unknown(w, j, path, known);
		snprintf(sub, sizeof(sub), "%.130s.name", path);
		if ((rc = get_string(w, member(w, j, "name"), r->name, sizeof(r->name), sub)))
			return rc;
		for (unsigned q = 0; q < p->nreferrals; q++)
			if (strcmp(p->referrals[q].name, r->name) == 0)
				return fail(w, sub, "referral '%s' defined twice", r->name);
		r->enable = true;
		snprintf(sub, sizeof(sub), "%.130s.enable", path);
		if ((m = member(w, j, "enable")) >= 0 && (rc = get_flag(w, m, &r->enable, sub)))
			return rc;
		snprintf(sub, sizeof(sub), "%.130s.addr", path);
		a = member(w, j, "addr");
		if ((rc = parse_port_addr(w, a, &addr, sub, known_addr)))
			return rc;
		r->trtype = addr.trtype;
		r->traddr = addr.traddr;
		r->trsvcid = addr.trsvcid;
		snprintf(sub, sizeof(sub), "%.130s.addr.portid", path);
		if ((m = member(w, a, "portid")) >= 0) {
			if ((rc = get_uint(w, m, 0, 65535, &v, sub)))
				return rc;
			r->portid = (uint16_t)v;
		}
		r->treq = 0x0; /* not specified, as nvmetcli's default and this appliance's own ports */
		snprintf(sub, sizeof(sub), "%.130s.addr.treq", path);
		if ((m = member(w, a, "treq")) >= 0) {
			if ((rc = get_string(w, m, s, sizeof(s), sub)))
				return rc;
			if (strcmp(s, "not specified") == 0)
				r->treq = 0x0;
			else if (strcmp(s, "required") == 0)
				r->treq = 0x1;
			else if (strcmp(s, "not required") != 0)
				return fail(w, sub, "'%s' is not a TREQ (not specified, required, not required)", s);
		}
		p->nreferrals++;
	}
	return 0;
}

static int parse_ports(struct walker *w, int arr)
{
	static const char *const known[] = { "portid", "addr", "subsystems", "referrals", "ana_groups", NULL };
	static const char *const known_addr[] = { "trtype", "adrfam", "traddr", "trsvcid", "treq", "tsas", NULL };
	struct nvmet_config *cfg = w->cfg;
	char path[PATH_MAX_LEN], sub[PATH_MAX_LEN];
	uint64_t v;
	int rc, m;

	if ((rc = expect_type(w, arr, JSMN_ARRAY, "ports")))
		return rc;
	if (w->t[arr].size > NVMET_CFG_MAX_PORTS)
		return fail(w, "ports", "more than %d ports", NVMET_CFG_MAX_PORTS);
	for (int k = 0, j = arr + 1; k < w->t[arr].size; k++, j = skip(w, j)) {
		struct nvmet_cfg_port *p = &cfg->ports[cfg->nports];
		snprintf(path, sizeof(path), "ports[%d]", k);
		if ((rc = expect_type(w, j, JSMN_OBJECT, path)))
			return rc;
		warn_unknown(w, j, path, known);
		snprintf(sub, sizeof(sub), "%.120s.portid", path);
		if ((rc = get_uint(w, member(w, j, "portid"), 0, 65535, &v, sub)))
			return rc;
		p->portid = (uint16_t)v;
		for (unsigned q = 0; q < cfg->nports; q++)
			if (cfg->ports[q].portid == p->portid)
				return fail(w, sub, "port %u defined twice", p->portid);
		snprintf(sub, sizeof(sub), "%.120s.addr", path);
		if ((rc = parse_port_addr(w, member(w, j, "addr"), p, sub, known_addr)))
			return rc;
		for (unsigned q = 0; q < cfg->nports; q++)
			if (cfg->ports[q].traddr == p->traddr && cfg->ports[q].trsvcid == p->trsvcid &&
			    cfg->ports[q].trtype == p->trtype)
				return fail(w, sub, "same address as port %u", cfg->ports[q].portid);
		if ((m = member(w, j, "ana_groups")) >= 0 && (rc = parse_ana_groups(w, m, p, path)))
			return rc;
		if ((m = member(w, j, "referrals")) >= 0 && (rc = parse_referrals(w, m, p, path)))
			return rc;
		if ((m = member(w, j, "subsystems")) >= 0) {
			snprintf(sub, sizeof(sub), "%.120s.subsystems", path);
			if ((rc = expect_type(w, m, JSMN_ARRAY, sub)))
				return rc;
			for (int q = 0, e = m + 1; q < w->t[m].size; q++, e = skip(w, e)) {
				char nqn[NVMET_NQN_MAX + 1];
				snprintf(sub, sizeof(sub), "%.120s.subsystems[%d]", path, q);
				if ((rc = get_string(w, e, nqn, sizeof(nqn), sub)))
					return rc;
				int idx = nvmet_config_find_subsys(cfg, nqn);
				if (idx < 0)
					return fail(w, sub, "no subsystem '%s'", nqn);
				if (p->nsubsys == NVMET_CFG_MAX_SUBSYS)
					return fail(w, sub, "too many subsystems");
				p->subsys[p->nsubsys++] = (uint8_t)idx;
			}
		}
		cfg->nports++;
	}
	return 0;
}

/* A namespace in ANA group n > 1 needs the group on some port (as Linux nvmet, which has
 * group 1 on every port and creates the others under a port). */
static int check_ana_groups(struct walker *w)
{
	const struct nvmet_config *cfg = w->cfg;
	char path[PATH_MAX_LEN];

	for (unsigned i = 0; i < cfg->nsubsys; i++)
		for (unsigned k = 0; k < cfg->subsys[i].nns; k++) {
			uint32_t g = cfg->subsys[i].ns[k].anagrpid;
			bool found = g == 1;
			for (unsigned p = 0; p < cfg->nports && !found; p++)
				for (unsigned q = 0; q < cfg->ports[p].nana; q++)
					found |= cfg->ports[p].ana[q].grpid == g;
			if (!found) {
				snprintf(path, sizeof(path), "subsystems[%u].namespaces[%u].ana_grpid", i, k);
				return fail(w, path, "ANA group %u is in no port's ana_groups", g);
			}
		}
	return 0;
}

/* Parse the whole file. */
int nvmet_config_parse(const char *json, size_t len, struct nvmet_config *cfg, char *err, size_t errlen,
		       nvmet_config_warn_fn warn_fn, void *ctx)
{
	static const char *const known[] = { "hosts", "ports", "subsystems", NULL };
	struct walker w = { .js = json, .cfg = cfg, .err = err, .errlen = errlen, .warn = warn_fn, .ctx = ctx };
	jsmn_parser parser;
	jsmntok_t *tokens;
	int rc, m;

	memset(cfg, 0, sizeof(*cfg));
	if (errlen)
		err[0] = '\0';
	tokens = malloc(NVMET_CFG_MAX_TOKENS * sizeof(*tokens));
	if (!tokens)
		return -ENOMEM;
	jsmn_init(&parser);
	w.n = jsmn_parse(&parser, json, len, tokens, NVMET_CFG_MAX_TOKENS);
	w.t = tokens;
	if (w.n == JSMN_ERROR_NOMEM) {
		rc = fail(&w, "(file)", "more than %d JSON tokens", NVMET_CFG_MAX_TOKENS);
		goto out;
	}
	if (w.n < 0) {
		rc = fail(&w, "(file)", "not valid JSON (%s at byte %u)",
			  w.n == JSMN_ERROR_PART ? "truncated" : "bad character", parser.pos);
		goto out;
	}
	if (w.n == 0 || tokens[0].type != JSMN_OBJECT) {
		rc = fail(&w, "(file)", "expected a JSON object at the top");
		goto out;
	}
	warn_unknown(&w, 0, "(top)", known);
	rc = 0;
	if ((m = member(&w, 0, "hosts")) >= 0)
		rc = parse_hosts(&w, m);
	if (!rc && (m = member(&w, 0, "subsystems")) >= 0)
		rc = parse_subsystems(&w, m);
	if (!rc && (m = member(&w, 0, "ports")) >= 0)
		rc = parse_ports(&w, m);
	if (!rc)
		rc = check_ana_groups(&w);
out:
	free(tokens);
	if (rc) {
		unsigned warnings = cfg->warnings;
		memset(cfg, 0, sizeof(*cfg));
		cfg->warnings = warnings;
	}
	return rc;
}

/* Subsystem by NQN. */
int nvmet_config_find_subsys(const struct nvmet_config *cfg, const char *nqn)
{
	for (unsigned i = 0; i < cfg->nsubsys; i++)
		if (strcmp(cfg->subsys[i].nqn, nqn) == 0)
			return (int)i;
	return -1;
}
