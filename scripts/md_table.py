"""Reads the rows of a Markdown table that the project's peer scripts write
(bench/peer_attention.py, bench/peer_train.py --out): the plotting scripts
share it."""


def table_rows(path, first_column):
    """(header, rows): the cells of each row under the header whose first cell
    is `first_column`, rows of another width skipped; header None when there
    is no such header."""
    header, rows = None, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("|") or set(line) <= set("|-: "):
                continue
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells[0] == first_column:
                header = cells
            elif header is not None and len(cells) == len(header):
                rows.append(cells)
    return header, rows
