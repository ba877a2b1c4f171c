/* A hang's blame: the oldest heartbeat only when it leads by more than
 * the heartbeats resolve, else the rank the stacks name (the only one not
 * waiting in a collective, or the only one elsewhere), else nobody; and
 * the stacks' verdict over the class of what gdb gives. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/blame.h"
#include "common/stacks.h"

#define WAIT "python:\n  File \"train.py\", line 40, in step\n  File \"dist.py\", line 9, in all_reduce\n"
#define SPIN "python:\n  File \"train.py\", line 40, in step\n  File \"train.py\", line 12, in spin\n"
#define WORK24 "thread 1:\n  x at y.c:1\npython:\n  File \"stuck.py\", line 24, in work\n  File \"stuck.py\", line 40, in <module>\n"
#define WORK26 "thread 1:\n  z at y.c:2\npython:\n  File \"stuck.py\", line 26, in work\n  File \"stuck.py\", line 40, in <module>\n"
#define SPIN18 "thread 1:\n  w at y.c:3\npython:\n  File \"stuck.py\", line 18, in spin\n  File \"stuck.py\", line 42, in <module>\n"
#define SLEEP "python:\n  File \"train.py\", line 40, in step\n  File \"train.py\", line 20, in nap\n"

/* gdb's own output (thread apply all bt; thread apply all py-bt) for
 * torch 1.13 ranks on gloo, Debian 12's /usr/bin/python3 with python3-dbg,
 * cut to what matters. A rank waiting in all_reduce: its main thread in
 * c10d::Work::wait; gloo's worker thread sends (to the stuck rank) or
 * receives: those differ between ranks waiting alike. */
#define GLOO(io) \
	"Thread 6 (Thread 0x7f24323616c0 (LWP 28462) \"python3\"):\n" \
	"#0  __futex_abstimed_wait_common64 (private=..., cancel=...) at ./nptl/futex-internal.c:57\n" \
	"#3  0x00007f2456837baf in __pthread_cond_wait_common (abstime=..., cond=...) at ./nptl/pthread_cond_wait.c:503\n" \
	"#6  0x00007f244c12bf6e in gloo::transport::tcp::UnboundBuffer::" io "(int*, std::chrono::duration<long, std::ratio<1l, 1000l> >) () from /lib/libgloo.so.0\n" \
	"#7  0x00007f244c0fb74c in ?? () from /lib/libgloo.so.0\n" \
	"#9  0x00007f245246c8ad in c10d::ProcessGroupGloo::AsyncWork::execute(c10::intrusive_ptr<c10d::ProcessGroupGloo::AsyncWork> >) () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13\n" \
	"#10 0x00007f245246c9d4 in c10d::ProcessGroupGloo::runLoop(int) () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13\n" \
	"#12 0x00007f24568381f5 in start_thread (arg=...) at ./nptl/pthread_create.c:442\n" \
	"\n" \
	"Thread 4 (Thread 0x7f24333636c0 (LWP 28458) \"python3\"):\n" \
	"#0  0x00007f24568b7f36 in epoll_wait (epfd=..., events=...) at ../sysdeps/unix/sysv/linux/epoll_wait.c:30\n" \
	"#1  0x00007f244c11decf in gloo::transport::tcp::Loop::run() () from /lib/libgloo.so.0\n" \
	"#3  0x00007f24568381f5 in start_thread (arg=...) at ./nptl/pthread_create.c:442\n" \
	"\n"
#define MAIN_WAIT \
	"Thread 1 (Thread 0x7f24567ae040 (LWP 24979) \"python3\"):\n" \
	"#0  __futex_abstimed_wait_common64 (private=..., cancel=...) at ./nptl/futex-internal.c:57\n" \
	"#2  0x00007f2456834f7b in __GI___futex_abstimed_wait_cancelable64 (futex_word=...) at ./nptl/futex-internal.c:139\n" \
	"#4  ___pthread_cond_wait (cond=..., mutex=...) at ./nptl/pthread_cond_wait.c:618\n" \
	"#5  0x00007f24524c2843 in c10d::Work::wait(std::chrono::duration<long, std::ratio<1l, 1000l> >) () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13\n" \
	"#6  0x00007f2455da9b4e in ?? () from /lib/x86_64-linux-gnu/libtorch_python.so.1.13\n" \
	"#8  0x0000000000520622 in cfunction_call (func=..., args=..., kwargs=...) at ../Objects/methodobject.c:542\n" \
	"#10 0x00000000005028aa in _PyEval_EvalFrameDefault (tstate=..., frame=..., throwflag=...) at ../Python/ceval.c:4772\n" \
	"#13 PyEval_EvalCode (co=..., globals=..., locals=...) at ../Python/ceval.c:1154\n" \
	"#22 Py_RunMain () at ../Modules/main.c:680\n" \
	"#26 0x000000000060a7b1 in _start ()\n" \
	"\n"
