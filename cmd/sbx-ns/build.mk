# sbx-ns: its seccomp filter is written with libseccomp (gen/rules.c) and
# compiled to BPF when sbx-ns is built, not at every start.
NS_OBJ := $(OBJDIR)/cmd/sbx-ns
NS_GEN := $(NS_OBJ)/gen/filtergen
NS_BPF := $(NS_OBJ)/filter_bpf.h

$(NS_GEN): $(NS_OBJ)/gen/filtergen.o $(NS_OBJ)/gen/rules.o $(LIBSBX)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(NS_OBJ)/gen/filtergen.o $(NS_OBJ)/gen/rules.o: CFLAGS += -Icmd/sbx-ns/gen

$(NS_BPF): $(NS_GEN)
	$(call msg,GEN,$@)
	$(Q)$(NS_GEN) > $@.tmp && mv $@.tmp $@

$(NS_OBJ)/seccomp.o: $(NS_BPF)
$(NS_OBJ)/seccomp.o: CFLAGS += -I$(NS_OBJ)

# The plan (plan.c) is unit-tested without namespaces: the unit binary
# links every object of sbx-ns but main.o (tests/unit/test_nsplan.c).
NS_UNIT_OBJ := $(filter-out $(NS_OBJ)/main.o,$(patsubst %.c,$(OBJDIR)/%.o,$(wildcard cmd/sbx-ns/*.c)))
$(UNIT_BIN): $(NS_UNIT_OBJ)
$(OBJDIR)/tests/unit/test_nsplan.o: CFLAGS += -Icmd/sbx-ns
# Those objects come after libsbx on the unit binary's command line: it is
# named again after them, for what only they use of it.
$(UNIT_BIN): LDLIBS := $(LIBSBX) $(LDLIBS)
