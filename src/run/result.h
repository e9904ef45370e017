/* result.h — what a finished run hands back (run.c fills it, result.c reads it). */
#ifndef SANDLOCK_RESULT_H
#define SANDLOCK_RESULT_H

#include "cow/cow.h"
#include "util.h"

struct sandlock_result {
	int reason;
	int exit_code;
	int signal;
	sl_buf out, err;
	uint64_t out_dropped, err_dropped; /* bytes discarded past the cap */
	bool abandoned; /* handler threads were left running (run.c) */
	struct sl_changes changes, conflicts; /* COW workdir (builtins/cow/) */
	char *cow_kept;  /* upper layer left in place, or NULL */
	char *cow_error; /* why the COW end failed, or NULL */
	char *error;     /* why the command could not run ("cannot execute P: EACCES"), or NULL */
	char *denied, *denied_path; /* the first access Landlock refused (auditlog.c), or NULL */
};

#endif /* SANDLOCK_RESULT_H */
