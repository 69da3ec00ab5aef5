#!/usr/bin/env python3
"""Lint: errors are classified by code, not by rethrowing and switching on type (ADR 8).

Every place that decides what an exedev::Error means catches one `exedev::Error` (or
`APIError`, which adds the status and command) and reads code(), is_retryable() and
may_have_run(). Refused:
  - a `try` that rethrows (`std::rethrow_exception(...)` or `throw;`) and catches a subclass of
    exedev::Error other than Error / APIError: a switch on the error's type;
  - a `try` with more than one catch clause naming an exedev::Error type: the same switch
    written without the rethrow;
  - `exception_as<T>` (common/exceptions.hpp: the look inside a captured error) with T a
    subclass of exedev::Error other than Error / APIError: the same switch, one type at a time.
  error_classification.py INCLUDE_DIR PATH...   (files or folders of .cpp/.hpp; exit 1 on a finding)
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpp_scan import blank, closing, line_of, report, sources  # noqa: E402

ALLOWED_IN_RETHROW = {'Error', 'APIError'}


def error_types(include_dir):
    """exedev::Error and every class deriving from it, by name, from the public headers."""
    bases = {}
    for root, _, files in os.walk(include_dir):
        for name in files:
            if name.endswith('.hpp'):
                text = blank(open(os.path.join(root, name), encoding='utf-8').read())
                for m in re.finditer(r'\bclass\s+(\w+)\s*(?:final\s*)?:\s*([^{;]*)\{', text):
                    parents = [p.split('::')[-1] for p in re.findall(r'public\s+([\w:]+)', m.group(2))]
                    bases.setdefault(m.group(1), set()).update(parents)
    found = {'Error'}
    changed = True
    while changed:
        changed = False
        for cls, parents in bases.items():
            if cls not in found and parents & found:
                found.add(cls)
                changed = True
    return found


def caught_type(declaration):
    m = re.search(r'([\w:]+)\s*&', declaration)
    return m.group(1).split('::')[-1] if m else None


def findings(path, types):
    code = blank(open(path, encoding='utf-8').read())
    for m in re.finditer(r'\btry\s*\{', code):
        body_end = closing(code, m.end() - 1)
        body = code[m.end():body_end - 1]
        rethrows = re.search(r'\brethrow_exception\s*\(|\bthrow\s*;', body) is not None
        k = body_end
        caught = []
        while True:
            c = re.compile(r'\s*catch\s*\(').match(code, k)
            if not c:
                break
            params_end = closing(code, c.end() - 1, '()')
            caught.append(caught_type(code[c.end():params_end - 1]))
            block = code.index('{', params_end)
            k = closing(code, block)
        exedev_caught = [t for t in caught if t in types]
        where = f'{path}:{line_of(code, m.start())}'
        if rethrows and any(t not in ALLOWED_IN_RETHROW for t in exedev_caught):
            yield f'{where}: rethrows to classify by type ({", ".join(exedev_caught)}); catch exedev::Error and read code()'
        elif len(exedev_caught) > 1:
            yield f'{where}: switches on the error type ({", ".join(exedev_caught)}); catch exedev::Error and read code()'
    for m in re.finditer(r'\bexception_as\s*<\s*([\w:]+)\s*>', code):
        looked_for = m.group(1).split('::')[-1]
        if looked_for in types and looked_for not in ALLOWED_IN_RETHROW:
            yield (f'{path}:{line_of(code, m.start())}: looks for an error type ({looked_for}); '
                   'look for exedev::Error and read code()')


def main():
    types = error_types(sys.argv[1])
    problems = [p for path in sources(sys.argv[2:]) for p in findings(path, types)]
    return report(problems)


if __name__ == '__main__':
    sys.exit(main())
