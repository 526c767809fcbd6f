/*
 * line_editor.c - console line editing and history (see line_editor.h).
 */
#include <stdio.h>
#include <string.h>
#include "line_editor.h"

#define CTRL(c) ((c) & 0x1f)
#define KEY_ESC 0x1b
#define KEY_DEL 0x7f

static void emit(struct line_editor *le, const char *s, size_t n)
{
	if (le->out && n)
		le->out(le->out_ctx, s, n);
}

static void emit_str(struct line_editor *le, const char *s)
{
	emit(le, s, strlen(s));
}

/* Redraw the prompt and the whole line, then put the terminal cursor at le->cursor. */
static void redraw(struct line_editor *le)
{
	char seq[16];
	emit_str(le, "\r");
	if (le->prompt)
		emit_str(le, le->prompt);
	emit(le, le->line, le->len);
	emit_str(le, "\x1b[K");
	if (le->len > le->cursor) {
		int n = snprintf(seq, sizeof(seq), "\x1b[%zuD", le->len - le->cursor);
		emit(le, seq, (size_t)n);
	}
}

static void set_line(struct line_editor *le, const char *text)
{
	size_t n = strlen(text);
	if (n >= LE_LINE_MAX)
		n = LE_LINE_MAX - 1;
	memcpy(le->line, text, n);
	le->line[n] = '\0';
	le->len = le->cursor = n;
	redraw(le);
}

/* Initialise. */
void le_init(struct line_editor *le, const char *prompt, le_output_fn out, void *ctx)
{
	memset(le, 0, sizeof(*le));
	le->prompt = prompt;
	le->out = out;
	le->out_ctx = ctx;
	le->hist_pos = -1;
}

/* New line with prompt. */
void le_start(struct line_editor *le)
{
	le->len = le->cursor = 0;
	le->line[0] = '\0';
	le->hist_pos = -1;
	le->esc = LE_ESC_NONE;
	if (le->prompt)
		emit_str(le, le->prompt);
}

/* The finished line. */
const char *le_line(const struct line_editor *le)
{
	return le->line;
}

/* History entry counted back from the newest. */
const char *le_history_get(const struct line_editor *le, unsigned back)
{
	if (back >= le->hist_count)
		return NULL;
	unsigned slot = (le->hist_next + LE_HISTORY_MAX - 1 - back) % LE_HISTORY_MAX;
	return le->history[slot];
}

/* Add to history. */
void le_history_add(struct line_editor *le, const char *line)
{
	if (line[0] == '\0')
		return;
	const char *newest = le_history_get(le, 0);
	if (newest && strcmp(newest, line) == 0)
		return;
	snprintf(le->history[le->hist_next], LE_LINE_MAX, "%s", line);
	le->hist_next = (le->hist_next + 1) % LE_HISTORY_MAX;
	if (le->hist_count < LE_HISTORY_MAX)
		le->hist_count++;
}

static void history_step(struct line_editor *le, int dir)
{
	int pos = le->hist_pos + dir; /* dir +1: older, -1: newer */
	if (pos >= (int)le->hist_count || pos < -1)
		return;
	if (le->hist_pos == -1)
		memcpy(le->saved, le->line, le->len + 1);
	le->hist_pos = pos;
	set_line(le, pos == -1 ? le->saved : le_history_get(le, (unsigned)pos));
}

static void insert_char(struct line_editor *le, char c)
{
	if (le->len + 1 >= LE_LINE_MAX) {
		emit_str(le, "\a");
		return;
	}
	memmove(le->line + le->cursor + 1, le->line + le->cursor, le->len - le->cursor + 1);
	le->line[le->cursor++] = c;
	le->len++;
	if (le->cursor == le->len)
		emit(le, &c, 1); /* plain echo when typing at the end */
	else
		redraw(le);
}

static void delete_range(struct line_editor *le, size_t from, size_t to)
{
	if (from >= to)
		return;
	memmove(le->line + from, le->line + to, le->len - to + 1);
	le->len -= to - from;
	le->cursor = from;
	redraw(le);
}

static void move_to(struct line_editor *le, size_t pos)
{
	if (pos == le->cursor || pos > le->len)
		return;
	le->cursor = pos;
	redraw(le);
}

