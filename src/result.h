/* result.h — what a finished run hands back (run.c fills it, result.c reads it). */
#ifndef SANDLOCK_RESULT_H
#define SANDLOCK_RESULT_H

#include "util.h"

struct sandlock_result {
	int reason;
	int exit_code;
	int signal;
	sl_buf out, err;
	uint64_t out_dropped, err_dropped; /* bytes discarded past the cap */
	bool abandoned; /* handler threads were left running (run.c) */
};

#endif /* SANDLOCK_RESULT_H */
