"""The GUI's composition root: builds the bridge, view-models, docks, window and tray.

All wiring between them lives here, so each piece stays small and testable. Every error a
panel reports goes through the window's one :class:`~relay.gui.messages.Messages`.
The shell imports neither :mod:`relay.gui.launch` nor :mod:`relay.gui.smoke` (they import
it): the demo they both start is :meth:`RelayShell.start_demo`.

A window either hosts (it is given the :class:`~relay.engine.engine.Engine`) or is a client of
a host elsewhere (a :class:`~relay.gui.sessions_source.ClientSource`): then the sessions, the
stream, stop, hand off, answers and every feature dock go through the host's API (the
feature backends take either side's services: :mod:`relay.gui.host_calls`). Closing the
window hides it to the tray; Quit asks what becomes of the sessions this process runs
(:mod:`relay.gui.closing`). Given a ``window`` (the frame ``relay`` painted before the engine
was there: :meth:`MainWindow.frame`), the shell's docks take its waiting docks' places.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import TypeVar

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QDockWidget, QMessageBox

from relay.core.config import Config
from relay.core.crash import CrashHandler
from relay.core.demo_repo import make_demo_repo
from relay.core.errors import HostError, RelayError, VaultError
from relay.core.models import SessionSpec
from relay.core.vault import PASSPHRASE_ENV
from relay.engine.engine import Engine
from relay.gui.autostart import Autostart
from relay.gui.board_backend import BoardBackend, HostBoardBackend, HostIntegrationsBackend
from relay.gui.bridge import EngineBridge
from relay.gui.closing import HIDDEN_TEXT, HIDDEN_TITLE, QuitChoice, ask_quit, quit_question
from relay.gui.composer import ComposerPanel
from relay.gui.detect_backend import DetectBackend, HostDetectBackend
from relay.gui.docks.board_dock import BoardDock
from relay.gui.docks.designer_dock import DesignerDock
from relay.gui.docks.detect_dock import DetectDock
from relay.gui.docks.handoff_dock import HandoffDock
from relay.gui.docks.history_dock import HistoryDock
from relay.gui.docks.knowledge_dock import KnowledgeDock
from relay.gui.docks.question_panel import QuestionPanel
from relay.gui.docks.sessions_dock import SessionsDock
from relay.gui.docks.stream_dock import StreamDock
from relay.gui.docks.wallet_dock import WalletDock
from relay.gui.help import HelpDialogs
from relay.gui.history_backend import HistoryBackend, HostHistoryBackend
from relay.gui.host_calls import Rebinds, Services
from relay.gui.integrations_dialog import IntegrationsDialog
from relay.gui.knowledge_backend import KnowledgeBackend
from relay.gui.main_window import MainWindow
from relay.gui.messages import Messages, PanelPresenter
from relay.gui.new_session_dialog import NewSessionDialog
from relay.gui.passphrase import PassphrasePrompter
from relay.gui.pipeline_backend import HostPipelineBackend, PipelineBackend
from relay.gui.resources import app_icon
from relay.gui.sessions_source import ClientSource
from relay.gui.shell_nav import Navigation
from relay.gui.tray import RelayTray
from relay.gui.viewmodels.board import BoardViewModel
from relay.gui.viewmodels.composer import ComposerViewModel
from relay.gui.viewmodels.contract import ContractViewModel
from relay.gui.viewmodels.designer import DesignerViewModel
from relay.gui.viewmodels.detect import DetectViewModel, open_url
from relay.gui.viewmodels.handoffs import HandoffsViewModel
from relay.gui.viewmodels.history import HistoryViewModel
from relay.gui.viewmodels.knowledge import KnowledgeViewModel
from relay.gui.viewmodels.notifier import HandoffNotifier
from relay.gui.viewmodels.questions import QuestionsViewModel
from relay.gui.viewmodels.sessions import SessionsViewModel
from relay.gui.viewmodels.stream import StreamViewModel
from relay.gui.viewmodels.wallet import WalletViewModel
from relay.gui.wallet_backend import HostWalletBackend, WalletBackend
from relay.gui.welcome import WelcomeDialog
from relay.runtimes.base import RuntimeInfo
from relay.runtimes.registry import available_runtimes
from relay.sessions.vault_need import vault_need

DEMO_TASK = "Add a short notes file describing the project"

B = TypeVar("B", bound=Rebinds)

class RelayShell(Navigation, QObject):
    """Everything one Relay window needs, wired together.

    Signals:
        quitRequested(): the user quit (menu, tray, or closing a window with no tray) and
            answered the question about running sessions; :attr:`keep_running` says whether
            they go on headless.
        hostGone(): see the attribute.
    """

    quitRequested = Signal()
    #: the host this client window attached to through the data folder stopped, and no
    #: process hosts it now (:mod:`relay.gui.window_run` then hosts here and calls :meth:`rebind`)
    hostGone = Signal()

    def __init__(self, source: Engine | ClientSource, parent: QObject | None = None,
                 prompter: PassphrasePrompter | None = None,
                 wallet: WalletBackend | None = None,
                 detect: DetectBackend | None = None,
                 pipelines: PipelineBackend | None = None,
                 history: HistoryBackend | None = None,
                 board: BoardBackend | None = None,
                 crashes: CrashHandler | None = None,
                 config: Config | None = None,
                 autostart: Autostart | None = None,
                 window: MainWindow | None = None) -> None:
        super().__init__(parent)
        self._engine: Engine | None = source if isinstance(source, Engine) else None
        #: a client window's settings (a hosting window's are its engine's)
        self._config = config
        #: the host's API, in a window that is a client of a host elsewhere
        self.client: ClientSource | None = source if isinstance(source, ClientSource) else None
        self.prompter = prompter
        icon = app_icon()
        #: the one way any part of the window shows an error or a passing message
        self.messages = window.messages if window is not None else Messages(self)
        self.bridge = EngineBridge(source, self, config=config)
        self.bridge.tasks.crashes = crashes
        self.sessions_vm = SessionsViewModel(self.bridge, self)
        self.stream_vm = StreamViewModel(self.bridge, self)
        self.handoffs_vm = HandoffsViewModel(self.bridge, self.stream_vm, self)
        self.contract_vm = ContractViewModel(
            self.bridge, prompter.provider if prompter else None, self)
        self.notifier = HandoffNotifier(self.bridge, self._session_name, self)
        services = self.services
        #: the feature backends over :attr:`services` (not those a test passed in)
        self._backends: list[Rebinds] = []
        self.wallet_vm = WalletViewModel(
            self.bridge, wallet or self._own(HostWalletBackend(services)), self)
        self.detect_vm = DetectViewModel(
            self.bridge, detect or self._own(HostDetectBackend(services)), self)
        self.designer_vm = DesignerViewModel(
            self.bridge, pipelines or self._own(HostPipelineBackend(services)), self)
        self.history_vm = HistoryViewModel(
            self.bridge, history or self._own(HostHistoryBackend(services)), self)
        self.knowledge_vm = KnowledgeViewModel(
            self.bridge, self._own(KnowledgeBackend(services)), self)
        self.board_vm = BoardViewModel(
            self.bridge, board or self._own(HostBoardBackend(services)), self)
        self.integrations = self._own(HostIntegrationsBackend(services))
        self.questions_vm = QuestionsViewModel(self.bridge, self)
        self.sessions_dock = SessionsDock(self.sessions_vm)
        self.stream_dock = StreamDock(self.stream_vm)
        self.question_panel = QuestionPanel(self.questions_vm)
        self.stream_dock.add_panel(self.question_panel)
        self.composer_vm = ComposerViewModel(self.bridge, self)
        self.composer = ComposerPanel(self.composer_vm)
        self.stream_dock.add_footer(self.composer)
        self.handoff_dock = HandoffDock(self.handoffs_vm, self.contract_vm, self.messages)
        self.wallet_dock = WalletDock(self.wallet_vm)
        self.detect_dock = DetectDock(self.detect_vm)
        self.designer_dock = DesignerDock(self.designer_vm)
        self.designer_dock.runtimes = lambda: self.runtime_infos
        self.history_dock = HistoryDock(self.history_vm)
        self.knowledge_dock = KnowledgeDock(self.knowledge_vm)
        self.board_dock = BoardDock(self.board_vm)
        lower = [self.wallet_dock, self.detect_dock, self.knowledge_dock]
        beside_stream = [self.board_dock, self.designer_dock, self.history_dock]
        if window is None:
            window = MainWindow(self.sessions_dock, self.stream_dock, self.handoff_dock, lower,
                                icon, beside_stream=beside_stream, messages=self.messages)
        else:  # the frame relay painted first (gui/launch.py): the docks take their places
            window.install_docks(self.sessions_dock, self.stream_dock, self.handoff_dock, lower,
                                 beside_stream=beside_stream)
        self.window = window
        self._use_prompter(prompter)
        if self.hosting:
            self.window.set_home(f"Data folder: {self.engine.config.home}")
        elif self.client is not None:
            self.window.set_home(f"Connected to {self.client.url}")
        self.tray = RelayTray(icon, self)
        #: "Start Relay at login" (the File menu's switch)
        self.autostart = autostart or Autostart.here()
        self.window.login_action.setChecked(self.autostart.enabled())
        self.runtime_infos: list[RuntimeInfo] = [
            RuntimeInfo(name, None, None) for name in available_runtimes()]
        self.dialog: NewSessionDialog | None = None
        self.integrations_dialog: IntegrationsDialog | None = None
        self.welcome: WelcomeDialog | None = None
        #: Help → Keyboard shortcuts and About, Edit → Preferences…
        self.help = HelpDialogs(self.window, self.messages, lambda: self.settings_home, self)
        self.last_repo = ""
        #: Quit's answer: the running sessions go on headless (else they are stopped)
        self.keep_running = False
        #: the question Quit shows while it is open
        self.quit_box: QMessageBox | None = None
        self._told_hidden = False
        #: the session "Continue…" asked the composer for, until the composer follows it
        self._focus_for: str | None = None
        self._raise_started = False  # the next session started: its stream to the front
        self._wire()

    def _own(self, backend: B) -> B:
        self._backends.append(backend)
        return backend

    def _use_prompter(self, prompter: PassphrasePrompter | None) -> None:
        self.prompter = prompter
        if prompter is not None and self.hosting:
            prompter.set_parent_widget(self.window)
            self.bridge.vault_gate = self._vault_gate

    def rebind(self, source: Engine | ClientSource,
               prompter: PassphrasePrompter | None = None) -> None:
        """The host this client window attached to stopped: go on over ``source`` — the
        engine this window hosts now (``prompter`` asks for its vault's passphrase), or the
        host another process started first — keeping the window, its docks and the session
        it shows; what they show is read again from the new side."""
        self._engine = source if isinstance(source, Engine) else None
        self.client = source if isinstance(source, ClientSource) else None
        self.bridge.rebind(source)
        for backend in self._backends:
            backend.rebind(self.services)
        self.designer_vm.run.stop()  # the engine's pipelines tell of their changes
        self.designer_vm.run.start()
        self._use_prompter(prompter)
        if self.hosting:
            self._probe_runtimes()
        elif self.client is not None:
            self.window.set_home(f"Connected to {self.client.url}")
        self.sessions_vm.refresh()
        self.wallet_vm.refresh()
        self.detect_vm.refresh()
        self.board_vm.refresh()
        shown = self.stream_vm.session_id
        if shown is not None:  # what the old host wrote last, and what the recovery did
            self.stream_vm.clear()
            self.show_session(shown)

    def _on_link(self, up: bool) -> None:
        """A client window says whether it reaches its host (the status bar, persistently)."""
        if self.client is not None:
            url = self.client.url
            self.window.set_home(f"Connected to {url}" if up
                                 else f"Disconnected from {url} — retrying")

    @property
    def hosting(self) -> bool:
        """Whether this window hosts its data folder (else it is a client of a host)."""
        return self._engine is not None

    @property
    def engine(self) -> Engine:
        """The engine this window hosts."""
        if self._engine is None:
            raise HostError("This window is a client of a host elsewhere; it has no engine.",
                            "Use the host's API (RelayShell.client).")
        return self._engine

    @property
    def services(self) -> Services:
        """The host's feature services: the engine this window hosts, or the host's API."""
        if self._engine is not None:
            return self._engine
        assert self.client is not None
        return self.client.client

    @property
    def feature_docks(self) -> list[QDockWidget]:
        """The docks over the host's features (the engine's, or over the host's API)."""
        return [self.wallet_dock, self.detect_dock, self.designer_dock, self.history_dock,
                self.knowledge_dock, self.board_dock]

    def _wire(self) -> None:
        b, w, t = self.bridge, self.window, self.tray
        self._register_panels()
        b.tasks.failed.connect(self.messages.error)
        b.tasks.hostGone.connect(self.hostGone)
        b.linkChanged.connect(self._on_link)
        b.sessionStarted.connect(self._on_started)
        self.sessions_dock.sessionSelected.connect(self.stream_vm.load)
        self.sessions_dock.newSessionRequested.connect(self.open_new_session_dialog)
        self.stream_dock.stopRequested.connect(self.stream_vm.stop)
        # a finished session's next actions: History's whole diff, its Finish…, the composer
        self.stream_dock.viewDiffRequested.connect(self.show_diff)
        self.stream_dock.mergeRequested.connect(self.ask_merge)
        self.stream_dock.continueRequested.connect(self.composer.text.setFocus)
        self._wire_composer()
        self.stream_vm.headerChanged.connect(
            lambda: w.stop_action.setEnabled(self.stream_vm.can_stop))
        self.handoffs_vm.changed.connect(
            lambda: w.handoff_action.setEnabled(self.handoffs_vm.can_hand_off))
        self.handoff_dock.handoffRequested.connect(
            lambda target: self.handoffs_vm.request_handoff(target or None))
        self._wire_sessions()
        self.notifier.notify.connect(self._notify)
        # the question panel shows what the shown session's agent asks
        self.stream_vm.modelReset.connect(
            lambda: self.questions_vm.follow(self.stream_vm.session_id))
        self.notifier.questionRequested.connect(self.show_pipeline_session)
        t.messageClicked.connect(self.notifier.clicked)
        w.newSessionRequested.connect(self.open_new_session_dialog)
        w.stopRequested.connect(self.stream_vm.stop)
        w.handoffRequested.connect(self.handoff_dock.request)
        w.closeRequested.connect(self.close_window)
        w.login_action.triggered.connect(self.set_start_at_login)
        w.integrationsRequested.connect(self.open_integrations)
        w.welcomeRequested.connect(self.show_welcome)
        w.shortcutsRequested.connect(self.help.open_shortcuts)
        w.aboutRequested.connect(self.help.open_about)
        w.preferencesRequested.connect(self.help.open_preferences)
        w.quitRequested.connect(self.request_quit)
        t.showRequested.connect(self.show)
        t.newSessionRequested.connect(self.open_new_session_dialog)
        t.quitRequested.connect(self.request_quit)
        self._wire_features()

    def _wire_sessions(self) -> None:
        """The sessions list's context menu, and the tray's sessions that need the user."""
        dock, vm, t = self.sessions_dock, self.sessions_vm, self.tray
        dock.openRequested.connect(self.show_pipeline_session)
        dock.historyRequested.connect(self.show_history)
        dock.continueRequested.connect(self.continue_in_composer)
        dock.forkRequested.connect(lambda sid: self.composer.ask_fork(sid))
        dock.stopRequested.connect(lambda sid: self.bridge.cancel_session(sid, "sessions"))
        dock.handoffRequested.connect(self.hand_off_now)
        dock.handoffToRequested.connect(self.hand_off_to)
        vm.runningChanged.connect(t.set_running)
        vm.refreshed.connect(lambda: t.set_attention(vm.attention()))
        t.sessionRequested.connect(self.show_pipeline_session)
        self.composer_vm.changed.connect(self._focus_composer)

    def _wire_composer(self) -> None:
        """The composer talks to the stream's session; Esc interrupts; forks are shown."""
        vm = self.composer_vm
        self.stream_vm.modelReset.connect(lambda: vm.follow(None))
        self.stream_vm.loaded.connect(vm.follow)  # a session that exists
        self.stream_dock.view.interruptRequested.connect(vm.interrupt)
        self.stream_dock.forkRequested.connect(
            lambda sid, event: self.composer.ask_fork(sid, at_event=event))
        self.history_dock.forkRequested.connect(
            lambda sid, sha: self.composer.ask_fork(sid, at_commit=sha, context="history"))
        vm.forked.connect(self.show_continued)
        vm.notice.connect(self.messages.notice)

    def _wire_features(self) -> None:
        """The feature docks follow the window."""
        self.wallet_vm.accountsChanged.connect(self._check_watermarks)
        self.detect_vm.announced.connect(self.notifier.on_announcement)
        self.detect_vm.adopted.connect(self._on_started)
        self.notifier.sessionRequested.connect(self.show_detected)
        self.designer_vm.run.sessionRequested.connect(self.show_pipeline_session)
        # the History dock follows the session the stream shows
        self.stream_vm.modelReset.connect(
            lambda: self.history_vm.follow(self.stream_vm.session_id))
        self.history_vm.sessionRequested.connect(self.show_continued)
        # the Knowledge dock scopes to (and rescans) the shown session's repository
        self.stream_vm.loaded.connect(self._follow_repo)
        # a card opens its session: Relay's in the stream, a hooked one in Detect
        self.board_vm.sessionRequested.connect(self.show_pipeline_session)
        self.board_vm.detectedRequested.connect(self.show_detected)
        self.board_vm.linkReady.connect(self._open_link)

    def _register_panels(self) -> None:
        """Each panel shows the errors of its context in place (and the status bar all)."""
        panels: dict[str, PanelPresenter] = {
            "stream": self.stream_dock.show_error, "sessions": self.sessions_dock.show_error,
            "handoff": self.handoff_dock.show_error, "wallet": self.wallet_dock.show_error,
            "detect": self.detect_dock.show_error, "pipelines": self.designer_dock.show_error,
            "history": self.history_dock.show_error, "knowledge": self.knowledge_dock.show_error,
            "board": self.board_dock.show_error, "integrations": self._integrations_error,
            "composer": self.composer.show_error}
        for source, show in panels.items():
            self.messages.register(source, show)

    def _follow_repo(self) -> None:
        row = self.stream_vm.session
        self.knowledge_dock.follow_repo(Path(row.repo) if row is not None else None)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self, unlock_vault: bool = True, show: bool = True) -> None:
        """Show the window and tray, read the sessions and probe the runtimes; with
        ``unlock_vault``, ask for the vault's passphrase now if it will be needed (not for
        ``relay --demo``: a simulation never needs it). Without ``show`` the window starts
        hidden in the tray (``relay --hidden``) — where there is a tray to open it from."""
        if not self.tray.install() or show:
            self.show()
        self.sessions_vm.refresh()
        self.bridge.follow_host()
        self.wallet_vm.start()
        self.wallet_vm.rescan()  # the transcripts written since the last start, with progress
        self.detect_vm.start()  # ambient mode: the agent sessions on this machine, watched
        self.designer_vm.start()  # the repository's pipelines; runs followed live
        self.board_vm.refresh()  # then kept live from the board's events
        if not self.hosting:
            return  # a client window: the host probes its runtimes, the host has the vault
        self._probe_runtimes()
        if self.prompter is not None and unlock_vault:  # ask now if it will be needed
            self.bridge.tasks.start(self.prompter.unlock_early(), context="vault")

    def _probe_runtimes(self) -> None:
        self.bridge.tasks.start(asyncio.to_thread(self.engine.runtime_infos),
                                context="runtimes", on_done=self._set_infos)

    async def _vault_gate(self, entries: list[str], can_hand_off: bool) -> None:
        """Before work starts: ask for the vault's passphrase if the work will need it
        (never in the middle of a handoff); declined, the work does not start."""
        assert self.prompter is not None
        why = await vault_need(entries, self.engine.accounts, can_hand_off=can_hand_off)
        if why and not await self.prompter.ensure():
            raise VaultError(f"Nothing was started: {why}, and the vault's passphrase was "
                             "not given.", f"Try again and give it, or set {PASSPHRASE_ENV}.")

    def show(self) -> None:
        self.window.show()
        self.window.raise_()
        self.window.activateWindow()

    def close_window(self) -> None:
        """Closing the window hides it to the tray — every session goes on (the first time,
        the tray says so). With no tray to come back from, closing is Quit."""
        if not self.tray.isVisible():
            self.request_quit()
            return
        self.window.hide()
        if not self._told_hidden:
            self._told_hidden = True
            self.tray.notify(HIDDEN_TITLE, HIDDEN_TEXT)

    def set_start_at_login(self, on: bool) -> None:
        """Write or remove the login entry; the switch shows what is true afterwards."""
        try:
            self.autostart.set_enabled(on)
        except RelayError as exc:
            self.messages.error("settings", exc.message, exc.hint or "")
        self.window.login_action.setChecked(self.autostart.enabled())

    def request_quit(self) -> None:
        """Quit: with sessions running here, ask first (keep them running headless, stop
        them, or cancel); then :attr:`quitRequested`."""
        if self.quit_box is not None:  # already asking
            self.quit_box.raise_()
            return
        self.bridge.tasks.start(self._quit(), context="sessions")

    async def _quit(self) -> None:
        running = self.engine.running_sessions() if self.hosting else []
        if running:
            self.show()
            self.quit_box = quit_question(len(running), self.window)
            try:
                choice = await ask_quit(self.quit_box)
            finally:
                self.quit_box = None
            if choice is QuitChoice.CANCEL:
                return
            self.keep_running = choice is QuitChoice.KEEP
        self.quitRequested.emit()

    async def aclose(self) -> None:
        """Stop listening and cancel GUI tasks (the engine is closed by its owner)."""
        self.wallet_vm.stop()
        self.detect_vm.stop()
        self.designer_vm.stop()
        self.history_vm.stop()
        self.composer_vm.stop()
        if self.prompter is not None:
            self.prompter.close()  # threads waiting for a passphrase give up
        await self.bridge.aclose()
        self.tray.hide()
        self.window.hide()
        for dialog in (self.dialog, self.integrations_dialog):
            if dialog is not None:
                dialog.close()
        self.help.close()
        if self.welcome is not None:
            self.welcome.close()
        if self.quit_box is not None:
            self.quit_box.close()

    # -- intents ------------------------------------------------------------------------

    def open_new_session_dialog(self) -> NewSessionDialog:
        """Open (non-blocking) the new-session dialog; a valid form starts the session."""
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.raise_()
            return self.dialog
        dialog = NewSessionDialog(self.runtime_infos, self.window, repo=self.last_repo,
                                  recent=[str(r.repo) for r in self.sessions_vm.rows()],
                                  entries=self.detect_vm.targets() or None)
        dialog.specAccepted.connect(self._start_from_dialog)
        self.dialog = dialog
        dialog.open()
        return dialog

    def open_integrations(self) -> IntegrationsDialog:
        """Open (non-blocking) the Integrations dialog: Claude Code's settings per folder."""
        if self.integrations_dialog is None or not self.integrations_dialog.isVisible():
            self.integrations_dialog = IntegrationsDialog(self.integrations, self.bridge.tasks,
                                                          self.window)
            self.integrations_dialog.load()
            self.integrations_dialog.open()
        self.integrations_dialog.raise_()
        return self.integrations_dialog

    def _integrations_error(self, text: str, hint: str) -> None:
        if self.integrations_dialog is not None and self.integrations_dialog.isVisible():
            self.integrations_dialog.show_error(text, hint)

    def _open_link(self, url: str) -> None:
        """A web board link: the desktop's browser, else the status bar shows it to copy."""
        if not open_url(url):
            self.messages.notice(f"Open the web board (one-time link, 10 minutes): {url}")

    def _start_from_dialog(self, spec: SessionSpec) -> None:
        """New session's Start: the session's stream comes to the front once it is stored."""
        self._raise_started = True
        self.start_session(spec)

    def start_session(self, spec: SessionSpec) -> None:
        self.last_repo = str(spec.repo)
        if self.designer_vm.repo is None:  # where the user works
            self.designer_vm.set_repo(spec.repo)
        self.bridge.start_session(spec, context="sessions")

    async def start_demo(self, limit_after: int | None = None) -> None:
        """Make a throwaway repository and start a demo session (a SIMULATION) in it; with
        ``limit_after``, it hits a simulated limit after that many turns and hands off."""
        base = Path(tempfile.mkdtemp(prefix="relay-demo-"))
        try:
            repo = await asyncio.to_thread(make_demo_repo, base / "demo-project")
        except RelayError as exc:
            self.bridge.tasks.report("sessions", exc)
            return
        chain = ["demo:primary", "demo:backup"] if limit_after is not None else []
        self.start_session(SessionSpec(repo=repo, task=DEMO_TASK, runtime="demo", chain=chain,
                                       demo_limit_after=limit_after))

    # -- reactions ----------------------------------------------------------------------

    def _set_infos(self, infos: list[RuntimeInfo]) -> None:
        self.runtime_infos = infos
        self.designer_dock.set_runtime_infos(infos)
        self.detect_vm.set_runtime_infos(infos)
        if self.welcome is not None:
            self.welcome.set_infos(infos)

    def show_welcome(self) -> WelcomeDialog:
        """The welcome (non-modal; on a first run, and from Help → Welcome…): the CLIs found
        and how to install the rest, the demo, adding an account."""
        if self.welcome is not None and self.welcome.isVisible():
            self.welcome.raise_()
            return self.welcome
        self.welcome = WelcomeDialog(self.runtime_infos, self.window)
        self.welcome.demoRequested.connect(
            lambda: self.bridge.tasks.start(self.start_demo(limit_after=1), context="sessions"))
        self.welcome.newSessionRequested.connect(self.open_new_session_dialog)
        self.welcome.accountRequested.connect(self.add_account)
        self.welcome.show()
        return self.welcome

    def add_account(self, provider: str = "") -> None:
        """The Wallet dock, raised, with its Add account dialog (for ``provider``) open."""
        self.wallet_dock.show()
        self.wallet_dock.raise_()
        self.wallet_dock.open_account_dialog(provider=provider or None)

    @property
    def settings_home(self) -> Path | None:
        """The data folder whose relay.toml Preferences writes (None: a remote host's)."""
        if self._engine is not None:
            return self._engine.config.home
        return self._config.home if self._config is not None else None

    def _on_started(self, session_id: str) -> None:
        """A session this window started: shown (in front, when New session started it)."""
        self.show_session(session_id)
        self.sessions_vm.refresh()
        if self._raise_started:
            self._raise_started = False
            self.stream_dock.show()
            self.stream_dock.raise_()

    def _session_name(self, session_id: str) -> str | None:
        row = self.sessions_vm.row_of(session_id)
        task = self.sessions_vm.session_at(row).task if row is not None else ""
        return task.splitlines()[0] if task.strip() else None

    def _check_watermarks(self) -> None:
        vm = self.wallet_vm
        self.notifier.on_wallet(vm.accounts(), vm.watermark, vm.now_ms())

    def _notify(self, title: str, message: str, warning: bool) -> None:
        self.tray.notify(title, message, warning)
        if not self.tray.isVisible():  # no tray here: the status bar says it instead
            self.messages.notice(f"{title}: {message}")