#define MAIN_SPIN \
	"Thread 1 (Thread 0x7f2552675040 (LWP 12200) \"python3\"):\n" \
	"#0  0x00000000005028aa in _PyEval_EvalFrameDefault (tstate=..., frame=..., throwflag=...) at ../Python/ceval.c:1931\n" \
	"#1  0x00000000004f9f1b in _PyEval_EvalFrame (throwflag=..., frame=..., tstate=...) at ../Include/internal/pycore_ceval.h:73\n" \
	"#3  PyEval_EvalCode (co=..., globals=..., locals=...) at ../Python/ceval.c:1154\n" \
	"#12 Py_RunMain () at ../Modules/main.c:680\n" \
	"#16 0x000000000060a7b1 in _start ()\n" \
	"\n"
#define NOPY(n) "Thread " #n " (Thread 0x7f24323616c0 (LWP 28462) \"python3\"):\nUnable to locate python frame\n\n"
#define PY_WAIT \
	"Thread 1 (Thread 0x7f24567ae040 (LWP 24979) \"python3\"):\n" \
	"Traceback (most recent call first):\n" \
	"  <built-in method wait of PyCapsule object at remote 0x7f24356633f0>\n" \
	"  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 1541, in all_reduce\n" \
	"    work.wait()\n" \
	"  File \"/home/alice/train.py\", line 13, in <module>\n" \
	"    dist.all_reduce(t)\n"
#define PY_SPIN(line) \
	"Thread 1 (Thread 0x7f2552675040 (LWP 12200) \"python3\"):\n" \
	"Traceback (most recent call first):\n" \
	"  File \"/home/alice/train.py\", line " #line ", in spin\n" \
	"    x += 1\n" \
	"  File \"/home/alice/train.py\", line 12, in <module>\n" \
	"    spin()\n"
/* Python 3.13 with gdb's py-bt: no frames, as without python3-dbg. */
#define PY_UNREADABLE \
	"Thread 1 (Thread 0x7f2552675040 (LWP 12200) \"python3\"):\n" \
	"(unable to read python frame information)\n"
#define GDB_HEAD "[New LWP 28331]\n[Thread debugging using libthread_db enabled]\n\n"

static const char *const waiting_send = GDB_HEAD GLOO("waitSend") MAIN_WAIT NOPY(6) NOPY(4) PY_WAIT;
static const char *const waiting_recv = GDB_HEAD GLOO("waitRecv") MAIN_WAIT NOPY(6) NOPY(4) PY_WAIT;
static const char *const spinning = GDB_HEAD GLOO("waitRecv") MAIN_SPIN NOPY(6) NOPY(4) PY_SPIN(9);
static const char *const spinning_10 = GDB_HEAD GLOO("waitSend") MAIN_SPIN NOPY(6) NOPY(4) PY_SPIN(10);
static const char *const waiting_send_nopy = GDB_HEAD GLOO("waitSend") MAIN_WAIT NOPY(6) NOPY(4) NOPY(1);
static const char *const waiting_recv_nopy = GDB_HEAD GLOO("waitRecv") MAIN_WAIT NOPY(6) NOPY(4) PY_UNREADABLE;
static const char *const spinning_nopy = GDB_HEAD GLOO("waitRecv") MAIN_SPIN NOPY(6) NOPY(4) NOPY(1);
/* A Python thread of its own (a data loader's) elsewhere: the main thread
 * is what counts. */
static const char *const waiting_thread_elsewhere = GDB_HEAD GLOO("waitSend") MAIN_WAIT
	"Thread 2 (Thread 0x7f2552675041 (LWP 12201) \"python3\"):\n"
	"#0  0x00000000005028aa in _PyEval_EvalFrameDefault (tstate=...) at ../Python/ceval.c:1931\n\n"
	"Thread 2 (Thread 0x7f2552675041 (LWP 12201) \"python3\"):\n"
	"Traceback (most recent call first):\n"
	"  File \"/home/alice/loader.py\", line 3, in fetch\n\n" PY_WAIT;
