"""The wallet: accounts' usage, limits, forecasts, prices, costs and budgets (Qt-free).

Layout (docs/architecture.md, "Wallet"):

- ``model``       the shared value types every part and every view speaks
- ``transcripts/`` incremental usage readers of each CLI's own session files
- ``usage_index`` the transcript usage index (pointers, never text) in ``usage-index.sqlite``
- ``blocks``      five-hour blocks (ccusage's definition) and seven-day windows
- ``limits``      official limit signals (rate_limit_event, token_count, statusline, headers)
- ``forecast``    burn rate → projected exhaustion, with a confidence
- ``pricing``     the dated per-model price table (shipped, user-editable) and cost estimates
- ``budgets``     task / session / day budgets: warn at 80 %, stop new work at 100 %
- ``service``     :class:`Wallet`, the facade the engine, the CLI and the GUI call
"""
