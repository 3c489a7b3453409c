"""`assist` subcommands, one module per area. Each module's `register(sub)` adds its parsers (its
`assist eval …` ones through `common.group`); heavy imports happen inside the command functions, so
`assist --help` stays instant. The development tooling (`assist_dev`: `assist bench …`, `assist deploy
rehearse`, `assist local …`, `assist eval sources`) adds its own through the `assist.commands` entry points
when it is installed (ADR 0070): this package never imports it."""

MODULES = [
    "index",
    "model",
    "classify",
    "retrieval",
    "ask",
    "export",
    "insights",
    "mcp",
    "keys",
    "doctor",
]
#: the entry-point group an installed distribution registers more subcommand modules under
ENTRY_POINTS = "assist.commands"