/* What the supervisors and procmgrd say for a stack not taken. */
#define TIMED_OUT(r) "procmgr: no stack for rank " #r ": /usr/bin/gdb did not finish within 10.0 s " \
	"(node load 24.0 on 2 CPUs; --procmgr-stack-timeout raises the bound)\n"
#define NONE_CAME(r) "procmgr: no stack for rank " #r ": none came before the stop (its node or " \
	"supervisor was lost, or its command ended first)\n"

/* gdb's texts, normalized as procmgrd keeps them, judged. */
static void judge(const char *const *raw, int n, int *place, struct pm_stack_verdict *v)
{
	static char norm[8][8192];
	const char *texts[8];
	int ranks[8], i;

	assert_true(n <= 8);
	for (i = 0; i < n; i++) {
		if (!strncmp(raw[i], "procmgr: ", 9))
			snprintf(norm[i], sizeof(norm[i]), "%s", raw[i]);
		else
			assert_true(pm_stack_normalize(raw[i], norm[i], sizeof(norm[i])) > 0);
		texts[i] = norm[i];
		ranks[i] = i;
	}
	assert_int_equal(pm_blame_stacks(texts, ranks, n, place, v), 0);
}

static void has(const char *text, const char *what)
{
	if (!strstr(text, what))
		fail_msg("'%s' not in '%s'", what, text);
}

/* Issue 32 item 10: one rank stuck in Python while the others wait in
 * all_reduce, their gloo threads differing (one sends, one receives):
 * whole stacks made 4 places and "inconclusive"; the main thread's
 * Python frames name the stuck rank, whichever rank it is. */
static void test_stacks_stuck_in_python(void **state)
{
	struct pm_stack_verdict v;
	int place[8], stuck;
	(void)state;

	for (stuck = 0; stuck < 4; stuck++) {
		const char *raw[4];
		int i;
		for (i = 0; i < 4; i++)
			raw[i] = i == stuck ? spinning : i % 2 ? waiting_recv : waiting_send;
		judge(raw, 4, place, &v);
		assert_int_equal(v.rank, stuck);
		assert_true(v.py);
		assert_int_equal(v.taken, 4);
		assert_int_equal(v.missing, 0);
		assert_int_equal(v.places, 2);
		has(v.words, "the only rank not waiting in a collective (it is in spin; ranks ");
		has(v.words, " wait in all_reduce)");
		assert_string_equal(v.missing_words, "");
		assert_int_equal(place[stuck], 1);
	}
	/* Two ranks: the one not in the collective. */
	{
		const char *raw[] = { waiting_recv, spinning };
		judge(raw, 2, place, &v);
		assert_int_equal(v.rank, 1);
		assert_string_equal(v.words, "the only rank not waiting in a collective (it is in "
				    "spin; rank 0 waits in all_reduce)");
	}
	/* The spinning rank caught at another line: still one place. */
	{
		const char *raw[] = { waiting_recv, spinning, waiting_send, spinning_10 };
		judge(raw, 4, place, &v);
		assert_int_equal(v.rank, -1);
		assert_int_equal(v.places, 2);
		assert_string_equal(v.words, "no single rank stands apart (ranks 0,2 in all_reduce; "
				    "ranks 1,3 in spin)");
	}
	/* Another Python thread elsewhere: the main thread counts. */
	{
		const char *raw[] = { waiting_thread_elsewhere, waiting_recv, spinning };
		judge(raw, 3, place, &v);
		assert_int_equal(v.rank, 2);
		assert_int_equal(v.places, 2);
	}
}

/* Without Python frames (no python3-dbg, or Python 3.13's that gdb cannot
 * read): the main thread's native frames, the gloo threads aside. */
