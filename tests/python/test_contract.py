"""The procmgr module's names and limits agree with the C headers that
define them (as tests/unit/design-lists.sh holds docs/design.md to them).

procmgr/_contract.py says, for each name, the C constant it mirrors
("# PM_X"); this reads the headers and fails on any difference, both ways:
a value changed on one side, a C name the headers lack, a name with no C
name nor "python only", a request verb one side has and not the other, a
PROCMGR_ name spelt out in another of the module's files (but standby.py's,
checked here too: its top runs outside the package)."""
import ast
import os
import re
import unittest

from procmgr import _contract, standby

TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PKG = os.path.join(TOP, "python", "procmgr")
HEADERS = ["runtime/common/contract.h", "runtime/common/stateproto.h",
           "runtime/common/statestore.h", "runtime/common/warm.h",
           "runtime/sweep/sweep_metric.h"]
VERBS_C = "runtime/common/stateproto.c"


def read(rel):
    with open(os.path.join(TOP, rel), encoding="utf-8") as f:
        return f.read()


def c_defines(texts):
    """{PM_NAME: str or int} of every `#define PM_NAME "text"` and
    `#define PM_NAME 123` in texts."""
    out = {}
    for text in texts:
        for name, value in re.findall(r'^#define (PM_[A-Z0-9_]+) ("[^"\n]*"|\d+)(?=\s|$)', text, re.M):
            out[name] = value[1:-1] if value.startswith('"') else int(value)
    return out


def c_verbs(stateproto_c, stateproto_h):
    """{"begin": "PM_SP_BEGIN", ...}: stateproto.c's table of requests,
    checked against the enum of stateproto.h (every kind has its verb)."""
    verbs = dict(re.findall(r'^\s*\{ "([a-z]+)", (PM_SP_[A-Z]+),', stateproto_c, re.M))
    kinds = re.search(r"enum pm_sp_kind \{([^}]*)\}", stateproto_h)
    assert kinds is not None, "no enum pm_sp_kind in stateproto.h"
    enum = {k.strip() for k in kinds.group(1).split(",") if k.strip()}
    assert enum == set(verbs.values()), "stateproto.c's verbs %s, the enum %s" % (
        sorted(verbs.values()), sorted(enum))
    return {v: k for v, k in verbs.items()}


def py_entries(source):
    """[(NAME, C name or "python only")] of _contract.py's assignments,
    the comment at the end of each line."""
    out = []
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            assert isinstance(target, ast.Name)
            line = lines[node.lineno - 1]
            m = re.search(r"#\s*(PM_[A-Z0-9_]+|python only)\b", line)
            out.append((target.id, m.group(1) if m else None))
    return out


def check(py_source, py_values, headers, verbs):
    """Every difference, as lines saying what is wrong (empty: agreed)."""
    problems = []
    entries = py_entries(py_source)
    if not entries:
        return ["no names in procmgr/_contract.py"]
    mirrored = {}
    for name, cname in entries:
        value = py_values[name]
        if cname is None:
            problems.append("%s: no '# PM_...' (the C name) nor '# python only'" % name)
        elif cname == "python only":
            for c, v in headers.items():
                if v == value and c.startswith("PM_ENV_"):
                    problems.append("%s (%r) is said python only, but %s defines it" %
                                    (name, value, c))
        elif name.startswith("STATE_") and isinstance(value, str):
            if verbs.get(value) != cname:
                problems.append("%s = %r: stateproto.c has %s as %r" % (
                    name, value, cname, {k: v for v, k in verbs.items()}.get(cname)))
            mirrored[cname] = value
        elif cname not in headers:
            problems.append("%s mirrors %s, which no header defines" % (name, cname))
        elif headers[cname] != value:
            problems.append("%s = %r, but %s is %r" % (name, value, cname, headers[cname]))
    for verb, kind in verbs.items():
        if kind not in mirrored:
            problems.append("stateproto.c's request %r (%s) has no STATE_ name in "
                            "procmgr/_contract.py" % (verb, kind))
    return problems


class ContractTest(unittest.TestCase):
    def setUp(self):
        self.source = read("python/procmgr/_contract.py")
        self.values = {k: getattr(_contract, k) for k in dir(_contract) if k.isupper()}
        self.headers = c_defines(read(h) for h in HEADERS)
        self.verbs = c_verbs(read(VERBS_C), read("runtime/common/stateproto.h"))

    def test_names_and_limits_agree_with_the_headers(self):
        self.assertEqual(check(self.source, self.values, self.headers, self.verbs), [])
        self.assertGreaterEqual(len(py_entries(self.source)), 20)

    def test_standby_spells_out_the_same(self):
        self.assertEqual(standby.REFUSED_EXIT, self.headers["PM_WARM_REFUSED_EXIT"])
        self.assertEqual(standby._ENV_WARM_FD, self.headers["PM_ENV_WARM_FD"])

    def test_no_other_file_spells_out_a_procmgr_name(self):
        for f in sorted(os.listdir(PKG)):
            if not f.endswith(".py") or f in ("_contract.py", "standby.py"):
                continue
            with open(os.path.join(PKG, f), encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    self.assertNotRegex(node.value, r"^(PROCMGR|TORCHELASTIC)_[A-Z0-9_]+$",
                                        "%s:%d: use procmgr/_contract.py's name" % (f, node.lineno))

    # The check itself: each kind of drift is caught (the headers as they
    # are, with one thing changed).
    def test_a_value_changed_on_either_side_fails(self):
        headers = dict(self.headers, PM_SP_REPLY_MAX=8192)
        self.assertIn("STATE_REPLY_MAX = 16384, but PM_SP_REPLY_MAX is 8192",
                      check(self.source, self.values, headers, self.verbs))
        values = dict(self.values, ENV_HEARTBEAT="PROCMGR_BEAT")
        self.assertTrue(any("ENV_HEARTBEAT" in p for p in
                            check(self.source, values, self.headers, self.verbs)))

    def test_a_name_gone_from_the_header_fails(self):
        headers = {k: v for k, v in self.headers.items() if k != "PM_ENV_STATE_SOCK"}
        self.assertIn("ENV_STATE_SOCK mirrors PM_ENV_STATE_SOCK, which no header defines",
                      check(self.source, self.values, headers, self.verbs))

    def test_a_new_request_verb_fails(self):
        verbs = dict(self.verbs, drop="PM_SP_DROP")
        self.assertTrue(any("'drop'" in p for p in
                            check(self.source, self.values, self.headers, verbs)))

    def test_a_name_without_its_c_name_fails(self):
        source = self.source + '\nENV_NEW = "PROCMGR_NEW"\n'
        values = dict(self.values, ENV_NEW="PROCMGR_NEW")
        self.assertIn("ENV_NEW: no '# PM_...' (the C name) nor '# python only'",
                      check(source, values, self.headers, self.verbs))

    def test_python_only_said_of_a_c_name_fails(self):
        headers = dict(self.headers, PM_ENV_STATE_SWAP="PROCMGR_STATE_SWAP")
        self.assertTrue(any("said python only" in p for p in
                            check(self.source, self.values, headers, self.verbs)))


if __name__ == "__main__":
    unittest.main()
