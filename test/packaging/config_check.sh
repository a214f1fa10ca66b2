#!/bin/sh
# config_check.sh: a wrong config.mk value stops make before anything is built, with a
# line naming the option; the shipped values and the presets pass. Parses only (make -n).
set -u
# Only the assignments below: none inherited from a make that runs this script.
unset MAKEFLAGS MFLAGS MAKELEVEL
fail=0
expect_error() { # expect_error WHAT-STDERR-SAYS ASSIGNMENT...
	want=$1
	shift
	if out=$(make --no-print-directory -n lib "$@" 2>&1); then
		echo "accepted: $*"
		fail=1
	elif ! printf '%s\n' "$out" | grep -qF -- "config.mk: $want"; then
		echo "for $*: no line 'config.mk: $want' in:"
		printf '%s\n' "$out"
		fail=1
	fi
}
expect_error "CONFIG_SLAB_ARENAS=0: must be a whole number from 1 to 32" CONFIG_SLAB_ARENAS=0
expect_error "CONFIG_SLAB_ARENAS=four: is not a whole number" CONFIG_SLAB_ARENAS=four
expect_error "CONFIG_CACHE_BYTES=1g: is not a whole number" CONFIG_CACHE_BYTES=1g
expect_error "CONFIG_GUARD_MAX_PAGES=010: has a leading zero" CONFIG_GUARD_MAX_PAGES=010
expect_error "CONFIG_META_RESERVE=99999999999999999999: must be a whole number" CONFIG_META_RESERVE=99999999999999999999
expect_error "CONFIG_SLAB_NURSERY_PAGES=24: must be 0 or a power of two" CONFIG_SLAB_NURSERY_PAGES=24
expect_error "CONFIG_SLOT_CANARY=2: must be 0 or 1" CONFIG_SLOT_CANARY=2
expect_error "CONFIG_SLAB_REGION_SHIFT=45: must be a whole number from 20 to 44" CONFIG_SLAB_REGION_SHIFT=45
expect_error "CONFIG_WRITE_AFTER_FREE_CHECK=1 needs CONFIG_ZERO_ON_FREE=1" CONFIG_ZERO_ON_FREE=0
expect_error "CONFIG_POLICY_PATH=etc/rampart.conf: must be empty or an absolute path" CONFIG_POLICY_PATH=etc/rampart.conf
expect_error "CONFIG_SLOT_CANNARY is not an option of config.mk" CONFIG_SLOT_CANNARY=0
for good in "" VARIANT=light CONFIG_SLAB_NURSERY_PAGES=0 CONFIG_POLICY_PATH= "CONFIG_ZERO_ON_FREE=0 CONFIG_WRITE_AFTER_FREE_CHECK=0"; do
	# shellcheck disable=SC2086
	out=$(make --no-print-directory -n lib $good 2>&1) || { echo "refused: '$good': $out"; fail=1; }
done
[ $fail = 0 ] && echo "config.mk values: wrong ones refused by name, the shipped ones and the presets accepted"
exit $fail
