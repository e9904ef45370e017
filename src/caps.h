/* caps.h — dropping every capability in the sandboxed child. */
#ifndef SANDLOCK_CAPS_H
#define SANDLOCK_CAPS_H

/* Child side, after NO_NEW_PRIVS: empty the bounding, ambient, effective,
 * permitted and inheritable capability sets.  Raw syscalls only.  0 or
 * -errno.  (Without CAP_SETPCAP the bounding set is left as is.) */
int sl_caps_drop(void);

#endif /* SANDLOCK_CAPS_H */
