"""The MCP server: every redline operation as a typed tool an agent can call; wiring only.

    app.py              builds the MCPServer from the tool modules below
    toolkit.py          what every tool shares: @tool (the tool table), annotations, RedlineError -> ToolError,
                        State, run_job
    launch.py           the one launcher of the tools that boot servers: a dry run at once, else a job
    ladder_tools.py     the ladder tools; experiment_tools.py (campaigns, the A/B), evidence_tools.py (baselines,
                        known-good, the frontier, the write-back), predict_tools.py, job_tools.py the others
    resources.py        the ladders as MCP resources
    http.py             streamable HTTP: loopback rebinding checks, a bearer token off loopback
    config.py           the server config file, and resolve_in_workspace (tool paths stay inside the workspace)
    jobs.py             long work (boots, benches) as jobs: bounded waits, progress, cancel, recovery
    job_files.py        the job files on disk and who owns them; job_record.py their shapes
    cache.py            read-only results by file content

The operations themselves live in redline.ops; nothing here decides a rung, a cell or a verdict.
"""
