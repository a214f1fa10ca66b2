/* test_options.c — RAMPART_OPTIONS parsing, and that AT_SECURE programs ignore it. */
#define _GNU_SOURCE
#include <check.h>

#include "../check_main.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "front/options.h"

/* Parse text with stderr captured into warn; returns the options. */
static struct options parse_all(const char *text, char *warn, size_t cap)
{
	int pfd[2];
	ck_assert_int_eq(pipe(pfd), 0);
	int saved = dup(STDERR_FILENO);
	dup2(pfd[1], STDERR_FILENO);
	close(pfd[1]);
	struct options o;
	memset(&o, 0xff, sizeof o);
	options_parse(&o, text);
	dup2(saved, STDERR_FILENO);
	close(saved);
	ssize_t n = read(pfd[0], warn, cap - 1);
	warn[n > 0 ? n : 0] = 0;
	close(pfd[0]);
	return o;
}

static enum guard_backend parse(const char *text, char *warn, size_t cap) { return parse_all(text, warn, cap).guard; }

START_TEST(test_parse)
{
	static const struct {
		const char *text;
		enum guard_backend want;
		bool warns;
	} cases[] = {
		{NULL, GUARD_AUTO, false},
		{"", GUARD_AUTO, false},
		{"guard=auto", GUARD_AUTO, false},
		{"guard=madvise", GUARD_MADVISE, false},
		{"guard=mprotect", GUARD_MPROTECT, false},
		{"guard=mprotect,guard=madvise", GUARD_MADVISE, false}, /* the last one wins */
		{"guard=madvise,", GUARD_MADVISE, false},
		{",guard=mprotect", GUARD_MPROTECT, false},
		{",,", GUARD_AUTO, false},
		{"guard=bogus", GUARD_AUTO, true},
		{"guard=madvisex", GUARD_AUTO, true},
		{"guard=", GUARD_AUTO, true},
		{"guard", GUARD_AUTO, true},
		{"GUARD=mprotect", GUARD_AUTO, true},
		{"frobnicate=1,guard=mprotect", GUARD_MPROTECT, true},
		{"guard=mprotect,frobnicate", GUARD_MPROTECT, true},
		{"guard=mprotect x", GUARD_AUTO, true},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char warn[512];
		enum guard_backend g = parse(cases[i].text, warn, sizeof warn);
		ck_assert_msg(g == cases[i].want, "'%s': got %d, want %d", cases[i].text, g, cases[i].want);
		ck_assert_msg(!!strstr(warn, "rampart: warning:") == cases[i].warns, "'%s': stderr '%s'",
			      cases[i].text, warn);
	}
}
END_TEST

START_TEST(test_parse_check_at_exit)
{
	static const struct {
		const char *text;
		bool want;
		enum guard_backend guard;
		bool warns;
	} cases[] = {
		{NULL, false, GUARD_AUTO, false},
		{"check_at_exit=1", true, GUARD_AUTO, false},
		{"check_at_exit=0", false, GUARD_AUTO, false},
		{"check_at_exit=1,check_at_exit=0", false, GUARD_AUTO, false},
		{"guard=mprotect,check_at_exit=1", true, GUARD_MPROTECT, false},
		{"check_at_exit=1,guard=madvise", true, GUARD_MADVISE, false},
		{"check_at_exit=1,frobnicate=2,guard=mprotect", true, GUARD_MPROTECT, true},
		{"check_at_exit=yes", false, GUARD_AUTO, true},
		{"check_at_exit=2", false, GUARD_AUTO, true},
		{"check_at_exit=", false, GUARD_AUTO, true},
		{"check_at_exit", false, GUARD_AUTO, true},
		{"check_at_exit=1,check_at_exit=x", true, GUARD_AUTO, true}, /* a bad entry changes nothing */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char warn[512];
		struct options o = parse_all(cases[i].text, warn, sizeof warn);
		/* A build without canaries refuses check_at_exit=1, with a warning. */
		bool refused = !CONFIG_SLOT_CANARY && cases[i].text && strstr(cases[i].text, "check_at_exit=1");
		ck_assert_msg(o.check_at_exit == (cases[i].want && CONFIG_SLOT_CANARY), "'%s': check_at_exit %d",
			      cases[i].text, o.check_at_exit);
		ck_assert_msg(o.guard == cases[i].guard, "'%s': guard %d", cases[i].text, o.guard);
		ck_assert_msg(!!strstr(warn, "rampart: warning:") == (cases[i].warns || refused), "'%s': stderr '%s'",
			      cases[i].text, warn);
		if (refused)
			ck_assert_msg(strstr(warn, "bad value '1' for check_at_exit: this build has no slot canaries"),
				      "'%s': stderr '%s'", cases[i].text, warn);
	}
	/* A warning names the bad key alone, not the entries after it. */
	char warn[512];
	parse_all("bogus=1,guard=mprotect", warn, sizeof warn);
	ck_assert_msg(strstr(warn, "unknown key 'bogus'") && !strstr(warn, "guard=mprotect"), "stderr '%s'", warn);
}
END_TEST

