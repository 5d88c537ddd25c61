#include "opts.h"
#include "die.h"
#include "sbx-commit.h" /* SBX_COMMIT, written by the Makefile */

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sbx_opt_version(int argc, char **argv)
{
	char line[256];
	int n;

	if (argc < 2 || strcmp(argv[1], "--version"))
		return;
	n = snprintf(line, sizeof line, "%s %s (commit %s)\n", sbx_prog(), SBX_VERSION, SBX_COMMIT);
	if (n > 0 && write(1, line, (size_t)n) != n)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write the version");
	exit(0);
}

/* The column where text's first option line ("  --opt ARG   what")
 * starts its description, so that --help and --version line up with it. */
static int desc_col(const char *text)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *gap;

		if (strncmp(l, "  -", 3))
			continue;
		gap = strstr(l + 2, "  ");
		if (gap && gap < strchrnul(l, '\n')) {
			gap += strspn(gap, " ");
			return (int)(gap - l);
		}
	}
	return 25;
}

_Noreturn void sbx_opt_help(const char *text)
{
	int col = desc_col(text) - 2;
	char *all = sbx_needf("%s\n"
			      "  %-*sprint this help and exit\n"
			      "  %-*sprint the version and exit (as the only option)\n"
			      "\n"
			      "Full reference: man %s\n", text, col, "--help", col, "--version", sbx_prog());
	size_t len = strlen(all), off = 0;

	while (off < len) {
		ssize_t w = write(1, all + off, len - off);

		if (w >= 0) {
			off += (size_t)w;
		} else if (errno == EAGAIN) {
			/* A non-blocking stdout that is full: wait until it
			 * takes more. */
			struct pollfd p = { .fd = 1, .events = POLLOUT };
			if (poll(&p, 1, -1) < 0 && errno != EINTR)
				break;
		} else if (errno != EINTR) {
			break;
		}
	}
	if (off < len)
		sbx_die_errno(SBX_EXIT_SYS, "unable to write the help to stdout");
	exit(SBX_EXIT_OK);
}

void sbx_opt_init(struct sbx_optstate *st, int first)
{
	memset(st, 0, sizeof *st);
	st->ind = first;
}

static const struct sbx_opt *lookup(const struct sbx_opt *tab,
				    const char *name, size_t len, size_t *idx)
{
	for (size_t i = 0; tab[i].name; i++) {
		if (strlen(tab[i].name) == len && !memcmp(tab[i].name, name, len)) {
			*idx = i;
			return &tab[i];
		}
	}
	return NULL;
}

int sbx_opt_next(struct sbx_optstate *st, const struct sbx_opt *tab,
		 int argc, char **argv, const char **arg)
{
	const char *a, *name, *eq;
	const struct sbx_opt *o;
	size_t len, idx = 0;

	*arg = NULL;
	if (st->ind >= argc)
		return 0;
	a = argv[st->ind];
	if (!strcmp(a, "--")) {
		st->ind++;
		return 0;
	}
	if (a[0] != '-' || a[1] == '\0')
		return 0;
	if (a[1] != '-')
		sbx_die_usage("unknown option %s (options are long: --name)", a);
	name = a + 2;
	eq = strchr(name, '=');
	len = eq ? (size_t)(eq - name) : strlen(name);
	o = lookup(tab, name, len, &idx);
	if (!o)
		sbx_die_usage("unknown option --%.*s", (int)len, name);
	if (idx >= sizeof st->seen)
		sbx_die_usage("option table too large");
	if (st->seen[idx] && o->rep == SBX_ONCE)
		sbx_die_usage("--%s given twice", o->name);
	if (st->seen[idx] < 255)
		st->seen[idx]++;
	st->ind++;
	if (o->arg == SBX_NOARG) {
		if (eq)
			sbx_die_usage("--%s takes no value", o->name);
		return o->id;
	}
	if (eq) {
		*arg = eq + 1;
	} else {
		if (st->ind >= argc)
			sbx_die_usage("--%s needs a value", o->name);
		*arg = argv[st->ind++];
	}
	return o->id;
}
