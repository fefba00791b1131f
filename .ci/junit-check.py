"""The audit's JUnit as a JUnit consumer reads it (junitparser): every test
of a three-test selection of the fixture suite is a test case, with its time.

Usage: python3 .ci/junit-check.py AUDIT.xml NAME...
"""
import sys

from junitparser import JUnitXml

path, names = sys.argv[1], sorted(sys.argv[2:])
xml = JUnitXml.fromfile(path)
cases = [case for suite in xml for case in suite]
got = sorted(case.name for case in cases)
assert got == names, f"test cases {got}, expected {names}"
assert sum(suite.tests for suite in xml) == len(names), "testsuite counts"
for case in cases:
    assert case.time is not None and case.time >= 0, f"{case.name}: no time"
    assert case.classname == "fdwindow::example/audit-fixture", case.classname
print(f"junitparser: {len(cases)} test cases, each with its time: {path}")
