"""A team's server on several replicas: tasks, their transcripts and output kept in Postgres, each task's run a
durable workflow of DBOS Transact, replicas that watch each other's heartbeats and carry on a dead one's tasks, and
stops and answers that travel to whichever replica runs the task. Loaded only with `--database-url`.

May use: tasks, agent, tools, sandbox, permissions, models, definitions, config, core.
"""
