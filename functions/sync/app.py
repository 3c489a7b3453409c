"""The sync function: on a schedule, brings the index on S3 in line with the sources file (docs sites,
OpenAPI specs, repositories, PDF), incrementally, one writer at a time.

As a Lambda: `functions.sync.app.handler` (EventBridge schedule events). All logic lives in the
`assist` library (`assist.sources`).
"""

from assist.serverless.lambda_entry import LambdaFunction

function = LambdaFunction.from_env("sync")
handler = function.handler
app = function.app
