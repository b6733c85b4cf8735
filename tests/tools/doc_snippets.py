#!/usr/bin/env python3
"""Extracts the C++ blocks of a Markdown file into one translation unit, so the test build
compiles every snippet of the README and docs/ and a snippet that drifts from the API fails.

    doc_snippets.py OUT.cpp DOC.md

Each ```cpp block becomes its own namespace (snippets never see each other's names); its
#include lines move to the top of the file, and every block sees <ringo/ringo.hpp>. The line
before a block may say how to take it, as an HTML comment (invisible in the rendered page):

    <!-- snippet: body(int fd, ringo::Runtime& rt) -->
        the block is statements: it becomes the body of a coroutine `Task<void>` taking
        those parameters (what the surrounding text says the reader already has);
    <!-- snippet: skip (reason) -->
        the block is not compiled (it shows what does not compile, or output); the reason
        is required.

Any other block is a sequence of declarations (functions, types, usings) compiled as it is.
Exits 1, naming the file and line, on a block it cannot take (an unclosed fence, a skip
without a reason).
"""
import re
import sys

FENCE_OPEN = re.compile(r"^```(cpp|c\+\+)\s*$")
MARK = re.compile(r"^<!--\s*snippet:\s*(body|skip)\s*(.*?)\s*-->\s*$")


def blocks(lines, path):
    """Yields (line number, kind, argument, code lines) for every C++ block."""
    i = 0
    prev = ""
    while i < len(lines):
        line = lines[i]
        if FENCE_OPEN.match(line):
            start = i + 1
            j = start
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if j == len(lines):
                raise SystemExit(f"{path}:{start}: a ```cpp block that never closes")
            m = MARK.match(prev)
            kind, arg = (m.group(1), m.group(2)) if m else ("decls", "")
            yield start, kind, arg, lines[start:j]
            i = j + 1
            prev = ""
            continue
        if line.strip():
            prev = line.strip()
        i += 1


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    out_path, md_path = sys.argv[1], sys.argv[2]
    with open(md_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    includes = ["#include <ringo/ringo.hpp>", "#include <cstdio>", "#include <cstring>", "#include <functional>",
                "#include <string>", "#include <vector>"]
    bodies = []
    n = 0
    for start, kind, arg, code in blocks(lines, md_path):
        if kind == "skip":
            if not arg.strip("() "):
                raise SystemExit(f"{md_path}:{start}: '<!-- snippet: skip -->' needs a reason")
            continue
        n += 1
        kept = []
        for c in code:
            if c.lstrip().startswith("#include"):
                if c.strip() not in includes:
                    includes.append(c.strip())
            else:
                kept.append(c)
        text = [f"// {md_path}, the block at line {start}", f"namespace doc_snippet_{n} {{"]
        line = f'#line {start + 1} "{md_path}"' # errors point into the page
        if kind == "body":
            params = arg.strip()
            if not (params.startswith("(") and params.endswith(")")):
                raise SystemExit(f"{md_path}:{start}: '<!-- snippet: body(...) -->' needs its parameters")
            text.append(f"ringo::Task<void> snippet{params} {{")
            text.append(line)
            text += kept
            text.append("co_return; }")
        else:
            text.append(line)
            text += kept
        text.append(f"}} // namespace doc_snippet_{n}")
        bodies.append("\n".join(text))
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(f"// Generated from {md_path} by tests/tools/doc_snippets.py: {n} blocks. Do not edit.\n")
        f.write("\n".join(includes) + "\n")
        f.write("// What the pages of docs/ take for granted.\n")
        f.write("using ringo::Result;\nusing ringo::Task;\nusing namespace std::chrono_literals;\n")
        f.write("namespace op = ringo::op;\nnamespace buf = ringo::buf;\nnamespace net = ringo::net;\n")
        f.write("namespace fs = ringo::fs;\n\n")
        f.write("\n\n".join(bodies) + "\n")


if __name__ == "__main__":
    main()
