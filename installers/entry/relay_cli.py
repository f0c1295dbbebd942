"""Frozen entry point of ``relay-cli``; the same as the ``relay-cli`` console script.

``relay-cli --usage-worker`` (internal, frozen builds only) is a worker of the transcript
usage index's cold scan: a frozen build has no Python interpreter to start for it, so the
scan starts this executable instead (``relay.wallet.usage_pool``). It is handled before
anything else is imported, as is ``relay-cli hook claude`` (Claude Code's hook client,
:mod:`relay.cli.hook_client`, started for every hook event).
"""

import sys

if __name__ == "__main__":
    if sys.argv[1:3] == ["hook", "claude"]:  # Claude Code's hook client: nothing else loaded
        from relay.cli.hook_client import main as hook

        sys.exit(hook(sys.argv[3:]))
    if sys.argv[1:] == ["--usage-worker"]:
        from relay.wallet.usage_pool import serve

        serve()
        sys.exit(0)
    from relay.cli.main import main

    sys.exit(main())
