"""`assist` subcommands, one module per area. Each module's `register(sub)` adds its parsers (its
`assist eval …` ones through `common.group`; every `assist bench …` is in bench.py); heavy imports happen inside the
command functions, so `assist --help` stays instant."""

MODULES = [
    "index",
    "local",
    "model",
    "classify",
    "retrieval",
    "ask",
    "export",
    "insights",
    "mcp",
    "bench",
    "sources",
    "deploy",
    "keys",
]
