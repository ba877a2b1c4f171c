#include "check_rules.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int pm_slurm_release(const char *v, unsigned *major, unsigned *minor)
{
	char *e;
	unsigned long a, b;

	if (!v || *v < '0' || *v > '9')
		return -1;
	a = strtoul(v, &e, 10);
	if (*e != '.' || e[1] < '0' || e[1] > '9')
		return -1;
	b = strtoul(e + 1, &e, 10);
	if ((*e && *e != '.' && *e != '-') || a > 255 || b > 255)
		return -1;
	*major = (unsigned)a;
	*minor = (unsigned)b;
	return 0;
}

/* Bounds of a table inside buf, overflow-safe. */
static bool in_buf(size_t len, uint64_t off, uint64_t size)
{
	return off <= len && size <= len - off;
}

int pm_elf_u32(const unsigned char *buf, size_t len, const char *name, uint32_t *out,
	       char *err, size_t errlen)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;
	const Elf64_Shdr *sh;
	size_t i;

	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_buf(len, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr))) {
		snprintf(err, errlen, "not a 64-bit ELF shared object");
		return -1;
	}
	sh = (const Elf64_Shdr *)(buf + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *str;
		const Elf64_Sym *sym;
		size_t n, j;

		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		str = &sh[sh[i].sh_link];
		if (!in_buf(len, sh[i].sh_offset, sh[i].sh_size) ||
		    !in_buf(len, str->sh_offset, str->sh_size))
			break;
		sym = (const Elf64_Sym *)(buf + sh[i].sh_offset);
		n = sh[i].sh_size / sizeof(Elf64_Sym);
		for (j = 0; j < n; j++) {
			const Elf64_Shdr *sec;
			uint64_t off;

			if (sym[j].st_name >= str->sh_size ||
			    strncmp((const char *)buf + str->sh_offset + sym[j].st_name, name,
				    str->sh_size - sym[j].st_name) ||
			    sym[j].st_shndx == SHN_UNDEF || sym[j].st_shndx >= eh->e_shnum)
				continue;
			sec = &sh[sym[j].st_shndx];
			off = sec->sh_offset + (sym[j].st_value - sec->sh_addr);
			if (sec->sh_type == SHT_NOBITS || sym[j].st_value < sec->sh_addr ||
			    !in_buf(len, off, sizeof(*out)))
				break;
			memcpy(out, buf + off, sizeof(*out));
			return 0;
		}
	}
	snprintf(err, errlen, "no %s in its symbols (not a Slurm plugin?)", name);
	return -1;
}

int pm_judge_release(uint32_t vernum, const char *version, const char *who,
		     char *err, size_t errlen)
{
	unsigned major, minor;

	if (pm_slurm_release(version, &major, &minor)) {
		snprintf(err, errlen, "%s reports no Slurm version I can read ('%s')", who, version);
		return -1;
	}
	if (major == ((vernum >> 16) & 255) && minor == ((vernum >> 8) & 255))
		return 0;
	snprintf(err, errlen,
		 "%s runs Slurm %s, the plugin is built for %u.%02u: Slurm loads a plugin only "
		 "into the release it was built for (\"Incompatible Slurm plugin\"); rebuild "
		 "procmgr against Slurm %u.%02u (see Upgrading Slurm in the admin guide)",
		 who, version, (vernum >> 16) & 255, (vernum >> 8) & 255, major, minor);
	return -1;
}

bool pm_mpiparams_ports(const char *p)
{
	/* "ports=12000-12999", possibly among other comma-separated items. */
	while (p && *p) {
		if (!strncasecmp(p, "ports=", 6) && p[6] >= '0' && p[6] <= '9')
			return true;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

/* "root(0)" or "root" -> "root". */
static void user_name(const char *s, char *buf, size_t len)
{
	size_t n = strcspn(s ? s : "", "(");

	snprintf(buf, len, "%.*s", (int)n, s ? s : "");
}

int pm_judge_drain(const char *slurmd_user, const char *slurm_user, char *err, size_t errlen)
{
	char d[64], u[64];

	user_name(slurmd_user && *slurmd_user ? slurmd_user : "root", d, sizeof(d));
	user_name(slurm_user && *slurm_user ? slurm_user : "root", u, sizeof(u));
	if (!strcmp(d, "root") || !strcmp(d, u))
		return 0;
	snprintf(err, errlen,
		 "drain=yes, but slurmd runs as %s (SlurmdUser), neither root nor SlurmUser (%s): "
		 "slurmctld would refuse its drain requests", d, u);
	return -1;
}
