"""The TUI's two dialogs: a yes/no confirmation, and answering an agent's question."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from relay.core.events import NeedsInput

#: an answer: (option id, free text) — one of them set
Answer = tuple[str | None, str | None]



def dialog_css(name: str) -> str:
    """A dialog's CSS: a box centred over the screen (scoped to the dialog's class)."""
    return f"""
    {name} {{ align: center middle; background: $background 60%; }}
    {name} > Vertical {{ width: 72; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1; }}
    {name} Label {{ width: 100%; margin-bottom: 1; }}
    {name} Horizontal {{ height: auto; width: 100%; }}
    {name} Button {{ margin-right: 1; min-width: 8; }}
    """


class Confirm(ModalScreen[bool]):
    """``question`` with Yes / No (y / n; Esc: no)."""

    DEFAULT_CSS = dialog_css("Confirm")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("y", "answer(True)", "Yes"),
                                             Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str, yes: str = "Yes") -> None:
        super().__init__()
        self.question, self.yes = question, yes

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question, markup=False)
            with Horizontal():
                yield Button(f"{self.yes} (y)", id="yes", variant="warning")
                yield Button("No (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class AnswerQuestion(ModalScreen[Answer | None]):
    """The agent's question: a button per option (or 1-9), or a line of free text when it
    has none. Esc leaves it open (another client may answer it)."""

    DEFAULT_CSS = dialog_css("AnswerQuestion")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "later", "Later")]

    def __init__(self, question: NeedsInput) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"The agent asks: {self.question.prompt}", markup=False)
            if self.question.options:
                with Horizontal():
                    for n, option in enumerate(self.question.options, start=1):
                        yield Button(f"{n}. {option.label}", id=f"option-{n}")
            else:
                yield Input(placeholder="your answer (Enter sends)", id="text")
            yield Label("1-9 or Enter picks · Esc: answer later")

    def on_mount(self) -> None:
        if self.question.options:
            self.query_one("#option-1", Button).focus()
        else:
            self.query_one("#text", Input).focus()

    def on_key(self, event: object) -> None:
        key = getattr(event, "key", "")
        if key.isdigit() and 1 <= int(key) <= len(self.question.options):
            self.dismiss((self.question.options[int(key) - 1].id, None))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        n = int(str(event.button.id).rpartition("-")[2])
        self.dismiss((self.question.options[n - 1].id, None))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.dismiss((None, event.value.strip()))

    def action_later(self) -> None:
        self.dismiss(None)
