// sources: core/line_editor.c
/*
 * libFuzzer harness: the console line editor fed arbitrary bytes (a noisy serial line,
 * a hostile terminal). Invariants: cursor <= len < LE_LINE_MAX, line NUL-terminated at
 * len, history bounded; finished lines are stored in history like the console does.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "core/line_editor.h"

static size_t emitted;

static void count(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	(void)text;
	emitted += len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct line_editor le;
	le_init(&le, "> ", count, NULL);
	le_start(&le);
	for (size_t i = 0; i < size; i++) {
		enum le_result r = le_feed(&le, data[i]);
		assert(le.cursor <= le.len && le.len < LE_LINE_MAX);
		assert(le.line[le.len] == '\0' && strlen(le.line) <= le.len);
		if (r == LE_DONE) {
			le_history_add(&le, le_line(&le));
			le_start(&le);
		} else if (r == LE_CANCEL) {
			le_start(&le);
		}
		assert(le.hist_count <= LE_HISTORY_MAX);
	}
	return 0;
}
