#!/usr/bin/env python3
"""rdma-core's own Python tests (its tests/ directory) on a device, as TAP.

    rdma-core-tests.py TESTDIR DEVICE GID_INDEX [PATTERN...]

TESTDIR is a writable copy of rdma-core's tests/ (scripts/build-provider
puts one in build/provider/rdma-core-tests/tests).  Every unittest case is
one TAP line: skips (a feature the device lacks, another vendor's tests)
are "ok ... # SKIP".  PATTERNs, if given, keep only the tests whose id
contains one of them.  RDMA_CORE_TODO names a file of tests that fail on
rxe too (an id and why, a line each): their failures are "not ok ... #
TODO", which count as none.
"""

import os
import sys
import time
import traceback
import unittest
from importlib.machinery import SourceFileLoader


def shared_failures(path):
    """The id -> reason of each test listed in path, if there is one."""
    found = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip() and not line.startswith('#'):
                    test, _, why = line.strip().partition(' ')
                    found[test] = why
    return found


SHARED_FAILURES = shared_failures(os.environ.get('RDMA_CORE_TODO'))


class TapResult(unittest.TestResult):
    """One TAP line per test, when it stops: a test can report several
    errors (the test, then its cleanup), and TAP numbers tests, not errors."""

    def __init__(self):
        super().__init__()
        self.n = 0
        self.bad = 0
        self.start = 0.0
        self.verdict = None
        self.diag = []

    def startTest(self, test):
        super().startTest(test)
        self.start = time.monotonic()
        self.verdict = ''
        self.diag = []

    def stopTest(self, test):
        super().stopTest(test)
        self.n += 1
        took = f' ({time.monotonic() - self.start:.1f} s)'
        if self.verdict == 'fail' and test.id() in SHARED_FAILURES:
            print(f'not ok {self.n} - {test.id()}{took} # TODO fails on '
                  f'rxe too: {SHARED_FAILURES[test.id()]}')
        elif self.verdict == 'fail':
            self.bad += 1
            print(f'not ok {self.n} - {test.id()}{took}')
        elif self.verdict.startswith(' #'):
            print(f'ok {self.n} - {test.id()}{self.verdict}')
        else:
            print(f'ok {self.n} - {test.id()}{took}')
        for line in self.diag:
            print(f'# {line}')
        sys.stdout.flush()

    def _fail(self, err):
        self.verdict = 'fail'
        self.diag += ''.join(traceback.format_exception(*err)).splitlines()

    def addFailure(self, test, err):
        self._fail(err)

    def addError(self, test, err):
        self._fail(err)

    def addSkip(self, test, reason):
        if self.verdict != 'fail':
            self.verdict = ' # SKIP ' + ' '.join(str(reason).split())

    def addExpectedFailure(self, test, err):
        if self.verdict != 'fail':
            self.verdict = ' # TODO expected failure'

    def addUnexpectedSuccess(self, test):
        self.verdict = 'fail'
        self.diag.append('unexpected success')

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self.diag.append(f'subtest {subtest.id()} failed:')
            self._fail(err)


def flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flatten(t)
        else:
            yield t


def main():
    testdir, dev, gid = sys.argv[1:4]
    patterns = sys.argv[4:]
    sys.path.insert(0, testdir)
    sys.argv = [sys.argv[0], '--dev', dev, '--gid', gid]
    from args_parser import parser
    parser.parse_args()
    tests = SourceFileLoader('tests',
                             os.path.join(testdir, '__init__.py')).load_module()
    cases = list(flatten(unittest.defaultTestLoader.loadTestsFromModule(tests)))
    if patterns:
        cases = [c for c in cases if any(p in c.id() for p in patterns)]
    # Another vendor's tests only skip: leave them out of the plan.
    vendor = ('test_mlx5', 'test_efa', 'test_efadv', 'test_cuda')
    cases = [c for c in cases if not c.id().split('.')[1].startswith(vendor)]
    print(f'1..{len(cases)}', flush=True)
    result = TapResult()
    for case in cases:
        case.run(result)
    print(f'# {len(cases) - result.bad}/{len(cases)} passed (skips count '
          f'as passed)')
    return 1 if result.bad else 0


if __name__ == '__main__':
    sys.exit(main())
