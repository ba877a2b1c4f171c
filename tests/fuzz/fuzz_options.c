/* Options as they travel (pm_opts_parse_str) and the site's arguments
 * (pm_site_parse, split on spaces): what parses formats back to a text
 * that parses to the same, and resolves without crashing. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), err[PM_ERRLEN], buf[8192], buf2[8192];
	char *argv[64], *save = NULL, *tok;
	struct pm_opts o, o2, out;
	struct pm_site site;
	int argc = 0;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	pm_opts_init(&o);
	if (pm_opts_parse_str(&o, s, "fuzz", err, sizeof(err)) == 0 &&
	    pm_opts_format(&o, buf, sizeof(buf)) == 0) {
		pm_opts_init(&o2);
		assert(pm_opts_parse_str(&o2, buf, "fuzz", err, sizeof(err)) == 0);
		assert(pm_opts_format(&o2, buf2, sizeof(buf2)) == 0);
		assert(!strcmp(buf, buf2));
		pm_site_init(&site);
		(void)pm_opts_resolve(&out, &site, NULL, &o, err, sizeof(err));
	}
	for (tok = strtok_r(s, " ", &save); tok && argc < 64; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	pm_site_init(&site);
	if (pm_site_parse(&site, argc, argv, "fuzz.conf", err, sizeof(err)) == 0)
		(void)pm_opts_resolve(&out, &site, NULL, &site.defaults, err, sizeof(err));
	free(s);
	return 0;
}
