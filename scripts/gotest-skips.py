#!/usr/bin/env python3
"""Render `go test -json` as go test prints it, then list the skipped tests.

Usage: go test -json ARGS... | scripts/gotest-skips.py

What go test prints without -v comes through unchanged: each package's
closing line (ok / FAIL / no test files), build errors, and the output of
failing tests. After the run it prints every skipped test with the reason
its t.Skip gave, so that a run without ../shared (or without numpy, or in
-short mode) says what it did not test. The exit status is 1 when a test
or build failed, else 0; the Makefile also checks go test's own status.
"""
import json
import sys

HEADERS = ("=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- SKIP", "--- FAIL")


def main():
    buffered = {}  # (package, test) -> output lines
    skipped = []   # (package, test, reason lines)
    failed = False
    for raw in sys.stdin:
        try:
            ev = json.loads(raw)
        except ValueError:
            sys.stdout.write(raw)  # not JSON: go itself (e.g. "go: downloading")
            continue
        action, test = ev.get("Action"), ev.get("Test")
        if action == "build-output":
            sys.stdout.write(ev.get("Output", ""))
            continue
        if action == "build-fail":
            failed = True
            continue
        key = (ev.get("Package", ""), test)
        if action == "output":
            if test is None:
                out = ev.get("Output", "")
                # Package lines: keep the closing summary, drop the bare
                # PASS that -json adds; a package's FAIL stays.
                if out.strip() != "PASS":
                    sys.stdout.write(out)
            else:
                buffered.setdefault(key, []).append(ev.get("Output", ""))
        elif action == "fail":
            failed = True
            if test is not None:
                sys.stdout.write("".join(buffered.pop(key, [])))
        elif action == "skip" and test is not None:
            lines = buffered.pop(key, [])
            reason = [l.strip() for l in lines if l.strip() and not l.lstrip().startswith(HEADERS)]
            skipped.append((key[0], test, reason))
        elif action == "pass" and test is not None:
            buffered.pop(key, None)
    if skipped:
        print("\n%d test%s skipped:" % (len(skipped), "" if len(skipped) == 1 else "s"))
        for pkg, test, reason in skipped:
            why = "; ".join(reason) if reason else "(no reason given)"
            print("  SKIP %s %s: %s" % (pkg, test, why))
    else:
        print("\nno test skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
