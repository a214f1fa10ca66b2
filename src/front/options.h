/*
 * options.h — run-time options from RAMPART_OPTIONS.
 *
 * Grammar: entries separated by ',' or ':'; each entry is key=value; spaces and tabs
 * around keys and values are ignored; empty entries are skipped; a later entry
 * overrides an earlier one. An unknown key, a missing '=' or a bad value is reported
 * on stderr (naming the key or the value) and the entry is ignored.
 *
 * The bare word `passthrough` is accepted as passthrough=1 (the policy file's idiom,
 * src/front/policy.h). The same grammar serves RAMPART_OPTIONS and the lines of the policy
 * file; messages name their source ("RAMPART_OPTIONS" or "/etc/rampart.conf:12").
 *
 * The options themselves, their defaults and their documentation: base/option_table.h.
 *
 * Invariants: read once, when the library is loaded or by the first call if that
 * comes first (src/front/init.c), and never again; the environment is
 * ignored entirely for set-user-ID and other AT_SECURE programs, whose environment an
 * attacker controls (src/front/policy.c combines file and environment). Nothing here
 * allocates.
 */
#ifndef RAMPART_OPTIONS_H
#define RAMPART_OPTIONS_H

#include "base/option_table.h"
#include "base/text.h"

/* Parse text (may be NULL) into o, starting from the defaults; bad entries are
 * reported on stderr and ignored. */
void options_parse(struct options *o, const char *text);
/* Apply the len bytes at text (no terminator needed) on top of o; bad entries are
 * reported on stderr as "<source>: ..." and ignored. */
void options_apply(struct options *o, const char *text, size_t len, const char *source);
/* RAMPART_OPTIONS alone, on top of the defaults, unless AT_SECURE; help=1 prints the
 * list. (The process's options come from policy_read, which adds the policy file.) */
void options_read(struct options *o);
/* "profile NAME (SOURCE: key=value, ...)": the profile in effect, where it was chosen
 * and the values of the options a profile sets, as they are now (an option given after
 * the profile may have changed one). */
void options_say_profile(struct out *w, const struct options *o);
/* "key=value, ..." for every option of the table, in its order, but those a profile sets
 * (options_say_profile says them) and those named in elsewhere (NULL-terminated: said
 * another way on the same line), as the table spells their values. An option added to
 * the table is said without a word here. */
void options_say_rest(struct out *w, const struct options *o, const char *const *elsewhere);
/* The value of option name in o as a number (a word option: its place in its list of
 * words, as OPTION_VALUES_ gives them); -1 for an unknown name or a PATH option. */
int options_value(const struct options *o, const char *name, unsigned long *value);
/* The list of options, on stderr (RAMPART_OPTIONS=help=1). */
void options_help(void);

#endif
