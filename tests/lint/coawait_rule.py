#!/usr/bin/env python3
"""Lint: the one GCC 12 coroutine rule (README "Compilers", ADR 7), as the probe measured it
(scripts/gcc12-coawait-probe.sh).

Inside a co_await expression (from `co_await` to the end of its operand: `;`, `,` or a closing
bracket at its own depth) there is
  - no aggregate built in place: no designated initializer (`f({.name = s})`) and no braces
    after the name of a struct the tree declares (`f(Options{})`, `f(RunOptions{.env = e})`);
    a class with a constructor (`std::string`, `StringList`, `std::vector`) may be braced;
  - no lambda with a by-value capture (`[x]`, `[=]`, `[x = y]`, `[*this]`);
  - no conditional operator (`f(c ? named : std::string())`): when it yields a class
    temporary GCC 12 destroys that twice too, and a lint cannot tell the types apart.
(GCC 12 itself refuses the initializer lists, and the guard makes it refuse the library's
options structs in any form; this lint covers what it cannot see: internal structs and lambdas.)
Name such a thing first, then await. And no co_await in the condition of an `if` or `while`
(`if (f(co_await x)) throw_cancelled();`, `while (co_await next())`): GCC 12 never resumes the
awaiting coroutine's caller after such a statement. Await into a named value first; an
init-statement (`if (const auto v = co_await f(); v)`), a condition declaration
(`if (auto v = co_await f())`) and a named task (`if (co_await std::move(task))`) are correct. And in the public headers no function takes an options
struct that carries EXEDEV_COAWAIT_GUARD as a defaulted argument (`f(Options o = {})`): the
default is a temporary of the caller's co_await; an overload without it builds it inside.
And no co_await inside a Catch2 assertion (`CHECK(co_await f() == x)`): Catch2 also evaluates the
expression inside __builtin_constant_p, where GCC 12 runs the co_await again, so the operation
runs more than once; CO_CHECK and its kin (exedev/testing/co_check.hpp) evaluate it once.
  coawait_rule.py INCLUDE_DIR PATH...   (files or folders of .cpp/.hpp; exit 1 on a finding;
  headers under a `tests` folder are test support, not public: no defaulted-argument rule)
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpp_scan import blank, closing, line_of, report, sources  # noqa: E402

LAMBDA_HEAD = re.compile(r'\s*(\([^()]*(?:\([^()]*\)[^()]*)*\))?\s*(mutable\b)?\s*(noexcept\b)?\s*(->\s*[\w:<>, ]+?)?\s*\{')


def is_lambda_introducer(code, i):
    """Whether the `[` at i opens a lambda (not a subscript or an attribute)."""
    if code.startswith('[[', i) or (i > 0 and code[i - 1] == '['):
        return False
    k = i - 1
    while k >= 0 and code[k] in ' \t\n':
        k -= 1
    return k < 0 or not (code[k].isalnum() or code[k] in '_)]')


def by_value_capture(captures):
    for item in (c.strip() for c in captures.split(',')):
        if not item or item.startswith('&') or item == 'this':
            continue
        return item
    return None


def operand_findings(code, start, structs):
    """Findings in the operand of the co_await ending at `start`."""
    depth = 0
    k = start
    n = len(code)
    while k < n:
        c = code[k]
        if c == '[' and is_lambda_introducer(code, k):
            end = closing(code, k, '[]')
            captured = by_value_capture(code[k + 1:end - 1])
            if captured:
                yield k, f'a lambda capturing by value ({captured})'
            head = LAMBDA_HEAD.match(code, end)
            if head:
                k = closing(code, head.end() - 1)
                continue
            k = end
            continue
        if c == '{':
            before = re.search(r'(\w+)\s*$', code[max(0, k - 80):k])
            designated = re.match(r'\{\s*\.\w', code[k:k + 80])
            if designated or (before and before.group(1) in structs):
                yield k, 'an aggregate built in place (' + (before.group(1) + '{…}' if before and not designated else '{.…}') + ')'
            k = closing(code, k)
            continue
        if c == '?':
            yield k, 'a conditional (?:)'
        if c in '([':
            depth += 1
        elif c in ')]}':
            depth -= 1
            if depth < 0:
                return
        elif c in ';,' and depth == 0:
            return
        k += 1


CONDITION = re.compile(r'\b(?:if|while)\s*(?:constexpr\s*)?\(')
DECLARATION = re.compile(r'\s*(?:const\s+)?[\w:<>]+\s*[&*]?\s*(?:\[[^\]]*\]|\w+)\s*=[^=]')
NAMED_TASK = re.compile(r'\s*std::move\(\s*\w+\s*\)')


def condition_findings(code):
    """co_await in the condition of an if or while (its init-statement and a declaration aside)."""
    for m in CONDITION.finditer(code):
        open_at = m.end() - 1
        inner = code[open_at + 1:closing(code, open_at, '()') - 1]
        depth, start = 0, 0
        for k, c in enumerate(inner):
            depth += c in '([{'
            depth -= c in ')]}'
            if c == ';' and depth == 0:
                start = k + 1  # what precedes is the init-statement
        condition = inner[start:]
        if DECLARATION.match(condition):
            continue
        for a in re.finditer(r'\bco_await\b', condition):
            if not NAMED_TASK.match(condition, a.end()):
                yield open_at + 1 + start + a.start()


# The assertions Catch2 2.13 builds on INTERNAL_CATCH_TEST, whose expression also goes through
# __builtin_constant_p (the THROWS and THAT families do not).
ASSERTION = re.compile(r'\b(?:(?:CHECK|REQUIRE)(?:_FALSE|_NOFAIL)?|CHECKED_IF|CHECKED_ELSE)\s*\(')


def assertion_findings(code):
    """co_await inside a Catch2 assertion's expression (not inside a lambda's body there)."""
    for m in ASSERTION.finditer(code):
        open_at = m.end() - 1
        end = closing(code, open_at, '()')
        k = open_at
        while k < end:
            if code[k] == '{':
                k = closing(code, k, '{}')
                continue
            if code.startswith('co_await', k) and not (code[k - 1].isalnum() or code[k - 1] == '_'):
                yield k
                break
            k += 1


def declared_structs(paths):
    """Every struct the tree declares, and those that end with EXEDEV_COAWAIT_GUARD."""
    structs, guarded = set(), set()
    for path in sources(paths):
        code = blank(open(path, encoding='utf-8').read())
        for m in re.finditer(r'\bstruct\s+(\w+)\s*(?:final\s*)?(?::[^{;]*)?\{', code):
            structs.add(m.group(1))
            body = code[m.end() - 1:closing(code, m.end() - 1)]
            if 'EXEDEV_COAWAIT_GUARD' in body:
                guarded.add(m.group(1))
    return structs, guarded


def findings(path, guarded, public, structs):
    code = blank(open(path, encoding='utf-8').read())
    for m in re.finditer(r'\bco_await\b', code):
        for at, what in operand_findings(code, m.end(), structs):
            yield f'{path}:{line_of(code, at)}: {what} inside a co_await expression; name it first'
    for at in condition_findings(code):
        yield f'{path}:{line_of(code, at)}: a co_await in an if or while condition; await into a named value first'
    for at in assertion_findings(code):
        yield f'{path}:{line_of(code, at)}: a co_await inside a Catch2 assertion; use CO_CHECK or await into a named value first'
    if public and guarded:
        names = '|'.join(sorted(guarded))
        for m in re.finditer(r'[(,]\s*(?:const\s+)?(?:[\w:]+::)?(' + names + r')\b\s*&?\s*\w+\s*=\s*[^,)]*', code):
            yield f'{path}:{line_of(code, m.start())}: a defaulted {m.group(1)} argument; add an overload without it'


def main():
    include_dir = os.path.abspath(sys.argv[1])
    structs, guarded = declared_structs([include_dir] + sys.argv[2:])
    problems = []
    for path in sources(sys.argv[2:]):
        where = os.path.abspath(path)
        parts = where.split(os.sep)
        test_support = 'tests' in parts and 'planted' not in parts
        public = where.startswith(include_dir + os.sep) or (path.endswith('.hpp') and not test_support)
        problems.extend(findings(path, guarded, public, structs))
    return report(problems)


if __name__ == '__main__':
    sys.exit(main())
