"""The table ``relay-cli usage`` prints: a plain dataclass, standard library only, so the
command can take it from a running host's answer without loading the report's pricing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class UsageTable:
    title: str
    columns: list[str]
    text_columns: set[str]
    rows: list[list[str]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"title": self.title, "rows": self.records, "notes": self.notes}

    @classmethod
    def of(cls, answer: dict[str, Any]) -> UsageTable | None:
        """The host's ``GET /wallet/usage`` answer as the table (None: not that shape)."""
        try:
            return cls(title=str(answer["title"]), columns=[str(c) for c in answer["columns"]],
                       text_columns={str(c) for c in answer["text_columns"]},
                       rows=[[str(cell) for cell in row] for row in answer["rows"]],
                       records=list(answer["records"]), notes=[str(n) for n in answer["notes"]])
        except (KeyError, TypeError):
            return None
