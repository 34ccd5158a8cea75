"""The commands as library functions: what the CLI does, callable from Python."""
