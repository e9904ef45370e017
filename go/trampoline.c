/* The C side of Go handlers: libsandlock calls sandlock_go_trampoline,
 * which enters the Go function exported by handler.go with the handler's
 * ud (a C cell holding a cgo.Handle). */
#include <stdint.h>
#include <stdlib.h>

#include "_cgo_export.h"

int32_t sandlock_go_trampoline(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                               sandlock_action_t *out)
{
	return goSandlockHandle(ud, (sandlock_notif_t *)n, m, out);
}

void sandlock_go_release(void *ud)
{
	goSandlockRelease(ud);
	free(ud);
}
