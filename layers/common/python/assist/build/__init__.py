"""The index build in three steps that may run apart (ADR 0120): `plan` reads the sources and cuts the documents
to embed into shards; `shard` embeds one shard (any number of workers, each anywhere); `commit`, under the
writer lease, adds every shard's rows to the index in one write, then its indexes, manifest and calibration.
Vectors are kept as they are made (`vectors.py`), so a build that stops resumes where it stopped.
`run.py` runs the three in one process or N; Step Functions runs them as `index.asl.json`."""
