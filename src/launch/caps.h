/* caps.h — dropping every capability in the sandboxed child. */
#ifndef SANDLOCK_CAPS_H
#define SANDLOCK_CAPS_H

/* Child side, after NO_NEW_PRIVS: empty the bounding, ambient, effective,
 * permitted and inheritable capability sets.  Raw syscalls only.  0 or
 * -errno.  (Without CAP_SETPCAP the bounding set is left as is.) */
int sl_caps_drop(void);

/*
 * Supervisor side, for calls performed on a sandboxed process's behalf:
 * clear this thread's *effective* capabilities (capset is per thread; the
 * permitted set is kept so sl_caps_restore can bring them back), so the
 * kernel applies the permission checks it would apply to the process,
 * which has none.  0 or -1 (then nothing changed: fail closed).
 */
#include <linux/capability.h>
#include <stdbool.h>
struct sl_caps_saved {
	struct __user_cap_header_struct h;
	struct __user_cap_data_struct d[2];
	bool lowered;
};
int sl_caps_lower(struct sl_caps_saved *sv);
void sl_caps_restore(struct sl_caps_saved *sv);

#endif /* SANDLOCK_CAPS_H */