static void test_stacks_no_python_frames(void **state)
{
	struct pm_stack_verdict v;
	int place[8];
	(void)state;

	{
		const char *raw[] = { waiting_send_nopy, waiting_recv_nopy, spinning_nopy,
				      waiting_send_nopy };
		judge(raw, 4, place, &v);
		assert_false(v.py);
		assert_int_equal(v.rank, 2);
		assert_int_equal(v.places, 2);
		assert_string_equal(v.words, "the only rank not waiting in a collective (it is in "
				    "PyEval_EvalCode; ranks 0-1,3 wait in c10d::Work::wait)");
	}
	/* One rank with Python frames among ranks without: all by the native
	 * frames, so that it does not stand apart for that alone. */
	{
		const char *raw[] = { waiting_send, waiting_recv_nopy, waiting_send_nopy };
		judge(raw, 3, place, &v);
		assert_false(v.py);
		assert_int_equal(v.rank, -1);
		assert_int_equal(v.places, 1);
		assert_string_equal(v.words, "the stacks taken are all in one place (ranks 0-2 in "
				    "c10d::Work::wait)");
	}
}

/* Stacks not taken count for nothing, are never a place, and are said. */
static void test_stacks_missing(void **state)
{
	struct pm_stack_verdict v;
	int place[8];
	(void)state;

	{
		const char *raw[] = { waiting_send, TIMED_OUT(1), waiting_recv, spinning };
		judge(raw, 4, place, &v);
		assert_int_equal(v.rank, 3);
		assert_int_equal(v.taken, 3);
		assert_int_equal(v.missing, 1);
		assert_int_equal(v.places, 2);
		assert_int_equal(place[1], -1);
		assert_string_equal(v.missing_words, "not taken: the stack of rank 1 (/usr/bin/gdb "
				    "did not finish within 10.0 s (node load 24.0 on 2 CPUs; "
				    "--procmgr-stack-timeout raises the bound))");
	}
	/* The stuck rank's own stack timed out: nobody is named. */
	{
		const char *raw[] = { waiting_send, waiting_recv, TIMED_OUT(2), TIMED_OUT(3),
				      NONE_CAME(4) };
		judge(raw, 5, place, &v);
		assert_int_equal(v.rank, -1);
		assert_int_equal(v.taken, 2);
		assert_int_equal(v.places, 1);
		assert_string_equal(v.words, "the stacks taken are all in one place (ranks 0-1 in "
				    "all_reduce)");
		has(v.missing_words, "not taken: the stack of ranks 2-3 (/usr/bin/gdb did not "
		    "finish within 10.0 s");
		has(v.missing_words, "; rank 4 (none came before the stop (its node or supervisor "
		    "was lost, or its command ended first))");
	}
	{
		const char *raw[] = { TIMED_OUT(0), TIMED_OUT(1) };
		judge(raw, 2, place, &v);
		assert_int_equal(v.rank, -1);
		assert_int_equal(v.taken, 0);
		assert_int_equal(v.places, 0);
		assert_string_equal(v.words, "no stack was taken");
		has(v.missing_words, "ranks 0-1");
	}
	/* A tool's output without frames (only its thread lines) is no stack. */
	{
		const char *raw[] = { "Thread 1 (Thread 0x7f (LWP 3)):\n", waiting_send };
		judge(raw, 2, place, &v);
		assert_int_equal(v.taken, 1);
		assert_int_equal(v.missing, 1);
		assert_string_equal(v.words, "only rank 1's stack was taken (in all_reduce)");
	}
}

/* Every rank in one place, two groups, an odd one without collectives. */
static void test_stacks_places(void **state)
{
	struct pm_stack_verdict v;
	int place[8];
	(void)state;

	{
		const char *raw[] = { waiting_send, waiting_recv, waiting_send, waiting_recv };
		judge(raw, 4, place, &v);
		assert_int_equal(v.rank, -1);
		assert_int_equal(v.places, 1);
		assert_string_equal(v.words, "the stacks taken are all in one place (ranks 0-3 in "
				    "all_reduce)");
	}
	{
		const char *raw[] = { spinning, waiting_recv, spinning_10, waiting_send };
		judge(raw, 4, place, &v);
		assert_int_equal(v.rank, -1);
		assert_int_equal(v.places, 2);
		assert_int_equal(place[0], 0); /* a tie: the lowest rank's first */
		assert_int_equal(place[1], 1);
	}
	/* No collective (stuck.py's work() and spin()): the odd one out. */
	{
		const char *norm[] = { WORK24, WORK26, SPIN18, WORK24 };
		int ranks[] = { 0, 1, 2, 3 };
		assert_int_equal(pm_blame_stacks(norm, ranks, 4, place, &v), 0);
		assert_int_equal(v.rank, 2);
		assert_string_equal(v.words, "the only rank whose stack differs from the others' "
				    "(it is in spin; ranks 0-1,3 in work)");
		/* Two of them elsewhere: nobody. */
		norm[1] = SPIN18;
		assert_int_equal(pm_blame_stacks(norm, ranks, 4, place, &v), 0);
		assert_int_equal(v.rank, -1);
	}
}

