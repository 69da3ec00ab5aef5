"""C++ source reading for the lints in this folder: comments and literals blanked out (lines
kept), so that braces and keywords found afterwards are code."""
import os
import re

_RAW = re.compile(r'R"([^()\\ ]{0,16})\(')


def blank(text):
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif c == 'R' and _RAW.match(text, i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            m = _RAW.match(text, i)
            end = text.find(')' + m.group(1) + '"', m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + re.sub(r'[^\n]', ' ', text[i + 2:j]))
            i = j
        elif c in '"\'':
            if c == "'" and i > 0 and (text[i - 1].isalnum()) and text[i - 1] not in 'uULR8':
                out.append(c)  # a digit separator (1'000)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + ' ' * (j - i - 2) + c if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def closing(code, open_index, pair='{}'):
    """Index just past the bracket matching the one at open_index."""
    depth = 0
    for k in range(open_index, len(code)):
        if code[k] == pair[0]:
            depth += 1
        elif code[k] == pair[1]:
            depth -= 1
            if depth == 0:
                return k + 1
    return len(code)


def line_of(code, index):
    return code.count('\n', 0, index) + 1


def sources(paths):
    """The .cpp and .hpp files of `paths` (files, or folders walked in order)."""
    for path in paths:
        if os.path.isdir(path):
            for root, _, files in os.walk(path):
                for name in sorted(files):
                    if name.endswith(('.cpp', '.hpp')):
                        yield os.path.join(root, name)
        else:
            yield path


def report(problems):
    """Prints the findings; the lint's exit status (1 when there is one)."""
    for p in problems:
        print(p)
    print(f'{len(problems)} finding(s)')
    return 1 if problems else 0
