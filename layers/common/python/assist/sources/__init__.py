"""Where documentation lives, read into documents for the index: a folder, a git repository, a docs
website, an OpenAPI description, a PDF (ADR 0058). Every document keeps the URL a reader can follow."""
