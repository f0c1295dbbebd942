"""Qt item models and QObjects that hold display state (no widgets)."""

from relay.gui.viewmodels.sessions import SessionsViewModel
from relay.gui.viewmodels.stream import StreamViewModel

__all__ = ["SessionsViewModel", "StreamViewModel"]
