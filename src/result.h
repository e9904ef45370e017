/* result.h — what a finished run hands back (run.c fills it, result.c reads it). */
#ifndef SANDLOCK_RESULT_H
#define SANDLOCK_RESULT_H

#include "util.h"

struct sandlock_result {
	int reason;
	int exit_code;
	int signal;
	sl_buf out, err;
};

#endif /* SANDLOCK_RESULT_H */
