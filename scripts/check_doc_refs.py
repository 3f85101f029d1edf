#!/usr/bin/env python3
"""Checks that every docs page cited in code exists, and that a section title
quoted right after a citation (a guide page, then "Title") is a heading of that
page (a heading that starts with the quoted text counts). Code comments point
to docs by path and section; this keeps those pointers true as docs move.

    python3 scripts/check_doc_refs.py            (from the repository root; exit 1 on a stale pointer)
"""
import re
import subprocess
import sys

CODE = re.compile(r"\.(cpp|hpp|cu|cuh|h|py|sh|txt|in|cmake)$")
CITE = re.compile(r"(docs/[A-Za-z0-9_/-]+\.md|CONTRIBUTING\.md|README\.md)")


def headings(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [l.lstrip("#").strip() for l in f if l.startswith("#")]
    except OSError:
        return None


def main():
    files = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    bad = []
    cache = {}
    for path in files:
        if not CODE.search(path) or path.startswith("docs/"):
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            continue
        for m in CITE.finditer(text):
            doc = m.group(1)
            if doc not in cache:
                cache[doc] = headings(doc)
            line = text.count("\n", 0, m.start()) + 1
            if cache[doc] is None:
                bad.append(f"{path}:{line}: {doc} does not exist")
                continue
            # A title quoted right after the path (", " or " " then a quote), across comment line breaks.
            tail = re.sub(r"\n\s*(//|#|\*)\s?", " ", text[m.end():m.end() + 200])
            q = re.match(r'\s*(?:,|section|sections|, section)?\s*"([^"]+)"', tail)
            if q:
                title = " ".join(q.group(1).split()).rstrip(".,")
                if not any(h.startswith(title) or title.startswith(h) for h in cache[doc]):
                    bad.append(f'{path}:{line}: {doc} has no section "{title}"')
    for b in bad:
        print(b)
    if bad:
        print(f"check_doc_refs: {len(bad)} stale pointer(s) into the docs")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
