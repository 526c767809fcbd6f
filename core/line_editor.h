/*
 * line_editor.h - the console's line editing and history, as a byte-driven state
 * machine with no I/O of its own (so host tests can drive it byte by byte).
 *
 * Keys: printable characters insert at the cursor; Backspace/DEL delete before it,
 * Ctrl-D and Delete (ESC[3~) at it; Left/Right (ESC[D/ESC[C, Ctrl-B/Ctrl-F),
 * Home/End (ESC[H/ESC[F, ESC[1~/ESC[4~, Ctrl-A/Ctrl-E) move; Ctrl-K kills to the
 * end, Ctrl-U to the start, Ctrl-W the word before the cursor; Up/Down (ESC[A/ESC[B,
 * Ctrl-P/Ctrl-N) walk the history; Ctrl-C abandons the line; Ctrl-L redraws; CR, LF
 * or CRLF ends the line. Echo and redraws go to the output callback as VT100 text.
 */
#ifndef CORE_LINE_EDITOR_H
#define CORE_LINE_EDITOR_H

#include <stddef.h>

#define LE_LINE_MAX 256
#define LE_HISTORY_MAX 32

enum le_result {
	LE_CONTINUE = 0,  /* keep feeding */
	LE_DONE = 1,      /* a line is ready in le_line() */
	LE_CANCEL = 2,    /* Ctrl-C: the line was abandoned */
};

enum le_escape_state {
	LE_ESC_NONE = 0,
	LE_ESC_SEEN,      /* got ESC */
	LE_ESC_CSI,       /* got ESC [ (or ESC O), collecting a parameter */
};

typedef void (*le_output_fn)(void *ctx, const char *text, size_t len);

struct line_editor {
	char line[LE_LINE_MAX];
	size_t len;
	size_t cursor;
	const char *prompt;
	enum le_escape_state esc;
	unsigned esc_param;
	int last_was_cr;
	char history[LE_HISTORY_MAX][LE_LINE_MAX];
	unsigned hist_count;  /* entries stored, <= LE_HISTORY_MAX */
	unsigned hist_next;   /* slot the next entry goes to */
	int hist_pos;         /* entries back from the newest while browsing, -1 when not */
	char saved[LE_LINE_MAX]; /* the line being typed before browsing started */
	le_output_fn out;
	void *out_ctx;
};

/* Start with an empty line and history; output goes to out(ctx, ...). */
void le_init(struct line_editor *le, const char *prompt, le_output_fn out, void *ctx);

/* Feed one received byte. */
enum le_result le_feed(struct line_editor *le, unsigned char c);

/* The finished line (valid after LE_DONE until the next le_feed). */
const char *le_line(const struct line_editor *le);

/* Store a line in the history (empty lines and repeats of the newest are skipped). */
void le_history_add(struct line_editor *le, const char *line);

/* The history entry `back` steps from the newest (0 = newest), or NULL. */
const char *le_history_get(const struct line_editor *le, unsigned back);

/* Print the prompt and start a new empty line. */
void le_start(struct line_editor *le);

#endif
