"""A made-up corpus shaped like a peer's architecture repository (Markdown + YAML front matter):
18 decision records with their approval records, 31 principles, a registry page that mentions every id,
ids spelled several ways (`nav_order: ADR.12`, `id: ADR-0005`, a stem `ADR-008-…`, a heading `# ADR-0027: …`)."""

from __future__ import annotations

from pathlib import Path

ADR_NUMBERS = [0, 1, 2, 10, 11, 12, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]
PRINCIPLE_NUMBERS = list(range(10, 41))
TOPICS = [
    "markdown decision records", "oauth2 for authentication", "event sourcing for meter data", "cim as domain language",
    "kafka for grid events", "sign convention for current", "priority based scheduling", "terraform for infrastructure",
    "postgres for asset registry", "open api contracts first", "iec 61850 for substations", "python for analytics",
    "kubernetes for workloads", "tls 1.3 for all traffic", "s3 for raw measurements", "rust for edge agents",
    "market participant identification", "alliander owned domain names",
]  # fmt: skip
PRINCIPLE_WORDS = [
    "reliable", "secure", "open", "reusable", "traceable", "documented", "owned", "versioned", "observable",
    "tested", "automated", "portable", "scalable", "private", "accessible", "consistent", "interoperable",
    "findable", "auditable", "resilient", "modular", "simple", "measurable", "standardised", "governed",
    "timely", "accurate", "complete", "shared", "described", "archived",
]  # fmt: skip


def adr_title(n: int) -> str:
    return f"Use {TOPICS[ADR_NUMBERS.index(n)]}"


def principle_title(n: int) -> str:
    return f"Data is {PRINCIPLE_WORDS[n - 10]} by design"


def write(root: Path) -> Path:
    d = root / "decisions"
    p = root / "principles"
    d.mkdir(parents=True)
    p.mkdir()
    for n in ADR_NUMBERS:
        title = adr_title(n)
        slug = title.lower().replace(" ", "-").replace(".", "")
        status = "proposed" if n in (30, 31) else "accepted"
        stem = f"{n:04d}-{slug}"
        if n == 2:  # spelled in its file name only
            stem = f"ADR-{n:03d}-{slug}"
            front = f"---\nstatus: {status}\ndate: 2025-03-01\n---\n"
            body = f"# {title}\n"
        elif n == 27:  # spelled in its first heading only
            front = f"---\nstatus: {status}\ndate: 2025-09-19\nowner: Platform team\n---\n"
            body = f"# ADR-0027: {title}\n"
        elif n == 10:  # an `id` instead of nav_order
            front = f"---\nid: ADR-{n:04d}\ntitle: {title}\nstatus: {status}\n---\n"
            body = f"# {title}\n"
        else:
            front = (
                f"---\nparent: Decisions\nnav_order: ADR.{n}\ndct:\n  identifier: urn:uuid:{n:08d}\n  title: {title}\n"
                f"  isVersionOf: {status}\n  issued: 2025-06-{n % 28 + 1:02d}\n---\n"
                "<!-- markdownlint-disable-next-line MD025 -->\n\n"
            )
            body = f"# {title}\n"
        sections = "".join(
            f"\n## {h}\n\n{title} — {h.lower()} of the decision, paragraph {i}. " + "Details follow. " * 20 + "\n"
            for i, h in enumerate(["Context and Problem Statement", "Considered Options", "Decision Outcome",
                                   "Consequences", "More Information"])
        )  # fmt: skip
        (d / f"{stem}.md").write_text(front + body + sections)
        (d / f"{n:04d}D-{slug}.md").write_text(
            f"---\nnav_order: ADR.{n}D\ndct:\n  identifier: urn:uuid:{n:08d}\n  title: {title}\n---\n\n"
            f"# Decision Approval Record List\n\n## Creation and ESA Approval of ADR.{n}\n\n"
            f"| Name | Value |\n|---|---|\n| Version of ADR | v1.0.0 |\n| Decision | {status} |\n"
            f"| Approvers | Architect {n}, Board member {n + 1} |\n"
        )
    for n in PRINCIPLE_NUMBERS:
        title = principle_title(n)
        slug = title.lower().replace(" ", "-")
        (p / f"{n:04d}-{slug}.md").write_text(
            f"---\nparent: Principles\nnav_order: PCP.{n}\ndct:\n  title: {title}\n  isVersionOf: accepted\n---\n\n"
            f"# {title}\n\n## Statement\n\n{title}.\n\n## Rationale\n\nBecause {title.lower()}.\n"
        )
    registry = "\n".join(f"| ADR.{n:04d} | {adr_title(n)} |" for n in ADR_NUMBERS)
    (d / "index.md").write_text(
        f"---\nparent: Decisions\n---\n\n# Decision registry\n\n| Id | Title |\n|---|---|\n{registry}\n"
    )
    return root
