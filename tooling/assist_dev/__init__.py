"""The engine's development tooling, apart from the runtime package `assist` (ADR 0070): `bench/` (every
`assist bench …`), `rehearsal/` (`assist deploy rehearse`: template.yaml's functions under their own roles in a
moto server that enforces IAM), `local/` (`assist local up|env`: the stack on one machine), `doubles/` (the
Ollama and identity-provider test doubles the tests and the benchmarks share) and `commands/` (their `assist`
subcommands, registered through the `assist.commands` entry points). It imports `assist`; `assist` never
imports it."""
