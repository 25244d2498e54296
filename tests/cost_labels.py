#!/usr/bin/env python3
"""cost_labels: every registered test carries exactly one cost label, quick, slow or
example (tests/CMakeLists.txt, clg_test_cost), so that `ctest -L quick` and the CI's
passes by label see every test. Reads the suite as ctest lists it.
Usage: cost_labels.py CTEST BUILD_DIR"""
import json
import subprocess
import sys

COST = {"quick", "slow", "example"}


def main():
    ctest, build = sys.argv[1], sys.argv[2]
    out = subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1"], check=True,
                         capture_output=True, text=True).stdout
    tests = json.loads(out)["tests"]
    if not tests:
        sys.exit("cost_labels: ctest lists no tests in " + build)
    bad = []
    for t in tests:
        labels = set()
        for p in t.get("properties", []):
            if p["name"] == "LABELS":
                labels = set(p["value"])
        cost = sorted(labels & COST)
        if len(cost) != 1:
            bad.append("%s: %s" % (t["name"], ", ".join(cost) if cost else "no cost label"))
    for line in bad:
        print("cost_labels: " + line + " (want exactly one of quick, slow, example:"
              " clg_test_cost in tests/CMakeLists.txt)")
    print("cost_labels: %d tests, %d without exactly one cost label" % (len(tests), len(bad)))
    sys.exit(1 if bad else 0)


main()
