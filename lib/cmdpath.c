/* The command search path: see cmdpath.h. */
#include "cmdpath.h"
#include "die.h"
#include "exitcodes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *sbx_path_shape(const char *p, size_t len)
{
	size_t i = 0;

	if (!len)
		return "empty";
	if (p[0] != '/')
		return "not absolute";
	while (i < len) {
		size_t j;
		while (i < len && p[i] == '/')
			i++;
		j = i;
		while (j < len && p[j] != '/')
			j++;
		if (j - i == 1 && p[i] == '.')
			return "'.' component";
		if (j - i == 2 && p[i] == '.' && p[i + 1] == '.')
			return "'..' component";
		i = j;
	}
	return NULL;
}

const char *sbx_cmdpath_check(const char *dirs, char *why, size_t n)
{
	const char *p = dirs, *end;
	char entry[4096];
	struct stat st;
	unsigned k = 0;

	if (strlen(dirs) > SBX_CMDPATH_MAX) {
		snprintf(why, n, "longer than %d bytes", SBX_CMDPATH_MAX);
		return why;
	}
	for (;;) {
		size_t len;
		const char *bad;

		k++;
		end = p + strcspn(p, ":");
		len = (size_t)(end - p);
		if (!len) {
			snprintf(why, n, "empty entry %u", k);
			return why;
		}
		if (len >= sizeof entry) {
			snprintf(why, n, "entry %u: longer than %zu bytes", k, sizeof entry - 1);
			return why;
		}
		memcpy(entry, p, len);
		entry[len] = '\0';
		bad = sbx_path_shape(entry, len);
		if (bad) {
			snprintf(why, n, "entry '%s': %s", entry, bad);
			return why;
		}
		/* stat follows symlinks: /bin -> usr/bin is a directory. */
		if (stat(entry, &st) < 0) {
			snprintf(why, n, "entry '%s': %s", entry, strerror(errno));
			return why;
		}
		if (!S_ISDIR(st.st_mode)) {
			snprintf(why, n, "entry '%s': not a directory", entry);
			return why;
		}
		if (!*end)
			return NULL;
		p = end + 1;
	}
}

const char *sbx_opt_cmdpath(const char *opt, const char *dirs)
{
	char why[4200];

	/* A long list is cut in the message so the reason still fits. */
	if (sbx_cmdpath_check(dirs, why, sizeof why))
		sbx_die_usage("%s: invalid path list '%.256s%s': %.1024s", opt, dirs,
			      strlen(dirs) > 256 ? "..." : "", why);
	return dirs;
}

