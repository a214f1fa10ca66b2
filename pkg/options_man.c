/* options_man — prints the option list of rampart(3) and rampart.conf(5) as man markup,
 * from the option table (base/option_table.h) with this build's defaults: the build puts
 * it in place of the @OPTIONS@ line of pkg/rampart.3 and pkg/rampart.conf.5. Each entry
 * reads as the matching help=1 line:
 *
 *   .TP
 *   \fBkey\fP=\fIvalues\fP
 *   doc (default D[, at most M])
 *
 * test/packaging/man_check.sh holds the installed page to the library's help=1 text.
 * Runs on the build machine: no allocation rules apply here. */
#include <stdio.h>
#include <string.h>

#include "base/option_table.h"

static int entry(const char *key, enum option_kind kind, const void *def, size_t most, const char *doc)
{
	char values[64];
	/* Plain text only: no escapes to undo, no line that troff would take for a request. */
	if (strchr(doc, '\\') || doc[0] == '.' || doc[0] == '\'') {
		fprintf(stderr, "options_man: the doc string of %s needs man escapes: rephrase it\n", key);
		return 1;
	}
	char num[24];
	printf(".TP\n\\fB%s\\fP=\\fI%s\\fP\n%s (default %s", key, option_values_text(kind, values), doc,
	       option_value_text(kind, def, num));
	if (kind == OPTION_SIZE || kind == OPTION_COUNT) printf(", at most %zu", most);
	printf(")\n");
	return 0;
}

int main(void)
{
	struct options d;
	options_default(&d);
	int bad = 0;
#define OPTION_ENTRY(key, kind, def, most, doc) \
	bad |= entry(#key, OPTION_##kind, &d.key, most, doc);
	RAMPART_OPTION_TABLE(OPTION_ENTRY)
#undef OPTION_ENTRY
	return bad;
}