/* The grammar: ',' or ':' between entries, spaces and tabs trimmed around keys and
 * values, empty entries skipped, the last entry wins. */
START_TEST(test_grammar)
{
	static const struct {
		const char *text;
		enum guard_backend guard;
		bool check;
		bool warns;
	} cases[] = {
		{"guard=mprotect:verbose=1", GUARD_MPROTECT, true, false},
		{" guard = mprotect , verbose = 1 ", GUARD_MPROTECT, true, false},
		{"\tguard=madvise\t:\tverbose=1", GUARD_MADVISE, true, false},
		{"guard=mprotect::,:verbose=1", GUARD_MPROTECT, true, false},
		{" , : ", GUARD_AUTO, false, false},
		{"guard=mprotect,guard=madvise:guard=mprotect", GUARD_MPROTECT, false, false},
		{"guard=mad vise", GUARD_AUTO, false, true},
		{"gu ard=madvise", GUARD_AUTO, false, true},
		{"=madvise", GUARD_AUTO, false, true},
		{"guard==madvise", GUARD_AUTO, false, true},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char warn[512];
		struct options o = parse_all(cases[i].text, warn, sizeof warn);
		ck_assert_msg(o.guard == cases[i].guard, "'%s': guard %d", cases[i].text, o.guard);
		ck_assert_msg(o.verbose == cases[i].check, "'%s': verbose", cases[i].text);
		ck_assert_msg(!!strstr(warn, "rampart: warning:") == cases[i].warns, "'%s': stderr '%s'",
			      cases[i].text, warn);
	}
}
END_TEST

/* Field by field: padding bytes are not part of the value. */
static bool same_options(const struct options *a, const struct options *b)
{
	return a->guard == b->guard && a->check_at_exit == b->check_at_exit && a->stats == b->stats &&
	       a->verbose == b->verbose && a->help == b->help &&
	       a->large_quarantine_bytes == b->large_quarantine_bytes &&
	       a->large_quarantine_entries == b->large_quarantine_entries &&
	       a->large_cache_bytes == b->large_cache_bytes && a->large_cache_entries == b->large_cache_entries &&
	       a->large_cache_decay_ms == b->large_cache_decay_ms && a->large_refill_bytes == b->large_refill_bytes &&
	       a->arenas == b->arenas;
}

