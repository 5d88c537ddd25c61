/* A small unit-test runner: each TEST registers itself; main runs them all
 * and prints the closing line "N passed, N failed". */
#ifndef SBX_UNIT_H
#define SBX_UNIT_H

#include <stdio.h>
#include <string.h>
#include <stdint.h>

struct unit_test {
	const char *name;
	void (*fn)(int *failed);
	struct unit_test *next;
};

void unit_register(struct unit_test *t);

#define TEST(n)                                                            \
	static void test_##n(int *unit_failed);                            \
	static struct unit_test unit_##n = { #n, test_##n, 0 };           \
	__attribute__((constructor)) static void reg_##n(void)             \
	{ unit_register(&unit_##n); }                                      \
	static void test_##n(int *unit_failed)

#define CHECK(c) do { if (!(c)) { *unit_failed = 1;                       \
	fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); } } while (0)

#define CHECK_STR(a, b) do { const char *a_ = (a), *b_ = (b);             \
	if (!a_ || !b_ || strcmp(a_, b_)) { *unit_failed = 1;              \
	fprintf(stderr, "  %s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__,  \
		a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } } while (0)

#define CHECK_U64(a, b) do { uint64_t a_ = (a), b_ = (b);                   \
	if (a_ != b_) { *unit_failed = 1;                                  \
	fprintf(stderr, "  %s:%d: %llu != %llu\n", __FILE__, __LINE__,      \
		(unsigned long long)a_, (unsigned long long)b_); } } while (0)

/* Run fn(arg) in a child with stderr captured; returns the child's exit
 * code (or 128+signal) and copies what it wrote to stderr into err. */
int unit_capture(void (*fn)(void *), void *arg, char *err, size_t errsz);

#endif
