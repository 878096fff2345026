"""What the evaluation reports share (evaluate_report.py, evaluate_buffer.py,
evaluate_b2tree_report.py): reading a results CSV and writing markdown tables and verdicts."""
import csv


def read(path):
    """The rows of a CSV file with a header line, as dicts."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def table(header, rows):
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def yes(flag):
    """A verdict in bold."""
    return "**yes**" if flag else "**no**"
