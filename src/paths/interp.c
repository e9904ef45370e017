/*
 * interp.c — the interpreter the kernel loads for an executable file: a
 * #! line's program or an ELF's PT_INTERP.  A leaf: the exec rewrites
 * (execpath.c) and the chroot view (chroot.c, which must find the
 * interpreter inside the guest's tree) both ask it.
 */
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "paths/interp.h"

static int elf_interp(int fd, const char *head, size_t len, char *out, size_t cap)
{
	Elf64_Ehdr eh;
	if (len < sizeof eh || memcmp(head, ELFMAG, SELFMAG) != 0)
		return ENOEXEC;
	memcpy(&eh, head, sizeof eh);
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
		return ENOEXEC;
	for (unsigned i = 0; i < eh.e_phnum && i < 64; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != sizeof ph)
			return ENOEXEC;
		if (ph.p_type != PT_INTERP)
			continue;
		if (!ph.p_filesz || ph.p_filesz >= cap)
			return ENOEXEC;
		if (pread(fd, out, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
			return ENOEXEC;
		out[ph.p_filesz] = '\0';
		return 0;
	}
	return 0;
}

int sl_exec_interp(int fd, char *out, size_t cap)
{
	char buf[256];
	out[0] = '\0';
	ssize_t len = pread(fd, buf, sizeof buf - 1, 0);
	if (len < 0)
		return errno;
	buf[len] = '\0';
	if (len >= 2 && buf[0] == '#' && buf[1] == '!') {
		char *p = buf + 2;
		while (*p == ' ' || *p == '\t')
			p++;
		size_t k = strcspn(p, " \t\n");
		if (!k || k >= cap || p[k] == '\0')
			return ENOEXEC;
		memcpy(out, p, k);
		out[k] = '\0';
		return 0;
	}
	return elf_interp(fd, buf, (size_t)len, out, cap);
}
