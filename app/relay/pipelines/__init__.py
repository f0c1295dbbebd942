"""Pipelines: multi-agent DAGs on a durable scheduler (Qt-free).

model (the JSON format) → validate (every rule, naming node and field) → files (the
repository's .relay/pipelines.json) → ledger (runs, steps, leases, fenced writes) →
scheduler (one run, one engine) → executor (each node a Relay session) → service
(``engine.pipelines``); planner turns a goal into a graph.
"""