/* What `procmgr stacks` shows by default: the main thread, by its Python
 * frames where it has them. */
static void test_stack_brief(void **state)
{
	char norm[8192], out[8192];
	(void)state;

	pm_stack_normalize(waiting_send, norm, sizeof(norm));
	assert_true(strstr(norm, "waitSend") != NULL);
	pm_stack_brief(norm, out, sizeof(out));
	assert_string_equal(out, "thread 1:\npython:\n"
			    "  File \"/usr/lib/python3/dist-packages/torch/distributed/"
			    "distributed_c10d.py\", line 1541, in all_reduce\n"
			    "  File \"/home/alice/train.py\", line 13, in <module>\n");
	pm_stack_normalize(waiting_recv_nopy, norm, sizeof(norm));
	pm_stack_brief(norm, out, sizeof(out));
	assert_null(strstr(out, "gloo"));
	has(out, "thread 1:\n  __futex_abstimed_wait_common64 at ./nptl/futex-internal.c:57\n");
	has(out, "  c10d::Work::wait(std::chrono::duration<long, from /lib/x86_64-linux-gnu/"
	    "libtorch_cpu.so.1.13\n");
	/* Cut at a whole line. */
	pm_stack_normalize(waiting_send, norm, sizeof(norm));
	pm_stack_brief(norm, out, 30);
	assert_string_equal(out, "thread 1:\npython:\n");
	pm_stack_brief("procmgr: no stack for rank 1: x\n", out, sizeof(out));
	assert_string_equal(out, "");
}

static void test_overrun_words(void **state)
{
	char buf[256];
	(void)state;

	/* The bound grows with the load per CPU, within [base, max]. */
	assert_int_equal(pm_stack_bound_ms(20000, 0.5, 2, 120000), 20000);
	assert_int_equal(pm_stack_bound_ms(20000, -1, 2, 120000), 20000);
	assert_int_equal(pm_stack_bound_ms(20000, 6.0, 2, 120000), 60000);
	assert_int_equal(pm_stack_bound_ms(20000, 24.0, 2, 120000), 120000);
	assert_int_equal(pm_stack_bound_ms(20000, 6.0, 0, 120000), 20000);

	pm_stack_overrun_words("/usr/bin/gdb", 10000, 24.04, 2, "--procmgr-stack-timeout raises "
			       "the bound", buf, sizeof(buf));
	assert_string_equal(buf, "/usr/bin/gdb did not finish within 10.0 s (node load 24.0 on 2 "
			    "CPUs; --procmgr-stack-timeout raises the bound)");
	pm_stack_overrun_words("gdb", 2500, -1, 2, "", buf, sizeof(buf));
	assert_string_equal(buf, "gdb did not finish within 2.5 s");
	pm_stack_overrun_words("gdb", 2500, 0.5, 1, NULL, buf, sizeof(buf));
	assert_string_equal(buf, "gdb did not finish within 2.5 s (node load 0.5 on 1 CPU)");
	pm_stack_overrun_words(NULL, 2000, 3.0, 2, "x", buf, sizeof(buf));
	assert_string_equal(buf, "waiting: no turn among this node's stack tools within 2.0 s "
			    "(node load 3.0 on 2 CPUs; x)");
}

