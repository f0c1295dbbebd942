"""Everything relay-cli asks at the terminal, and what Ctrl-C and Ctrl-D do there.

**Ctrl-C** at any prompt ends the command like Ctrl-C anywhere: ``interrupted``, exit 130
(a running session is cancelled first). **Ctrl-D** (the input ended) ends it with one line
saying nothing was answered, exit :data:`EOF_EXIT` (2: a problem Relay explains). Neither
ever shows a traceback: both are :class:`~relay.core.errors.RelayError` subclasses that
``relay.cli.main`` maps to their exit codes.

**Passphrases are asked before work starts.** Where there is no usable OS keyring the vault
is an encrypted file and needs its passphrase (``RELAY_VAULT_PASSPHRASE``, else typed). A
command that will need it — a run that can hand off between real accounts, a run on an
API-key account, ``recover``, ``contract verify``, storing a key — calls
:meth:`Passphrase.unlock` first: it says in one line why, asks on the terminal (twice for a
new vault), checks the answer against the vault file and keeps it for the engine. The engine
is given the :class:`Passphrase` itself as its provider, which only ever returns what was
said up front: nothing prompts in the middle of a live stream. Without a terminal the
command stops before it starts, saying to set ``RELAY_VAULT_PASSPHRASE``. A simulation
(the demo) signs with a throwaway demo key and never asks.

Blocking prompts (:func:`ask`) run on the main thread before work starts, with Python's own
Ctrl-C handler in place for their duration (asyncio's would only cancel the command once
Enter was pressed). The agent's questions during a run are read without blocking the event
loop (:func:`read_line`), so the stream goes on and another terminal can answer first.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import signal
import sys
import threading
from collections.abc import Iterator

from relay.core.config import Config
from relay.core.errors import NoAnswerError, PromptInterruptedError, VaultError

#: the exit code when the input ends at a prompt (Ctrl-D)
EOF_EXIT = 2
#: the exit code of Ctrl-C
INTERRUPTED_EXIT = 130
#: wrong passphrases typed before the command gives up
TRIES = 3


def ask(prompt: str, *, secret: bool = False) -> str:
    """One line typed at the terminal (``secret``: without echo). Blocking: call it on the
    main thread before work starts (elsewhere Ctrl-C cannot reach it).

    Raises:
        NoAnswerError: the input ended (Ctrl-D).
        PromptInterruptedError: Ctrl-C.
    """
    try:
        with _ctrl_c_raises():
            return getpass.getpass(prompt) if secret else input(prompt)
    except EOFError:
        _newline()
        raise NoAnswerError(f"No answer: the input ended at “{prompt.strip()}”.") from None
    except KeyboardInterrupt:
        _newline()
        raise PromptInterruptedError("interrupted") from None


async def read_line(prompt: str) -> str:
    """One line typed at the terminal, read without blocking the event loop.

    Cancelling the call (Ctrl-C cancels the command) stops reading at once. Where the loop
    cannot watch stdin (Windows) a thread reads it, as before.

    Raises:
        NoAnswerError: the input ended (Ctrl-D).
    """
    loop = asyncio.get_running_loop()
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    line: asyncio.Future[bytes] = loop.create_future()
    typed = bytearray()

    def readable() -> None:
        try:
            chunk = os.read(fd, 4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if line.done():
            return
        if not chunk:
            line.set_exception(EOFError())
            return
        typed.extend(chunk)
        if b"\n" in typed:
            line.set_result(bytes(typed))

    try:
        loop.add_reader(fd, readable)
    except (NotImplementedError, OSError, ValueError):  # no selector on stdin: a thread
        try:
            return await asyncio.to_thread(input, prompt)
        except EOFError:
            _newline()
            raise NoAnswerError(f"No answer: the input ended at “{prompt.strip()}”.") from None
    try:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        raw = await line
    except EOFError:
        _newline()
        raise NoAnswerError(f"No answer: the input ended at “{prompt.strip()}”.") from None
    finally:
        loop.remove_reader(fd)
    return raw.split(b"\n", 1)[0].decode(errors="replace").rstrip("\r")


@contextlib.contextmanager
def _ctrl_c_raises() -> Iterator[None]:
    """Python's own SIGINT handler for the duration (on the main thread): Ctrl-C raises
    KeyboardInterrupt inside the blocking read instead of waiting for Enter."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _newline() -> None:
    """End the prompt's line (Ctrl-C and Ctrl-D print none)."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write("\n")
        sys.stderr.flush()


class Passphrase:
    """The vault passphrase as relay-cli's engines get it: asked up front, never mid-work.

    Call it like a :data:`~relay.core.vault.PassphraseProvider`: it returns what
    :meth:`unlock` was told (None before), and never prompts.
    """

    def __init__(self) -> None:
        self._value: str | None = None

    def __repr__(self) -> str:
        return f"Passphrase(known={self._value is not None})"

    def __call__(self, creating: bool) -> str | None:
        return self._value

    def needed(self, config: Config) -> bool:
        """The vault is the encrypted file (no usable OS keyring) and no passphrase is known
        (neither ``RELAY_VAULT_PASSPHRASE`` nor one typed before)."""
        from relay.core.vault import PASSPHRASE_ENV, Vault  # keyring + cryptography: lazily

        if self._value is not None or os.environ.get(PASSPHRASE_ENV):
            return False
        return Vault.open(config, self).backend == "file"

    def unlock(self, config: Config, why: str, *, create: bool = True) -> None:
        """Know the vault's passphrase before work starts: ``why`` says what needs it.

        On a terminal the passphrase is asked now (a new vault: twice) and checked against
        the vault file; a wrong one is asked again, :data:`TRIES` times in all. Nothing is
        asked when the OS keyring holds the secrets or ``RELAY_VAULT_PASSPHRASE`` is set —
        nor, with ``create=False``, when there is no vault file yet (it holds nothing).

        Raises:
            VaultError: no terminal to ask at, or the passphrase was wrong every time.
            NoAnswerError, PromptInterruptedError: Ctrl-D / Ctrl-C at the prompt.
        """
        from relay.core.vault import PASSPHRASE_ENV, VAULT_FILE, GivenPassphrase, Vault

        if not self.needed(config):
            return
        path = config.home / VAULT_FILE
        creating = not path.exists()
        if creating and not create:
            return
        where = (f"no OS keyring here, so Relay keeps its secrets in the encrypted file {path}"
                 + (" (not created yet)" if creating else ""))
        if not sys.stdin.isatty():
            raise VaultError(f"{why}, which needs the vault passphrase: {where}.",
                             f"Set {PASSPHRASE_ENV} (or run this on a terminal to type it), "
                             "or run Relay where an OS keyring is available.")
        print(f"{why}: {where}.", file=sys.stderr, flush=True)
        for _ in range(TRIES):
            if creating:
                passphrase = ask("Choose a passphrase for the new vault: ", secret=True)
                if not passphrase:
                    print("The passphrase cannot be empty.", file=sys.stderr, flush=True)
                    continue
                if ask("Repeat it: ", secret=True) != passphrase:
                    print("The two passphrases differ.", file=sys.stderr, flush=True)
                    continue
            else:
                passphrase = ask("Relay vault passphrase: ", secret=True)
                if not passphrase:
                    print("No passphrase typed.", file=sys.stderr, flush=True)
                    continue
            try:
                vault = Vault.open(config, GivenPassphrase(passphrase), env={})
                if creating:
                    vault.signing_key()  # makes the vault file with this passphrase
                else:
                    vault.unlock()
            except VaultError as exc:
                if not exc.message.startswith("Wrong passphrase"):
                    raise
                print(exc.message, file=sys.stderr, flush=True)
                continue
            self._value = passphrase
            return
        raise VaultError(f"{why}, and the vault passphrase was not given.",
                         f"Run the command again, or set {PASSPHRASE_ENV}.")
