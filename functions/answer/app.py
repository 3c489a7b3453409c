"""The answer function: builds the prompt, calls the model slot and records the turn; serves the ask API.

As a Lambda: `functions.answer.app.handler` (API Gateway events and Step Functions task payloads).
As a container: `uvicorn functions.answer.app:app`. All logic lives in the `assist` library.
"""

from assist.serverless.lambda_entry import LambdaFunction

function = LambdaFunction.from_env("answer")
handler = function.handler
app = function.app
