/*
 * args.c — a subcommand's options, runc style: "--name value",
 * "--name=value", "-n value", flags, anywhere among the positionals
 * (engines put them before or after the id) until exec's command.
 */
#include "cmds.h"
#include "log.h"

#include <string.h>

static const struct oci_opt *find(const struct oci_opt *opts, const char *arg, const char **val)
{
	*val = NULL;
	for (const struct oci_opt *o = opts; o && o->name; o++) {
		if (arg[1] == '-') {
			size_t len = strlen(o->name);
			if (strncmp(arg + 2, o->name, len) != 0)
				continue;
			if (arg[2 + len] == '=' && o->takes_value)
				*val = arg + 3 + len;
			else if (arg[2 + len] != '\0')
				continue;
			return o;
		}
		if (o->shortname && arg[1] == o->shortname && arg[2] == '\0')
			return o;
	}
	return NULL;
}

int oci_parse(int argc, char **argv, const struct oci_opt *opts, const char **pos, int maxpos,
              bool stop_at_second)
{
	int npos = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (stop_at_second && npos >= 1 && a[0] != '-') {
			/* exec: the command and its own arguments, verbatim */
			for (; i < argc && npos < maxpos; i++)
				pos[npos++] = argv[i];
			break;
		}
		if (strcmp(a, "--") == 0) {
			for (i++; i < argc && npos < maxpos; i++)
				pos[npos++] = argv[i];
			break;
		}
		if (a[0] != '-' || a[1] == '\0') {
			if (npos == maxpos) {
				oci_error("%s: unexpected argument '%s'", argv[0], a);
				return -1;
			}
			pos[npos++] = a;
			continue;
		}
		const char *val;
		const struct oci_opt *o = find(opts, a, &val);
		if (!o) {
			oci_error("%s: unknown option %s", argv[0], a);
			return -1;
		}
		if (!o->takes_value) {
			if (o->flag)
				*o->flag = true;
			continue;
		}
		if (!val) {
			if (i + 1 >= argc) {
				oci_error("%s: %s needs a value", argv[0], a);
				return -1;
			}
			val = argv[++i];
		}
		if (o->value)
			*o->value = val;
		if (o->list && *o->nlist < 64)
			o->list[(*o->nlist)++] = val;
	}
	for (int k = npos; k < maxpos; k++)
		pos[k] = NULL;
	return npos;
}
