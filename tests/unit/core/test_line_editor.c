// sources: core/line_editor.c
/*
 * Line editor: typing, echo, cursor movement, deletion, history, escape sequences,
 * CRLF handling, overflow, Ctrl-C.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "core/line_editor.h"

static char out[8192];
static size_t out_len;

static void capture(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	cr_assert_lt(out_len + len, sizeof(out));
	memcpy(out + out_len, text, len);
	out_len += len;
	out[out_len] = '\0';
}

static struct line_editor le;

static void setup(void)
{
	out_len = 0;
	out[0] = '\0';
	le_init(&le, "> ", capture, NULL);
	le_start(&le);
	out_len = 0;
}

/* Feed a string; returns the result of the last byte. */
static enum le_result type(const char *s)
{
	enum le_result r = LE_CONTINUE;
	for (; *s; s++)
		r = le_feed(&le, (unsigned char)*s);
	return r;
}

TestSuite(line_editor, .init = setup);

Test(line_editor, typing_echoes_and_enter_finishes)
{
	cr_assert_eq(type("help"), LE_CONTINUE);
	cr_assert_str_eq(out, "help", "plain typing is echoed as is");
	cr_assert_eq(type("\r"), LE_DONE);
	cr_assert_str_eq(le_line(&le), "help");
	cr_assert_str_eq(out, "help\r\n");
}

Test(line_editor, crlf_is_one_line_end_and_lf_alone_works)
{
	cr_assert_eq(type("a\r"), LE_DONE);
	le_start(&le);
	cr_assert_eq(le_feed(&le, '\n'), LE_CONTINUE, "the LF of CRLF is swallowed");
	cr_assert_eq(type("b\n"), LE_DONE);
	cr_assert_str_eq(le_line(&le), "b");
}

Test(line_editor, cursor_moves_and_inserts_in_the_middle)
{
	type("hllo");
	type("\x1b[D\x1b[D\x1b[D"); /* left x3: cursor after 'h' */
	type("e");
	cr_assert_str_eq(le.line, "hello");
	cr_assert_eq(le.cursor, 2);
	type("\x01X"); /* Ctrl-A, insert at start */
	cr_assert_str_eq(le.line, "Xhello");
	type("\x05!"); /* Ctrl-E, append */
	cr_assert_str_eq(le.line, "Xhello!");
	type("\x1b[H\x1b[3~"); /* Home, Delete */
	cr_assert_str_eq(le.line, "hello!");
	type("\x1b[F\x7f"); /* End, Backspace */
	cr_assert_str_eq(le.line, "hello");
	type("\x1b[1~\x06\x04"); /* Home (VT), Ctrl-F, Ctrl-D */
	cr_assert_str_eq(le.line, "hllo");
	cr_assert_eq(type("\r"), LE_DONE);
	cr_assert_str_eq(le_line(&le), "hllo");
}

Test(line_editor, kill_commands)
{
	type("nvme read 0 8");
	type("\x17"); /* Ctrl-W: delete "8" */
	cr_assert_str_eq(le.line, "nvme read 0 ");
	type("\x17"); /* deletes "0 " */
	cr_assert_str_eq(le.line, "nvme read ");
	type("\x01\x06\x06\x06\x06\x0b"); /* Home, right x4, Ctrl-K */
	cr_assert_str_eq(le.line, "nvme");
	type("\x15"); /* Ctrl-U at end: delete everything */
	cr_assert_str_eq(le.line, "");
	cr_assert_eq(le.len, 0);
	type("\x7f\x1b[D\x04"); /* nothing to delete: no crash, nothing changes */
	cr_assert_str_eq(le.line, "");
}

Test(line_editor, history_up_down_restores_the_draft)
{
	le_history_add(&le, "first");
	le_history_add(&le, "second");
	le_history_add(&le, "second"); /* repeat of the newest is not stored */
	le_history_add(&le, "");       /* empty lines are not stored */
	cr_assert_eq(le.hist_count, 2);
	type("dra");
	type("\x1b[A");
	cr_assert_str_eq(le.line, "second");
	type("\x1b[A");
	cr_assert_str_eq(le.line, "first");
	type("\x1b[A"); /* no older entry: stays */
	cr_assert_str_eq(le.line, "first");
	type("\x1b[B\x1b[B");
	cr_assert_str_eq(le.line, "dra", "down past the newest restores the draft");
	type("\x10"); /* Ctrl-P */
	cr_assert_str_eq(le.line, "second");
	type("X\r");
	cr_assert_str_eq(le_line(&le), "secondX");
}

Test(line_editor, history_is_bounded_and_keeps_the_newest)
{
	char line[16];
	for (int i = 0; i < LE_HISTORY_MAX + 5; i++) {
		snprintf(line, sizeof(line), "cmd%d", i);
		le_history_add(&le, line);
	}
	cr_assert_eq(le.hist_count, LE_HISTORY_MAX);
	snprintf(line, sizeof(line), "cmd%d", LE_HISTORY_MAX + 4);
	cr_assert_str_eq(le_history_get(&le, 0), line);
	cr_assert_str_eq(le_history_get(&le, LE_HISTORY_MAX - 1), "cmd5");
	cr_assert_null(le_history_get(&le, LE_HISTORY_MAX));
}

Test(line_editor, overflow_is_refused_with_a_bell)
{
	for (int i = 0; i < LE_LINE_MAX + 20; i++)
		le_feed(&le, 'x');
	cr_assert_eq(le.len, LE_LINE_MAX - 1);
	cr_assert_not_null(strchr(out, '\a'));
	cr_assert_eq(type("\r"), LE_DONE);
	cr_assert_eq(strlen(le_line(&le)), LE_LINE_MAX - 1);
}

Test(line_editor, ctrl_c_abandons_and_unknown_input_is_ignored)
{
	type("abc");
	cr_assert_eq(le_feed(&le, 0x03), LE_CANCEL);
	cr_assert_eq(le.len, 0);
	le_start(&le);
	type("\x1b[99Z\x1bOx\x07\x80\xff"); /* unknown sequences, BEL, 8-bit bytes */
	cr_assert_eq(le.len, 0);
	type("\x1bOH"); /* SS3 form of Home is accepted */
	cr_assert_eq(le.esc, LE_ESC_NONE);
	cr_assert_eq(type("ok\r"), LE_DONE);
	cr_assert_str_eq(le_line(&le), "ok");
}
