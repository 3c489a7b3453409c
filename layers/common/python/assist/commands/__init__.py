"""`assist` subcommands, one module per area. Each module's `register(sub)` adds its parsers;
heavy imports happen inside the command functions, so `assist --help` stays instant."""

MODULES = ["index", "local", "model", "classify", "eval", "bench", "ask", "export", "reliability", "serverless"]