/* stats, verbose and the large-block bounds, and what the messages name. */
START_TEST(test_knobs)
{
	char warn[512];
	struct options d, o;
	options_default(&d);
	ck_assert_int_eq(d.stats, STATS_OFF);
	ck_assert(!d.verbose && !d.help);
	ck_assert_uint_eq(d.large_cache_entries, CONFIG_CACHE_ENTRIES);
	ck_assert_uint_eq(d.large_cache_bytes, CONFIG_CACHE_BYTES);
	ck_assert_uint_eq(d.large_cache_decay_ms, CONFIG_CACHE_DECAY_MS);
	ck_assert_uint_eq(d.large_quarantine_bytes, CONFIG_REGION_QUARANTINE_BYTES);
	ck_assert_uint_eq(d.large_quarantine_entries, CONFIG_REGION_QUARANTINE_FIFO);
	ck_assert_uint_eq(d.large_refill_bytes, CONFIG_LARGE_REFILL_BYTES);
	ck_assert_uint_eq(d.arenas, 0); /* one per CPU, decided by slab_init */

	o = parse_all("stats=1", warn, sizeof warn);
	ck_assert_int_eq(o.stats, STATS_TEXT);
	o = parse_all("stats=text", warn, sizeof warn);
	ck_assert_int_eq(o.stats, STATS_TEXT);
	o = parse_all("stats=json:verbose=1", warn, sizeof warn);
	ck_assert_int_eq(o.stats, STATS_JSON);
	ck_assert(o.verbose);
	ck_assert_str_eq(warn, "");
	o = parse_all("stats=json,stats=0", warn, sizeof warn);
	ck_assert_int_eq(o.stats, STATS_OFF);
	o = parse_all("stats=yaml", warn, sizeof warn);
	ck_assert_int_eq(o.stats, STATS_OFF);
	ck_assert_msg(strstr(warn, "bad value 'yaml' for stats"), "stderr '%s'", warn);
	o = parse_all("verbose=2", warn, sizeof warn);
	ck_assert(!o.verbose);
	ck_assert_msg(strstr(warn, "bad value '2' for verbose: expected 0 or 1"), "stderr '%s'", warn);

	o = parse_all("large_cache_bytes=64m,large_cache_entries=8,large_cache_decay_ms=500,"
		      "large_quarantine_bytes=1G:large_quarantine_entries=0", warn, sizeof warn);
	ck_assert_str_eq(warn, "");
	ck_assert_uint_eq(o.large_cache_bytes, (size_t)64 << 20);
	ck_assert_uint_eq(o.large_cache_entries, 8);
	ck_assert_uint_eq(o.large_cache_decay_ms, 500);
	ck_assert_uint_eq(o.large_quarantine_bytes, (size_t)1 << 30);
	ck_assert_uint_eq(o.large_quarantine_entries, 0);
	o = parse_all("large_refill_bytes=0", warn, sizeof warn);
	ck_assert_uint_eq(o.large_refill_bytes, 0);
	ck_assert(d.dealloc_kind && d.sized_free); /* both checks on by default, in either profile */
	o = parse_all("dealloc_kind=off", warn, sizeof warn);
	ck_assert_str_eq(warn, "");
	ck_assert(!o.dealloc_kind && o.sized_free);
	o = parse_all("dealloc_kind=no", warn, sizeof warn);
	ck_assert(o.dealloc_kind);
	ck_assert_msg(strstr(warn, "bad value 'no' for dealloc_kind"), "stderr '%s'", warn);
	o = parse_all("large_refill_bytes=16m", warn, sizeof warn);
	ck_assert_uint_eq(o.large_refill_bytes, (size_t)16 << 20);
	ck_assert_str_eq(warn, "");
	o = parse_all("large_refill_bytes=lots", warn, sizeof warn);
	ck_assert_uint_eq(o.large_refill_bytes, CONFIG_LARGE_REFILL_BYTES);
	ck_assert_msg(strstr(warn, "large_refill_bytes"), "stderr '%s'", warn);
	for (size_t n = 0; n <= CONFIG_SLAB_ARENAS; n++) {
		char text[32];
		snprintf(text, sizeof text, "arenas=%zu", n);
		o = parse_all(text, warn, sizeof warn);
		ck_assert_uint_eq(o.arenas, n);
		ck_assert_str_eq(warn, "");
	}
	o = parse_all("arenas=1,arenas=0", warn, sizeof warn);
	ck_assert_uint_eq(o.arenas, 0);
	o = parse_all("large_cache_bytes=4096,large_cache_entries=0", warn, sizeof warn);
	ck_assert_uint_eq(o.large_cache_bytes, 4096);
	ck_assert_uint_eq(o.large_cache_entries, 0);
	ck_assert_str_eq(warn, "");

	static const char *const bad[] = {
		"large_cache_bytes=", "large_cache_bytes=12q", "large_cache_bytes=k", "large_cache_bytes=-1",
		"large_cache_bytes=1mb", "large_cache_entries=8k", "large_cache_entries=257",
		"large_cache_bytes=99999999999999999999999", "large_cache_bytes=100000000g",
		"large_quarantine_entries=100000", "arenas=-1", "arenas=two", "arenas=2k", "arenas=999",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		o = parse_all(bad[i], warn, sizeof warn);
		ck_assert_msg(same_options(&o, &d), "'%s' changed the options", bad[i]);
		const char *v = strchr(bad[i], '=') + 1;
		char want[128];
		snprintf(want, sizeof want, "bad value '%s' for %.*s", v, (int)(v - 1 - bad[i]), bad[i]);
		ck_assert_msg(strstr(warn, want), "'%s': stderr '%s'", bad[i], warn);
	}
	o = parse_all("large_cache_entries=257", warn, sizeof warn);
	ck_assert_msg(strstr(warn, "too big (at most 256)"), "stderr '%s'", warn);
	char arenas_max[64];
	snprintf(arenas_max, sizeof arenas_max, "bad value '%d' for arenas: too big (at most %d)",
		 CONFIG_SLAB_ARENAS + 1, CONFIG_SLAB_ARENAS);
	char text[32];
	snprintf(text, sizeof text, "arenas=%d", CONFIG_SLAB_ARENAS + 1);
	o = parse_all(text, warn, sizeof warn);
	ck_assert_uint_eq(o.arenas, 0);
	ck_assert_msg(strstr(warn, arenas_max), "stderr '%s'", warn);
	o = parse_all("guard=mprotect,nokey", warn, sizeof warn);
	ck_assert_int_eq(o.guard, GUARD_MPROTECT);
	ck_assert_msg(strstr(warn, "entry 'nokey' has no '='"), "stderr '%s'", warn);
}
END_TEST

