#!/usr/bin/env python3
"""Python's own regression tests with and without rampart (make check-real).

Runs `python3.11 -m test` on one list of test modules three times, with
PYTHONMALLOC=malloc so that every Python object comes from malloc:

  glibc     the C library's malloc (the reference)
  madvise   LD_PRELOAD=librampart.so, RAMPART_OPTIONS=guard=madvise
  mprotect  LD_PRELOAD=librampart.so, RAMPART_OPTIONS=guard=mprotect

and compares the results module by module, and inside a module test by test
(from regrtest's --junit-xml). A module that fails under rampart but not under
glibc fails the check unless test/real/python-known.txt lists it, or lists every
test of it that failed only under rampart, with a reason.

This script runs without rampart; only the regrtest processes get the preload.
"""

import argparse
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))

# Module statuses, in the order regrtest's summary lists them.
SUMMARY_BLOCKS = [
    ("failed", re.compile(r"^\d+ tests? failed:$")),
    ("env changed", re.compile(r"^\d+ tests? altered the execution environment:$")),
    ("skipped", re.compile(r"^\d+ tests? skipped:$")),
    ("re-run", re.compile(r"^\d+ re-run tests?:$")),
    ("no tests", re.compile(r"^\d+ tests? run no tests:$")),
    ("omitted", re.compile(r"^\d+ tests? omitted:$")),
]
BAD = ("failed", "omitted", "missing")


def read_list(path):
    """Lines of a list file without comments and blank lines."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                out.append(line)
    return out


def read_known(path):
    """python-known.txt: `ID: reason`, ID a module or a test id (or a prefix of ids
    ending at a dot boundary, such as a TestCase class)."""
    known = {}
    for line in read_list(path):
        ident, sep, reason = line.partition(":")
        if not sep or not reason.strip():
            sys.exit(f"{path}: entry without a reason: {line}")
        known[ident.strip()] = reason.strip()
    return known


# Test modules whose cases carry another package's name: test_ctypes runs
# ctypes.test.*, test_unittest unittest.test.*, test_pickletools the doctests of
# pickletools, ... (test_<name>), and these two.
OTHER_NAMES = {"builtins": "test_builtin", "idlelib": "test_idle"}


def module_of(test_id):
    """test.test_dict.DictTest.test_x -> test_dict (the regrtest module name);
    ctypes.test.test_x.T.test_y -> test_ctypes. A few doctest ids have no module
    name at all: they get a name no module has, and count only in the totals."""
    parts = test_id.split(".")
    if len(parts) > 1 and parts[0] == "test":
        return parts[1]
    if parts[0].startswith("test_"):
        return parts[0]
    return OTHER_NAMES.get(parts[0], "test_" + parts[0])


def parse_summary(log_text, selected):
    """Per-module status from regrtest's final summary."""
    lists = {name: set() for name, _ in SUMMARY_BLOCKS}
    lines = log_text.splitlines()
    try:
        start = max(i for i, l in enumerate(lines) if l.startswith("== Tests result:"))
    except ValueError:
        return None, set()
    current = None
    for line in lines[start + 1:]:
        if not line.strip():
            current = None
            continue
        if current is not None and line.startswith("    "):
            lists[current].update(line.split())
            continue
        current = None
        for name, pattern in SUMMARY_BLOCKS:
            if pattern.match(line.strip()):
                current = name
    status = {}
    for mod in selected:
        status[mod] = "ok"
        for name in ("no tests", "skipped", "env changed", "omitted", "failed"):
            if mod in lists[name]:
                status[mod] = name
    return status, lists["re-run"]


def parse_junit(path):
    """{test id: pass|fail|skip}. The last record of an id wins: a -w re-run comes
    after the first run. (A test whose subtest fails is recorded without a name:
    such a module can only be listed whole.)"""
    cases = {}
    if not os.path.exists(path):
        return cases
    for case in ET.parse(path).getroot().iter("testcase"):
        tags = {child.tag for child in case}
        if "error" in tags or "failure" in tags:
            result = "fail"
        elif "skipped" in tags:
            result = "skip"
        else:
            result = "pass"
        name = case.get("name")
        if name:
            cases[name] = result
    return cases


