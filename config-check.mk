# config-check.mk — checks every CONFIG_ value against its rule in config.mk's
# CONFIG_RULES before anything is built, and makes CONFIG_CPPFLAGS from the values that
# passed. Included at the end of config.mk; each wrong value is a line naming it, e.g.
#   config.mk: CONFIG_SLAB_ARENAS=0: must be a whole number from 1 to 32
# then make stops. The form (one word, digits only, no leading zero) is checked here;
# ranges and powers of two by one shell call over the values of the right form.

config_names := $(foreach r,$(CONFIG_RULES),$(firstword $(subst :, ,$(r))))
config_rule = $(wordlist 2,4,$(subst :, ,$(filter $(1):%,$(CONFIG_RULES))))
config_digitless = $(subst 0,,$(subst 1,,$(subst 2,,$(subst 3,,$(subst 4,,$(subst 5,,$(subst 6,,$(subst 7,,$(subst 8,,$(subst 9,,$(1)))))))))))
# Empty when $(1) is a decimal number that C reads the same way; else what is wrong.
config_form = $(if $(filter-out 1,$(words $(1))),is not one word,$(if $(call config_digitless,$(1)),is not a whole number in decimal,$(if $(filter 0%,$(filter-out 0,$(1))),has a leading zero (C would read it as octal))))
config_bad_path = $(or $(filter-out 0 1,$(words $(1))),$(findstring ',$(1)),$(findstring ",$(1)),$(filter-out /%,$(1)))

config_say = $(info config.mk: $(1))$(eval config_failed := 1)
config_failed :=

# Every option is set; a CONFIG_ name on the command line must be an option.
$(foreach n,$(config_names),$(if $(filter undefined,$(origin $(n))),\
	$(call config_say,$(n) is not set (config.mk has no value for it))))
$(foreach v,$(filter CONFIG_%,$(.VARIABLES)),$(if $(filter command line,$(origin $(v))),\
	$(if $(filter $(v),$(config_names) CONFIG_RULES CONFIG_NEEDS CONFIG_CPPFLAGS),,\
	$(call config_say,$(v) is not an option of config.mk (CONFIG_RULES lists them)))))

# 19 digits or more: beyond every range, and beyond the shell's arithmetic.
config_too_long := ???????????????????*
# The form of each value; the shell test of the range of those of the right form.
config_range = v=$(2); case $$v in $(config_too_long)) false;; esac && [ $$v -ge $(3) ] && [ $$v -le $(4) ] || \
	{ echo "config.mk: $(1)=$$v: must be a whole number from $(3) to $(4)" >&2; echo 1; };
config_pow2 = v=$(2); case $$v in $(config_too_long)) false;; esac && [ $$v -ge $(3) ] && [ $$v -le $(4) ] && [ $$((v & (v - 1))) -eq 0 ] || \
	{ echo "config.mk: $(1)=$$v: must be 0 or a power of two from $(3) to $(4)" >&2; echo 1; };
config_check = $(if $(filter path,$(2)),\
		$(if $(call config_bad_path,$(3)),$(call config_say,$(1)=$(3): must be empty or an absolute path without spaces or quotes)),\
	$(if $(filter flag,$(2)),$(if $(filter-out 0 1,$(3)),$(call config_say,$(1)=$(3): must be 0 or 1)),\
	$(if $(call config_form,$(3)),$(call config_say,$(1)=$(3): $(call config_form,$(3))),\
	$(if $(filter pow2,$(2)),$(call config_pow2,$(1),$(3),$(word 2,$(2)),$(word 3,$(2))),\
	$(call config_range,$(1),$(3),$(word 1,$(2)),$(word 2,$(2)))))))
config_sh := $(strip $(foreach n,$(config_names),$(call config_check,$(n),$(call config_rule,$(n)),$($(n)))))
ifneq ($(config_sh),)
ifneq ($(shell $(config_sh) :),)
config_failed := 1
endif
endif

# A switch that needs another.
$(foreach p,$(CONFIG_NEEDS),$(eval config_a := $(firstword $(subst :, ,$(p))))$(eval config_b := $(lastword $(subst :, ,$(p))))\
	$(if $(and $(filter-out 0,$($(config_a))),$(filter 0,$($(config_b)))),\
		$(call config_say,$(config_a)=$($(config_a)) needs $(config_b)=1)))

ifneq ($(config_failed),)
$(error config.mk: wrong values (above); the rules are config.mk's CONFIG_RULES)
endif

# Numbers as they are; the policy path as a C string.
CONFIG_CPPFLAGS := $(foreach v,$(sort $(filter-out CONFIG_POLICY_PATH,$(config_names))),-D$(v)=$($(v))) \
	-DCONFIG_POLICY_PATH=\"$(CONFIG_POLICY_PATH)\"
