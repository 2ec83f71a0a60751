// util/common.c: the one definition util/common.h's error path needs: the hook CHECK calls before exit(1).
#include "util/common.h"

void (*check_fail_hook)(void) = NULL;