def check_preload(python, env, backend):
    """The preload must be in force, with the backend asked for."""
    code = ("import ctypes; f = ctypes.CDLL(None).rampart_guard_backend; "
            "f.restype = ctypes.c_char_p; print(f().decode())")
    out = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True)
    got = out.stdout.strip()
    if out.returncode != 0 or got != backend:
        sys.exit(f"rampart not in force for guard={backend}: {got!r} {out.stderr.strip()}")


def run_config(args, name, modules, excluded, ignorefile):
    env = dict(os.environ)
    env["PYTHONMALLOC"] = "malloc"
    for key in ("LD_PRELOAD", "RAMPART_OPTIONS", "PYTHONPATH", "PYTHONHOME"):
        env.pop(key, None)
    if name != "glibc":
        env["LD_PRELOAD"] = os.path.abspath(args.lib)
        env["RAMPART_OPTIONS"] = f"guard={name}"
        if not args.no_run:
            check_preload(args.python, env, name)
    work = os.path.join(args.out, name)
    os.makedirs(work, exist_ok=True)
    xml = os.path.join(args.out, f"{name}.xml")
    log = os.path.join(args.out, f"{name}.log")
    if os.path.exists(xml) and not args.no_run:
        os.unlink(xml)
    cmd = [args.python, "-m", "test", f"-j{args.jobs}", "-w",
           f"--timeout={args.timeout}", f"--junit-xml={xml}"]
    if ignorefile:
        cmd.append(f"--ignorefile={ignorefile}")
    cmd += modules
    returncode = "not run again"
    if not args.no_run:
        print(f"check-real: {name}: {len(modules)} modules, log {log}", flush=True)
        with open(log, "w") as f:
            returncode = subprocess.run(cmd, env=env, cwd=work, stdout=f, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL).returncode
    with open(log) as f:
        text = f.read()
    status, rerun = parse_summary(text, modules)
    if status is None:
        sys.exit(f"check-real: {name}: no regrtest summary (exit {returncode}); see {log}")
    # The XML of an earlier run may hold modules excluded since.
    cases = {t: v for t, v in parse_junit(xml).items() if module_of(t) not in excluded}
    rerun = rerun & set(modules)
    took = re.findall(r"^Total duration: (.*)$", text, re.M)
    # rampart's own lines: a fatal one in a test's child process fails the check
    # even when the test tolerated the child's death.
    said = [l for l in text.splitlines() if "rampart: fatal" in l or "rampart: warning" in l]
    return {"status": status, "rerun": rerun, "cases": cases, "said": said,
            "time": took[-1] if took else "?"}


def counts(result):
    mods = {}
    for s in result["status"].values():
        mods[s] = mods.get(s, 0) + 1
    tests = {"pass": 0, "fail": 0, "skip": 0}
    for r in result["cases"].values():
        tests[r] += 1
    return mods, tests


def matches(known, test_id):
    """The entry of python-known.txt that covers test_id, if any."""
    for ident in known:
        if test_id == ident or test_id.startswith(ident + "."):
            return ident
    return None


