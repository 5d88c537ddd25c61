# sbx-seatbelt on macOS: `make sbx-seatbelt-macos` builds it alone with the
# system compiler (Apple supports neither musl nor static linking) from
# its own sources and the few lib/ files it uses. It has never been run on
# a Mac by this project's CI: docs/platforms.md (macOS) says what has and
# has not been tried there. On Linux the same target builds the Linux
# variant, which is how the recipe itself is kept working.
SEATBELT_MACOS_SRC := cmd/sbx-seatbelt/main.c \
	$(addprefix lib/,clock.c cmdpath.c die.c exec.c fd.c grow.c json.c opts.c parse.c quote.c status.c procstat.c \
	  sys.c meter/meter.c meter/meter_tree.c meter/meter_disk.c seatbelt/sbpl.c)

.PHONY: sbx-seatbelt-macos
sbx-seatbelt-macos:
	$(call msg,CC,$(BINDIR)/sbx-seatbelt)
	@mkdir -p $(BINDIR)
	$(Q)cc -std=gnu11 -O2 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE $(LIB_INC) \
		-o $(BINDIR)/sbx-seatbelt $(SEATBELT_MACOS_SRC)