/* stats_file=PATH is copied into the options (which outlive the text they came from);
 * a path that does not fit is refused whole, never cut. */
/* A profile sets its options where it stands; an option after it overrides one of them,
 * one before it is overridden; the last profile wins; a bad name changes nothing. */
START_TEST(test_profile)
{
	char warn[512];
	struct options strong, o;
	options_default(&strong);
	ck_assert_int_eq(strong.profile, CONFIG_PROFILE_LIGHT ? PROFILE_LIGHT : PROFILE_STRONG);
	ck_assert_str_eq(options_profile_from(&strong), "default");

	o = parse_all("profile=light", warn, sizeof warn);
	ck_assert_str_eq(warn, "");
	ck_assert_int_eq(o.profile, PROFILE_LIGHT);
	ck_assert_str_eq(options_profile_from(&o), "RAMPART_OPTIONS");
	ck_assert_int_eq(o.slot_random, CONFIG_LIGHT_SLOT_RANDOM);
	ck_assert_int_eq(o.write_after_free_check, CONFIG_LIGHT_WRITE_AFTER_FREE_CHECK);
	ck_assert_uint_eq(o.slot_quarantine_bytes, CONFIG_LIGHT_SLOT_QUARANTINE_BYTES);
	ck_assert_uint_eq(o.slab_quarantine, CONFIG_LIGHT_SLAB_QUARANTINE);
	ck_assert_uint_eq(o.slab_guard_interval, CONFIG_LIGHT_GUARD_SLAB_INTERVAL);
	ck_assert_uint_eq(o.slab_guard_interval_mprotect, CONFIG_LIGHT_GUARD_SLAB_INTERVAL_MPROTECT);
	ck_assert_int_eq(o.large_quarantine, CONFIG_LIGHT_REGION_QUARANTINE);
	ck_assert_uint_eq(o.large_guard_max_pages, CONFIG_LIGHT_GUARD_MAX_PAGES);
	ck_assert_uint_eq(o.partitions, CONFIG_LIGHT_PARTITIONS);
	/* What no profile sets keeps its default. */
	ck_assert_uint_eq(o.large_cache_entries, strong.large_cache_entries);
	ck_assert_int_eq(o.sized_free, strong.sized_free);

	/* strong: the table's defaults, over a light one. */
	o = parse_all("profile=light,profile=strong", warn, sizeof warn);
	ck_assert_int_eq(o.profile, PROFILE_STRONG);
	ck_assert_int_eq(o.slot_random, CONFIG_SLOT_RANDOM);
	ck_assert_uint_eq(o.slot_quarantine_bytes, CONFIG_SLOT_QUARANTINE_BYTES);
	ck_assert_int_eq(o.write_after_free_check, CONFIG_WRITE_AFTER_FREE_CHECK && CONFIG_ZERO_ON_FREE);
	ck_assert_int_eq(o.large_quarantine, CONFIG_REGION_QUARANTINE);
	ck_assert_uint_eq(o.large_guard_max_pages, CONFIG_GUARD_MAX_PAGES);
	ck_assert_uint_eq(o.partitions, CONFIG_PARTITIONS);

	/* After the profile: the option wins; before it: the profile does. */
	o = parse_all("profile=light,slot_quarantine_bytes=64k,slot_random=on", warn, sizeof warn);
	ck_assert_str_eq(warn, "");
	ck_assert_int_eq(o.profile, PROFILE_LIGHT);
	ck_assert_uint_eq(o.slot_quarantine_bytes, 64 << 10);
	ck_assert_int_eq(o.slot_random, true);
	ck_assert_int_eq(o.large_quarantine, CONFIG_LIGHT_REGION_QUARANTINE);
	o = parse_all("slot_quarantine_bytes=64k,profile=light", warn, sizeof warn);
	ck_assert_uint_eq(o.slot_quarantine_bytes, CONFIG_LIGHT_SLOT_QUARANTINE_BYTES);

	/* Bad values: reported, nothing changed. */
	o = parse_all("profile=medium", warn, sizeof warn);
	ck_assert_msg(strstr(warn, "bad value 'medium' for profile: expected strong or light"), "%s", warn);
	ck_assert_int_eq(o.profile, strong.profile);
	ck_assert_uint_eq(o.slot_quarantine_bytes, strong.slot_quarantine_bytes);
	o = parse_all("slot_quarantine_bytes=17m", warn, sizeof warn);
	ck_assert_msg(strstr(warn, "too big"), "%s", warn);
	ck_assert_uint_eq(o.slot_quarantine_bytes, strong.slot_quarantine_bytes);
	o = parse_all("slab_quarantine=1000", warn, sizeof warn);
	ck_assert_msg(strstr(warn, "too big"), "%s", warn);
	o = parse_all("large_quarantine=maybe", warn, sizeof warn);
	ck_assert_msg(strstr(warn, "expected on or off"), "%s", warn);
	/* Partitions are a power of two up to 16; 1 is none. */
	o = parse_all("partitions=6", warn, sizeof warn);
	ck_assert_msg(strstr(warn, "bad value '6' for partitions: expected a power of two"), "%s", warn);
	ck_assert_uint_eq(o.partitions, strong.partitions);
	o = parse_all("partitions=0", warn, sizeof warn);
	ck_assert_msg(strstr(warn, "expected a power of two"), "%s", warn);
	o = parse_all("partitions=32", warn, sizeof warn);
	ck_assert_msg(strstr(warn, "too big (at most 16)"), "%s", warn);
	o = parse_all("partitions=1", warn, sizeof warn);
	ck_assert_str_eq(warn, "");
	ck_assert_uint_eq(o.partitions, 1);
	o = parse_all("partitions=8", warn, sizeof warn);
	ck_assert_uint_eq(o.partitions, 8);
	if (!CONFIG_ZERO_ON_FREE) {
		o = parse_all("write_after_free_check=on", warn, sizeof warn);
		ck_assert_msg(strstr(warn, "CONFIG_ZERO_ON_FREE=0"), "%s", warn);
		ck_assert_int_eq(o.write_after_free_check, false);
	}

	/* The line verbose=1 prints, and the values by name. */
	o = parse_all("profile=light,slot_random=on", warn, sizeof warn);
	char line[512];
	struct out w = out_string(line, sizeof line);
	options_say_profile(&w, &o);
	ck_assert_msg(!strncmp(line, "profile light (RAMPART_OPTIONS: slot_random=on, write_after_free_check=off, "
				    "slot_quarantine_bytes=0, ", 91), "%s", line);
	char tail[96];
	snprintf(tail, sizeof tail, "large_quarantine=off, large_guard_max_pages=%d, partitions=%d)",
		 (int)CONFIG_LIGHT_GUARD_MAX_PAGES, (int)CONFIG_LIGHT_PARTITIONS);
	ck_assert_msg(strstr(line, tail), "%s", line);
	unsigned long v = 99;
	ck_assert_int_eq(options_value(&o, "profile", &v), 0);
	ck_assert_uint_eq(v, PROFILE_LIGHT);
	ck_assert_int_eq(options_value(&o, "slot_random", &v), 0);
	ck_assert_uint_eq(v, 1);
	ck_assert_int_eq(options_value(&o, "large_guard_max_pages", &v), 0);
	ck_assert_uint_eq(v, CONFIG_LIGHT_GUARD_MAX_PAGES);
	ck_assert_int_eq(options_value(&o, "stats_file", &v), -1);
	ck_assert_int_eq(options_value(&o, "no_such_option", &v), -1);
	ck_assert_int_eq(options_value(&o, NULL, &v), -1);
}
END_TEST

