"""What every plugin is: a name, its arguments, and two hooks around a session."""

from __future__ import annotations

from lahar.scheduler.framework.config import Arguments
from lahar.scheduler.framework.session import Session

__all__ = ["Plugin"]


class Plugin:
    """Plugins register callbacks in ``on_session_open``; registering has no other effect."""

    name = ""
    # Whether the plugin's answers may depend on the session's time (``ssn.now``). The control
    # loop skips a cycle when nothing changed since one that decided nothing, which is only
    # sound when no enabled plugin reads the clock; a plugin says so to allow it.
    reads_clock = True

    def __init__(self, arguments: Arguments | None = None, enabled_hierarchy: bool = False) -> None:
        self.arguments = arguments if arguments is not None else Arguments()
        self.enabled_hierarchy = enabled_hierarchy

    def on_session_open(self, ssn: Session) -> None:
        raise NotImplementedError

    def on_session_close(self, ssn: Session) -> None:
        return None
