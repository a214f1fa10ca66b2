#include "../system/vma_budget.c"