START_TEST(test_stats_file)
{
	char warn[512], text[OPTIONS_PATH_MAX + 64];
	struct options o = parse_all("stats=json, stats_file = /var/log/app stats ,verbose=1", warn, sizeof warn);
	ck_assert_str_eq(warn, "");
	ck_assert_str_eq(o.stats_file, "/var/log/app stats");
	ck_assert(o.stats == STATS_JSON && o.verbose);
	options_default(&o);
	ck_assert_str_eq(o.stats_file, "");
	ck_assert(o.stats == STATS_OFF);

	/* stats_file alone turns the report on, as stats=1; a stats entry after it wins, an
	 * empty path asks for nothing, and a report asked for as JSON stays JSON. */
	o = parse_all("stats_file=/tmp/r", warn, sizeof warn);
	ck_assert(o.stats == STATS_TEXT);
	o = parse_all("stats_file=/tmp/r,stats=0", warn, sizeof warn);
	ck_assert(o.stats == STATS_OFF);
	o = parse_all("stats=json,stats_file=/tmp/r", warn, sizeof warn);
	ck_assert(o.stats == STATS_JSON);
	o = parse_all("stats_file=", warn, sizeof warn);
	ck_assert(o.stats == STATS_OFF);
	ck_assert_str_eq(warn, "");

	int at = snprintf(text, sizeof text, "stats_file=/tmp/ok,stats_file=/");
	memset(text + at, 'x', OPTIONS_PATH_MAX - 1); /* one byte too many with the '/' */
	text[at + OPTIONS_PATH_MAX - 1] = 0;
	o = parse_all(text, warn, sizeof warn);
	ck_assert_str_eq(o.stats_file, "/tmp/ok");
	char most[64];
	snprintf(most, sizeof most, "for stats_file: too long (at most %d)", OPTIONS_PATH_MAX - 1);
	ck_assert_msg(strstr(warn, most), "stderr '%s'", warn);
	text[at + OPTIONS_PATH_MAX - 2] = 0; /* now it fits */
	o = parse_all(text, warn, sizeof warn);
	ck_assert_str_eq(warn, "");
	ck_assert_uint_eq(strlen(o.stats_file), OPTIONS_PATH_MAX - 1);
}
END_TEST

