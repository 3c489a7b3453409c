"""`assist` subcommands, one module per area. Each module's `register(sub)` adds its parsers (its
`assist eval …` and `assist bench …` ones through `common.group`); heavy imports happen inside the
command functions, so `assist --help` stays instant."""

MODULES = [
    "index",
    "local",
    "model",
    "classify",
    "retrieval",
    "corpus",
    "ask",
    "export",
    "reliability",
    "serverless",
    "insights",
    "mcp",
]