/* The verdict's words with the stacks': named, inconclusive, not taken. */
static void test_text(void **state)
{
	struct pm_blame b = { PM_BLAME_STACK, 3 };
	struct pm_stack_verdict v = { .rank = 3 };
	int follower[] = { 2, 0, 1 };
	char buf[2048];
	(void)state;

	snprintf(v.words, sizeof(v.words), "the only rank not waiting in a collective (it is in "
		 "spin; ranks 0-2 wait in all_reduce)");
	pm_blame_text(&b, 3, "n1", "n2", follower, 3, 3, 4, &v, buf, sizeof(buf));
	assert_string_equal(buf, "ranks 0-3 hung with their last heartbeats within 4 ms of each "
			    "other, less than heartbeats resolve (100 ms): rank 3 on n2, the only "
			    "rank not waiting in a collective (it is in spin; ranks 0-2 wait in "
			    "all_reduce), is the likely cause");
	b = (struct pm_blame){ PM_BLAME_NONE, -1 };
	v.rank = -1;
	snprintf(v.words, sizeof(v.words), "the stacks taken are all in one place (ranks 0-1 in "
		 "all_reduce)");
	snprintf(v.missing_words, sizeof(v.missing_words), "not taken: the stack of ranks 2-3 "
		 "(gdb did not finish within 10.0 s)");
	pm_blame_text(&b, 1, "n1", "", follower, 3, 3, 4, &v, buf, sizeof(buf));
	has(buf, "(100 ms): inconclusive: the stacks taken are all in one place (ranks 0-1 in "
	    "all_reduce); not taken: the stack of ranks 2-3 (gdb did not finish within 10.0 s)");
	pm_blame_text(&b, 1, "n1", "", follower, 3, 3, 4, NULL, buf, sizeof(buf));
	has(buf, "(100 ms): inconclusive, no evidence points at one rank");
	/* A lead the heartbeats resolve, the stacks naming another rank. */
	b = (struct pm_blame){ PM_BLAME_STACK, 3 };
	v.rank = 3;
	v.missing_words[0] = '\0';
	snprintf(v.words, sizeof(v.words), "the only rank not waiting in a collective (it is in "
		 "spin; ranks 0-2 wait in all_reduce)");
	{
		int others[] = { 3, 0, 2 };
		pm_blame_text(&b, 1, "n1", "n2", others, 3, 3, 400, &v, buf, sizeof(buf));
	}
	assert_string_equal(buf, "ranks 0-3 hung: rank 3 on n2, the only rank not waiting in a "
			    "collective (it is in spin; ranks 0-2 wait in all_reduce), is the likely "
			    "cause (rank 1's last heartbeat is the oldest, by 400 ms: the stacks say "
			    "more)");
}

static void test_hang(void **state)
{
	struct pm_blame b;
	(void)state;

	/* The coin toss: 1 ms ahead of the next, all waiting alike. */
	b = pm_blame_hang(3, 7, 1, PM_BLAME_RESOLUTION_MS, -1);
	assert_int_equal(b.by, PM_BLAME_NONE);
	assert_int_equal(b.rank, -1);
	assert_string_equal(pm_blame_name(b.by), "none");
	/* The same tie, rank 5's stack elsewhere. */
	b = pm_blame_hang(3, 7, 1, PM_BLAME_RESOLUTION_MS, 5);
	assert_int_equal(b.by, PM_BLAME_STACK);
	assert_int_equal(b.rank, 5);
	/* A lead the heartbeats resolve is evidence when the stacks name
	 * nobody; the stacks outweigh it (beats of one step differ by the
	 * step's work on each rank). */
	b = pm_blame_hang(3, 7, PM_BLAME_RESOLUTION_MS, PM_BLAME_RESOLUTION_MS, -1);
	assert_int_equal(b.by, PM_BLAME_HEARTBEAT);
	assert_int_equal(b.rank, 3);
	b = pm_blame_hang(3, 7, PM_BLAME_RESOLUTION_MS, PM_BLAME_RESOLUTION_MS, 5);
	assert_int_equal(b.by, PM_BLAME_STACK);
	assert_int_equal(b.rank, 5);
	/* Judged hung alone: the others beat on until the stop. */
	b = pm_blame_hang(2, 0, 0, PM_BLAME_RESOLUTION_MS, -1);
	assert_int_equal(b.by, PM_BLAME_HEARTBEAT);
	assert_int_equal(b.rank, 2);
	assert_string_equal(pm_blame_name(PM_BLAME_STACK), "stack");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hang),
		cmocka_unit_test(test_stacks_stuck_in_python),
		cmocka_unit_test(test_stacks_no_python_frames),
		cmocka_unit_test(test_stacks_missing),
		cmocka_unit_test(test_stacks_places),
		cmocka_unit_test(test_stack_brief),
		cmocka_unit_test(test_overrun_words),
		cmocka_unit_test(test_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
