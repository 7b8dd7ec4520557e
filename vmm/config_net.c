/* SPDX-License-Identifier: MIT */
/*
 * config_net.c - tracevisor.conf's network and export keys (docs/CONFIG.md,
 * "Network"; docs/NET.md): the NIC, addresses, the receiver, the boot-time
 * self-test and bench, the control key and the machine name.  Pure.
 */
#include "vmm/config.h"
#include "vmm/config_keys.h"

#include <stdio.h>
#include <string.h>

/* Hex digits at *p (at most max), value in *out; returns how many. */
static int parse_hex_digits(const char **p, int max, uint32_t *out)
{
	int n = 0;

	*out = 0;
	for (; n < max; n++, (*p)++) {
		char c = **p;
		uint32_t d;

		if (c >= '0' && c <= '9')
			d = (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (uint32_t)(c - 'A' + 10);
		else
			break;
		*out = *out << 4 | d;
	}
	return n;
}

/* a.b.c.d (decimal, each 0..255) at *p; advances *p past it. */
static int parse_ipv4(const char **p, uint32_t *out)
{
	uint32_t ip = 0;

	for (int i = 0; i < 4; i++) {
		uint32_t v = 0;
		int digits = 0;

		if (i && *(*p)++ != '.')
			return -1;
		while (**p >= '0' && **p <= '9' && digits < 3) {
			v = v * 10 + (uint32_t)(*(*p)++ - '0');
			digits++;
		}
		if (!digits || v > 255 || (**p >= '0' && **p <= '9'))
			return -1;
		ip = ip << 8 | v;
	}
	*out = ip;
	return 0;
}

int config_key_nic(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	const char *p = val;
	uint32_t v[6];
	int colons = 0;

	if (!strcmp(val, "auto") || !strcmp(val, "off")) {
		cfg->nic = val[0] == 'a' ? CONFIG_NIC_AUTO : CONFIG_NIC_OFF;
		return 0;
	}
	for (const char *c = val; *c; c++)
		colons += *c == ':';
	if (colons == 5) {
		for (int i = 0; i < 6; i++) {
			if ((i && *p++ != ':') || parse_hex_digits(&p, 2, &v[i]) != 2)
				goto bad;
		}
		if (*p || (v[0] & 1))
			goto bad;
		for (int i = 0; i < 6; i++)
			cfg->nic_mac[i] = (uint8_t)v[i];
		cfg->nic = CONFIG_NIC_MAC;
		return 0;
	}
	/* [0000:]BB:DD.F as lspci writes it: hex bus and device, function 0..7. */
	if (colons == 2) {
		if (parse_hex_digits(&p, 4, &v[0]) != 4 || v[0] != 0 || *p++ != ':')
			goto bad;
	} else if (colons != 1) {
		goto bad;
	}
	if (parse_hex_digits(&p, 2, &v[0]) != 2 || *p++ != ':' ||
	    parse_hex_digits(&p, 2, &v[1]) != 2 || v[1] > 0x1f || *p++ != '.' ||
	    *p < '0' || *p > '7' || p[1])
		goto bad;
	cfg->nic_pci[0] = (uint8_t)v[0];
	cfg->nic_pci[1] = (uint8_t)v[1];
	cfg->nic_pci[2] = (uint8_t)(*p - '0');
	cfg->nic = CONFIG_NIC_PCI;
	return 0;
bad:
	snprintf(err, errlen, "nic must be auto, off, a PCI address BB:DD.F or a unicast MAC xx:xx:xx:xx:xx:xx");
	return -1;
}

int config_key_net_ip(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	const char *p = val;
	uint32_t ip, prefix = 0;
	int digits = 0;

	if (!strcmp(val, "dhcp")) {
		cfg->net_dhcp = true;
		return 0;
	}
	if (parse_ipv4(&p, &ip) || *p++ != '/')
		goto bad;
	while (*p >= '0' && *p <= '9' && digits < 2) {
		prefix = prefix * 10 + (uint32_t)(*p++ - '0');
		digits++;
	}
	if (!digits || *p || prefix < 1 || prefix > 32 || ip == 0)
		goto bad;
	cfg->net_dhcp = false;
	cfg->net_ip = ip;
	cfg->net_prefix = (uint8_t)prefix;
	return 0;
bad:
	snprintf(err, errlen, "net_ip must be dhcp or A.B.C.D/prefix (prefix 1..32)");
	return -1;
}

int config_key_net_gw(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	const char *p = val;
	uint32_t ip;

	if (!strcmp(val, "none")) {
		cfg->net_gw = 0;
		return 0;
	}
	if (parse_ipv4(&p, &ip) || *p || ip == 0) {
		snprintf(err, errlen, "net_gw must be none or A.B.C.D");
		return -1;
	}
	cfg->net_gw = ip;
	return 0;
}

int config_key_receiver(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	const char *p = val;
	uint32_t ip;
	uint64_t port;

	if (parse_ipv4(&p, &ip) || ip == 0 || *p++ != ':' || config_parse_u64(p, &port) ||
	    port == 0 || port > 65535 || (p[0] == '0' && p[1] == 'x')) {
		snprintf(err, errlen, "receiver must be A.B.C.D:PORT (port 1..65535)");
		return -1;
	}
	cfg->receiver_ip = ip;
	cfg->receiver_port = (uint16_t)port;
	cfg->receiver_set = true;
	return 0;
}

int config_key_net_selftest(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t n;

	if (!strcmp(val, "off")) {
		cfg->net_selftest = 0;
		return 0;
	}
	if (config_parse_u64(val, &n) || n > CONFIG_NET_SELFTEST_MAX) {
		snprintf(err, errlen, "net_selftest must be off or a record count 0..%u",
			 CONFIG_NET_SELFTEST_MAX);
		return -1;
	}
	cfg->net_selftest = (uint32_t)n;
	return 0;
}

int config_key_net_bench(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t n;

	if (!strcmp(val, "off")) {
		cfg->net_bench = 0;
		return 0;
	}
	if (config_parse_u64(val, &n) || n > CONFIG_NET_BENCH_MAX) {
		snprintf(err, errlen, "net_bench must be off or a frame count 0..%u",
			 CONFIG_NET_BENCH_MAX);
		return -1;
	}
	cfg->net_bench = (uint32_t)n;
	return 0;
}

static int hex_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* HEX: 2..128 hex digits, an even number (1..64 bytes), into key; its length or 0. */
static size_t parse_hex_key(const char *val, uint8_t key[CONFIG_CONTROL_KEY_MAX])
{
	size_t n = strlen(val);

	if (n < 2 || n % 2 || n > 2 * CONFIG_CONTROL_KEY_MAX)
		return 0;
	for (size_t i = 0; i < n; i += 2) {
		int hi = hex_nibble(val[i]), lo = hex_nibble(val[i + 1]);

		if (hi < 0 || lo < 0)
			return 0;
		key[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	return n / 2;
}

/* control_key = HEX: 2..128 hex digits, an even number (1..64 bytes). */
int config_key_control_key(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint8_t key[CONFIG_CONTROL_KEY_MAX];
	size_t n;

	if (!strcmp(val, "none")) {
		memset(cfg->control_key, 0, sizeof(cfg->control_key));
		cfg->control_key_len = 0;
		return 0;
	}
	n = parse_hex_key(val, key);
	if (!n) {
		snprintf(err, errlen, "control_key must be none or 2..%d hex digits (1..%d bytes, an even count)",
			 2 * CONFIG_CONTROL_KEY_MAX, CONFIG_CONTROL_KEY_MAX);
		return -1;
	}
	memset(cfg->control_key, 0, sizeof(cfg->control_key));
	memcpy(cfg->control_key, key, n);
	cfg->control_key_len = (uint8_t)n;
	return 0;
}

/*
 * data_key = none | control | HEX: the pre-shared key of the sealed data
 * path (docs/PROTOCOL.md, "With a key"); control: the control key's.
 */
int config_key_data_key(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint8_t key[CONFIG_CONTROL_KEY_MAX] = { 0 };
	size_t n = 0;

	if (strcmp(val, "none") && strcmp(val, "control")) {
		n = parse_hex_key(val, key);
		if (!n) {
			snprintf(err, errlen, "data_key must be none, control or 2..%d hex digits (1..%d bytes, an even count)",
				 2 * CONFIG_CONTROL_KEY_MAX, CONFIG_CONTROL_KEY_MAX);
			return -1;
		}
	}
	memset(cfg->data_key, 0, sizeof(cfg->data_key));
	memcpy(cfg->data_key, key, n);
	cfg->data_key_len = (uint8_t)n;
	cfg->data_key_control = !strcmp(val, "control");
	return 0;
}

size_t config_data_key(const struct tv_config *cfg, const uint8_t **key)
{
	if (cfg->data_key_control) {
		*key = cfg->control_key;
		return cfg->control_key_len;
	}
	*key = cfg->data_key;
	return cfg->data_key_len;
}

/* machine = NAME: letters, digits, '-', '_', '.', 1..63 characters. */
int config_key_machine(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	size_t n = strlen(val);

	if (n == 0 || n >= CONFIG_MACHINE_MAX)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		char c = val[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			goto bad;
	}
	memcpy(cfg->machine, val, n + 1);
	return 0;
bad:
	snprintf(err, errlen, "machine must be 1..%d characters of A-Z a-z 0-9 - _ .",
		 CONFIG_MACHINE_MAX - 1);
	return -1;
}

void config_log_net(const struct tv_config *cfg)
{
	char ip[24] = "dhcp";

	if (!cfg->net_dhcp)
		snprintf(ip, sizeof(ip), "%u.%u.%u.%u/%u", cfg->net_ip >> 24,
			 (cfg->net_ip >> 16) & 255, (cfg->net_ip >> 8) & 255,
			 cfg->net_ip & 255, cfg->net_prefix);
	log_info("config: nic=%s net_ip=%s net_gw=%u.%u.%u.%u receiver=%u.%u.%u.%u:%u net_selftest=%u net_bench=%u",
		 cfg->nic == CONFIG_NIC_AUTO ? "auto" : cfg->nic == CONFIG_NIC_OFF ? "off" :
		 cfg->nic == CONFIG_NIC_PCI ? "pci" : "mac", ip,
		 cfg->net_gw >> 24, (cfg->net_gw >> 16) & 255, (cfg->net_gw >> 8) & 255,
		 cfg->net_gw & 255,
		 cfg->receiver_ip >> 24, (cfg->receiver_ip >> 16) & 255,
		 (cfg->receiver_ip >> 8) & 255, cfg->receiver_ip & 255, cfg->receiver_port,
		 cfg->net_selftest, cfg->net_bench);
	/* The key itself never goes to the log (the log travels with the trace). */
	log_info("config: machine=%s control_key=%s data_key=%s", cfg->machine,
		 cfg->control_key_len ? "set" : "none",
		 cfg->data_key_control ? (cfg->control_key_len ? "control" : "control (none set)") :
		 cfg->data_key_len ? "set" : "none");
}