def select_modules(path, python):
    """A module list: names, `*` for every module of the installed suite, and
    `-name: reason` to leave one out."""
    selected, excluded = [], {}
    for line in read_list(path):
        if line == "*":
            out = subprocess.run([python, "-m", "test", "--list-tests"], check=True,
                                 capture_output=True, text=True, stdin=subprocess.DEVNULL)
            selected += out.stdout.split()
        elif line.startswith("-"):
            name, _, reason = line[1:].partition(":")
            if not reason.strip():
                sys.exit(f"{path}: exclusion without a reason: {line}")
            excluded[name.strip()] = reason.strip()
        else:
            selected.append(line)
    return [m for m in dict.fromkeys(selected) if m not in excluded], excluded


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True, help="librampart.so to preload")
    ap.add_argument("--out", required=True, help="directory for logs and XML")
    ap.add_argument("--modules", required=True, help="file listing the test modules")
    ap.add_argument("--known", default=os.path.join(HERE, "python-known.txt"))
    ap.add_argument("--ignore", default=os.path.join(HERE, "python-ignore.txt"),
                    help="regrtest --ignorefile for every configuration")
    ap.add_argument("--python", default="/usr/bin/python3.11")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=900, help="per module, seconds")
    ap.add_argument("--configs", default="glibc,madvise,mprotect")
    ap.add_argument("--no-run", action="store_true",
                    help="compare the logs and XML of the last run again")
    args = ap.parse_args()
    args.out = os.path.abspath(args.out)  # regrtest runs in a directory of its own

    if not os.path.exists(os.path.join(os.path.dirname(args.python),
                                       "..", "lib", "python3.11", "test", "regrtest.py")):
        sys.exit("check-real: Python's test suite is missing: apt-get install libpython3.11-testsuite")
    modules, excluded = select_modules(args.modules, args.python)
    known = read_known(args.known)
    ignore = read_list(args.ignore) if os.path.exists(args.ignore) else []
    ignorefile = None
    os.makedirs(args.out, exist_ok=True)
    if ignore:
        ignorefile = os.path.abspath(os.path.join(args.out, "ignore.txt"))
        # A dotted name without wildcards is taken by regrtest as one whole test
        # id; the `.*` form covers what is inside a class.
        with open(ignorefile, "w") as f:
            for i in ignore:
                ident = i.partition(":")[0].strip()
                f.write(f"{ident}\n{ident}.*\n")

    configs = args.configs.split(",")
    results = {name: run_config(args, name, modules, excluded, ignorefile) for name in configs}

    print()
    print(f"check-real: {len(modules)} modules of Python's test suite, PYTHONMALLOC=malloc, -j{args.jobs}")
    print(f"{'configuration':<14}{'time':>14}  modules ok/failed/env changed/skipped/no tests"
          "   tests passed/failed/skipped   re-run (failed once)")
    for name, res in results.items():
        mods, tests = counts(res)
        m = "/".join(str(mods.get(k, 0)) for k in ("ok", "failed", "env changed", "skipped", "no tests"))
        t = f"{tests['pass']}/{tests['fail']}/{tests['skip']}"
        print(f"{name:<14}{res['time']:>14}  {m:<47}{t:<30}{' '.join(sorted(res['rerun'])) or '-'}")

    base = results.get("glibc")
    bad = []
    used = set()
    if base is None:
        print("check-real: no glibc run to compare with")
        return 1
    for name in configs:
        if name == "glibc":
            continue
        res = results[name]
        for mod in modules:
            b, r = base["status"][mod], res["status"][mod]
            # Tests that failed here and passed (or did not run) under glibc.
            new = sorted(t for t, v in res["cases"].items()
                         if v == "fail" and module_of(t) == mod and base["cases"].get(t) != "fail")
            if r not in BAD:
                if b in BAD:
                    print(f"  note: {mod}: {b} under glibc, {r} under {name}")
                elif r == "env changed" and b != r:
                    print(f"  note: {name}: {mod}: altered the execution environment only under "
                          f"rampart (not a failure; see {os.path.join(args.out, name + '.log')})")
                continue
            if b in BAD and not new:
                recorded = any(module_of(t) == mod for t in res["cases"])
                recorded_base = any(module_of(t) == mod for t in base["cases"])
                if recorded or not recorded_base:
                    continue  # the same failures under glibc
            if mod in known:
                used.add(mod)
                print(f"  {name}: {mod}: {r}, listed: {known[mod]}")
                continue
            unlisted = [t for t in new if not matches(known, t)]
            for t in new:
                if matches(known, t):
                    used.add(matches(known, t))
            if new and not unlisted:
                print(f"  {name}: {mod}: {r}, every new failure listed: "
                      + "; ".join(f"{t} ({known[matches(known, t)]})" for t in new))
                continue
            what = ", ".join(unlisted) if unlisted else "no failing test id recorded (crash, timeout or subtest)"
            bad.append(f"{name}: {mod}: {r} (glibc: {b}): {what}")
        for line in res["said"]:
            print(f"  {name}: rampart said: {line.strip()}")
            if "rampart: fatal" in line:
                bad.append(f"{name}: rampart: fatal in the log: {line.strip()}")
    for ident in sorted(i for i in set(known) - used if module_of(i) in modules):
        print(f"  note: listed in python-known.txt but did not fail: {ident}")
    for mod, reason in excluded.items():
        print(f"  not run ({os.path.basename(args.modules)}): {mod}: {reason}")
    for ident in (i for i in ignore if module_of(i) in modules):
        print(f"  not run (python-ignore.txt): {ident}")
    if bad:
        print()
        for line in bad:
            print(f"check-real: FAIL: {line}")
        return 1
    print("check-real: nothing fails under rampart that passes under glibc")
    return 0


if __name__ == "__main__":
    sys.exit(main())