static size_t word_start_before(const struct line_editor *le)
{
	size_t p = le->cursor;
	while (p > 0 && le->line[p - 1] == ' ')
		p--;
	while (p > 0 && le->line[p - 1] != ' ')
		p--;
	return p;
}

static enum le_result finish(struct line_editor *le)
{
	le->cursor = le->len;
	emit_str(le, "\r\n");
	return LE_DONE;
}

/* Complete an escape sequence whose final byte is c. */
static void escape_final(struct line_editor *le, unsigned char c)
{
	switch (c) {
	case 'A':
		history_step(le, +1);
		break;
	case 'B':
		history_step(le, -1);
		break;
	case 'C':
		move_to(le, le->cursor + 1);
		break;
	case 'D':
		if (le->cursor > 0)
			move_to(le, le->cursor - 1);
		break;
	case 'H':
		move_to(le, 0);
		break;
	case 'F':
		move_to(le, le->len);
		break;
	case '~':
		if (le->esc_param == 1 || le->esc_param == 7)
			move_to(le, 0);
		else if (le->esc_param == 4 || le->esc_param == 8)
			move_to(le, le->len);
		else if (le->esc_param == 3 && le->cursor < le->len)
			delete_range(le, le->cursor, le->cursor + 1);
		break;
	default:
		break; /* unknown sequences are swallowed */
	}
}

/* Feed one byte. */
enum le_result le_feed(struct line_editor *le, unsigned char c)
{
	int was_cr = le->last_was_cr;
	le->last_was_cr = 0;

	if (le->esc == LE_ESC_SEEN) {
		le->esc = (c == '[' || c == 'O') ? LE_ESC_CSI : LE_ESC_NONE;
		le->esc_param = 0;
		return LE_CONTINUE;
	}
	if (le->esc == LE_ESC_CSI) {
		if (c >= '0' && c <= '9') {
			if (le->esc_param < 1000)
				le->esc_param = le->esc_param * 10 + (c - '0');
			return LE_CONTINUE;
		}
		if (c == ';')
			return LE_CONTINUE;
		le->esc = LE_ESC_NONE;
		escape_final(le, c);
		return LE_CONTINUE;
	}

	switch (c) {
	case '\r':
		le->last_was_cr = 1;
		return finish(le);
	case '\n':
		if (was_cr)
			return LE_CONTINUE; /* the LF of a CRLF */
		return finish(le);
	case KEY_ESC:
		le->esc = LE_ESC_SEEN;
		return LE_CONTINUE;
	case CTRL('C'):
		emit_str(le, "^C\r\n");
		le->len = le->cursor = 0;
		le->line[0] = '\0';
		return LE_CANCEL;
	case '\b':
	case KEY_DEL:
		if (le->cursor > 0)
			delete_range(le, le->cursor - 1, le->cursor);
		return LE_CONTINUE;
	case CTRL('D'):
		if (le->cursor < le->len)
			delete_range(le, le->cursor, le->cursor + 1);
		return LE_CONTINUE;
	case CTRL('A'):
		move_to(le, 0);
		return LE_CONTINUE;
	case CTRL('E'):
		move_to(le, le->len);
		return LE_CONTINUE;
	case CTRL('B'):
		if (le->cursor > 0)
			move_to(le, le->cursor - 1);
		return LE_CONTINUE;
	case CTRL('F'):
		move_to(le, le->cursor + 1);
		return LE_CONTINUE;
	case CTRL('K'):
		le->len = le->cursor;
		le->line[le->len] = '\0';
		redraw(le);
		return LE_CONTINUE;
	case CTRL('U'):
		delete_range(le, 0, le->cursor);
		return LE_CONTINUE;
	case CTRL('W'):
		delete_range(le, word_start_before(le), le->cursor);
		return LE_CONTINUE;
	case CTRL('L'):
		emit_str(le, "\x1b[2J\x1b[H");
		redraw(le);
		return LE_CONTINUE;
	case CTRL('P'):
		history_step(le, +1);
		return LE_CONTINUE;
	case CTRL('N'):
		history_step(le, -1);
		return LE_CONTINUE;
	default:
		if (c >= 0x20 && c < 0x7f)
			insert_char(le, (char)c);
		return LE_CONTINUE; /* other control bytes and 8-bit bytes are ignored */
	}
}
