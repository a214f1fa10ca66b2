#include "../system/realloc_vmas.c"
