// common.c: the one definition common.h's error path needs: the hook CHECK calls before exit(1).
#include "common.h"

void (*check_fail_hook)(void) = NULL;
