"""The serverless shape of the engine: Lambda entry points, Step Functions tasks and the ask state machine."""