/* help=1 lists every key, with the defaults of the bounds. */
START_TEST(test_help)
{
	int pfd[2];
	ck_assert_int_eq(pipe(pfd), 0);
	int saved = dup(STDERR_FILENO);
	dup2(pfd[1], STDERR_FILENO);
	close(pfd[1]);
	setenv("RAMPART_OPTIONS", "help=1", 1);
	struct options o;
	errno = 1234;
	options_read(&o);
	ck_assert_int_eq(errno, 1234);
	unsetenv("RAMPART_OPTIONS");
	dup2(saved, STDERR_FILENO);
	close(saved);
	char out[4096];
	ssize_t n = read(pfd[0], out, sizeof out - 1);
	out[n > 0 ? n : 0] = 0;
	close(pfd[0]);
	/* Every option of the table, by the table's own list. */
#define OPTION_KEY_EQ(key, kind, def, most, doc) "  " #key "=",
	static const char *const keys[] = {RAMPART_OPTION_TABLE(OPTION_KEY_EQ)};
#undef OPTION_KEY_EQ
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		ck_assert_msg(strstr(out, keys[i]), "help lacks %s: '%s'", keys[i], out);
	ck_assert_msg(strstr(out, "(default 256, at most 256)"), "'%s'", out);
}
END_TEST

/* Does the list "k=v, k=v" hold an entry for key? */
static bool says(const char *list, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = list; (p = strstr(p, key)); p += n)
		if ((p == list || (p - list >= 2 && !strncmp(p - 2, ", ", 2))) && p[n] == '=') return true;
	return false;
}

/* verbose=1's line: every option of the table is said with its value, but those a
 * profile sets (said with the profile) and those said in words of their own. */
