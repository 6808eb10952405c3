"""The operations, one module per family; the CLI and the MCP server both call these."""
