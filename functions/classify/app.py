"""The classify function: starts a turn, reads the session's intent history and decides the message's type.

As a Lambda: `functions.classify.app.handler` (API Gateway events and Step Functions task payloads).
As a container: `uvicorn functions.classify.app:app`. All logic lives in the `assist` library.
"""

from assist.serverless.lambda_entry import LambdaFunction

function = LambdaFunction.from_env("classify")
handler = function.handler
app = function.app
