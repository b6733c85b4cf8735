#!/usr/bin/env python3
"""Extracts the C++ blocks of a Markdown file into one translation unit, so the test build
compiles every snippet of the README and docs/ and a snippet that drifts from the API fails.

    doc_snippets.py OUT.cpp DOC.md             the page's blocks, whole programs left out
    doc_snippets.py --list DOC.md              one line per whole program: NAME RUN-KIND
    doc_snippets.py --programs OUTDIR DOC.md   each whole program as OUTDIR/PAGE_NAME.cpp

Each ```cpp block becomes its own namespace (snippets never see each other's names); its
#include lines move to the top of the file, and every block sees <ringo/ringo.hpp>. The line
before a block may say how to take it, as an HTML comment (invisible in the rendered page):

    <!-- snippet: body(int fd, ringo::Runtime& rt) -->
        the block is statements: it becomes the body of a coroutine `Task<void>` taking
        those parameters (what the surrounding text says the reader already has);
    <!-- snippet: skip (reason) -->
        the block is not compiled (it shows what does not compile, or output); the reason
        is required.

    <!-- snippet: program NAME run: KIND -->
        the block is a whole program (it defines `int main`): it is built on its own, as it
        is, into an executable that the tests run (tests/tools/run_doc_program.py says what
        each KIND checks: exit-0, echo-server, echo-server-sigint, sigint).

A block that defines `int main` is a whole program even without that comment (named after
its line, run as exit-0); the page's translation unit leaves it out, so it is compiled once.
Any other block is a sequence of declarations (functions, types, usings) compiled as it is.
Exits 1, naming the file and line, on a block it cannot take (an unclosed fence, a skip
without a reason, a program with a bad name or run kind).
"""
import os
import re
import sys

FENCE_OPEN = re.compile(r"^```(cpp|c\+\+)\s*$")
MARK = re.compile(r"^<!--\s*snippet:\s*(body|skip|program)\s*(.*?)\s*-->\s*$")
# A line that defines main (not one in a comment, as net.md's `// int main() ...`).
MAIN = re.compile(r"^\s*int\s+main\s*\(")
PROGRAM_ARG = re.compile(r"^([a-z][a-z0-9_]*)\s+run:\s*(\S+)$")
RUN_KINDS = ("exit-0", "echo-server", "echo-server-sigint", "sigint")


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


def programs(lines, path):
    """Yields (name, run kind, first line, code lines) for every whole program of a page."""
    names = set()  # a name is a file and a test: one per page
    for start, kind, arg, code in blocks(lines, path):
        if kind == "skip" or not any(MAIN.match(c) for c in code):
            continue
        if kind == "program":
            m = PROGRAM_ARG.match(arg)
            if not m or m.group(2) not in RUN_KINDS:
                raise SystemExit(f"{path}:{start}: '<!-- snippet: program NAME run: KIND -->' needs a name "
                                 f"(lowercase, digits, _) and a run kind of {', '.join(RUN_KINDS)}")
            name, run = m.group(1), m.group(2)
        elif kind == "decls":
            name, run = f"line_{start}", "exit-0"
        else:
            raise SystemExit(f"{path}:{start}: a block that defines main cannot be a '{kind}' snippet")
        if name in names:
            raise SystemExit(f"{path}:{start}: a second program named '{name}' on this page")
        names.add(name)
        yield name, run, start, code


def page_stem(path):
    """README.md -> readme, docs/guide.md -> guide."""
    return os.path.splitext(os.path.basename(path))[0].lower()


def write_programs(out_dir, md_path, lines):
    """Writes each whole program as it stands in the page, with a #line so errors point there."""
    for name, _, start, code in programs(lines, md_path):
        text = [f"// Generated from {md_path} (the block at line {start}) by tests/tools/doc_snippets.py. Do not edit.",
                f'#line {start + 1} "{md_path}"'] + code
        with open(os.path.join(out_dir, f"{page_stem(md_path)}_{name}.cpp"), "w", encoding="utf-8") as f:
            f.write("\n".join(text) + "\n")


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--list":
        with open(args[1], encoding="utf-8") as f:
            for name, run, _, _ in programs(f.read().splitlines(), args[1]):
                print(name, run)
        return
    if len(args) == 3 and args[0] == "--programs":
        with open(args[2], encoding="utf-8") as f:
            write_programs(args[1], args[2], f.read().splitlines())
        return
    if len(args) != 2:
        raise SystemExit(__doc__)
    out_path, md_path = args
    with open(md_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    # Whole programs are built on their own (--programs); the page's unit leaves them out.
    program_starts = {start for _, _, start, _ in programs(lines, md_path)}
    includes = ["#include <ringo/ringo.hpp>", "#include <cstdio>", "#include <cstring>", "#include <functional>",
                "#include <string>", "#include <vector>"]
    bodies = []
    n = 0
    for start, kind, arg, code in blocks(lines, md_path):
        if kind == "skip":
            if not arg.strip("() "):
                raise SystemExit(f"{md_path}:{start}: '<!-- snippet: skip -->' needs a reason")
            continue
        if start in program_starts:
            continue
        if kind == "program":
            raise SystemExit(f"{md_path}:{start}: a 'program' block that does not define main")
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
