"""What the suite checks of every SQL statement: each table of people's rows it reads,
changes or deletes is narrowed to one person (tests/conftest.py runs it on every statement).
"""

from __future__ import annotations

import re

from bridge.store.db import OWNED

OWNED_TABLES = frozenset(m.__tablename__ for m in OWNED)  # type: ignore[attr-defined]
# The unit of work writing back an object it loaded (through a scoped read) by its id.
_BY_ID = re.compile(r"WHERE\s+\w+\.id\s*=\s*(\?|%\(\w+\)s|%s)\s*$")
_TABLE = re.compile(r'\b(?:FROM|JOIN|UPDATE|INTO)\s+"?([a-z_]+)"?(?:\s+AS\s+([a-z_0-9]+))?', re.I)


def unscoped(statement: str) -> str | None:
    """What is wrong with a statement that reads or changes people's rows: a table it
    touches that no condition on `person` narrows (None: nothing)."""
    head = statement.lstrip()[:6].upper()
    if head not in ("SELECT", "UPDATE", "DELETE"):
        return None  # inserts carry their person in their values (a NOT NULL column)
    if head != "SELECT" and _BY_ID.search(statement):
        return None
    for table, alias in _TABLE.findall(statement):
        if table.lower() not in OWNED_TABLES:
            continue
        names = {table, alias} - {""}
        qualified = any(re.search(rf"\b{re.escape(n)}\.person\b", statement) for n in names)
        # A lone table's column is written unqualified.
        alone = len(set(_TABLE.findall(statement))) == 1
        if not qualified and not (alone and re.search(r"\bperson\b\s*(=|IN\b)", statement)):
            return f"{table} read without its person"
    return None
