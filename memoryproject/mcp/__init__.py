"""The MCP server: the apps' memory as tools, resources and prompts on one SDK server (stdio and HTTP)."""
