# sbx: every tool under cmd/ becomes bin/<tool>, static and stripped (musl)
# by default; `make STATIC=0` links dynamically against the distribution's
# -dev packages. `make V=1` shows full commands. `make B=DIR` puts all output
# under DIR (bin/ and build/) so parallel builds of one tree do not collide.

.DELETE_ON_ERROR:
.SECONDARY:
.SUFFIXES:
.PHONY: FORCE version dist test-progs all check check-unit check-bats check-vm fuzz install clean distclean deps packages demo bench soak

B        ?= .
STATIC   ?= 1
V        ?= 0
PREFIX   ?= /usr/local
DESTDIR  ?=
APPARMOR_D ?= /etc/apparmor.d
BINDIR   := $(B)/bin
OBJDIR   := $(B)/build/obj-$(if $(filter 1,$(STATIC)),static,dynamic)
DEPS     := $(CURDIR)/build/deps
PKGS     ?= deps/packages.sh

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-7s %s\n' $(1) $(2)
endif

TOOLS    := $(notdir $(patsubst %/,%,$(wildcard cmd/*/)))
# lib/ holds what every tool shares (messages, status, options, fds, JSON,
# exec, mounts); each folder below it one domain that only some tools use
# (policy, deny: the deny-write rule, net: the broker's protocol parsers,
# quota, meter, cgroup, seatbelt). Headers are included by name from all
# of them.
LIB_DIRS := lib $(patsubst %/,%,$(wildcard lib/*/))
LIB_INC  := $(addprefix -I,$(LIB_DIRS))
LIB_SRC  := $(wildcard $(addsuffix /*.c,$(LIB_DIRS)))
LIB_OBJ  := $(LIB_SRC:%.c=$(OBJDIR)/%.o)
LIBSBX   := $(OBJDIR)/libsbx.a
UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_BIN := $(OBJDIR)/unit-tests
# Programs the tests run (inside sandboxes, in the VM): tests/progs/NAME.c
# becomes $(OBJDIR)/testbin/NAME, built like the tools.
PROG_SRC := $(wildcard tests/progs/*.c)
TESTBIN  := $(OBJDIR)/testbin
TEST_PROGS := $(PROG_SRC:tests/progs/%.c=$(TESTBIN)/%)
# The VM suite's own helpers (tests/vm/helpers/NAME.c: quota-set, fill, ...)
# become $(TESTBIN)/vm/NAME; tests/vm/run.sh copies them into the VM.
VM_HELPER_SRC := $(wildcard tests/vm/helpers/*.c)
VM_HELPERS := $(VM_HELPER_SRC:tests/vm/helpers/%.c=$(TESTBIN)/vm/%)

WARN     := -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wno-unused-parameter
CFLAGS   ?= -O2
CFLAGS   += -std=gnu11 $(WARN) -D_GNU_SOURCE -ffunction-sections -fdata-sections \
            -fstack-protector-strong $(LIB_INC)
LDFLAGS  += -Wl,--gc-sections
LDLIBS   := -lseccomp -lcap -ljansson -lnettle
# TLS (service routes) is the broker's alone.
LDLIBS_sbx-broker := -lssl -lcrypto

# What --version names: the release (SBX_VERSION in lib/opts.h, its one
# place) and the commit the tree was built from, "HASH, clean" or
# "HASH, dirty" from git (dirty: a tracked change or an untracked file
# that .gitignore does not cover), else the commit a release tarball
# carries in its COMMIT file (`make dist` writes it), else "unknown".
# SOURCE_DATE_EPOCH (the commit's time unless the caller sets it) is the
# one time a build may use: `make dist` stamps the tarball with it.
comma    := ,
VERSION  := $(shell sed -n 's/^[[:punct:]]define SBX_VERSION "\(.*\)"$$/\1/p' lib/opts.h)
# The build runs this tree's Makefile whoever owns the tree, so git may read
# the tree's history for a builder who does not own it (root in CI).
GIT      := git -c safe.directory=$(CURDIR)
ifneq ($(wildcard .git),)
COMMIT_ID := $(shell $(GIT) rev-parse --verify -q HEAD 2>/dev/null)
COMMIT_STATE := $(if $(COMMIT_ID),$(if $(shell $(GIT) status --porcelain 2>/dev/null || echo failed),dirty,clean))
SOURCE_DATE_EPOCH ?= $(shell $(GIT) log -1 --format=%ct 2>/dev/null)
else ifneq ($(wildcard COMMIT),)
COMMIT_ID := $(shell sed -n 's/^commit \([0-9a-f]\{40\}\)$$/\1/p' COMMIT)
COMMIT_STATE := clean
COMMIT_DATE := $(shell sed -n 's/^date \([0-9]\{1,\}\)$$/\1/p' COMMIT)
$(if $(filter 1,$(words $(COMMIT_ID))),,$(error sbx: version: COMMIT: not one line 'commit HASH' (40 hex digits); take the file from the release tarball))
$(if $(filter 1,$(words $(COMMIT_DATE))),,$(error sbx: version: COMMIT: not one line 'date SECONDS'; take the file from the release tarball))
SOURCE_DATE_EPOCH ?= $(COMMIT_DATE)
endif
SOURCE_DATE_EPOCH := $(SOURCE_DATE_EPOCH)
SBX_COMMIT := $(if $(COMMIT_ID),$(COMMIT_ID)$(comma) $(COMMIT_STATE),unknown)
export SOURCE_DATE_EPOCH
# Generated headers (the commit) live with the objects, never in the tree.
GENDIR   := $(OBJDIR)/gen
COMMIT_H := $(GENDIR)/sbx-commit.h
LIB_INC  += -I$(GENDIR)
# Nothing of where the tree sits may reach an object.
CFLAGS   += -ffile-prefix-map=$(CURDIR)=.

ifeq ($(STATIC),1)
CC       := musl-gcc
CFLAGS   += -isystem $(DEPS)/kinc -isystem $(DEPS)/include -U_FORTIFY_SOURCE
LDFLAGS  += -static -s -L$(DEPS)/lib
DEPSTAMP := $(DEPS)/.stamp
PKGMODE  := build
else
CC       ?= cc
CFLAGS   += -D_FORTIFY_SOURCE=2 -fPIE $(shell pkg-config --cflags libseccomp libcap jansson nettle 2>/dev/null)
LDFLAGS  += -pie -Wl,--as-needed
LDLIBS   := $(shell pkg-config --libs libseccomp libcap jansson nettle 2>/dev/null || echo $(LDLIBS))
LDLIBS_sbx-broker := $(shell pkg-config --libs libssl libcrypto 2>/dev/null || echo $(LDLIBS_sbx-broker))
DEPSTAMP :=
PKGMODE  := dynamic
endif

# On macOS only sbx-seatbelt exists (cmd/sbx-seatbelt/build.mk builds it
# with the system compiler); the Linux tools and Debian packages do not apply.
ifeq ($(shell uname -s),Darwin)
TOOLS    :=
PKGS     := true
all: sbx-seatbelt-macos
endif

all: $(TOOLS:%=$(BINDIR)/%)

# Build packages are checked on every run (a dpkg-query, silent when all are
# present) and installed as root with one message: a fresh Debian 12 machine
# needs nothing but `make`.
packages:
	$(Q)$(PKGS) $(PKGMODE)

deps: $(DEPS)/.stamp

# Dependencies are built once; rebuilding the tools never rebuilds them.
$(DEPS)/.stamp: deps/manifest deps/build.sh | packages
	$(Q)deps/build.sh $(DEPS)

$(OBJDIR)/%.o: %.c $(wildcard $(addsuffix /*.h,$(LIB_DIRS))) $(DEPSTAMP) | packages
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

# Rewritten only when the commit or its state changes, so that a rebuild
# of an unchanged tree recompiles nothing.
$(COMMIT_H): FORCE
	@mkdir -p $(@D)
	$(Q)printf '#define SBX_COMMIT "%s"\n' '$(SBX_COMMIT)' >$@.tmp
	$(Q)if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(OBJDIR)/lib/opts.o: $(COMMIT_H)
sbx-seatbelt-macos: $(COMMIT_H)
FORCE:

# `make -s version`: what the tools' --version will name, as NAME=VALUE
# lines for scripts (packaging reads VERSION and SOURCE_DATE_EPOCH here).
version:
	@printf 'VERSION=%s\nCOMMIT=%s\nSOURCE_DATE_EPOCH=%s\n' '$(VERSION)' '$(SBX_COMMIT)' '$(SOURCE_DATE_EPOCH)'

$(LIBSBX): $(LIB_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# One rule per tool: its own sources plus libsbx.
define tool_rule
$(BINDIR)/$(1): $(patsubst %.c,$(OBJDIR)/%.o,$(wildcard cmd/$(1)/*.c)) $(LIBSBX)
	$$(call msg,LD,$$@)
	@mkdir -p $$(@D)
	$(Q)$$(CC) $$(CFLAGS) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS_$(1)) $$(LDLIBS)
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t))))

$(UNIT_BIN): $(UNIT_SRC:%.c=$(OBJDIR)/%.o) $(LIBSBX)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(TESTBIN)/%: $(OBJDIR)/tests/progs/%.o $(LIBSBX)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# They stand alone: no libsbx, nothing but libc, so each reads in one file.
$(TESTBIN)/vm/%: $(OBJDIR)/tests/vm/helpers/%.o
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^

test-progs: $(TEST_PROGS) $(VM_HELPERS)

-include $(wildcard cmd/*/build.mk tests/*/build.mk)
-include $(shell find $(OBJDIR) -name '*.d' 2>/dev/null)

# Everything CI runs. Each suite runs even if an earlier one failed; the
# closing line counts them all and the exit status is non-zero on any failure.
check: all $(UNIT_BIN) $(TEST_PROGS) $(VM_HELPERS)
	$(Q)$(PKGS) test
	$(Q)SBX_BIN=$(abspath $(BINDIR)) SBX_TESTBIN=$(abspath $(TESTBIN)) SBX_UNIT=$(abspath $(UNIT_BIN)) SBX_STATIC=$(STATIC) \
	  SBX_OBJDIR=$(abspath $(OBJDIR)) SBX_VM_WORK=$(abspath $(B))/build/vm tests/check.sh

check-unit: $(UNIT_BIN)
	$(Q)$(UNIT_BIN)

check-bats: all $(TEST_PROGS)
	$(Q)$(PKGS) test
	$(Q)SBX_BIN=$(abspath $(BINDIR)) SBX_TESTBIN=$(abspath $(TESTBIN)) SBX_STATIC=$(STATIC) tests/run-bats.sh tests/*.bats

check-vm: all $(TEST_PROGS) $(VM_HELPERS)
	$(Q)SBX_BIN=$(abspath $(BINDIR)) SBX_TESTBIN=$(abspath $(TESTBIN)) SBX_ROOT=$(CURDIR) \
	  SBX_VM_WORK=$(abspath $(B))/build/vm tests/vm/check.sh

# What `make install` installs is the one list the Debian package installs
# too (debian/rules runs this target with PREFIX=/usr and its DESTDIR): the
# tools, the session recipe, the man pages, the manifest, the systemd units
# and the AppArmor profile. The units and the profile name the tools by their
# installed path. APPARMOR=auto installs the profile only where $(APPARMOR_D)
# exists; APPARMOR=yes always (the package: a conffile, loaded only where
# AppArmor is active).
SYSTEMD_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
APPARMOR ?= auto
UNITS    := $(wildcard contrib/systemd/*)
install: all
	@case "$(APPARMOR)" in auto | yes) ;; *) echo "sbx: usage: APPARMOR is auto or yes, not '$(APPARMOR)'" >&2; exit 100 ;; esac
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(TOOLS:%=$(BINDIR)/%) contrib/session/sbx-session $(DESTDIR)$(PREFIX)/bin/
	$(if $(wildcard man/*.1),install -m 0644 $(wildcard man/*.1) $(DESTDIR)$(PREFIX)/share/man/man1/)
	# The hashes `sbx-check tools` compares the installed binaries with; it
	# reads them from BINDIR/../share/sbx/manifest.
	install -d $(DESTDIR)$(PREFIX)/share/sbx
	(cd $(DESTDIR)$(PREFIX)/bin && sha256sum $(TOOLS)) >$(DESTDIR)$(PREFIX)/share/sbx/manifest
	chmod 0644 $(DESTDIR)$(PREFIX)/share/sbx/manifest
	install -d $(DESTDIR)$(SYSTEMD_UNIT_DIR)
	for u in $(notdir $(UNITS)); do \
	  sed 's|/usr/local/bin/|$(PREFIX)/bin/|g' contrib/systemd/$$u >$(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$u && \
	  chmod 0644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$u || exit 1; \
	done
	# The AppArmor profile that lets sbx-ns create user namespaces where AppArmor
	# restricts them, naming the installed path.
	@if [ "$(APPARMOR)" = yes ] || [ -d $(APPARMOR_D) ]; then \
	  install -d $(DESTDIR)$(APPARMOR_D) && \
	  sed 's|/usr/local/bin/sbx-ns|$(PREFIX)/bin/sbx-ns|' contrib/apparmor/sbx-ns >$(DESTDIR)$(APPARMOR_D)/sbx-ns && \
	  chmod 0644 $(DESTDIR)$(APPARMOR_D)/sbx-ns && \
	  echo "installed $(DESTDIR)$(APPARMOR_D)/sbx-ns; load it with: apparmor_parser -r $(APPARMOR_D)/sbx-ns"; \
	else \
	  echo "$(APPARMOR_D) does not exist (no AppArmor): its sbx-ns profile is not installed"; \
	fi

# `make dist`: the release, in build/release/: sbx-VERSION.tar.gz (git's
# HEAD and a COMMIT file naming it, files in name order, owner 0:0, modes
# 0644/0755, mtime SOURCE_DATE_EPOCH, gzip without name or time), the
# static tools built from that tarball alone (in a scratch tree; the deps
# prefix is this tree's, built from the same manifest by the same script),
# and SHA256SUMS over both, in sha256sum's form: `sha256sum -c` checks the
# release, `sbx-check tools --manifest` an installation. A tree with changes
# is refused: the tarball is HEAD, and would not hold them.
RELEASE  := $(B)/build/release
DISTDIR  := $(B)/build/dist
DISTNAME := sbx-$(VERSION)

dist:
	@test -e .git || { echo "sbx: dist: $(CURDIR): not a git checkout; make dist from a clone" >&2; exit 1; }
	@test '$(COMMIT_STATE)' = clean || { echo "sbx: dist: $(CURDIR): uncommitted changes or untracked files; commit or remove them (the tarball is HEAD)" >&2; exit 1; }
	@case '$(SOURCE_DATE_EPOCH)' in '' | *[!0-9]*) echo "sbx: dist: SOURCE_DATE_EPOCH '$(SOURCE_DATE_EPOCH)': not a number of seconds; unset it or set one" >&2; exit 1;; esac
	$(Q)$(MAKE) --no-print-directory STATIC=1 deps
	$(call msg,DIST,$(RELEASE)/$(DISTNAME).tar.gz)
	$(Q)rm -rf $(RELEASE) $(DISTDIR) && mkdir -p $(RELEASE) $(DISTDIR)/src $(DISTDIR)/build
	$(Q)$(GIT) archive --format=tar --prefix=$(DISTNAME)/ HEAD | tar -x -C $(DISTDIR)/src
	$(Q)printf 'commit %s\ndate %s\n' '$(COMMIT_ID)' '$(SOURCE_DATE_EPOCH)' >$(DISTDIR)/src/$(DISTNAME)/COMMIT
	$(Q)LC_ALL=C tar -C $(DISTDIR)/src --sort=name --format=gnu --owner=0 --group=0 --numeric-owner \
	  --mtime=@$(SOURCE_DATE_EPOCH) --mode=u+w,go-w,a+rX -cf - $(DISTNAME) | gzip -9 -n >$(RELEASE)/$(DISTNAME).tar.gz
	$(Q)tar -xzf $(RELEASE)/$(DISTNAME).tar.gz -C $(DISTDIR)/build
	$(Q)$(MAKE) -C $(DISTDIR)/build/$(DISTNAME) B=. STATIC=1 DEPS=$(DEPS) all
	$(Q)install -m 0755 $(TOOLS:%=$(DISTDIR)/build/$(DISTNAME)/bin/%) $(RELEASE)/
	$(Q)cd $(RELEASE) && sha256sum $(DISTNAME).tar.gz $(TOOLS) >SHA256SUMS
	$(Q)rm -rf $(DISTDIR)
	@echo "released $(RELEASE): $(DISTNAME).tar.gz, $(TOOLS), SHA256SUMS"

clean:
	rm -rf $(B)/bin $(B)/build/obj-static $(B)/build/obj-dynamic $(B)/build/vm $(B)/build/vm-5.10 $(B)/build/vm-debian12 $(B)/build/vm-debian13 $(B)/build/vm-soak $(B)/build/soak $(B)/build/deb

distclean: clean
	rm -rf build

# The README's first command: build, check the host, prove, and run an
# untrusted script through the chain.
demo: all $(TEST_PROGS)
	$(Q)$(PKGS) test
	$(Q)SBX_BIN=$(abspath $(BINDIR)) SBX_TESTBIN=$(abspath $(TESTBIN)) demo/run.sh

# Longer fuzzing than `make check` does (SBX_FUZZ_SECONDS per target).
fuzz:
	$(Q)$(PKGS) test
	$(Q)SBX_FUZZ_SECONDS=$${SBX_FUZZ_SECONDS:-600} SBX_OBJDIR=$(abspath $(OBJDIR)) tests/fuzz/check.sh

# Benchmarks: each runs its tool side by side with a peer and prints ratios.
bench: all $(TEST_PROGS)
	$(Q)$(PKGS) test
	$(Q)$(PKGS) bench
	$(Q)for b in bench/*.sh; do SBX_BIN=$(abspath $(BINDIR)) SBX_TESTBIN=$(abspath $(TESTBIN)) SBX_ROOT=$(CURDIR) $$b || exit 1; done

# The soak (tests/soak): living sandboxes behind one broker in a VM, under
# load and injected faults, for SOAK_SECONDS (600) with SOAK_SANDBOXES (32);
# build/soak/report.md and build/soak/latency.svg. make check runs a short one.
soak: all $(TEST_PROGS) $(VM_HELPERS)
	$(Q)$(PKGS) test
	$(Q)$(PKGS) vm
	$(Q)$(PKGS) soak
	$(Q)SBX_BIN=$(abspath $(BINDIR)) SBX_TESTBIN=$(abspath $(TESTBIN)) SOAK_OUT=$(abspath $(B))/build/soak tests/soak/run.sh --plot
