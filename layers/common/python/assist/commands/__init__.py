"""`assist` subcommands, one module per area. Each module's `register(sub)` adds its parsers (its
`assist eval …` ones through `common.group`). `assist X` imports only the modules `COMMANDS` names for X, and
`assist --help` none (it lists `HELP`), so a command module imports what it uses at its top (ADR 0100). The
development tooling (`assist_dev`: `assist bench …`, `assist deploy rehearse`, `assist local …`, `assist eval
sources`) adds its own through the `assist.commands` entry points when it is installed (ADR 0070): this package
never imports it."""

#: each subcommand's line in `assist --help` (and the groups' the tooling adds to)
HELP = {
    "index": "index docs where they live (folders, git repositories, docs sites, OpenAPI specs, PDF) into LanceDB",
    "model": "embedding model set-up",
    "classifier": "train, evaluate and promote the embedding classifier",
    "eval": "measure quality on a labelled data set",
    "ask": "ask one message (in-process engine; reach the local stack with `assist local env`)",
    "export": "export new classified turns as redacted, labeled JSONL (incremental)",
    "report": "the insights page (GET /insights) as one HTML file, over the last N days",
    "feedback": "what people said about answers",
    "mcp": "serve the docs as MCP tools (search_docs, get_document, list_documents, ask) over stdio",
    "keys": "the widget's site keys: create, list, revoke; deny a visitor",
    "doctor": "check every model use (host reachable, model present, capabilities, window, think), the embedder "
    "and the index; exit 1 when something is missing",
    "bench": "benchmarks that print figures beside their budgets or baselines",
}
#: each subcommand → the modules that register it (`eval` is a group several areas add to)
COMMANDS = {
    "index": ("assist.commands.index",),
    "model": ("assist.commands.model",),
    "classifier": ("assist.commands.classify",),
    "eval": ("assist.commands.classify", "assist.commands.retrieval"),
    "ask": ("assist.commands.ask",),
    "export": ("assist.commands.export",),
    "report": ("assist.commands.insights",),
    "feedback": ("assist.commands.insights",),
    "mcp": ("assist.commands.mcp",),
    "keys": ("assist.commands.keys",),
    "doctor": ("assist.commands.doctor",),
}
#: the entry-point group an installed distribution registers more subcommand modules under
ENTRY_POINTS = "assist.commands"
