/*
 * slab_class.c — the slab's shared state outside the roots and the metadata: which
 * arenas are open and which classes are set up (slab_class.h). Set by slab_setup.c,
 * read by decoding and by every sweep over the classes.
 */
#include "slab/slab_class.h"

_Atomic uint32_t slab_open_arenas;
_Atomic uint64_t slab_set_up_classes[CONFIG_SLAB_ARENAS];
