"""Tasks: the manager (queue, places under `--max-concurrent`, limits, stop), the record of each task, its
outcome as data, transcripts and output files, and the control channel other processes stop tasks through.

May use: agent, tools, sandbox, permissions, models, definitions, config, core.
"""
