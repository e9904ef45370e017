/*
 * interp.h — the interpreter of an executable file (interp.c).
 */
#ifndef SANDLOCK_INTERP_H
#define SANDLOCK_INTERP_H

#include <stddef.h>

/* The interpreter the kernel will load for the readable regular file fd:
 * a #! line's program or an ELF's PT_INTERP into out ("" for a static
 * ELF).  0, or ENOEXEC for neither. */
int sl_exec_interp(int fd, char *out, size_t cap);

#endif /* SANDLOCK_INTERP_H */
