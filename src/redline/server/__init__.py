"""The MCP server: every redline step as a typed tool an agent can call.

    config.py   the server config file, and resolve_in_workspace (tool paths stay inside the workspace)
    jobs.py     long work (boots, benches) as jobs: bounded waits, progress, state on disk
    app.py      the MCPServer: tool declarations, annotations, the one RedlineError -> ToolError mapping

The operations themselves live in redline.tools; nothing here decides a rung.
"""
