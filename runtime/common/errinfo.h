/* The failing rank's error, as its supervisor reports it and the root says
 * it: torch's error file (TORCHELASTIC_ERROR_FILE, written by
 * torch.distributed.elastic's @record), or else the last lines of the
 * command's stderr. Pure.
 *
 * A report's text is one summary line ("ValueError: loss is nan"), then
 * the details (the traceback, or stderr's last lines), bounded to fit a
 * frame's text. */
#ifndef PM_ERRINFO_H
#define PM_ERRINFO_H

#include <stddef.h>

/* The summary line quoted in the restart line is cut to this. */
#define PM_ERR_SUMMARY_MAX 200
/* How much of the command's stderr is kept: its last lines only. */
#define PM_TAIL_BYTES 16384
#define PM_TAIL_LINES 20

/* torch's error.json: {"message": {"message": "T: m", "extraInfo":
 * {"py_callstack": "...", ...}}} or {"message": "m"}. 0 and the message
 * (and the callstack, "" if none) on success; -1 if it is not JSON or has
 * no message. Strings are decoded (escapes, \u to UTF-8) and cut to fit. */
int pm_errfile_parse(const char *json, size_t len, char *msg, size_t msglen, char *trace,
		     size_t tracelen);

/* The last PM_TAIL_BYTES of a stream. */
struct pm_tail {
	char buf[PM_TAIL_BYTES];
	size_t head; /* where the next byte goes */
	size_t len;  /* bytes kept, at most PM_TAIL_BYTES */
};

void pm_tail_reset(struct pm_tail *t);
void pm_tail_feed(struct pm_tail *t, const char *data, size_t n);
/* Its last max_lines whole lines (a line cut by the ring's start is
 * dropped), NUL-terminated, into out. */
void pm_tail_lines(const struct pm_tail *t, unsigned max_lines, char *out, size_t len);

/* A report's text from a summary and details (either may be empty). */
void pm_err_compose(const char *summary, const char *detail, char *out, size_t len);
/* A report's text from stderr's last lines (every line kept): a crash under
 * faulthandler is said by its "Fatal Python error" line found anywhere in
 * them (Python 3.14 prints the C stack, tens of lines, after the Python
 * frames); else the summary is the last line that is not blank (a Python
 * traceback's is the exception). The detail: the last PM_TAIL_LINES lines.
 * "" if the tail holds nothing but blanks. */
void pm_err_from_tail(const char *tail, char *out, size_t len);
/* A report's summary line, cut to PM_ERR_SUMMARY_MAX with "...", control
 * characters as spaces, into out (at least PM_ERR_SUMMARY_MAX + 4). */
void pm_err_summary(const char *text, char *out, size_t len);
/* A report's details (after the summary line), or "" if none. */
const char *pm_err_detail(const char *text);

/* A command's end in words: "exited with code N", then " (ERROR)" with
 * error's first line when it says more than the code does (NULL, blank,
 * "exit code N" and "exited with code N" do not). */
void pm_err_exit_line(int code, const char *error, char *out, size_t len);
/* A report's text when stderr said nothing: stdout's last line that is not
 * blank (tail: its last lines), quoted: 'no error output; stdout's last
 * line: "..."'. "" if stdout has none either. */
void pm_err_from_stdout(const char *tail, char *out, size_t len);

#endif
