"""The export function: the scheduled export of labeled turns (a placeholder until the export issue lands).

As a Lambda: `functions.export.app.handler` (API Gateway events and Step Functions task payloads).
As a container: `uvicorn functions.export.app:app`. All logic lives in the `assist` library.
"""

from assist.serverless.lambda_entry import LambdaFunction

function = LambdaFunction.from_env("export")
handler = function.handler
app = function.app
