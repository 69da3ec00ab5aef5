#!/usr/bin/env python3
"""Lint: no layer includes a header of, or links, a layer above it or beside it
(docs/architecture.md).

A file's layer is its folder: src/<layer>/ or include/exedev/<layer>/. Its includes of
"<layer>/..." (private headers) and <exedev/<layer>/...> (public ones) must name its own layer or
one that LAYERS lists below it. The top-level public headers belong to the layer named in
TOP_LEVEL; vocabulary headers every layer may use are not listed. Likewise a layer's
CMakeLists.txt names only its own layer's libraries and those of layers below it (exedev_<name>
or exedev::<name>; LIBRARY_LAYER maps the libraries named otherwise), so the link graph has the
layers' shape and no cycle.
  layer_rule.py ROOT [PATH...]   (PATH: files or folders; default ROOT/src and ROOT/include;
                                  exit 1 on a finding)
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpp_scan import report, sources  # noqa: E402

# Each layer and the layers below it that it may include (docs/architecture.md draws them).
LAYERS = {
    'common': set(),
    'asio': set(),
    'errors': {'common'},  # <exedev/errors.hpp>, <exedev/error_code.hpp>, src/errors: the error hierarchy
    'workspace': {'common'},
    'ssh': {'common', 'errors'},
    'client': {'common', 'errors', 'asio', 'ssh'},  # exe0 tokens signed with ssh's key choice
    'sandbox': {'common', 'errors', 'workspace', 'ssh', 'client'},
    'tools': {'common', 'workspace'},
    'testing': {'common', 'workspace'},
    'emulator': {'common', 'asio'},
    'mcp': {'common', 'errors', 'workspace', 'ssh', 'client', 'sandbox', 'tools', 'emulator'},  # a program atop all (--emulator)
}
TOP_LEVEL = {'client.hpp': 'client', 'errors.hpp': 'errors', 'error_code.hpp': 'errors', 'exedev.hpp': 'mcp'}
# Files allowed one include across the rule, and why.
EXCEPTIONS = {
    # The documented header-only bridge from the emulator to the client (docs/architecture.md):
    # the emulator library itself links nothing of the client.
    ('include/exedev/emulator/client_options.hpp', 'client'),
}
# Libraries whose name is not their layer's.
LIBRARY_LAYER = {'net': 'asio', 'mcp_core': 'mcp', 'exedev': 'sandbox'}  # exedev::exedev: client + sandbox
LIBRARY = re.compile(r'\bexedev(?:(?:_|::)([a-z_]+))?(?![-\w:])')
# The compiled Asio (src/asio) is below every layer; a layer may link it without including it.
LINKED_BY_ALL = {'asio'}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def layer_of(path, root):
    rel = os.path.relpath(path, root).replace(os.sep, '/')
    # The planted twin mirrors the layout below tests/lint/planted/.
    rel = re.sub(r'^tests/lint/planted/', '', rel)
    m = re.match(r'(?:src|include/exedev)/([a-z_]+)/', rel)
    return rel, (m.group(1) if m else None)


def included_layer(kind, name):
    if kind == '<':
        if not name.startswith('exedev/'):
            return None
        rest = name[len('exedev/'):]
        return rest.split('/')[0] if '/' in rest else TOP_LEVEL.get(rest)
    first = name.split('/')[0]
    return first if '/' in name and first in LAYERS else None


def cmake_lists(paths):
    """The CMakeLists.txt files of `paths` (files, or folders walked in order)."""
    for path in paths:
        if os.path.isdir(path):
            for root, _, files in os.walk(path):
                if 'CMakeLists.txt' in files:
                    yield os.path.join(root, 'CMakeLists.txt')
        elif os.path.basename(path) == 'CMakeLists.txt':
            yield path


def link_problems(path, layer):
    text = re.sub(r'#[^\n]*', '', open(path, encoding='utf-8').read())
    problems = []
    for m in LIBRARY.finditer(text):
        name = m.group(1) or 'exedev'
        target = LIBRARY_LAYER.get(name, name)
        if target not in LAYERS or target == layer or target in LAYERS[layer] or target in LINKED_BY_ALL:
            continue
        line = text.count('\n', 0, m.start()) + 1
        where = 'above' if layer in LAYERS.get(target, set()) else 'beside'
        problems.append(f'{path}:{line}: layer {layer} links {m.group(0)} of layer {target}, {where} it')
    return problems


def main(argv):
    root = os.path.abspath(argv[1])
    paths = argv[2:] or [os.path.join(root, 'src'), os.path.join(root, 'include')]
    problems = []
    for path in sources(paths):
        rel, layer = layer_of(os.path.abspath(path), root)
        if layer not in LAYERS:
            continue
        text = open(path, encoding='utf-8').read()
        for m in INCLUDE.finditer(text):
            target = included_layer(m.group(1), m.group(2))
            if target is None or target == layer or target in LAYERS[layer] or (rel, target) in EXCEPTIONS:
                continue
            line = text.count('\n', 0, m.start()) + 1
            where = 'above' if layer in LAYERS.get(target, set()) else 'beside'
            problems.append(f'{path}:{line}: layer {layer} includes {m.group(2)} of layer {target}, {where} it')
    for path in cmake_lists(paths):
        _, layer = layer_of(os.path.abspath(path), root)
        if layer in LAYERS:
            problems += link_problems(path, layer)
    return report(problems)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