START_TEST(test_say_rest)
{
	struct options o;
	options_default(&o);
	o.slab_return_ms = 4321;
	char path[] = "/tmp/rampart-say-XXXXXX", space[256], out[4096];
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	struct out w = out_fd(fd, space, sizeof space); /* smaller than the line: flushed on the way */
	static const char *const elsewhere[] = {"guard", "stats_file", NULL};
	options_say_rest(&w, &o, elsewhere);
	out_flush(&w);
	ssize_t n = pread(fd, out, sizeof out - 1, 0);
	close(fd);
	out[n > 0 ? n : 0] = 0;
#define OPTION_IS_PROFILES(key, value) #key,
	static const char *const profiles[] = {RAMPART_PROFILE_LIGHT(OPTION_IS_PROFILES)};
#undef OPTION_IS_PROFILES
#define OPTION_KEY(key, kind, def, most, doc) #key,
	static const char *const keys[] = {RAMPART_OPTION_TABLE(OPTION_KEY)};
#undef OPTION_KEY
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		bool unsaid = !strcmp(keys[i], "guard") || !strcmp(keys[i], "stats_file");
		for (size_t j = 0; j < sizeof profiles / sizeof *profiles; j++) unsaid |= !strcmp(keys[i], profiles[j]);
		ck_assert_msg(says(out, keys[i]) != unsaid, "%s: %s in '%s'", keys[i], unsaid ? "said" : "not said", out);
	}
	ck_assert_msg(strstr(out, "slab_return_ms=4321"), "'%s'", out); /* the value, not the default */
	ck_assert_msg(out[strlen(out) - 1] != ' ' && strncmp(out, ", ", 2), "'%s'", out);
}
END_TEST

START_TEST(test_read_env)
{
	struct options o;
	setenv("RAMPART_OPTIONS", "guard=mprotect", 1);
	options_read(&o);
	ck_assert_int_eq(o.guard, GUARD_MPROTECT);
	setenv("RAMPART_OPTIONS", "guard=madvise", 1);
	options_read(&o);
	ck_assert_int_eq(o.guard, GUARD_MADVISE);
	unsetenv("RAMPART_OPTIONS");
	options_read(&o);
	ck_assert_int_eq(o.guard, GUARD_AUTO);
}
END_TEST

/* A set-user-ID program (AT_SECURE) ignores RAMPART_OPTIONS. Needs root (to make a
 * setuid copy and drop to another uid) and a filesystem that honours setuid. */
START_TEST(test_at_secure_ignores_env)
{
	if (getuid() != 0) {
		fprintf(stderr, "note: not root, AT_SECURE case skipped\n");
		return;
	}
	char dir[] = "/tmp/rampart-secure-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	chmod(dir, 0755);
	char path[256];
	snprintf(path, sizeof path, "%s/t", dir);
	int in = open("/proc/self/exe", O_RDONLY), out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ck_assert(in >= 0 && out >= 0);
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0) ck_assert_int_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
	ck_assert_int_eq(chmod(path, 04755), 0);
	int pfd[2];
	ck_assert_int_eq(pipe(pfd), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], STDOUT_FILENO);
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)) _exit(3);
		char *argv[] = {path, "--print-options", NULL};
		char *envp[] = {"RAMPART_OPTIONS=guard=mprotect", NULL};
		execve(path, argv, envp);
		_exit(4);
	}
	close(pfd[1]);
	char res[128] = {0};
	n = read(pfd[0], res, sizeof res - 1);
	close(pfd[0]);
	int st;
	waitpid(pid, &st, 0);
	unlink(path);
	rmdir(dir);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	if (strstr(res, "secure=0")) {
		fprintf(stderr, "note: setuid not honoured here (nosuid mount?), AT_SECURE case skipped\n");
		return;
	}
	ck_assert_msg(strcmp(res, "secure=1 guard=0\n") == 0, "got '%s'", res);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("options");
	TCase *t = tcase_create("options");
	tcase_set_timeout(t, 30);
	tcase_add_test(t, test_parse);
	tcase_add_test(t, test_parse_check_at_exit);
	tcase_add_test(t, test_grammar);
	tcase_add_test(t, test_knobs);
	tcase_add_test(t, test_profile);
	tcase_add_test(t, test_stats_file);
	tcase_add_test(t, test_help);
	tcase_add_test(t, test_say_rest);
	tcase_add_test(t, test_read_env);
	tcase_add_test(t, test_at_secure_ignores_env);
	suite_add_tcase(s, t);
	return s;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--print-options") == 0) {
		struct options o;
		options_read(&o);
		printf("secure=%d guard=%d\n", getauxval(AT_SECURE) ? 1 : 0, (int)o.guard);
		return 0;
	}
	return run_suite(suite());
}
