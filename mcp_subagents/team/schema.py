"""Our tables in the team's Postgres database (DBOS keeps its own in schema `dbos`), made at start, once for all
replicas (an advisory lock keeps replicas that start together from racing)."""

from __future__ import annotations

SCHEMA = "mcp_subagents"
CHANNEL = "mcp_subagents"
"""The LISTEN/NOTIFY channel: stops, answers and task ends travel on it as small JSON payloads."""
STOP_STATEMENT = f"UPDATE {SCHEMA}.tasks SET stop_requested = true WHERE id = %s"
"""Marks a task stopped: no replica carries it on after this (the replica that runs it is told with a notice)."""
SCHEMA_LOCK = 0x5B_A6E7_5C4E
"""The advisory lock held while the tables are made."""

STATEMENTS = (
    f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.replicas (
        id text PRIMARY KEY,
        host text NOT NULL,
        pid integer NOT NULL,
        project text NOT NULL,
        started timestamptz NOT NULL DEFAULT now(),
        seen timestamptz NOT NULL DEFAULT now()
    )""",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.tasks (
        id text PRIMARY KEY,
        owner text NOT NULL,
        parent text,
        replica text,
        project text NOT NULL,
        created double precision NOT NULL,
        ended boolean NOT NULL DEFAULT false,
        stop_requested boolean NOT NULL DEFAULT false,
        launch jsonb NOT NULL
    )""",
    f"CREATE INDEX IF NOT EXISTS tasks_by_owner ON {SCHEMA}.tasks (owner, created DESC)",
    f"CREATE INDEX IF NOT EXISTS tasks_by_replica ON {SCHEMA}.tasks (replica) WHERE NOT ended",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.lines (
        task_id text NOT NULL,
        file text NOT NULL,
        seq bigint NOT NULL,
        line text NOT NULL,
        n bigint GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (task_id, file, seq)
    )""",
    f"CREATE INDEX IF NOT EXISTS lines_in_order ON {SCHEMA}.lines (n)",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.session_rules (
        project text NOT NULL,
        rule text NOT NULL,
        PRIMARY KEY (project, rule)
    )""",
)
