/* fresh_state.c against the light variant: its regions are reused without a quarantine. */
#include "../system/fresh_state.c"
